import { once } from 'node:events';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import t from 'tap';
import { scanInPieces } from '../helpers/scan-in-pieces.ts';
import {
  ListRewriter,
  TenantViewError,
  TenantViewScanner,
  WatchRewriter,
  rewriteListBuffer,
  rewriteWatchBuffer,
  type TenantViewSpec,
} from '../../lib/stream/tenant-view.ts';
import { tenantViewSpecOf } from '../../lib/stream/view-spec.ts';
import { kindOf } from '../../lib/convert/kinds.ts';
import { TENANT_LABEL } from '../../lib/convert/prefix.ts';

const namespaced: TenantViewSpec = { tenant: 'abc123', nameField: 'namespace' };
const clusterScoped: TenantViewSpec = { tenant: 'abc123', nameField: 'name' };

const listOf = (...items: string[]) => `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"42"},"items":[${items.join(',')}]}`;
const list = (input: string, spec = namespaced) => rewriteListBuffer(Buffer.from(input), spec).toString();
const watch = (input: string, spec = namespaced) => rewriteWatchBuffer(Buffer.from(input), spec).toString();

/** Feeds `input` to a fresh scanner in the given pieces; returns everything it emitted. */
function inPieces(kind: 'list' | 'watch', input: Buffer, cuts: number[], spec = namespaced): string {
  return scanInPieces(kind, spec, input, cuts).bytes.toString();
}

t.test('a namespaced item loses exactly its own namespace prefix', async (t) => {
  const cases: [string, string, string][] = [
    ['namespace after name', '{"metadata":{"name":"web","namespace":"abc123-default"}}', '{"metadata":{"name":"web","namespace":"default"}}'],
    ['namespace before name', '{"metadata":{"namespace":"abc123-default","name":"web"}}', '{"metadata":{"namespace":"default","name":"web"}}'],
    [
      'metadata after spec and status',
      '{"spec":{"containers":[{"name":"c"}]},"status":{"phase":"Running"},"metadata":{"namespace":"abc123-team-a","name":"web"}}',
      '{"spec":{"containers":[{"name":"c"}]},"status":{"phase":"Running"},"metadata":{"namespace":"team-a","name":"web"}}',
    ],
    [
      'escaped JSON in an annotation stays as it was',
      String.raw`{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"metadata\":{\"namespace\":\"abc123-default\",\"name\":\"web\"}}\n"},"namespace":"abc123-default","name":"web"}}`,
      String.raw`{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{\"metadata\":{\"namespace\":\"abc123-default\",\"name\":\"web\"}}\n"},"namespace":"default","name":"web"}}`,
    ],
    [
      "nested template metadata is not the item's",
      '{"spec":{"template":{"metadata":{"namespace":"abc123-x","labels":{"app":"web"}}}},"metadata":{"namespace":"abc123-prod","name":"web"}}',
      '{"spec":{"template":{"metadata":{"namespace":"abc123-x","labels":{"app":"web"}}}},"metadata":{"namespace":"prod","name":"web"}}',
    ],
    [
      '"namespace" keys elsewhere are not the item\'s',
      '{"namespace":"abc123-top","spec":{"namespace":"zzz999-y"},"metadata":{"labels":{"namespace":"abc123-z"},"namespace":"abc123-a"}}',
      '{"namespace":"abc123-top","spec":{"namespace":"zzz999-y"},"metadata":{"labels":{"namespace":"abc123-z"},"namespace":"a"}}',
    ],
    [
      'unicode and escapes are copied byte for byte',
      String.raw`{"metadata":{"namespace":"abc123-ns","annotations":{"a":"café ☕ 𝄞 \u00e9\"\\\/\b\f\n\r\t\ud83d\ude00","b":"}]{[,:\""}},"data":[1,-2.5e+3,0.1E-2,true,false,null,{},[]]}`,
      String.raw`{"metadata":{"namespace":"ns","annotations":{"a":"café ☕ 𝄞 \u00e9\"\\\/\b\f\n\r\t\ud83d\ude00","b":"}]{[,:\""}},"data":[1,-2.5e+3,0.1E-2,true,false,null,{},[]]}`,
    ],
    ['an escaped key still names the namespace', String.raw`{"metadata":{"n\u0061mespace":"abc123-ns"}}`, String.raw`{"metadata":{"n\u0061mespace":"ns"}}`],
    ['an escaped value is decoded, checked and re-encoded', String.raw`{"metadata":{"namespace":"abc123-d\u00e9v"}}`, '{"metadata":{"namespace":"dév"}}'],
    ['an escaped prefix is still the prefix', String.raw`{"metadata":{"namespace":"\u0061bc123-ns"}}`, '{"metadata":{"namespace":"ns"}}'],
    ['an escaped metadata key', String.raw`{"met\u0061data":{"namespace":"abc123-ns"}}`, String.raw`{"met\u0061data":{"namespace":"ns"}}`],
  ];
  for (const [name, item, want] of cases) {
    t.equal(list(listOf(item)), listOf(want), name);
    t.same(JSON.parse(list(listOf(item))), JSON.parse(listOf(want)), `${name}: valid JSON`);
  }
});

t.test("items outside the tenant's exact prefix are dropped, never shown", async (t) => {
  const dropped = [
    ['another tenant', '{"metadata":{"namespace":"zzz999-default","name":"web"}}'],
    ['the id without the dash', '{"metadata":{"namespace":"abc123xdefault"}}'],
    ['a longer id', '{"metadata":{"namespace":"abc1234-default"}}'],
    ['a shorter id', '{"metadata":{"namespace":"abc12-default"}}'],
    ['the prefix alone names nothing', '{"metadata":{"namespace":"abc123-"}}'],
    ['the id alone', '{"metadata":{"namespace":"abc123"}}'],
    ['upper case', '{"metadata":{"namespace":"ABC123-default"}}'],
    ['an unprefixed namespace', '{"metadata":{"namespace":"default"}}'],
    ['an escaped other tenant', String.raw`{"metadata":{"namespace":"zzz999-\u0064efault"}}`],
    ['an escaped prefix alone', String.raw`{"metadata":{"namespace":"abc123\u002d"}}`],
    ['no namespace (cluster-scoped)', '{"metadata":{"name":"abc123-web"}}'],
    ['namespace null', '{"metadata":{"namespace":null}}'],
    ['namespace a number', '{"metadata":{"namespace":123}}'],
    ['namespace an object', '{"metadata":{"namespace":{"value":"abc123-x"}}}'],
    ['no metadata', '{"spec":{"metadata":{"namespace":"abc123-x"}}}'],
    ['metadata not an object', '{"metadata":"abc123-x"}'],
    ['metadata an array', '{"metadata":[{"namespace":"abc123-x"}]}'],
    ['an item that is a string', '"abc123-x"'],
    ['an item that is a number', '7'],
    ['an item that is null', 'null'],
    ['an item that is an array', '[{"metadata":{"namespace":"abc123-x"}}]'],
    ['two metadata keys (clients keep the last one)', '{"metadata":{"namespace":"abc123-a"},"metadata":{"namespace":"zzz999-b"}}'],
    ['two namespace keys', '{"metadata":{"namespace":"abc123-a","namespace":"zzz999-b"}}'],
    ['two namespace keys, one escaped', String.raw`{"metadata":{"namespace":"abc123-a","n\u0061mespace":"zzz999-b"}}`],
  ];
  const kept = '{"metadata":{"namespace":"abc123-ok"}}';
  for (const [name, item] of dropped) {
    t.equal(list(listOf(item!)), listOf(), `${name}: alone`);
    t.equal(list(listOf(kept, item!, kept)), listOf('{"metadata":{"namespace":"ok"}}', '{"metadata":{"namespace":"ok"}}'), `${name}: between kept items`);
    t.equal(list(listOf(item!, kept)), listOf('{"metadata":{"namespace":"ok"}}'), `${name}: first`);
    t.equal(list(listOf(kept, item!)), listOf('{"metadata":{"namespace":"ok"}}'), `${name}: last`);
  }
});

t.test('cluster-scoped kinds and Namespaces are filtered by metadata.name', async (t) => {
  const namespaces = listOf(
    '{"kind":"Namespace","metadata":{"name":"abc123-default","labels":{"kubezoo.io/tenant":"abc123"}}}',
    '{"kind":"Namespace","metadata":{"name":"kube-system"}}',
    '{"kind":"Namespace","metadata":{"name":"zzz999-default"}}',
    '{"kind":"Namespace","metadata":{"name":"abc123-"}}',
    '{"kind":"Namespace","metadata":{"name":"abc123-kube-public","namespace":"zzz999-x"}}',
  );
  t.equal(
    list(namespaces, clusterScoped),
    listOf(
      '{"kind":"Namespace","metadata":{"name":"default","labels":{"kubezoo.io/tenant":"abc123"}}}',
      '{"kind":"Namespace","metadata":{"name":"kube-public","namespace":"zzz999-x"}}',
    ),
  );
  // With nameField 'name', a namespace field does not count, and the name of a namespaced object is not prefixed.
  t.equal(list(listOf('{"metadata":{"name":"web","namespace":"abc123-default"}}'), clusterScoped), listOf());
});

t.test("the list's own fields are copied byte for byte, in any key order", async (t) => {
  const head =
    '{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"987","continue":"eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ","remainingItemCount":12},"items":[';
  t.equal(list(head + '{"metadata":{"namespace":"abc123-a"}}]}'), head + '{"metadata":{"namespace":"a"}}]}');
  const itemsFirst = '{"items":[{"metadata":{"namespace":"abc123-a"}}],"metadata":{"resourceVersion":"1"},"kind":"PodList","apiVersion":"v1"}';
  t.equal(list(itemsFirst), '{"items":[{"metadata":{"namespace":"a"}}],"metadata":{"resourceVersion":"1"},"kind":"PodList","apiVersion":"v1"}');
  t.equal(list(listOf()), listOf(), 'an empty list');
  t.equal(list('{"kind":"PodList","metadata":{},"items":null}'), '{"kind":"PodList","metadata":{},"items":null}', "Go's nil items");
  t.equal(list(listOf('{"metadata":{"namespace":"zzz999-a"}}', '{"metadata":{"namespace":"zzz999-b"}}')), listOf(), 'every item dropped');
  t.equal(
    list(' \n{"kind":"PodList","items":[ {"metadata":{"namespace":"abc123-a"}} ,\n {"metadata":{"namespace":"zzz999-b"}} ]}\n'),
    ' \n{"kind":"PodList","items":[{"metadata":{"namespace":"a"}} ]}\n',
    'whitespace around items is dropped with them, the rest is kept',
  );
  const pretty = JSON.stringify({ kind: 'PodList', items: [{ metadata: { name: 'x', namespace: 'abc123-a' } }, { metadata: { namespace: 'q-b' } }] }, null, 2);
  t.same(JSON.parse(list(pretty)), { kind: 'PodList', items: [{ metadata: { name: 'x', namespace: 'a' } }] }, 'pretty-printed input');
});

t.test('malformed or truncated upstream bodies end in a TenantViewError, not a crash or a leak', async (t) => {
  const bad: [string, RegExp][] = [
    ['', /empty/],
    ['   ', /empty/],
    ['[]', /not a list/],
    ['"x"', /not a list/],
    ['42', /not a list/],
    ['{"kind":"Pod","metadata":{"namespace":"zzz999-a"}}', /no "items"/],
    ['{"items":{}}', /"items" is not an array/],
    ['{"items":"x"}', /"items" is not an array/],
    ['{"items":[]}{}', /after the end/],
    ['{"items":[]} x', /unexpected 'x'/],
    ['{"items":[}', /unexpected '}'/],
    ['{"items":[{"a":1,}]}', /unexpected '}'/],
    ['{"items":[{"a" 1}]}', /unexpected '1'/],
    ['{"items":[{"a":1 "b":2}]}', /unexpected string/],
    ['{"items":[{"a":01}]}', /unexpected '1'/],
    ['{"items":[{"a":1.}]}', /bad number/],
    ['{"items":[{"a":-}]}', /bad number/],
    ['{"items":[{"a":1e}]}', /bad number/],
    ['{"items":[{"a":tru}]}', /bad literal/],
    ['{"items":[{"a":nul}]}', /bad literal/],
    ['{"items":[{"a":"\\x"}]}', /bad escape/],
    ['{"items":[{"a":"\\u12g4"}]}', /bad \\u escape/],
    ['{"items":[{"a":"tab\there"}]}', /control byte 0x09/],
    ['{"items":[{"a":"new\nline"}]}', /control byte 0x0a/],
    ['{"items":[{"a":1]}]}', /unexpected '\]'/],
    ['{"items":[{"a":[1}]}]}', /unexpected '}'/],
    ["{'items':[]}", /unexpected '''/],
    ['\ufeff{"items":[]}', /unexpected byte 0xef/],
    ['{"items":[{"metadata":{"namespace":"abc123-a"}}', /ended/],
    ['{"items":[{"metadata":{"namespace":"abc123-a', /ended inside an item/],
    ['{"items":[{"a":"\\', /ended inside an item/],
    ['{"items":[]', /ended/],
    ['{"items":[{"a":12', /ended inside an item/],
  ];
  for (const [input, message] of bad) {
    t.throws(() => list(input), { name: 'TenantViewError', message }, JSON.stringify(input));
  }
  const small = Buffer.from('{"items":[{"a":"x"}]}');
  t.throws(() => inPieces('list', small, [13, 16], { ...namespaced, maxItemBytes: 4 }), { message: /larger than 4 bytes/ }, 'a limit on the item held');
  t.equal(inPieces('list', small, [13, 16], { ...namespaced, maxItemBytes: 8 }), '{"items":[]}', 'under the limit');
});

t.test('a single object that is not a list never leaks, even in pieces', async (t) => {
  const pod = Buffer.from('{"kind":"Pod","metadata":{"name":"secret","namespace":"zzz999-default"},"spec":{}}');
  const scanner = new TenantViewScanner('list', namespaced);
  let out = '';
  let failure: unknown;
  try {
    for (let i = 0; i < pod.length; i++) out += scanner.write(pod.subarray(i, i + 1)).toString();
    scanner.finish();
  } catch (error) {
    failure = error;
  }
  t.type(failure, TenantViewError);
  t.match((failure as Error).message, /no "items"/);
  t.equal(out, '', 'not a byte of it was sent');
  t.throws(() => scanner.write(Buffer.from('{}')), TenantViewError, 'a failed scanner stays failed');
});

t.test('a truncated list never sends a byte of an item it did not finish checking', async (t) => {
  const input = Buffer.from(
    listOf('{"metadata":{"namespace":"abc123-a"},"x":1}', '{"metadata":{"namespace":"zzz999-b"},"y":[2]}', '{"z":"3","metadata":{"namespace":"abc123-c"}}'),
  );
  const full = list(input.toString());
  for (let cut = 0; cut < input.length; cut++) {
    const scanner = new TenantViewScanner('list', namespaced);
    const sent = scanner.write(input.subarray(0, cut)).toString();
    t.ok(full.startsWith(sent), `cut at ${cut}: what was sent is a prefix of the full answer`);
    t.notOk(sent.includes('zzz999'), `cut at ${cut}: nothing of the other tenant`);
    t.throws(() => scanner.finish(), TenantViewError, `cut at ${cut}: the end is an error`);
  }
});

t.test('the output is the same however the input is cut into chunks', async (t) => {
  const lists = [
    listOf(
      String.raw`{"metadata":{"annotations":{"a":"{\"namespace\":\"abc123-x\"}\\","b":"\u00e9€𝄞"},"namespace":"abc123-default","name":"web"},"n":-1.5e3}`,
      '{"metadata":{"namespace":"zzz999-default"},"spec":{"template":{"metadata":{"namespace":"abc123-q"}}}}',
      String.raw`{"status":{"ok":true,"no":false,"none":null},"metadata":{"n\u0061mespace":"abc123-d\u00e9v"}}`,
      '[1,2]',
    ),
    listOf(),
    '{"kind":"PodList","items":null}',
  ];
  for (const input of lists) {
    const bytes = Buffer.from(input);
    const whole = list(input);
    for (let cut = 0; cut <= bytes.length; cut++) {
      t.equal(inPieces('list', bytes, [cut]), whole, `cut at ${cut}`);
    }
    t.equal(
      inPieces(
        'list',
        bytes,
        Array.from({ length: bytes.length }, (_, i) => i),
      ),
      whole,
      'one byte at a time',
    );
    for (let cut = 0; cut + 5 <= bytes.length; cut += 3) {
      t.equal(inPieces('list', bytes, [cut, cut + 2, cut + 5]), whole, `cuts at ${cut}, ${cut + 2}, ${cut + 5}`);
    }
  }
});

t.test("watch events: the tenant's are rewritten, others dropped whole, bookmarks and errors pass", async (t) => {
  const stream = [
    '{"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a","namespace":"abc123-default"}}}',
    '{"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"b","namespace":"zzz999-default"}}}',
    '{"object":{"kind":"Pod","metadata":{"namespace":"abc123-prod","name":"c"}},"type":"MODIFIED"}',
    '{"type":"DELETED","object":{"kind":"Pod","metadata":{"name":"d","namespace":"abc123x-default"}}}',
    '{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"12","annotations":{"k8s.io/initial-events-end":"true"}}}}',
    '{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}}',
    '{"type":"DELETED","object":{"kind":"Pod","metadata":{"name":"e","namespace":"abc123-default"}}}',
  ];
  const want = [
    '{"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a","namespace":"default"}}}',
    '{"object":{"kind":"Pod","metadata":{"namespace":"prod","name":"c"}},"type":"MODIFIED"}',
    stream[4],
    stream[5],
    '{"type":"DELETED","object":{"kind":"Pod","metadata":{"name":"e","namespace":"default"}}}',
  ];
  t.equal(watch(stream.join('\n') + '\n'), want.join('\n') + '\n');
  t.equal(watch(stream.join('\r\n')), want.join('\n') + '\n', 'any whitespace between events; one event per line out');
  t.equal(watch(''), '', 'an empty watch');
  t.equal(watch(stream[1]! + '\n'), '', "nothing but another tenant's event");
  t.equal(
    watch('{"type":"SOMETHING_NEW","object":{"metadata":{"namespace":"zzz999-a"}}}\n{"type":"SOMETHING_NEW","object":{"metadata":{"namespace":"abc123-a"}}}'),
    '{"type":"SOMETHING_NEW","object":{"metadata":{"namespace":"a"}}}\n',
    'an unknown type gets the tenant check',
  );
  t.equal(
    watch(
      '{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"1","namespace":"zzz999-a"}}}\n{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"2","namespace":"abc123-a"}}}',
    ),
    '{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"2","namespace":"a"}}}\n',
    'a bookmark that names something gets the tenant check',
  );
  t.equal(
    watch('{"type":"BOOK\\u004dARK","object":{"metadata":{"resourceVersion":"1"}}}'),
    '{"type":"BOOK\\u004dARK","object":{"metadata":{"resourceVersion":"1"}}}\n',
    'an escaped type',
  );

  const rewriteStatus = (status: any) => ({ ...status, message: status.message.replaceAll('abc123-', '') });
  t.equal(
    watch('{"type":"ERROR","object":{"kind":"Status","message":"namespace abc123-x is gone"}}\n', { ...namespaced, rewriteStatus }),
    '{"type":"ERROR","object":{"kind":"Status","message":"namespace x is gone"}}\n',
    'ERROR events go through rewriteStatus',
  );

  const bytes = Buffer.from(stream.join('\n') + '\n');
  const whole = watch(bytes.toString());
  for (let cut = 0; cut <= bytes.length; cut++) t.equal(inPieces('watch', bytes, [cut]), whole, `cut at ${cut}`);
  t.equal(
    inPieces(
      'watch',
      bytes,
      Array.from({ length: bytes.length }, (_, i) => i),
    ),
    whole,
    'one byte at a time',
  );
});

t.test('an item with a member it is judged by written twice is dropped: a client reads the last one, the check the first', async (t) => {
  const pods = tenantViewSpecOf(kindOf('', 'pods')!, { tenant: 'abc123', scopeOf: () => undefined, kindScope: () => undefined });
  const label = JSON.stringify(TENANT_LABEL);
  const owner = '{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"u"}';
  const field = '{"manager":"m","operation":"Update","fieldsV1":{}}';
  const ns = '"namespace":"abc123-a"';
  // What is written twice, the item with it once, the item with it twice, and the specs that judge by it.
  const cases: [string, string, string, TenantViewSpec[]][] = [
    ['metadata', `{"metadata":{${ns}}}`, `{"metadata":{${ns}},"metadata":{"namespace":"zzz999-a"}}`, [namespaced, pods]],
    ['namespace', `{"metadata":{${ns}}}`, `{"metadata":{${ns},"namespace":"zzz999-a"}}`, [namespaced, pods]],
    ['an escaped namespace', `{"metadata":{${ns}}}`, `{"metadata":{${ns},"n\\u0061mespace":"zzz999-a"}}`, [namespaced, pods]],
    ['labels', `{"metadata":{${ns},"labels":{"app":"x"}}}`, `{"metadata":{${ns},"labels":{"app":"x"},"labels":{${label}:"zzz999"}}}`, [pods]],
    ['the tenant label', `{"metadata":{${ns},"labels":{${label}:"abc123"}}}`, `{"metadata":{${ns},"labels":{${label}:"abc123",${label}:"zzz999"}}}`, [pods]],
    ['ownerReferences', `{"metadata":{${ns},"ownerReferences":[${owner}]}}`, `{"metadata":{${ns},"ownerReferences":[${owner}],"ownerReferences":[]}}`, [pods]],
    ['managedFields', `{"metadata":{${ns},"managedFields":[${field}]}}`, `{"metadata":{${ns},"managedFields":[${field}],"managedFields":[]}}`, [pods]],
    ['spec', `{"metadata":{${ns}},"spec":{"nodeName":"n"}}`, `{"metadata":{${ns}},"spec":{"nodeName":"n"},"spec":{}}`, [pods]],
    ['status', `{"metadata":{${ns}},"status":{"phase":"Running"}}`, `{"metadata":{${ns}},"status":{"phase":"Running"},"status":{}}`, [pods]],
    ['conditions', `{"metadata":{${ns}},"status":{"conditions":[]}}`, `{"metadata":{${ns}},"status":{"conditions":[],"conditions":[]}}`, [pods]],
  ];
  for (const [what, once, twice, specs] of cases) {
    for (const spec of specs) {
      const name = spec === pods ? 'pods' : 'namespace only';
      t.not(list(listOf(once), spec), listOf(), `${what} once (${name}): the item is kept`);
      t.equal(list(listOf(twice), spec), listOf(), `${what} twice (${name}): the item is dropped from a list`);
      t.equal(watch(`{"type":"ADDED","object":${twice}}`, spec), '', `${what} twice (${name}): the event is dropped`);
      const bytes = Buffer.from(listOf(twice));
      for (let cut = 1; cut < bytes.length; cut += 5) t.equal(inPieces('list', bytes, [cut], spec), listOf(), `${what} twice (${name}), cut at ${cut}`);
    }
  }
});

t.test('writeOwned() builds the output over the chunks it is given, with the same bytes as write(), even where it is longer', async (t) => {
  const owned = (kind: 'list' | 'watch', input: string, spec: TenantViewSpec, cuts: number[]) => {
    const scanner = new TenantViewScanner(kind, spec);
    const bytes = Buffer.from(input);
    const out: Buffer[] = [];
    let from = 0;
    for (const cut of [...cuts, bytes.length]) {
      out.push(...scanner.writeOwned(Buffer.from(bytes.subarray(from, cut))));
      from = cut;
    }
    out.push(scanner.finish());
    return Buffer.concat(out).toString();
  };
  const longer = (item: any) => ({ ...item, metadata: { ...item.metadata, namespace: item.metadata.namespace.slice(7) }, added: 'x'.repeat(40) });
  const cases: [string, 'list' | 'watch', string, TenantViewSpec][] = [
    [
      'a bookmark and an event with nothing between them: the newline after the bookmark',
      'watch',
      '{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"1"}}}{"type":"ADDED","object":{"metadata":{"namespace":"abc123-a"}}}',
      namespaced,
    ],
    [
      'items the rule makes longer',
      'list',
      listOf('{"metadata":{"namespace":"abc123-a"}}', '{"metadata":{"namespace":"abc123-b"}}', '{"metadata":{"namespace":"abc123-c"}}'),
      { ...namespaced, rewriteItem: longer },
    ],
    [
      'watch objects the rule makes longer',
      'watch',
      '{"type":"ADDED","object":{"metadata":{"namespace":"abc123-a"}}}\n{"type":"ADDED","object":{"metadata":{"namespace":"abc123-b"}}}\n',
      { ...namespaced, rewriteItem: longer },
    ],
    [
      'an error whose Status the rule makes longer',
      'watch',
      '{"type":"ERROR","object":{"kind":"Status","message":"m"}}{"type":"ADDED","object":{"metadata":{"namespace":"abc123-b"}}}',
      { ...namespaced, rewriteStatus: (status: any) => ({ ...status, message: 'a longer message'.repeat(4) }) },
    ],
  ];
  for (const [what, kind, input, spec] of cases) {
    const want = kind === 'list' ? list(input, spec) : watch(input, spec);
    t.match(want, /abc123-|"added"|longer message|\n\{/, `${what}: the output is not just the input`);
    for (let cut = 0; cut <= input.length; cut++) t.equal(owned(kind, input, spec, [cut]), want, `${what}, cut at ${cut}`);
  }
});

t.test('odd watch streams end in a TenantViewError', async (t) => {
  const bad: [string, RegExp][] = [
    ['{"object":{"metadata":{}}}', /no string "type"/],
    ['{"type":1,"object":{"metadata":{}}}', /no string "type"/],
    ['{"type":"ADDED"}', /no "object"/],
    ['{"type":"ADDED","object":null}', /"object" is not a JSON object/],
    ['{"type":"ADDED","object":[]}', /"object" is not a JSON object/],
    ['[]', /not a JSON object/],
    ['"ADDED"', /not a JSON object/],
    ['{"type":"ADDED","object":{"metadata":{"namespace":"abc123-a"}},"object":{"metadata":{"namespace":"zzz999-b"}}}', /two "object" keys/],
    ['{"type":"ADDED","type":"BOOKMARK","object":{}}', /two "type" keys/],
    ['{"type":"ADDED","object":{"metadata":{"namespace":"abc123-a"}}', /ended inside an item/],
    ['{"type":"ADDED","object":{"metadata":{"namespace":"abc123-a"}}}\n{"type":"ADD', /ended inside an item/],
    ['{"type":"ADDED","object":{"metadata":{"namespace":"abc123-a"}}}}', /unexpected '}'/],
  ];
  for (const [input, message] of bad) t.throws(() => watch(input), { name: 'TenantViewError', message }, input);
});

t.test('rewriteItem: the slow path parses each checked item and stringifies what it returns', async (t) => {
  const input = listOf(
    '{"kind":"RoleBinding","metadata":{"name":"rb","namespace":"abc123-default"},"subjects":[{"kind":"ServiceAccount","name":"sa","namespace":"abc123-default"}]}',
    '{"kind":"RoleBinding","metadata":{"name":"rb","namespace":"zzz999-default"},"subjects":[]}',
    '{"kind":"RoleBinding","metadata":{"name":"drop-me","namespace":"abc123-default"},"subjects":[]}',
  );
  const seen: unknown[] = [];
  const rewriteItem = (item: any) => {
    seen.push(structuredClone(item));
    if (item.metadata.name === 'drop-me') return null;
    item.metadata.namespace = item.metadata.namespace.slice(7);
    for (const subject of item.subjects) subject.namespace = subject.namespace.slice(7);
    return item;
  };
  const out = JSON.parse(list(input, { ...namespaced, rewriteItem }));
  t.same(out.items, [
    { kind: 'RoleBinding', metadata: { name: 'rb', namespace: 'default' }, subjects: [{ kind: 'ServiceAccount', name: 'sa', namespace: 'default' }] },
  ]);
  t.equal(seen.length, 2, "another tenant's item never reaches rewriteItem");
  t.equal((seen[0] as any).metadata.namespace, 'abc123-default', 'rewriteItem sees the upstream object');
  t.equal(out.metadata.resourceVersion, '42');

  // CRDs: the tenant's prefix is inside the name (widgets.abc123-example.com), so rewriteItem decides alone.
  const crds = listOf('{"metadata":{"name":"widgets.abc123-example.com"}}', '{"metadata":{"name":"gadgets.zzz999-example.com"}}');
  const crdView = (crd: any) => (crd.metadata.name.includes('.abc123-') ? { ...crd, metadata: { name: crd.metadata.name.replace('.abc123-', '.') } } : null);
  t.equal(list(crds, { tenant: 'abc123', nameField: null, rewriteItem: crdView }), listOf('{"metadata":{"name":"widgets.example.com"}}'));
  t.throws(() => new TenantViewScanner('list', { tenant: 'abc123', nameField: null }), TypeError, 'nameField null without rewriteItem is refused');
  t.throws(() => new TenantViewScanner('list', { tenant: 'abc-12', nameField: 'name' }), TypeError, 'a bad tenant id is refused');

  t.throws(() => list(listOf('{"metadata":{"namespace":"abc123-a"}}'), { ...namespaced, rewriteItem: () => undefined }), { message: /returned undefined/ });
  t.throws(
    () =>
      list(listOf('{"metadata":{"namespace":"abc123-a"}}'), {
        ...namespaced,
        rewriteItem: () => {
          throw new Error('boom');
        },
      }),
    { name: 'TenantViewError', message: /boom/ },
  );

  const events =
    '{"type":"ADDED","object":{"metadata":{"namespace":"abc123-a"},"subjects":[]}}\n{"type":"ADDED","object":{"metadata":{"namespace":"zzz999-a"}}}\n';
  t.equal(
    watch(events, { ...namespaced, rewriteItem: (item: any) => ({ seen: item.metadata.namespace }) }),
    '{"type":"ADDED","object":{"seen":"abc123-a"}}\n',
    'watch objects go through rewriteItem too',
  );
});

async function collect(stream: NodeJS.ReadableStream): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(part as Buffer);
  return Buffer.concat(parts).toString();
}

t.test('ListRewriter and WatchRewriter are Transform streams', async (t) => {
  const input = Buffer.from(listOf('{"metadata":{"namespace":"abc123-a"}}', '{"metadata":{"namespace":"zzz999-b"}}'));
  const chunks = Array.from({ length: Math.ceil(input.length / 7) }, (_, i) => input.subarray(i * 7, i * 7 + 7));
  t.equal(await collect(Readable.from(chunks).pipe(new ListRewriter(namespaced))), listOf('{"metadata":{"namespace":"a"}}'));

  const events = Buffer.from('{"type":"ADDED","object":{"metadata":{"namespace":"abc123-a"}}}\n{"type":"ADDED","object":{"metadata":{"namespace":"q-b"}}}\n');
  t.equal(
    await collect(Readable.from([events.subarray(0, 30), events.subarray(30, 90), events.subarray(90)]).pipe(new WatchRewriter(namespaced))),
    '{"type":"ADDED","object":{"metadata":{"namespace":"a"}}}\n',
  );

  await t.rejects(
    pipeline(Readable.from([Buffer.from('{"items":[{"a":tru}]}')]), new ListRewriter(namespaced), new Writable({ write: (_c, _e, cb) => cb() })),
    {
      name: 'TenantViewError',
    },
  );
  await t.rejects(pipeline(Readable.from([Buffer.from('{"items":[{"a":1}')]), new ListRewriter(namespaced), new Writable({ write: (_c, _e, cb) => cb() })), {
    message: /ended before the list did/,
  });
});

t.test('the rewriters build output over a chunk that fills its memory, never over a small view into shared memory', async (t) => {
  const items = Array.from({ length: 40 }, (_, i) => `{"metadata":{"namespace":"abc123-a","name":"item-${i}"}}`);
  const input = Buffer.from(listOf(...items));
  const outputs = async (chunks: Buffer[]) => {
    const out: Buffer[] = [];
    await pipeline(Readable.from(chunks), new ListRewriter(namespaced), new Writable({ write: (chunk, _e, cb) => (out.push(chunk), cb()) }));
    return out;
  };
  const want = list(input.toString());

  // The whole response in one chunk of its own: the output lies in the chunk's memory.
  const own = Buffer.from(input);
  const over = await outputs([own]);
  t.equal(Buffer.concat(over).toString(), want);
  t.ok(
    over.every((out) => out.buffer === own.buffer),
    'built over the chunk',
  );

  // The same bytes as a view into a buffer 8 times larger (an HTTP/2 session's read buffer, other streams' frames
  // around it): the output is new memory, so that sending it late does not keep the whole buffer alive.
  const shared = Buffer.alloc(input.length * 8);
  input.copy(shared, input.length * 3);
  const view = shared.subarray(input.length * 3, input.length * 4);
  const copied = await outputs([view]);
  t.equal(Buffer.concat(copied).toString(), want);
  t.ok(
    copied.every((out) => out.buffer !== shared.buffer),
    'copied out of the shared buffer',
  );
  t.equal(shared.subarray(input.length * 3, input.length * 4).toString(), input.toString(), 'the shared buffer is untouched');
});

t.test('the list head and each finished item go out before the rest of the list arrives', async (t) => {
  const rewriter = new ListRewriter(namespaced);
  const received: string[] = [];
  rewriter.on('data', (chunk: Buffer) => received.push(chunk.toString()));
  rewriter.write('{"kind":"PodList","metadata":{"resourceVersion":"1"},"items":[{"metadata":{"namespace":"abc123-a"},"sp');
  await new Promise((resolve) => setImmediate(resolve));
  t.same(received, ['{"kind":"PodList","metadata":{"resourceVersion":"1"},"items":['], 'the head, not the unfinished item');
  rewriter.write('ec":{}},{"metadata":');
  await new Promise((resolve) => setImmediate(resolve));
  t.same(received.slice(1), ['{"metadata":{"namespace":"a"},"spec":{}}'], 'the first item as soon as it is complete');
  rewriter.end('{"namespace":"abc123-b"}}]}');
  await once(rewriter, 'end');
  t.equal(
    received.join(''),
    '{"kind":"PodList","metadata":{"resourceVersion":"1"},"items":[{"metadata":{"namespace":"a"},"spec":{}},{"metadata":{"namespace":"b"}}]}',
  );
});

t.test('memory stays near one item: the scanner holds the unfinished item, not the list', async (t) => {
  const item = (i: number) => `{"metadata":{"namespace":"abc123-ns","name":"pod-${i}"},"spec":{"data":"${'x'.repeat(2000)}"}}`;
  const input = Buffer.from(listOf(...Array.from({ length: 500 }, (_, i) => item(i))));
  const scanner = new TenantViewScanner('list', namespaced);
  let most = 0;
  let out = 0;
  for (let i = 0; i < input.length; i += 1000) {
    out += scanner.write(input.subarray(i, i + 1000)).length;
    most = Math.max(most, (scanner as any).retained as number);
  }
  out += scanner.finish().length;
  t.ok(most < 2 * item(0).length, `at most ${most} bytes held for ${input.length} bytes of list`);
  t.equal(out, input.length - 500 * 7);
});

t.test('an item of megabytes in small chunks is scanned once, not again with every chunk', async (t) => {
  const big = `{"metadata":{"namespace":"abc123-ns"},"data":{"blob":"${'\\"z'.repeat(700_000)}"}}`;
  const input = Buffer.from(listOf(big, '{"metadata":{"namespace":"abc123-b"}}'));
  const cuts = Array.from({ length: Math.floor(input.length / 1024) }, (_, i) => (i + 1) * 1024);
  const started = performance.now();
  const out = inPieces('list', input, cuts);
  t.equal(out.length, input.length - 14);
  // Rescanning the item with each of its ~2,000 chunks would take minutes; once takes milliseconds.
  t.ok(performance.now() - started < 20_000, `${Math.round(performance.now() - started)} ms`);
});

t.test('backpressure: a slow reader holds the rewriter, which does not pile up output', async (t) => {
  const item = `{"metadata":{"namespace":"abc123-ns"},"spec":{"data":"${'y'.repeat(1000)}"}}`;
  const input = Buffer.from(listOf(...Array.from({ length: 2000 }, () => item)));
  const rewriter = new ListRewriter(namespaced);
  let most = 0;
  let bytes = 0;
  const slow = new Writable({
    highWaterMark: 1024,
    write(chunk: Buffer, _encoding, callback) {
      most = Math.max(most, rewriter.readableLength);
      bytes += chunk.length;
      setImmediate(callback);
    },
  });
  const chunks = Array.from({ length: Math.ceil(input.length / 16384) }, (_, i) => input.subarray(i * 16384, (i + 1) * 16384));
  await pipeline(Readable.from(chunks), rewriter, slow);
  t.equal(bytes, input.length - 2000 * 7);
  // Past its high-water mark a Transform stops taking input: what it holds is that mark plus one chunk's output.
  const bound = rewriter.readableHighWaterMark + 16384 + item.length;
  t.ok(most <= bound, `the rewriter held at most ${most} bytes of output (bound ${bound})`);
});

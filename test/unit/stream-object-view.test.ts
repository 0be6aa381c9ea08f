// objectToTenantBytes, the byte path for one object (get, create, update, patch answers), against the rule itself
// (objectToTenant on the parsed object), on generated objects of every kind metadataOnly() sends there.
import t from 'tap';
import { scanInPieces } from '../helpers/scan-in-pieces.ts';
import { KINDS, kindOf, type KindRow } from '../../lib/convert/kinds.ts';
import { objectToTenant, type ConvertContext } from '../../lib/convert/rules/index.ts';
import { StatusError } from '../../lib/errors/status-error.ts';
import { PARSED_PATH, objectToTenantBytes } from '../../lib/stream/object-view.ts';
import type { TenantViewSpec } from '../../lib/stream/tenant-view.ts';
import { metadataOnly, tenantViewSpecOf } from '../../lib/stream/view-spec.ts';
import { TENANT, k8sJsonGenerator } from '../helpers/generated-k8s-json.ts';

const SEED = Number(process.env.FUZZ_SEED ?? 20261126);
const { int, pick, randomItem, write, mutate } = k8sJsonGenerator(SEED);

const CONTEXT: ConvertContext = {
  tenant: TENANT,
  scopeOf: () => undefined,
  kindScope: (apiVersion, kind) => (apiVersion.startsWith(`${TENANT}-example.com/`) && kind === 'Widget' ? 'Namespaced' : undefined),
};
const contextOf = (tenant: string): ConvertContext => ({ ...CONTEXT, tenant });

const BYTE_ROWS = KINDS.filter(metadataOnly);
const configMaps = kindOf('', 'configmaps')!;
const pods = kindOf('', 'pods')!;

/** Sorted keys, so that only content counts (the byte path keeps upstream's key order). */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    typeof v === 'object' && v !== null && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );
}

const isObject = (value: unknown): value is Record<string, any> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** What the parsed path answers for `input` (wholeBodyToTenant's last branch): objectToTenant's view, or null. */
function parsedView(input: string, row: KindRow, convert = CONTEXT): unknown {
  return objectToTenant(JSON.parse(input), convert, row);
}

/** Whether the byte path can check the object's name field: it holds a non-empty string (no key written twice). */
function nameCheckable(input: string, row: KindRow): boolean {
  const object: unknown = JSON.parse(input);
  const name: unknown = isObject(object) && isObject(object.metadata) ? object.metadata[row.scope === 'Namespaced' ? 'namespace' : 'name'] : undefined;
  return typeof name === 'string' && name !== '';
}

/** The byte path's answer, parsed: the view, null, PARSED_PATH, or the Status error it threw. */
function bytesView(input: Buffer, spec: TenantViewSpec): unknown {
  try {
    const view = objectToTenantBytes(input, spec);
    return view === null || view === PARSED_PATH ? view : JSON.parse(view.toString('utf8'));
  } catch (error) {
    if (error instanceof StatusError) return error;
    throw error;
  }
}

/** The 'object' scanner fed `input` in random pieces (as a stream would) gives what objectToTenantBytes gives whole. */
function inPiecesAgrees(input: Buffer, spec: TenantViewSpec): boolean {
  const cuts = Array.from({ length: 1 + int(5) }, () => int(input.length + 1)).sort((a, b) => a - b);
  const { bytes, scanner } = scanInPieces('object', spec, input, cuts);
  const whole = objectToTenantBytes(input, spec);
  return scanner.itemsKept === 0 ? !Buffer.isBuffer(whole) : Buffer.isBuffer(whole) && bytes.equals(whole);
}

t.test('every kind the byte path takes is a tenant kind whose objects carry a name field, and ConfigMaps and Pods are among them', async (t) => {
  t.ok(BYTE_ROWS.includes(configMaps) && BYTE_ROWS.includes(pods), 'configmaps and pods');
  for (const row of BYTE_ROWS) t.ok(tenantViewSpecOf(row, CONTEXT).tenantMetadata !== undefined, `${row.resource}: the list rewriter's fast path too`);
  t.notOk(metadataOnly(kindOf('apiextensions.k8s.io', 'customresourcedefinitions')!), 'CRDs: the prefix is inside the group');
  t.notOk(metadataOnly(kindOf('rbac.authorization.k8s.io', 'rolebindings')!), 'RoleBindings: the rule rewrites subjects');
});

t.test(`generated objects of every byte-path kind: the bytes agree with the rule, parsed (seed ${SEED})`, async (t) => {
  let kept = 0;
  let dropped = 0;
  let byBytes = 0;
  let leftToParser = 0;
  for (let round = 0; round < 3000; round++) {
    const row = pick(BYTE_ROWS);
    const spec = tenantViewSpecOf(row, CONTEXT);
    let ruleCalls = 0;
    const counted: TenantViewSpec = { ...spec, rewriteItem: (item) => (ruleCalls++, spec.rewriteItem!(item)) };
    let item = randomItem();
    if (!isObject(item)) item = { metadata: { namespace: `${TENANT}-x`, name: 'x' }, data: item };
    // As kube-apiserver writes it (the markers rely on Go's escapes), with odd whitespace in a third of the rounds.
    const input = write(item, true, true, round % 3 === 0 ? 0.3 : 0.01);
    const want = parsedView(input, row);
    const got = bytesView(Buffer.from(input), counted);
    if ((got === PARSED_PATH) !== !nameCheckable(input, row)) {
      t.fail(`round ${round}: left to the parser exactly when the name field cannot be checked`, { input, got });
      return;
    }
    if (got === PARSED_PATH) {
      leftToParser++;
      continue;
    }
    if (got instanceof StatusError || canonical(got) !== canonical(want)) {
      t.fail(`round ${round} (${row.resource}, ${row.scope}) disagrees`, { input, got: got instanceof StatusError ? got.message : got, want });
      return;
    }
    if (round % 4 === 0 && !inPiecesAgrees(Buffer.from(input), spec)) {
      t.fail(`round ${round}: the scanner fed in pieces answers otherwise`, { input });
      return;
    }
    if (got === null) dropped++;
    else {
      kept++;
      if (ruleCalls === 0) byBytes++;
    }
  }
  t.ok(kept > 500 && dropped > 500, `${kept} objects shown and ${dropped} refused, as the rule decides`);
  t.ok(byBytes > kept / 2, `${byBytes} of the shown objects never reached the rule`);
  t.ok(leftToParser > 50, `${leftToParser} without a checkable name field left to the parsed path`);
});

t.test('escapes in the name field are decoded before the tenant check, as the parser does', async (t) => {
  const cases: [string, string][] = [
    ['the prefix escaped', String.raw`{"metadata":{"namespace":"\u0061bc123-default","name":"web"},"data":{"k":"v"}}`],
    ['the tail escaped', String.raw`{"metadata":{"namespace":"abc123-caf\u00e9","name":"web"}}`],
    ['the dash escaped', String.raw`{"metadata":{"name":"web","namespace":"abc123\u002ddefault"}}`],
    ['a surrogate pair', String.raw`{"metadata":{"namespace":"abc123-\ud83d\ude00","name":"\u65e5\u672c"}}`],
    ['another tenant behind an escape', String.raw`{"metadata":{"namespace":"\u007azz999-default","name":"web"}}`],
    ['a longer id behind an escape', String.raw`{"metadata":{"namespace":"abc123\u0034-default","name":"web"}}`],
    ['the prefix alone', String.raw`{"metadata":{"namespace":"abc12\u0033-","name":"web"}}`],
    ['an escaped key', String.raw`{"metadata":{"n\u0061mespace":"abc123-team","name":"web"}}`],
    ['an escaped key naming another tenant', String.raw`{"metadata":{"n\u0061mespace":"zzz999-team","name":"web"}}`],
  ];
  const spec = tenantViewSpecOf(configMaps, CONTEXT);
  for (const [name, input] of cases) t.same(bytesView(Buffer.from(input), spec), parsedView(input, configMaps), name);
  const view = bytesView(Buffer.from(cases[0]![1]), spec) as any;
  t.equal(view.metadata.namespace, 'default', 'an escaped prefix is still the prefix');
});

t.test("another tenant never gets an object, however its id relates to the owner's", async (t) => {
  const input = Buffer.from(
    `{"kind":"ConfigMap","metadata":{"name":"web","namespace":"${TENANT}-default","labels":{"kubezoo.io/tenant":"${TENANT}"}},"data":{"k":"v"}}`,
  );
  t.ok(objectToTenantBytes(input, tenantViewSpecOf(configMaps, CONTEXT)) !== null, `${TENANT} gets it`);
  for (const other of ['zzz999', 'abc124', 'bc123a', 'abc12x']) {
    t.equal(objectToTenantBytes(input, tenantViewSpecOf(configMaps, contextOf(other))), null, `${other} does not`);
    t.equal(parsedView(input.toString(), configMaps, contextOf(other)), null, `${other} does not by the rule either`);
  }
  const labelledForAnother = Buffer.from(`{"metadata":{"name":"web","namespace":"${TENANT}-default","labels":{"kubezoo.io/tenant":"zzz999"}}}`);
  t.equal(objectToTenantBytes(labelledForAnother, tenantViewSpecOf(configMaps, CONTEXT)), null, 'labelled for another tenant: not shown');
  const twoMetadata = Buffer.from(`{"metadata":{"namespace":"zzz999-default"},"metadata":{"namespace":"${TENANT}-default"}}`);
  t.equal(
    objectToTenantBytes(twoMetadata, tenantViewSpecOf(configMaps, CONTEXT)),
    PARSED_PATH,
    'two metadata members: left to the parser, whose last one counts',
  );
});

t.test('a Status, a Table or a list is left to the parsed path, which answers them as before', async (t) => {
  const spec = tenantViewSpecOf(kindOf('', 'bindings')!, CONTEXT);
  const bodies = [
    '{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":201}',
    `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"7"},"columnDefinitions":[],"rows":[{"cells":["web"],"object":{"metadata":{"namespace":"${TENANT}-x"}}}]}`,
    `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[{"metadata":{"namespace":"zzz999-x"}}]}`,
    '{"kind":"ConfigMap","apiVersion":"v1"}',
    '{"metadata":{"namespace":""}}',
    '{"metadata":{"namespace":null}}',
    '{"metadata":[]}',
  ];
  for (const body of bodies) t.equal(objectToTenantBytes(Buffer.from(body), spec), PARSED_PATH, body.slice(0, 40));
});

t.test('huge objects: a ConfigMap of 3 MB and a Pod of 12,000 containers agree with the rule', async (t) => {
  const bigValue = 'x'.repeat(1024 * 1024);
  const configMap = {
    kind: 'ConfigMap',
    apiVersion: 'v1',
    metadata: { name: 'big', namespace: `${TENANT}-default`, labels: { 'kubezoo.io/tenant': TENANT, app: 'big' } },
    data: { a: bigValue, b: bigValue, c: `${TENANT}-default ${bigValue}` },
  };
  const containers = Array.from({ length: 12000 }, (_, i) => ({ name: `c${i}`, image: 'busybox', env: [{ name: 'NS', value: `${TENANT}-default` }] }));
  const pod = {
    kind: 'Pod',
    apiVersion: 'v1',
    metadata: {
      name: 'big',
      namespace: `${TENANT}-default`,
      labels: { 'kubezoo.io/tenant': TENANT },
      ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-1', uid: 'u', controller: true }],
      managedFields: [
        {
          manager: 'kubectl',
          operation: 'Update',
          apiVersion: 'v1',
          fieldsType: 'FieldsV1',
          fieldsV1: { 'f:metadata': { 'f:labels': { 'f:kubezoo.io/tenant': {}, 'f:app': {} } } },
        },
      ],
    },
    spec: { containers },
    status: { conditions: [{ type: 'Ready', message: `pod ${TENANT}-default/big is ready` }] },
  };
  for (const [row, object] of [
    [configMaps, configMap],
    [pods, pod],
  ] as const) {
    const input = JSON.stringify(object);
    t.ok(input.length > 500_000, `${row.kind}: ${input.length} bytes`);
    t.equal(canonical(bytesView(Buffer.from(input), tenantViewSpecOf(row, CONTEXT))), canonical(parsedView(input, row)), `${row.kind}: as the rule`);
    t.equal(objectToTenantBytes(Buffer.from(input), tenantViewSpecOf(row, contextOf('zzz999'))), null, `${row.kind}: not another tenant's`);
  }
});

t.test('the upstream bytes are left as they were', async (t) => {
  const text = `{"metadata":{"name":"web","namespace":"${TENANT}-default","labels":{"kubezoo.io/tenant":"${TENANT}","app":"web"}}}`;
  const input = Buffer.from(text);
  const view = objectToTenantBytes(input, tenantViewSpecOf(configMaps, CONTEXT));
  t.equal(view?.toString(), '{"metadata":{"name":"web","namespace":"default","labels":{"app":"web"}}}');
  t.equal(input.toString(), text);
});

t.test('an answer that is not one JSON object is a 502 Status, never a crash', async (t) => {
  const spec = tenantViewSpecOf(configMaps, CONTEXT);
  for (const input of [
    '',
    '   ',
    '[]',
    '[{"metadata":{"namespace":"abc123-x"}}]',
    '42',
    '"x"',
    'null',
    'true',
    '{',
    '{"metadata":{"namespace":"abc123-x"}}{}',
    '{"metadata":{"namespace":"abc123-x"}},',
    '{"a":1,}',
    '{"a":"\u0001"}',
    '{"a":tru}',
  ]) {
    const got = bytesView(Buffer.from(input), spec);
    t.ok(got instanceof StatusError && got.code === 502, `${JSON.stringify(input)}: ${got instanceof StatusError ? got.message : String(got)}`);
  }
});

t.test(`mutated objects: a 502 exactly when the parser refuses them, else never an object the rule would not show (seed ${SEED})`, async (t) => {
  let refused = 0;
  let valid = 0;
  for (let round = 0; round < 2000; round++) {
    const row = pick(BYTE_ROWS);
    let item = randomItem();
    if (!isObject(item)) item = { metadata: { namespace: `${TENANT}-x` } };
    const input = mutate(Buffer.from(write(item, true, true)));
    let want: unknown;
    let parses = true;
    try {
      want = parsedView(input.toString('utf8'), row);
    } catch {
      parses = false;
    }
    let got: unknown;
    try {
      got = bytesView(input, tenantViewSpecOf(row, CONTEXT));
    } catch (error) {
      t.fail(`round ${round}: threw ${(error as Error).name}, not a Status`, { input: input.toString(), error });
      return;
    }
    if (!parses) {
      if (!(got instanceof StatusError && got.code === 502)) {
        t.fail(`round ${round}: broken input was not refused`, { input: input.toString(), got });
        return;
      }
      refused++;
      continue;
    }
    // Valid JSON: left to the parser, nothing, or an object the rule shows too, under the same name. (Not always the rule's very bytes:
    // mutations write shapes kube-apiserver never does, e.g. a field set under a key other than fieldsV1, whose
    // tenant label the byte path removes and the rule leaves.)
    // A JSON value that is not an object is a 502.
    const notObject = !isObject(JSON.parse(input.toString('utf8')));
    const nameField = row.scope === 'Namespaced' ? 'namespace' : 'name';
    const sameObject = got === null || got === PARSED_PATH || (isObject(got) && isObject(want) && got.metadata?.[nameField] === want.metadata?.[nameField]);
    if (notObject ? !(got instanceof StatusError) : !sameObject) {
      t.fail(`round ${round}: the byte path disagrees`, { input: input.toString(), got, want });
      return;
    }
    valid++;
  }
  t.ok(refused > 1000 && valid > 100, `${refused} broken objects refused, ${valid} valid ones as the rule`);
});

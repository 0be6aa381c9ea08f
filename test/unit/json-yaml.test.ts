// JSON answers written as YAML for a client that chose YAML: what a YAML 1.1 reader (go-yaml v2, as kubectl and
// sigs.k8s.io/yaml read it) gets back is the JSON value, whatever the strings hold and wherever the chunks split.
import t from 'tap';
import { parse } from 'yaml';
import { JsonToYaml, jsonTextToYaml } from '../../lib/convert/json-yaml.ts';
import { acceptsAWatchForm, choosesYaml } from '../../lib/request/yaml-answer.ts';

/** As a YAML 1.1 reader reads it: `yes`, `on`, `0o12`, `1_000` and the like are not strings there. */
const read11 = (text: string) => parse(text, { version: '1.1' });

const TRICKY_STRINGS = [
  'yes',
  'No',
  'on',
  'OFF',
  'y',
  'n',
  'true',
  'null',
  '~',
  '',
  ' ',
  '-',
  '- a',
  ': b',
  'a: b',
  'a #b',
  '#c',
  '12',
  '0x1F',
  '1_000',
  '0o17',
  '017',
  '1e3',
  '.5',
  '.inf',
  '.NaN',
  '2026-12-03T13:52:48Z',
  '2026-12-03',
  '*alias',
  '&anchor',
  '!tag',
  '%dir',
  '@at',
  '`tick',
  '"quoted"',
  "'single'",
  '{flow}',
  '[seq]',
  'multi\nline\n',
  'tab\there',
  'nul\u0000',
  'bell\u0007',
  'nel\u0085x',
  'ls\u2028x',
  'ps\u2029x',
  'bom\ufeff',
  'héllo',
  '日本語',
  'emoji 🎉',
  'back\\slash',
  'system:masters',
  'app.kubernetes.io/name',
  'kube-root-ca.crt',
  'v1',
  'ConfigMap',
];

t.test('every tricky string, as a key and as a value, reads back as itself under YAML 1.1', async (t) => {
  const value = {
    strings: TRICKY_STRINGS,
    keyed: Object.fromEntries(TRICKY_STRINGS.map((s, i) => [s, i])),
    numbers: [0, -1, 1.5, 1e21, 12345678901234],
    literals: [true, false, null],
    empty: { map: {}, seq: [], nested: [[], {}, [[]]] },
  };
  const yaml = jsonTextToYaml(JSON.stringify(value));
  t.same(read11(yaml), value);
  t.same(parse(yaml), value, 'and under YAML 1.2');
});

t.test('the block style sigs.k8s.io/yaml writes: a sequence under a key not indented, empty ones inline', async (t) => {
  const list = {
    kind: 'ConfigMapList',
    apiVersion: 'v1',
    metadata: { resourceVersion: '7' },
    items: [{ metadata: { name: 'a', labels: {} }, data: { x: 'yes' } }],
  };
  t.equal(
    jsonTextToYaml(JSON.stringify(list)),
    [
      'kind: ConfigMapList',
      'apiVersion: v1',
      'metadata:',
      '  resourceVersion: "7"',
      'items:',
      '- metadata:',
      '    name: a',
      '    labels: {}',
      '  data:',
      '    x: "yes"',
      '',
    ].join('\n'),
  );
  t.equal(jsonTextToYaml('{}'), '{}\n');
  t.equal(jsonTextToYaml('[[1,[2]],{"a":[]}]'), '- - 1\n  - - 2\n- a: []\n');
});

/** A JSON value from a seeded generator: nested maps and sequences of tricky strings and numbers. */
function randomValue(next: () => number, depth: number): unknown {
  const pick = next();
  if (depth > 4 || pick < 0.35) {
    const scalar = next();
    if (scalar < 0.6) return TRICKY_STRINGS[Math.floor(next() * TRICKY_STRINGS.length)];
    if (scalar < 0.8) return Math.floor(next() * 1e6) / 100;
    return scalar < 0.9 ? next() < 0.5 : null;
  }
  const size = Math.floor(next() * 4);
  if (pick < 0.7)
    return Object.fromEntries(Array.from({ length: size }, () => [TRICKY_STRINGS[Math.floor(next() * TRICKY_STRINGS.length)], randomValue(next, depth + 1)]));
  return Array.from({ length: size }, () => randomValue(next, depth + 1));
}

t.test('300 random documents, each split into chunks at random places, read back as themselves', async (t) => {
  let seed = 20261203;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  let mismatches = 0;
  for (let i = 0; i < 300; i++) {
    const value = { items: [randomValue(next, 0)], n: i };
    const text = JSON.stringify(value);
    const converter = new JsonToYaml();
    let yaml = '';
    for (let at = 0; at < text.length;) {
      const to = Math.min(text.length, at + 1 + Math.floor(next() * 40));
      yaml += converter.push(text.slice(at, to));
      at = to;
    }
    yaml += converter.end();
    if (JSON.stringify(read11(yaml)) !== JSON.stringify(value)) {
      if (mismatches === 0) t.comment(`first mismatch:\n${text}\n${yaml}\n${JSON.stringify(read11(yaml))}`);
      mismatches++;
    }
  }
  t.equal(mismatches, 0);
});

t.test('text that is not JSON is refused, not written half', async (t) => {
  t.throws(() => jsonTextToYaml('{"a":'));
  t.throws(() => jsonTextToYaml('{"a" 1}'));
});

t.test('YAML is chosen as the apiserver chooses: by q, then the more specific range, then order', async (t) => {
  const cases: [string | undefined, boolean][] = [
    ['application/yaml', true],
    ['application/yaml, application/json', true],
    ['application/json, application/yaml', false],
    ['application/json;q=0.5, application/yaml', true],
    ['*/*, application/yaml', true],
    ['application/yaml;q=0.1, */*', false],
    ['application/cbor, application/yaml', true],
    ['application/yaml;q=0', false],
    ['application/yaml;as=Table;g=meta.k8s.io;v=v1', false],
    ['APPLICATION/YAML', true],
    ['application/vnd.kubernetes.protobuf, application/yaml', false],
    [undefined, false],
    ['', false],
  ];
  for (const [accept, yaml] of cases) t.equal(choosesYaml(accept), yaml, String(accept));
  t.equal(acceptsAWatchForm('application/yaml'), false, 'YAML has no streamed form');
  t.equal(acceptsAWatchForm('application/yaml, application/json'), true);
  t.equal(acceptsAWatchForm('application/yaml, */*'), true);
  t.equal(acceptsAWatchForm(undefined), true);
});

t.test("the response writer: JSON bytes split mid-character reach the client as YAML, with the client's backpressure", async (t) => {
  const { YamlOut } = await import('../../lib/request/yaml-answer.ts');
  const { Writable } = await import('node:stream');
  const value = { items: TRICKY_STRINGS.map((s) => ({ metadata: { name: s } })) };
  const received: Buffer[] = [];
  let writes = 0;
  // A slow client: each write is taken a tick later.
  const client = new Writable({
    highWaterMark: 16,
    write(chunk: Buffer, _encoding, callback) {
      writes++;
      received.push(chunk);
      setImmediate(callback);
    },
  });
  const out = new YamlOut(client);
  const bytes = Buffer.from(JSON.stringify(value));
  for (let at = 0; at < bytes.length; at++) if (!out.write(bytes.subarray(at, at + 1))) await new Promise((resolve) => out.once('drain', resolve));
  await new Promise<void>((resolve) => out.end(resolve));
  t.same(read11(Buffer.concat(received).toString()), value);
  t.ok(writes > 1, 'written as it came, not held whole');
  t.ok(client.writableEnded, 'and ended with the answer');

  const passed: Buffer[] = [];
  const text = new Writable({ write: (chunk: Buffer, _e, callback) => (passed.push(chunk), callback()) });
  const log = new YamlOut(text);
  log.passThrough();
  log.end('not json at all\n');
  await new Promise((resolve) => text.once('finish', resolve));
  t.equal(Buffer.concat(passed).toString(), 'not json at all\n', 'an answer that is not JSON (a log) passes as it is');
});

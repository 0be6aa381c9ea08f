// The JSON → protobuf encoder of built-in kinds: what it writes decodes (with the .proto files of the Go module cache,
// read independently by test/helpers/k8s-proto.ts) to the JSON it was given, for every message of its schema; the
// committed schema is what the generator makes from the module cache today; a key the schema lacks is refused.
import t from 'tap';
import { K8S_PROTO_SCHEMA } from '../../lib/convert/protobuf/k8s-proto-schema.ts';
import { encodeMessage, encodeObject, encodeWatchFrame, goDurationNanos, protobufMessageOf } from '../../lib/convert/protobuf/encode.ts';
import { generateProtoSchema, protoSchemaModuleText } from '../../lib/rig/protobuf-schema.ts';
import { realisticConfigMap, realisticPod, seededRandom } from '../../bench/k8s-payloads.ts';
import { decodeBody, decodeMessage, decodeWatchFrames, goModuleCache, loadProtoMessages, type ProtoMessages } from '../helpers/k8s-proto.ts';
import { readFileSync } from 'node:fs';

type Json = Record<string, unknown>;

const moduleCache = goModuleCache();
const NEEDS_PROTO = {
  skip: moduleCache === undefined ? 'the Go module cache with k8s.io/api v0.36.3 is not on this machine: build the rig first (npm run rig)' : false,
};
const messages: ProtoMessages = moduleCache === undefined ? new Map() : loadProtoMessages(moduleCache);

const TIME = 'k8s.io.apimachinery.pkg.apis.meta.v1.Time';
const MICRO_TIME = 'k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime';
const QUANTITY = 'k8s.io.apimachinery.pkg.api.resource.Quantity';
const INT_OR_STRING = 'k8s.io.apimachinery.pkg.util.intstr.IntOrString';
const FREE_JSON = new Set(['k8s.io.apimachinery.pkg.runtime.RawExtension', 'k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1']);
/** Messages no object of a kind holds (the envelope's own, and the ones whose JSON is not an object). */
const NOT_IN_OBJECTS = new Set([
  'k8s.io.apimachinery.pkg.runtime.Unknown',
  'k8s.io.apimachinery.pkg.apis.meta.v1.Verbs',
  'k8s.io.apimachinery.pkg.apis.meta.v1.Duration',
  'k8s.io.apimachinery.pkg.api.resource.QuantityValue',
  'k8s.io.apimachinery.pkg.apis.meta.v1.Timestamp',
]);

/** A random JSON object of `message` as the apiserver's JSON would have it: every field likely, arrays and maps never empty. */
function randomObject(message: string, random: () => number, depth = 0): Json {
  const int = (n: number) => Math.floor(random() * n);
  const text = () => ['', 'a', 'web-1', 'é€😀', 'x'.repeat(200), 'line\nbreak', '"quoted"'][int(7)]!;
  const value = (type: string): unknown => {
    switch (type) {
      case 'string':
        return text();
      case 'bytes':
        return Buffer.from(Array.from({ length: int(40) }, () => int(256))).toString('base64');
      case 'bool':
        return random() < 0.5;
      case 'int32':
        return [0, 1, 80, 65535, -1, -2147483648, 2147483647][int(7)];
      case 'int64':
        return [0, 1, 300, -5, 2 ** 40, -(2 ** 45), Number.MAX_SAFE_INTEGER][int(7)];
      case TIME:
        return new Date(Date.UTC(2000 + int(30), int(12), 1 + int(28), int(24), int(60), int(60))).toISOString().replace('.000Z', 'Z');
      case MICRO_TIME:
        return new Date(Date.UTC(2000 + int(30), int(12), 1 + int(28), int(24), int(60), int(60)))
          .toISOString()
          .replace('.000Z', `.${String(int(1_000_000)).padStart(6, '0')}Z`);
      case QUANTITY:
        return ['0', '100m', '1Gi', '2.5', '1e3'][int(5)];
      case INT_OR_STRING:
        return random() < 0.5 ? int(70000) : ['http', '25%', ''][int(3)];
    }
    if (FREE_JSON.has(type)) return { 'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } }, n: int(9), list: ['a', null, true] };
    return randomObject(type, random, depth + 1);
  };
  const json: Json = {};
  for (const [name, , type, shape] of K8S_PROTO_SCHEMA.messages[message]!) {
    if (shape === 'inline') {
      if (random() < 0.8) Object.assign(json, randomObject(type, random, depth + 1));
      continue;
    }
    const isMessage = type.includes('.') && type !== TIME && type !== MICRO_TIME && type !== QUANTITY && type !== INT_OR_STRING && !FREE_JSON.has(type);
    if (random() < (isMessage ? Math.max(0.1, 0.7 - depth * 0.12) : 0.7)) continue;
    if (shape === 'repeated') json[name] = Array.from({ length: 1 + int(3) }, () => value(type));
    else if (shape === 'map') json[name] = Object.fromEntries(Array.from({ length: 1 + int(3) }, (_, i) => [`${text()}${i}`, value(type)]));
    else json[name] = value(type);
  }
  return json;
}

t.test('the committed schema is what the generator makes from the module cache today', NEEDS_PROTO, async (t) => {
  const committed = readFileSync(new URL('../../lib/convert/protobuf/k8s-proto-schema.ts', import.meta.url), 'utf8');
  t.equal(committed, protoSchemaModuleText(generateProtoSchema(moduleCache!)), 'regenerate with `node lib/rig/protobuf-schema.ts`');
});

t.test('every message of the schema, with random values in every field, decodes to the JSON it was encoded from', NEEDS_PROTO, async (t) => {
  const random = seededRandom(18);
  let checked = 0;
  for (const message of Object.keys(K8S_PROTO_SCHEMA.messages)) {
    // (The helper reads Verbs, whose JSON is an array, as the message it is in the .proto.)
    if (message.endsWith('.APIResource') || message.endsWith('.APIResourceList')) continue;
    if (NOT_IN_OBJECTS.has(message) || [TIME, MICRO_TIME, QUANTITY, INT_OR_STRING].includes(message) || FREE_JSON.has(message)) continue;
    for (let round = 0; round < 4; round++) {
      const json = randomObject(message, random);
      const decoded = decodeMessage(messages, message, encodeMessage(message, json));
      if (JSON.stringify(sorted(decoded)) !== JSON.stringify(sorted(json))) {
        t.same(decoded, json, `${message} (round ${round})`);
        return;
      }
      checked++;
    }
  }
  t.ok(checked > 1000, `${checked} objects of ${Object.keys(K8S_PROTO_SCHEMA.messages).length} messages round-tripped`);
});

t.test('realistic pods and configmaps as objects: the envelope names their kind, the message decodes to the JSON', NEEDS_PROTO, async (t) => {
  const random = seededRandom(7);
  const pod = realisticPod(random, 3, 'abc123-default') as Json;
  const body = encodeObject('v1', 'Pod', pod);
  t.equal(body.subarray(0, 4).toString('latin1'), 'k8s\0', 'the magic first');
  t.same(decodeBody(messages, 'k8s.io.api.core.v1.Pod', body), { apiVersion: 'v1', kind: 'Pod', ...(withoutNulls(pod) as Json) }, 'a null is absent');
  const configMap = realisticConfigMap(random, 1, 'abc123-default', 'abc123') as Json;
  t.same(decodeBody(messages, 'k8s.io.api.core.v1.ConfigMap', encodeObject('v1', 'ConfigMap', configMap)), {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    ...(withoutNulls(configMap) as Json),
  });
});

t.test('lists, Status and watch frames', NEEDS_PROTO, async (t) => {
  const list = {
    apiVersion: 'apps/v1',
    kind: 'DeploymentList',
    metadata: { resourceVersion: '42', continue: 'abc', remainingItemCount: 3 },
    items: [
      {
        metadata: { name: 'web', namespace: 'n' },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'web' } },
          template: { metadata: {}, spec: { containers: [{ name: 'c', image: 'nginx' }] } },
          strategy: { rollingUpdate: { maxSurge: '25%', maxUnavailable: 1 } },
        },
      },
    ],
  };
  t.same(decodeBody(messages, 'k8s.io.api.apps.v1.DeploymentList', encodeObject('apps/v1', 'DeploymentList', list)), list);
  const status = {
    apiVersion: 'v1',
    kind: 'Status',
    metadata: {},
    status: 'Failure',
    message: 'too old resource version: 1 (5)',
    reason: 'Expired',
    code: 410,
    details: { causes: [{ reason: 'FieldValueInvalid', field: 'metadata.name' }] },
  };
  t.equal(protobufMessageOf('v1', 'Status'), 'k8s.io.apimachinery.pkg.apis.meta.v1.Status', 'Status is meta/v1 under core');
  t.equal(protobufMessageOf('apps/v1', 'Status'), 'k8s.io.apimachinery.pkg.apis.meta.v1.Status', 'and under any group the schema has');
  t.same(decodeBody(messages, 'k8s.io.apimachinery.pkg.apis.meta.v1.Status', encodeObject('v1', 'Status', status)), status);
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'a', namespace: 'n', resourceVersion: '7' } };
  const bookmark = { apiVersion: 'v1', kind: 'Pod', metadata: { resourceVersion: '9', annotations: { 'k8s.io/initial-events-end': 'true' } } };
  const stream = Buffer.concat([
    encodeWatchFrame('ADDED', encodeObject('v1', 'Pod', pod)),
    encodeWatchFrame('BOOKMARK', encodeObject('v1', 'Pod', bookmark)),
    encodeWatchFrame('ERROR', encodeObject('v1', 'Status', status)),
  ]);
  t.same(decodeWatchFrames(messages, 'k8s.io.api.core.v1.Pod', stream), [
    { type: 'ADDED', object: pod },
    { type: 'BOOKMARK', object: bookmark },
    { type: 'ERROR', object: status },
  ]);
});

t.test('values on the edge: negative integers, times with and without a fraction, both IntOrStrings, bytes, nulls', NEEDS_PROTO, async (t) => {
  const pod = {
    metadata: { name: 'p', creationTimestamp: '2026-11-26T13:00:00Z', deletionTimestamp: null, deletionGracePeriodSeconds: -30, labels: { '': '' } },
    spec: {
      containers: [{ name: 'c', livenessProbe: { tcpSocket: { port: 8080 } }, readinessProbe: { httpGet: { port: 'http' } } }],
      activeDeadlineSeconds: 2 ** 40,
    },
  };
  t.same(
    decodeMessage(messages, 'k8s.io.api.core.v1.Pod', encodeMessage('k8s.io.api.core.v1.Pod', pod)),
    { ...pod, metadata: { name: 'p', creationTimestamp: '2026-11-26T13:00:00Z', deletionGracePeriodSeconds: -30, labels: { '': '' } } },
    'a null is absent',
  );
  const event = { metadata: { name: 'e' }, eventTime: '2026-11-26T13:00:00.123456Z', involvedObject: { kind: 'Pod' } };
  t.same(decodeMessage(messages, 'k8s.io.api.core.v1.Event', encodeMessage('k8s.io.api.core.v1.Event', event)), event, 'MicroTime keeps its microseconds');
  const secret = { metadata: { name: 's' }, data: { key: Buffer.from([0, 255, 1]).toString('base64'), empty: '' }, type: 'Opaque' };
  t.same(decodeMessage(messages, 'k8s.io.api.core.v1.Secret', encodeMessage('k8s.io.api.core.v1.Secret', secret)), secret, 'bytes are base64 in JSON');
});

t.test('a key the schema lacks, or a value of the wrong type, is refused, never written under a guessed number', async (t) => {
  t.throws(() => encodeObject('v1', 'Pod', { metadata: { name: 'a', nickname: 'x' } }), /ObjectMeta has no field "nickname"/);
  t.throws(() => encodeObject('v1', 'Pod', { spec: { containers: 'c' } }), /is not an array/);
  t.throws(() => encodeObject('v1', 'Pod', { metadata: { generation: '1' } }), /is not a number/);
  t.throws(() => encodeObject('example.com/v1', 'Widget', {}), /has no protobuf message/);
  t.equal(protobufMessageOf('example.com/v1', 'Widget'), undefined, 'a custom resource has no message');
  t.equal(protobufMessageOf('apps/v1', 'Widget'), undefined, 'nor a kind its group lacks');
});

t.test('Go durations in nanoseconds', async (t) => {
  for (const [text, nanos] of [
    ['0s', 0],
    ['1h2m3.5s', 3723.5e9],
    ['300ms', 3e8],
    ['-1.5s', -1.5e9],
    ['1us', 1000],
    ['1µs', 1000],
    ['2ns', 2],
  ] as const) {
    t.equal(goDurationNanos(text), nanos, text);
  }
  t.throws(() => goDurationNanos('1 hour'));
});

function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, item]) => item !== null)
      .map(([key, item]) => [key, withoutNulls(item)]),
  );
}

function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, sorted((value as Json)[key])]),
  );
}

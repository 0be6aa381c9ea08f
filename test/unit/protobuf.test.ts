import t from 'tap';
import { isDeepStrictEqual } from 'node:util';
import { carriesTenantLabel, KINDS, kindOf, type KindRow } from '../../lib/convert/kinds.ts';
import { TENANT_LABEL } from '../../lib/convert/prefix.ts';
import { protobufBodyToUpstream, type ProtobufBodyOptions } from '../../lib/convert/protobuf/to-upstream.ts';
import { objectToUpstream } from '../../lib/convert/rules/index.ts';
import { StatusError } from '../../lib/errors/status-error.ts';
import { mutate, seededRandom } from '../helpers/fuzz.ts';
import { thrownStatus } from '../helpers/status-error.ts';
import { isProtobuf } from '../../lib/convert/protobuf/envelope.ts';

const TENANT = 'abc123';

// ---- a tiny protobuf encoder and decoder, independent of the module under test ----

const MAGIC = Buffer.from('k8s\0', 'latin1');

function varint(value: number): Buffer {
  const out: number[] = [];
  while (value >= 0x80) {
    out.push((value % 0x80) | 0x80);
    value = Math.floor(value / 0x80);
  }
  out.push(value);
  return Buffer.from(out);
}
/** A length-delimited field. */
const ld = (number: number, payload: Buffer | string): Buffer => {
  const bytes = typeof payload === 'string' ? Buffer.from(payload) : payload;
  return Buffer.concat([varint(number * 8 + 2), varint(bytes.length), bytes]);
};
const vi = (number: number, value: number): Buffer => Buffer.concat([varint(number * 8), varint(value)]);
const msg = (...parts: Buffer[]): Buffer => Buffer.concat(parts);
const entry = (key: string, value: string): Buffer => msg(ld(1, key), ld(2, value));
const labels = (map: Record<string, string>, number = 11): Buffer => msg(...Object.entries(map).map(([k, v]) => ld(number, entry(k, v))));
const envelope = (apiVersion: string, kind: string, raw: Buffer | null, extra: Buffer = Buffer.alloc(0)): Buffer =>
  msg(MAGIC, ld(1, msg(ld(1, apiVersion), ld(2, kind))), raw === null ? Buffer.alloc(0) : ld(2, raw), ld(3, ''), ld(4, ''), extra);

interface Decoded {
  readonly number: number;
  readonly wireType: number;
  /** The payload of a length-delimited field, or the value of a varint. */
  readonly value: Buffer | number;
  /** The whole field, tag included. */
  readonly bytes: Buffer;
}

function readVarint(buf: Buffer, at: { pos: number }): number {
  let value = 0;
  for (let scale = 1; ; scale *= 128) {
    const byte = buf[at.pos++];
    if (byte === undefined) throw new Error('test decoder: varint cut off');
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return value;
  }
}

function decode(buf: Buffer): Decoded[] {
  const fields: Decoded[] = [];
  const at = { pos: 0 };
  while (at.pos < buf.length) {
    const start = at.pos;
    const tag = readVarint(buf, at);
    const wireType = tag % 8;
    let value: Buffer | number;
    if (wireType === 0) value = readVarint(buf, at);
    else if (wireType === 1 || wireType === 5) {
      value = buf.subarray(at.pos, (at.pos += wireType === 1 ? 8 : 4));
      if (at.pos > buf.length) throw new Error('test decoder: fixed field past the end');
    } else if (wireType === 2) {
      const length = readVarint(buf, at);
      value = buf.subarray(at.pos, at.pos + length);
      if (value.length !== length) throw new Error('test decoder: length past the end');
      at.pos += length;
    } else throw new Error(`test decoder: wire type ${wireType}`);
    fields.push({ number: Math.floor(tag / 8), wireType, value, bytes: buf.subarray(start, at.pos) });
  }
  return fields;
}

const all = (buf: Buffer, number: number): Buffer[] =>
  decode(buf)
    .filter((f) => f.number === number)
    .map((f) => f.value as Buffer);
function one(buf: Buffer, number: number): Buffer {
  const found = all(buf, number);
  if (found.length !== 1) throw new Error(`test decoder: field ${number} appears ${found.length} times`);
  return found[0]!;
}
/** The message at a path of singular fields. */
const at = (buf: Buffer, ...path: number[]): Buffer => path.reduce(one, buf);
const str = (buf: Buffer, number: number): string | undefined => all(buf, number).at(-1)?.toString();
const strs = (buf: Buffer, number: number): string[] => all(buf, number).map((b) => b.toString());
/** A map<string, string> field as the apiserver reads it (later entries win), and how many entries carry the tenant label. */
function mapOf(buf: Buffer, number = 11): { map: Record<string, string>; tenantEntries: number } {
  const map: Record<string, string> = {};
  let tenantEntries = 0;
  for (const e of all(buf, number)) {
    const key = str(e, 1) ?? '';
    if (key === TENANT_LABEL) tenantEntries++;
    map[key] = str(e, 2) ?? '';
  }
  return { map, tenantEntries };
}
/** Every field but the listed ones, byte for byte. */
const others = (buf: Buffer, ...except: number[]): Buffer =>
  Buffer.concat(
    decode(buf)
      .filter((f) => !except.includes(f.number))
      .map((f) => f.bytes),
  );

function unwrap(out: Buffer): { raw: Buffer; envelope: Buffer } {
  if (!out.subarray(0, 4).equals(MAGIC)) throw new Error('no magic');
  const envelope = out.subarray(4);
  return { envelope, raw: one(envelope, 2) };
}

function rowOf(group: string, resource: string): KindRow {
  const row = kindOf(group, resource);
  if (row === undefined) throw new Error(`no row for ${group}/${resource}`);
  return row;
}
const CREATE: ProtobufBodyOptions = { verb: 'create', subresource: '' };
const convert = (body: Buffer, group: string, resource: string, options: ProtobufBodyOptions = CREATE) =>
  protobufBodyToUpstream(body, rowOf(group, resource), TENANT, options);

const thrown = thrownStatus;

// ---- golden bodies, as k8s.io/apimachinery v0.36.3's protobuf serializer (client-go's) encodes them ----

/**
 * ConfigMap cfg in default: labels {app: web, kubezoo.io/tenant: evil00}, annotation note, finalizer,
 * ownerReferences [apps/v1 ReplicaSet rs, v1 Namespace default], one managedFields entry, data {a, b}, binaryData {bin}.
 */
const CONFIGMAP = Buffer.from(
  '6b3873000a0f0a0276311209436f6e6669674d617012f7010ad5010a0363666712001a0764656661756c7422002a003200380042005a0a0a0361707012037765' +
    '625a1b0a116b7562657a6f6f2e696f2f74656e616e7412066576696c3030620f0a046e6f746512076b656570206d656a1d0a0a5265706c6963615365741a0272' +
    '73220275312a07617070732f76316a1c0a094e616d6573706163651a0764656661756c74220275322a027631720d6578616d706c652e636f6d2f668a01320a07' +
    '6b75626563746c12065570646174651a02763132084669656c647356313a0f0a0d7b22663a64617461223a7b7d7d420012060a016112013112080a0162120374' +
    '776f1a0b0a0362696e1204000102ff1a002200',
  'hex',
);

/**
 * Deployment web in default: template labels {app: web, kubezoo.io/tenant: zzzzzz}; pod spec with a container, an emptyDir
 * and an ephemeral volume, podAffinity term (namespaces [backend, cache], namespaceSelector on kubernetes.io/metadata.name
 * by label and by expression, spoofed tenant label) and a podAntiAffinity weighted term with an empty namespaceSelector.
 */
const DEPLOYMENT = Buffer.from(
  '6b3873000a150a07617070732f7631120a4465706c6f796d656e741283040a260a0377656212001a0764656661756c7422002a003200380042005a0a0a036170' +
    '70120377656212ca030802120c0a0a0a0361707012037765621aaf030a390a0012001a0022002a003200380042005a0a0a0361707012037765625a1b0a116b75' +
    '62657a6f6f2e696f2f74656e616e7412067a7a7a7a7a7a12f1020a0f0a0773637261746368120412020a000a450a03657068123eea013b0a390a100a0012001a' +
    '0022002a0032003800420012250a0d5265616457726974654f6e6365121212100a0773746f7261676512050a033147691a0012310a03617070120a6e67696e78' +
    '3a312e323722062d2d706f7274220238302a0042006a007200800100880100900100a201001a00320042004a0052005800600068008201008a01009201c60112' +
    'b3010ab0010a0b0a090a036170701202646212076261636b656e64120563616368651a166b756265726e657465732e696f2f686f73746e616d6522790a230a1b' +
    '6b756265726e657465732e696f2f6d657461646174612e6e616d65120470726f640a1b0a116b7562657a6f6f2e696f2f74656e616e7412067a7a7a7a7a7a1227' +
    '0a1b6b756265726e657465732e696f2f6d657461646174612e6e616d651202496e1a01611a0162120c0a03656e761202496e1a01781a0e120c080a12081a047a' +
    '6f6e6522009a0100c2010022020a00280038001a0c0800100018002000280038001a002200',
  'hex',
);

/** Namespace team-a, labels {kubernetes.io/metadata.name: team-a, kubezoo.io/tenant: other0, x: y}. */
const NAMESPACE = Buffer.from(
  '6b3873000a0f0a02763112094e616d657370616365126a0a620a067465616d2d6112001a0022002a003200380042005a250a1b6b756265726e657465732e696f' +
    '2f6d657461646174612e6e616d6512067465616d2d615a1b0a116b7562657a6f6f2e696f2f74656e616e7412066f74686572305a060a017812017912001a020a' +
    '001a002200',
  'hex',
);

t.test('isProtobuf', async (t) => {
  t.ok(isProtobuf('application/vnd.kubernetes.protobuf'));
  t.ok(isProtobuf('Application/VND.Kubernetes.Protobuf; charset=binary'));
  t.notOk(isProtobuf(undefined));
  t.notOk(isProtobuf('application/json'));
  t.notOk(isProtobuf('application/vnd.kubernetes.protobuf+json'));
  t.notOk(isProtobuf('application/apply-patch+yaml'));
});

t.test('a ConfigMap as client-go encodes it: namespace prefixed, tenant label forced, everything else byte for byte', async (t) => {
  const out = convert(CONFIGMAP, '', 'configmaps');
  const before = unwrap(CONFIGMAP);
  const after = unwrap(out);
  t.same(others(after.envelope, 2), others(before.envelope, 2), 'typeMeta, contentEncoding, contentType unchanged');
  t.same(others(after.raw, 1), others(before.raw, 1), 'data and binaryData byte for byte');
  const meta = one(after.raw, 1);
  const metaBefore = one(before.raw, 1);
  t.equal(str(meta, 3), 'abc123-default');
  t.equal(str(meta, 1), 'cfg', 'a namespaced kind keeps its name');
  t.same(mapOf(meta), { map: { app: 'web', [TENANT_LABEL]: TENANT }, tenantEntries: 1 }, 'spoofed tenant label replaced');
  t.same(others(meta, 3, 11, 13), others(metaBefore, 3, 11, 13), 'annotations, finalizers, managedFields and the rest byte for byte');
  const owners = all(meta, 13);
  t.same(owners[0], all(metaBefore, 13)[0], 'a namespaced owner is left as it is');
  t.same(
    [str(owners[1]!, 5), str(owners[1]!, 1), str(owners[1]!, 3), str(owners[1]!, 4)],
    ['v1', 'Namespace', 'abc123-default', 'u2'],
    'a cluster-scoped owner takes the prefix',
  );
  // The same object as JSON takes the same names.
  const json = objectToUpstream(
    { metadata: { namespace: 'default', labels: { [TENANT_LABEL]: 'evil00' } } },
    { tenant: TENANT, scopeOf: () => undefined, kindScope: () => undefined },
    rowOf('', 'configmaps'),
  );
  t.equal((json.metadata as { namespace: string }).namespace, str(meta, 3));
});

t.test('a Deployment: pod template labelled, affinity namespaces and namespace selectors scoped, claim templates labelled', async (t) => {
  const out = convert(DEPLOYMENT, 'apps', 'deployments');
  const before = unwrap(DEPLOYMENT).raw;
  const raw = unwrap(out).raw;
  t.equal(str(at(raw, 1), 3), 'abc123-default');
  t.same(mapOf(at(raw, 1)).map, { app: 'web', [TENANT_LABEL]: TENANT });
  t.same(others(at(raw, 2), 3), others(at(before, 2), 3), 'replicas and selector byte for byte');
  const template = at(raw, 2, 3);
  t.same(mapOf(at(template, 1)), { map: { app: 'web', [TENANT_LABEL]: TENANT }, tenantEntries: 1 }, 'template label forced, spoofed one dropped');
  const spec = at(template, 2);
  t.same(others(spec, 1, 18), others(at(before, 2, 3, 2), 1, 18), 'containers and every other pod spec field byte for byte');
  const term = one(at(spec, 18, 2), 1);
  t.same(strs(term, 2), ['abc123-backend', 'abc123-cache']);
  const selector = at(term, 4);
  t.same(mapOf(selector, 1), { map: { 'kubernetes.io/metadata.name': 'abc123-prod', [TENANT_LABEL]: TENANT }, tenantEntries: 1 });
  const [byName, other] = all(selector, 2);
  t.same(strs(byName!, 3), ['abc123-a', 'abc123-b']);
  t.same(strs(other!, 3), ['x'], 'expressions on other keys unchanged');
  t.same(one(term, 1), one(one(at(before, 2, 3, 2, 18, 2), 1), 1), 'the pod label selector unchanged');
  const weighted = one(at(spec, 18, 3), 2);
  t.same(mapOf(at(weighted, 2, 4), 1).map, { [TENANT_LABEL]: TENANT }, 'an empty namespace selector selects only the tenant');
  const [emptyDir, ephemeral] = all(spec, 1);
  t.same(emptyDir, all(at(before, 2, 3, 2), 1)[0]);
  t.same(mapOf(at(ephemeral!, 2, 29, 1, 1)).map, { [TENANT_LABEL]: TENANT }, 'ephemeral volume claim template labelled');
  t.same(others(one(out.subarray(4), 1), 0), others(one(DEPLOYMENT.subarray(4), 1), 0), 'typeMeta unchanged');
});

t.test('a Namespace: name and metadata.name label prefixed', async (t) => {
  const raw = unwrap(convert(NAMESPACE, '', 'namespaces')).raw;
  t.equal(str(at(raw, 1), 1), 'abc123-team-a');
  t.same(mapOf(at(raw, 1)), { map: { 'kubernetes.io/metadata.name': 'abc123-team-a', [TENANT_LABEL]: TENANT, x: 'y' }, tenantEntries: 1 });
  t.same(others(raw, 1), others(unwrap(NAMESPACE).raw, 1), 'spec and status byte for byte');
  const generated = unwrap(convert(envelope('v1', 'Namespace', msg(ld(1, msg(ld(2, 'team-'))))), '', 'namespaces')).raw;
  t.equal(str(at(generated, 1), 2), 'abc123-team-', 'generateName prefixed');
  t.equal(str(at(generated, 1), 1), undefined);
});

const CLUSTER_THING: KindRow = {
  group: 'example.com',
  resource: 'things',
  kind: 'Thing',
  scope: 'Cluster',
  tenancy: 'tenant',
  rule: 'generic',
  listPath: 'label-filter',
  subresources: [],
};

t.test('cluster-scoped tenant kinds: name and generateName prefixed, namespace left alone', async (t) => {
  const body = envelope('example.com/v1', 'Thing', msg(ld(1, msg(ld(1, 'one'), ld(2, 'gen-'), ld(3, 'ignored'))), ld(2, 'spec bytes')));
  const raw = unwrap(protobufBodyToUpstream(body, CLUSTER_THING, TENANT, CREATE)).raw;
  t.same([str(at(raw, 1), 1), str(at(raw, 1), 2), str(at(raw, 1), 3)], ['abc123-one', 'abc123-gen-', 'ignored']);
  t.same(all(raw, 2), [Buffer.from('spec bytes')]);
});

t.test('pod templates of every workload kind', async (t) => {
  const template = (extra: Record<string, string> = {}) => msg(ld(1, labels({ app: 'a', ...extra })), ld(2, msg(ld(2, 'container'))));
  const labelsAt = (out: Buffer, ...path: number[]) => mapOf(at(unwrap(out).raw, ...path, 1)).map;
  const want = { app: 'a', [TENANT_LABEL]: TENANT };
  const meta = ld(1, msg(ld(1, 'w'), ld(3, 'default')));
  const cases: [string, string, string, string, Buffer, number[]][] = [
    ['apps', 'deployments', 'apps/v1', 'Deployment', ld(2, ld(3, template())), [2, 3]],
    ['apps', 'replicasets', 'apps/v1', 'ReplicaSet', ld(2, ld(3, template())), [2, 3]],
    ['apps', 'statefulsets', 'apps/v1', 'StatefulSet', ld(2, ld(3, template())), [2, 3]],
    ['apps', 'daemonsets', 'apps/v1', 'DaemonSet', ld(2, ld(2, template())), [2, 2]],
    ['', 'replicationcontrollers', 'v1', 'ReplicationController', ld(2, ld(3, template())), [2, 3]],
    ['batch', 'jobs', 'batch/v1', 'Job', ld(2, ld(6, template())), [2, 6]],
    ['batch', 'cronjobs', 'batch/v1', 'CronJob', ld(2, ld(5, msg(ld(1, Buffer.alloc(0)), ld(2, ld(6, template()))))), [2, 5, 2, 6]],
    ['', 'podtemplates', 'v1', 'PodTemplate', ld(2, template({ [TENANT_LABEL]: 'zzzzzz' })), [2]],
  ];
  for (const [group, resource, apiVersion, kind, rest, path] of cases) {
    const out = convert(envelope(apiVersion, kind, msg(meta, rest)), group, resource);
    t.same(labelsAt(out, ...path), want, `${kind} template`);
    t.same(at(unwrap(out).raw, ...path, 2), msg(ld(2, 'container')), `${kind} pod spec untouched`);
  }
  const cronJob = convert(envelope('batch/v1', 'CronJob', msg(meta, cases[6]![4])), 'batch', 'cronjobs');
  t.same(labelsAt(cronJob, 2, 5), { [TENANT_LABEL]: TENANT }, 'CronJob jobTemplate metadata labelled');
  const job = convert(envelope('batch/v1', 'Job', msg(meta, ld(2, ld(6, ld(2, ld(2, 'container')))))), 'batch', 'jobs');
  t.same(labelsAt(job, 2, 6), { [TENANT_LABEL]: TENANT }, 'a template without metadata gets it');
  const sts = convert(
    envelope(
      'apps/v1',
      'StatefulSet',
      msg(meta, ld(2, msg(ld(3, template()), ld(4, msg(ld(1, labels({ [TENANT_LABEL]: 'zzzzzz' })), ld(2, 'pvc spec'))), ld(4, ld(2, 'pvc2'))))),
    ),
    'apps',
    'statefulsets',
  );
  const claims = all(at(unwrap(sts).raw, 2), 4);
  t.same(
    claims.map((c) => mapOf(at(c, 1))),
    [1, 2].map(() => ({ map: { [TENANT_LABEL]: TENANT }, tenantEntries: 1 })),
    'volume claim templates labelled',
  );
  t.same(all(claims[0]!, 2), [Buffer.from('pvc spec')]);
  const pod = convert(envelope('v1', 'Pod', msg(meta, ld(2, ld(18, ld(2, ld(1, ld(2, 'other-ns'))))))), '', 'pods');
  t.same(strs(at(unwrap(pod).raw, 2, 18, 2, 1), 2), ['abc123-other-ns'], 'a Pod spec converts as a template pod spec does');
  t.same(mapOf(at(unwrap(pod).raw, 1)).map, { [TENANT_LABEL]: TENANT }, 'a Pod is labelled');

  for (const row of KINDS.filter((r) => ['pod', 'workload', 'statefulset', 'cronjob', 'podtemplate'].includes(r.rule))) {
    t.doesNotThrow(() => protobufBodyToUpstream(envelope('', row.kind, msg(meta)), row, TENANT, CREATE), `${row.kind} is converted from protobuf`);
  }
  t.equal(
    thrown(() => convert(envelope('apps/v1beta2', 'Deployment', msg(meta)), 'apps', 'deployments')).code,
    415,
    'field numbers of other versions are not known',
  );
});

t.test('the tenant label: appended once after the other labels, in every metadata', async (t) => {
  const body = envelope(
    'v1',
    'ConfigMap',
    msg(ld(1, msg(ld(3, 'ns'), labels({ a: '1', [TENANT_LABEL]: 'xyz789', b: '2' }), ld(11, entry(TENANT_LABEL, TENANT)), ld(12, entry('note', 'n'))))),
  );
  const meta = at(unwrap(convert(body, '', 'configmaps')).raw, 1);
  t.same(mapOf(meta), { map: { a: '1', b: '2', [TENANT_LABEL]: TENANT }, tenantEntries: 1 });
  t.same(
    decode(meta).map((f) => f.number),
    [3, 11, 11, 11, 12],
    'labels stay before annotations',
  );
  const bare = unwrap(convert(envelope('v1', 'ConfigMap', msg(ld(2, entry('k', 'v')))), '', 'configmaps')).raw;
  t.same(mapOf(at(bare, 1)).map, { [TENANT_LABEL]: TENANT }, 'metadata created when absent');
  t.same(all(bare, 2), [entry('k', 'v')]);
  const noRaw = unwrap(convert(envelope('v1', 'ConfigMap', null), '', 'configmaps')).raw;
  t.same(mapOf(at(noRaw, 1)).map, { [TENANT_LABEL]: TENANT }, 'raw created when absent');
});

t.test('names too long once prefixed: the same 422 as JSON', async (t) => {
  const ctx = { tenant: TENANT, scopeOf: () => undefined, kindScope: () => undefined };
  const jsonError = (obj: object, group: string, resource: string) => thrown(() => objectToUpstream(obj, ctx, rowOf(group, resource)));
  const longNamespace = 'n'.repeat(57);
  const cm = thrown(() => convert(envelope('v1', 'ConfigMap', msg(ld(1, msg(ld(1, 'cfg'), ld(3, longNamespace))))), '', 'configmaps'));
  t.equal(cm.code, 422);
  t.equal(cm.message, jsonError({ metadata: { name: 'cfg', namespace: longNamespace } }, '', 'configmaps').message);
  t.doesNotThrow(() => convert(envelope('v1', 'ConfigMap', msg(ld(1, ld(3, 'n'.repeat(56))))), '', 'configmaps'));
  const ns = thrown(() => convert(envelope('v1', 'Namespace', msg(ld(1, ld(1, longNamespace)))), '', 'namespaces'));
  t.equal(ns.code, 422);
  t.equal(ns.message, jsonError({ metadata: { name: longNamespace } }, '', 'namespaces').message);
  t.doesNotThrow(() => convert(envelope('v1', 'Namespace', msg(ld(1, ld(1, 'n'.repeat(56))))), '', 'namespaces'));
  const thing = thrown(() => protobufBodyToUpstream(envelope('', 'Thing', msg(ld(1, ld(1, 't'.repeat(247))))), CLUSTER_THING, TENANT, CREATE));
  t.equal(thing.code, 422);
  t.match(thing.message, /no more than 246 characters/);
  const scale = thrown(() =>
    convert(envelope('autoscaling/v1', 'Scale', msg(ld(1, msg(ld(1, 'web'), ld(3, longNamespace))))), 'apps', 'deployments', {
      verb: 'update',
      subresource: 'scale',
    }),
  );
  t.equal(scale.code, 422, 'subresource bodies too');
});

t.test('owner references', async (t) => {
  const owner = (apiVersion: string, kind: string, name: string) => ld(13, msg(ld(1, kind), ld(3, name), ld(4, 'uid'), ld(5, apiVersion), vi(6, 1)));
  const body = (...owners: Buffer[]) => envelope('v1', 'ConfigMap', msg(ld(1, msg(ld(3, 'ns'), ...owners))));
  const owners = (out: Buffer) => all(at(unwrap(out).raw, 1), 13);
  const clusterOwner = owners(convert(body(owner('v1', 'Namespace', 'ns')), '', 'configmaps'))[0]!;
  t.same([str(clusterOwner, 3), str(clusterOwner, 5)], ['abc123-ns', 'v1']);
  t.same(others(clusterOwner, 3), others(one(owner('v1', 'Namespace', 'ns'), 13), 3), 'kind, uid, apiVersion, controller byte for byte');
  t.same(
    decode(clusterOwner).map((f) => f.number),
    [1, 3, 4, 5, 6],
    'other fields kept, in place',
  );
  const rs = owner('apps/v1', 'ReplicaSet', 'rs');
  t.same(owners(convert(body(rs), '', 'configmaps'))[0], one(rs, 13), 'namespaced owner byte for byte');
  const unknown = thrown(() => convert(body(rs, owner('apps/v1', 'Nonsense', 'x')), '', 'configmaps'));
  t.equal(unknown.code, 422);
  t.match(unknown.message, /metadata\.ownerReferences\[1\]/);
  const custom = owner('example.com/v1', 'ClusterWidget', 'w');
  t.equal(thrown(() => convert(body(custom), '', 'configmaps')).code, 415, 'custom owners need discovery');
  const withDiscovery = owners(
    convert(body(custom), '', 'configmaps', {
      verb: 'create',
      subresource: '',
      kindScope: (apiVersion, kind) => (apiVersion === 'abc123-example.com/v1' && kind === 'ClusterWidget' ? 'Cluster' : undefined),
    }),
  )[0]!;
  t.same([str(withDiscovery, 3), str(withDiscovery, 5)], ['abc123-w', 'abc123-example.com/v1']);
});

t.test('subresources', async (t) => {
  const scaleBody = envelope('autoscaling/v1', 'Scale', msg(ld(1, msg(ld(1, 'web'), ld(3, 'default'), labels({ [TENANT_LABEL]: 'zzzzzz' }))), ld(2, vi(1, 3))));
  const scale = unwrap(convert(scaleBody, 'apps', 'deployments', { verb: 'update', subresource: 'scale' })).raw;
  t.same([str(at(scale, 1), 1), str(at(scale, 1), 3)], ['web', 'abc123-default']);
  t.same(all(at(scale, 1), 11), all(at(unwrap(scaleBody).raw, 1), 11), 'only names: labels untouched');
  t.same(others(scale, 1), ld(2, vi(1, 3)));
  const finalize = unwrap(
    convert(envelope('v1', 'Namespace', msg(ld(1, ld(1, 'team')), ld(2, ld(1, 'kubernetes')))), '', 'namespaces', { verb: 'update', subresource: 'finalize' }),
  ).raw;
  t.equal(str(at(finalize, 1), 1), 'abc123-team', 'cluster-scoped names prefixed');
  t.same(mapOf(at(finalize, 1)).map, { [TENANT_LABEL]: TENANT }, 'a finalize carries the Namespace itself: its tenant label forced as on any write of it');
  t.same(all(at(finalize, 2), 1).map(String), ['kubernetes'], 'its finalizers as sent');
  const noNames = envelope('policy/v1', 'Eviction', msg(ld(2, vi(1, 0))));
  t.equal(convert(noNames, '', 'pods', { verb: 'create', subresource: 'eviction' }), noNames, 'nothing to convert: the same body');
  const status = unwrap(
    convert(envelope('apps/v1', 'Deployment', msg(ld(1, ld(3, 'default')), ld(2, ld(3, msg(ld(1, Buffer.alloc(0))))))), 'apps', 'deployments', {
      verb: 'update',
      subresource: 'status',
    }),
  ).raw;
  t.same(mapOf(at(status, 2, 3, 1)).map, { [TENANT_LABEL]: TENANT }, 'status updates are whole objects');
  t.equal(
    thrown(() => convert(envelope('v1', 'PersistentVolume', msg()), '', 'persistentvolumes', { verb: 'update', subresource: 'status', version: 'v1beta1' }))
      .code,
    415,
    'a version whose field numbers are not known',
  );
  const deleteOptions = envelope('meta.k8s.io/v1', 'DeleteOptions', msg(ld(3, ld(2, '5'))));
  t.equal(convert(deleteOptions, 'apps', 'deployments', { verb: 'delete', subresource: '' }), deleteOptions, 'DeleteOptions pass as they are');
  t.equal(thrown(() => convert(deleteOptions.subarray(0, 10), 'apps', 'deployments', { verb: 'deletecollection', subresource: '' })).code, 400);
  t.equal(thrown(() => convert(CONFIGMAP, '', 'configmaps', { verb: 'patch', subresource: '' })).code, 415);
});

t.test('kinds converted only as JSON, and kinds not writable', async (t) => {
  // Every built-in tenant kind converts (test/unit/protobuf-kinds.test.ts); only versions without known field numbers do not.
  const cases: [string, string, string, string][] = [
    ['admissionregistration.k8s.io', 'validatingwebhookconfigurations', 'ValidatingWebhookConfiguration', 'admissionregistration.k8s.io/v1beta1'],
    ['', 'events', 'Event', 'v2'],
    ['networking.k8s.io', 'networkpolicies', 'NetworkPolicy', 'networking.k8s.io/v1beta1'],
    ['apiextensions.k8s.io', 'customresourcedefinitions', 'CustomResourceDefinition', 'apiextensions.k8s.io/v1beta1'],
  ];
  for (const [group, resource, kind, apiVersion] of cases) {
    const error = thrown(() => convert(envelope(apiVersion, kind, msg(ld(1, ld(1, 'x')))), group, resource));
    t.equal(error.code, 415, `${kind} ${apiVersion}`);
    t.equal(error.reason, 'UnsupportedMediaType');
    t.match(error.message, /send it as JSON/);
  }
  t.equal(thrown(() => convert(NAMESPACE, '', 'nodes')).code, 403, 'shared kinds are read-only');
  t.equal(thrown(() => convert(NAMESPACE, 'apiregistration.k8s.io', 'apiservices')).code, 403, 'APIServices are read-only');
  t.equal(thrown(() => convert(NAMESPACE, 'tenant.kubezoo.io', 'tenants')).code, 404, 'hidden kinds do not exist');
  t.equal(thrown(() => convert(envelope('v1', 'Secret', msg()), '', 'configmaps')).code, 400, 'a body of another kind');
  t.equal(thrown(() => convert(envelope('apps/v1', 'ConfigMap', msg()), '', 'configmaps')).code, 400, 'a body of another group');
  t.equal(thrown(() => convert(msg(MAGIC, ld(2, msg()), ld(3, 'gzip')), '', 'configmaps')).code, 415, 'contentEncoding');
});

// ---- roles and bindings: the wire-level conversion against the JSON rule on the same object ----

const RBAC_GROUP = 'rbac.authorization.k8s.io';
const RBAC_V1 = 'rbac.authorization.k8s.io/v1';
type Spec = Record<string, unknown>;
const strings = (value: unknown): string[] => (Array.isArray(value) ? (value as string[]) : []);
/** Drops undefined values and empty arrays (an empty repeated field is absent on the wire). */
const compact = (obj: Spec): Spec => Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined && !(Array.isArray(v) && v.length === 0)));

// rbac/v1 generated.proto: PolicyRule verbs = 1, apiGroups = 2, resources = 3, resourceNames = 4, nonResourceURLs = 5;
// AggregationRule clusterRoleSelectors = 1 (LabelSelector matchLabels = 1, matchExpressions = 2 {key = 1, operator = 2, values = 3});
// Subject kind = 1, apiGroup = 2, name = 3, namespace = 4; RoleRef apiGroup = 1, kind = 2, name = 3.
const RULE_FIELDS = ['verbs', 'apiGroups', 'resources', 'resourceNames', 'nonResourceURLs'] as const;
const SUBJECT_FIELDS = ['kind', 'apiGroup', 'name', 'namespace'] as const;
const ROLE_REF_FIELDS = ['apiGroup', 'kind', 'name'] as const;
const stringFields = (obj: Spec, names: readonly string[]) =>
  msg(...names.flatMap((name, i) => (typeof obj[name] === 'string' ? [ld(i + 1, obj[name] as string)] : [])));
const encodeRule = (rule: Spec) => msg(...RULE_FIELDS.flatMap((name, i) => strings(rule[name]).map((value) => ld(i + 1, value))));
function encodeSelector(selector: Spec): Buffer {
  const matchLabels = (selector.matchLabels ?? {}) as Record<string, string>;
  const expressions = (selector.matchExpressions ?? []) as Spec[];
  return msg(
    labels(matchLabels, 1),
    ...expressions.map((e) => ld(2, msg(ld(1, e.key as string), ld(2, e.operator as string), ...strings(e.values).map((v) => ld(3, v))))),
  );
}
function encodeMeta(obj: Spec): Buffer {
  const meta = (obj.metadata ?? {}) as Spec;
  return ld(1, msg(stringFields(meta, ['name', 'generateName', 'namespace']), labels((meta.labels ?? {}) as Record<string, string>)));
}
function encodeRole(obj: Spec): Buffer {
  const aggregation = obj.aggregationRule as Spec | undefined;
  return msg(
    encodeMeta(obj),
    ...(obj.rules as Spec[]).map((rule) => ld(2, encodeRule(rule))),
    ...(aggregation === undefined ? [] : [ld(3, msg(...(aggregation.clusterRoleSelectors as Spec[]).map((s) => ld(1, encodeSelector(s)))))]),
  );
}
const encodeBinding = (obj: Spec): Buffer =>
  msg(
    encodeMeta(obj),
    ...(obj.subjects as Spec[]).map((s) => ld(2, stringFields(s, SUBJECT_FIELDS))),
    ...(obj.roleRef === undefined ? [] : [ld(3, stringFields(obj.roleRef as Spec, ROLE_REF_FIELDS))]),
  );

/** What the apiserver reads of a role or binding (the test's own decoder), as JSON. */
function rbacJsonOf(raw: Buffer, rule: 'role' | 'binding'): Spec {
  const meta = at(raw, 1);
  const metadata = compact({ name: str(meta, 1), namespace: str(meta, 3), labels: mapOf(meta).map });
  const readStrings = (buf: Buffer, names: readonly string[]) => compact(Object.fromEntries(names.map((name, i) => [name, str(buf, i + 1)])));
  if (rule === 'binding') {
    const roleRef = all(raw, 3).at(-1);
    return compact({ metadata, subjects: all(raw, 2).map((s) => readStrings(s, SUBJECT_FIELDS)), roleRef: roleRef && readStrings(roleRef, ROLE_REF_FIELDS) });
  }
  const rules = all(raw, 2).map((r) => compact(Object.fromEntries(RULE_FIELDS.map((name, i) => [name, strs(r, i + 1)]))));
  const aggregation = all(raw, 3).at(-1);
  const selectors = aggregation && {
    clusterRoleSelectors: all(aggregation, 1).map((s) =>
      compact({
        matchLabels: Object.keys(mapOf(s, 1).map).length === 0 ? undefined : mapOf(s, 1).map,
        matchExpressions: all(s, 2).map((e) => compact({ key: str(e, 1), operator: str(e, 2), values: strs(e, 3) })),
      }),
    ),
  };
  return compact({ metadata, rules, aggregationRule: selectors });
}

const WIDGETS_SCOPE = (group: string, resource: string) =>
  group === 'abc123-example.com' && resource === 'widgets' ? 'Cluster' : group === 'abc123-example.com' && resource === 'gadgets' ? 'Namespaced' : undefined;
const RBAC_OPTIONS: ProtobufBodyOptions = { verb: 'create', subresource: '', scopeOf: WIDGETS_SCOPE };

/** The JSON rule's output for `obj`, in the form rbacJsonOf reads (metadata: name, namespace, labels). */
function jsonRuleOf(obj: Spec, resource: string, rule: 'role' | 'binding'): Spec {
  const ctx = { tenant: TENANT, scopeOf: WIDGETS_SCOPE, kindScope: () => undefined };
  const out = objectToUpstream(structuredClone(obj), ctx, rowOf(RBAC_GROUP, resource)) as Spec;
  const meta = out.metadata as Spec;
  const metadata = compact({ name: meta.name, namespace: meta.namespace, labels: meta.labels });
  return rule === 'binding'
    ? compact({ metadata, subjects: out.subjects, roleRef: out.roleRef })
    : compact({ metadata, rules: out.rules, aggregationRule: out.aggregationRule });
}

const RULES_SPEC: Spec[] = [
  { verbs: ['get', 'list'], apiGroups: ['', 'apps'], resources: ['configmaps', 'deployments'] },
  { verbs: ['get'], apiGroups: [''], resources: ['namespaces', 'namespaces/status'], resourceNames: ['team-a', 'team-b'] },
  { verbs: ['get'], apiGroups: [''], resources: ['configmaps'], resourceNames: ['cfg'] },
  { verbs: ['*'], apiGroups: ['*'], resources: ['*'], resourceNames: ['x'] },
  { verbs: ['get'], apiGroups: ['', 'rbac.authorization.k8s.io'], resources: ['secrets', 'clusterroles'], resourceNames: ['s', 'r'] },
  { verbs: ['get', 'update'], apiGroups: ['example.com'], resources: ['widgets'], resourceNames: ['w1'] },
  { verbs: ['get'], apiGroups: ['example.com', 'apps'], resources: ['gadgets'], resourceNames: ['g1'] },
  { verbs: ['get'], nonResourceURLs: ['/healthz', '/version'] },
  { verbs: ['watch'], apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], resourceNames: ['fast'] },
];
const CLUSTER_ROLE: Spec = {
  metadata: { name: 'reader', labels: { app: 'x', [TENANT_LABEL]: 'evil00', 'rbac.authorization.k8s.io/aggregate-to-view': 'true' } },
  rules: RULES_SPEC,
  aggregationRule: {
    clusterRoleSelectors: [
      { matchLabels: { 'rbac.example.com/aggregate': 'true', [TENANT_LABEL]: 'evil00', 'rbac.authorization.k8s.io/aggregate-to-edit': 'true' } },
      {
        matchExpressions: [
          { key: 'tier', operator: 'In', values: ['a', 'b'] },
          { key: 'rbac.authorization.k8s.io/aggregate-to-admin', operator: 'Exists' },
        ],
      },
    ],
  },
};
const ROLE: Spec = { metadata: { name: 'pod-reader', namespace: 'dev' }, rules: RULES_SPEC };
const SUBJECTS: Spec[] = [
  { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice' },
  { kind: 'User', name: 'system:serviceaccount:dev:builder' },
  { kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'devs' },
  { kind: 'Group', name: 'system:serviceaccounts:dev' },
  { kind: 'ServiceAccount', name: 'default', namespace: 'dev' },
  { kind: 'ServiceAccount', name: 'no-namespace' },
  { kind: 'User', name: 'bob', namespace: 'ignored' },
  { kind: 'Robot', name: 'r2', namespace: 'd2' },
  { name: 'nameless' },
];
const ROLE_BINDING: Spec = {
  metadata: { name: 'read-pods', namespace: 'dev' },
  subjects: SUBJECTS,
  roleRef: { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name: 'view' },
};
const ROLE_BINDING_TO_ROLE: Spec = {
  metadata: { name: 'read', namespace: 'dev' },
  subjects: SUBJECTS.slice(0, 2),
  roleRef: { apiGroup: RBAC_GROUP, kind: 'Role', name: 'pod-reader' },
};
/** A ClusterRoleBinding's subjects are shadow identities upstream (rules/cluster-subjects.ts), service accounts as users. */
const CLUSTER_ROLE_BINDING: Spec = {
  metadata: { name: 'readers' },
  subjects: SUBJECTS,
  roleRef: { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name: 'reader' },
};

const RBAC_CASES: [string, string, 'role' | 'binding', Spec][] = [
  ['ClusterRole', 'clusterroles', 'role', CLUSTER_ROLE],
  ['Role', 'roles', 'role', ROLE],
  ['RoleBinding', 'rolebindings', 'binding', ROLE_BINDING],
  ['RoleBinding', 'rolebindings', 'binding', ROLE_BINDING_TO_ROLE],
  ['ClusterRoleBinding', 'clusterrolebindings', 'binding', CLUSTER_ROLE_BINDING],
];
const rbacBody = (kind: string, rule: 'role' | 'binding', obj: Spec) => envelope(RBAC_V1, kind, rule === 'role' ? encodeRole(obj) : encodeBinding(obj));

t.test('roles and bindings: converted on the wire exactly as the JSON rule converts the same object', async (t) => {
  for (const [kind, resource, rule, obj] of RBAC_CASES) {
    const body = rbacBody(kind, rule, obj);
    const out = convert(body, RBAC_GROUP, resource, RBAC_OPTIONS);
    const got = rbacJsonOf(unwrap(out).raw, rule);
    const want = jsonRuleOf(obj, resource, rule);
    t.same(got, want, `${kind} ${(obj.metadata as Spec).name}: the JSON rule's output`);
    t.same(
      rbacJsonOf(unwrap(body).raw, rule),
      compact({ ...obj, metadata: compact({ ...(obj.metadata as Spec), labels: (obj.metadata as Spec).labels ?? {} }) }),
      `${kind}: the test's encoder and decoder agree`,
    );
    t.same(others(unwrap(out).envelope, 2), others(unwrap(body).envelope, 2), `${kind}: envelope byte for byte`);
  }
  // Spot checks of the expected values themselves (the JSON rule is the reference, these keep it honest).
  const clusterRole = rbacJsonOf(unwrap(convert(rbacBody('ClusterRole', 'role', CLUSTER_ROLE), RBAC_GROUP, 'clusterroles', RBAC_OPTIONS)).raw, 'role');
  const rules = clusterRole.rules as Spec[];
  t.equal((clusterRole.metadata as Spec).name, 'abc123-reader');
  t.same(rules[1]!.resourceNames, ['abc123-team-a', 'abc123-team-b'], 'names of cluster-scoped kinds prefixed');
  t.same(rules[2]!.resourceNames, ['cfg'], 'names of namespaced kinds unchanged');
  t.same(rules[3]!.resourceNames, ['x', 'abc123-x'], "'*': names of both forms");
  t.same(
    rules[5],
    { verbs: ['get', 'update'], apiGroups: ['abc123-example.com'], resources: ['widgets'], resourceNames: ['abc123-w1'] },
    'custom group prefixed, cluster-scoped custom names too',
  );
  t.same(rules[6]!.apiGroups, ['abc123-example.com', 'apps'], 'built-in groups unchanged');
  t.same(rules[8]!.resourceNames, ['fast'], 'shared kinds keep their names');
  const selectors = (clusterRole.aggregationRule as Spec).clusterRoleSelectors as Spec[];
  t.same(
    selectors.map((s) => s.matchLabels),
    [{ 'rbac.example.com/aggregate': 'true', 'abc123.aggregation.kubezoo.io/aggregate-to-edit': 'true', [TENANT_LABEL]: TENANT }, { [TENANT_LABEL]: TENANT }],
    'aggregation only of the tenant, by its own aggregate-to keys',
  );
  t.equal(
    (clusterRole.metadata as Spec & { labels: Spec }).labels['abc123.aggregation.kubezoo.io/aggregate-to-view'],
    'true',
    "the upstream's view role cannot select it",
  );
  const bindingOut = rbacJsonOf(unwrap(convert(rbacBody('RoleBinding', 'binding', ROLE_BINDING), RBAC_GROUP, 'rolebindings', RBAC_OPTIONS)).raw, 'binding');
  t.same(
    (bindingOut.subjects as Spec[]).map((s) => [s.name, s.namespace]),
    [
      ['abc123-alice', undefined],
      ['system:serviceaccount:abc123-dev:builder', undefined],
      ['abc123:devs', undefined],
      ['system:serviceaccounts:abc123-dev', undefined],
      ['default', 'abc123-dev'],
      ['no-namespace', undefined],
      ['abc123-bob', 'ignored'],
      ['r2', 'd2'],
      ['nameless', undefined],
    ],
  );
  t.same(bindingOut.roleRef, { apiGroup: RBAC_GROUP, kind: 'ClusterRole', name: 'abc123-view' });
  t.same((bindingOut.metadata as Spec).namespace, 'abc123-dev');
});

t.test('roles and bindings: everything the rule does not map is copied byte for byte', async (t) => {
  const unknownField = ld(15, 'future');
  const rule = msg(ld(1, 'get'), ld(2, ''), ld(3, 'namespaces'), unknownField, ld(4, 'a'), vi(16, 7), ld(5, '/x'));
  const body = envelope(
    RBAC_V1,
    'ClusterRole',
    msg(ld(1, ld(1, 'r')), ld(2, rule), ld(3, msg(ld(1, Buffer.alloc(0)), ld(2, 'agg-extra'))), ld(9, 'object-extra')),
  );
  const raw = unwrap(convert(body, RBAC_GROUP, 'clusterroles')).raw;
  const ruleOut = one(raw, 2);
  t.same(
    decode(ruleOut).map((f) => f.number),
    [1, 2, 3, 15, 4, 16, 5],
    'fields kept in place',
  );
  t.same(others(ruleOut, 4), others(rule, 4), 'verbs, groups, resources, unknown fields byte for byte');
  t.same(strs(ruleOut, 4), ['abc123-a']);
  t.same(all(one(raw, 3), 2), [Buffer.from('agg-extra')], 'unknown AggregationRule field kept');
  t.same(all(raw, 9), [Buffer.from('object-extra')], 'unknown object field kept');
  // Several mappings: resourceNames are written once per mapping, in order, where the first one was.
  const star = msg(ld(2, '*'), ld(3, '*'), ld(4, 'a'), ld(4, 'b'), ld(1, 'get'));
  const starOut = one(unwrap(convert(envelope(RBAC_V1, 'Role', msg(ld(1, ld(3, 'dev')), ld(2, star))), RBAC_GROUP, 'roles')).raw, 2);
  t.same(
    decode(starOut).map((f) => f.number),
    [2, 3, 4, 4, 4, 4, 1],
  );
  t.same(strs(starOut, 4), ['a', 'b', 'abc123-a', 'abc123-b']);
  // A Role has no aggregationRule: field 3 is unknown to the apiserver and copied as it is.
  const roleExtra = ld(3, ld(1, ld(1, entry(TENANT_LABEL, 'zzzzzz'))));
  const roleRaw = unwrap(convert(envelope(RBAC_V1, 'Role', msg(ld(1, ld(3, 'dev')), roleExtra)), RBAC_GROUP, 'roles')).raw;
  t.same(others(roleRaw, 1), roleExtra);
  // Bindings: unknown subject and roleRef fields, and subjects with nothing to map.
  const subject = msg(ld(1, 'ServiceAccount'), ld(3, 'sa'), ld(4, 'dev'), ld(9, 'x'));
  const untouched = msg(ld(1, 'ServiceAccount'), ld(3, 'sa'), ld(9, 'y'));
  const roleRef = msg(ld(1, RBAC_GROUP), ld(2, 'ClusterRole'), ld(3, 'edit'), ld(4, 'z'));
  const bindingRaw = unwrap(
    convert(envelope(RBAC_V1, 'RoleBinding', msg(ld(1, ld(3, 'dev')), ld(2, subject), ld(2, untouched), ld(3, roleRef))), RBAC_GROUP, 'rolebindings'),
  ).raw;
  const [subjectOut, untouchedOut] = all(bindingRaw, 2);
  t.same(subjectOut, msg(ld(1, 'ServiceAccount'), ld(3, 'sa'), ld(4, 'abc123-dev'), ld(9, 'x')));
  t.same(untouchedOut, untouched);
  t.same(one(bindingRaw, 3), msg(ld(1, RBAC_GROUP), ld(2, 'ClusterRole'), ld(3, 'abc123-edit'), ld(4, 'z')));
  const toRole = envelope(RBAC_V1, 'RoleBinding', msg(ld(1, ld(3, 'dev')), ld(3, msg(ld(2, 'Role'), ld(3, 'r')))));
  t.same(one(unwrap(convert(toRole, RBAC_GROUP, 'rolebindings')).raw, 3), msg(ld(2, 'Role'), ld(3, 'r')), 'a Role reference unchanged');
});

t.test('roles and bindings: refusals', async (t) => {
  const bad = (body: Buffer, resource: string, why: string) => {
    const error = thrown(() => convert(body, RBAC_GROUP, resource, RBAC_OPTIONS));
    t.equal(error.code, 400, why);
    t.equal(error.reason, 'BadRequest', why);
  };
  const role = (...rules: Buffer[]) => envelope(RBAC_V1, 'ClusterRole', msg(ld(1, ld(1, 'r')), ...rules));
  const rb = (...parts: Buffer[]) => envelope(RBAC_V1, 'RoleBinding', msg(ld(1, ld(3, 'dev')), ...parts));
  bad(role(vi(2, 1)), 'clusterroles', 'a rule as a varint');
  bad(role(ld(2, vi(2, 1))), 'clusterroles', 'apiGroups as a varint');
  bad(role(ld(2, vi(3, 1))), 'clusterroles', 'resources as a varint');
  bad(role(ld(2, msg(ld(3, 'namespaces'), vi(4, 1)))), 'clusterroles', 'resourceNames as a varint');
  bad(role(ld(2, msg(ld(3, 'namespaces'), ld(4, Buffer.from([0xff]))))), 'clusterroles', 'resourceNames not UTF-8');
  bad(role(ld(3, Buffer.alloc(0)), ld(3, Buffer.alloc(0))), 'clusterroles', 'aggregationRule twice');
  bad(role(ld(3, vi(1, 1))), 'clusterroles', 'clusterRoleSelectors as a varint');
  bad(role(ld(3, ld(1, vi(1, 1)))), 'clusterroles', 'matchLabels as a varint');
  bad(role(ld(3, Buffer.from([0x0a, 0x05, 0x0a]))), 'clusterroles', 'a selector longer than its aggregationRule');
  bad(role(ld(3, ld(1, ld(1, msg(ld(1, TENANT_LABEL), ld(1, 'x')))))), 'clusterroles', 'a matchLabels entry with two keys');
  bad(rb(vi(2, 1)), 'rolebindings', 'a subject as a varint');
  bad(rb(ld(2, msg(ld(1, 'User'), ld(1, 'Group'), ld(3, 'a')))), 'rolebindings', 'subject kind twice');
  bad(rb(ld(2, msg(ld(1, 'User'), ld(3, 'a'), ld(3, 'b')))), 'rolebindings', 'subject name twice');
  bad(rb(ld(2, msg(ld(1, 'ServiceAccount'), ld(4, 'a'), ld(4, 'b')))), 'rolebindings', 'subject namespace twice');
  bad(rb(ld(2, msg(vi(1, 1), ld(3, 'a')))), 'rolebindings', 'subject kind as a varint');
  bad(rb(ld(3, msg(ld(2, 'ClusterRole'), ld(3, 'a'))), ld(3, ld(3, 'b'))), 'rolebindings', 'roleRef twice');
  bad(rb(ld(3, msg(ld(2, 'ClusterRole'), ld(3, 'a'), ld(3, 'b')))), 'rolebindings', 'roleRef name twice');
  bad(rb(ld(3, msg(ld(2, 'ClusterRole'), ld(2, 'Role'), ld(3, 'a')))), 'rolebindings', 'roleRef kind twice');
  bad(rb(ld(3, msg(vi(3, 1), ld(2, 'ClusterRole')))), 'rolebindings', 'roleRef name as a varint');

  const custom = role(ld(2, msg(ld(2, 'example.com'), ld(3, 'widgets'), ld(4, 'w'))));
  const noDiscovery = thrown(() => convert(custom, RBAC_GROUP, 'clusterroles'));
  t.equal(noDiscovery.code, 415, 'resourceNames of a custom resource need discovery');
  t.match(noDiscovery.message, /send it as JSON/);
  t.doesNotThrow(() => convert(role(ld(2, msg(ld(2, 'example.com'), ld(3, 'widgets')))), RBAC_GROUP, 'clusterroles'), 'custom groups without names do not');
  t.equal(thrown(() => convert(envelope('rbac.authorization.k8s.io/v1beta1', 'ClusterRole', msg()), RBAC_GROUP, 'clusterroles')).code, 415, 'other versions');
  t.equal(thrown(() => convert(envelope(RBAC_V1, 'Role', msg()), RBAC_GROUP, 'clusterroles')).code, 400, 'a Role body for clusterroles');
  // A tenant whose id upstream reserves cannot name groups: the JSON rule's 403, from protobuf too.
  const group = rb(ld(2, msg(ld(1, 'Group'), ld(3, 'devs'))));
  const ctx = { tenant: 'system', scopeOf: () => undefined, kindScope: () => undefined };
  const jsonError = thrown(() =>
    objectToUpstream({ metadata: { namespace: 'dev' }, subjects: [{ kind: 'Group', name: 'devs' }] }, ctx, rowOf(RBAC_GROUP, 'rolebindings')),
  );
  const wireError = thrown(() => protobufBodyToUpstream(group, rowOf(RBAC_GROUP, 'rolebindings'), 'system', CREATE));
  t.same([wireError.code, wireError.message], [jsonError.code, jsonError.message]);
  t.equal(jsonError.code, 403);
  // A ClusterRoleBinding's service account: a shadow user upstream, without namespace, as the JSON rule makes it.
  const crb = (...parts: Buffer[]) =>
    envelope(RBAC_V1, 'ClusterRoleBinding', msg(ld(1, ld(1, 'b')), ...parts, ld(3, msg(ld(2, 'ClusterRole'), ld(3, 'reader')))));
  const wire = rbacJsonOf(
    unwrap(convert(crb(ld(2, msg(ld(1, 'ServiceAccount'), ld(3, 'sa'), ld(4, 'dev')))), RBAC_GROUP, 'clusterrolebindings', RBAC_OPTIONS)).raw,
    'binding',
  );
  t.same(wire.subjects, [{ kind: 'User', apiGroup: RBAC_GROUP, name: `tenantgate:cluster:system:serviceaccount:${TENANT}-dev:sa` }]);
});

// ---- access and token reviews: the wire-level conversion against the JSON rules on the same object ----

// authorization/v1 generated.proto: SelfSubjectAccessReview, SubjectAccessReview, LocalSubjectAccessReview, SelfSubjectRulesReview
// metadata = 1, spec = 2, status = 3; SelfSubjectAccessReviewSpec resourceAttributes = 1, nonResourceAttributes = 2;
// SubjectAccessReviewSpec also user = 3, groups = 4, extra = 5 (map<string, ExtraValue items = 1>), uid = 6;
// ResourceAttributes namespace = 1, verb = 2, group = 3, version = 4, resource = 5, subresource = 6, name = 7,
// fieldSelector = 8, labelSelector = 9 (rawSelector = 1); NonResourceAttributes path = 1, verb = 2; SelfSubjectRulesReviewSpec namespace = 1.
// authentication/v1 generated.proto: TokenReview metadata = 1, spec = 2 (token = 1, audiences = 2), status = 3;
// SelfSubjectReview metadata = 1, status = 2.
const AUTHZ_GROUP = 'authorization.k8s.io';
const AUTHN_GROUP = 'authentication.k8s.io';
const RESOURCE_ATTRIBUTE_FIELDS = ['namespace', 'verb', 'group', 'version', 'resource', 'subresource', 'name'] as const;
const NON_RESOURCE_ATTRIBUTE_FIELDS = ['path', 'verb'] as const;
const SELECTOR_ATTRIBUTE_FIELDS: Record<string, number> = { fieldSelector: 8, labelSelector: 9 };
type ReviewKind =
  'SelfSubjectAccessReview' | 'SubjectAccessReview' | 'LocalSubjectAccessReview' | 'SelfSubjectRulesReview' | 'TokenReview' | 'SelfSubjectReview';
const REVIEW_API_VERSION = (kind: ReviewKind) => (kind === 'TokenReview' || kind === 'SelfSubjectReview' ? `${AUTHN_GROUP}/v1` : `${AUTHZ_GROUP}/v1`);
const REVIEW_RESOURCE: Record<ReviewKind, [string, string]> = {
  SelfSubjectAccessReview: [AUTHZ_GROUP, 'selfsubjectaccessreviews'],
  SubjectAccessReview: [AUTHZ_GROUP, 'subjectaccessreviews'],
  LocalSubjectAccessReview: [AUTHZ_GROUP, 'localsubjectaccessreviews'],
  SelfSubjectRulesReview: [AUTHZ_GROUP, 'selfsubjectrulesreviews'],
  TokenReview: [AUTHN_GROUP, 'tokenreviews'],
  SelfSubjectReview: [AUTHN_GROUP, 'selfsubjectreviews'],
};
const hasIdentity = (kind: ReviewKind) => kind === 'SubjectAccessReview' || kind === 'LocalSubjectAccessReview';

function encodeReviewSpec(kind: ReviewKind, spec: Spec): Buffer {
  if (kind === 'SelfSubjectRulesReview') return stringFields(spec, ['namespace']);
  if (kind === 'TokenReview') return msg(stringFields(spec, ['token']), ...strings(spec.audiences).map((a) => ld(2, a)));
  const attributes = spec.resourceAttributes as Spec | undefined;
  const nonResource = spec.nonResourceAttributes as Spec | undefined;
  const parts: Buffer[] = [];
  if (attributes !== undefined) {
    const selectors = Object.entries(SELECTOR_ATTRIBUTE_FIELDS).flatMap(([name, number]) =>
      attributes[name] === undefined ? [] : [ld(number, ld(1, (attributes[name] as Spec).rawSelector as string))],
    );
    parts.push(ld(1, msg(stringFields(attributes, RESOURCE_ATTRIBUTE_FIELDS), ...selectors)));
  }
  if (nonResource !== undefined) parts.push(ld(2, stringFields(nonResource, NON_RESOURCE_ATTRIBUTE_FIELDS)));
  if (hasIdentity(kind)) {
    parts.push(stringFields(spec, ['', '', 'user']), ...strings(spec.groups).map((g) => ld(4, g)));
    for (const [key, items] of Object.entries((spec.extra ?? {}) as Record<string, string[]>))
      parts.push(ld(5, msg(ld(1, key), ld(2, msg(...items.map((item) => ld(1, item)))))));
    parts.push(stringFields(spec, ['', '', '', '', '', 'uid']));
  }
  return msg(...parts);
}

/** A review as client-go encodes it; `status` (raw bytes) where the kind has it. */
function encodeReview(kind: ReviewKind, obj: Spec): Buffer {
  const status = obj.status === undefined ? [] : [ld(kind === 'SelfSubjectReview' ? 2 : 3, obj.status as Buffer)];
  const spec = kind === 'SelfSubjectReview' || obj.spec === undefined ? [] : [ld(2, encodeReviewSpec(kind, obj.spec as Spec))];
  return msg(encodeMeta(obj), ...spec, ...status);
}
const reviewBody = (kind: ReviewKind, obj: Spec) => envelope(REVIEW_API_VERSION(kind), kind, encodeReview(kind, obj));

/** What the apiserver reads of a review's metadata and spec (the test's own decoder), as JSON. */
function reviewJsonOf(raw: Buffer, kind: ReviewKind): Spec {
  const meta = at(raw, 1);
  const metadata = compact({ name: str(meta, 1), namespace: str(meta, 3), labels: mapOf(meta).map });
  const specBytes = kind === 'SelfSubjectReview' ? undefined : all(raw, 2).at(-1);
  if (specBytes === undefined) return { metadata };
  const readStrings = (buf: Buffer, names: readonly string[]) => compact(Object.fromEntries(names.map((name, i) => [name, str(buf, i + 1)])));
  if (kind === 'SelfSubjectRulesReview') return { metadata, spec: readStrings(specBytes, ['namespace']) };
  if (kind === 'TokenReview') return { metadata, spec: compact({ token: str(specBytes, 1), audiences: strs(specBytes, 2) }) };
  const attributes = all(specBytes, 1).at(-1);
  const nonResource = all(specBytes, 2).at(-1);
  const spec: Spec = compact({
    resourceAttributes:
      attributes &&
      compact({
        ...readStrings(attributes, RESOURCE_ATTRIBUTE_FIELDS),
        ...Object.fromEntries(
          Object.entries(SELECTOR_ATTRIBUTE_FIELDS).map(([name, number]) => [
            name,
            all(attributes, number).at(-1) && { rawSelector: str(all(attributes, number).at(-1)!, 1) },
          ]),
        ),
      }),
    nonResourceAttributes: nonResource && readStrings(nonResource, NON_RESOURCE_ATTRIBUTE_FIELDS),
  });
  if (hasIdentity(kind)) {
    const extra = Object.fromEntries(all(specBytes, 5).map((e) => [str(e, 1) ?? '', strs(all(e, 2).at(-1) ?? Buffer.alloc(0), 1)]));
    Object.assign(
      spec,
      compact({ user: str(specBytes, 3), groups: strs(specBytes, 4), extra: Object.keys(extra).length === 0 ? undefined : extra, uid: str(specBytes, 6) }),
    );
  }
  return { metadata, spec };
}

/** The JSON rules' output for `obj` (objectToUpstream), in the form reviewJsonOf reads. */
function reviewRuleOf(obj: Spec, kind: ReviewKind): Spec {
  const ctx = { tenant: TENANT, scopeOf: WIDGETS_SCOPE, kindScope: () => undefined };
  const [group, resource] = REVIEW_RESOURCE[kind];
  const out = objectToUpstream(structuredClone(obj), ctx, rowOf(group, resource)) as Spec;
  const meta = out.metadata as Spec;
  // (The test's decoder shows absent labels as {}.)
  const metadata = compact({ name: meta.name, namespace: meta.namespace, labels: meta.labels ?? {} });
  return out.spec === undefined ? { metadata } : { metadata, spec: out.spec };
}

const attributesCases: Spec[] = [
  { namespace: 'dev', verb: 'get', resource: 'configmaps', name: 'cfg' },
  { verb: 'delete', resource: 'namespaces', name: 'team-a' },
  { namespace: 'dev', verb: 'create', group: 'apps', version: 'v1', resource: 'deployments', subresource: 'scale', name: 'web' },
  { verb: 'update', group: 'example.com', resource: 'widgets', name: 'w1', fieldSelector: { rawSelector: 'a=b' }, labelSelector: { rawSelector: 'x in (y)' } },
  { namespace: 'dev', verb: 'get', group: 'example.com', resource: 'gadgets', name: 'g1' },
  { verb: 'list', group: 'example.com', resource: 'unknowns', name: 'u' },
  { verb: '*', group: '*', resource: '*', name: 'x' },
  { verb: 'get', group: 'storage.k8s.io', resource: 'storageclasses', name: 'fast' },
  { verb: 'get', group: 'rbac.authorization.k8s.io', resource: 'clusterroles', name: 'view' },
  { verb: 'list', resource: 'pods' },
  { verb: 'get', resource: 'nodes', name: 'n1' },
  {},
];
const REVIEW_CASES: [ReviewKind, string, string, Spec][] = [
  ...attributesCases.map((resourceAttributes): [ReviewKind, string, string, Spec] => [
    'SelfSubjectAccessReview',
    AUTHZ_GROUP,
    'selfsubjectaccessreviews',
    { metadata: {}, spec: { resourceAttributes } },
  ]),
  [
    'SelfSubjectAccessReview',
    AUTHZ_GROUP,
    'selfsubjectaccessreviews',
    { metadata: { name: 'q', labels: { [TENANT_LABEL]: 'evil00' } }, spec: { nonResourceAttributes: { path: '/healthz', verb: 'get' } } },
  ],
  [
    'SubjectAccessReview',
    AUTHZ_GROUP,
    'subjectaccessreviews',
    {
      metadata: {},
      spec: {
        resourceAttributes: attributesCases[1],
        user: 'alice',
        groups: ['devs', 'system:serviceaccounts:dev', 'system:authenticated'],
        extra: { scopes: ['a', 'b'] },
        uid: 'u-1',
      },
    },
  ],
  [
    'SubjectAccessReview',
    AUTHZ_GROUP,
    'subjectaccessreviews',
    { metadata: {}, spec: { nonResourceAttributes: { path: '/metrics', verb: 'get' }, user: 'system:serviceaccount:dev:builder' } },
  ],
  ['SubjectAccessReview', AUTHZ_GROUP, 'subjectaccessreviews', { metadata: {}, spec: { resourceAttributes: attributesCases[3], groups: ['ops'] } }],
  [
    'LocalSubjectAccessReview',
    AUTHZ_GROUP,
    'localsubjectaccessreviews',
    { metadata: { namespace: 'dev' }, spec: { resourceAttributes: attributesCases[0], user: 'bob', groups: ['devs'] } },
  ],
  ['SelfSubjectRulesReview', AUTHZ_GROUP, 'selfsubjectrulesreviews', { metadata: {}, spec: { namespace: 'dev' } }],
  ['SelfSubjectRulesReview', AUTHZ_GROUP, 'selfsubjectrulesreviews', { metadata: {}, spec: {} }],
  ['TokenReview', AUTHN_GROUP, 'tokenreviews', { metadata: {}, spec: { token: 'eyJhbGciOi.x.y', audiences: ['https://kubernetes.default.svc', 'vault'] } }],
  ['SelfSubjectReview', AUTHN_GROUP, 'selfsubjectreviews', { metadata: {} }],
];
const REVIEW_OPTIONS = RBAC_OPTIONS;

t.test('access and token reviews: converted on the wire exactly as the JSON rules convert the same object', async (t) => {
  for (const [kind, group, resource, obj] of REVIEW_CASES) {
    const body = reviewBody(kind, obj);
    const out = convert(body, group, resource, REVIEW_OPTIONS);
    const label = `${kind} ${JSON.stringify(obj.spec ?? {})}`;
    t.same(reviewJsonOf(unwrap(out).raw, kind), reviewRuleOf(obj, kind), `${label}: the JSON rule's output`);
    const metadata = obj.metadata as Spec;
    t.same(
      reviewJsonOf(unwrap(body).raw, kind),
      compact({ metadata: compact({ ...metadata, labels: metadata.labels ?? {} }), spec: obj.spec }),
      `${label}: the test's encoder and decoder agree`,
    );
    t.same(others(unwrap(out).envelope, 2), others(unwrap(body).envelope, 2), `${label}: envelope byte for byte`);
  }
  // Spot checks of the expected values themselves (the JSON rules are the reference, these keep them honest).
  const ssar = (attributes: Spec) =>
    reviewJsonOf(
      unwrap(
        convert(reviewBody('SelfSubjectAccessReview', { spec: { resourceAttributes: attributes } }), AUTHZ_GROUP, 'selfsubjectaccessreviews', REVIEW_OPTIONS),
      ).raw,
      'SelfSubjectAccessReview',
    ).spec as Spec;
  t.same(
    ssar(attributesCases[0]!).resourceAttributes,
    { namespace: 'abc123-dev', verb: 'get', resource: 'configmaps', name: 'cfg' },
    'namespace prefixed, namespaced name not',
  );
  t.same(ssar(attributesCases[1]!).resourceAttributes, { verb: 'delete', resource: 'namespaces', name: 'abc123-team-a' }, 'a namespace name prefixed');
  t.same(
    ssar(attributesCases[3]!).resourceAttributes,
    { ...attributesCases[3], group: 'abc123-example.com', name: 'abc123-w1' },
    'custom group and cluster-scoped custom name prefixed, selectors kept',
  );
  t.same(ssar(attributesCases[7]!).resourceAttributes, attributesCases[7], 'shared kinds asked about as they are');
  t.same(ssar({}).resourceAttributes, {}, 'empty attributes stay empty');
  const sarObject = REVIEW_CASES.find(([kind]) => kind === 'SubjectAccessReview')![3];
  const sar = reviewJsonOf(
    unwrap(convert(reviewBody('SubjectAccessReview', sarObject), AUTHZ_GROUP, 'subjectaccessreviews', REVIEW_OPTIONS)).raw,
    'SubjectAccessReview',
  ).spec as Spec;
  t.same(
    [sar.user, sar.groups, sar.extra, sar.uid],
    ['abc123-alice', ['abc123:devs', 'system:serviceaccounts:abc123-dev', 'abc123:system:authenticated'], { scopes: ['a', 'b'] }, 'u-1'],
    'user and groups mapped, extra and uid kept',
  );
  const local = reviewJsonOf(
    unwrap(
      convert(
        reviewBody('LocalSubjectAccessReview', { metadata: { namespace: 'dev' }, spec: { resourceAttributes: { namespace: 'dev', resource: 'pods' } } }),
        AUTHZ_GROUP,
        'localsubjectaccessreviews',
      ),
    ).raw,
    'LocalSubjectAccessReview',
  );
  t.same(
    [(local.metadata as Spec).namespace, ((local.spec as Spec).resourceAttributes as Spec).namespace],
    ['abc123-dev', 'abc123-dev'],
    'a local review: both namespaces prefixed alike',
  );
  const rules = reviewJsonOf(
    unwrap(convert(reviewBody('SelfSubjectRulesReview', { spec: { namespace: 'dev' } }), AUTHZ_GROUP, 'selfsubjectrulesreviews')).raw,
    'SelfSubjectRulesReview',
  );
  t.same(rules.spec, { namespace: 'abc123-dev' });
  const whoami = unwrap(
    convert(envelope(`${AUTHN_GROUP}/v1`, 'SelfSubjectReview', msg(ld(1, Buffer.alloc(0)), ld(2, ld(1, ld(1, 'spoofed'))))), AUTHN_GROUP, 'selfsubjectreviews'),
  ).raw;
  t.same(mapOf(at(whoami, 1)).map, {}, 'kubectl auth whoami: no label (reviews are never stored, and the apiserver refuses metadata on them)');
  t.same(all(whoami, 2), [ld(1, ld(1, 'spoofed'))], 'its status copied as it came');
});

t.test('access and token reviews: everything the rules do not map is copied byte for byte', async (t) => {
  const status = msg(vi(1, 1), ld(2, 'because'), ld(3, ''), vi(4, 0));
  const attributes = msg(
    ld(1, 'dev'),
    ld(2, 'get'),
    ld(5, 'configmaps'),
    ld(6, ''),
    ld(7, 'cfg'),
    ld(8, msg(ld(1, 'a=b'), ld(2, ld(1, 'a')))),
    ld(9, ld(1, 'x')),
    ld(15, 'future'),
    vi(16, 3),
  );
  const spec = msg(
    ld(1, attributes),
    ld(2, msg(ld(1, '/x'), ld(2, 'get'))),
    ld(3, 'alice'),
    ld(4, 'g'),
    ld(5, msg(ld(1, 'k'), ld(2, ld(1, 'v')))),
    ld(6, 'uid'),
    ld(12, 'spec-extra'),
  );
  const body = envelope(`${AUTHZ_GROUP}/v1`, 'SubjectAccessReview', msg(ld(1, Buffer.alloc(0)), ld(2, spec), ld(3, status), ld(9, 'object-extra')));
  const raw = unwrap(convert(body, AUTHZ_GROUP, 'subjectaccessreviews')).raw;
  t.same(
    decode(raw).map((f) => f.number),
    [1, 2, 3, 9],
    'fields kept in place',
  );
  t.same(one(raw, 3), status, 'status byte for byte');
  t.same(all(raw, 9), [Buffer.from('object-extra')], 'unknown object field kept');
  const specOut = one(raw, 2);
  t.same(
    decode(specOut).map((f) => f.number),
    [1, 2, 3, 4, 5, 6, 12],
  );
  t.same(others(specOut, 1, 3, 4), others(spec, 1, 3, 4), 'nonResourceAttributes, extra, uid and unknown fields byte for byte');
  t.same([str(specOut, 3), strs(specOut, 4)], ['abc123-alice', ['abc123:g']]);
  const attributesOut = one(specOut, 1);
  t.same(
    attributesOut,
    msg(
      ld(1, 'abc123-dev'),
      ld(2, 'get'),
      ld(5, 'configmaps'),
      ld(6, ''),
      ld(7, 'cfg'),
      ld(8, msg(ld(1, 'a=b'), ld(2, ld(1, 'a')))),
      ld(9, ld(1, 'x')),
      ld(15, 'future'),
      vi(16, 3),
    ),
  );
  // A group absent from the attributes is added by no one; a namespace absent stays absent.
  const bare = one(
    one(unwrap(convert(envelope('', 'SelfSubjectAccessReview', msg(ld(2, ld(1, ld(5, 'pods'))))), AUTHZ_GROUP, 'selfsubjectaccessreviews')).raw, 2),
    1,
  );
  t.same(bare, ld(5, 'pods'));
  const token = msg(ld(1, 'tok'), ld(2, 'aud'), ld(7, 'x'));
  const tokenRaw = unwrap(convert(envelope(`${AUTHN_GROUP}/v1`, 'TokenReview', msg(ld(2, token), ld(3, 'st'))), AUTHN_GROUP, 'tokenreviews')).raw;
  t.same(others(tokenRaw, 1), msg(ld(2, token), ld(3, 'st')), 'a TokenReview: spec and status byte for byte');
  // Unnamed custom resources need no discovery; named ones do (their scope decides the name).
  const custom = (name?: string) =>
    envelope('', 'SelfSubjectAccessReview', msg(ld(2, ld(1, msg(ld(3, 'example.com'), ld(5, 'widgets'), ...(name === undefined ? [] : [ld(7, name)]))))));
  const unnamed = one(one(unwrap(convert(custom(), AUTHZ_GROUP, 'selfsubjectaccessreviews')).raw, 2), 1);
  t.same(unnamed, msg(ld(3, 'abc123-example.com'), ld(5, 'widgets')));
  const noDiscovery = thrown(() => convert(custom('w'), AUTHZ_GROUP, 'selfsubjectaccessreviews'));
  t.equal(noDiscovery.code, 415);
  t.match(noDiscovery.message, /send it as JSON/);
});

t.test('access and token reviews: refusals', async (t) => {
  const bad = (body: Buffer, resource: string, why: string, group = AUTHZ_GROUP) => {
    const error = thrown(() => convert(body, group, resource, REVIEW_OPTIONS));
    t.equal(error.code, 400, why);
    t.equal(error.reason, 'BadRequest', why);
  };
  const ssar = (...spec: Buffer[]) => envelope(`${AUTHZ_GROUP}/v1`, 'SelfSubjectAccessReview', msg(...spec));
  const sar = (...spec: Buffer[]) => envelope(`${AUTHZ_GROUP}/v1`, 'SubjectAccessReview', ld(2, msg(...spec)));
  const ssrr = (...spec: Buffer[]) => envelope(`${AUTHZ_GROUP}/v1`, 'SelfSubjectRulesReview', ld(2, msg(...spec)));
  bad(ssar(ld(2, Buffer.alloc(0)), ld(2, Buffer.alloc(0))), 'selfsubjectaccessreviews', 'spec twice');
  bad(ssar(vi(2, 1)), 'selfsubjectaccessreviews', 'spec as a varint');
  bad(ssar(ld(2, msg(ld(1, ld(5, 'pods')), ld(1, ld(1, 'kube-system'))))), 'selfsubjectaccessreviews', 'resourceAttributes twice');
  bad(ssar(ld(2, vi(1, 1))), 'selfsubjectaccessreviews', 'resourceAttributes as a varint');
  for (const [number, name] of [
    [1, 'namespace'],
    [3, 'group'],
    [5, 'resource'],
    [7, 'name'],
  ] as const) {
    bad(ssar(ld(2, ld(1, msg(ld(number, 'a'), ld(number, 'b'))))), 'selfsubjectaccessreviews', `${name} twice`);
    bad(ssar(ld(2, ld(1, vi(number, 1)))), 'selfsubjectaccessreviews', `${name} as a varint`);
  }
  bad(ssar(ld(2, ld(1, ld(1, Buffer.from([0xff]))))), 'selfsubjectaccessreviews', 'namespace not UTF-8');
  bad(sar(ld(3, 'a'), ld(3, 'b')), 'subjectaccessreviews', 'user twice');
  bad(sar(vi(3, 1)), 'subjectaccessreviews', 'user as a varint');
  bad(sar(vi(4, 1)), 'subjectaccessreviews', 'groups as a varint');
  bad(sar(ld(4, Buffer.from([0xc3]))), 'subjectaccessreviews', 'a group not UTF-8');
  bad(sar(ld(1, ld(7, 'a')), ld(1, ld(7, 'b'))), 'subjectaccessreviews', 'resourceAttributes twice in a SubjectAccessReview');
  bad(ssrr(ld(1, 'a'), ld(1, 'b')), 'selfsubjectrulesreviews', 'rules review namespace twice');
  bad(ssrr(vi(1, 1)), 'selfsubjectrulesreviews', 'rules review namespace as a varint');
  bad(envelope(`${AUTHZ_GROUP}/v1`, 'SelfSubjectRulesReview', msg(ld(2, ld(1, 'a')), ld(2, ld(1, 'b')))), 'selfsubjectrulesreviews', 'rules review spec twice');
  bad(envelope(`${AUTHZ_GROUP}/v1`, 'SelfSubjectAccessReview', msg()), 'subjectaccessreviews', 'a SelfSubjectAccessReview body for subjectaccessreviews');
  bad(envelope(`${AUTHN_GROUP}/v1`, 'SelfSubjectAccessReview', msg()), 'selfsubjectaccessreviews', 'a body of another group');
  for (const [kind, [group, resource]] of Object.entries(REVIEW_RESOURCE)) {
    const version = group === AUTHZ_GROUP || kind === 'TokenReview' ? 'v1beta1' : 'v1alpha1';
    const error = thrown(() => convert(envelope(`${group}/${version}`, kind, msg()), group, resource, REVIEW_OPTIONS));
    t.equal(error.code, 415, `${kind} ${version}: field numbers of other versions are not known`);
    t.doesNotThrow(
      () => convert(envelope('', kind, msg()), group, resource, REVIEW_OPTIONS),
      `${kind}: an envelope without apiVersion is read as the served version`,
    );
  }
  // A tenant whose id upstream reserves cannot name groups: the JSON rule's 403, from protobuf too.
  const ctx = { tenant: 'system', scopeOf: () => undefined, kindScope: () => undefined };
  const jsonError = thrown(() => objectToUpstream({ spec: { groups: ['devs'] } }, ctx, rowOf(AUTHZ_GROUP, 'subjectaccessreviews')));
  const wireError = thrown(() => protobufBodyToUpstream(sar(ld(4, 'devs')), rowOf(AUTHZ_GROUP, 'subjectaccessreviews'), 'system', CREATE));
  t.same([wireError.code, wireError.message], [jsonError.code, jsonError.message]);
  t.equal(jsonError.code, 403);
});

t.test('malformed bodies: 400, never anything else', async (t) => {
  const bad = (body: Buffer, why: string, group = '', resource = 'configmaps') => {
    const error = thrown(() => convert(body, group, resource));
    t.equal(error.code, 400, why);
    t.equal(error.reason, 'BadRequest');
    return error;
  };
  t.match(bad(Buffer.from('{"kind":"ConfigMap"}'), 'JSON').message, /does not start with/);
  bad(MAGIC, 'only the magic');
  bad(Buffer.alloc(0), 'empty');
  bad(msg(MAGIC, Buffer.from([0x12, 0x05, 0x0a])), 'raw longer than the body');
  bad(msg(MAGIC, Buffer.from([0x12])), 'tag without length');
  bad(msg(MAGIC, Buffer.from([0x12, 0xff, 0xff])), 'varint cut off');
  bad(msg(MAGIC, Buffer.from([0x08, ...Array(10).fill(0xff), 0x01])), 'varint longer than 10 bytes');
  bad(envelope('v1', 'ConfigMap', vi(1, 5)), 'metadata as a varint');
  bad(envelope('v1', 'ConfigMap', msg(ld(1, ld(3, 'a')), ld(1, ld(3, 'b')))), 'metadata twice (the apiserver would merge them)');
  bad(envelope('v1', 'ConfigMap', ld(1, msg(ld(3, 'a'), ld(3, 'kube-system')))), 'namespace twice (the apiserver would take the last)');
  bad(envelope('v1', 'ConfigMap', ld(1, vi(3, 7))), 'namespace as a varint');
  bad(envelope('v1', 'ConfigMap', ld(1, ld(11, msg(vi(1, 3), ld(2, 'v'))))), 'a label key as a varint');
  bad(envelope('v1', 'ConfigMap', ld(1, ld(11, msg(ld(1, TENANT_LABEL), ld(1, 'other'), ld(2, 'v'))))), 'a label entry with two keys');
  bad(envelope('v1', 'ConfigMap', ld(1, Buffer.from([0x1b, 0x1c]))), 'a group');
  // Field 2^32 + 3: an int32 field number would read it as field 3 (namespace).
  bad(envelope('v1', 'ConfigMap', ld(1, msg(varint((2 ** 32 + 3) * 8 + 2), varint(1), Buffer.from('x')))), 'field number out of range');
  bad(envelope('v1', 'ConfigMap', ld(1, ld(3, Buffer.from([0x66, 0xff, 0x6f])))), 'namespace not UTF-8');
  bad(msg(MAGIC, ld(1, vi(1, 1))), 'typeMeta apiVersion as a varint');
  bad(envelope('apps/v1', 'Deployment', msg(ld(2, ld(3, ld(1, 'a'))), ld(2, ld(3, ld(1, 'b'))))), 'spec twice', 'apps', 'deployments');
  // Non-minimal varints are valid protobuf (the apiserver reads them): a length of 3 in two bytes.
  const padded = envelope('v1', 'ConfigMap', ld(1, msg(Buffer.from([0x1a, 0x83, 0x00]), Buffer.from('dev'))));
  t.equal(str(at(unwrap(convert(padded, '', 'configmaps')).raw, 1), 3), 'abc123-dev', 'non-minimal varints accepted');
});

t.test('fuzz: truncations, bit flips and splices of valid bodies', async (t) => {
  const random = seededRandom(12345);
  /** What the apiserver reads of a body as JSON, and the JSON rule's output for it, for kinds compared with the JSON rule. */
  interface Compared {
    readonly read: (raw: Buffer) => Spec;
    readonly want: (input: Spec) => Spec;
  }
  const targets: [Buffer, string, string, Compared?][] = [
    [CONFIGMAP, '', 'configmaps'],
    [DEPLOYMENT, 'apps', 'deployments'],
    [NAMESPACE, '', 'namespaces'],
    ...RBAC_CASES.map(([kind, resource, rule, obj]): [Buffer, string, string, Compared] => [
      rbacBody(kind, rule, obj),
      RBAC_GROUP,
      resource,
      { read: (raw) => rbacJsonOf(raw, rule), want: (input) => jsonRuleOf(input, resource, rule) },
    ]),
    ...REVIEW_CASES.map(([kind, group, resource, obj]): [Buffer, string, string, Compared] => [
      reviewBody(kind, obj),
      group,
      resource,
      { read: (raw) => reviewJsonOf(raw, kind), want: (input) => reviewRuleOf(input, kind) },
    ]),
  ];
  let reviewsCompared = 0;
  const outcomes: Record<string, number> = {};
  let unexpected = 0;
  let compared = 0;
  for (let i = 0; i < 2000 * targets.length; i++) {
    const [valid, group, resource, compare] = targets[i % targets.length]!;
    const body = mutate(valid, random);
    try {
      const out = convert(body, group, resource, RBAC_OPTIONS);
      // Reviews are never stored: no tenant label, and their metadata passes as sent (the apiserver refuses any).
      if (carriesTenantLabel(rowOf(group, resource))) {
        const meta = at(unwrap(out).raw, 1);
        const { map, tenantEntries } = mapOf(meta);
        if (map[TENANT_LABEL] !== TENANT || tenantEntries !== 1) unexpected++;
        const namespaced = rowOf(group, resource).scope === 'Namespaced';
        const name = namespaced ? str(meta, 3) : str(meta, 1);
        if (name !== undefined && name !== '' && !name.startsWith('abc123-')) unexpected++;
      }
      outcomes.converted = (outcomes.converted ?? 0) + 1;
      if (compare !== undefined) {
        // What the apiserver reads of the converted body is what the JSON rule makes of what it reads of the original.
        let input: Spec;
        try {
          input = compare.read(unwrap(body).raw);
        } catch {
          continue; // metadata absent: nothing for the JSON rule to start from
        }
        if (group === RBAC_GROUP) compared++;
        else reviewsCompared++;
        const got = compare.read(unwrap(out).raw);
        const want = compare.want(input);
        if (!isDeepStrictEqual(got, want) && !t.same(got, want, `the JSON rule's output for ${body.toString('hex')}`)) return;
      }
    } catch (error) {
      if (!(error instanceof StatusError) || ![400, 415, 422].includes(error.code)) {
        t.fail(`unexpected ${String(error)} for ${body.toString('hex')}`);
        return;
      }
      outcomes[error.code] = (outcomes[error.code] ?? 0) + 1;
    }
  }
  t.equal(unexpected, 0, 'every converted body carries the tenant label once and a prefixed namespace (or name)');
  t.ok(compared > 500, `${compared} converted roles and bindings give the JSON rule's output`);
  t.ok(reviewsCompared > 500, `${reviewsCompared} converted reviews give the JSON rule's output`);
  t.ok((outcomes.converted ?? 0) > 100 && (outcomes['400'] ?? 0) > 1000, `both outcomes seen: ${JSON.stringify(outcomes)}`);
});

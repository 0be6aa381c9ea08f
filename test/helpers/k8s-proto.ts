// Kubernetes protobuf read from the source of truth: the generated.proto files of k8s.io/api, apimachinery and
// apiextensions-apiserver at the rig's version, parsed into a schema that encodes JSON objects and decodes them back.
// Never guesses a field: a JSON key without a .proto field throws, so a test cannot pass on a made-up field number.
import type { Test } from 'tap';
import { goModuleCache, K8S_MODULE_VERSION, loadProtoMessages as loadProtoFiles, type ProtoField, type ProtoMessages } from '../../lib/rig/k8s-proto-files.ts';
import { type WireSchema } from '../../lib/convert/protobuf/skeleton.ts';

export { goModuleCache, K8S_MODULE_VERSION, type ProtoField, type ProtoMessages };

/** The .proto files of the messages tenantgate converts, relative to the Go module cache. */
const PROTO_FILES = [
  `k8s.io/apimachinery@${K8S_MODULE_VERSION}/pkg/apis/meta/v1/generated.proto`,
  `k8s.io/apimachinery@${K8S_MODULE_VERSION}/pkg/runtime/generated.proto`,
  `k8s.io/apimachinery@${K8S_MODULE_VERSION}/pkg/api/resource/generated.proto`,
  `k8s.io/apimachinery@${K8S_MODULE_VERSION}/pkg/util/intstr/generated.proto`,
  ...[
    'core/v1',
    'apps/v1',
    'batch/v1',
    'rbac/v1',
    'networking/v1',
    'discovery/v1',
    'events/v1',
    'admissionregistration/v1',
    'resource/v1',
    'flowcontrol/v1',
    'certificates/v1',
    'policy/v1',
    'coordination/v1',
    'autoscaling/v2',
    'storage/v1',
  ].map((path) => `k8s.io/api@${K8S_MODULE_VERSION}/${path}/generated.proto`),
  `k8s.io/apiextensions-apiserver@${K8S_MODULE_VERSION}/pkg/apis/apiextensions/v1/generated.proto`,
];

/** Parses the messages of the .proto files tenantgate converts (lib/rig/k8s-proto-files.ts reads them). */
export function loadProtoMessages(moduleCache: string): ProtoMessages {
  return loadProtoFiles(moduleCache, PROTO_FILES);
}

// ---- JSON ⇄ protobuf, as the apiserver's serializer sees them ----

/** Members whose message Go's JSON inlines into the parent (`json:",inline"`). */
const INLINED: ReadonlyMap<string, string> = new Map([
  ['k8s.io.api.core.v1.PersistentVolumeSpec', 'persistentVolumeSource'],
  ['k8s.io.api.core.v1.Volume', 'volumeSource'],
  ['k8s.io.api.admissionregistration.v1.RuleWithOperations', 'rule'],
  ['k8s.io.api.admissionregistration.v1.NamedRuleWithOperations', 'ruleWithOperations'],
  // References to a ConfigMap or Secret by name (a pod's volumes and environment).
  ['k8s.io.api.core.v1.Probe', 'handler'],
  ['k8s.io.api.core.v1.EphemeralContainer', 'ephemeralContainerCommon'],
  ['k8s.io.api.networking.v1.IngressRule', 'ingressRuleValue'],
  ...[
    'ConfigMapVolumeSource',
    'ConfigMapKeySelector',
    'SecretKeySelector',
    'ConfigMapProjection',
    'SecretProjection',
    'ConfigMapEnvSource',
    'SecretEnvSource',
  ].map((message) => [`k8s.io.api.core.v1.${message}`, 'localObjectReference'] as const),
]);
/** Types whose JSON is a string or a free value rather than an object. */
const TIME = 'k8s.io.apimachinery.pkg.apis.meta.v1.Time';
const MICRO_TIME = 'k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime';
const QUANTITY = 'k8s.io.apimachinery.pkg.api.resource.Quantity';
const INT_OR_STRING = 'k8s.io.apimachinery.pkg.util.intstr.IntOrString';
const RAW_EXTENSION = 'k8s.io.apimachinery.pkg.runtime.RawExtension';
/** (FieldsV1 is its field set's JSON in field 1, as RawExtension.) */
const FREE_JSON = new Set([RAW_EXTENSION, 'k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON', 'k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1']);
const JSON_SCHEMA_PROPS = 'k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps';

/** A JSON key of JSONSchemaProps to its .proto field (`x-kubernetes-preserve-unknown-fields`, `$ref`). */
function protoName(fields: ReadonlyMap<string, ProtoField>, message: string, key: string): string {
  // ValidatingWebhookConfiguration's `webhooks` is `Webhooks` in its .proto.
  if (!fields.has(key) && fields.has(key[0]!.toUpperCase() + key.slice(1))) return key[0]!.toUpperCase() + key.slice(1);
  // IngressClassParametersReference's `apiGroup` is `aPIGroup` in its .proto.
  if (key === 'apiGroup' && !fields.has(key) && fields.has('aPIGroup')) return 'aPIGroup';
  if (message !== JSON_SCHEMA_PROPS) return key;
  if (key.startsWith('$')) return key.slice(1);
  return key.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
}
function jsonName(message: string, name: string): string {
  if (name === 'aPIGroup') return 'apiGroup';
  // (DaemonEndpoint's `Port` is `Port` in Go's JSON too.)
  if (/^[A-Z]/.test(name) && name !== 'Port') return name[0]!.toLowerCase() + name.slice(1);
  if (message !== JSON_SCHEMA_PROPS) return name;
  if (name === 'ref' || name === 'schema') return '$' + name;
  return name.startsWith('xKubernetes') ? name.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase()) : name;
}

function varint(value: number | bigint): Buffer {
  let v = BigInt.asUintN(64, BigInt(value));
  const out: number[] = [];
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return Buffer.from(out);
}
const tag = (number: number, wireType: number) => varint(number * 8 + wireType);
const lengthDelimited = (number: number, payload: Buffer) => Buffer.concat([tag(number, 2), varint(payload.length), payload]);

type Json = Record<string, unknown>;

/** A JSON object of message `type` as Kubernetes protobuf (fields in number order, absent ones not written). */
export function encodeMessage(messages: ProtoMessages, type: string, json: Json): Buffer {
  const fields = messages.get(type);
  if (fields === undefined) throw new Error(`no message ${type} in the .proto files`);
  const inline = INLINED.get(type);
  const parts: { number: number; bytes: Buffer }[] = [];
  const inlineJson: Json = {};
  for (const [key, value] of Object.entries(json)) {
    if (value === undefined) continue;
    const field = fields.get(protoName(fields, type, key));
    if (field === undefined) {
      if (inline === undefined) throw new Error(`${type} has no field ${key}`);
      inlineJson[key] = value;
      continue;
    }
    parts.push({ number: field.number, bytes: encodeField(messages, field, value) });
  }
  if (inline !== undefined && Object.keys(inlineJson).length > 0) {
    const field = fields.get(inline)!;
    parts.push({ number: field.number, bytes: lengthDelimited(field.number, encodeMessage(messages, field.type, inlineJson)) });
  }
  return Buffer.concat(parts.sort((a, b) => a.number - b.number).map((part) => part.bytes));
}

function encodeField(messages: ProtoMessages, field: ProtoField, value: unknown): Buffer {
  if (field.mapValue !== undefined) {
    return Buffer.concat(
      Object.entries(value as Json).map(([k, v]) =>
        lengthDelimited(
          field.number,
          Buffer.concat([lengthDelimited(1, Buffer.from(k)), encodeField(messages, { name: 'value', number: 2, type: field.mapValue!, repeated: false }, v)]),
        ),
      ),
    );
  }
  if (field.repeated) {
    if (!Array.isArray(value)) throw new Error(`${field.name} must be an array`);
    return Buffer.concat(value.map((item) => encodeField(messages, { ...field, repeated: false }, item)));
  }
  switch (field.type) {
    case 'string':
      return lengthDelimited(field.number, Buffer.from(value as string));
    case 'bytes':
      return lengthDelimited(field.number, Buffer.from(value as string, 'base64'));
    case 'bool':
      return Buffer.concat([tag(field.number, 0), varint(value ? 1 : 0)]);
    case 'int32':
    case 'int64':
      return Buffer.concat([tag(field.number, 0), varint(value as number)]);
    case 'double': {
      const bytes = Buffer.alloc(8);
      bytes.writeDoubleLE(value as number);
      return Buffer.concat([tag(field.number, 1), bytes]);
    }
  }
  if (field.type === TIME || field.type === MICRO_TIME) {
    const text = value as string;
    const seconds = Math.floor(Date.parse(text) / 1000);
    const micros = Number((/\.(\d{6})Z$/.exec(text) ?? ['', '0'])[1]);
    const nanos = micros === 0 ? Buffer.alloc(0) : Buffer.concat([tag(2, 0), varint(micros * 1000)]);
    return lengthDelimited(field.number, Buffer.concat([tag(1, 0), varint(seconds), nanos]));
  }
  if (field.type === QUANTITY) return lengthDelimited(field.number, lengthDelimited(1, Buffer.from(String(value))));
  if (field.type === INT_OR_STRING) {
    const payload =
      typeof value === 'number'
        ? Buffer.concat([tag(1, 0), varint(0), tag(2, 0), varint(value)])
        : Buffer.concat([tag(1, 0), varint(1), lengthDelimited(3, Buffer.from(value as string))]);
    return lengthDelimited(field.number, payload);
  }
  if (FREE_JSON.has(field.type)) return lengthDelimited(field.number, lengthDelimited(1, Buffer.from(JSON.stringify(value))));
  return lengthDelimited(field.number, encodeMessage(messages, field.type, value as Json));
}

interface WireField {
  readonly number: number;
  readonly wireType: number;
  readonly value: Buffer | bigint;
}

function readVarint(bytes: Buffer, at: { pos: number }): bigint {
  let value = 0n;
  for (let shift = 0n; ; shift += 7n) {
    const byte = bytes[at.pos++];
    if (byte === undefined) throw new Error('k8s-proto: varint cut off');
    value |= BigInt(byte & 0x7f) << shift;
    if (byte < 0x80) return value;
  }
}

function wireFields(bytes: Buffer): WireField[] {
  const out: WireField[] = [];
  const at = { pos: 0 };
  while (at.pos < bytes.length) {
    const key = Number(readVarint(bytes, at));
    const wireType = key % 8;
    const number = Math.floor(key / 8);
    if (wireType === 0) out.push({ number, wireType, value: readVarint(bytes, at) });
    else if (wireType === 2) {
      const length = Number(readVarint(bytes, at));
      if (at.pos + length > bytes.length) throw new Error('k8s-proto: length past the end');
      out.push({ number, wireType, value: bytes.subarray(at.pos, (at.pos += length)) });
    } else if (wireType === 1 || wireType === 5) {
      out.push({ number, wireType, value: bytes.subarray(at.pos, (at.pos += wireType === 1 ? 8 : 4)) });
    } else throw new Error(`k8s-proto: wire type ${wireType}`);
  }
  return out;
}

/**
 * A protobuf message of `type` as JSON, read the way Go's generated Unmarshal reads it: a later singular field wins,
 * a later map entry wins. Unknown field numbers throw (the apiserver would drop them; a test wants to know).
 */
export function decodeMessage(messages: ProtoMessages, type: string, bytes: Buffer): Json {
  const fields = messages.get(type);
  if (fields === undefined) throw new Error(`no message ${type} in the .proto files`);
  const byNumber = new Map([...fields.values()].map((field) => [field.number, field]));
  const json: Json = {};
  const inline = INLINED.get(type);
  for (const wire of wireFields(bytes)) {
    const field = byNumber.get(wire.number);
    if (field === undefined) throw new Error(`${type} has no field number ${wire.number}`);
    const name = jsonName(type, field.name);
    if (field.mapValue !== undefined) {
      const entry = wireFields(wire.value as Buffer);
      const key = (entry.filter((f) => f.number === 1).at(-1)?.value as Buffer | undefined)?.toString() ?? '';
      const value = entry.filter((f) => f.number === 2).at(-1);
      const map = (json[name] ??= {}) as Json;
      map[key] = value === undefined ? '' : decodeValue(messages, { ...field, type: field.mapValue, repeated: false }, value);
      continue;
    }
    const value = decodeValue(messages, field, wire);
    if (field.name === inline) Object.assign(json, value as Json);
    else if (field.repeated) ((json[name] ??= []) as unknown[]).push(value);
    else json[name] = value;
  }
  return json;
}

function decodeValue(messages: ProtoMessages, field: ProtoField, wire: WireField): unknown {
  const payload = wire.value as Buffer;
  switch (field.type) {
    case 'string':
      return payload.toString('utf8');
    case 'bytes':
      return payload.toString('base64');
    case 'bool':
      return wire.value !== 0n;
    case 'int32':
      return Number(BigInt.asIntN(32, wire.value as bigint));
    case 'int64':
      return Number(BigInt.asIntN(64, wire.value as bigint));
    case 'double':
      return payload.readDoubleLE();
  }
  if (field.type === TIME || field.type === MICRO_TIME) {
    const parts = wireFields(payload);
    const seconds = Number((parts.find((f) => f.number === 1)?.value as bigint | undefined) ?? 0n);
    const nanos = Number((parts.find((f) => f.number === 2)?.value as bigint | undefined) ?? 0n);
    const text = new Date(seconds * 1000).toISOString();
    return field.type === TIME ? text.replace('.000Z', 'Z') : text.replace('.000Z', `.${String(nanos / 1000).padStart(6, '0')}Z`);
  }
  if (field.type === QUANTITY) return (wireFields(payload).find((f) => f.number === 1)?.value as Buffer | undefined)?.toString() ?? '';
  if (field.type === INT_OR_STRING) {
    const parts = wireFields(payload);
    const kind = parts.find((f) => f.number === 1)?.value ?? 0n;
    return kind === 0n
      ? Number(parts.find((f) => f.number === 2)?.value ?? 0n)
      : ((parts.find((f) => f.number === 3)?.value as Buffer | undefined)?.toString() ?? '');
  }
  if (FREE_JSON.has(field.type)) return JSON.parse((wireFields(payload).find((f) => f.number === 1)?.value as Buffer | undefined)?.toString() ?? 'null');
  return decodeMessage(messages, field.type, payload);
}

const MAGIC = Buffer.from('k8s\0', 'latin1');

/** A whole protobuf request body (`k8s\0` + runtime.Unknown) of a JSON object of message `type`. */
export function encodeBody(messages: ProtoMessages, type: string, object: Json): Buffer {
  const { apiVersion, kind, ...rest } = object;
  const typeMeta = Buffer.concat([lengthDelimited(1, Buffer.from(String(apiVersion ?? ''))), lengthDelimited(2, Buffer.from(String(kind ?? '')))]);
  return Buffer.concat([MAGIC, lengthDelimited(1, typeMeta), lengthDelimited(2, encodeMessage(messages, type, rest))]);
}

/** The object of a protobuf request body as JSON (apiVersion and kind from its envelope). */
export function decodeBody(messages: ProtoMessages, type: string, body: Buffer): Json {
  if (!body.subarray(0, 4).equals(MAGIC)) throw new Error('k8s-proto: no k8s\\0 magic');
  const envelope = wireFields(body.subarray(4));
  const typeMeta = wireFields((envelope.find((f) => f.number === 1)?.value as Buffer | undefined) ?? Buffer.alloc(0));
  const text = (number: number) => (typeMeta.find((f) => f.number === number)?.value as Buffer | undefined)?.toString() ?? '';
  const raw = (envelope.filter((f) => f.number === 2).at(-1)?.value as Buffer | undefined) ?? Buffer.alloc(0);
  return { apiVersion: text(1), kind: text(2), ...decodeMessage(messages, type, raw) };
}

/** A message's fields in wire order (number, wire type, payload or varint value): for tests that look at the wire itself. */
export function protoFields(bytes: Buffer): readonly { readonly number: number; readonly wireType: number; readonly value: Buffer | bigint }[] {
  return wireFields(bytes);
}

/** An empty Timestamp as decodeMessage reads it; Go reads it as the zero time (`null` in JSON, as an absent field). */
const ZERO_TIMES = new Set(['1970-01-01T00:00:00Z', '1970-01-01T00:00:00.000000Z']);

/**
 * A decoded object as Go reads it back: a zero value ('', 0, false, an empty list, the zero time) is the same as an
 * absent field (Go's protobuf writes some zero values, tenantgate's encoder and JSON leave them out): both left out.
 */
export function withoutZeroValues(value: unknown): unknown {
  if (Array.isArray(value)) return value.length === 0 ? undefined : value.map(withoutZeroValues);
  if (value === null || typeof value !== 'object')
    return value === '' || value === 0 || value === false || (typeof value === 'string' && ZERO_TIMES.has(value)) ? undefined : value;
  const out: Json = {};
  for (const [key, member] of Object.entries(value)) {
    const kept = withoutZeroValues(member);
    if (kept !== undefined) out[key] = kept;
  }
  return out;
}

/** A length-delimited field of `number` holding `payload`, as Kubernetes writes it. */
export function protoField(number: number, payload: Buffer): Buffer {
  return lengthDelimited(number, payload);
}

/**
 * A protobuf watch stream's events (frames of a 4-byte big-endian length and a meta/v1 WatchEvent: type = 1,
 * object = 2, a RawExtension whose raw = 1 is a whole body), each object decoded as message `type`; a frame cut off
 * at the end is left out (the stream may still be open).
 */
export function decodeWatchFrames(messages: ProtoMessages, type: string, stream: Buffer): { type: string; object: Json }[] {
  const events: { type: string; object: Json }[] = [];
  for (let at = 0; at + 4 <= stream.length;) {
    const length = stream.readUInt32BE(at);
    if (at + 4 + length > stream.length) break;
    const fields = wireFields(stream.subarray(at + 4, at + 4 + length));
    at += 4 + length;
    const eventType = (fields.find((f) => f.number === 1)?.value as Buffer | undefined)?.toString() ?? '';
    const extension = fields.find((f) => f.number === 2)?.value as Buffer | undefined;
    const raw = extension === undefined ? undefined : (wireFields(extension).find((f) => f.number === 1)?.value as Buffer | undefined);
    if (raw === undefined) throw new Error('k8s-proto: a watch event without an object');
    events.push({ type: eventType, object: decodeBody(messages, eventType === 'ERROR' ? 'k8s.io.apimachinery.pkg.apis.meta.v1.Status' : type, raw) });
  }
  return events;
}

/** Go's JSON inlines these members into their parent: a schema names them but reads their fields there. */
export const INLINE_MEMBERS: ReadonlySet<string> = new Set(['persistentVolumeSource', 'rule', 'ruleWithOperations']);

/**
 * Asserts that every field of a wire schema (lib/convert/protobuf/to-upstream.ts) is the field of that name in `message` of the
 * .proto files: its number, whether it repeats, its type, nested schemas in turn. Returns the fields checked.
 */
export function checkWireSchema(t: Test, messages: ProtoMessages, schema: WireSchema, message: string, path: string): number {
  const fields = messages.get(message);
  if (fields === undefined) throw new Error(`no message ${message}`);
  let checked = 0;
  for (const [name, field] of Object.entries(schema)) {
    const proto: ProtoField | undefined = fields.get(name) ?? fields.get(name[0]!.toUpperCase() + name.slice(1));
    t.ok(proto, `${path}.${name} is a field of ${message}`);
    if (proto === undefined) continue;
    t.equal(field.number, proto.number, `${path}.${name} = ${proto.number}`);
    checked++;
    const repeated = field.type === 'strings' || field.type === 'messages' || field.type === 'map' || field.type === 'keyed';
    t.equal(repeated, proto.repeated, `${path}.${name}: repeated as in the .proto`);
    if (field.type === 'string' || field.type === 'strings') t.equal(proto.type, 'string', `${path}.${name} is a string`);
    if (field.type === 'bytes') t.equal(proto.type, 'bytes', `${path}.${name} is bytes`);
    if (field.type === 'map') t.equal(proto.mapValue, 'string', `${path}.${name} is a map<string, string>`);
    if (field.type === 'keyed') t.match(proto.mapValue, /^k8s\./, `${path}.${name} is a map<string, message>`);
    if (field.type === 'message' || field.type === 'messages') {
      t.equal(field.type === 'message' && field.inline === true, INLINE_MEMBERS.has(name), `${path}.${name}: inline exactly where Go's JSON inlines`);
      checked += checkWireSchema(t, messages, field.schema, proto.type, `${path}.${name}`);
    }
  }
  return checked;
}

// Writes the Kubernetes protobuf encoding of a JSON object of a built-in kind, field by field from the message schema
// generated from k8s.io/api's .proto files (k8s-proto-schema.ts). Never guesses a field: a JSON key the schema lacks throws.
import { K8S_PROTO_SCHEMA } from './k8s-proto-schema.ts';
import { MAGIC } from './wire.ts';
import { ProtobufWriter } from './writer.ts';

const META_V1 = 'k8s.io.apimachinery.pkg.apis.meta.v1';
const TIME = `${META_V1}.Time`;
const MICRO_TIME = `${META_V1}.MicroTime`;
const DURATION = `${META_V1}.Duration`;
const FIELDS_V1 = `${META_V1}.FieldsV1`;
const VERBS = `${META_V1}.Verbs`;
const QUANTITY = 'k8s.io.apimachinery.pkg.api.resource.Quantity';
const INT_OR_STRING = 'k8s.io.apimachinery.pkg.util.intstr.IntOrString';
const RAW_EXTENSION = 'k8s.io.apimachinery.pkg.runtime.RawExtension';

type Json = Readonly<Record<string, unknown>>;

/** A message's field as the encoder walks it (built once per message from the schema). */
interface CompiledField {
  readonly json: string;
  readonly number: number;
  readonly type: string;
  readonly shape: 'single' | 'repeated' | 'map' | 'inline';
  /** A map's entry value: field 2 of the entry. */
  readonly entryValue?: CompiledField;
}

interface CompiledMessage {
  readonly fields: readonly CompiledField[];
  /** Every JSON key the message reads, its inlined members' included. */
  readonly keys: ReadonlySet<string>;
}

const compiled = new Map<string, CompiledMessage>();

function compiledOf(message: string): CompiledMessage {
  let entry = compiled.get(message);
  if (entry !== undefined) return entry;
  const schema = K8S_PROTO_SCHEMA.messages[message];
  if (schema === undefined) throw new Error(`protobuf-encode: no message ${message} in the schema`);
  const fields = schema.map(([json, number, type, shape]): CompiledField => {
    if (shape !== 'map') return { json, number, type, shape: shape ?? 'single' };
    return { json, number, type, shape, entryValue: { json, number: 2, type, shape: 'single' } };
  });
  const keys = new Set<string>();
  for (const field of fields) {
    if (field.shape === 'inline') for (const key of compiledOf(field.type).keys) keys.add(key);
    else keys.add(field.json);
  }
  entry = { fields, keys };
  compiled.set(message, entry);
  return entry;
}

/** Keys Go's JSON gives every object of a kind (TypeMeta); its message has no field for them. */
const TYPE_META_KEYS = ['apiVersion', 'kind'];

/** Writes `json`'s fields of `message` (its keys are checked first: none the message lacks). */
function writeMessage(out: ProtobufWriter, message: string, json: Json): void {
  const { keys } = compiledOf(message);
  for (const key in json) {
    if (!keys.has(key) && json[key] !== undefined && !TYPE_META_KEYS.includes(key))
      throw new Error(`protobuf-encode: ${message} has no field ${JSON.stringify(key)}`);
  }
  writeFields(out, message, json);
}

function writeFields(out: ProtobufWriter, message: string, json: Json): void {
  for (const field of compiledOf(message).fields) {
    if (field.shape === 'inline') {
      // Go's JSON inlines this member: its fields are the parent's keys.
      const mark = out.length;
      const start = out.begin(field.number);
      writeFields(out, field.type, json);
      if (out.isEmptySince(start)) out.truncate(mark);
      else out.end(start);
      continue;
    }
    const value = json[field.json];
    if (value === null || value === undefined) continue;
    if (field.shape === 'repeated') {
      if (!Array.isArray(value)) throw new Error(`protobuf-encode: ${message}.${field.json} is not an array`);
      for (const item of value) if (item !== null) writeValue(out, field, item, message);
    } else if (field.shape === 'map') {
      if (typeof value !== 'object' || Array.isArray(value)) throw new Error(`protobuf-encode: ${message}.${field.json} is not a map`);
      for (const key in value) {
        const item = (value as Json)[key];
        const entry = out.begin(field.number);
        out.string(1, key);
        if (item !== null && item !== undefined) writeValue(out, field.entryValue!, item, message);
        out.end(entry);
      }
    } else writeValue(out, field, value, message);
  }
}

function writeValue(out: ProtobufWriter, field: CompiledField, value: unknown, message: string): void {
  switch (field.type) {
    case 'string':
      return out.string(field.number, expect(value, 'string', message, field));
    case 'bytes':
      return out.bytesField(field.number, Buffer.from(expect(value, 'string', message, field), 'base64'));
    case 'bool':
      return out.bool(field.number, expect(value, 'boolean', message, field));
    case 'int32':
    case 'int64': {
      const number = expect(value, 'number', message, field);
      if (!Number.isInteger(number)) throw new Error(`protobuf-encode: ${message}.${field.json} is not an integer`);
      return out.int(field.number, number);
    }
    case 'double':
      return out.double(field.number, expect(value, 'number', message, field));
  }
  if (!field.type.includes('.')) throw new Error(`protobuf-encode: ${message}.${field.json}: the encoder writes no ${field.type}`);
  const start = out.begin(field.number);
  switch (field.type) {
    case TIME:
    case MICRO_TIME:
      writeTimestamp(out, expect(value, 'string', message, field));
      break;
    case DURATION: {
      const nanos = goDurationNanos(expect(value, 'string', message, field));
      if (nanos !== 0) out.int(1, nanos);
      break;
    }
    case QUANTITY:
      out.string(1, typeof value === 'number' ? String(value) : expect(value, 'string', message, field));
      break;
    case INT_OR_STRING:
      if (typeof value === 'number') {
        out.int(1, 0);
        out.int(2, value);
      } else {
        out.int(1, 1);
        out.string(3, expect(value, 'string', message, field));
      }
      break;
    case VERBS:
      if (!Array.isArray(value)) throw new Error(`protobuf-encode: ${message}.${field.json} is not an array`);
      for (const verb of value) out.string(1, expect(verb, 'string', message, field));
      break;
    case RAW_EXTENSION:
    case FIELDS_V1:
      // Both carry JSON as bytes: the object or field set as the apiserver's JSON has it.
      out.string(1, JSON.stringify(value));
      break;
    default: {
      if (typeof value !== 'object' || Array.isArray(value)) throw new Error(`protobuf-encode: ${message}.${field.json} is not an object`);
      writeMessage(out, field.type, value as Json);
    }
  }
  out.end(start);
}

function expect<T extends 'string' | 'number' | 'boolean'>(
  value: unknown,
  type: T,
  message: string,
  field: CompiledField,
): T extends 'string' ? string : T extends 'number' ? number : boolean {
  if (typeof value !== type) throw new Error(`protobuf-encode: ${message}.${field.json} is not a ${type}`);
  return value as never;
}

/** RFC 3339 (`2026-01-02T03:04:05Z`, `…05.123456Z`) as google.protobuf.Timestamp's seconds and nanos. */
function writeTimestamp(out: ProtobufWriter, text: string): void {
  const millis = Date.parse(text);
  if (Number.isNaN(millis)) throw new Error(`protobuf-encode: ${JSON.stringify(text)} is not an RFC 3339 time`);
  const seconds = Math.floor(millis / 1000);
  const fraction = /\.(\d{1,9})/.exec(text);
  const nanos = fraction === null ? 0 : Number(fraction[1]!.padEnd(9, '0'));
  if (seconds !== 0) out.int(1, seconds);
  if (nanos !== 0) out.int(2, nanos);
}

const DURATION_UNITS: Readonly<Record<string, number>> = { ns: 1, us: 1e3, µs: 1e3, μs: 1e3, ms: 1e6, s: 1e9, m: 60e9, h: 3600e9 };

/** A Go duration string (`1h2m3.5s`, `300ms`, `-1s`, `0s`) in nanoseconds. */
export function goDurationNanos(text: string): number {
  const match = /^([-+]?)((?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+$/.exec(text);
  if (match === null && text !== '0') throw new Error(`protobuf-encode: ${JSON.stringify(text)} is not a Go duration`);
  let nanos = 0;
  for (const part of text.matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/g)) nanos += Number(part[1]) * DURATION_UNITS[part[2]!]!;
  return Math.round(text.startsWith('-') ? -nanos : nanos);
}

/** One writer reused by every call (the encoder is synchronous); the bytes are copied out at the end. */
let shared = new ProtobufWriter(64 * 1024);

function written(out: ProtobufWriter): Buffer {
  // Its own memory, not a slice of Node's shared pool: a cache keeps these long, and a slice would pin the pool's 8 KiB.
  const bytes = Buffer.allocUnsafeSlow(out.length);
  out.bytes().copy(bytes);
  // A huge object once must not keep its buffer for good.
  if (out.length > 1024 * 1024) shared = new ProtobufWriter(64 * 1024);
  else out.truncate(0);
  return bytes;
}

function writer(): ProtobufWriter {
  shared.truncate(0);
  return shared;
}

// ---- the API ----

/** The protobuf message of `kind` in `apiVersion`, or undefined when the apiserver would not answer it in protobuf here. */
export function protobufMessageOf(apiVersion: string, kind: string): string | undefined {
  const pkg = K8S_PROTO_SCHEMA.groupVersions[apiVersion];
  if (pkg !== undefined && K8S_PROTO_SCHEMA.messages[`${pkg}.${kind}`] !== undefined) return `${pkg}.${kind}`;
  // Status and the other meta kinds are served under every group's version (`v1` for core).
  if (pkg !== undefined && K8S_PROTO_SCHEMA.messages[`${META_V1}.${kind}`] !== undefined) return `${META_V1}.${kind}`;
  return undefined;
}

/** The number of the field `json` (its JSON name) of `message`; throws when it has none. */
export function fieldNumberOf(message: string, json: string): number {
  const field = compiledOf(message).fields.find((candidate) => candidate.json === json && candidate.shape !== 'inline');
  if (field === undefined) throw new Error(`protobuf-encode: ${message} has no field ${JSON.stringify(json)}`);
  return field.number;
}

/** `json`, an object of message `message` (full name, e.g. `k8s.io.api.core.v1.Pod`), as that message's bytes. */
export function encodeMessage(message: string, json: Json): Buffer {
  const out = writer();
  writeMessage(out, message, json);
  return written(out);
}

/** An object as the apiserver's protobuf body: `k8s\0` + runtime.Unknown{typeMeta{apiVersion, kind}, raw}. */
export function encodeObject(apiVersion: string, kind: string, json: Json): Buffer {
  const message = protobufMessageOf(apiVersion, kind);
  if (message === undefined) throw new Error(`protobuf-encode: ${apiVersion} ${kind} has no protobuf message`);
  const out = writer();
  out.raw(MAGIC);
  const typeMeta = out.begin(1);
  out.string(1, apiVersion);
  out.string(2, kind);
  out.end(typeMeta);
  const raw = out.begin(2);
  writeMessage(out, message, json);
  out.end(raw);
  return written(out);
}

const FRAME_HEAD = new Uint8Array(4);

/**
 * One frame of a protobuf watch stream (`application/vnd.kubernetes.protobuf;stream=watch`): a 4-byte big-endian
 * length, then meta/v1 WatchEvent{type, object: RawExtension{raw: the object's whole body, as encodeObject writes it}}.
 */
export function encodeWatchFrame(type: string, objectBody: Uint8Array): Buffer {
  const out = writer();
  out.raw(FRAME_HEAD);
  out.string(1, type);
  const object = out.begin(2);
  out.bytesField(1, objectBody);
  out.end(object);
  const frame = written(out);
  frame.writeUInt32BE(frame.length - 4, 0);
  return frame;
}

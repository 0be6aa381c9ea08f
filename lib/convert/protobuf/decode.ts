// Protobuf request bodies of kinds tenantgate keeps upstream as custom resources (the table's upstreamGroup), which the
// upstream takes as JSON only: decoded into the JSON object Go's encoder writes for the same typed object, by the field
// numbers of k8s.io/api flowcontrol/v1, rbac/v1 and apimachinery meta/v1 generated.proto (v0.36), checked by the unit test.
// Never invents a value: a field it does not know is dropped, as Go's generated Unmarshal skips it; a malformed one is 400.
import { badRequest, StatusError, unsupportedMediaType } from '../../errors/status-error.ts';
import type { KindRow } from '../kinds.ts';
import { FIXED32, FIXED64, LENGTH_DELIMITED, malformed, utf8, VARINT, VARINT_CUT, VARINT_TOO_LONG, varintAt, varintBitsAt, varintEnd } from './wire.ts';
import type { Json } from '../rules/rule.ts';
import { protobufEnvelope } from './envelope.ts';
import { MANAGED_FIELDS_ENTRY, OBJECT_META, OWNER_REFERENCE } from './field-numbers.ts';

/** Scalars as their JSON: `time` is meta/v1 Time (RFC 3339, seconds), `fieldsV1` its raw JSON (managedFields). */
type Scalar = 'string' | 'int32' | 'int64' | 'bool' | 'time' | 'fieldsV1';

/**
 * One field of a message. `pointer`: Go holds it as a pointer, so being on the wire means set, zero included; other
 * scalars at their zero value are left out, as Go's `omitempty` (and the apiserver's defaulting of zero) would.
 */
export interface DecodedField {
  readonly number: number;
  readonly type: Scalar | DecodedMessage;
  readonly repeated?: true;
  /** map<string, string> (labels, annotations). */
  readonly map?: true;
  readonly pointer?: true;
}
export type DecodedMessage = { readonly [jsonName: string]: DecodedField };

const field = (number: number, type: Scalar | DecodedMessage): DecodedField => ({ number, type });
const pointer = (number: number, type: Scalar | DecodedMessage): DecodedField => ({ number, type, pointer: true });
const repeated = (number: number, type: Scalar | DecodedMessage): DecodedField => ({ number, type, repeated: true });
const stringMap = (number: number): DecodedField => ({ number, type: 'string', map: true });

// ---- apimachinery pkg/apis/meta/v1 ----

// Their numbers from the generated schema (field-numbers.ts); which Go fields are pointers, from k8s.io/apimachinery.
const MANAGED_FIELDS_ENTRY_MESSAGE: DecodedMessage = {
  manager: field(MANAGED_FIELDS_ENTRY.manager, 'string'),
  operation: field(MANAGED_FIELDS_ENTRY.operation, 'string'),
  apiVersion: field(MANAGED_FIELDS_ENTRY.apiVersion, 'string'),
  time: pointer(MANAGED_FIELDS_ENTRY.time, 'time'),
  fieldsType: field(MANAGED_FIELDS_ENTRY.fieldsType, 'string'),
  fieldsV1: field(MANAGED_FIELDS_ENTRY.fieldsV1, 'fieldsV1'),
  subresource: field(MANAGED_FIELDS_ENTRY.subresource, 'string'),
};
const OWNER_REFERENCE_MESSAGE: DecodedMessage = {
  apiVersion: field(OWNER_REFERENCE.apiVersion, 'string'),
  kind: field(OWNER_REFERENCE.kind, 'string'),
  name: field(OWNER_REFERENCE.name, 'string'),
  uid: field(OWNER_REFERENCE.uid, 'string'),
  controller: pointer(OWNER_REFERENCE.controller, 'bool'),
  blockOwnerDeletion: pointer(OWNER_REFERENCE.blockOwnerDeletion, 'bool'),
};
const OBJECT_META_MESSAGE: DecodedMessage = {
  name: field(OBJECT_META.name, 'string'),
  generateName: field(OBJECT_META.generateName, 'string'),
  namespace: field(OBJECT_META.namespace, 'string'),
  selfLink: field(OBJECT_META.selfLink, 'string'),
  uid: field(OBJECT_META.uid, 'string'),
  resourceVersion: field(OBJECT_META.resourceVersion, 'string'),
  generation: field(OBJECT_META.generation, 'int64'),
  creationTimestamp: field(OBJECT_META.creationTimestamp, 'time'),
  deletionTimestamp: pointer(OBJECT_META.deletionTimestamp, 'time'),
  deletionGracePeriodSeconds: pointer(OBJECT_META.deletionGracePeriodSeconds, 'int64'),
  labels: stringMap(OBJECT_META.labels),
  annotations: stringMap(OBJECT_META.annotations),
  ownerReferences: repeated(OBJECT_META.ownerReferences, OWNER_REFERENCE_MESSAGE),
  finalizers: repeated(OBJECT_META.finalizers, 'string'),
  managedFields: repeated(OBJECT_META.managedFields, MANAGED_FIELDS_ENTRY_MESSAGE),
};

// ---- k8s.io/api flowcontrol/v1 ----

const CONDITION: DecodedMessage = {
  type: field(1, 'string'),
  status: field(2, 'string'),
  lastTransitionTime: field(3, 'time'),
  reason: field(4, 'string'),
  message: field(5, 'string'),
};
const STATUS: DecodedMessage = { conditions: repeated(1, CONDITION) };
const SUBJECT: DecodedMessage = {
  kind: field(1, 'string'),
  user: pointer(2, { name: field(1, 'string') }),
  group: pointer(3, { name: field(1, 'string') }),
  serviceAccount: pointer(4, { namespace: field(1, 'string'), name: field(2, 'string') }),
};
const RESOURCE_POLICY_RULE: DecodedMessage = {
  verbs: repeated(1, 'string'),
  apiGroups: repeated(2, 'string'),
  resources: repeated(3, 'string'),
  clusterScope: field(4, 'bool'),
  namespaces: repeated(5, 'string'),
};
const NON_RESOURCE_POLICY_RULE: DecodedMessage = { verbs: repeated(1, 'string'), nonResourceURLs: repeated(6, 'string') };
const FLOW_SCHEMA_SPEC: DecodedMessage = {
  priorityLevelConfiguration: field(1, { name: field(1, 'string') }),
  matchingPrecedence: field(2, 'int32'),
  distinguisherMethod: pointer(3, { type: field(1, 'string') }),
  rules: repeated(4, {
    subjects: repeated(1, SUBJECT),
    resourceRules: repeated(2, RESOURCE_POLICY_RULE),
    nonResourceRules: repeated(3, NON_RESOURCE_POLICY_RULE),
  }),
};
const LIMITED: DecodedMessage = {
  nominalConcurrencyShares: pointer(1, 'int32'),
  limitResponse: field(2, {
    type: field(1, 'string'),
    queuing: pointer(2, { queues: field(1, 'int32'), handSize: field(2, 'int32'), queueLengthLimit: field(3, 'int32') }),
  }),
  lendablePercent: pointer(3, 'int32'),
  borrowingLimitPercent: pointer(4, 'int32'),
};
const PRIORITY_LEVEL_SPEC: DecodedMessage = {
  type: field(1, 'string'),
  limited: pointer(2, LIMITED),
  exempt: pointer(3, { nominalConcurrencyShares: pointer(1, 'int32'), lendablePercent: pointer(2, 'int32') }),
};

// ---- k8s.io/api rbac/v1 ----

const RBAC_SUBJECT: DecodedMessage = { kind: field(1, 'string'), apiGroup: field(2, 'string'), name: field(3, 'string'), namespace: field(4, 'string') };
const ROLE_REF: DecodedMessage = { apiGroup: field(1, 'string'), kind: field(2, 'string'), name: field(3, 'string') };

/** The objects decoded, by `<group>/<kind>`: their one apiVersion and message (what the unit test checks against generated.proto). */
export const DECODED_KINDS: ReadonlyMap<string, { readonly apiVersion: string; readonly message: DecodedMessage }> = new Map<
  string,
  { readonly apiVersion: string; readonly message: DecodedMessage }
>([
  [
    'flowcontrol.apiserver.k8s.io/FlowSchema',
    {
      apiVersion: 'flowcontrol.apiserver.k8s.io/v1',
      message: { metadata: field(1, OBJECT_META_MESSAGE), spec: field(2, FLOW_SCHEMA_SPEC), status: field(3, STATUS) },
    },
  ],
  [
    'rbac.authorization.k8s.io/ClusterRoleBinding',
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      message: { metadata: field(1, OBJECT_META_MESSAGE), subjects: repeated(2, RBAC_SUBJECT), roleRef: field(3, ROLE_REF) },
    },
  ],
  [
    'flowcontrol.apiserver.k8s.io/PriorityLevelConfiguration',
    {
      apiVersion: 'flowcontrol.apiserver.k8s.io/v1',
      message: { metadata: field(1, OBJECT_META_MESSAGE), spec: field(2, PRIORITY_LEVEL_SPEC), status: field(3, STATUS) },
    },
  ],
]);

// ---- the wire: varints and length-delimited fields ----

/** The zero metav1.Time (0001-01-01T00:00:00Z) as Go encodes it: no time at all, `null` in its JSON. */
const ZERO_TIME_SECONDS = -62135596800n;

interface WireField {
  readonly number: number;
  readonly wireType: number;
  /** The varint's value, or the payload of a length-delimited field. */
  readonly value: bigint | Buffer;
}

/** Every bit of the varint at `at.pos`, moving it past; one cut off or too long is a 400. */
function readVarint(bytes: Buffer, at: { pos: number }, what: string): bigint {
  const start = at.pos;
  const value = varintAt(bytes, start, bytes.length);
  if (value === VARINT_CUT) throw malformed(what, 'a varint is cut off');
  if (value === VARINT_TOO_LONG) throw malformed(what, 'a varint is longer than 10 bytes');
  at.pos = varintEnd;
  return varintBitsAt(bytes, start, varintEnd);
}

function wireFields(bytes: Buffer, what: string): WireField[] {
  const fields: WireField[] = [];
  const at = { pos: 0 };
  while (at.pos < bytes.length) {
    const tag = readVarint(bytes, at, what);
    const number = Number(tag >> 3n);
    const wireType = Number(tag & 7n);
    if (number < 1 || number > 2 ** 29 - 1) throw malformed(what, `field number ${number} is out of range`);
    if (wireType === VARINT) fields.push({ number, wireType, value: readVarint(bytes, at, what) });
    else if (wireType === LENGTH_DELIMITED) {
      const length = Number(readVarint(bytes, at, what));
      if (length > bytes.length - at.pos) throw malformed(what, 'a field runs past the end of its message');
      fields.push({ number, wireType, value: bytes.subarray(at.pos, at.pos + length) });
      at.pos += length;
    } else if (wireType === FIXED64 || wireType === FIXED32) {
      // No field of these messages has a fixed width: an unknown field, skipped as Go skips it.
      at.pos += wireType === FIXED64 ? 8 : 4;
      if (at.pos > bytes.length) throw malformed(what, 'a field runs past the end of its message');
    } else throw malformed(what, `field ${number} has wire type ${wireType}, which Kubernetes does not use`);
  }
  return fields;
}

function payloadOf(wire: WireField, what: string): Buffer {
  if (wire.wireType !== LENGTH_DELIMITED) throw malformed(what, `wire type ${wire.wireType} where a length-delimited field belongs`);
  return wire.value as Buffer;
}

function varintOf(wire: WireField, what: string): bigint {
  if (wire.wireType !== VARINT) throw malformed(what, `wire type ${wire.wireType} where a varint belongs`);
  return wire.value as bigint;
}

function text(wire: WireField, what: string): string {
  try {
    return utf8.decode(payloadOf(wire, what));
  } catch (error) {
    if (error instanceof StatusError) throw error;
    throw malformed(what, 'not valid UTF-8');
  }
}

/** metav1.Time { seconds = 1, nanos = 2 } as Go's JSON writes it (UTC, whole seconds); null for the zero time. */
function timeOf(bytes: Buffer, what: string): string | null {
  let seconds = 0n;
  for (const wire of wireFields(bytes, what)) if (wire.number === 1) seconds = BigInt.asIntN(64, varintOf(wire, what));
  if (seconds === ZERO_TIME_SECONDS) return null;
  const ms = Number(seconds) * 1000;
  if (!Number.isFinite(ms) || Math.abs(ms) > 8.64e15) throw malformed(what, 'a time out of range');
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** A scalar's JSON value, or undefined for a zero value Go leaves out (unless the field is a pointer, set). */
function scalarOf(type: Scalar, wire: WireField, what: string, keepZero: boolean): unknown {
  let value: unknown;
  switch (type) {
    case 'string':
      value = text(wire, what);
      return value === '' && !keepZero ? undefined : value;
    case 'int32':
      value = Number(BigInt.asIntN(32, varintOf(wire, what)));
      return value === 0 && !keepZero ? undefined : value;
    case 'int64': {
      const int = BigInt.asIntN(64, varintOf(wire, what));
      if (int > BigInt(Number.MAX_SAFE_INTEGER) || int < BigInt(Number.MIN_SAFE_INTEGER)) throw malformed(what, 'an integer beyond what JSON carries exactly');
      return int === 0n && !keepZero ? undefined : Number(int);
    }
    case 'bool':
      value = varintOf(wire, what) !== 0n;
      return value === false && !keepZero ? undefined : value;
    case 'time':
      return timeOf(payloadOf(wire, what), what) ?? undefined;
    case 'fieldsV1': {
      // FieldsV1 { Raw = 1 }: the field set, itself JSON.
      let raw: Buffer | undefined;
      for (const inner of wireFields(payloadOf(wire, what), what)) if (inner.number === 1) raw = payloadOf(inner, what);
      if (raw === undefined) return undefined;
      try {
        return JSON.parse(utf8.decode(raw));
      } catch {
        throw malformed(what, 'fieldsV1 is not JSON');
      }
    }
  }
}

function mapOf(wires: readonly WireField[], what: string): Json {
  const map: Json = {};
  for (const wire of wires) {
    let key = '';
    let value = '';
    for (const inner of wireFields(payloadOf(wire, what), what)) {
      if (inner.number === 1) key = text(inner, what);
      else if (inner.number === 2) value = text(inner, what);
    }
    // No label or annotation key starts with '_'; this one would set the object's prototype instead of an entry.
    if (key === '__proto__') throw malformed(what, 'a map key is "__proto__"');
    map[key] = value; // a later entry wins, as in Go
  }
  return map;
}

/** A message as JSON, by its schema. */
export function decodeMessage(bytes: Buffer, message: DecodedMessage, what: string): Json {
  const byNumber = new Map<number, WireField[]>();
  for (const wire of wireFields(bytes, what)) {
    const found = byNumber.get(wire.number);
    if (found === undefined) byNumber.set(wire.number, [wire]);
    else found.push(wire);
  }
  const json: Json = {};
  for (const name in message) {
    const spec = message[name]!;
    const wires = byNumber.get(spec.number);
    if (wires === undefined) continue;
    const path = `${what}.${name}`;
    if (spec.map === true) {
      json[name] = mapOf(wires, path);
      continue;
    }
    const decode = (wire: WireField, keepZero: boolean) =>
      typeof spec.type === 'string' ? scalarOf(spec.type, wire, path, keepZero) : decodeMessage(payloadOf(wire, path), spec.type, path);
    if (spec.repeated === true) {
      // (Elements of a repeated string are never left out: "" is an element.)
      json[name] = wires.map((wire) => decode(wire, true));
      continue;
    }
    if (wires.length > 1) throw malformed(what, `${name} (field ${spec.number}) appears ${wires.length} times`);
    const value = decode(wires[0]!, spec.pointer === true);
    if (value !== undefined) json[name] = value;
  }
  return json;
}

function unsupported(what: string): StatusError {
  return unsupportedMediaType(`tenantgate cannot convert ${what} sent as protobuf; send it as JSON (application/json)`);
}

/**
 * The JSON object of a protobuf body of `row`'s kind (a whole object: create, update, status), with the apiVersion of its
 * envelope, or of the path's version when the envelope names none. 415 for a kind or version without field numbers here,
 * 400 for a body of another kind or a malformed one.
 */
export function protobufObjectToJson(body: Buffer, row: KindRow, version: string): Json {
  const kindName = `${row.resource}.${row.group}`;
  const decoded = DECODED_KINDS.get(`${row.group}/${row.kind}`);
  if (decoded === undefined) throw unsupported(`${kindName} objects`);
  const envelope = protobufEnvelope(body);
  if (envelope.kind !== '' && envelope.kind !== row.kind)
    throw badRequest(`the protobuf request body is a ${envelope.kind}, but ${row.resource} are ${row.kind}`);
  const apiVersion = envelope.apiVersion === '' ? `${row.group}/${version}` : envelope.apiVersion;
  if (apiVersion !== decoded.apiVersion) throw unsupported(`${kindName} ${apiVersion} objects`);
  return { apiVersion, kind: row.kind, ...decodeMessage(envelope.raw, decoded.message, 'object') };
}

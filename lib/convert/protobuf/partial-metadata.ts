// The tenant's view of a PartialObjectMetadata or PartialObjectMetadataList (metadata clients: informers, the garbage
// collector) encoded as the apiserver's protobuf, for clients that prefer it. Encodes only what the view holds:
// never reads upstream bytes, so nothing the rules removed can reach the tenant this way.
//
// Why it matters: client-go decodes a JSON list's items with their kind and apiVersion, a protobuf list's items
// without (the PartialObjectMetadata message has none), and metadata informers compare the two.

import { MAGIC } from './wire.ts';
import { ProtobufWriter } from './writer.ts';
import { MANAGED_FIELDS_ENTRY, OBJECT_META, OWNER_REFERENCE } from './field-numbers.ts';
import { isObject } from '../rules/json.ts';

export const PARTIAL_METADATA_GROUP_VERSION = 'meta.k8s.io/v1';

type Json = Record<string, unknown>;

function string(out: ProtobufWriter, number: number, value: unknown): void {
  if (typeof value === 'string' && value !== '') out.string(number, value);
}

function integer(out: ProtobufWriter, number: number, value: unknown): void {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) out.int(number, value);
}

function bool(out: ProtobufWriter, number: number, value: unknown): void {
  if (typeof value === 'boolean') out.bool(number, value);
}

/** metav1.Time: whole seconds since the epoch (RFC 3339 in JSON); nothing for a value that is not a time. */
function time(out: ProtobufWriter, number: number, value: unknown): void {
  if (typeof value !== 'string') return;
  const millis = Date.parse(value);
  if (Number.isNaN(millis)) return;
  const start = out.begin(number);
  const seconds = Math.floor(millis / 1000);
  // Before 1970 a negative int64 takes ten bytes: no object has such a time; leave it out rather than mis-encode.
  if (seconds > 0) out.int(1, seconds);
  out.end(start);
}

function stringMap(out: ProtobufWriter, number: number, value: unknown): void {
  if (!isObject(value)) return;
  for (const key in value) {
    const entry = out.begin(number);
    string(out, 1, key);
    string(out, 2, value[key]);
    out.end(entry);
  }
}

/** The string fields written first, in number order (the rest have types and shapes of their own). */
const META_STRINGS = ['name', 'generateName', 'namespace', 'selfLink', 'uid', 'resourceVersion'] as const;
const OWNER_STRINGS = ['kind', 'name', 'uid', 'apiVersion'] as const;
const MANAGED_STRINGS = ['manager', 'operation', 'apiVersion'] as const;

function objectMeta(out: ProtobufWriter, metadata: Json): void {
  for (const name of META_STRINGS) string(out, OBJECT_META[name], metadata[name]);
  integer(out, OBJECT_META.generation, metadata.generation);
  time(out, OBJECT_META.creationTimestamp, metadata.creationTimestamp);
  time(out, OBJECT_META.deletionTimestamp, metadata.deletionTimestamp);
  integer(out, OBJECT_META.deletionGracePeriodSeconds, metadata.deletionGracePeriodSeconds);
  stringMap(out, OBJECT_META.labels, metadata.labels);
  stringMap(out, OBJECT_META.annotations, metadata.annotations);
  for (const owner of Array.isArray(metadata.ownerReferences) ? metadata.ownerReferences : []) {
    if (!isObject(owner)) continue;
    const reference = out.begin(OBJECT_META.ownerReferences);
    for (const name of OWNER_STRINGS) string(out, OWNER_REFERENCE[name], owner[name]);
    bool(out, OWNER_REFERENCE.controller, owner.controller);
    bool(out, OWNER_REFERENCE.blockOwnerDeletion, owner.blockOwnerDeletion);
    out.end(reference);
  }
  for (const finalizer of Array.isArray(metadata.finalizers) ? metadata.finalizers : []) string(out, OBJECT_META.finalizers, finalizer);
  for (const entry of Array.isArray(metadata.managedFields) ? metadata.managedFields : []) {
    if (!isObject(entry)) continue;
    const managed = out.begin(OBJECT_META.managedFields);
    for (const name of MANAGED_STRINGS) string(out, MANAGED_FIELDS_ENTRY[name], entry[name]);
    time(out, MANAGED_FIELDS_ENTRY.time, entry.time);
    string(out, MANAGED_FIELDS_ENTRY.fieldsType, entry.fieldsType);
    if (entry.fieldsV1 !== undefined) {
      // FieldsV1 { raw = 1 }: the field set as JSON.
      const fieldsV1 = out.begin(MANAGED_FIELDS_ENTRY.fieldsV1);
      out.bytesField(1, Buffer.from(JSON.stringify(entry.fieldsV1), 'utf8'));
      out.end(fieldsV1);
    }
    string(out, MANAGED_FIELDS_ENTRY.subresource, entry.subresource);
    out.end(managed);
  }
}

/** A PartialObjectMetadata message: its metadata = 1. */
function partialObjectMetadata(out: ProtobufWriter, object: Json): void {
  const metadata = out.begin(1);
  objectMeta(out, isObject(object.metadata) ? object.metadata : {});
  out.end(metadata);
}

/** Starts `k8s\0` + runtime.Unknown { typeMeta = 1 { apiVersion = 1, kind = 2 }, raw = 2 }: returns where raw starts. */
function beginEnvelope(out: ProtobufWriter, kind: string): number {
  out.raw(MAGIC);
  const typeMeta = out.begin(1);
  out.string(1, PARTIAL_METADATA_GROUP_VERSION);
  out.string(2, kind);
  out.end(typeMeta);
  return out.begin(2);
}

/** Ends the envelope beginEnvelope started: the body, copied out of the writer. */
function endEnvelope(out: ProtobufWriter, raw: number): Buffer {
  out.end(raw);
  return Buffer.from(out.bytes());
}

/** A PartialObjectMetadata (JSON, the tenant's view) as the apiserver's protobuf body. */
export function partialObjectMetadataToProtobuf(object: Json): Buffer {
  const out = new ProtobufWriter(1024);
  const raw = beginEnvelope(out, 'PartialObjectMetadata');
  partialObjectMetadata(out, object);
  return endEnvelope(out, raw);
}

/** A PartialObjectMetadataList (JSON, the tenant's view) as the apiserver's protobuf body. */
export function partialObjectMetadataListToProtobuf(list: Json): Buffer {
  const out = new ProtobufWriter(1024);
  const raw = beginEnvelope(out, 'PartialObjectMetadataList');
  const listMeta = out.begin(1);
  const metadata = isObject(list.metadata) ? list.metadata : {};
  string(out, 1, metadata.selfLink);
  string(out, 2, metadata.resourceVersion);
  string(out, 3, metadata.continue);
  integer(out, 4, metadata.remainingItemCount);
  out.end(listMeta);
  for (const item of Array.isArray(list.items) ? list.items : []) {
    if (!isObject(item)) continue;
    const partial = out.begin(2);
    partialObjectMetadata(out, item);
    out.end(partial);
  }
  return endEnvelope(out, raw);
}

/**
 * `as=PartialObjectMetadata` or `as=PartialObjectMetadataList` of meta.k8s.io/v1 when the client's first choice is
 * that, as protobuf (what client-go's metadata client asks); null otherwise.
 */
export function preferredPartialMetadataProtobuf(accept: string | undefined): 'PartialObjectMetadata' | 'PartialObjectMetadataList' | null {
  if (accept === undefined) return null;
  const [type, ...parameters] = accept
    .split(',')[0]!
    .split(';')
    .map((part) => part.trim());
  if (type !== 'application/vnd.kubernetes.protobuf') return null;
  const params = new Map(parameters.map((p) => p.split('=', 2) as [string, string]));
  const as = params.get('as');
  if (params.get('g') !== 'meta.k8s.io' || params.get('v') !== 'v1') return null;
  return as === 'PartialObjectMetadata' || as === 'PartialObjectMetadataList' ? as : null;
}

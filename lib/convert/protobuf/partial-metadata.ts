// The tenant's view of a PartialObjectMetadata or PartialObjectMetadataList (metadata clients: informers, the garbage
// collector) encoded as the apiserver's protobuf, for clients that prefer it. Encodes only what the view holds:
// never reads upstream bytes, so nothing the rules removed can reach the tenant this way.
//
// Why it matters: client-go decodes a JSON list's items with their kind and apiVersion, a protobuf list's items
// without (the PartialObjectMetadata message has none), and metadata informers compare the two.

import { LENGTH_DELIMITED, MAGIC, pushVarint, VARINT } from './wire.ts';
import { isObject } from '../rules/json.ts';

export const PARTIAL_METADATA_GROUP_VERSION = 'meta.k8s.io/v1';

type Json = Record<string, unknown>;

/** Fields of one message, written in order. */
class Fields {
  private readonly parts: Buffer[] = [];

  private head(number: number, wireType: number, length?: number): void {
    const bytes: number[] = [];
    pushVarint(bytes, number * 8 + wireType);
    if (length !== undefined) pushVarint(bytes, length);
    this.parts.push(Buffer.from(bytes));
  }

  bytes(number: number, value: Buffer): void {
    this.head(number, LENGTH_DELIMITED, value.length);
    this.parts.push(value);
  }

  string(number: number, value: unknown): void {
    if (typeof value === 'string' && value !== '') this.bytes(number, Buffer.from(value, 'utf8'));
  }

  integer(number: number, value: unknown): void {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) return;
    this.head(number, VARINT);
    const bytes: number[] = [];
    pushVarint(bytes, value);
    this.parts.push(Buffer.from(bytes));
  }

  bool(number: number, value: unknown): void {
    if (typeof value === 'boolean') this.integer(number, value ? 1 : 0);
  }

  message(number: number, value: Fields): void {
    this.bytes(number, value.done());
  }

  done(): Buffer {
    return Buffer.concat(this.parts);
  }
}

/** metav1.Time: whole seconds since the epoch (RFC 3339 in JSON). */
function time(value: unknown): Fields | null {
  if (typeof value !== 'string') return null;
  const millis = Date.parse(value);
  if (Number.isNaN(millis)) return null;
  const fields = new Fields();
  const seconds = Math.floor(millis / 1000);
  // Before 1970 a negative int64 takes ten bytes: no object has such a time; leave it out rather than mis-encode.
  if (seconds > 0) fields.integer(1, seconds);
  return fields;
}

function stringMap(fields: Fields, number: number, value: unknown): void {
  if (!isObject(value)) return;
  for (const key in value) {
    const entry = new Fields();
    entry.string(1, key);
    entry.string(2, value[key]);
    fields.message(number, entry);
  }
}

function objectMeta(metadata: Json): Fields {
  const fields = new Fields();
  fields.string(1, metadata.name);
  fields.string(2, metadata.generateName);
  fields.string(3, metadata.namespace);
  fields.string(4, metadata.selfLink);
  fields.string(5, metadata.uid);
  fields.string(6, metadata.resourceVersion);
  fields.integer(7, metadata.generation);
  const created = time(metadata.creationTimestamp);
  if (created !== null) fields.message(8, created);
  const deleted = time(metadata.deletionTimestamp);
  if (deleted !== null) fields.message(9, deleted);
  fields.integer(10, metadata.deletionGracePeriodSeconds);
  stringMap(fields, 11, metadata.labels);
  stringMap(fields, 12, metadata.annotations);
  for (const owner of Array.isArray(metadata.ownerReferences) ? metadata.ownerReferences : []) {
    if (!isObject(owner)) continue;
    const reference = new Fields();
    reference.string(1, owner.kind);
    reference.string(3, owner.name);
    reference.string(4, owner.uid);
    reference.string(5, owner.apiVersion);
    reference.bool(6, owner.controller);
    reference.bool(7, owner.blockOwnerDeletion);
    fields.message(13, reference);
  }
  for (const finalizer of Array.isArray(metadata.finalizers) ? metadata.finalizers : []) fields.string(14, finalizer);
  for (const entry of Array.isArray(metadata.managedFields) ? metadata.managedFields : []) {
    if (!isObject(entry)) continue;
    const managed = new Fields();
    managed.string(1, entry.manager);
    managed.string(2, entry.operation);
    managed.string(3, entry.apiVersion);
    const at = time(entry.time);
    if (at !== null) managed.message(4, at);
    managed.string(6, entry.fieldsType);
    if (entry.fieldsV1 !== undefined) {
      const raw = new Fields();
      raw.bytes(1, Buffer.from(JSON.stringify(entry.fieldsV1), 'utf8'));
      managed.message(7, raw);
    }
    managed.string(8, entry.subresource);
    fields.message(17, managed);
  }
  return fields;
}

function partialObjectMetadata(object: Json): Fields {
  const fields = new Fields();
  fields.message(1, objectMeta(isObject(object.metadata) ? object.metadata : {}));
  return fields;
}

function envelope(kind: string, raw: Fields): Buffer {
  const typeMeta = new Fields();
  typeMeta.string(1, PARTIAL_METADATA_GROUP_VERSION);
  typeMeta.string(2, kind);
  const unknown = new Fields();
  unknown.message(1, typeMeta);
  unknown.message(2, raw);
  return Buffer.concat([MAGIC, unknown.done()]);
}

/** A PartialObjectMetadata (JSON, the tenant's view) as the apiserver's protobuf body. */
export function partialObjectMetadataToProtobuf(object: Json): Buffer {
  return envelope('PartialObjectMetadata', partialObjectMetadata(object));
}

/** A PartialObjectMetadataList (JSON, the tenant's view) as the apiserver's protobuf body. */
export function partialObjectMetadataListToProtobuf(list: Json): Buffer {
  const fields = new Fields();
  const listMeta = new Fields();
  const metadata = isObject(list.metadata) ? list.metadata : {};
  listMeta.string(1, metadata.selfLink);
  listMeta.string(2, metadata.resourceVersion);
  listMeta.string(3, metadata.continue);
  listMeta.integer(4, metadata.remainingItemCount);
  fields.message(1, listMeta);
  for (const item of Array.isArray(list.items) ? list.items : []) if (isObject(item)) fields.message(2, partialObjectMetadata(item));
  return envelope('PartialObjectMetadataList', fields);
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

// What a cache watcher or list is sent in its client's encoding: JSON lines (made at ingest) or Kubernetes protobuf
// (made the first time a protobuf client needs them, kept on the object or event: once per event per encoding).
// Never encodes per watcher, and never answers protobuf for a kind the apiserver would answer in JSON.
import type { KindRow } from '../convert/kinds.ts';
import { encodeObject, encodeWatchFrame, protobufMessageOf } from '../convert/protobuf/encode.ts';
import { protobufResponseSupported } from '../convert/protobuf/to-tenant.ts';
import type { StatusError } from '../errors/status-error.ts';
import { firstPlainMediaType, prefersProtobuf } from '../request/negotiation.ts';
import { eventLine, type CachedObject, type CacheEvent } from './cached-object.ts';
import type { ResourceCache } from './resource-cache.ts';
import { protobufEnvelope } from '../convert/protobuf/envelope.ts';

export type CacheEncoding = 'json' | 'protobuf';

export const PROTOBUF_WATCH_CONTENT_TYPE = 'application/vnd.kubernetes.protobuf;stream=watch';
export const PROTOBUF_CONTENT_TYPE = 'application/vnd.kubernetes.protobuf';

/** Whether a client that sent `accept` takes plain JSON objects first (not Tables, metadata-only forms or protobuf). */
export function acceptsPlainJson(accept: string | undefined): boolean {
  if (accept === undefined || accept === '') return true;
  const type = firstPlainMediaType(accept);
  return type === 'application/json' || type === '*/*' || type === 'application/*';
}

/**
 * The encoding the cache answers `accept` in for objects of `row` at `apiVersion` of kind `kind`, or null when it does
 * not answer (a Table or metadata form, or protobuf asked of a kind the cache cannot write as protobuf: upstream).
 */
export function cacheEncodingOf(accept: string | undefined, row: KindRow, apiVersion: string, kind: string): CacheEncoding | null {
  if (acceptsPlainJson(accept)) return 'json';
  if (!prefersProtobuf(accept)) return null;
  // The apiserver has no protobuf for a tenant's custom resources: it answers the next type the client accepts
  // (client-go's JSON), or 406 when there is none (left to the upstream path). Kinds tenantgate stores as custom
  // resources (row.upstreamGroup) are built-in kinds to the tenant: protobuf, which the upstream path answers.
  if (row.rule === 'custom-resource') return row.upstreamGroup === undefined && acceptsPlainJsonAfterProtobuf(accept!) ? 'json' : null;
  if (!protobufResponseSupported(row, apiVersion)) return null;
  return protobufMessageOf(apiVersion, kind) !== undefined && protobufMessageOf(apiVersion, `${kind}List`) !== undefined ? 'protobuf' : null;
}

/**
 * Whether `accept`, protobuf first, names plain JSON next: what the apiserver answers a kind it has no protobuf for.
 * Quality values reorder the apiserver's choice: such a client goes upstream.
 */
function acceptsPlainJsonAfterProtobuf(accept: string): boolean {
  if (/;\s*q\s*=/i.test(accept)) return false;
  const comma = accept.indexOf(',');
  return comma !== -1 && accept.slice(comma + 1).trim() !== '' && acceptsPlainJson(accept.slice(comma + 1));
}

/** An object's protobuf body, made once (from its JSON view, which has its kind and apiVersion). */
export function protobufBodyOf(object: CachedObject): Buffer {
  if (object.protobuf === undefined) {
    const json = JSON.parse(object.bytes.toString('utf8')) as Record<string, unknown>;
    const body = encodeObject(String(json.apiVersion), String(json.kind), json);
    // The object's message is the envelope's raw field, its last: the body's tail.
    object.protobufMessageStart = body.length - protobufEnvelope(body).raw.length;
    object.protobuf = body;
    if (object.countedIn !== null) object.countedIn.bytes += body.length;
  }
  return object.protobuf;
}

/** The object's message alone (a list item): the tail of its body. */
export function listItemProtobufOf(object: CachedObject): Buffer {
  return protobufBodyOf(object).subarray(object.protobufMessageStart);
}

/** What a watcher in `encoding` is sent for `event` (its own type and object). */
export function eventBytes(event: CacheEvent, encoding: CacheEncoding): Buffer {
  if (encoding === 'json') return event.line;
  if (event.frame === undefined) {
    const body = protobufBodyOf(event.object);
    event.frame = encodeWatchFrame(event.type, body);
    // The object keeps a view into the frame, as its JSON is a view into the event's line: one copy per event.
    event.object.protobuf = event.frame.subarray(event.frame.length - body.length);
  }
  return event.frame;
}

/** An object's arrival (an initial event, or a change that moved it into a watcher's selection). */
export function addedBytes(object: CachedObject, encoding: CacheEncoding): Buffer {
  return encoding === 'json' ? eventLine('ADDED', object.bytes) : encodeWatchFrame('ADDED', protobufBodyOf(object));
}

/** The departure of an object from a watcher's selection in protobuf, from its JSON departure line (made once). */
export function departureFrame(event: CacheEvent, departureLine: Buffer): Buffer {
  if (event.departureFrame === undefined) {
    const { object } = JSON.parse(departureLine.toString('utf8')) as { object: Record<string, unknown> };
    event.departureFrame = encodeWatchFrame('DELETED', encodeObject(String(object.apiVersion), String(object.kind), object));
  }
  return event.departureFrame;
}

/** A BOOKMARK event at `resourceVersion`, as the apiserver writes one (the end of a watch-list's initial events marked). */
export function bookmarkBytes(cache: ResourceCache, resourceVersion: number, initialEventsEnd: boolean, encoding: CacheEncoding): Buffer {
  const metadata = initialEventsEnd
    ? { resourceVersion: String(resourceVersion), annotations: { 'k8s.io/initial-events-end': 'true' } }
    : { resourceVersion: String(resourceVersion) };
  const object = { kind: cache.kind, apiVersion: cache.tenantApiVersion, metadata };
  if (encoding === 'protobuf') return encodeWatchFrame('BOOKMARK', encodeObject(object.apiVersion, object.kind, object));
  return Buffer.from(`{"type":"BOOKMARK","object":${JSON.stringify(object)}}\n`);
}

/** An ERROR event carrying `error`'s Status (a resourceVersion too old: 410 Expired). */
export function errorEventBytes(error: StatusError, encoding: CacheEncoding): Buffer {
  if (encoding === 'protobuf') return encodeWatchFrame('ERROR', encodeObject('v1', 'Status', error.toJSON() as Record<string, unknown>));
  return Buffer.from(`{"type":"ERROR","object":${JSON.stringify(error)}}\n`);
}

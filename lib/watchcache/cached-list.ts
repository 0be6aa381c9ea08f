// Lists answered from the cache: the tenant's selected objects as one JSON list, streamed in chunks with backpressure,
// and limit/continue over a snapshot kept for the continuation. Never honours a continue token of another tenant, and
// never sends an item outside the snapshot the first page was cut from.
import { randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Writable } from 'node:stream';
import type { TenantId } from '../convert/prefix.ts';
import { badRequest, expired } from '../errors/status-error.ts';
import { drained } from '../request/drained.ts';
import { fieldNumberOf, protobufMessageOf } from '../convert/protobuf/encode.ts';
import { listMetaField, protobufListHead, type ListMetaJson } from '../convert/protobuf/made.ts';
import { ProtobufWriter } from '../convert/protobuf/writer.ts';
import { listItemProtobufOf } from './encodings.ts';
import type { CachedObject } from './cached-object.ts';
import type { ResourceCache } from './resource-cache.ts';

/** The first page's objects and resourceVersion, kept for the pages after it. */
interface Snapshot {
  readonly tenant: TenantId;
  readonly cache: ResourceCache;
  readonly objects: readonly CachedObject[];
  readonly resourceVersion: number;
  /** Whether the list was unfiltered (remainingItemCount is only told then, as the apiserver does). */
  readonly everything: boolean;
  /** The namespace and selectors it was made for (Selection.key): its token continues that list only. */
  readonly scope: string;
}

/** A continue token of the cache: `tgwc.` then base64url JSON (the apiserver's own tokens never start so). */
const TOKEN_PREFIX = 'tgwc.';
const CHUNK_BYTES = 64 * 1024;

export function isCacheContinueToken(token: string): boolean {
  return token.startsWith(TOKEN_PREFIX);
}

/** Continuation snapshots, bounded in count and age (the apiserver's tokens last until etcd compacts, ~5 min). */
export class ListSnapshots {
  readonly #snapshots = new LRUCache<string, Snapshot>({ max: 1_000, ttl: 5 * 60_000 });

  /** A page of `objects`: its items, the continue token for the rest ('' when none), and how many remain. */
  firstPage(
    tenant: TenantId,
    cache: ResourceCache,
    objects: readonly CachedObject[],
    resourceVersion: number,
    everything: boolean,
    limit: number,
    scope = '',
  ): Page {
    if (limit <= 0 || objects.length <= limit) return { objects, resourceVersion, continueToken: '', remaining: null };
    const id = randomBytes(12).toString('base64url');
    const snapshot: Snapshot = { tenant, cache, objects, resourceVersion, everything, scope };
    this.#snapshots.set(id, snapshot);
    return this.#page(id, snapshot, 0, limit);
  }

  /** The page a continue token of `tenant` asks for: a 400 for a token not made for it, a 410 once its snapshot is gone. */
  nextPage(tenant: TenantId, cache: ResourceCache, token: string, limit: number, scope = ''): Page {
    let decoded: { s?: unknown; o?: unknown; t?: unknown };
    try {
      decoded = JSON.parse(Buffer.from(token.slice(TOKEN_PREFIX.length), 'base64url').toString('utf8'));
    } catch {
      throw badRequest('invalid continue token: it does not decode');
    }
    const { s: id, o: offset, t: owner } = decoded ?? {};
    if (typeof id !== 'string' || typeof offset !== 'number' || !Number.isSafeInteger(offset) || offset < 0 || owner !== tenant) {
      throw badRequest('invalid continue token: it was not issued for this list');
    }
    const snapshot = this.#snapshots.get(id);
    if (snapshot === undefined) {
      throw expired('The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.');
    }
    // Another namespace or other selectors with it would read what the request was not authorized for.
    if (snapshot.tenant !== tenant || snapshot.cache !== cache || snapshot.scope !== scope)
      throw badRequest('invalid continue token: it was not issued for this list');
    return this.#page(id, snapshot, offset, limit);
  }

  #page(id: string, snapshot: Snapshot, offset: number, limit: number): Page {
    const end = limit > 0 ? Math.min(snapshot.objects.length, offset + limit) : snapshot.objects.length;
    const objects = snapshot.objects.slice(offset, end);
    if (end >= snapshot.objects.length) {
      this.#snapshots.delete(id);
      return { objects, resourceVersion: snapshot.resourceVersion, continueToken: '', remaining: null };
    }
    const continueToken = TOKEN_PREFIX + Buffer.from(JSON.stringify({ s: id, o: end, t: snapshot.tenant })).toString('base64url');
    return { objects, resourceVersion: snapshot.resourceVersion, continueToken, remaining: snapshot.everything ? snapshot.objects.length - end : null };
  }
}

export interface Page {
  readonly objects: readonly CachedObject[];
  readonly resourceVersion: number;
  readonly continueToken: string;
  /** remainingItemCount, or null when not told. */
  readonly remaining: number | null;
}

/**
 * Writes `page` as the apiserver writes a list: `{"kind":…List,"apiVersion":…,"metadata":{…},"items":[…]}`, each item
 * without its kind and apiVersion (lists leave those to the list), in chunks that wait for the client to drain.
 */
export async function writeList(out: Writable, kind: string, apiVersion: string, page: Page): Promise<void> {
  const metadata = listMetaOf(page);
  const typeMeta = Buffer.from(`{"kind":${JSON.stringify(kind)},"apiVersion":${JSON.stringify(apiVersion)},`);
  let chunk: Buffer[] = [
    Buffer.from(`{"kind":${JSON.stringify(`${kind}List`)},"apiVersion":${JSON.stringify(apiVersion)},"metadata":${JSON.stringify(metadata)},"items":[`),
  ];
  let size = chunk[0]!.length;
  const open = Buffer.from('{');
  const comma = Buffer.from(',');
  for (let i = 0; i < page.objects.length; i++) {
    if (out.destroyed) return;
    const bytes = page.objects[i]!.bytes;
    if (i > 0) chunk.push(comma);
    // The cache keeps each object with its kind and apiVersion first (a watch event needs them); a list item goes without.
    if (bytes.length > typeMeta.length && bytes.subarray(0, typeMeta.length).equals(typeMeta)) chunk.push(open, bytes.subarray(typeMeta.length));
    else chunk.push(bytes);
    size += bytes.length + 1;
    if (size >= CHUNK_BYTES) {
      const more = out.write(Buffer.concat(chunk));
      chunk = [];
      size = 0;
      // (A client gone: the loop's next check ends the list.)
      if (!more) await drained(out);
    }
  }
  chunk.push(Buffer.from(']}'));
  out.end(Buffer.concat(chunk));
}

/** A page's ListMeta, as the apiserver fills it. */
function listMetaOf(page: Page): ListMetaJson {
  const metadata: ListMetaJson = { resourceVersion: String(page.resourceVersion) };
  if (page.continueToken !== '') metadata.continue = page.continueToken;
  if (page.remaining !== null) metadata.remainingItemCount = page.remaining;
  return metadata;
}

/**
 * `page` as the apiserver's protobuf list (`k8s\0` + Unknown{typeMeta, raw: <Kind>List{metadata, items}}), in pieces:
 * the head, then each item's field head and message (the object's protobuf, made once and kept). Throws when an
 * object cannot be written in protobuf: call it before answering.
 */
export function protobufListParts(kind: string, apiVersion: string, page: Page): Buffer[] {
  const listKind = `${kind}List`;
  const message = protobufMessageOf(apiVersion, listKind);
  if (message === undefined) throw new Error(`no protobuf message for ${apiVersion} ${listKind}`);
  const itemsField = fieldNumberOf(message, 'items');
  const items = page.objects.map(listItemProtobufOf);
  // Every item's field head in one buffer; ends[i] is where item i's head ends.
  const itemHeads = new ProtobufWriter(items.length * 6 + 16);
  const ends: number[] = [];
  let itemBytes = 0;
  for (const item of items) {
    itemHeads.head(itemsField, item.length);
    ends.push(itemHeads.length);
    itemBytes += item.length;
  }
  const heads = Buffer.from(itemHeads.bytes());
  itemBytes += heads.length;
  const metaField = listMetaField(listMetaOf(page));
  const parts: Buffer[] = [protobufListHead(apiVersion, listKind, metaField.length + itemBytes), metaField];
  for (let i = 0, start = 0; i < items.length; start = ends[i++]!) parts.push(heads.subarray(start, ends[i]), items[i]!);
  return parts;
}

/** Writes `parts` in chunks that wait for the client to drain. */
export async function writeParts(out: Writable, parts: readonly Buffer[]): Promise<void> {
  let chunk: Buffer[] = [];
  let size = 0;
  for (const part of parts) {
    if (out.destroyed) return;
    chunk.push(part);
    size += part.length;
    if (size >= CHUNK_BYTES) {
      const more = out.write(Buffer.concat(chunk, size));
      chunk = [];
      size = 0;
      if (!more) await drained(out);
    }
  }
  out.end(chunk.length === 0 ? undefined : Buffer.concat(chunk, size));
}

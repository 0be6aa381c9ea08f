// One tenant watch served from the cache: the events of its selection written to its client as the cache hands them
// over, bookmarks at the apiserver's cadence, and its end (timeout, relist, or a client that stopped reading).
// Never buffers without bound: a watcher whose client does not read is closed, as the apiserver closes unresponsive
// watchers, and never holds anything back from the others.
import type { Writable } from 'node:stream';
import type { TenantId } from '../convert/prefix.ts';
import { log } from '../log.ts';
import type { RewriteCounters } from '../metrics/metrics.ts';
import { addedBytes, departureFrame, eventBytes, type CacheEncoding } from './encodings.ts';
import { departureLine, type CacheEvent } from './cached-object.ts';
import type { ResourceCache } from './resource-cache.ts';
import type { CacheListener } from './watcher-fanout.ts';
import { selects, type Selection } from './selection.ts';

/** What every watcher of the cache shares: its limits and where it reports. */
export interface WatcherPolicy {
  /** Bytes a watcher's client may leave unread before it is closed. */
  readonly maxUnreadBytes: number;
  /** A watcher is closed as slow: counted per resource. */
  closedSlow(cache: ResourceCache): void;
  /** The watcher ended, however: it leaves the cache's bookkeeping. */
  ended(watcher: CacheWatcher): void;
}

/**
 * What a watcher of `selection` in `encoding` receives for `event` (a JSON line or a protobuf frame), or null: selected
 * neither before nor after the change. Throws when the object cannot be written in protobuf (protobuf/encode.ts).
 */
export function lineFor(selection: Selection, event: CacheEvent, encoding: CacheEncoding = 'json'): Buffer | null {
  const selected = selects(selection, event.object);
  if (event.type !== 'MODIFIED') return selected ? eventBytes(event, encoding) : null;
  const wasSelected = selects(selection, event.previous!);
  // A change that moves an object into or out of the selection is, to this watcher, its arrival or departure.
  if (selected) return wasSelected ? eventBytes(event, encoding) : addedBytes(event.object, encoding);
  if (!wasSelected) return null;
  return encoding === 'json' ? departureLine(event) : departureFrame(event, departureLine(event));
}

export class CacheWatcher implements CacheListener, RewriteCounters {
  readonly tenant: TenantId;
  readonly namespace: string | null;
  readonly cache: ResourceCache;
  readonly #selection: Selection;
  readonly #out: Writable;
  readonly #policy: WatcherPolicy;
  /** JSON lines or protobuf frames, as its client asked. */
  readonly encoding: CacheEncoding;
  /** Events at or before this resourceVersion are not this watcher's (it asked to start after it). */
  #after: number;
  /** performance.now() when it ends (timeoutSeconds), and when its next bookmark is due (Infinity: none asked). */
  readonly deadline: number;
  nextBookmarkAt: number;
  /** What it sent (the metrics' and the request log's counters; conversion happened once, at ingest). */
  eventsOut = 0;
  bytesOut = 0;
  /** Bytes beyond the policy's bound its client may leave unread: its initial state, which it is still reading. */
  initialBytes = 0;
  /** Told when the watch ends (the metrics' count of active watches); null: nobody. */
  onEnd: (() => void) | null = null;
  #ended = false;

  constructor(
    cache: ResourceCache,
    tenant: TenantId,
    selection: Selection,
    out: Writable,
    policy: WatcherPolicy,
    after: number,
    deadline: number,
    nextBookmarkAt: number,
    encoding: CacheEncoding = 'json',
  ) {
    this.encoding = encoding;
    this.cache = cache;
    this.tenant = tenant;
    this.namespace = selection.namespace;
    this.#selection = selection;
    this.#out = out;
    this.#policy = policy;
    this.#after = after;
    this.deadline = deadline;
    this.nextBookmarkAt = nextBookmarkAt;
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** The newest resourceVersion this watcher has been given or asked to start after: no bookmark may go behind it. */
  get resourceVersion(): number {
    return this.#after;
  }

  /** Bytes of tenants' views it carried (each converted once, at ingest, for every watcher). */
  get bytesIn(): number {
    return this.bytesOut;
  }

  /** No time in a rewriter: the cache converted each event once, at ingest. */
  get scanSeconds(): number {
    return 0;
  }

  deliver(event: CacheEvent): void {
    if (this.#ended || event.resourceVersion <= this.#after) return;
    let line: Buffer | null;
    try {
      line = lineFor(this.#selection, event, this.encoding);
    } catch (error) {
      // An object the protobuf encoder cannot write (a field its schema lacks): the watch ends, the client resumes.
      log.warn('the watch cache could not encode an event in protobuf: the watch ends', { resource: this.cache.kind, error: (error as Error).message });
      this.end();
      return;
    }
    if (line === null) return;
    this.#after = event.resourceVersion;
    this.cache.stats.deliveries++;
    this.eventsOut++;
    this.write(line);
  }

  /** Writes to the client, unless it has left too much unread: then the watch is closed. */
  write(bytes: Buffer): void {
    if (this.#ended) return;
    const out = this.#out;
    if (out.destroyed) return;
    if (out.writableLength > this.#policy.maxUnreadBytes + this.initialBytes) {
      this.#policy.closedSlow(this.cache);
      this.#close(true);
      return;
    }
    this.bytesOut += bytes.length;
    out.write(bytes);
  }

  /** Ends the response normally (timeout, relist, shutdown): the client resumes from what it saw. */
  end(): void {
    this.#close(false);
  }

  /** The client went away: nothing more to write. */
  closed(): void {
    this.#leave();
  }

  #close(abort: boolean): void {
    if (!this.#leave()) return;
    const out = this.#out;
    if (out.destroyed) return;
    // A client that does not read would hold what is queued for it for ever: its stream is reset, not drained.
    if (abort) out.destroy();
    else out.end();
  }

  /** Leaves the cache and its bookkeeping, once; false when it had already. */
  #leave(): boolean {
    if (this.#ended) return false;
    this.#ended = true;
    this.cache.removeListener(this);
    this.#policy.ended(this);
    this.onEnd?.();
    return true;
  }
}

// One upstream resource kept whole by one list-then-watch with tenantgate's own identity: every object converted once,
// at ingest, into its tenant's view (the bytes a tenant watcher receives), indexed by tenant → namespace → name, with a
// bounded history of events ordered by resourceVersion, and the tenants' watchers fed from it.
// Never keeps an object outside a tenant's prefix, never hands a watcher another tenant's object, and never lets a
// watcher miss an event silently: when the cache cannot continue without a gap it ends its watchers.
import type { ClientHttp2Stream, IncomingHttpHeaders } from 'node:http2';
import type { KindRow } from '../convert/kinds.ts';
import { PREFIX_LENGTH, TENANT_LABEL, type TenantId } from '../convert/prefix.ts';
import { objectToTenant, type ConvertContext } from '../convert/rules/index.ts';
import { log } from '../log.ts';
import { upstreamJson } from '../upstream/client.ts';
import type { UpstreamPool } from '../upstream/pool.ts';
import { fieldsOf, type NamespaceMembership, type ObjectFields, type Selectable } from './selection.ts';

/** A resource the cache keeps: its upstream group, version and plural, and its row in the table of kinds. */
export interface CachedResourceId {
  /** The upstream's API group ('' for core; a tenant custom resource's carries the tenant's prefix, its row's not). */
  readonly group: string;
  readonly version: string;
  readonly resource: string;
  readonly row: KindRow;
}

export type CacheEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** One object as its tenant sees it, never changed once made (a change makes a new one). */
export class CachedObject implements Selectable {
  readonly tenant: TenantId;
  /** The tenant's namespace ('' for cluster-scoped kinds). */
  readonly namespace: string;
  readonly name: string;
  readonly resourceVersion: number;
  readonly labels: Readonly<Record<string, string>> | undefined;
  readonly fields: ObjectFields;
  /** The tenant's view, JSON. */
  readonly bytes: Buffer;
  /** The tenant's view in protobuf (`k8s\0` + Unknown), made the first time a protobuf client needs it (encodings.ts). */
  protobuf: Buffer | undefined = undefined;
  /** Where the object's message starts in `protobuf` (a list item is the message alone). */
  protobufMessageStart = 0;
  /** The stats that count its bytes while the cache keeps it (a protobuf made later adds to them); null once it left. */
  countedIn: ResourceCacheStats | null = null;

  constructor(
    tenant: TenantId,
    namespace: string,
    name: string,
    resourceVersion: number,
    labels: Record<string, string> | undefined,
    fields: ObjectFields,
    bytes: Buffer,
  ) {
    this.tenant = tenant;
    this.namespace = namespace;
    this.name = name;
    this.resourceVersion = resourceVersion;
    this.labels = labels;
    this.fields = fields;
    this.bytes = bytes;
  }
}

/** One change, with the watch event line every watcher of its tenant that selects it receives, made once. */
export interface CacheEvent {
  readonly type: CacheEventType;
  readonly resourceVersion: number;
  /** The object after the change (for DELETED, as it was deleted). */
  readonly object: CachedObject;
  /** The object before a MODIFIED (a selector may have selected it and no longer does, or the other way round). */
  readonly previous: CachedObject | null;
  /** `{"type":…,"object":…}\n`; object.bytes is a view into it. */
  readonly line: Buffer;
  /** For watchers whose selection it leaves: DELETED with the object as it was, at this resourceVersion (made once, when first needed). */
  departure?: Buffer;
  /** The protobuf watch frames of `line` and `departure`, made once, when a protobuf watcher first needs them (encodings.ts). */
  frame?: Buffer;
  departureFrame?: Buffer;
}

/**
 * The DELETED a watcher receives when a change takes an object out of its selection: the object before the change,
 * at the change's resourceVersion, as the apiserver's cacher sends it.
 */
export function departureLine(event: CacheEvent): Buffer {
  if (event.departure === undefined) {
    const before = JSON.parse(event.previous!.bytes.toString('utf8'));
    before.metadata.resourceVersion = String(event.resourceVersion);
    event.departure = eventLine('DELETED', Buffer.from(JSON.stringify(before)));
  }
  return event.departure;
}

/** What a watcher of the cache is told. */
export interface CacheListener {
  readonly tenant: TenantId;
  /** The tenant namespace it watches; null: all of them. */
  readonly namespace: string | null;
  deliver(event: CacheEvent): void;
  /** The cache relisted (its history restarted) or stopped: the watch ends, its client resumes or relists. */
  end(): void;
}

/** Where a tenant's watchers are found: those of every namespace, and those of each namespace. */
class TenantListeners {
  readonly everywhere = new Set<CacheListener>();
  readonly byNamespace = new Map<string, Set<CacheListener>>();
  count = 0;
}

export interface ResourceCacheOptions {
  /** The upstream no longer serves the resource (404: its CRD was deleted): the cache has stopped. */
  onGone?: () => void;
  /** Events remembered for watches that resume from a resourceVersion (default 10,000). */
  historyCapacity?: number;
  /** Longest wait between attempts while the upstream is away (default 5 s). */
  maxBackoffMs?: number;
  /**
   * How long the upstream watch may stay silent before the cache doubts its connection (default 75 s: the apiserver
   * bookmarks a watch every minute): it pings the connection, drops it when no answer comes, and watches anew.
   */
  upstreamIdleMs?: number;
}

/** What a resumed watch is given: the events after its resourceVersion, or the oldest it could have resumed from. */
export type EventsSince = { events: CacheEvent[] } | { expiredBefore: number };

export interface ResourceCacheStats {
  objects: number;
  /** Of the tenants' views kept: JSON, and protobuf once a protobuf client had one made. */
  bytes: number;
  eventsIn: number;
  deliveries: number;
  slowWatchersClosed: number;
  relists: number;
}

const PAGE_SIZE = 500;
const WATCH_TIMEOUT_SECONDS = 300;
const FIRST_BACKOFF_MS = 200;
const TENANT_PREFIXED = /^[a-z0-9]{6}-/;

const LINE_HEAD: Record<CacheEventType, Buffer> = {
  ADDED: Buffer.from('{"type":"ADDED","object":'),
  MODIFIED: Buffer.from('{"type":"MODIFIED","object":'),
  DELETED: Buffer.from('{"type":"DELETED","object":'),
};
export const LINE_TAIL = Buffer.from('}\n');

/** The watch event line of `type` for an object's bytes (a copy: lines are made once per event, or per watch start). */
export function eventLine(type: CacheEventType, bytes: Buffer): Buffer {
  return Buffer.concat([LINE_HEAD[type], bytes, LINE_TAIL]);
}

/** How long a tenant namespace deleted lately still counts as its tenant's (its objects' last events come after). */
const DEPARTED_NAMESPACE_MS = 60_000;
/** How long an event in a namespace not seen yet waits for it before watchers across namespaces are denied it. */
const UNKNOWN_NAMESPACE_WAIT_MS = 5_000;
const DEFERRED_CHECK_MS = 20;
/** How long a connection suspected dead has to answer a ping (client-go gives 15 s). */
const UPSTREAM_PING_TIMEOUT_MS = 15_000;

export class ResourceCache implements NamespaceMembership {
  readonly id: CachedResourceId;
  readonly #pool: UpstreamPool;
  readonly #convertOf: (tenant: TenantId) => ConvertContext;
  readonly #path: string;
  readonly #apiVersion: string;
  /** The kind, from the table of kinds or (a custom resource whose kind discovery did not tell) the upstream's list. */
  #kind: string;
  readonly #onGone: (() => void) | undefined;
  readonly #capacity: number;
  readonly #maxBackoffMs: number;
  readonly #upstreamIdleMs: number;

  /** tenant → tenant namespace ('' for cluster-scoped) → name → object. */
  readonly #objects = new Map<TenantId, Map<string, Map<string, CachedObject>>>();
  readonly #listeners = new Map<TenantId, TenantListeners>();
  /** The history, a ring: events [#start, #end) live at index % capacity. */
  readonly #history: (CacheEvent | undefined)[];
  #start = 0;
  #end = 0;
  /** The resourceVersion of the last list; resumes from before it are too old while no event has left the history. */
  #listResourceVersion = 0;
  #removedSinceList = false;
  /** The newest resourceVersion seen (an event or an upstream bookmark). */
  #resourceVersion = 0;
  #ready = false;
  #readyWaiters: (() => void)[] = [];
  #freshnessWaiters: { resourceVersion: number; done: () => void }[] = [];
  #stopped = false;
  #stream: ClientHttp2Stream | undefined;
  #timer: NodeJS.Timeout | undefined;
  #backoffMs = FIRST_BACKOFF_MS;
  /** Cluster-scoped: upstream names with a tenant's prefix that are no tenant's (not labelled for it). */
  readonly #foreign = new Set<string>();
  /** Cluster-scoped: tenant objects deleted lately, by upstream name, with when. */
  readonly #departed = new Map<string, number>();
  /** Namespaced: who knows the tenants' namespaces (the namespaces cache); null: reads across namespaces go upstream. */
  namespaces: NamespaceMembership | null = null;
  /** Events for watchers across namespaces waiting to learn whether their namespace is the tenant's, in order. */
  readonly #deferred: { event: CacheEvent; since: number }[] = [];
  #deferredTimer: NodeJS.Timeout | undefined;
  readonly stats: ResourceCacheStats = { objects: 0, bytes: 0, eventsIn: 0, deliveries: 0, slowWatchersClosed: 0, relists: 0 };

  constructor(id: CachedResourceId, pool: UpstreamPool, convertOf: (tenant: TenantId) => ConvertContext, options: ResourceCacheOptions = {}) {
    this.id = id;
    this.#pool = pool;
    this.#convertOf = convertOf;
    this.#path = `${id.group === '' ? '/api' : `/apis/${id.group}`}/${id.version}/${id.resource}`;
    this.#apiVersion = id.group === '' ? id.version : `${id.group}/${id.version}`;
    this.#kind = id.row.kind;
    this.#onGone = options.onGone;
    this.#capacity = options.historyCapacity ?? 10_000;
    this.#maxBackoffMs = options.maxBackoffMs ?? 5_000;
    this.#upstreamIdleMs = options.upstreamIdleMs ?? 75_000;
    this.#history = new Array(this.#capacity);
  }

  /** `resource` or `resource.group` (the metrics' label); tenants' custom resources all count under `_custom`. */
  get label(): string {
    if (this.id.row.rule === 'custom-resource') return '_custom';
    return this.id.group === '' ? this.id.resource : `${this.id.resource}.${this.id.group}`;
  }

  /** The kind of its objects. */
  get kind(): string {
    return this.#kind;
  }

  /** The apiVersion its objects have in their tenant's view (a custom resource's group without the prefix). */
  get tenantApiVersion(): string {
    const group = this.id.row.group;
    return group === '' ? this.id.version : `${group}/${this.id.version}`;
  }

  /** The upstream collection of its objects in one upstream namespace (null: all of them). */
  collectionPath(upstreamNamespace: string | null): string {
    if (upstreamNamespace === null) return this.#path;
    const base = this.#path.slice(0, this.#path.length - this.id.resource.length);
    return `${base}namespaces/${encodeURIComponent(upstreamNamespace)}/${this.id.resource}`;
  }

  /** The upstream collection it keeps, e.g. /api/v1/pods. */
  get path(): string {
    return this.#path;
  }

  /** True once the first list is in: the cache answers from then on. */
  get ready(): boolean {
    return this.#ready && !this.#stopped;
  }

  /** The newest resourceVersion the cache has seen. */
  get resourceVersion(): number {
    return this.#resourceVersion;
  }

  start(): void {
    void this.#relistThenWatch();
  }

  /** Resolves once the first list is in (or the cache stopped). */
  whenReady(): Promise<void> {
    if (this.#ready || this.#stopped) return Promise.resolve();
    return new Promise((resolve) => this.#readyWaiters.push(resolve));
  }

  /** Resolves true once the cache has seen `resourceVersion`, false after `withinMs` without it. */
  waitUntilFresh(resourceVersion: number, withinMs: number): Promise<boolean> {
    if (this.#resourceVersion >= resourceVersion) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter = { resourceVersion, done: () => {} };
      const timer = setTimeout(() => {
        this.#freshnessWaiters = this.#freshnessWaiters.filter((w) => w !== waiter);
        resolve(false);
      }, withinMs);
      waiter.done = () => {
        clearTimeout(timer);
        resolve(true);
      };
      this.#freshnessWaiters.push(waiter);
    });
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (this.#deferredTimer !== undefined) clearTimeout(this.#deferredTimer);
    this.#stream?.close();
    this.#stream = undefined;
    for (const waiter of this.#readyWaiters.splice(0)) waiter();
    this.#endAllListeners();
  }

  // ---- reading

  /** For the namespaces cache: whether the tenant's namespace `namespace` (tenant name) is the tenant's. */
  membership(tenant: TenantId, namespace: string): 'member' | 'foreign' | 'unknown' {
    if (this.#objects.get(tenant)?.get('')?.has(namespace) === true) return 'member';
    const upstream = `${tenant}-${namespace}`;
    if (this.#foreign.has(upstream)) return 'foreign';
    const departed = this.#departed.get(upstream);
    if (departed !== undefined) {
      if (performance.now() - departed < DEPARTED_NAMESPACE_MS) return 'member';
      this.#departed.delete(upstream);
    }
    return 'unknown';
  }

  /** The tenant's objects in `namespace` (null: all), in etcd's key order. */
  objectsOf(tenant: TenantId, namespace: string | null): CachedObject[] {
    const namespaces = this.#objects.get(tenant);
    if (namespaces === undefined) return [];
    if (namespace !== null) {
      const named = namespaces.get(namespace);
      return named === undefined ? [] : [...named.values()].sort(byName);
    }
    // etcd's order is the keys' (`<namespace>/<name>`): namespaces compared with their slash, then names.
    const objects: CachedObject[] = [];
    for (const key of [...namespaces.keys()].map((n) => n + '/').sort()) {
      for (const object of [...namespaces.get(key.slice(0, -1))!.values()].sort(byName)) objects.push(object);
    }
    return objects;
  }

  /** The tenant's events after `resourceVersion`, or the resourceVersion it is too old against (410 Expired). */
  eventsSince(tenant: TenantId, resourceVersion: number): EventsSince {
    const size = this.#end - this.#start;
    const oldest = !this.#removedSinceList
      ? this.#listResourceVersion + 1
      : size > 0
        ? this.#history[this.#start % this.#capacity]!.resourceVersion
        : this.#listResourceVersion + 1;
    if (resourceVersion < oldest - 1) return { expiredBefore: oldest - 1 };
    // Binary search for the first event after resourceVersion, then the tenant's from there.
    let low = this.#start;
    let high = this.#end;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.#history[middle % this.#capacity]!.resourceVersion > resourceVersion) high = middle;
      else low = middle + 1;
    }
    const events: CacheEvent[] = [];
    for (let i = low; i < this.#end; i++) {
      const event = this.#history[i % this.#capacity]!;
      if (event.object.tenant === tenant) events.push(event);
    }
    return { events };
  }

  // ---- watchers

  /** Watchers now, per tenant (for the metrics). */
  *watchersPerTenant(): Iterable<[TenantId, number]> {
    for (const [tenant, listeners] of this.#listeners) yield [tenant, listeners.count];
  }

  addListener(listener: CacheListener): void {
    let listeners = this.#listeners.get(listener.tenant);
    if (listeners === undefined) this.#listeners.set(listener.tenant, (listeners = new TenantListeners()));
    if (listener.namespace === null) listeners.everywhere.add(listener);
    else {
      let set = listeners.byNamespace.get(listener.namespace);
      if (set === undefined) listeners.byNamespace.set(listener.namespace, (set = new Set()));
      set.add(listener);
    }
    listeners.count++;
  }

  removeListener(listener: CacheListener): void {
    const listeners = this.#listeners.get(listener.tenant);
    if (listeners === undefined) return;
    let removed: boolean;
    if (listener.namespace === null) removed = listeners.everywhere.delete(listener);
    else {
      const set = listeners.byNamespace.get(listener.namespace);
      removed = set?.delete(listener) ?? false;
      if (set !== undefined && set.size === 0) listeners.byNamespace.delete(listener.namespace);
    }
    if (!removed) return;
    listeners.count--;
    if (listeners.count === 0) this.#listeners.delete(listener.tenant);
  }

  #endAllListeners(): void {
    const all: CacheListener[] = [];
    for (const listeners of this.#listeners.values()) {
      for (const listener of listeners.everywhere) all.push(listener);
      for (const set of listeners.byNamespace.values()) for (const listener of set) all.push(listener);
    }
    this.#listeners.clear();
    for (const listener of all) listener.end();
  }

  // ---- ingest

  async #relistThenWatch(): Promise<void> {
    while (!this.#stopped) {
      try {
        await this.#relist();
      } catch (error) {
        if (this.#stopped) return;
        if (error instanceof ResourceGone) {
          this.stop();
          this.#onGone?.();
          return;
        }
        log.warn('the watch cache could not list the upstream', { resource: this.#path, error: (error as Error).message });
        await this.#backoff();
        continue;
      }
      // Watches resume from the newest resourceVersion seen until the upstream says it is too old (410): relist then.
      for (;;) {
        if (this.#stopped) return;
        const outcome = await this.#watchOnce();
        if (outcome === 'expired') break;
        if (outcome === 'failed') await this.#backoff();
        else this.#backoffMs = FIRST_BACKOFF_MS;
      }
    }
  }

  #backoff(): Promise<void> {
    const wait = this.#backoffMs;
    this.#backoffMs = Math.min(this.#backoffMs * 2, this.#maxBackoffMs);
    return new Promise((resolve) => {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        resolve();
      }, wait);
    });
  }

  /**
   * A consistent list of the upstream collection at `path` (the resource, or its objects in one upstream namespace),
   * page by page from one snapshot, each item as its tenant sees it; resolves to the snapshot's resourceVersion.
   */
  async listConsistently(path: string, onObject: (object: CachedObject) => void, query = '', onForeign?: (upstreamName: string) => void): Promise<number> {
    let listResourceVersion = 0;
    let next = '';
    do {
      const page = `${path}?${query === '' ? '' : `${query}&`}limit=${PAGE_SIZE}${next === '' ? '' : `&continue=${encodeURIComponent(next)}`}`;
      const answer = await upstreamJson(this.#pool, 'GET', page);
      if (answer.status === 404) throw new ResourceGone();
      if (answer.status !== 200) throw new Error(`listing ${path}: the upstream answered ${answer.status}`);
      if (next === '') listResourceVersion = Number(answer.body?.metadata?.resourceVersion ?? 0);
      const listKind = answer.body?.kind;
      if (this.#kind === '' && typeof listKind === 'string' && listKind.endsWith('List')) this.#kind = listKind.slice(0, -'List'.length);
      for (const item of (answer.body?.items ?? []) as any[]) {
        // A list's items leave their kind and apiVersion to the list; a watch event's object needs them, first.
        const object = this.#toCached({ kind: this.#kind, apiVersion: this.#apiVersion, ...item });
        if (object !== null) onObject(object);
        else if (onForeign !== undefined && this.#locate(item) !== null) onForeign(item.metadata.name);
      }
      next = answer.body?.metadata?.continue ?? '';
    } while (next !== '' && !this.#stopped);
    return listResourceVersion;
  }

  /** The whole resource, page by page from one consistent snapshot; replaces what the cache held. */
  async #relist(): Promise<void> {
    const objects = new Map<TenantId, Map<string, Map<string, CachedObject>>>();
    const foreign = new Set<string>();
    let count = 0;
    let bytes = 0;
    const listResourceVersion = await this.listConsistently(
      this.#path,
      (object) => {
        placeIn(objects, object);
        count++;
        bytes += object.bytes.length;
        object.countedIn = this.stats;
      },
      '',
      this.id.row.scope === 'Cluster' ? (name) => foreign.add(name) : undefined,
    );
    if (this.#stopped) return;
    this.#foreign.clear();
    for (const name of foreign) this.#foreign.add(name);
    this.#deferred.length = 0;
    const firstList = !this.#ready;
    if (!firstList) this.stats.relists++;
    // Watchers of the old history cannot go on without a gap: they end, and their clients resume or relist.
    this.#endAllListeners();
    for (const namespaces of this.#objects.values()) for (const named of namespaces.values()) for (const object of named.values()) object.countedIn = null;
    this.#objects.clear();
    for (const [tenant, namespaces] of objects) this.#objects.set(tenant, namespaces);
    this.#history.fill(undefined);
    this.#start = this.#end = 0;
    this.#listResourceVersion = listResourceVersion;
    this.#removedSinceList = false;
    this.#advanceTo(listResourceVersion);
    this.stats.objects = count;
    this.stats.bytes = bytes;
    if (firstList) {
      this.#ready = true;
      for (const waiter of this.#readyWaiters.splice(0)) waiter();
    }
  }

  /** One upstream watch from the newest resourceVersion, until it ends: resume ('ended'), relist ('expired'), or retry. */
  #watchOnce(): Promise<'ended' | 'expired' | 'failed'> {
    return new Promise((resolve) => {
      const query = `watch=1&allowWatchBookmarks=true&timeoutSeconds=${WATCH_TIMEOUT_SECONDS}&resourceVersion=${this.#resourceVersion}`;
      const headers: Record<string, string> = { accept: 'application/json' };
      if (this.#pool.authorization !== undefined) headers.authorization = this.#pool.authorization;
      let stream: ClientHttp2Stream;
      try {
        stream = this.#pool.request('GET', `${this.#path}?${query}`, headers, true);
      } catch (error) {
        log.warn('the watch cache could not watch the upstream', { resource: this.#path, error: (error as Error).message });
        resolve('failed');
        return;
      }
      this.#stream = stream;
      let status = 0;
      let expired = false;
      let pending: Buffer | null = null;
      let settled = false;
      const settle = (outcome: 'ended' | 'expired' | 'failed') => {
        if (settled) return;
        settled = true;
        if (this.#stream === stream) this.#stream = undefined;
        resolve(expired ? 'expired' : outcome);
      };
      stream.on('response', (h: IncomingHttpHeaders) => {
        status = Number(h[':status']);
        if (status === 410) expired = true;
      });
      stream.on('data', (chunk: Buffer) => {
        if (status !== 200) return;
        const data = pending === null ? chunk : Buffer.concat([pending, chunk]);
        let from = 0;
        let newline: number;
        while ((newline = data.indexOf(10, from)) !== -1) {
          if (newline > from) this.#ingestLine(data.subarray(from, newline), () => (expired = true));
          from = newline + 1;
        }
        pending = from === data.length ? null : Buffer.from(data.subarray(from));
      });
      // A connection gone silent (a host lost without a reset, a NAT that forgot the flow) tells nobody: after longer
      // than the apiserver leaves between bookmarks, the connection must answer a ping or go, and the watch resumes.
      stream.setTimeout(this.#upstreamIdleMs, () => {
        const session = stream.session;
        if (session !== undefined && session !== null && !session.destroyed) {
          const silent = setTimeout(() => session.destroy(new Error('the upstream connection went silent')), UPSTREAM_PING_TIMEOUT_MS);
          silent.unref();
          try {
            session.ping((error) => {
              clearTimeout(silent);
              if (error !== null) session.destroy(error);
            });
          } catch {
            clearTimeout(silent);
            session.destroy();
          }
        }
        stream.close();
      });
      stream.on('end', () => settle(status === 200 ? 'ended' : 'failed'));
      stream.on('error', () => settle('failed'));
      stream.on('close', () => settle(status === 200 ? 'ended' : 'failed'));
    });
  }

  #ingestLine(line: Buffer, expired: () => void): void {
    let event: { type?: string; object?: any };
    try {
      event = JSON.parse(line.toString('utf8'));
    } catch {
      log.warn('the watch cache skipped an upstream watch line that is not JSON', { resource: this.#path });
      return;
    }
    const object = event.object;
    if (object === undefined || object === null) return;
    if (event.type === 'ERROR') {
      if (object.code === 410) expired();
      return;
    }
    const resourceVersion = Number(object.metadata?.resourceVersion);
    if (!Number.isSafeInteger(resourceVersion)) return;
    if (event.type === 'BOOKMARK') {
      this.#advanceTo(resourceVersion);
      return;
    }
    if (event.type !== 'ADDED' && event.type !== 'MODIFIED' && event.type !== 'DELETED') return;
    this.stats.eventsIn++;
    this.#apply(event.type, object, resourceVersion);
    this.#advanceTo(resourceVersion);
  }

  #apply(type: CacheEventType, upstream: any, resourceVersion: number): void {
    const located = this.#locate(upstream);
    if (located === null) return;
    const namespaces = this.#objects.get(located.tenant);
    const previous = namespaces?.get(located.namespace)?.get(located.name) ?? null;
    const kept = type === 'DELETED' ? null : this.#viewOf(upstream, located);
    if (this.id.row.scope === 'Cluster') this.#follow(upstream.metadata.name, type, kept !== null, previous !== null);
    let eventType: CacheEventType;
    let view: TenantView;
    if (kept === null) {
      // Deleted, or no longer the tenant's by its view (the defensive check): gone for its tenant either way.
      if (previous === null) return;
      eventType = 'DELETED';
      view = (type === 'DELETED' ? this.#viewOf(upstream, located) : null) ?? { ...previous, json: previous.bytes.toString('utf8') };
    } else {
      eventType = previous === null ? 'ADDED' : 'MODIFIED';
      view = kept;
    }
    // What the cache keeps is a view into the event's line: one copy of the bytes per event, of its own size.
    const line = lastingBytes(`{"type":"${eventType}","object":${view.json}}\n`);
    const shared = new CachedObject(
      view.tenant,
      view.namespace,
      view.name,
      resourceVersion,
      view.labels,
      view.fields,
      line.subarray(LINE_HEAD[eventType].length, line.length - LINE_TAIL.length),
    );
    if (kept === null) this.#remove(previous!);
    else this.#place(shared, previous);
    const cacheEvent: CacheEvent = { type: eventType, resourceVersion, object: shared, previous: eventType === 'MODIFIED' ? previous : null, line };
    this.#remember(cacheEvent);
    this.#dispatch(cacheEvent);
  }

  /** Cluster-scoped: who, with a tenant's prefix, is not a tenant's, and which tenant objects went lately. */
  #follow(upstreamName: string, type: CacheEventType, kept: boolean, wasKept: boolean): void {
    if (kept) {
      this.#foreign.delete(upstreamName);
      this.#departed.delete(upstreamName);
    } else if (type === 'DELETED') {
      this.#foreign.delete(upstreamName);
      if (wasKept) this.#departed.set(upstreamName, performance.now());
    } else {
      this.#foreign.add(upstreamName);
    }
  }

  /** Which tenant an upstream object would belong to, by its prefix; null when it is no tenant's. */
  #locate(upstream: any): { tenant: TenantId; namespace: string; name: string } | null {
    const metadata = upstream?.metadata;
    if (typeof metadata?.name !== 'string') return null;
    if (this.id.row.scope === 'Namespaced') {
      const namespace = metadata.namespace;
      if (typeof namespace !== 'string' || !TENANT_PREFIXED.test(namespace)) return null;
      return { tenant: namespace.slice(0, PREFIX_LENGTH - 1), namespace: namespace.slice(PREFIX_LENGTH), name: metadata.name };
    }
    if (!TENANT_PREFIXED.test(metadata.name)) return null;
    return { tenant: metadata.name.slice(0, PREFIX_LENGTH - 1), namespace: '', name: metadata.name.slice(PREFIX_LENGTH) };
  }

  /** The tenant's view of an upstream object, or null when it is no tenant's (the conversion's own check decides). */
  #viewOf(upstream: any, located = this.#locate(upstream)): TenantView | null {
    if (located === null) return null;
    // A cluster-scoped object is a tenant's when labelled for it, as the upstream path's lists select them: a prefix
    // alone is no proof (an operator's namespace `calico-system` beside a tenant `calico`).
    if (this.id.row.scope === 'Cluster' && upstream.metadata.labels?.[TENANT_LABEL] !== located.tenant) return null;
    const view = objectToTenant(upstream, this.#convertOf(located.tenant), this.id.row) as any;
    if (view === null) return null;
    // The view names the object as the tenant does; anything else would file it under the wrong key.
    if (view.metadata?.name !== located.name || (located.namespace !== '' && view.metadata?.namespace !== located.namespace)) return null;
    return { ...located, labels: view.metadata?.labels, fields: fieldsOf(this.id.group, this.id.resource, view), json: JSON.stringify(view) };
  }

  #toCached(upstream: any): CachedObject | null {
    const view = this.#viewOf(upstream);
    if (view === null) return null;
    return new CachedObject(
      view.tenant,
      view.namespace,
      view.name,
      Number(upstream.metadata.resourceVersion),
      view.labels,
      view.fields,
      lastingBytes(view.json),
    );
  }

  #place(object: CachedObject, replaced: CachedObject | null): void {
    placeIn(this.#objects, object);
    object.countedIn = this.stats;
    this.stats.bytes += object.bytes.length;
    if (replaced === null) this.stats.objects++;
    else this.#uncount(replaced);
  }

  /** An object the cache no longer keeps: its bytes, JSON and any protobuf made, leave the count. */
  #uncount(object: CachedObject): void {
    this.stats.bytes -= object.bytes.length + (object.protobuf?.length ?? 0);
    object.countedIn = null;
  }

  #remove(object: CachedObject): void {
    const namespaces = this.#objects.get(object.tenant);
    const named = namespaces?.get(object.namespace);
    if (named === undefined || !named.delete(object.name)) return;
    if (named.size === 0) namespaces!.delete(object.namespace);
    if (namespaces!.size === 0) this.#objects.delete(object.tenant);
    this.stats.objects--;
    this.#uncount(object);
  }

  #remember(event: CacheEvent): void {
    if (this.#end - this.#start === this.#capacity) {
      this.#history[this.#start % this.#capacity] = undefined;
      this.#start++;
      this.#removedSinceList = true;
    }
    this.#history[this.#end % this.#capacity] = event;
    this.#end++;
  }

  #dispatch(event: CacheEvent): void {
    const listeners = this.#listeners.get(event.object.tenant);
    if (this.#deferred.length > 0 || (listeners !== undefined && listeners.everywhere.size > 0 && this.#membershipOf(event) === 'unknown')) {
      // Watchers across namespaces learn of it once its namespace is known; behind it, in order, every later event.
      this.#deferred.push({ event, since: performance.now() });
      this.#deferredTimer ??= setTimeout(() => this.#flushDeferred(), DEFERRED_CHECK_MS);
    } else if (listeners !== undefined) {
      for (const listener of listeners.everywhere) listener.deliver(event);
    }
    // Watchers of its namespace were authorized for it by the upstream's own RBAC: at once.
    const inNamespace = listeners?.byNamespace.get(event.object.namespace);
    if (inNamespace !== undefined) for (const listener of inNamespace) listener.deliver(event);
  }

  /** Whether the namespace of a namespaced event is its tenant's; 'member' for cluster-scoped ones (checked at ingest). */
  #membershipOf(event: CacheEvent): 'member' | 'foreign' | 'unknown' {
    if (this.id.row.scope !== 'Namespaced') return 'member';
    return this.namespaces?.membership(event.object.tenant, event.object.namespace) ?? 'foreign';
  }

  #flushDeferred(): void {
    this.#deferredTimer = undefined;
    const now = performance.now();
    while (this.#deferred.length > 0) {
      const { event, since } = this.#deferred[0]!;
      if (this.#membershipOf(event) === 'unknown' && now - since < UNKNOWN_NAMESPACE_WAIT_MS) break;
      this.#deferred.shift();
      // (A namespace never seen in time is denied: each watcher's selection asks again, and says no.)
      const listeners = this.#listeners.get(event.object.tenant);
      if (listeners !== undefined) for (const listener of listeners.everywhere) listener.deliver(event);
    }
    if (this.#deferred.length > 0 && !this.#stopped) this.#deferredTimer = setTimeout(() => this.#flushDeferred(), DEFERRED_CHECK_MS);
  }

  #advanceTo(resourceVersion: number): void {
    if (resourceVersion <= this.#resourceVersion) return;
    this.#resourceVersion = resourceVersion;
    if (this.#freshnessWaiters.length === 0) return;
    const waiting = this.#freshnessWaiters;
    this.#freshnessWaiters = [];
    for (const waiter of waiting) {
      if (waiter.resourceVersion <= resourceVersion) waiter.done();
      else this.#freshnessWaiters.push(waiter);
    }
  }
}

/** An object in its tenant's view, before the cache keeps it. */
interface TenantView {
  tenant: TenantId;
  namespace: string;
  name: string;
  labels: Record<string, string> | undefined;
  fields: ObjectFields;
  json: string;
}

/**
 * Bytes the cache keeps for minutes: of their own size, not a slice of node's shared 8 KB pool, whose slab a single
 * kept slice would hold whole.
 */
function lastingBytes(text: string): Buffer {
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
  bytes.write(text, 0, 'utf8');
  return bytes;
}

/** The upstream answered 404 for the resource's list. */
class ResourceGone extends Error {}

function placeIn(objects: Map<TenantId, Map<string, Map<string, CachedObject>>>, object: CachedObject): void {
  let namespaces = objects.get(object.tenant);
  if (namespaces === undefined) objects.set(object.tenant, (namespaces = new Map()));
  let named = namespaces.get(object.namespace);
  if (named === undefined) namespaces.set(object.namespace, (named = new Map()));
  named.set(object.name, object);
}

/** By name, without making a string per comparison (a list of 5,000 makes some 60,000 of them). */
function byName(a: CachedObject, b: CachedObject): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

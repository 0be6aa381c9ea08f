// One upstream resource kept whole by one list-then-watch with tenantgate's own identity: every object converted once,
// at ingest, into its tenant's view (the bytes a tenant watcher receives). Its parts, as kube-apiserver's cacher keeps
// them: the reflector (reflector.ts: the upstream list and watch), the store and history (cache-store.ts), the fan-out
// to the tenants' watchers (watcher-fanout.ts); here, what joins them: the conversion at ingest and readiness.
// Never keeps an object outside a tenant's prefix, never hands a watcher another tenant's object, and never lets a
// watcher miss an event silently: when the cache cannot continue without a gap it ends its watchers.
import type { KindRow } from '../convert/kinds.ts';
import { PREFIX_LENGTH, TENANT_LABEL, type TenantId } from '../convert/prefix.ts';
import { objectToTenant, type ConvertContext } from '../convert/rules/index.ts';
import type { UpstreamPool } from '../upstream/pool.ts';
import { CachedObject, LINE_HEAD, LINE_TAIL, lastingBytes, type CacheEvent, type CacheEventType, type ResourceCacheStats } from './cached-object.ts';
import { CacheStore, placeIn, type EventsSince, type TenantObjects } from './cache-store.ts';
import { Reflector } from './reflector.ts';
import { fieldsOf, type NamespaceMembership, type ObjectFields } from './selection.ts';
import { WatcherFanout, type CacheListener } from './watcher-fanout.ts';

/** A resource the cache keeps: its upstream group, version and plural, and its row in the table of kinds. */
export interface CachedResourceId {
  /** The upstream's API group ('' for core; a tenant custom resource's carries the tenant's prefix, its row's not). */
  readonly group: string;
  readonly version: string;
  readonly resource: string;
  readonly row: KindRow;
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

const TENANT_PREFIXED = /^[a-z0-9]{6}-/;

export class ResourceCache implements NamespaceMembership {
  readonly id: CachedResourceId;
  readonly #convertOf: (tenant: TenantId) => ConvertContext;
  readonly #path: string;
  readonly #apiVersion: string;
  /** The kind, from the table of kinds or (a custom resource whose kind discovery did not tell) the upstream's list. */
  #kind: string;
  readonly #onGone: (() => void) | undefined;
  readonly #reflector: Reflector;
  readonly #store: CacheStore;
  readonly #fanout: WatcherFanout;
  /** The newest resourceVersion seen (an event or an upstream bookmark). */
  #resourceVersion = 0;
  #ready = false;
  #readyWaiters: (() => void)[] = [];
  #freshnessWaiters: { resourceVersion: number; done: () => void }[] = [];
  #stopped = false;
  /** Namespaced: who knows the tenants' namespaces (the namespaces cache); null: reads across namespaces go upstream. */
  namespaces: NamespaceMembership | null = null;

  constructor(id: CachedResourceId, pool: UpstreamPool, convertOf: (tenant: TenantId) => ConvertContext, options: ResourceCacheOptions = {}) {
    this.id = id;
    this.#convertOf = convertOf;
    this.#path = `${id.group === '' ? '/api' : `/apis/${id.group}`}/${id.version}/${id.resource}`;
    this.#apiVersion = id.group === '' ? id.version : `${id.group}/${id.version}`;
    this.#kind = id.row.kind;
    this.#onGone = options.onGone;
    this.#store = new CacheStore(options.historyCapacity ?? 10_000);
    this.#fanout = new WatcherFanout((event) => this.#membershipOf(event));
    this.#reflector = new Reflector(
      pool,
      this.#path,
      {
        watchFrom: () => this.#resourceVersion,
        relist: () => this.#relist(),
        event: (type, upstream, resourceVersion) => {
          this.#store.stats.eventsIn++;
          this.#apply(type, upstream, resourceVersion);
          this.#advanceTo(resourceVersion);
        },
        bookmark: (resourceVersion) => this.#advanceTo(resourceVersion),
        gone: () => {
          this.stop();
          this.#onGone?.();
        },
      },
      { maxBackoffMs: options.maxBackoffMs, upstreamIdleMs: options.upstreamIdleMs },
    );
  }

  get stats(): ResourceCacheStats {
    return this.#store.stats;
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
    this.#reflector.start();
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
    this.#reflector.stop();
    for (const waiter of this.#readyWaiters.splice(0)) waiter();
    this.#fanout.stop();
  }

  // ---- reading

  /** For the namespaces cache: whether the tenant's namespace `namespace` (tenant name) is the tenant's. */
  membership(tenant: TenantId, namespace: string): 'member' | 'foreign' | 'unknown' {
    return this.#store.membership(tenant, namespace);
  }

  /** The tenant's objects in `namespace` (null: all), in etcd's key order. */
  objectsOf(tenant: TenantId, namespace: string | null): CachedObject[] {
    return this.#store.objectsOf(tenant, namespace);
  }

  /** The tenant's events after `resourceVersion`, or the resourceVersion it is too old against (410 Expired). */
  eventsSince(tenant: TenantId, resourceVersion: number): EventsSince {
    return this.#store.eventsSince(tenant, resourceVersion);
  }

  // ---- watchers

  /** Watchers now, per tenant (for the metrics). */
  watchersPerTenant(): Iterable<[TenantId, number]> {
    return this.#fanout.watchersPerTenant();
  }

  addListener(listener: CacheListener): void {
    this.#fanout.add(listener);
  }

  removeListener(listener: CacheListener): void {
    this.#fanout.remove(listener);
  }

  // ---- ingest

  /**
   * A consistent list of the upstream collection at `path` (the resource, or its objects in one upstream namespace),
   * page by page from one snapshot, each item as its tenant sees it; resolves to the snapshot's resourceVersion.
   */
  listConsistently(path: string, onObject: (object: CachedObject) => void, query = '', onForeign?: (upstreamName: string) => void): Promise<number> {
    return this.#reflector.listPages(path, query, (items, listKind) => {
      if (this.#kind === '' && typeof listKind === 'string' && listKind.endsWith('List')) this.#kind = listKind.slice(0, -'List'.length);
      for (const item of items) {
        // A list's items leave their kind and apiVersion to the list; a watch event's object needs them, first.
        const object = this.#toCached({ kind: this.#kind, apiVersion: this.#apiVersion, ...item });
        if (object !== null) onObject(object);
        else if (onForeign !== undefined && this.#locate(item) !== null) onForeign(item.metadata.name);
      }
    });
  }

  /** The whole resource, page by page from one consistent snapshot; replaces what the cache held. */
  async #relist(): Promise<void> {
    const objects: TenantObjects = new Map();
    const foreign = new Set<string>();
    const listResourceVersion = await this.listConsistently(
      this.#path,
      (object) => placeIn(objects, object),
      '',
      this.id.row.scope === 'Cluster' ? (name) => foreign.add(name) : undefined,
    );
    if (this.#stopped) return;
    const firstList = !this.#ready;
    if (!firstList) this.#store.stats.relists++;
    // Watchers of the old history cannot go on without a gap: they end, and their clients resume or relist.
    this.#fanout.endAll();
    this.#store.replace(objects, foreign, listResourceVersion);
    this.#advanceTo(listResourceVersion);
    if (firstList) {
      this.#ready = true;
      for (const waiter of this.#readyWaiters.splice(0)) waiter();
    }
  }

  #apply(type: CacheEventType, upstream: any, resourceVersion: number): void {
    const located = this.#locate(upstream);
    if (located === null) return;
    const previous = this.#store.get(located.tenant, located.namespace, located.name);
    const kept = type === 'DELETED' ? null : this.#viewOf(upstream, located);
    if (this.id.row.scope === 'Cluster') this.#store.follow(upstream.metadata.name, type, kept !== null, previous !== null);
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
    if (kept === null) this.#store.remove(previous!);
    else this.#store.place(shared, previous);
    const cacheEvent: CacheEvent = { type: eventType, resourceVersion, object: shared, previous: eventType === 'MODIFIED' ? previous : null, line };
    this.#store.remember(cacheEvent);
    this.#fanout.dispatch(cacheEvent);
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

  /** Whether the namespace of a namespaced event is its tenant's; 'member' for cluster-scoped ones (checked at ingest). */
  #membershipOf(event: CacheEvent): 'member' | 'foreign' | 'unknown' {
    if (this.id.row.scope !== 'Namespaced') return 'member';
    return this.namespaces?.membership(event.object.tenant, event.object.namespace) ?? 'foreign';
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

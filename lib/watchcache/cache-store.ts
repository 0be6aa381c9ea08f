// What one cached resource holds: its tenants' objects, indexed tenant → namespace → name, and a bounded history of
// events ordered by resourceVersion for watches that resume. For a cluster-scoped resource, also which upstream names
// with a tenant's prefix are no tenant's and which tenant objects left lately (the namespaces cache's membership).
// Never answers a resume it cannot answer without a gap: it says how old is too old (410 Expired).
import type { TenantId } from '../convert/prefix.ts';
import type { CachedObject, CacheEvent, CacheEventType, ResourceCacheStats } from './cached-object.ts';

/** What a resumed watch is given: the events after its resourceVersion, or the oldest it could have resumed from. */
export type EventsSince = { events: CacheEvent[] } | { expiredBefore: number };

/** tenant → tenant namespace ('' for cluster-scoped) → name → object. */
export type TenantObjects = Map<TenantId, Map<string, Map<string, CachedObject>>>;

/** How long a tenant namespace deleted lately still counts as its tenant's (its objects' last events come after). */
const DEPARTED_NAMESPACE_MS = 60_000;

export class CacheStore {
  readonly stats: ResourceCacheStats = { objects: 0, bytes: 0, eventsIn: 0, deliveries: 0, slowWatchersClosed: 0, relists: 0 };
  readonly #objects: TenantObjects = new Map();
  readonly #capacity: number;
  /** The history, a ring: events [#start, #end) live at index % capacity. */
  readonly #history: (CacheEvent | undefined)[];
  #start = 0;
  #end = 0;
  /** The resourceVersion of the last list; resumes from before it are too old while no event has left the history. */
  #listResourceVersion = 0;
  #removedSinceList = false;
  /** Cluster-scoped: upstream names with a tenant's prefix that are no tenant's (not labelled for it). */
  readonly #foreign = new Set<string>();
  /** Cluster-scoped: tenant objects deleted lately, by upstream name, with when. */
  readonly #departed = new Map<string, number>();

  constructor(historyCapacity: number) {
    this.#capacity = historyCapacity;
    this.#history = new Array(historyCapacity);
  }

  /** What a consistent list found replaces all the store held; the history starts again at the list's resourceVersion. */
  replace(listed: TenantObjects, foreign: ReadonlySet<string>, listResourceVersion: number): void {
    this.#foreign.clear();
    for (const name of foreign) this.#foreign.add(name);
    for (const namespaces of this.#objects.values()) for (const named of namespaces.values()) for (const object of named.values()) object.countedIn = null;
    this.#objects.clear();
    let count = 0;
    let bytes = 0;
    for (const [tenant, namespaces] of listed) {
      this.#objects.set(tenant, namespaces);
      for (const named of namespaces.values()) {
        for (const object of named.values()) {
          count++;
          bytes += object.bytes.length;
          object.countedIn = this.stats;
        }
      }
    }
    this.#history.fill(undefined);
    this.#start = this.#end = 0;
    this.#listResourceVersion = listResourceVersion;
    this.#removedSinceList = false;
    this.stats.objects = count;
    this.stats.bytes = bytes;
  }

  /** The object kept under these names, or null. */
  get(tenant: TenantId, namespace: string, name: string): CachedObject | null {
    return this.#objects.get(tenant)?.get(namespace)?.get(name) ?? null;
  }

  /** Keeps `object`, in place of `replaced` (the object it changes), counting its bytes. */
  place(object: CachedObject, replaced: CachedObject | null): void {
    placeIn(this.#objects, object);
    object.countedIn = this.stats;
    this.stats.bytes += object.bytes.length;
    if (replaced === null) this.stats.objects++;
    else this.#uncount(replaced);
  }

  remove(object: CachedObject): void {
    const namespaces = this.#objects.get(object.tenant);
    const named = namespaces?.get(object.namespace);
    if (named === undefined || !named.delete(object.name)) return;
    if (named.size === 0) namespaces!.delete(object.namespace);
    if (namespaces!.size === 0) this.#objects.delete(object.tenant);
    this.stats.objects--;
    this.#uncount(object);
  }

  /** An object the store no longer keeps: its bytes, JSON and any protobuf made, leave the count. */
  #uncount(object: CachedObject): void {
    this.stats.bytes -= object.bytes.length + (object.protobuf?.length ?? 0);
    object.countedIn = null;
  }

  /** Adds an event to the history, letting the oldest go when it is full. */
  remember(event: CacheEvent): void {
    if (this.#end - this.#start === this.#capacity) {
      this.#history[this.#start % this.#capacity] = undefined;
      this.#start++;
      this.#removedSinceList = true;
    }
    this.#history[this.#end % this.#capacity] = event;
    this.#end++;
  }

  /** Cluster-scoped: who, with a tenant's prefix, is not a tenant's, and which tenant objects went lately. */
  follow(upstreamName: string, type: CacheEventType, kept: boolean, wasKept: boolean): void {
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
}

export function placeIn(objects: TenantObjects, object: CachedObject): void {
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

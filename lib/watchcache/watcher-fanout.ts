// The tenants' watchers of one cached resource, and each event handed to those of its tenant: watchers of its
// namespace at once, watchers across namespaces once the namespace is known to be the tenant's, in order.
// Never hands a watcher another tenant's event.
import type { TenantId } from '../convert/prefix.ts';
import type { CacheEvent } from './cached-object.ts';

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

/** How long an event in a namespace not seen yet waits for it before watchers across namespaces are denied it. */
const UNKNOWN_NAMESPACE_WAIT_MS = 5_000;
const DEFERRED_CHECK_MS = 20;

export class WatcherFanout {
  readonly #listeners = new Map<TenantId, TenantListeners>();
  /** Whether an event's namespace is its tenant's ('member' for cluster-scoped ones, checked at ingest). */
  readonly #membershipOf: (event: CacheEvent) => 'member' | 'foreign' | 'unknown';
  /** Events for watchers across namespaces waiting to learn whether their namespace is the tenant's, in order. */
  readonly #deferred: { event: CacheEvent; since: number }[] = [];
  #deferredTimer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(membershipOf: (event: CacheEvent) => 'member' | 'foreign' | 'unknown') {
    this.#membershipOf = membershipOf;
  }

  /** Watchers now, per tenant (for the metrics). */
  *watchersPerTenant(): Iterable<[TenantId, number]> {
    for (const [tenant, listeners] of this.#listeners) yield [tenant, listeners.count];
  }

  add(listener: CacheListener): void {
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

  remove(listener: CacheListener): void {
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

  /** Ends every watcher (the history they follow restarted, or the cache stopped); events held for them are dropped. */
  endAll(): void {
    this.#deferred.length = 0;
    const all: CacheListener[] = [];
    for (const listeners of this.#listeners.values()) {
      for (const listener of listeners.everywhere) all.push(listener);
      for (const set of listeners.byNamespace.values()) for (const listener of set) all.push(listener);
    }
    this.#listeners.clear();
    for (const listener of all) listener.end();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#deferredTimer !== undefined) clearTimeout(this.#deferredTimer);
    this.endAll();
  }

  dispatch(event: CacheEvent): void {
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
}

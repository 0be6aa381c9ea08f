// The shared watch cache (`--watch-cache`): one ResourceCache per cached resource, the tenants' watchers across them
// (timeouts and bookmarks on one clock), and which tenant requests it answers — the request plan.
// Never answers what it cannot answer exactly as the apiserver would: such a request goes upstream as before.
import type { Writable } from 'node:stream';
import { kindOf, type KindRow } from '../convert/kinds.ts';
import type { TenantId } from '../convert/prefix.ts';
import type { RequestInfo } from '../convert/request-info.ts';
import type { ConvertContext } from '../convert/rules/index.ts';
import { expired, internalError } from '../errors/status-error.ts';
import { log } from '../log.ts';
import { apiGroupToUpstream } from '../convert/rules/index.ts';
import type { UpstreamPool } from '../upstream/pool.ts';
import { CacheWatcher, lineFor, type WatcherPolicy } from './cache-watcher.ts';
import { isCacheContinueToken, ListSnapshots } from './cached-list.ts';
import { addedBytes, bookmarkBytes, cacheEncodingOf, errorEventBytes, type CacheEncoding } from './encodings.ts';
import type { CachedObject } from './cached-object.ts';
import { ResourceCache, type CachedResourceId } from './resource-cache.ts';
import { selectionOf, selects, type Selection } from './selection.ts';

/** The version cached for each built-in group (what informers watch). */
const CACHED_VERSION_OF_GROUP: Readonly<Record<string, string>> = {
  '': 'v1',
  apps: 'v1',
  batch: 'v1',
  'discovery.k8s.io': 'v1',
  'rbac.authorization.k8s.io': 'v1',
  'networking.k8s.io': 'v1',
  policy: 'v1',
  autoscaling: 'v2',
  'coordination.k8s.io': 'v1',
  'storage.k8s.io': 'v1',
};

/** The resources informers watch most (`resource` or `resource.group`): cached unless --watch-cache-resources says otherwise. */
export const DEFAULT_CACHED_RESOURCES: readonly string[] = [
  'pods',
  'configmaps',
  'secrets',
  'services',
  'endpointslices.discovery.k8s.io',
  'endpoints',
  'events',
  'serviceaccounts',
  'namespaces',
  'deployments.apps',
  'replicasets.apps',
  'statefulsets.apps',
  'daemonsets.apps',
  'jobs.batch',
  'roles.rbac.authorization.k8s.io',
  'rolebindings.rbac.authorization.k8s.io',
  'persistentvolumeclaims',
];

/** The resources named by `resource[.group]`; throws on one that is not a tenant kind of a group the cache knows. */
export function cachedResourcesOf(names: readonly string[]): CachedResourceId[] {
  return names.map((name) => {
    const dot = name.indexOf('.');
    const resource = dot === -1 ? name : name.slice(0, dot);
    const group = dot === -1 ? '' : name.slice(dot + 1);
    const version = CACHED_VERSION_OF_GROUP[group];
    const row = version === undefined ? undefined : kindOf(group, resource);
    if (version === undefined || row === undefined || row.tenancy !== 'tenant' || row.upstreamGroup !== undefined) {
      throw new Error(`--watch-cache-resources: ${name} is not a built-in tenant resource the watch cache can keep`);
    }
    return { group, version, resource, row };
  });
}

export interface WatchCacheOptions {
  /** Bytes a watcher's client may leave unread before the watch is closed (default 4 MiB). */
  maxUnreadBytes?: number;
  /** Between two bookmarks to a watcher that allows them (default 60 s, the apiserver's). */
  bookmarkIntervalMs?: number;
  /** Events kept per resource for resumed watches (default 10,000). */
  historyCapacity?: number;
  /** How long an upstream watch may be silent before its connection is checked (default 75 s). */
  upstreamIdleMs?: number;
  /** Tenants' custom resources cached at most at once (default 1,000); past it, theirs go upstream. */
  maxCustomResources?: number;
  /** Told of each watch it serves (the metrics' active watches and events sent); returns what to call at its end. */
  observe?: (tenant: TenantId, watcher: CacheWatcher) => () => void;
}

/** A tenant list or watch the cache answers: what it asks, parsed once. */
export interface CachePlan {
  readonly cache: ResourceCache;
  readonly watch: boolean;
  readonly selection: Selection;
  /** As sent ('' when unset). */
  readonly resourceVersion: string;
  readonly resourceVersionMatch: string;
  readonly sendInitialEvents: boolean | null;
  readonly bookmarks: boolean;
  /** 0: the apiserver's default. */
  readonly timeoutSeconds: number;
  /** 0: no limit. */
  readonly limit: number;
  /** A continue token of the cache's own ('' when none). */
  readonly continueToken: string;
  /**
   * A watch-list with resourceVersion unset: its initial state must be as fresh as the upstream's, which the cache
   * cannot prove of itself; it comes from one consistent upstream list, the events after it from the cache.
   */
  readonly consistentInitialState: boolean;
  /** JSON, or protobuf for a client that prefers it (a built-in kind the apiserver answers in protobuf). */
  readonly encoding: CacheEncoding;
}

/** The state a watch starts from when it is not the cache's own: objects (its tenant's view) at a resourceVersion. */
export interface InitialState {
  readonly objects: readonly CachedObject[];
  readonly resourceVersion: number;
}

/** The query parameters the cache understands; a request with any other goes upstream. */
const KNOWN_PARAMETERS = new Set([
  'watch',
  'resourceVersion',
  'resourceVersionMatch',
  'allowWatchBookmarks',
  'sendInitialEvents',
  'labelSelector',
  'fieldSelector',
  'timeoutSeconds',
  'timeout',
  'limit',
  'continue',
]);
const DIGITS = /^\d{1,15}$/;

/** strconv.ParseBool, as the apiserver reads boolean parameters; undefined when it would refuse the value. */
function goBool(value: string | null): boolean | null | undefined {
  if (value === null) return null;
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false;
  return undefined;
}

/** Where a resource's cache is kept: by its upstream group, version and plural. */
function cacheKey(group: string, version: string, resource: string): string {
  return `${group}/${version}/${resource}`;
}

const BOOKMARK_CHECK_MS = 1_000;
/** The apiserver's default watch timeout: a random time between its --min-request-timeout (1,800 s) and twice that. */
const MIN_REQUEST_TIMEOUT_MS = 1_800_000;

export class WatchCache implements WatcherPolicy {
  readonly #caches = new Map<string, ResourceCache>();
  readonly snapshots = new ListSnapshots();
  readonly #watchers = new Set<CacheWatcher>();
  readonly maxUnreadBytes: number;
  readonly #bookmarkIntervalMs: number;
  readonly #pool: UpstreamPool;
  readonly #convertOf: (tenant: TenantId) => ConvertContext;
  readonly #historyCapacity: number | undefined;
  readonly #upstreamIdleMs: number | undefined;
  readonly #maxCustomResources: number;
  #customCaches = 0;
  readonly #namespaces: ResourceCache | null;
  readonly #observe: WatchCacheOptions['observe'];
  #ticker: NodeJS.Timeout | undefined;

  constructor(resources: readonly CachedResourceId[], pool: UpstreamPool, convertOf: (tenant: TenantId) => ConvertContext, options: WatchCacheOptions = {}) {
    this.maxUnreadBytes = options.maxUnreadBytes ?? 4 * 1024 * 1024;
    this.#bookmarkIntervalMs = options.bookmarkIntervalMs ?? 60_000;
    this.#pool = pool;
    this.#convertOf = convertOf;
    this.#historyCapacity = options.historyCapacity;
    this.#upstreamIdleMs = options.upstreamIdleMs;
    this.#maxCustomResources = options.maxCustomResources ?? 1_000;
    this.#observe = options.observe;
    // Reads across a tenant's namespaces need to know which namespaces are the tenant's: without namespaces cached,
    // they go upstream.
    const namespaces = resources.find((id) => id.group === '' && id.resource === 'namespaces');
    this.#namespaces = namespaces === undefined ? null : this.#add(namespaces);
    for (const id of resources) if (id !== namespaces) this.#add(id);
  }

  /** A cache of `id`, kept under its key, knowing the tenants' namespaces when its kind is namespaced. */
  #add(id: CachedResourceId, onGone?: () => void): ResourceCache {
    const cache = new ResourceCache(id, this.#pool, this.#convertOf, { historyCapacity: this.#historyCapacity, upstreamIdleMs: this.#upstreamIdleMs, onGone });
    if (id.row.scope === 'Namespaced') cache.namespaces = this.#namespaces;
    this.#caches.set(cacheKey(id.group, id.version, id.resource), cache);
    return cache;
  }

  /** Starts every resource's list-then-watch (not awaited: until a resource is in, its requests go upstream). */
  start(): void {
    for (const cache of this.#caches.values()) cache.start();
    this.#ticker = setInterval(() => this.#tick(), BOOKMARK_CHECK_MS);
    this.#ticker.unref();
  }

  /** Resolves once every resource's first list is in. */
  async whenReady(): Promise<void> {
    await Promise.all([...this.#caches.values()].map((cache) => cache.whenReady()));
  }

  stop(): void {
    if (this.#ticker !== undefined) clearInterval(this.#ticker);
    this.#ticker = undefined;
    for (const cache of this.#caches.values()) cache.stop();
  }

  get resources(): Iterable<ResourceCache> {
    return this.#caches.values();
  }

  /** Open watchers now, all resources. */
  get watcherCount(): number {
    return this.#watchers.size;
  }

  // ---- which requests it answers

  /**
   * The plan for a tenant's request classified as `info` of `row`, or null when the cache does not answer it: not a
   * list or watch of a cached resource that is in, a client that does not take plain JSON, a parameter or selector
   * the cache cannot honour exactly, or a read that must be consistent (resourceVersion unset), which goes upstream.
   */
  planOf(info: RequestInfo, row: KindRow | null, tenant: TenantId, query: URLSearchParams, accept: string | undefined): CachePlan | null {
    if (row === null || !info.isResourceRequest || info.subresource !== '' || (info.verb !== 'list' && info.verb !== 'watch')) return null;
    if (info.parts.length !== 1) return null; // the legacy /watch/…/name form names one object: upstream
    const custom = row.rule === 'custom-resource';
    const group = custom ? apiGroupToUpstream(info.apiGroup, tenant, info.resource) : info.apiGroup;
    const key = cacheKey(group, info.apiVersion, info.resource);
    const cache = this.#caches.get(key);
    if (cache === undefined) {
      // A tenant's custom resource is cached once the tenant lists or watches it; this request goes upstream meanwhile.
      if (custom && row.tenancy === 'tenant') this.#startCustom(key, { group, version: info.apiVersion, resource: info.resource, row });
      return null;
    }
    if (!cache.ready || (custom ? cache.id.row.scope !== row.scope : cache.id.row !== row)) return null;
    const encoding = cacheEncodingOf(accept, row, cache.tenantApiVersion, cache.kind);
    if (encoding === null) return null;
    for (const name of query.keys()) if (!KNOWN_PARAMETERS.has(name)) return null;
    const resourceVersion = query.get('resourceVersion') ?? '';
    const resourceVersionMatch = query.get('resourceVersionMatch') ?? '';
    const timeout = query.get('timeoutSeconds');
    const limitText = query.get('limit');
    if (resourceVersion !== '' && !DIGITS.test(resourceVersion)) return null;
    if (timeout !== null && !DIGITS.test(timeout)) return null;
    if (limitText !== null && !DIGITS.test(limitText)) return null;
    const bookmarks = goBool(query.get('allowWatchBookmarks'));
    const sendInitialEvents = goBool(query.get('sendInitialEvents'));
    if (bookmarks === undefined || sendInitialEvents === undefined) return null;
    const namespace = row.scope === 'Namespaced' && info.namespace !== '' ? info.namespace : null;
    let across: Selection['across'] = null;
    if (row.scope === 'Namespaced' && namespace === null) {
      if (this.#namespaces === null || !this.#namespaces.ready) return null;
      across = { tenant, namespaces: this.#namespaces };
    }
    const selection = selectionOf(
      cache.id.group,
      cache.id.resource,
      namespace,
      query.get('labelSelector'),
      query.get('fieldSelector'),
      row.scope === 'Namespaced',
      across,
    );
    if (selection === null) return null;
    const continueToken = query.get('continue') ?? '';
    const watch = info.verb === 'watch';
    if (watch) {
      if (continueToken !== '') return null;
      if (sendInitialEvents === null) {
        if (resourceVersionMatch !== '') return null;
      } else {
        // A watch-list: the apiserver's rules (NotOlderThan, bookmarks asked for). With resourceVersion unset (a
        // consistent read) its initial state comes from one upstream list: of one namespace, or of a cluster-scoped
        // kind; across all of a tenant's namespaces that would be a list of every tenant's objects: upstream.
        if (resourceVersionMatch !== 'NotOlderThan' || (sendInitialEvents && bookmarks !== true)) return null;
        if (resourceVersion === '' && (!sendInitialEvents || (row.scope === 'Namespaced' && namespace === null))) return null;
      }
    } else {
      if (sendInitialEvents !== null) return null;
      if (continueToken !== '') {
        // The cache's own token (its snapshot); the apiserver's go back to the apiserver.
        if (!isCacheContinueToken(continueToken) || resourceVersion !== '' || resourceVersionMatch !== '') return null;
      } else {
        // resourceVersion unset: a consistent list, upstream. Exact: a past state the cache does not keep, and so is
        // a resourceVersion other than 0 with a limit and no resourceVersionMatch (the apiserver's legacy reading).
        if (resourceVersion === '' || (resourceVersionMatch !== '' && resourceVersionMatch !== 'NotOlderThan')) return null;
        if (resourceVersionMatch === '' && resourceVersion !== '0' && limitText !== null && limitText !== '0') return null;
      }
    }
    return {
      cache,
      watch,
      selection,
      resourceVersion,
      resourceVersionMatch,
      sendInitialEvents,
      bookmarks: bookmarks === true,
      timeoutSeconds: timeout === null ? 0 : Number(timeout),
      limit: limitText === null ? 0 : Number(limitText),
      continueToken,
      consistentInitialState: watch && sendInitialEvents === true && resourceVersion === '',
      encoding,
    };
  }

  #startCustom(key: string, id: CachedResourceId): void {
    if (this.#customCaches >= this.#maxCustomResources) return;
    this.#customCaches++;
    // Its CRD was deleted: the cache goes, a new CRD of the same name starts a new one.
    const cache = this.#add(id, () => {
      if (this.#caches.get(key) !== cache) return;
      this.#caches.delete(key);
      this.#customCaches--;
    });
    if (this.#ticker !== undefined) cache.start();
  }

  // ---- watches

  /**
   * Serves a watch of `tenant` on `out` (its head already sent): the initial or resumed events, then every event as
   * it comes, until the timeout, a relist or the client's going. Returns the watcher (the exchange closes it), or
   * null when the watch ended at once (a resourceVersion older than the history: an ERROR event with 410 Expired).
   */
  watch(plan: CachePlan, tenant: TenantId, out: Writable, now: number, initialState: InitialState | null = null): CacheWatcher | null {
    const cache = plan.cache;
    const resourceVersion = plan.resourceVersion;
    const encoding = plan.encoding;
    const lines: Buffer[] = [];
    let after: number;
    const initial = plan.sendInitialEvents === true || (plan.sendInitialEvents === null && (resourceVersion === '' || resourceVersion === '0'));
    const deadline = now + (plan.timeoutSeconds > 0 ? plan.timeoutSeconds * 1000 : MIN_REQUEST_TIMEOUT_MS * (1 + Math.random()));
    const nextBookmarkAt = plan.bookmarks ? now + this.#bookmarkIntervalMs : Infinity;
    // The events after `from` the cache still has, as this watch's lines; false when it has them no more (410 sent).
    const replaySince = (from: number): boolean => {
      const since = cache.eventsSince(tenant, from);
      if ('expiredBefore' in since) {
        out.end(errorEventBytes(expired(`too old resource version: ${from} (${since.expiredBefore})`), encoding));
        return false;
      }
      for (const event of since.events) {
        const line = lineFor(plan.selection, event, encoding);
        if (line !== null) lines.push(line);
      }
      return true;
    };
    try {
      if (initial) {
        after = initialState?.resourceVersion ?? cache.resourceVersion;
        const objects = initialState?.objects ?? cache.objectsOf(tenant, plan.selection.namespace);
        for (const object of objects) if (selects(plan.selection, object)) lines.push(addedBytes(object, encoding));
        if (plan.sendInitialEvents === true) lines.push(bookmarkBytes(cache, after, true, encoding));
        // The upstream's list was taken a moment ago: what the cache took in since goes after it, from the history.
        if (initialState !== null && !replaySince(initialState.resourceVersion)) return null;
      } else if (resourceVersion === '0') {
        after = cache.resourceVersion;
      } else {
        after = Number(resourceVersion);
        if (!replaySince(after)) return null;
      }
    } catch (error) {
      // An object the protobuf encoder cannot write (a field its schema lacks): the client is told, as for any error.
      log.warn('the watch cache could not encode a watch in protobuf', { resource: cache.kind, error: (error as Error).message });
      out.end(errorEventBytes(internalError(`the watch cache could not encode ${cache.kind} in protobuf`), encoding));
      return null;
    }
    // From the newest event the cache has (or from the asked one, still ahead of it).
    after = Math.max(after, cache.resourceVersion);
    const watcher = new CacheWatcher(cache, tenant, plan.selection, out, this, after, deadline, nextBookmarkAt, encoding);
    // Written and registered in one turn of the event loop: no event can fall between the two.
    const initialBytes = writeBatched(out, lines);
    watcher.bytesOut += initialBytes;
    // A large initial state is not a slow client: the bound counts from what it was given at the start.
    watcher.initialBytes = initialBytes;
    watcher.eventsOut += lines.length;
    cache.stats.deliveries += lines.length;
    watcher.onEnd = this.#observe?.(tenant, watcher) ?? null;
    cache.addListener(watcher);
    this.#watchers.add(watcher);
    return watcher;
  }

  closedSlow(cache: ResourceCache): void {
    cache.stats.slowWatchersClosed++;
  }

  ended(watcher: CacheWatcher): void {
    this.#watchers.delete(watcher);
  }

  #tick(): void {
    const now = performance.now();
    // One bookmark per resource and encoding, shared by its watchers.
    const bookmarks = { json: new Map<ResourceCache, Buffer>(), protobuf: new Map<ResourceCache, Buffer>() };
    for (const watcher of this.#watchers) {
      const due = now >= watcher.deadline;
      if (!due && now < watcher.nextBookmarkAt) continue;
      if (watcher.nextBookmarkAt !== Infinity) {
        const cache = watcher.cache;
        let line: Buffer | undefined;
        const shared = bookmarks[watcher.encoding];
        if (watcher.resourceVersion > cache.resourceVersion) {
          // A watch that started ahead of the cache (from a consistent read's resourceVersion) is never told less.
          line = bookmarkBytes(cache, watcher.resourceVersion, false, watcher.encoding);
        } else if ((line = shared.get(cache)) === undefined) {
          shared.set(cache, (line = bookmarkBytes(cache, cache.resourceVersion, false, watcher.encoding)));
        }
        watcher.write(line);
        watcher.nextBookmarkAt = now + this.#bookmarkIntervalMs;
      }
      if (due) watcher.end();
    }
  }
}

const BATCH_BYTES = 64 * 1024;

/** Writes many small lines as few large writes; returns the bytes written. */
function writeBatched(out: Writable, lines: Buffer[]): number {
  let total = 0;
  let batch: Buffer[] = [];
  let size = 0;
  for (const line of lines) {
    batch.push(line);
    size += line.length;
    total += line.length;
    if (size >= BATCH_BYTES) {
      out.write(batch.length === 1 ? batch[0]! : Buffer.concat(batch, size));
      batch = [];
      size = 0;
    }
  }
  if (batch.length > 0) out.write(batch.length === 1 ? batch[0]! : Buffer.concat(batch, size));
  return total;
}

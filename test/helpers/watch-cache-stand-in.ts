// A WatchCache for unit tests, fed by a stand-in upstream: each cached resource's list answers the objects given, and
// its watch stays open for the test to push events into. Only for tests of the cache's own logic (plans, selections,
// list pages); the cache against the real apiserver is test/integration/watch-cache*.test.ts.
import { PassThrough } from 'node:stream';
import type { TenantId } from '../../lib/convert/prefix.ts';
import type { ConvertContext } from '../../lib/convert/rules/index.ts';
import type { UpstreamPool } from '../../lib/upstream/pool.ts';
import { cachedResourcesOf, WatchCache, type WatchCacheOptions } from '../../lib/watchcache/watch-cache.ts';

/** A stream as the pool hands out (http2's ClientHttp2Stream, as far as the cache uses it). */
class StandInStream extends PassThrough {
  rstCode = 0;
  setTimeout(): this {
    return this;
  }
  close(): void {
    this.destroy();
  }
}

export interface StandInCache {
  watchCache: WatchCache;
  /**
   * Sends upstream watch events (upstream names) to the cache of the collection at `path` (e.g. /api/v1/configmaps);
   * resolves once the cache has taken in the last.
   */
  push(path: string, events: [type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK', object: any][]): Promise<void>;
  stop(): void;
}

const convertOf = (tenant: TenantId): ConvertContext => ({ tenant, scopeOf: () => undefined, kindScope: () => undefined });

/**
 * A started WatchCache of `resources` (`resource[.group]`) whose first lists answered `objects` (upstream path →
 * items, upstream names) at `listResourceVersion`; resolves once every resource is in.
 */
export async function standInWatchCache(
  resources: readonly string[],
  objects: Record<string, any[]>,
  listResourceVersion: number,
  options: WatchCacheOptions = {},
): Promise<StandInCache> {
  const watches = new Map<string, StandInStream>();
  const request = (_method: string, path: string) => {
    const stream = new StandInStream();
    const [collection] = path.split('?');
    if (path.includes('watch=1')) {
      // Known as open once its head is out: the cache drops what comes before it.
      setImmediate(() => {
        stream.emit('response', { ':status': 200 });
        watches.set(collection!, stream);
      });
    } else {
      const body = JSON.stringify({
        kind: 'List',
        apiVersion: 'v1',
        metadata: { resourceVersion: String(listResourceVersion) },
        items: (objects[collection!] ?? []).map(({ kind: _kind, apiVersion: _apiVersion, ...item }) => item),
      });
      setImmediate(() => {
        stream.emit('response', { ':status': 200 });
        stream.end(body);
      });
    }
    return stream;
  };
  const pool = { request, authorization: undefined } as unknown as UpstreamPool;
  const watchCache = new WatchCache(cachedResourcesOf(resources), pool, convertOf, options);
  watchCache.start();
  await watchCache.whenReady();
  // Each resource opens its watch right after its list: wait for all of them, so events pushed reach a watch.
  for (let i = 0; watches.size < resources.length; i++) {
    if (i === 1_000) throw new Error('the stand-in cache did not open its upstream watches');
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  return {
    watchCache,
    async push(path, events) {
      const stream = watches.get(path);
      const cache = [...watchCache.resources].find((c) => c.path === path);
      if (stream === undefined || cache === undefined) throw new Error(`no upstream watch of ${path} open`);
      for (const [type, object] of events) stream.push(JSON.stringify({ type, object }) + '\n');
      const last = Number(events.at(-1)![1].metadata.resourceVersion);
      if (!(await cache.waitUntilFresh(last, 5_000))) throw new Error(`the cache of ${path} did not take in resourceVersion ${last}`);
    },
    stop: () => watchCache.stop(),
  };
}

/** An upstream namespace of `tenant` (`namespace` in tenant names), labelled for it as tenantgate makes them. */
export function upstreamNamespace(tenant: TenantId, namespace: string, resourceVersion: number): any {
  return {
    kind: 'Namespace',
    apiVersion: 'v1',
    metadata: {
      name: `${tenant}-${namespace}`,
      resourceVersion: String(resourceVersion),
      uid: `ns-${resourceVersion}`,
      labels: { 'kubezoo.io/tenant': tenant },
    },
  };
}

/** The namespaces the unit tests' tenants have: default and other, of abcdef and zyxwvu. */
export const TENANT_NAMESPACES = {
  '/api/v1/namespaces': [
    upstreamNamespace('abcdef', 'default', 1),
    upstreamNamespace('abcdef', 'other', 2),
    upstreamNamespace('zyxwvu', 'default', 3),
    upstreamNamespace('zyxwvu', 'other', 4),
  ],
};

/** An upstream ConfigMap of `tenant` in its namespace `namespace` (tenant names), as the apiserver lists it. */
export function upstreamConfigMap(tenant: TenantId, namespace: string, name: string, resourceVersion: number, labels: Record<string, string> = {}): any {
  return {
    kind: 'ConfigMap',
    apiVersion: 'v1',
    metadata: {
      name,
      namespace: `${tenant}-${namespace}`,
      resourceVersion: String(resourceVersion),
      uid: `uid-${resourceVersion}`,
      labels: { 'kubezoo.io/tenant': tenant, ...labels },
    },
    data: { owner: tenant },
  };
}

// Issue 16's watch cache as the bench sees it from outside: the serve flags that turn it off, and what a tenantgate's
// metrics say its cache holds. Reads only (a --help run, a metrics scrape); never changes a process.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { sumMetric } from '../../test/helpers/http.ts';

const CLI = fileURLToPath(new URL('../../dist/lib/cli.js', import.meta.url));

/**
 * The `tenantgate serve` flags that turn the watch cache off, or null when this build has no watch cache (before
 * issue 16): a "cache on" leg then runs today's path too, and the figures must say so.
 */
export function watchCacheOffFlags(): string[] | null {
  const help = spawnSync(process.execPath, [CLI, 'serve', '--help'], { encoding: 'utf8', timeout: 20_000 });
  return `${help.stdout}${help.stderr}`.includes('--watch-cache') ? ['--watch-cache=false'] : null;
}

export interface WatchCacheMetrics {
  /** Resources with a cache series: those the cache holds an upstream watch of. */
  cachedResources: string[];
  objects: number;
  bytes: number;
  events: number;
  deliveries: number;
  watchers: number;
  slowWatchersClosed: number;
  relists: number;
}

/** A tenantgate's watch cache figures (summed over resources and tenants), or null when it keeps no cache. */
export async function watchCacheMetrics(metricsUrl: string): Promise<WatchCacheMetrics | null> {
  const text = await (await fetch(metricsUrl)).text();
  if (!text.includes('tenantgate_watch_cache_objects{')) return null;
  const sum = (name: string) => sumMetric(text, `tenantgate_watch_cache_${name}`, {});
  const resources = new Set([...text.matchAll(/^tenantgate_watch_cache_objects\{[^}]*resource="([^"]+)"/gm)].map((match) => match[1]!));
  return {
    cachedResources: [...resources].sort(),
    objects: sum('objects'),
    bytes: sum('bytes'),
    events: sum('events_total'),
    deliveries: sum('deliveries_total'),
    watchers: sum('watchers'),
    slowWatchersClosed: sum('slow_watchers_closed_total'),
    relists: sum('relists_total'),
  };
}

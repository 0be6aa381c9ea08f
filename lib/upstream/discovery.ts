// The upstream's resources and their scopes, from aggregated discovery (two requests for the whole API),
// cached and refreshed: on a miss (a CRD created a moment ago), periodically, and when told a CRD changed.
import type { UpstreamPool } from './pool.ts';
import { upstreamJson } from './client.ts';
import { AGGREGATED_DISCOVERY_MEDIA_TYPE } from '../convert/discovery.ts';
import { isBuiltinGroup, kindOf } from '../convert/kinds.ts';

/** Custom groups are judged per tenant elsewhere; built-in resources by the table of kinds. */
function isVisibleToTenants(group: string, resource: string): boolean {
  if (!isBuiltinGroup(group)) return true;
  const row = kindOf(group, resource);
  return row !== undefined && row.tenancy !== 'hidden';
}

export type Scope = 'Namespaced' | 'Cluster';

const REFRESH_INTERVAL_MS = 30_000;
const MIN_MISS_REFRESH_INTERVAL_MS = 1_000;
/** How long a group version the upstream said it does not serve is not asked about again. */
const GROUP_VERSION_MISS_TTL_MS = 250;

interface DiscoveredResource {
  resource: string;
  scope: Scope;
  verbs?: string[];
  responseKind?: { group: string; version: string; kind: string };
}

interface DiscoveryList {
  items?: { metadata?: { name?: string }; versions?: { version: string; resources?: DiscoveredResource[] }[] }[];
}

/** A cluster-scoped resource the upstream serves, at its group's preferred version that serves it. */
export interface ClusterResource {
  group: string;
  version: string;
  resource: string;
  verbs: readonly string[];
}

/** The lookup tables of a DiscoveryCache, copied to a worker thread (plain Maps: structured clone copies them). */
export interface DiscoveryTables {
  scopes: Map<string, Scope>;
  kindScopes: Map<string, Scope>;
  resourcesByVersion: Map<string, string[]>;
}

export class DiscoveryCache {
  private readonly pool: UpstreamPool;
  /** `group/resource` → scope ("" is the core group). */
  private scopes = new Map<string, Scope>();
  /** `group/kind` → scope, for references that name a kind (ownerReferences, roleRefs). */
  private kindScopes = new Map<string, Scope>();
  /** `group/version` → the resources it serves. */
  private resourcesByVersion = new Map<string, string[]>();
  private clusterResourceList: ClusterResource[] = [];
  private refreshedAt = 0;
  private refreshing: Promise<void> | null = null;
  /** `group/version` → when the upstream last said it serves no such resource there. */
  private groupVersionMisses = new Map<string, number>();

  constructor(pool: UpstreamPool) {
    this.pool = pool;
  }

  /**
   * A cache that answers lookups from tables copied off another thread (a worker rewriting a list): the same answers
   * as the cache they came from, at the time they were copied. It never asks the upstream.
   */
  static ofTables(tables: DiscoveryTables): DiscoveryCache {
    const cache = new DiscoveryCache(null as unknown as UpstreamPool);
    cache.scopes = tables.scopes;
    cache.kindScopes = tables.kindScopes;
    cache.resourcesByVersion = tables.resourcesByVersion;
    cache.refreshedAt = Number.POSITIVE_INFINITY;
    return cache;
  }

  /** The lookup tables as they are now (shared, not copied: the caller sends them to a worker thread at once). */
  tables(): DiscoveryTables {
    return { scopes: this.scopes, kindScopes: this.kindScopes, resourcesByVersion: this.resourcesByVersion };
  }

  scopeOf(group: string, resource: string): Scope | undefined {
    return this.scopes.get(`${group}/${resource}`);
  }

  /** True when the upstream group version serves at least one resource a tenant may see (per the table of kinds). */
  servesTenantResources(group: string, version: string): boolean {
    const resources = this.resourcesByVersion.get(`${group}/${version}`);
    // Not known yet, or listed before its resources (a CRD version not yet established when discovery was read):
    // the APIResourceList itself is filtered anyway, and a new CRD's schema must not wait for the next refresh.
    if (resources === undefined || resources.length === 0) return true;
    return resources.some((resource) => isVisibleToTenants(group, resource));
  }

  /** The versions the upstream serves of a group, as of the last refresh. */
  versionsOf(group: string): string[] {
    const versions: string[] = [];
    for (const key of this.resourcesByVersion.keys()) if (key.slice(0, key.lastIndexOf('/')) === group) versions.push(key.slice(key.lastIndexOf('/') + 1));
    return versions;
  }

  scopeOfKind(group: string, kind: string): Scope | undefined {
    return this.kindScopes.get(`${group}/${kind}`);
  }

  /** Every cluster-scoped resource of every group (custom ones included), as of the last refresh. */
  clusterResources(): readonly ClusterResource[] {
    return this.clusterResourceList;
  }

  /**
   * The scope, refreshing discovery first if the resource is unknown or the cache is old. Still unknown, the group
   * version itself is asked: a CRD established a moment ago is served there before the whole discovery (refreshed at
   * most once a second) shows it, and a client may create its first object at once, as on any cluster.
   */
  async resolveScope(group: string, version: string, resource: string): Promise<Scope | undefined> {
    const known = this.scopeOf(group, resource);
    const age = Date.now() - this.refreshedAt;
    if (known !== undefined && age < REFRESH_INTERVAL_MS) return known;
    if (known === undefined && age < MIN_MISS_REFRESH_INTERVAL_MS && this.refreshing === null) return this.scopeInGroupVersion(group, version, resource);
    await this.refresh();
    return this.scopeOf(group, resource) ?? this.scopeInGroupVersion(group, version, resource);
  }

  private async scopeInGroupVersion(group: string, version: string, resource: string): Promise<Scope | undefined> {
    if (group === '' || version === '') return undefined;
    const key = `${group}/${version}`;
    const missedAt = this.groupVersionMisses.get(key);
    if (missedAt !== undefined && Date.now() - missedAt < GROUP_VERSION_MISS_TTL_MS) return undefined;
    const answer = await upstreamJson(this.pool, 'GET', `/apis/${encodeURIComponent(group)}/${encodeURIComponent(version)}`);
    const list = answer.status === 200 ? (answer.body as { resources?: { name?: string; namespaced?: boolean; kind?: string }[] }) : {};
    const found = list.resources?.find((r) => r.name === resource);
    if (found === undefined) {
      if (this.groupVersionMisses.size > 10_000) this.groupVersionMisses.clear();
      this.groupVersionMisses.set(key, Date.now());
      return undefined;
    }
    const scope: Scope = found.namespaced === true ? 'Namespaced' : 'Cluster';
    // Known until the next refresh replaces the maps (which then has it too).
    this.scopes.set(`${group}/${resource}`, scope);
    if (found.kind) this.kindScopes.set(`${group}/${found.kind}`, scope);
    return scope;
  }

  /** Refreshes when older than the refresh interval (discovery answers are filtered with what is cached). */
  async refreshIfStale(): Promise<void> {
    if (Date.now() - this.refreshedAt >= REFRESH_INTERVAL_MS) await this.refresh();
  }

  /** A CRD was created, changed or deleted: the next lookup of an unknown resource refetches at once. */
  invalidate(): void {
    this.refreshedAt = 0;
  }

  refresh(): Promise<void> {
    this.refreshing ??= this.fetch().finally(() => (this.refreshing = null));
    return this.refreshing;
  }

  private async fetch(): Promise<void> {
    const scopes = new Map<string, Scope>();
    const kindScopes = new Map<string, Scope>();
    const resourcesByVersion = new Map<string, string[]>();
    const clusterResources = new Map<string, ClusterResource>();
    for (const root of ['/api', '/apis']) {
      const answer = await upstreamJson(this.pool, 'GET', root, undefined, { accept: AGGREGATED_DISCOVERY_MEDIA_TYPE });
      if (answer.status !== 200) throw new Error(`discovery ${root}: upstream answered ${answer.status}`);
      for (const group of (answer.body as DiscoveryList).items ?? []) {
        const groupName = group.metadata?.name ?? '';
        for (const version of group.versions ?? []) {
          resourcesByVersion.set(
            `${groupName}/${version.version}`,
            (version.resources ?? []).map((r) => r.resource),
          );
          for (const r of version.resources ?? []) {
            scopes.set(`${groupName}/${r.resource}`, r.scope);
            if (r.responseKind?.kind) kindScopes.set(`${groupName}/${r.responseKind.kind}`, r.scope);
            // Versions come preferred first: keep the first version that serves the resource.
            const key = `${groupName}/${r.resource}`;
            if (r.scope === 'Cluster' && !clusterResources.has(key)) {
              clusterResources.set(key, { group: groupName, version: version.version, resource: r.resource, verbs: r.verbs ?? [] });
            }
          }
        }
      }
    }
    this.scopes = scopes;
    this.kindScopes = kindScopes;
    this.resourcesByVersion = resourcesByVersion;
    this.clusterResourceList = [...clusterResources.values()];
    this.refreshedAt = Date.now();
  }
}

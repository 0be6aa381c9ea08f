// What tenants cost the shared upstream in objects: one tenant's upstream objects by kind, and the upstream's totals
// of every cluster-scoped kind, read straight from kube-apiserver with admin credentials. Reads only; never writes.
import { TENANT_LABEL, isTenantsUpstreamName, type TenantId } from '../lib/convert/prefix.ts';
import { TENANTGATE_OWNED_LABEL } from '../lib/tenants/bootstrap.ts';
import { upstreamJson } from '../lib/upstream/client.ts';
import type { DiscoveryCache } from '../lib/upstream/discovery.ts';
import type { UpstreamPool } from '../lib/upstream/pool.ts';

export interface ObjectMeta {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
}

/** A listable resource of the upstream, at the version discovery prefers. */
export interface UpstreamResource {
  group: string;
  version: string;
  resource: string;
  namespaced: boolean;
}

/** An object as a list holds it: metadata only, or whole for the kinds that need more (PARENT_NAMESPACE). */
interface ListedItem {
  metadata: ObjectMeta;
  spec?: unknown;
}

/** An object of a kind: `configmaps`, `clusterroles.rbac.authorization.k8s.io`. */
export interface KindedObject {
  kind: string;
  meta: ObjectMeta;
}

export interface Footprint {
  tenant: TenantId;
  /** The tenant's upstream objects by kind, kinds sorted, none of count 0. */
  byKind: Record<string, number>;
  total: number;
  /** Every cluster-scoped kind's objects upstream, whoever's. */
  clusterTotals: Record<string, number>;
  /** Resources the upstream failed to list: nobody knows what they hold. */
  unlisted: string[];
}

export function kindOf(resource: Pick<UpstreamResource, 'group' | 'resource'>): string {
  return resource.group === '' ? resource.resource : `${resource.resource}.${resource.group}`;
}

/**
 * Whether an object is the tenant's: labelled as its own (the tenant label on what tenantgate converted, tenantgate's
 * owned label on its per-tenant bindings and roles), named under its exact `<id>-` prefix (cluster-scoped), or in one
 * of its namespaces (whoever made it there: kube-controller-manager's ServiceAccounts and root CA ConfigMaps count),
 * or serving an object in one of them (`parentNamespace`, see PARENT_NAMESPACE).
 */
export function tenantOwns(tenant: TenantId, meta: ObjectMeta, tenantNamespaces: ReadonlySet<string>, parentNamespace?: string): boolean {
  if (meta.labels?.[TENANT_LABEL] === tenant || meta.labels?.[TENANTGATE_OWNED_LABEL] === tenant) return true;
  if (parentNamespace !== undefined) return tenantNamespaces.has(parentNamespace);
  if (meta.namespace === undefined || meta.namespace === '') return isTenantsUpstreamName(meta.name, tenant);
  return tenantNamespaces.has(meta.namespace);
}

/** Objects counted by kind, each once (one found by its namespace and again by its label is one object). */
export function countByKind(objects: readonly KindedObject[]): Record<string, number> {
  const seen = new Set<string>();
  const counts: Record<string, number> = {};
  for (const { kind, meta } of objects) {
    const key = `${kind}\u0000${meta.namespace ?? ''}\u0000${meta.name}`;
    if (seen.has(key)) continue;
    seen.add(key);
    counts[kind] = (counts[kind] ?? 0) + 1;
  }
  return Object.fromEntries(Object.entries(counts).sort(([a], [b]) => (a < b ? -1 : 1)));
}

/** Each kind's growth per tenant between two readings of the totals (kinds that did not change left out). */
export function perTenantGrowth(before: Record<string, number>, after: Record<string, number>, tenantsAdded: number): Record<string, number> {
  const growth: Record<string, number> = {};
  if (tenantsAdded <= 0) return growth;
  for (const kind of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const added = (after[kind] ?? 0) - (before[kind] ?? 0);
    if (added !== 0) growth[kind] = Math.round((added / tenantsAdded) * 100) / 100;
  }
  return Object.fromEntries(Object.entries(growth).sort(([a], [b]) => (a < b ? -1 : 1)));
}

/**
 * Cluster-scoped kinds whose objects serve one namespaced object named in their spec, and so are that object's
 * tenant's though they carry neither prefix nor label: the IPAddress kube-apiserver allocates for a Service's ClusterIP.
 */
const PARENT_NAMESPACE: Record<string, (item: ListedItem) => string | undefined> = {
  'ipaddresses.networking.k8s.io': (item) => (item.spec as { parentRef?: { namespace?: string } } | undefined)?.parentRef?.namespace,
};

/** The same objects in two API groups: counted once, under the core group. */
const SAME_OBJECTS_AS_CORE = new Set(['events.k8s.io/events']);

/** Every resource discovery lists, at its preferred version (the first one a group lists it in). */
export function listableResources(discovery: DiscoveryCache): UpstreamResource[] {
  const { scopes, resourcesByVersion } = discovery.tables();
  const found = new Map<string, UpstreamResource>();
  for (const [groupVersion, resources] of resourcesByVersion) {
    const slash = groupVersion.lastIndexOf('/');
    const group = groupVersion.slice(0, slash);
    for (const resource of resources) {
      const key = `${group}/${resource}`;
      if (found.has(key) || SAME_OBJECTS_AS_CORE.has(key)) continue;
      found.set(key, { group, version: groupVersion.slice(slash + 1), resource, namespaced: scopes.get(key) === 'Namespaced' });
    }
  }
  return [...found.values()];
}

function collectionPath(resource: UpstreamResource, namespace?: string): string {
  const base = resource.group === '' ? `/api/${resource.version}` : `/apis/${resource.group}/${resource.version}`;
  return namespace === undefined ? `${base}/${resource.resource}` : `${base}/namespaces/${namespace}/${resource.resource}`;
}

/** Metadata only: a list of every ClusterRole at ten thousand tenants would otherwise be hundreds of megabytes. */
const METADATA_ONLY = 'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json';
const PAGE_SIZE = 1000;

/**
 * A resource with no list verb (405; 404 where there is no list route at all: pods' bindings, local access reviews):
 * nothing of it is stored, so nothing to count.
 */
const NOT_LISTABLE = new Set([404, 405]);

/** Hands each page's objects to `take` (none kept here); the status when the upstream refuses the list. */
async function readPages(pool: UpstreamPool, path: string, accept: string, take: (items: ListedItem[]) => void): Promise<number> {
  const separator = path.includes('?') ? '&' : '?';
  let continueToken = '';
  do {
    const page = `${path}${separator}limit=${PAGE_SIZE}${continueToken === '' ? '' : `&continue=${encodeURIComponent(continueToken)}`}`;
    const answer = await upstreamJson(pool, 'GET', page, undefined, { accept });
    if (answer.status !== 200) return answer.status;
    take((answer.body?.items ?? []) as ListedItem[]);
    continueToken = answer.body?.metadata?.continue ?? '';
  } while (continueToken !== '');
  return 200;
}

/**
 * The tenant's upstream objects and the cluster-scoped totals: every cluster-scoped kind listed whole (the totals, and
 * the tenant's among them), every namespaced kind in each of the tenant's namespaces and, by the two labels, anywhere.
 */
export async function footprintOf(pool: UpstreamPool, discovery: DiscoveryCache, tenant: TenantId): Promise<Footprint> {
  await discovery.refresh();
  const resources = listableResources(discovery);
  const mine: KindedObject[] = [];
  const clusterTotals: Record<string, number> = {};
  const unlisted = new Set<string>();
  const tenantNamespaces = new Set<string>();
  const noteRefusal = (kind: string, status: number) => {
    if (status !== 200 && !NOT_LISTABLE.has(status)) unlisted.add(kind);
  };
  // Kinds owned through a parent last: their parents' namespaces must be known.
  const clusterScoped = resources.filter((r) => !r.namespaced).sort((a, b) => Number(kindOf(a) in PARENT_NAMESPACE) - Number(kindOf(b) in PARENT_NAMESPACE));
  for (const resource of clusterScoped) {
    const kind = kindOf(resource);
    const parentNamespace = PARENT_NAMESPACE[kind];
    let total = 0;
    const status = await readPages(pool, collectionPath(resource), parentNamespace === undefined ? METADATA_ONLY : 'application/json', (items) => {
      total += items.length;
      for (const item of items) {
        if (!tenantOwns(tenant, item.metadata, tenantNamespaces, parentNamespace?.(item))) continue;
        mine.push({ kind, meta: item.metadata });
        if (kind === 'namespaces') tenantNamespaces.add(item.metadata.name);
      }
    });
    if (status === 200) clusterTotals[kind] = total;
    noteRefusal(kind, status);
  }
  const selectors = [TENANT_LABEL, TENANTGATE_OWNED_LABEL].map((label) => `labelSelector=${encodeURIComponent(`${label}=${tenant}`)}`);
  for (const resource of resources.filter((r) => r.namespaced)) {
    const kind = kindOf(resource);
    const take = (items: ListedItem[]) => {
      for (const { metadata } of items) if (tenantOwns(tenant, metadata, tenantNamespaces)) mine.push({ kind, meta: metadata });
    };
    // The labelled ones first: a resource that cannot be listed says so here, before one refusal per namespace.
    let status = 200;
    for (const selector of selectors) if (status === 200) status = await readPages(pool, `${collectionPath(resource)}?${selector}`, METADATA_ONLY, take);
    noteRefusal(kind, status);
    if (status !== 200) continue;
    for (const namespace of tenantNamespaces) noteRefusal(kind, await readPages(pool, collectionPath(resource, namespace), METADATA_ONLY, take));
  }
  const byKind = countByKind(mine);
  return { tenant, byKind, total: Object.values(byKind).reduce((sum, n) => sum + n, 0), clusterTotals, unlisted: [...unlisted].sort() };
}

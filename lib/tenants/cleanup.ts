// Removes a deleted tenant's upstream objects: its namespaces (and so all it had in them), its cluster-scoped objects,
// its CRDs (and so their custom resources) and tenantgate's own roles for it. Never deletes a name outside the
// tenant's exact `<id>-` prefix: tenant `defaul` never touches `default`, tenant `system` never `system:*`.
import { isBuiltinGroup, kindOfUpstream } from '../convert/kinds.ts';
import { isTenantsUpstreamName, TENANT_LABEL, toTenantName, type TenantId } from '../convert/prefix.ts';
import { crdNameToTenant } from '../convert/rules/names.ts';
import { upstreamJson } from '../upstream/client.ts';
import type { ClusterResource, DiscoveryCache } from '../upstream/discovery.ts';
import { listUpstream, UpstreamListError, type UpstreamItem } from '../upstream/own-watch.ts';
import type { UpstreamPool } from '../upstream/pool.ts';
import { tenantgateClusterObjectsOf } from './bootstrap.ts';

/**
 * How a tenant's objects of a cluster-scoped resource are told apart.
 * prefix: the tenant's own kinds (table of kinds), whose upstream names are `<id>-<name>`.
 * crd: CRDs, named `<plural>.<id>-<group>`.
 * prefix-and-label: kinds a tenant cannot write (shared, hidden, other groups' custom resources): a name under the
 *   prefix alone is a coincidence there (a Node `abc123-pool`), so the object must also carry the tenant's label.
 * none: namespaces (handled on their own) and the tenant's own custom resources (they go with its CRDs).
 */
export type Ownership = 'prefix' | 'crd' | 'prefix-and-label' | 'none';

export function ownershipOf(group: string, resource: string, tenant: TenantId): Ownership {
  if (group === '' && resource === 'namespaces') return 'none';
  if (group === 'apiextensions.k8s.io' && resource === 'customresourcedefinitions') return 'crd';
  if (isBuiltinGroup(group)) {
    // (By the upstream resource: the real FlowSchemas hold no tenant's objects, tenantgate's custom resources do.)
    const row = kindOfUpstream(group, resource);
    return row?.tenancy === 'tenant' && row.scope === 'Cluster' ? 'prefix' : 'prefix-and-label';
  }
  return toTenantName(group, tenant) === null ? 'prefix-and-label' : 'none';
}

/** True when the object (upstream name and labels) is the tenant's, for a resource of this ownership. */
export function isTenantsObject(ownership: Ownership, name: string, labels: Record<string, string> | undefined, tenant: TenantId): boolean {
  switch (ownership) {
    case 'prefix':
      return isTenantsUpstreamName(name, tenant);
    case 'crd':
      return crdNameToTenant(name, tenant) !== null;
    case 'prefix-and-label':
      return isTenantsUpstreamName(name, tenant) && labels?.[TENANT_LABEL] === tenant;
    case 'none':
      return false;
  }
}

export interface CleanupProgress {
  /** The tenant's namespaces still there (terminating ones included). */
  namespaces: number;
  /** Its cluster-scoped objects still there (CRDs and tenantgate's own roles for it included). */
  clusterObjects: number;
  /** Resources that could not be listed: until they can, nobody knows what of the tenant's is left in them. */
  unlisted: string[];
}

export function cleanupDone(progress: CleanupProgress): boolean {
  return progress.namespaces === 0 && progress.clusterObjects === 0 && progress.unlisted.length === 0;
}

function collectionPath(resource: ClusterResource): string {
  return resource.group === '' ? `/api/${resource.version}/${resource.resource}` : `/apis/${resource.group}/${resource.version}/${resource.resource}`;
}

/** DELETE that counts "already gone" and "already going" as done, so replicas can race. */
async function deleteObject(pool: UpstreamPool, path: string): Promise<void> {
  const answer = await upstreamJson(pool, 'DELETE', path);
  if (answer.status === 200 || answer.status === 202 || answer.status === 404 || answer.status === 409) return;
  throw new Error(`deleting ${path}: the upstream answered ${answer.status}: ${String(answer.body?.message ?? '').slice(0, 200)}`);
}

async function deleteAll(pool: UpstreamPool, collection: string, items: UpstreamItem[]): Promise<void> {
  // Objects already being deleted need no second request (their finalizers are running).
  const live = items.filter((item) => item.metadata.deletionTimestamp === undefined);
  await Promise.all(live.map((item) => deleteObject(pool, `${collection}/${encodeURIComponent(item.metadata.name)}`)));
}

/**
 * One pass: asks the upstream to delete everything of the tenant's that is still there and says what was found.
 * Call again until cleanupDone(): namespaces and CRDs take their finalizers' time. Idempotent; replicas may run it at once.
 */
export async function deleteTenantObjects(pool: UpstreamPool, discovery: DiscoveryCache, tenant: TenantId): Promise<CleanupProgress> {
  const progress: CleanupProgress = { namespaces: 0, clusterObjects: 0, unlisted: [] };

  // Every namespace, filtered by exact prefix: a namespace that lost its label is still the tenant's, and a labelled
  // namespace outside the prefix is not (never delete outside it).
  const namespaces = (await listUpstream(pool, '/api/v1/namespaces')).filter((ns) => isTenantsUpstreamName(ns.metadata.name, tenant));
  progress.namespaces = namespaces.length;
  await deleteAll(pool, '/api/v1/namespaces', namespaces);

  await discovery.refresh();
  for (const resource of discovery.clusterResources()) {
    if (!resource.verbs.includes('list') || !resource.verbs.includes('delete')) continue;
    const ownership = ownershipOf(resource.group, resource.resource, tenant);
    if (ownership === 'none') continue;
    const collection = collectionPath(resource);
    const selector = ownership === 'prefix-and-label' ? `?labelSelector=${encodeURIComponent(`${TENANT_LABEL}=${tenant}`)}` : '';
    let items: UpstreamItem[];
    try {
      items = await listUpstream(pool, collection + selector);
    } catch (error) {
      // Gone since discovery (a CRD deleted a moment ago): nothing left in it.
      if (error instanceof UpstreamListError && error.status === 404) continue;
      progress.unlisted.push(`${resource.resource}${resource.group === '' ? '' : '.' + resource.group}`);
      continue;
    }
    const mine = items.filter((item) => isTenantsObject(ownership, item.metadata.name, item.metadata.labels, tenant));
    progress.clusterObjects += mine.length;
    await deleteAll(pool, collection, mine);
  }

  // tenantgate's own objects for the tenant are under tenantgate's names, not the prefix.
  for (const path of tenantgateClusterObjectsOf(tenant)) {
    const object = await upstreamJson(pool, 'GET', path);
    if (object.status === 200) {
      progress.clusterObjects++;
      await deleteObject(pool, path);
    } else if (object.status !== 404) {
      progress.unlisted.push(path.includes('/clusterroles/') ? 'clusterroles.rbac.authorization.k8s.io' : 'clusterrolebindings.rbac.authorization.k8s.io');
    }
  }
  return progress;
}

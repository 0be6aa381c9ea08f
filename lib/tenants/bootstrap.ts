// What every tenant has upstream before its first request: its built-in namespaces (labelled as its own)
// and RBAC that gives its admin full power in its namespaces and over its cluster-scoped objects.
// Never grants anything on another tenant's namespace, nor impersonate/escalate/bind anywhere.
import { TENANT_LABEL, toUpstreamName, type TenantId } from '../convert/prefix.ts';
import { upstreamJson } from '../upstream/client.ts';
import type { UpstreamPool } from '../upstream/pool.ts';

/** Namespaces every Kubernetes cluster has, so every tenant has them too. */
export const BUILTIN_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

/** Upstream user name of a tenant's admin (CN of its admin certificate). */
export function tenantAdminUser(tenant: TenantId): string {
  return toUpstreamName('admin', tenant);
}

/**
 * Cluster-wide rights a tenant admin needs: writes on the cluster-scoped kinds it owns, and reads everywhere so
 * that cross-namespace lists (`kubectl get pods -A`) can be served. RBAC cannot restrict by name prefix or label,
 * so these rules are only safe because tenants reach the upstream through tenantgate alone, whose conversion
 * confines every path and name to the tenant's prefix and filters every list and watch item by it.
 */
export const TENANT_CLUSTER_ROLE = {
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'ClusterRole',
  metadata: { name: 'tenantgate:tenant-cluster-scope' },
  rules: [
    { apiGroups: ['*'], resources: ['*'], verbs: ['get', 'list', 'watch'] },
    { apiGroups: [''], resources: ['namespaces', 'persistentvolumes'], verbs: ['*'] },
    { apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles', 'clusterrolebindings'], verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'] },
    { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], verbs: ['*'] },
    { apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], verbs: ['*'] },
    { apiGroups: ['scheduling.k8s.io'], resources: ['priorityclasses'], verbs: ['*'] },
    { apiGroups: ['admissionregistration.k8s.io'], resources: ['validatingwebhookconfigurations', 'mutatingwebhookconfigurations'], verbs: ['*'] },
    { apiGroups: ['authorization.k8s.io'], resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews', 'subjectaccessreviews'], verbs: ['create'] },
    { apiGroups: ['authentication.k8s.io'], resources: ['selfsubjectreviews', 'tokenreviews'], verbs: ['create'] },
  ],
};

interface UpstreamObject {
  metadata: { name: string; [field: string]: unknown };
  [field: string]: unknown;
}

async function ensure(pool: UpstreamPool, collectionPath: string, object: UpstreamObject): Promise<void> {
  const created = await upstreamJson(pool, 'POST', collectionPath, object);
  if (created.status === 201 || created.status === 409) return;
  throw new Error(`bootstrap: creating ${collectionPath}/${object.metadata.name} answered ${created.status}: ${JSON.stringify(created.body).slice(0, 300)}`);
}

/** Name of the RoleBinding that makes the tenant admin cluster-admin in each of its upstream namespaces. */
export const TENANT_ADMIN_BINDING = 'tenantgate:tenant-admin';

/** Name of the ClusterRoleBinding of a tenant's admin to TENANT_CLUSTER_ROLE. */
export function tenantClusterRoleBindingName(tenant: TenantId): string {
  return `tenantgate:tenant:${tenant}`;
}

/** Full power inside one of the tenant's upstream namespaces: cluster-admin, bound in that namespace only. */
export async function grantTenantNamespace(pool: UpstreamPool, tenant: TenantId, upstreamNamespace: string): Promise<void> {
  await ensure(pool, `/apis/rbac.authorization.k8s.io/v1/namespaces/${upstreamNamespace}/rolebindings`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: TENANT_ADMIN_BINDING, namespace: upstreamNamespace, labels: { [TENANT_LABEL]: tenant } },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: tenantAdminUser(tenant) }],
  });
}

/** The ClusterRole every tenant admin is bound to (shared by all tenants). */
export async function ensureTenantClusterRole(pool: UpstreamPool): Promise<void> {
  await ensure(pool, '/apis/rbac.authorization.k8s.io/v1/clusterroles', TENANT_CLUSTER_ROLE);
}

export async function ensureTenantClusterRoleBinding(pool: UpstreamPool, tenant: TenantId): Promise<void> {
  await ensure(pool, '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: tenantClusterRoleBindingName(tenant), labels: { [TENANT_LABEL]: tenant } },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: TENANT_CLUSTER_ROLE.metadata.name },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: tenantAdminUser(tenant) }],
  });
}

/** One of the tenant's upstream namespaces, labelled as its own, with its admin's RoleBinding in it. */
export async function ensureTenantNamespace(pool: UpstreamPool, tenant: TenantId, upstreamNamespace: string): Promise<void> {
  await ensure(pool, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: upstreamNamespace, labels: { [TENANT_LABEL]: tenant } } });
  await grantTenantNamespace(pool, tenant, upstreamNamespace);
}

/** Creates (or confirms) the tenant's built-in namespaces and RBAC upstream. Idempotent. */
export async function bootstrapTenant(pool: UpstreamPool, tenant: TenantId): Promise<void> {
  await ensureTenantClusterRole(pool);
  await ensureTenantClusterRoleBinding(pool, tenant);
  for (const namespace of BUILTIN_NAMESPACES) await ensureTenantNamespace(pool, tenant, toUpstreamName(namespace, tenant));
}

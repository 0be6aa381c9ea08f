// What every tenant has upstream before its first request: its built-in namespaces (labelled as its own)
// and RBAC that gives its admin full power in its namespaces and over its cluster-scoped objects.
// Never grants a tenant identity anything on a namespace that is not its tenant's, nor impersonate anywhere.
import { carriesTenantLabel, CUSTOM_RESOURCE_SUBRESOURCES, KINDS, type KindRow } from '../convert/kinds.ts';
import { TENANT_LABEL, toUpstreamName, type TenantId } from '../convert/prefix.ts';
import { tenantSignersWildcard } from '../convert/rules/signers.ts';
import { TENANT_CLUSTER_SCOPE_GROUP, tenantAdminUser } from '../auth/impersonation.ts';
import { upstreamJson } from '../upstream/client.ts';
import { listUpstream } from '../upstream/own-watch.ts';
import type { UpstreamPool } from '../upstream/pool.ts';

/** Namespaces every Kubernetes cluster has, so every tenant has them too. */
export const BUILTIN_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

const READS = ['get', 'list', 'watch'];
const RBAC = '/apis/rbac.authorization.k8s.io/v1';

interface PolicyRule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

/**
 * A resource and its subresources as RBAC names them. RBAC matches `<resource>/<subresource>` exactly (or a wildcard
 * resource), never a wildcard after the slash: each subresource is named.
 */
function withSubresources(resource: string, subresources: readonly string[]): string[] {
  return [resource, ...subresources.map((subresource) => `${resource}/${subresource}`)];
}

/** One rule per upstream API group (where a stored kind's objects are: KindRow.upstreamGroup), its resources in table order. */
function rulesByGroup(rows: readonly KindRow[], verbs: string[], withSubresources: (row: KindRow) => string[]): PolicyRule[] {
  const byGroup = new Map<string, string[]>();
  for (const row of rows) {
    const group = row.upstreamGroup ?? row.group;
    byGroup.set(group, [...(byGroup.get(group) ?? []), ...withSubresources(row)]);
  }
  return [...byGroup].map(([group, resources]) => ({ apiGroups: [group], resources, verbs }));
}

const CLUSTER_ROWS = KINDS.filter((row) => row.scope === 'Cluster' && row.tenancy !== 'hidden');
const REVIEW_ROWS = CLUSTER_ROWS.filter((row) => row.tenancy === 'tenant' && !carriesTenantLabel(row));
// (PriorityClasses are shared and the tenant's own too: written under the confinement policy, as its own kinds.)
const OWN_CLUSTER_ROWS = CLUSTER_ROWS.filter((row) => (row.tenancy === 'tenant' && carriesTenantLabel(row)) || row.rule === 'priorityclass');
const SHARED_CLUSTER_ROWS = CLUSTER_ROWS.filter((row) => row.tenancy === 'shared-read-only' && row.rule !== 'priorityclass');

/** Marks the few upstream RBAC objects all tenants share (what the lifecycle controller watches and puts back). */
export const SHARED_TENANT_RBAC_LABEL = 'tenantgate.kubezoo.io/shared-tenant-rbac';

/**
 * The cluster-scoped rights every tenant admin holds upstream (through its group TENANT_CLUSTER_SCOPE_GROUP), derived from the table of kinds: everything on the
 * cluster-scoped kinds a tenant has (reads of all tenants' objects of those kinds, writes confined by the
 * admission policy), reads of the shared ones, and the reviews. No namespaced resource at all: inside its
 * namespaces the admin is cluster-admin by a RoleBinding in each, and a list across namespaces is made by
 * tenantgate itself once the tenant's own RBAC allowed it. `*` on clusterroles includes `bind` and `escalate`: a
 * tenant's ClusterRoles and ClusterRoleBindings grant what the admin does not hold cluster-wide (configmaps), and
 * a ClusterRole alone grants nothing, its bindings are shadow subjects upstream (convert/rules/cluster-subjects.ts)
 * or RoleBindings in the tenant's own namespaces. RBAC cannot restrict by name prefix: what these rules let a
 * tenant identity read of other tenants upstream is listed in `tenantReadableUpstream` (for the docs and tests).
 */
export const TENANT_CLUSTER_ROLE = {
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'ClusterRole',
  metadata: { name: 'tenantgate:tenant-cluster-scope', labels: { [SHARED_TENANT_RBAC_LABEL]: 'true' } },
  rules: [
    ...rulesByGroup(OWN_CLUSTER_ROWS, ['*'], (row) => withSubresources(row.resource, row.subresources)),
    ...rulesByGroup(SHARED_CLUSTER_ROWS, READS, (row) => [row.resource, row.resource + '/status']),
    ...rulesByGroup(REVIEW_ROWS, ['create'], (row) => [row.resource]),
  ],
};

/**
 * `group/resource` of every kind whose objects of all tenants (and the platform's) a tenant admin identity can read
 * upstream (none of their custom resources: TENANTS_OWN_CLUSTER_RULES grants writes only).
 */
export function tenantReadableUpstream(): string[] {
  return [...OWN_CLUSTER_ROWS, ...SHARED_CLUSTER_ROWS].map((row) => (row.group === '' ? row.resource : `${row.resource}.${row.upstreamGroup ?? row.group}`));
}

export interface UpstreamObject {
  metadata: { name: string; [field: string]: unknown };
  [field: string]: unknown;
}

/**
 * The fields tenantgate keeps as it wrote them (RBAC objects, the EndpointSlice of `default/kubernetes`); anything else
 * (annotations, an aggregated role's rules, which the upstream fills) is left alone.
 */
const KEPT_FIELDS = ['rules', 'roleRef', 'subjects', 'aggregationRule', 'endpoints', 'ports'] as const;

/** JSON with object keys sorted: the apiserver answers fields in its own order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );
}

/**
 * Marks tenantgate's own per-tenant cluster-scoped objects (bindings, the custom-resource role), whose names are not
 * under the tenant's prefix. Never the tenant label: a tenant's label-selected list or deletecollection (its view of
 * "all my ClusterRoleBindings") must not reach them, and the confinement policy refuses the tenant any write there.
 */
export const TENANTGATE_OWNED_LABEL = 'tenantgate.kubezoo.io/tenant';

/** True for tenantgate's own per-tenant objects: they must not carry the tenant label. */
function ownedByTenantgate(wanted: UpstreamObject): boolean {
  return (wanted.metadata.labels as Record<string, string> | undefined)?.[TENANTGATE_OWNED_LABEL] !== undefined;
}

/** Whether an upstream object lacks a label or a kept field (KEPT_FIELDS) as tenantgate wants it. */
export function differs(current: Record<string, unknown>, wanted: UpstreamObject): boolean {
  const labels = (current.metadata as { labels?: Record<string, string> } | undefined)?.labels ?? {};
  const wantedLabels = (wanted.metadata.labels ?? {}) as Record<string, string>;
  if (Object.entries(wantedLabels).some(([key, value]) => labels[key] !== value)) return true;
  // An older tenantgate labelled its own objects with the tenant label: taken off (TENANTGATE_OWNED_LABEL).
  if (ownedByTenantgate(wanted) && TENANT_LABEL in labels) return true;
  return KEPT_FIELDS.some((field) => field in wanted && canonical(current[field] ?? []) !== canonical(wanted[field] ?? []));
}

/**
 * Creates the object, or brings an existing one back to what tenantgate wants (its rules, subjects and labels:
 * how tenants of an older tenantgate are migrated). A binding whose roleRef differs is replaced (roleRef is immutable).
 */
export async function ensure(pool: UpstreamPool, collectionPath: string, object: UpstreamObject): Promise<void> {
  const fail = (what: string, answer: { status: number; body: unknown }) =>
    new Error(`bootstrap: ${what} ${collectionPath}/${object.metadata.name} answered ${answer.status}: ${JSON.stringify(answer.body).slice(0, 300)}`);
  const created = await upstreamJson(pool, 'POST', collectionPath, object);
  if (created.status === 201) return;
  if (created.status !== 409) throw fail('creating', created);
  const path = `${collectionPath}/${encodeURIComponent(object.metadata.name)}`;
  const current = await upstreamJson(pool, 'GET', path);
  if (current.status !== 200) throw fail('reading', current);
  if (!differs(current.body, object)) return;
  if ('roleRef' in object && canonical(current.body.roleRef) !== canonical(object.roleRef)) {
    const deleted = await upstreamJson(pool, 'DELETE', path);
    if (deleted.status !== 200 && deleted.status !== 404) throw fail('replacing', deleted);
    return ensure(pool, collectionPath, object);
  }
  const labels = { ...current.body.metadata.labels, ...(object.metadata.labels as Record<string, string> | undefined) };
  if (ownedByTenantgate(object)) delete labels[TENANT_LABEL];
  const updated = await upstreamJson(pool, 'PUT', path, { ...current.body, ...object, metadata: { ...current.body.metadata, labels } });
  if (updated.status !== 200 && updated.status !== 409) throw fail('updating', updated); // 409: someone wrote first; the next reconcile looks again
}

/** Name of the RoleBinding that makes the tenant admin cluster-admin in each of its upstream namespaces. */
export const TENANT_ADMIN_BINDING = 'tenantgate:tenant-admin';

/** Full power inside one of the tenant's upstream namespaces: cluster-admin, bound in that namespace only. */
export async function grantTenantNamespace(pool: UpstreamPool, tenant: TenantId, upstreamNamespace: string): Promise<void> {
  await ensure(pool, `${RBAC}/namespaces/${upstreamNamespace}/rolebindings`, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: TENANT_ADMIN_BINDING, namespace: upstreamNamespace, labels: { [TENANT_LABEL]: tenant } },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: tenantAdminUser(tenant) }],
  });
}

/**
 * Marks a tenant's own roles of rights only it holds at the cluster scope (its cluster-scoped custom resources, its
 * signers): the shared role TENANTS_OWN_CLUSTER_RULES aggregates them, so none needs a ClusterRoleBinding.
 */
export const AGGREGATE_TO_TENANTS_LABEL = 'tenantgate.kubezoo.io/aggregate-to-tenant-admins';

/** Marks the ClusterRoles tenantgate keeps on tenants' cluster-scoped custom resources. */
export const CUSTOM_RESOURCES_ROLE_LABEL = 'tenantgate.kubezoo.io/tenant-custom-resources';

/** Marks the ClusterRoles on tenants' own signers. */
export const SIGNERS_ROLE_LABEL = 'tenantgate.kubezoo.io/tenant-signers';

/**
 * Every tenant's rules on its cluster-scoped custom resources and signers, aggregated by the upstream's aggregation
 * controller from the per-tenant roles. RBAC cannot grant on a name prefix, so a tenant admin holds these rules on
 * every tenant's such resources upstream: writes only, which the confinement policy limits to its own groups and
 * names (and signers of its own domain).
 */
export const TENANTS_OWN_CLUSTER_RULES = {
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'ClusterRole',
  metadata: { name: 'tenantgate:tenants-own-cluster-rules', labels: { [SHARED_TENANT_RBAC_LABEL]: 'true' } },
  aggregationRule: { clusterRoleSelectors: [{ matchLabels: { [AGGREGATE_TO_TENANTS_LABEL]: 'true' } }] },
};

function groupBinding(name: string, group: string, role: string): UpstreamObject {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name, labels: { [SHARED_TENANT_RBAC_LABEL]: 'true' } },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: group }],
  };
}

/**
 * Shared RBAC an older tenantgate kept and this one no longer wants: removed on start. (`:shadow` made tenant admins'
 * shadow identities cluster-admin, for access reviews about them that nothing asks any more.)
 */
const RETIRED_SHARED_TENANT_RBAC: readonly string[] = [`${RBAC}/clusterrolebindings/tenantgate:tenant-cluster-scope:shadow`];

/**
 * The upstream RBAC every tenant admin's rights at the cluster scope come from, the same objects whatever the number of
 * tenants: bindings of the group the admins carry (TENANT_CLUSTER_SCOPE_GROUP), roles first so no binding names a
 * missing role. A ClusterRoleBinding per tenant would cost every request of the cluster (RBAC scans them all).
 */
export const SHARED_TENANT_RBAC: readonly { collection: string; object: UpstreamObject }[] = [
  { collection: `${RBAC}/clusterroles`, object: TENANT_CLUSTER_ROLE },
  { collection: `${RBAC}/clusterroles`, object: TENANTS_OWN_CLUSTER_RULES },
  {
    collection: `${RBAC}/clusterrolebindings`,
    object: groupBinding(TENANT_CLUSTER_ROLE.metadata.name, TENANT_CLUSTER_SCOPE_GROUP, TENANT_CLUSTER_ROLE.metadata.name),
  },
  {
    collection: `${RBAC}/clusterrolebindings`,
    object: groupBinding(TENANTS_OWN_CLUSTER_RULES.metadata.name, TENANT_CLUSTER_SCOPE_GROUP, TENANTS_OWN_CLUSTER_RULES.metadata.name),
  },
];

/** Creates the shared tenant RBAC, or brings it back to what tenantgate wants. */
export async function ensureSharedTenantRbac(pool: UpstreamPool): Promise<void> {
  for (const { collection, object } of SHARED_TENANT_RBAC) await ensure(pool, collection, object);
  for (const path of RETIRED_SHARED_TENANT_RBAC) {
    const answer = await upstreamJson(pool, 'DELETE', path);
    if (answer.status !== 200 && answer.status !== 202 && answer.status !== 404) throw new Error(`removing ${path} answered ${answer.status}`);
  }
}

/** Name of the ClusterRole on the tenant's cluster-scoped custom resources (aggregated, bound to no one). */
export function tenantCustomResourcesName(tenant: TenantId): string {
  return `tenantgate:tenant-custom-resources:${tenant}`;
}

export interface CustomResourceDefinition {
  spec?: { group?: string; scope?: string; names?: { plural?: string } };
}

/** The labels of a tenant's role that TENANTS_OWN_CLUSTER_RULES aggregates. */
function aggregatedRoleLabels(tenant: TenantId, kind: string): Record<string, string> {
  return { [TENANTGATE_OWNED_LABEL]: tenant, [kind]: 'true', [AGGREGATE_TO_TENANTS_LABEL]: 'true' };
}

/**
 * Writes only: the shared role aggregating this one grants them to every tenant admin, and the confinement policy keeps
 * each admin's writes in its own groups and names; reads of cluster-scoped objects are made by tenantgate itself once
 * the tenant's RBAC allowed them (request/pipeline.ts authorizeClusterScopeReads), so no tenant identity reads another's.
 */
const CUSTOM_RESOURCE_WRITES = ['create', 'update', 'patch', 'delete', 'deletecollection'];
const SUBRESOURCE_WRITES = ['update', 'patch'];

/**
 * The writes on the tenant's cluster-scoped custom resources, by group and plural: RBAC cannot grant on a group
 * prefix, and the shared role cannot name every tenant's groups. Namespaced ones need nothing cluster-wide.
 */
export function tenantCustomResourcesRole(tenant: TenantId, crds: readonly CustomResourceDefinition[]) {
  const rules: PolicyRule[] = [];
  for (const crd of crds) {
    const { group, scope, names } = crd.spec ?? {};
    if (scope !== 'Cluster' || typeof group !== 'string' || !group.startsWith(tenant + '-') || typeof names?.plural !== 'string') continue;
    rules.push({ apiGroups: [group], resources: [names.plural], verbs: CUSTOM_RESOURCE_WRITES });
    rules.push({
      apiGroups: [group],
      resources: CUSTOM_RESOURCE_SUBRESOURCES.map((subresource) => `${names.plural}/${subresource}`),
      verbs: SUBRESOURCE_WRITES,
    });
  }
  rules.sort((a, b) => (a.apiGroups[0]! + a.resources[0]! < b.apiGroups[0]! + b.resources[0]! ? -1 : 1));
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: tenantCustomResourcesName(tenant), labels: aggregatedRoleLabels(tenant, CUSTOM_RESOURCES_ROLE_LABEL) },
    rules,
  };
}

/**
 * The tenant's role on its cluster-scoped custom resources as its CRDs are now: made when it first has one, removed
 * when it has none left, so a tenant without them keeps no ClusterRole upstream.
 */
export async function ensureTenantCustomResources(pool: UpstreamPool, tenant: TenantId, crds: readonly CustomResourceDefinition[]): Promise<void> {
  const role = tenantCustomResourcesRole(tenant, crds);
  if (role.rules.length > 0) return ensure(pool, `${RBAC}/clusterroles`, role);
  const deleted = await upstreamJson(pool, 'DELETE', `${RBAC}/clusterroles/${encodeURIComponent(role.metadata.name)}`);
  if (deleted.status !== 200 && deleted.status !== 404) throw new Error(`deleting clusterrole ${role.metadata.name} answered ${deleted.status}`);
}

/** Bounded: a write of the role that loses to another writer (the lifecycle's reconcile) is read and made again. */
const CUSTOM_RESOURCES_ATTEMPTS = 5;
// Generous: the aggregation controller lands a rule in ~100 ms on a quiet rig, seconds on a loaded 2-core one.
const AUTHORIZED_WITHIN_MS = 10_000;

/**
 * A user no binding names: reviewed with the admins' group, it holds exactly what the group does. (Reviewed as the
 * admin itself, an older tenantgate's per-tenant binding of the admin would answer for the group's rule before it is
 * in force, and an upgrade would remove that binding too early.)
 */
const GROUP_PROBE_USER = 'tenantgate:cluster-scope-group-probe';

/**
 * Waits (bounded) until the upstream's authorizer allows tenant admins (their group) `verb` on `resource` of `group`
 * (named `name`, or any): its RBAC is served from informers, and an aggregated rule lands after the aggregation controller.
 */
async function untilAdminAllowed(
  pool: UpstreamPool,
  tenant: TenantId,
  attributes: { verb: string; group: string; resource: string; name?: string },
): Promise<void> {
  const review = {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    spec: { user: GROUP_PROBE_USER, groups: [TENANT_CLUSTER_SCOPE_GROUP], resourceAttributes: attributes },
  };
  const deadline = Date.now() + AUTHORIZED_WITHIN_MS;
  for (;;) {
    const answer = await upstreamJson(pool, 'POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', review);
    if (answer.body?.status?.allowed === true) return;
    if (Date.now() > deadline)
      throw new Error(`the upstream does not allow ${tenantAdminUser(tenant)}'s group to ${attributes.verb} ${attributes.resource}.${attributes.group} yet`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Brings the admin's role on the tenant's cluster-scoped custom resources up to the tenant's CRDs as they are now, and
 * waits (bounded) until the upstream's authorizer allows the admin on `written`.
 * Called before a tenant's CRD write is answered, so no client learns of a CRD it cannot use yet.
 */
export async function syncTenantCustomResources(pool: UpstreamPool, tenant: TenantId, written: CustomResourceDefinition): Promise<void> {
  const crdsOfTenant = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions?labelSelector=${encodeURIComponent(`${TENANT_LABEL}=${tenant}`)}`;
  const rolePath = `${RBAC}/clusterroles/${encodeURIComponent(tenantCustomResourcesName(tenant))}`;
  for (let attempt = 1; ; attempt++) {
    const crds = (await listUpstream(pool, crdsOfTenant)) as CustomResourceDefinition[];
    await ensureTenantCustomResources(pool, tenant, crds);
    const wanted = tenantCustomResourcesRole(tenant, crds);
    const current = await upstreamJson(pool, 'GET', rolePath);
    if (wanted.rules.length === 0 ? current.status === 404 : current.status === 200 && !differs(current.body, wanted)) break;
    if (attempt === CUSTOM_RESOURCES_ATTEMPTS) throw new Error(`${rolePath} still differs after ${attempt} writes`);
  }
  const rule = tenantCustomResourcesRole(tenant, [written]).rules[0];
  if (rule === undefined) return; // namespaced, or not the tenant's: nothing at the cluster scope to wait for
  await untilAdminAllowed(pool, tenant, { verb: 'create', group: rule.apiGroups[0]!, resource: rule.resources[0]! });
}

/** Name of the ClusterRole on the tenant's own certificate signers (aggregated, bound to no one). */
export function tenantSignersName(tenant: TenantId): string {
  return `tenantgate:tenant-signers:${tenant}`;
}

/**
 * `approve` and `sign` on the signers of the tenant's own signer domain, and no other: the apiserver's CSR admission
 * asks about `<domain>/*`, so the tenant admin approves and signs only its tenant's requests (convert/rules/signers.ts).
 */
export function tenantSignersRole(tenant: TenantId) {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: tenantSignersName(tenant), labels: aggregatedRoleLabels(tenant, SIGNERS_ROLE_LABEL) },
    rules: [{ apiGroups: ['certificates.k8s.io'], resources: ['signers'], resourceNames: [tenantSignersWildcard(tenant)], verbs: ['approve', 'sign'] }],
  };
}

/**
 * The admin's rights on the tenant's signers, made when the tenant writes its first certificate signing request (a
 * tenant that never does keeps no ClusterRole upstream), in force before that write is answered.
 */
export async function ensureTenantSigners(pool: UpstreamPool, tenant: TenantId): Promise<void> {
  await ensure(pool, `${RBAC}/clusterroles`, tenantSignersRole(tenant));
  await untilAdminAllowed(pool, tenant, { verb: 'approve', group: 'certificates.k8s.io', resource: 'signers', name: tenantSignersWildcard(tenant) });
}

/**
 * tenantgate's own cluster-scoped objects for a tenant (paths), not under its prefix: removed with the tenant. The
 * ClusterRoleBindings are what an older tenantgate kept per tenant (LEGACY_TENANT_BINDINGS).
 */
export function tenantgateClusterObjectsOf(tenant: TenantId): string[] {
  const binding = (name: string) => `${RBAC}/clusterrolebindings/${encodeURIComponent(name)}`;
  return [
    ...legacyTenantBindingsOf(tenant).map(binding),
    `${RBAC}/clusterroles/${encodeURIComponent(tenantCustomResourcesName(tenant))}`,
    `${RBAC}/clusterroles/${encodeURIComponent(tenantSignersName(tenant))}`,
  ];
}

/**
 * The ClusterRoleBindings an older tenantgate kept for each tenant (its admin's, its shadow's, its custom resources'
 * and signers'), which the shared group bindings replace: removed once those are in place.
 */
export function legacyTenantBindingsOf(tenant: TenantId): string[] {
  return [`tenantgate:tenant:${tenant}`, `tenantgate:tenant-shadow:${tenant}`, tenantCustomResourcesName(tenant), tenantSignersName(tenant)];
}

/** One of the tenant's upstream namespaces, labelled as its own, with its admin's RoleBinding in it. */
export async function ensureTenantNamespace(pool: UpstreamPool, tenant: TenantId, upstreamNamespace: string): Promise<void> {
  await ensure(pool, '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: upstreamNamespace, labels: { [TENANT_LABEL]: tenant } } });
  await grantTenantNamespace(pool, tenant, upstreamNamespace);
}

/** Creates (or confirms) the tenant's built-in namespaces upstream, with its admin's RoleBinding in each. Idempotent. */
export async function bootstrapTenant(pool: UpstreamPool, tenant: TenantId): Promise<void> {
  await Promise.all(BUILTIN_NAMESPACES.map((namespace) => ensureTenantNamespace(pool, tenant, toUpstreamName(namespace, tenant))));
}

// The built-in ClusterRoles every cluster has (cluster-admin, admin, edit, view, system:discovery, ...) as each tenant's
// own copies upstream, `<id>-<name>`: rules copied from the upstream's built-ins, aggregation in the tenant's domain.
// Never copies a role the upstream does not have, nor binds a copy to any identity but the tenant's own.
import { builtinKindOf, type KindRow } from '../convert/kinds.ts';
import type { TenantId } from '../convert/prefix.ts';
import { objectToUpstream, RESERVED_TENANT_IDS, type ConvertContext, type Json } from '../convert/rules/index.ts';
import { storedNameToUpstream } from '../convert/rules/names.ts';
import { upstreamJson } from '../upstream/client.ts';
import type { UpstreamPool } from '../upstream/pool.ts';
import { ensure, type UpstreamObject } from './bootstrap.ts';
import { STORED_CLUSTER_BINDINGS } from './cluster-bindings.ts';

/**
 * Copied into every tenant. admin/edit/view are aggregated from the three `system:aggregate-to-*` roles (which hold
 * their rules) and from each other; the `system:` roles below are what clients and tools bind to: discovery and
 * self-reviews (kubectl, client-go), auth-delegator (aggregated API servers, kube-rbac-proxy, metrics-server),
 * monitoring (Prometheus scraping /metrics and health), service-account-issuer-discovery (OIDC federation).
 * Controllers' and nodes' roles are left out: they name kinds a tenant does not have (nodes, CSRs, leases upstream).
 */
export const BUILTIN_CLUSTER_ROLES: readonly string[] = [
  'cluster-admin',
  'admin',
  'edit',
  'view',
  'system:aggregate-to-admin',
  'system:aggregate-to-edit',
  'system:aggregate-to-view',
  'system:discovery',
  'system:basic-user',
  'system:public-info-viewer',
  'system:auth-delegator',
  'system:monitoring',
  'system:service-account-issuer-discovery',
];

/**
 * The built-in ClusterRoleBindings every cluster grants all its users (in the tenant's form): a tenant's tools list
 * and read them as in any cluster. They bind the tenant's `system:authenticated` (every tenant identity carries it),
 * and grant nothing beyond what the upstream's own bindings already grant every caller.
 */
export const BUILTIN_CLUSTER_ROLE_BINDINGS: readonly { name: string; groups: readonly string[] }[] = [
  { name: 'system:discovery', groups: ['system:authenticated'] },
  { name: 'system:basic-user', groups: ['system:authenticated'] },
  { name: 'system:public-info-viewer', groups: ['system:authenticated', 'system:unauthenticated'] },
  { name: 'system:service-account-issuer-discovery', groups: ['system:serviceaccounts'] },
];

type BuiltinBinding = (typeof BUILTIN_CLUSTER_ROLE_BINDINGS)[number];

/** The built-in bindings a tenant has: none for a tenant that cannot carry groups (identity.ts, RESERVED_TENANT_IDS). */
export function builtinBindingsOf(tenant: TenantId): readonly BuiltinBinding[] {
  return RESERVED_TENANT_IDS.has(tenant) ? [] : BUILTIN_CLUSTER_ROLE_BINDINGS;
}

/** A built-in ClusterRole as the upstream has it, reduced to what a copy takes from it (the tenant's form). */
export interface BuiltinRole {
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  rules?: unknown[];
  aggregationRule?: unknown;
}

const RBAC = '/apis/rbac.authorization.k8s.io/v1';
const CLUSTER_ROLE_ROW = builtinKindOf('rbac.authorization.k8s.io', 'ClusterRole') as KindRow;
const CLUSTER_ROLE_BINDING_ROW = builtinKindOf('rbac.authorization.k8s.io', 'ClusterRoleBinding') as KindRow;

/**
 * Reads the upstream's built-in roles. An aggregated role keeps no rules: the upstream's aggregation controller fills
 * the copy's from the tenant's own roles. A role the upstream lacks (an older version) is left out.
 */
export async function readBuiltinRoles(pool: UpstreamPool): Promise<BuiltinRole[]> {
  const roles: BuiltinRole[] = [];
  for (const name of BUILTIN_CLUSTER_ROLES) {
    const answer = await upstreamJson(pool, 'GET', `${RBAC}/clusterroles/${encodeURIComponent(name)}`);
    if (answer.status === 404) continue;
    if (answer.status !== 200) throw new Error(`reading the upstream's built-in clusterrole ${name} answered ${answer.status}`);
    const { labels, annotations } = answer.body.metadata as BuiltinRole['metadata'];
    const role: BuiltinRole = { metadata: { name, ...(labels && { labels }), ...(annotations && { annotations }) } };
    if (answer.body.aggregationRule !== undefined) role.aggregationRule = answer.body.aggregationRule;
    else role.rules = answer.body.rules ?? [];
    roles.push(role);
  }
  return roles;
}

/** Built-in roles name only built-in kinds: no discovery answer is ever needed to convert them. */
function contextOf(tenant: TenantId): ConvertContext {
  return { tenant, scopeOf: () => undefined, kindScope: () => undefined };
}

/**
 * The tenant's copy of a built-in role, converted exactly as the tenant's own write of it would be: name
 * `<id>-<name>`, the tenant label, aggregate-to-* labels and selectors in the tenant's aggregation domain.
 */
export function tenantBuiltinRole(tenant: TenantId, role: BuiltinRole): UpstreamObject {
  const copy: Json = structuredClone({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', ...role });
  return objectToUpstream(copy, contextOf(tenant), CLUSTER_ROLE_ROW) as UpstreamObject;
}

/** The tenant's copy of a built-in ClusterRoleBinding: its own role, its own groups (stored, shadow subjects upstream). */
export function tenantBuiltinBinding(tenant: TenantId, binding: BuiltinBinding): UpstreamObject {
  const object: Json = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: {
      name: binding.name,
      labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults' },
      annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' },
    },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: binding.name },
    subjects: binding.groups.map((name) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name })),
  };
  return objectToUpstream(object, contextOf(tenant), CLUSTER_ROLE_BINDING_ROW) as UpstreamObject;
}

/** Upstream names of the tenant's built-in ClusterRoleBindings (kept, never expanded: they grant nothing namespaced). */
export function builtinBindingNamesOf(tenant: TenantId): Set<string> {
  return new Set(builtinBindingsOf(tenant).map((binding) => storedNameToUpstream(binding.name, tenant)));
}

/** The label every built-in role and binding carries, copies included: what the lifecycle controller lists and watches. */
export const BOOTSTRAPPING_LABEL = 'kubernetes.io/bootstrapping';

export async function ensureTenantBuiltinRoles(pool: UpstreamPool, tenant: TenantId, roles: readonly BuiltinRole[]): Promise<void> {
  await Promise.all(roles.map((role) => ensure(pool, `${RBAC}/clusterroles`, tenantBuiltinRole(tenant, role))));
}

export async function ensureTenantBuiltinBinding(pool: UpstreamPool, tenant: TenantId, binding: BuiltinBinding): Promise<void> {
  await ensure(pool, STORED_CLUSTER_BINDINGS, tenantBuiltinBinding(tenant, binding));
}

export async function ensureTenantBuiltinBindings(pool: UpstreamPool, tenant: TenantId): Promise<void> {
  await Promise.all(builtinBindingsOf(tenant).map((binding) => ensureTenantBuiltinBinding(pool, tenant, binding)));
}

// Whom tenantgate impersonates upstream for a caller (DESIGN §2 step 7): administrators as themselves,
// tenants' users and groups under the tenant's prefix, so no tenant identity can equal another's or a system one.
import { toUpstreamName, type TenantId } from '../convert/prefix.ts';
import { identityToUpstream } from '../convert/rules/index.ts';
import { TENANT_EXTRA_KEY } from '../convert/rules/identity.ts';
import type { Identity } from './identity.ts';

export interface UpstreamIdentity {
  user: string;
  groups: string[];
  uid?: string;
  extra?: Record<string, string[]>;
  /** The tenant the identity is one of (null: an administrator's own). Never sent: extra carries it where it matters. */
  tenant?: TenantId | null;
}

export { TENANT_EXTRA_KEY } from '../convert/rules/identity.ts';

/** Upstream user name of a tenant's admin (CN of its admin certificate). */
export function tenantAdminUser(tenant: TenantId): string {
  return toUpstreamName('admin', tenant);
}

/**
 * The group every tenant admin carries upstream for requests at the cluster scope: the few shared ClusterRoleBindings
 * of its rights there name it (tenants/bootstrap.ts), so no tenant needs a ClusterRoleBinding of its own, which the
 * apiserver's RBAC would scan on every request of every user. No tenant can name it: tenants' groups are `<id>:...`.
 */
export const TENANT_CLUSTER_SCOPE_GROUP = 'tenantgate:tenant-cluster-scope';

/** A request as far as impersonation cares: reads of objects reach no admission; requests in a namespace need no cluster-scope group. */
export interface ImpersonatedRequest {
  verb: string;
  subresource: string;
  /** The request's namespace ('' at the cluster scope; a Namespace's own name for its requests, as RequestInfo has it). */
  namespace?: string;
  resource?: string;
}

const READ_VERBS: ReadonlySet<string> = new Set(['get', 'list', 'watch']);
/** Subresources the apiserver admits as CONNECT even when the verb is a read. */
const CONNECT_SUBRESOURCES: ReadonlySet<string> = new Set(['proxy', 'exec', 'attach', 'portforward']);

interface UpstreamForms {
  /** Every attribute: user, groups, uid and the tenant extra that the confinement policy reads. */
  full: UpstreamIdentity;
  /** What RBAC needs for a read: user and groups (each impersonated attribute costs the apiserver one authorization). */
  read: UpstreamIdentity | undefined;
  /** The same two for a request inside one of the tenant's namespaces: a tenant admin's cluster-scope group left out. */
  namespacedFull: UpstreamIdentity | undefined;
  namespacedRead: UpstreamIdentity | undefined;
}

/** Identities live as long as their connection or token cache entry: their upstream forms are made once. */
const formsOf = new WeakMap<Identity, UpstreamForms>();

/**
 * A user and groups in the upstream's names, with the cluster-scope group when the user is the tenant's admin: a review
 * about the admin (which names no groups) asks what the admin's requests carry.
 */
export function withClusterScopeGroup<T extends { user: string; groups: string[] }>(identity: T, tenant: TenantId): T {
  return identity.user === tenantAdminUser(tenant) ? withGrantedClusterScope(identity) : identity;
}

/**
 * The identity with the cluster-scope group added: the admin's always; another tenant user's for a write at the cluster
 * scope that the tenant's own RBAC (its ClusterRoleBindings, which upstream RBAC never sees) allowed, and which the
 * confinement policy still confines to the tenant's objects.
 */
export function withGrantedClusterScope<T extends { groups: string[] }>(identity: T): T {
  return identity.groups.includes(TENANT_CLUSTER_SCOPE_GROUP) ? identity : { ...identity, groups: [...identity.groups, TENANT_CLUSTER_SCOPE_GROUP] };
}

function fullUpstreamIdentity(identity: Identity): UpstreamIdentity {
  const { tenant } = identity;
  if (tenant === null) return identity;
  // The tenant's own "authenticated" group, so a tenant's bindings to system:authenticated grant within the tenant only.
  // (Service-account identities already carry it from their token review, and an impersonated one may carry
  // system:unauthenticated instead, as the apiserver decides: never twice, never both.)
  const alreadyClassed = identity.groups.includes('system:authenticated') || identity.groups.includes('system:unauthenticated');
  const tenantGroups = alreadyClassed ? identity.groups : [...identity.groups, 'system:authenticated'];
  const { user, groups } = withClusterScopeGroup(identityToUpstream(identity.user, tenantGroups, tenant), tenant);
  const upstream: UpstreamIdentity = { user, groups, extra: { ...identity.extra, [TENANT_EXTRA_KEY]: [tenant] }, tenant };
  // An impersonated uid is opaque to RBAC and names nothing of another tenant's: it goes as the tenant gave it.
  if (identity.uid !== undefined) upstream.uid = identity.uid;
  return upstream;
}

/** The form without the cluster-scope group, or the form itself when it has none (every identity but an admin's). */
function withoutClusterScopeGroup(form: UpstreamIdentity): UpstreamIdentity {
  return form.groups.includes(TENANT_CLUSTER_SCOPE_GROUP) ? { ...form, groups: form.groups.filter((group) => group !== TENANT_CLUSTER_SCOPE_GROUP) } : form;
}

/**
 * The identity tenantgate impersonates upstream. For a tenant's read of objects (`request` a get, list or watch that
 * is no CONNECT) only the user and groups go: RBAC reads nothing else, and admission, where the confinement policy
 * reads the tenant extra, never sees a read. Everything else carries every attribute. A request inside a namespace
 * goes without the admin's cluster-scope group: its rights there are a RoleBinding's, and every impersonated value
 * costs the apiserver one more authorization; the admin's reads there go with its user alone.
 */
export function upstreamIdentityOf(identity: Identity, request?: ImpersonatedRequest | null): UpstreamIdentity {
  if (identity.tenant === null) return identity;
  let forms = formsOf.get(identity);
  if (forms === undefined) {
    forms = { full: fullUpstreamIdentity(identity), read: undefined, namespacedFull: undefined, namespacedRead: undefined };
    formsOf.set(identity, forms);
  }
  if (request == null) return forms.full;
  const read = READ_VERBS.has(request.verb) && !CONNECT_SUBRESOURCES.has(request.subresource);
  if (read) forms.read ??= { user: forms.full.user, groups: forms.full.groups, tenant: identity.tenant };
  if (request.namespace === undefined || request.namespace === '' || request.resource === 'namespaces') return read ? forms.read! : forms.full;
  // The admin's read in its namespace: cluster-admin there through its RoleBinding, so its groups grant nothing more,
  // and a read meets no admission that could ask for them (the apiserver adds its own system:authenticated).
  if (read)
    return (forms.namespacedRead ??=
      forms.read!.user === tenantAdminUser(identity.tenant) ? { ...forms.read!, groups: [] } : withoutClusterScopeGroup(forms.read!));
  return (forms.namespacedFull ??= withoutClusterScopeGroup(forms.full));
}

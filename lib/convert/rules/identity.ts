// Identities as upstream sees them: user `<id>-<user>`, group `<id>:<group>`, service account
// `system:serviceaccount:<id>-<ns>:<name>` (and its namespace group `system:serviceaccounts:<id>-<ns>`).
// Never maps an upstream identity to a tenant's unless it carries that tenant's exact prefix.
import { toTenantName, toUpstreamName, type TenantId } from '../prefix.ts';
import { forbidden } from '../../errors/status-error.ts';

const SA_USER = 'system:serviceaccount:';
const SA_GROUP = 'system:serviceaccounts:';

/**
 * Tenant ids whose prefixes collide with names Kubernetes reserves: `system:<group>` is the form of the upstream's
 * own groups (`system:masters` is cluster-admin), so tenant `system` can never carry groups. Tenant validation
 * refuses these ids (invalidTenantId).
 */
export const RESERVED_TENANT_IDS: ReadonlySet<string> = new Set(['system']);

/**
 * The extra key tenantgate impersonates on every tenant write (its value: the tenant), which the confinement policy
 * reads upstream. tenantgate's own, never the tenant's: it is taken out of what a tenant reads back.
 */
export const TENANT_EXTRA_KEY = 'tenant';

/** Groups the upstream authenticator adds by itself; shown to tenants as they are in authentication results. */
export const WELL_KNOWN_GROUPS: ReadonlySet<string> = new Set(['system:authenticated', 'system:unauthenticated', 'system:serviceaccounts']);

/** `system:serviceaccount:<ns>:<name>` split into namespace and name, or null for any other user. */
export function parseServiceAccountUser(user: string): { namespace: string; name: string } | null {
  if (!user.startsWith(SA_USER)) return null;
  const rest = user.slice(SA_USER.length);
  const colon = rest.indexOf(':');
  if (colon <= 0 || colon === rest.length - 1) return null;
  return { namespace: rest.slice(0, colon), name: rest.slice(colon + 1) };
}

/** The upstream username of a tenant's service account. */
export function serviceAccountUser(namespace: string, name: string, tenant: TenantId): string {
  return SA_USER + toUpstreamName(namespace, tenant) + ':' + name;
}

export function userToUpstream(user: string, tenant: TenantId): string {
  const sa = parseServiceAccountUser(user);
  if (sa !== null) return serviceAccountUser(sa.namespace, sa.name, tenant);
  return toUpstreamName(user, tenant);
}

export function userToTenant(upstreamUser: string, tenant: TenantId): string | null {
  const sa = parseServiceAccountUser(upstreamUser);
  if (sa !== null) {
    const namespace = toTenantName(sa.namespace, tenant);
    return namespace === null ? null : SA_USER + namespace + ':' + sa.name;
  }
  return toTenantName(upstreamUser, tenant);
}

export function groupToUpstream(group: string, tenant: TenantId): string {
  if (group.startsWith(SA_GROUP) && group.length > SA_GROUP.length) return SA_GROUP + toUpstreamName(group.slice(SA_GROUP.length), tenant);
  if (RESERVED_TENANT_IDS.has(tenant)) {
    throw forbidden(`tenant ${JSON.stringify(tenant)} cannot carry groups: upstream reserves the "${tenant}:" prefix`);
  }
  return tenant + ':' + group;
}

export function groupToTenant(upstreamGroup: string, tenant: TenantId): string | null {
  if (upstreamGroup.startsWith(SA_GROUP)) {
    const namespace = toTenantName(upstreamGroup.slice(SA_GROUP.length), tenant);
    return namespace === null ? null : SA_GROUP + namespace;
  }
  if (RESERVED_TENANT_IDS.has(tenant)) return null;
  if (upstreamGroup.length <= tenant.length + 1 || upstreamGroup.charCodeAt(tenant.length) !== 58 /* ':' */ || !upstreamGroup.startsWith(tenant)) return null;
  return upstreamGroup.slice(tenant.length + 1);
}

/**
 * Groups of an upstream authentication result (TokenReview, SelfSubjectReview) in the tenant's view: the tenant's
 * groups unprefixed, the authenticator's own well-known groups as they are, everyone else's dropped; no duplicates.
 */
export function authenticatedGroupsToTenant(upstreamGroups: readonly unknown[], tenant: TenantId): string[] {
  const groups: string[] = [];
  for (const group of upstreamGroups) {
    if (typeof group !== 'string') continue;
    const mine = WELL_KNOWN_GROUPS.has(group) ? group : groupToTenant(group, tenant);
    if (mine !== null && !groups.includes(mine)) groups.push(mine);
  }
  return groups;
}

/** The identity the upstream request impersonates for a tenant's user and groups. */
export function identityToUpstream(user: string, groups: readonly string[], tenant: TenantId): { user: string; groups: string[] } {
  return { user: userToUpstream(user, tenant), groups: groups.map((group) => groupToUpstream(group, tenant)) };
}

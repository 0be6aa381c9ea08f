// API groups and apiVersions: a tenant's CRD group `example.com` is `<id>-example.com` upstream; core, built-in
// groups and '*' are the same for everyone. Never maps an upstream group to a tenant's unless it carries its prefix.
import { PREFIX_LENGTH, toTenantName, toUpstreamName, type TenantId } from '../prefix.ts';
import { isBuiltinGroup, isTenantCrdGroup } from '../kinds.ts';

export function apiGroupToUpstream(group: string, tenant: TenantId): string {
  return isTenantCrdGroup(group) ? toUpstreamName(group, tenant) : group;
}

/** The tenant's group for an upstream group; null for another tenant's (or an unprefixed custom) group. */
export function apiGroupToTenant(upstreamGroup: string, tenant: TenantId): string | null {
  if (upstreamGroup === '' || upstreamGroup === '*' || isBuiltinGroup(upstreamGroup)) return upstreamGroup;
  const group = toTenantName(upstreamGroup, tenant);
  return group !== null && isTenantCrdGroup(group) ? group : null;
}

/** `apps/v1` → `apps`, `v1` → `` (core). */
export function groupOfApiVersion(apiVersion: string): string {
  const slash = apiVersion.lastIndexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

export function apiVersionToUpstream(apiVersion: string, tenant: TenantId): string {
  return isTenantCrdGroup(groupOfApiVersion(apiVersion)) ? toUpstreamName(apiVersion, tenant) : apiVersion;
}

/** The tenant's apiVersion; null for another tenant's (or an unprefixed custom) group. */
export function apiVersionToTenant(upstreamApiVersion: string, tenant: TenantId): string | null {
  const upstreamGroup = groupOfApiVersion(upstreamApiVersion);
  if (upstreamGroup === '' || isBuiltinGroup(upstreamGroup)) return upstreamApiVersion;
  return apiGroupToTenant(upstreamGroup, tenant) === null ? null : upstreamApiVersion.slice(PREFIX_LENGTH);
}

// API groups and apiVersions: a tenant's CRD group `example.com` is `<id>-example.com` upstream; a built-in group whose
// kinds tenantgate stores as its own custom resources is that group upstream (`flowcontrol.apiserver.k8s.io` ↔
// `flowcontrol.tenantgate.kubezoo.io`, from the table of kinds); other built-in groups, core and '*' are the same for
// everyone. Never maps an upstream group to a tenant's unless it carries its prefix or is the table's stored group.
import { PREFIX_LENGTH, toTenantName, toUpstreamName, type TenantId } from '../prefix.ts';
import { isBuiltinGroup, isTenantCrdGroup, storedGroupOf, tenantGroupOfStored } from '../kinds.ts';

/** The upstream group of the tenant's objects of `group` (paths, RBAC rules, reviews, webhook rules). */
export function apiGroupToUpstream(group: string, tenant: TenantId): string {
  return isTenantCrdGroup(group) ? toUpstreamName(group, tenant) : storedGroupOf(group);
}

/** The tenant's group for an upstream group; null for another tenant's (or an unprefixed custom) group. */
export function apiGroupToTenant(upstreamGroup: string, tenant: TenantId): string | null {
  if (upstreamGroup === '' || upstreamGroup === '*') return upstreamGroup;
  if (isBuiltinGroup(upstreamGroup)) return tenantGroupOfStored(upstreamGroup) ?? upstreamGroup;
  const group = toTenantName(upstreamGroup, tenant);
  return group !== null && isTenantCrdGroup(group) ? group : null;
}

/**
 * The upstream group of a discovery or OpenAPI document the tenant asks for: its CRD groups prefixed, built-in groups
 * as they are (the stored kinds' documents are the built-in group's own: its resources, verbs and schemas).
 */
export function documentGroupToUpstream(group: string, tenant: TenantId): string {
  return isTenantCrdGroup(group) ? toUpstreamName(group, tenant) : group;
}

/** `apps/v1` → `apps`, `v1` → `` (core). */
export function groupOfApiVersion(apiVersion: string): string {
  const slash = apiVersion.lastIndexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

export function apiVersionToUpstream(apiVersion: string, tenant: TenantId): string {
  const group = groupOfApiVersion(apiVersion);
  if (isTenantCrdGroup(group)) return toUpstreamName(apiVersion, tenant);
  const stored = storedGroupOf(group);
  return stored === group ? apiVersion : stored + apiVersion.slice(group.length);
}

/** The tenant's apiVersion; null for another tenant's (or an unprefixed custom) group. */
export function apiVersionToTenant(upstreamApiVersion: string, tenant: TenantId): string | null {
  const upstreamGroup = groupOfApiVersion(upstreamApiVersion);
  if (upstreamGroup === '') return upstreamApiVersion;
  if (isBuiltinGroup(upstreamGroup)) {
    const group = tenantGroupOfStored(upstreamGroup);
    return group === undefined ? upstreamApiVersion : group + upstreamApiVersion.slice(upstreamGroup.length);
  }
  return apiGroupToTenant(upstreamGroup, tenant) === null ? null : upstreamApiVersion.slice(PREFIX_LENGTH);
}

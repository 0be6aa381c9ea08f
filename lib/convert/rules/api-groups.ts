// API groups and apiVersions: a tenant's CRD group `example.com` is `<id>-example.com` upstream; a built-in kind that
// tenantgate stores as its own custom resources is in that group upstream (`flowcontrol.apiserver.k8s.io` ↔
// `flowcontrol.tenantgate.kubezoo.io`, clusterrolebindings of `rbac.authorization.k8s.io` ↔ `rbac.tenantgate.kubezoo.io`,
// by resource or kind from the table of kinds); other built-in groups, core and '*' are the same for everyone.
// Never maps an upstream group to a tenant's unless it carries its prefix or is the table's stored group.
import { PREFIX_LENGTH, toTenantName, toUpstreamName, type TenantId } from '../prefix.ts';
import { isBuiltinGroup, isTenantCrdGroup, storedGroupOf, storedGroupOfKind, tenantGroupOfStored, upstreamGroupsOfRule } from '../kinds.ts';

/** The upstream group of the tenant's objects of `resource` in `group` (paths, reviews, referents). */
export function apiGroupToUpstream(group: string, tenant: TenantId, resource: string): string {
  return isTenantCrdGroup(group) ? toUpstreamName(group, tenant) : storedGroupOf(group, resource);
}

/**
 * The upstream group of a group named whole, without a resource (an APIService's `<version>.<group>`): a tenant's CRD
 * group prefixed, a wholly stored group its stored group, any other built-in group itself (its real kinds are there).
 */
export function wholeGroupToUpstream(group: string, tenant: TenantId): string {
  if (isTenantCrdGroup(group)) return toUpstreamName(group, tenant);
  const named = upstreamGroupsOfRule(group);
  return named.length === 1 ? named[0]! : group;
}

/**
 * A rule's groups (RBAC, webhooks) upstream, for the `resources` it names: a wholly stored group becomes its stored
 * group; a group some of whose named resources (or '*') are stored is named with their stored groups too, which
 * apiGroupsToTenant takes off again. Duplicates are left out.
 */
export function apiGroupsToUpstream(groups: readonly string[], resources: readonly string[], tenant: TenantId): string[] {
  const upstream = new Set<string>();
  for (const group of groups) {
    if (isTenantCrdGroup(group)) {
      upstream.add(toUpstreamName(group, tenant));
      continue;
    }
    const named = upstreamGroupsOfRule(group);
    if (named.length === 1) {
      upstream.add(named[0]!);
      continue;
    }
    upstream.add(group);
    for (const resource of resources) {
      const plural = resource.split('/', 1)[0]!;
      if (plural === '*') for (const stored of named) upstream.add(stored);
      else upstream.add(storedGroupOf(group, plural));
    }
  }
  return [...upstream];
}

/**
 * A rule's upstream groups as the tenant wrote them: a stored group goes where its tenant group is named too (it was
 * added on the way up), else reads as its tenant group; groups not the tenant's stay as they are (lenient).
 */
export function apiGroupsToTenant(upstreamGroups: readonly string[], tenant: TenantId): string[] {
  const named = new Set(upstreamGroups);
  const groups = new Set<string>();
  for (const upstreamGroup of upstreamGroups) {
    const stored = tenantGroupOfStored(upstreamGroup);
    if (stored !== undefined && named.has(stored)) continue;
    groups.add(apiGroupToTenant(upstreamGroup, tenant) ?? upstreamGroup);
  }
  return [...groups];
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

/** The upstream apiVersion of an object (or reference) of `kind` in `apiVersion`. */
export function apiVersionToUpstream(apiVersion: string, tenant: TenantId, kind: string): string {
  const group = groupOfApiVersion(apiVersion);
  if (isTenantCrdGroup(group)) return toUpstreamName(apiVersion, tenant);
  const stored = storedGroupOfKind(group, kind);
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

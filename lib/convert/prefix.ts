// The tenant prefix codec: how a tenant's names map to upstream names and back.
// Never returns a tenant name for an upstream name outside the tenant's exact `<id>-` prefix.

/** A tenant id: exactly 6 characters of [a-z0-9] (KubeZoo's rule). */
export type TenantId = string;

export const TENANT_ID_PATTERN = /^[a-z0-9]{6}$/;
/** Label every object created through tenantgate carries (KubeZoo's), so lists can filter server-side. */
export const TENANT_LABEL = 'kubezoo.io/tenant';
/** Length of `<id>-`. */
export const PREFIX_LENGTH = 7;
/** Longest DNS subdomain name upstream, and the longest namespace (a DNS label). */
export const MAX_UPSTREAM_NAME = 253;
export const MAX_UPSTREAM_NAMESPACE = 63;

export function isTenantId(value: string): value is TenantId {
  return TENANT_ID_PATTERN.test(value);
}

export function tenantPrefix(tenant: TenantId): string {
  return tenant + '-';
}

/** The upstream name of a tenant's name (namespace, cluster-scoped name, CRD group). */
export function toUpstreamName(name: string, tenant: TenantId): string {
  return tenant + '-' + name;
}

/** The tenant's name for an upstream name, or null when the name is not the tenant's. */
export function toTenantName(upstreamName: string, tenant: TenantId): string | null {
  if (upstreamName.length <= PREFIX_LENGTH || upstreamName.charCodeAt(6) !== 45 /* '-' */ || !upstreamName.startsWith(tenant)) return null;
  return upstreamName.slice(PREFIX_LENGTH);
}

export function isTenantsUpstreamName(upstreamName: string, tenant: TenantId): boolean {
  return toTenantName(upstreamName, tenant) !== null;
}

/** The tenant whose prefix an upstream name carries, if it carries one at all (which alone proves no ownership). */
export function tenantOfUpstreamName(upstreamName: string | undefined): TenantId | undefined {
  if (upstreamName === undefined || upstreamName.length <= PREFIX_LENGTH || upstreamName.charCodeAt(6) !== 45 /* '-' */) return undefined;
  const id = upstreamName.slice(0, 6);
  return isTenantId(id) ? id : undefined;
}

// Whom tenantgate impersonates upstream for a caller (DESIGN §2 step 7): administrators as themselves,
// tenants' users and groups under the tenant's prefix, so no tenant identity can equal another's or a system one.
import { identityToUpstream } from '../convert/rules/index.ts';
import type { Identity } from './identity.ts';

export interface UpstreamIdentity {
  user: string;
  groups: string[];
  uid?: string;
  extra?: Record<string, string[]>;
}

/** Extra key that marks every tenant request upstream. */
export const TENANT_EXTRA_KEY = 'tenant';

export function upstreamIdentityOf(identity: Identity): UpstreamIdentity {
  const { tenant } = identity;
  if (tenant === null) return identity;
  // The tenant's own "authenticated" group, so a tenant's bindings to system:authenticated grant within the tenant only.
  // (Service-account identities already carry it from their token review, and an impersonated one may carry
  // system:unauthenticated instead, as the apiserver decides: never twice, never both.)
  const alreadyClassed = identity.groups.includes('system:authenticated') || identity.groups.includes('system:unauthenticated');
  const tenantGroups = alreadyClassed ? identity.groups : [...identity.groups, 'system:authenticated'];
  const { user, groups } = identityToUpstream(identity.user, tenantGroups, tenant);
  const upstream: UpstreamIdentity = { user, groups, extra: { ...identity.extra, [TENANT_EXTRA_KEY]: [tenant] } };
  // An impersonated uid is opaque to RBAC and names nothing of another tenant's: it goes as the tenant gave it.
  if (identity.uid !== undefined) upstream.uid = identity.uid;
  return upstream;
}

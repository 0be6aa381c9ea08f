// Whom tenantgate impersonates upstream for a caller (DESIGN §2 step 7): administrators as themselves,
// tenants' users and groups under the tenant's prefix, so no tenant identity can equal another's or a system one.
import { identityToUpstream } from '../convert/rules/index.ts';
import type { Identity } from './identity.ts';

export interface UpstreamIdentity {
  user: string;
  groups: string[];
  extra?: Record<string, string[]>;
}

/** Extra key that marks every tenant request upstream. */
export const TENANT_EXTRA_KEY = 'tenant';

export function upstreamIdentityOf(identity: Identity): UpstreamIdentity {
  const { tenant } = identity;
  if (tenant === null) return identity;
  // The tenant's own "authenticated" group, so a tenant's bindings to system:authenticated grant within the tenant only.
  // (Service-account identities already carry it from their token review: never twice.)
  const tenantGroups = identity.groups.includes('system:authenticated') ? identity.groups : [...identity.groups, 'system:authenticated'];
  const { user, groups } = identityToUpstream(identity.user, tenantGroups, tenant);
  return { user, groups, extra: { ...identity.extra, [TENANT_EXTRA_KEY]: [tenant] } };
}

// The resolve-tenant stage (DESIGN §2 step 3): a tenant identity is honoured only while its tenant exists in the
// index, is not being deleted, and its proof belongs to this incarnation. Never lets an unproven identity through.
import type { TenantStore, Tenant } from '../tenants/tenant.ts';
import { certificateBelongsTo } from '../tenants/credentials.ts';
import { unauthorized } from '../errors/status-error.ts';
import type { Identity } from './identity.ts';

/** Why a tenant identity is refused now, or null when its tenant accepts it. Administrators are not checked. */
export function tenantRefusal(identity: Identity, tenants: Pick<TenantStore, 'get'>): string | null {
  if (identity.tenant === null) return null;
  const tenant: Tenant | undefined = tenants.get(identity.tenant);
  if (tenant === undefined) return 'no such tenant';
  if (tenant.metadata.deletionTimestamp !== undefined) return 'the tenant is being deleted';
  const proof = identity.proof;
  if (proof === undefined) return 'no proof of identity';
  if (proof.kind === 'certificate') return certificateBelongsTo(proof.serial, tenant) ? null : 'the certificate was not issued for this tenant';
  return proof.tenantUid === tenant.metadata.uid ? null : 'the token predates this tenant';
}

/** Throws 401 unless the identity's tenant accepts it. The reason stays in tenantgate: a caller learns nothing. */
export function resolveTenant(identity: Identity, tenants: Pick<TenantStore, 'get'>): void {
  if (tenantRefusal(identity, tenants) !== null) throw unauthorized();
}

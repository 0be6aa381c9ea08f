// Writes to a Tenant's status by tenantgate's controllers (lifecycle, quota): read from the index, changed, stored
// at the resourceVersion read, again on a conflict. Never writes when the change leaves the Tenant as it was.
import type { TenantId } from '../convert/prefix.ts';
import { TenantConflict, TenantMissing, type Tenant, type TenantStore } from './tenant.ts';

const STATUS_WRITE_ATTEMPTS = 10;

/** Applies `mutate` (false: nothing to change) to the stored Tenant and stores it; undefined once the Tenant is gone. */
export async function writeTenantStatus(store: TenantStore, id: TenantId, mutate: (tenant: Tenant) => boolean): Promise<Tenant | undefined> {
  for (let attempt = 1; ; attempt++) {
    const stored = store.get(id);
    if (stored === undefined) return undefined;
    const tenant = structuredClone(stored);
    if (!mutate(tenant)) return stored;
    try {
      return await store.update(tenant);
    } catch (error) {
      if (error instanceof TenantMissing) return undefined;
      if (!(error instanceof TenantConflict) || attempt >= STATUS_WRITE_ATTEMPTS) throw error;
      // The index may not have the newer version yet (etcd): give its watch a moment.
      await new Promise((resolve) => setTimeout(resolve, 20 * attempt));
    }
  }
}

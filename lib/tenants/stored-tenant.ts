// What a store writes for a create or an update: the writer's tenant with the identity fields only the store sets.
// Shared by every store so the embedded one and etcd's agree; never reads or writes storage itself.
import { randomUUID } from 'node:crypto';
import type { Tenant, TenantStore } from './tenant.ts';

/** When a tenant was created, to the second as Kubernetes writes it. */
export function creationTimestampNow(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, 'Z');
}

/** The stored form of a new tenant: identity fields are the store's, not the writer's. */
export function newTenant(tenant: Parameters<TenantStore['create']>[0]): Tenant {
  return structuredClone({
    ...tenant,
    metadata: { ...tenant.metadata, uid: randomUUID(), resourceVersion: '', creationTimestamp: creationTimestampNow(), generation: 1 },
  }) as Tenant;
}

/** The stored form of an update: what the writer sent, with the identity fields of the tenant it replaces. */
export function updatedTenant(tenant: Tenant, current: Tenant | undefined): Tenant {
  const stored = structuredClone(tenant);
  if (current !== undefined) {
    stored.metadata.uid = current.metadata.uid;
    stored.metadata.creationTimestamp = current.metadata.creationTimestamp;
  }
  return stored;
}

// Chooses where tenants live: etcd when endpoints are configured, else the embedded store (one replica: dev, tests).
// The choice is made once, at startup; nothing else in tenantgate knows which store it has.
import { DEFAULT_ETCD_PREFIX, EtcdTenantStore } from './etcd-store.ts';
import { MemoryTenantStore } from './memory-store.ts';
import type { TenantStore } from './tenant.ts';

export interface TenantStoreOptions {
  /** etcd client URLs; none: the embedded store. */
  etcdEndpoints: string[];
  etcdPrefix: string;
}

export const DEFAULT_TENANT_STORE_OPTIONS: TenantStoreOptions = { etcdEndpoints: [], etcdPrefix: DEFAULT_ETCD_PREFIX };

/** Not started: call start() before serving. */
export function createTenantStore(options: TenantStoreOptions): TenantStore {
  if (options.etcdEndpoints.length === 0) return new MemoryTenantStore();
  return new EtcdTenantStore({ endpoints: options.etcdEndpoints, prefix: options.etcdPrefix });
}

import t from 'tap';
import { MemoryTenantStore } from '../../lib/tenants/memory-store.ts';
import { testTenantStoreContract } from '../helpers/tenant-store-contract.ts';

t.test('the embedded store keeps the TenantStore contract', (t) =>
  testTenantStoreContract(t, async () => {
    const store = new MemoryTenantStore();
    await store.start();
    return store;
  }),
);

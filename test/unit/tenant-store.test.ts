import t from 'tap';
import { DEFAULT_ETCD_PREFIX, EtcdTenantStore } from '../../lib/tenants/etcd-store.ts';
import { MemoryTenantStore } from '../../lib/tenants/memory-store.ts';
import { createTenantStore } from '../../lib/tenants/store.ts';
import { serveFlagsParser } from '../helpers/serve-config.ts';
import { testTenantStoreContract } from '../helpers/tenant-store-contract.ts';

t.test('the embedded store keeps the TenantStore contract', (t) =>
  testTenantStoreContract(t, async () => {
    const store = new MemoryTenantStore();
    await store.start();
    return store;
  }),
);

t.test('without etcd endpoints tenantgate keeps tenants in the embedded store, with them in etcd', async (t) => {
  t.ok(createTenantStore({ etcdEndpoints: [], etcdPrefix: '/x/' }) instanceof MemoryTenantStore);
  const etcd = createTenantStore({ etcdEndpoints: ['http://127.0.0.1:1'], etcdPrefix: '/x/' });
  t.ok(etcd instanceof EtcdTenantStore);
  await etcd.close();
});

t.test('serve flags and TENANTGATE_ETCD_* choose the tenant store', async (t) => {
  const parse = serveFlagsParser(t);
  const storeOf = (args: string[]) => parse(args).tenantStore;
  t.same(storeOf([]), { etcdEndpoints: [], etcdPrefix: DEFAULT_ETCD_PREFIX }, 'no endpoints: the embedded store');
  t.same(storeOf(['--etcd-endpoints', 'http://127.0.0.1:2379, http://127.0.0.2:2379', '--etcd-prefix', '/a/']), {
    etcdEndpoints: ['http://127.0.0.1:2379', 'http://127.0.0.2:2379'],
    etcdPrefix: '/a/',
  });
  process.env.TENANTGATE_ETCD_ENDPOINTS = 'http://127.0.0.3:2379';
  process.env.TENANTGATE_ETCD_PREFIX = '/from-env/';
  t.teardown(() => {
    delete process.env.TENANTGATE_ETCD_ENDPOINTS;
    delete process.env.TENANTGATE_ETCD_PREFIX;
  });
  t.same(storeOf([]), { etcdEndpoints: ['http://127.0.0.3:2379'], etcdPrefix: '/from-env/' }, 'from the environment');
});

// @kubernetes/client-node (HTTP/1.1) as two tenants with the same names: each reads, lists and watches
// only its own objects, under the names it used.
import * as k8s from '@kubernetes/client-node';
import t from 'tap';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant } from '../helpers/tenants.ts';

let stack: Stack;
const clients = new Map<string, k8s.KubeConfig>();

t.before(async () => {
  stack = await startStack({ controllers: false });
  for (const id of ['gamma3', 'delta4']) {
    const tenant = await createTestTenant(stack, id);
    const kc = new k8s.KubeConfig();
    kc.loadFromFile(tenant.kubeconfig);
    clients.set(id, kc);
  }
});
t.teardown(() => stack?.stop());

t.test('client-node: same names in two tenants, each sees only its own', async (t) => {
  for (const [id, kc] of clients) {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: 'app' } } });
    await core.createNamespacedConfigMap({ namespace: 'app', body: { metadata: { name: 'cfg' }, data: { owner: id } } });
  }
  for (const [id, kc] of clients) {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const cfg = await core.readNamespacedConfigMap({ namespace: 'app', name: 'cfg' });
    t.equal(cfg.data?.owner, id, `${id} reads its own configmap`);
    t.equal(cfg.metadata?.namespace, 'app');
    const all = await core.listConfigMapForAllNamespaces();
    const owners = all.items.filter((cm) => cm.metadata?.name === 'cfg').map((cm) => `${cm.metadata?.namespace}:${cm.data?.owner}`);
    t.same(owners, [`app:${id}`], `${id}'s list across namespaces has only its own cfg`);
    const namespaces = (await core.listNamespace()).items.map((ns) => ns.metadata?.name).sort();
    t.same(namespaces, ['app', 'default', 'kube-node-lease', 'kube-public', 'kube-system'], `${id} sees a cluster of its own`);
    const other = id === 'gamma3' ? 'delta4' : 'gamma3';
    await t.rejects(
      core.readNamespacedConfigMap({ namespace: `${other}-app`, name: 'cfg' }),
      { code: 404 },
      `${id} cannot read ${other}'s configmap by its upstream namespace`,
    );
  }
});

t.test("client-node: a watch across namespaces streams only the tenant's events", async (t) => {
  const gamma = clients.get('gamma3')!;
  const delta = clients.get('delta4')!;
  const seen: string[] = [];
  const controller = await new k8s.Watch(gamma).watch(
    '/api/v1/configmaps',
    {},
    (type, obj: k8s.V1ConfigMap) => {
      if (obj.metadata?.name === 'cfg') seen.push(`${type} ${obj.metadata.namespace} ${obj.data?.owner}/${obj.data?.step ?? ''}`);
    },
    () => {},
  );
  await new Promise((r) => setTimeout(r, 500));
  const patch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
  await delta.makeApiClient(k8s.CoreV1Api).patchNamespacedConfigMap({ namespace: 'app', name: 'cfg', body: { data: { step: 'delta' } } }, patch);
  await gamma.makeApiClient(k8s.CoreV1Api).patchNamespacedConfigMap({ namespace: 'app', name: 'cfg', body: { data: { step: 'gamma' } } }, patch);
  await new Promise((r) => setTimeout(r, 1000));
  controller.abort();
  t.same(seen, ['ADDED app gamma3/', 'MODIFIED app gamma3/gamma'], "gamma saw its own configmap and its own change, nothing of delta's");
});

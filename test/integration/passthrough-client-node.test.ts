// @kubernetes/client-node (HTTP/1.1) through tenantgate gives the same answers as straight to the kube-apiserver.
import * as k8s from '@kubernetes/client-node';
import t from 'tap';
import { exampleCrd, webDeployment } from '../helpers/fixtures.ts';
import { normalize, withoutRepeats } from '../helpers/normalize.ts';
import { startStack, type Stack } from '../helpers/stack.ts';

const { PatchStrategy, setHeaderOptions } = k8s;

const crd = exampleCrd('Gadget', 'gadgets');

type Kind = 'ConfigMap' | 'Deployment' | 'Gadget';

function objectOf(kind: Kind, namespace: string): k8s.KubernetesObject & Record<string, unknown> {
  const metadata = { name: 'thing', namespace, labels: { app: 'web' } };
  switch (kind) {
    case 'ConfigMap':
      return { apiVersion: 'v1', kind, metadata, data: { a: '1' } };
    case 'Deployment':
      return webDeployment('thing', namespace);
    case 'Gadget':
      return { apiVersion: 'example.com/v1', kind, metadata, spec: { size: 1 } };
  }
}

async function settle<T>(promise: Promise<T>): Promise<unknown> {
  try {
    return { ok: await promise };
  } catch (error) {
    const e = error as { code?: number; body?: string };
    let body: unknown = e.body;
    try {
      body = JSON.parse(String(e.body));
    } catch {
      // not JSON
    }
    return { error: e.code, body };
  }
}

async function scenario(kc: k8s.KubeConfig, namespace: string, kind: Kind): Promise<Record<string, unknown>> {
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const apps = kc.makeApiClient(k8s.AppsV1Api);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const object = objectOf(kind, namespace);
  const header = { apiVersion: object.apiVersion!, kind: object.kind!, metadata: { name: 'thing', namespace } };
  const jsonPatch = [{ op: 'add', path: '/metadata/labels/json', value: 'yes' }];
  const asJsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);
  const seen: Record<string, unknown> = {};

  const events: string[] = [];
  const listPath =
    kind === 'ConfigMap'
      ? `/api/v1/namespaces/${namespace}/configmaps`
      : kind === 'Deployment'
        ? `/apis/apps/v1/namespaces/${namespace}/deployments`
        : `/apis/example.com/v1/namespaces/${namespace}/gadgets`;
  const watching = await new k8s.Watch(kc).watch(
    listPath,
    {},
    (type, obj: k8s.KubernetesObject) =>
      events.push(
        `${type} ${Object.keys(obj.metadata?.labels ?? {})
          .sort()
          .join(',')}`,
      ),
    (error: unknown) => error && events.push(`watch failed: ${String(error)}`),
  );
  await new Promise((r) => setTimeout(r, 500));

  seen.create = await settle(objects.create(object));
  seen.read = await settle(objects.read(header));
  seen.jsonPatch = await settle(
    kind === 'ConfigMap'
      ? core.patchNamespacedConfigMap({ name: 'thing', namespace, body: jsonPatch }, asJsonPatch)
      : kind === 'Deployment'
        ? apps.patchNamespacedDeployment({ name: 'thing', namespace, body: jsonPatch }, asJsonPatch)
        : custom.patchNamespacedCustomObject(
            { group: 'example.com', version: 'v1', plural: 'gadgets', name: 'thing', namespace, body: jsonPatch },
            asJsonPatch,
          ),
  );
  seen.mergePatch = await settle(
    objects.patch(
      { ...header, metadata: { ...header.metadata, labels: { merge: 'yes' } } },
      undefined,
      undefined,
      undefined,
      undefined,
      PatchStrategy.MergePatch,
    ),
  );
  seen.strategicPatch = await settle(
    objects.patch(
      { ...header, metadata: { ...header.metadata, labels: { strategic: 'yes' } } },
      undefined,
      undefined,
      undefined,
      undefined,
      PatchStrategy.StrategicMergePatch,
    ),
  );
  const applied = { ...object, metadata: { ...object.metadata, labels: { app: 'web', ssa: 'yes' } } };
  seen.serverSideApply = await settle(objects.patch(applied, undefined, undefined, 'tester', true, PatchStrategy.ServerSideApply));
  seen.list = await settle(objects.list(object.apiVersion!, object.kind!, namespace));
  seen.delete = await settle(objects.delete(header));
  seen.readAfterDelete = await settle(objects.read(header));
  await new Promise((r) => setTimeout(r, 1000));
  watching.abort();
  // A MODIFIED that leaves the labels as they were is the deployment controller writing status: when it lands
  // against this test's patches is the controller's timing, not tenantgate's, so it is not compared.
  seen.watch = withoutRepeats(events).filter((event, i, all) => !(i > 0 && event.startsWith('MODIFIED ') && event.slice(9) === all[i - 1]!.split(' ')[1]));
  return normalize(seen, [[namespace, 'NS']]) as Record<string, unknown>;
}

let stack: Stack;
t.before(async () => {
  stack = await startStack();
});
t.teardown(() => stack?.stop());

t.test('client-node through tenantgate sees what it sees directly', async (t) => {
  const gateway = new k8s.KubeConfig();
  gateway.loadFromFile(stack.adminKubeconfig);
  const direct = new k8s.KubeConfig();
  direct.loadFromFile(stack.upstreamKubeconfig);
  await k8s.KubernetesObjectApi.makeApiClient(gateway).create(crd);
  t.equal((await stack.kubectlDirect(['wait', '--for=condition=Established', 'crd/gadgets.example.com', '--timeout=60s'])).code, 0);
  // Established comes a moment before the new resource is served: wait until it lists.
  for (let i = 0; i < 50 && (await stack.kubectlDirect(['get', 'gadgets.example.com', '-A'])).code !== 0; i++) await new Promise((r) => setTimeout(r, 200));
  const core = gateway.makeApiClient(k8s.CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: 'client-gw' } } });
  await core.createNamespace({ body: { metadata: { name: 'client-direct' } } });

  for (const kind of ['ConfigMap', 'Deployment', 'Gadget'] as const) {
    const [viaGateway, straight] = await Promise.all([scenario(gateway, 'client-gw', kind), scenario(direct, 'client-direct', kind)]);
    t.same(viaGateway, straight, `${kind}: every call answers the same through tenantgate`);
    const afterApply = viaGateway.serverSideApply as { ok?: { metadata: { labels: Record<string, string> } } };
    t.ok(afterApply.ok, `${kind}: server-side apply succeeded`);
    const labels = Object.keys(afterApply.ok?.metadata.labels ?? {}).sort();
    t.ok(labels.includes('json') && labels.includes('merge') && labels.includes('ssa'), `${kind}: patches applied (${labels})`);
    t.equal((viaGateway.readAfterDelete as { error?: number }).error, 404, `${kind}: 404 after delete`);
    const events = viaGateway.watch as string[];
    t.equal(events[0]?.split(' ')[0], 'ADDED', `${kind}: watch saw ADDED first`);
    t.equal(events.at(-1)?.split(' ')[0], 'DELETED', `${kind}: watch saw DELETED last`);
  }
});

// Issue 17 item 1: a tenant's pods reach tenantgate, not the upstream, with in-cluster config. The rig has no
// kubelet, so this test is one: it reads the Pod a controller made straight from the upstream, projects the files its
// service-account volume names (a TokenRequest bound to the pod, the CA and namespace its downward API points at),
// sets the environment its container declares, and runs @kubernetes/client-node's in-cluster config over them.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import t from 'tap';
import { CA_ANNOTATION, NAMESPACE_ANNOTATION, SERVICE_ACCOUNT_MOUNT_PATH } from '../../lib/tenants/in-cluster-access.ts';
import { connectH2, credentialsOf, h2Request } from '../helpers/http.ts';
import { encodeBody, goModuleCache, loadProtoMessages } from '../helpers/k8s-proto.ts';
import { exampleCrd } from '../helpers/fixtures.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';
import { succeeded } from '../helpers/kit.ts';

type Json = Record<string, any>;

const TENANTS = { alpha: 'incla1', bravo: 'inclb2' } as const;
/** Each tenant's CRD: the same fixture, in a group of its own. */
const GROUPS = { alpha: 'alpha.example.com', bravo: 'bravo.example.com' } as const;
const crd = (group: string) => {
  const definition = exampleCrd('Widget', 'widgets');
  return JSON.stringify({ ...definition, metadata: { name: `widgets.${group}` }, spec: { ...definition.spec, group } });
};

let stack: Stack;
const tenants = new Map<string, TestTenant>();

function deployment(name: string, extra: Json = {}): string {
  return JSON.stringify({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }], ...extra } },
    },
  });
}

/** The pods the upstream holds in a tenant's namespace with label app=`app`, once there is one (the controller is quick). */
async function upstreamPod(id: string, app: string): Promise<Json> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const list = JSON.parse(await succeeded(stack.kubectlDirect(['get', 'pods', '-n', `${id}-default`, '-l', `app=${app}`, '-o', 'json']), 'get pods')) as Json;
    if (list.items.length > 0) return list.items[0];
    if (Date.now() > deadline) throw new Error(`no pod for ${app} in ${id}-default within 60 s`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** What a kubelet would write into the pod's service-account volume, under `root` + the mount path. */
async function projectServiceAccountVolume(pod: Json, root: string): Promise<string> {
  const container = pod.spec.containers[0];
  const mount = container.volumeMounts.find((m: Json) => m.mountPath === SERVICE_ACCOUNT_MOUNT_PATH);
  const volume = pod.spec.volumes.find((v: Json) => v.name === mount.name);
  const dir = join(root, SERVICE_ACCOUNT_MOUNT_PATH);
  mkdirSync(dir, { recursive: true });
  for (const source of volume.projected.sources as Json[]) {
    if (source.serviceAccountToken !== undefined) {
      const token = await succeeded(
        stack.kubectlDirect([
          'create',
          'token',
          pod.spec.serviceAccountName,
          '-n',
          pod.metadata.namespace,
          '--bound-object-kind',
          'Pod',
          '--bound-object-name',
          pod.metadata.name,
          '--bound-object-uid',
          pod.metadata.uid,
        ]),
        'TokenRequest',
      );
      writeFileSync(join(dir, source.serviceAccountToken.path), token.trim());
    }
    if (source.configMap !== undefined) {
      const cm = JSON.parse(
        await succeeded(stack.kubectlDirect(['get', 'configmap', source.configMap.name, '-n', pod.metadata.namespace, '-o', 'json']), 'configmap'),
      ) as Json;
      for (const item of source.configMap.items) writeFileSync(join(dir, item.path), cm.data[item.key]);
    }
    for (const item of (source.downwardAPI?.items ?? []) as Json[]) {
      const path: string = item.fieldRef.fieldPath;
      const annotation = /^metadata\.annotations\['(.+)'\]$/.exec(path);
      const value = annotation !== null ? pod.metadata.annotations?.[annotation[1]!] : path === 'metadata.namespace' ? pod.metadata.namespace : undefined;
      if (value === undefined) throw new Error(`the kubelet would not know ${path}`);
      writeFileSync(join(dir, item.path), value);
    }
  }
  return root;
}

/** client-node's in-cluster config over the projected files and the container's declared environment. */
function inClusterClient(pod: Json, root: string): k8s.KubeConfig {
  const env = Object.fromEntries((pod.spec.containers[0].env ?? []).map((e: Json) => [e.name, e.value]));
  const saved = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT };
  process.env.KUBERNETES_SERVICE_HOST = env.KUBERNETES_SERVICE_HOST;
  process.env.KUBERNETES_SERVICE_PORT = env.KUBERNETES_SERVICE_PORT;
  try {
    const kc = new k8s.KubeConfig();
    kc.loadFromCluster(root);
    return kc;
  } finally {
    for (const [key, value] of [
      ['KUBERNETES_SERVICE_HOST', saved.host],
      ['KUBERNETES_SERVICE_PORT', saved.port],
    ] as const) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  }
}

t.before(async () => {
  stack = await startStack({ controllers: true });
  for (const [who, id] of Object.entries(TENANTS)) {
    const tenant = await createTestTenant(stack, id);
    tenants.set(who, tenant);
    await succeeded(tenant.kubectl(['apply', '-f', '-'], { input: crd(GROUPS[who as keyof typeof GROUPS]) }), 'crd');
    await succeeded(tenant.kubectl(['create', 'configmap', 'settings', '-n', 'default', `--from-literal=owner=${who}`]), 'configmap');
    await succeeded(tenant.kubectl(['create', 'configmap', `${who}-only`, '-n', 'default']), 'configmap');
    // The pod's service account may read its namespace, as a tenant would grant it.
    await succeeded(
      tenant.kubectl(['create', 'rolebinding', 'sa-view', '-n', 'default', '--clusterrole=view', '--serviceaccount=default:default']),
      'rolebinding',
    );
    await succeeded(tenant.kubectl(['apply', '-f', '-'], { input: deployment('app') }), 'deployment');
  }
});
t.teardown(() => stack?.stop());

t.test("a Deployment's pod gets tenantgate's address, CA and the tenant's namespace; its token stays the upstream's", async (t) => {
  const { port } = new URL(stack.gatewayUrl);
  const pod = await upstreamPod(TENANTS.alpha, 'app');
  const env = Object.fromEntries((pod.spec.containers[0].env ?? []).map((e: Json) => [e.name, e.value]));
  t.same(
    env,
    { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: port, KUBERNETES_SERVICE_PORT_HTTPS: port },
    'the container is pointed at tenantgate',
  );
  t.equal(pod.metadata.annotations?.[NAMESPACE_ANNOTATION], 'default', "the namespace file holds the tenant's name, not the prefixed one");
  t.equal(pod.metadata.annotations?.[CA_ANNOTATION], stack.files.ca.certPem, "the CA file holds tenantgate's CA");
  const volume = pod.spec.volumes.find((v: Json) => v.name.startsWith('kube-api-access-'));
  t.ok(
    volume.projected.sources.some((s: Json) => s.serviceAccountToken?.path === 'token'),
    'the token is still projected by the kubelet from the upstream',
  );
  t.notOk(JSON.stringify(volume).includes('kube-root-ca.crt'), "the upstream's CA is no longer mounted");
  // Only in the tenant's copy: the Deployment's template is as the tenant wrote it.
  const template = JSON.parse(
    await succeeded(tenants.get('alpha')!.kubectl(['get', 'deployment', 'app', '-n', 'default', '-o', 'json']), 'deployment'),
  ) as Json;
  t.notOk(template.spec.template.spec.containers[0].env, 'the Deployment the tenant reads has no injected environment');
});

for (const [who, id] of Object.entries(TENANTS)) {
  const other = who === 'alpha' ? 'bravo' : 'alpha';
  t.test(`${who}'s pod, with client-node's in-cluster config, talks to ${who}'s cluster only`, async (t) => {
    const pod = await upstreamPod(id, 'app');
    const kc = inClusterClient(pod, await projectServiceAccountVolume(pod, join(stack.dir, `pod-${id}`)));
    t.equal(kc.getCurrentCluster()?.server, stack.gatewayUrl, 'in-cluster config lands on tenantgate');
    const namespace = kc.getContextObject(kc.getCurrentContext())?.namespace;
    t.equal(namespace, 'default', "its namespace is the tenant's name");
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const configMaps = await core.listNamespacedConfigMap({ namespace: namespace! });
    const names = configMaps.items.map((cm) => cm.metadata?.name);
    t.ok(names.includes('settings') && names.includes(`${who}-only`), `lists ${who}'s ConfigMaps by their names`);
    t.notOk(names.includes(`${other}-only`), `never ${other}'s`);
    t.equal(configMaps.items.find((cm) => cm.metadata?.name === 'settings')?.data?.owner, who, `its settings are ${who}'s`);
    t.ok(
      configMaps.items.every((cm) => cm.metadata?.namespace === 'default'),
      "under the tenant's namespace name",
    );
    const whoami = await kc
      .makeApiClient(k8s.AuthenticationV1Api)
      .createSelfSubjectReview({ body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } });
    t.equal(whoami.status?.userInfo?.username, 'system:serviceaccount:default:default', 'it is its own service account, as the tenant names it');
    const groups = (await kc.makeApiClient(k8s.ApisApi).getAPIVersions()).groups.map((g) => g.name);
    t.ok(groups.includes(GROUPS[who as keyof typeof GROUPS]), `discovery shows ${who}'s CRD group`);
    t.notOk(groups.includes(GROUPS[other as keyof typeof GROUPS]), `not ${other}'s`);
    t.notOk(
      groups.some((g) => /^[a-z0-9]{6}-/.test(g)),
      'and no prefixed group',
    );
    await t.rejects(
      core.readNamespacedConfigMap({ namespace: `${TENANTS[other as keyof typeof TENANTS]}-default`, name: 'settings' }),
      { code: 403 },
      `${other}'s namespace by its upstream name is not reachable`,
    );
    await t.rejects(
      core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'written' } } }),
      { code: 403 },
      'view grants no writes: the upstream RBAC of the service account decides',
    );
  });
}

t.test('pods that bring their own credentials, or take none, are left alone; init containers are pointed too', async (t) => {
  const alpha = tenants.get('alpha')!;
  await succeeded(alpha.kubectl(['apply', '-f', '-'], { input: deployment('no-token', { automountServiceAccountToken: false }) }), 'deployment');
  const ownVolume = {
    volumes: [{ name: 'own', secret: { secretName: 'own-token', optional: true } }],
    containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10', volumeMounts: [{ name: 'own', mountPath: SERVICE_ACCOUNT_MOUNT_PATH }] }],
  };
  await succeeded(alpha.kubectl(['apply', '-f', '-'], { input: deployment('own-token', ownVolume) }), 'deployment');
  const withInit = { initContainers: [{ name: 'setup', image: 'registry.k8s.io/pause:3.10', env: [{ name: 'KUBERNETES_SERVICE_PORT', value: '1234' }] }] };
  await succeeded(alpha.kubectl(['apply', '-f', '-'], { input: deployment('with-init', withInit) }), 'deployment');

  const noToken = await upstreamPod(TENANTS.alpha, 'no-token');
  t.notOk(noToken.spec.containers[0].env, 'automountServiceAccountToken: false: no environment added');
  t.notOk(noToken.metadata.annotations?.[CA_ANNOTATION], 'nor annotations');
  const ownToken = await upstreamPod(TENANTS.alpha, 'own-token');
  t.notOk(ownToken.spec.containers[0].env, 'a pod with its own token mount: no environment added');
  t.same(
    ownToken.spec.volumes.map((v: Json) => v.name),
    ['own'],
    'and its volumes as written',
  );
  const init = await upstreamPod(TENANTS.alpha, 'with-init');
  const initEnv = Object.fromEntries(init.spec.initContainers[0].env.map((e: Json) => [e.name, e.value]));
  t.equal(initEnv.KUBERNETES_SERVICE_HOST, '127.0.0.1', 'an init container is pointed at tenantgate');
  t.equal(initEnv.KUBERNETES_SERVICE_PORT, '1234', "a variable the container sets itself wins, as over the kubelet's");
});

t.test('a pod a tenant sends as protobuf is pointed at tenantgate as one sent as JSON', async (t) => {
  const moduleCache = goModuleCache();
  if (moduleCache === undefined) throw new Error('the Go module cache of the rig is missing: npm run rig');
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'proto-pod', namespace: 'default', labels: { app: 'proto-pod' } },
    spec: { containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] },
  };
  const session = connectH2(credentialsOf(tenants.get('bravo')!.kubeconfig));
  try {
    const body = encodeBody(loadProtoMessages(moduleCache), 'k8s.io.api.core.v1.Pod', pod);
    const created = await h2Request(session, 'POST', '/api/v1/namespaces/default/pods', {
      headers: { 'content-type': 'application/vnd.kubernetes.protobuf', accept: 'application/json' },
      body,
    });
    t.equal(created.status, 201, `created: ${created.body.slice(0, 300)}`);
  } finally {
    session.close();
  }
  const upstream = await upstreamPod(TENANTS.bravo, 'proto-pod');
  t.equal(
    upstream.spec.containers[0].env?.find((e: Json) => e.name === 'KUBERNETES_SERVICE_HOST')?.value,
    '127.0.0.1',
    'its container is pointed at tenantgate',
  );
  t.equal(upstream.metadata.annotations?.[NAMESPACE_ANNOTATION], 'default', "with the tenant's namespace name");
});

t.test("a pod outside tenants' namespaces keeps the upstream's service-account volume", async (t) => {
  await succeeded(stack.kubectlDirect(['run', 'admin-pod', '-n', 'default', '--image=registry.k8s.io/pause:3.10', '--restart=Never']), 'run');
  const pod = JSON.parse(await succeeded(stack.kubectlDirect(['get', 'pod', 'admin-pod', '-n', 'default', '-o', 'json']), 'get')) as Json;
  t.notOk(pod.spec.containers[0].env, 'no environment added');
  t.ok(JSON.stringify(pod.spec.volumes).includes('kube-root-ca.crt'), "the upstream's CA as the ServiceAccount plugin mounts it");
});

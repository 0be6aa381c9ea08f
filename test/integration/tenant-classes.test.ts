// The platform's classes per tenant (Tenant spec.priorityClasses, storageClasses, ...): a tenant sees only the classes
// it may use, its pods and PVCs naming another are refused by tenantgate and by the upstream itself (a Deployment's
// pods included), a class its selector comes to match is its own within seconds, and it cannot widen its own set.
// Its defaults fill what its objects leave unset, its controllers' pods and claims included, in JSON and protobuf.
import t from 'tap';
import { TENANTS_PATH } from '../../lib/tenants/tenant.ts';
import { upstreamJson } from '../../lib/upstream/client.ts';
import { connectH2, credentialsOf, h2Request } from '../helpers/http.ts';
import { encodeBody, goModuleCache, loadProtoMessages } from '../helpers/k8s-proto.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, withClient, type TestTenant } from '../helpers/tenants.ts';
import { eventually, kubectlOk, succeeded } from '../helpers/kit.ts';

type Json = Record<string, any>;

let stack: Stack;
let alpha: TestTenant; // priority: tg-low only; storage: tier=gold
let bravo: TestTenant; // nothing set
let charlie: TestTenant; // priority: system-cluster-critical named
let delta: TestTenant; // defaults: priority tg-low (tg-high allowed too), runtime tg-sandbox, storage gold, ingress tg-internal

const pod = (name: string, priorityClassName?: string) =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { ...(priorityClassName && { priorityClassName }), containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
  });
const claim = (name: string, storageClassName: string) =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name },
    spec: { storageClassName, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
  });

const direct = (args: string[], input?: string) => succeeded(stack.kubectlDirect(args, { input }), `kubectl ${args.join(' ')} upstream`);

async function patchTenant(id: string, spec: Json): Promise<{ status: number; body: any }> {
  return withClient(stack.adminKubeconfig, (pool) =>
    upstreamJson(pool, 'PATCH', `${TENANTS_PATH}/${id}`, { spec }, { 'content-type': 'application/merge-patch+json' }),
  );
}

const names = async (tenant: TestTenant, resource: string) =>
  (await kubectlOk(tenant, ['get', resource, '-o', 'name']))
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => line.slice(line.indexOf('/') + 1))
    .sort();

t.before(async () => {
  stack = await startStack();
  const classes = [
    { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: 'tg-low', labels: { tier: 'low' } }, value: 100 },
    { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: 'tg-high', labels: { tier: 'high' } }, value: 1000 },
    { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'gold', labels: { tier: 'gold' } }, provisioner: 'example.com/none' },
    { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'silver', labels: { tier: 'silver' } }, provisioner: 'example.com/none' },
    { apiVersion: 'node.k8s.io/v1', kind: 'RuntimeClass', metadata: { name: 'tg-sandbox' }, handler: 'runsc' },
  ];
  await direct(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: classes }));
  alpha = await createTestTenant(stack, 'clalfa');
  bravo = await createTestTenant(stack, 'clbrav');
  charlie = await createTestTenant(stack, 'clchar');
  delta = await createTestTenant(stack, 'cldelt');
  for (const [tenant, spec] of [
    [alpha, { priorityClasses: { allowed: ['tg-low'] }, storageClasses: { selector: { matchLabels: { tier: 'gold' } } } }],
    [charlie, { priorityClasses: { allowed: ['system-cluster-critical', 'tg-low'] } }],
    [
      delta,
      {
        priorityClasses: { allowed: ['tg-high'], default: 'tg-low' },
        runtimeClasses: { default: 'tg-sandbox' },
        storageClasses: { default: 'gold' },
        ingressClasses: { default: 'tg-internal' },
      },
    ],
  ] as const) {
    const patched = await patchTenant(tenant.id, spec);
    if (patched.status !== 200) throw new Error(`patching ${tenant.id}: ${patched.status} ${JSON.stringify(patched.body).slice(0, 300)}`);
  }
  // Written on its namespaces by tenantgate: the upstream's policy reads them.
  await eventually("alpha's namespace default carries its classes", async () => {
    const namespace = JSON.parse(await direct(['get', 'namespace', `${alpha.id}-default`, '-o', 'json']));
    return namespace.metadata.annotations?.['tenantgate.kubezoo.io/allowed-storageclasses'] === 'gold' ? true : undefined;
  });
});
t.teardown(async () => {
  await stack?.stop();
});

t.test('each tenant lists, gets and watches only the classes it may use', async (t) => {
  t.same(await names(alpha, 'priorityclasses'), ['tg-low'], 'alpha: its one priority class');
  t.same(await names(alpha, 'storageclasses'), ['gold'], 'alpha: the storage classes its selector matches');
  const hidden = await alpha.kubectl(['get', 'priorityclass', 'tg-high']);
  t.not(hidden.code, 0, 'a class it may not use is not found');
  t.match(hidden.stderr, /NotFound|not found/);
  const bravoClasses = await names(bravo, 'priorityclasses');
  t.ok(bravoClasses.includes('tg-high') && bravoClasses.includes('tg-low'), "bravo, with nothing set: the platform's classes");
  t.notOk(bravoClasses.includes('system-cluster-critical'), 'but not the critical ones');
  t.same(await names(charlie, 'priorityclasses'), ['system-cluster-critical', 'tg-low'], 'charlie: the critical class its Tenant names');
  // A typed client asks for protobuf first: it is answered in JSON, filtered alike.
  const session = connectH2(credentialsOf(alpha.kubeconfig));
  try {
    const listed = await h2Request(session, 'GET', '/apis/scheduling.k8s.io/v1/priorityclasses', {
      headers: { accept: 'application/vnd.kubernetes.protobuf, application/json' },
    });
    t.equal(listed.status, 200);
    t.match(String(listed.headers['content-type']), /application\/json/, 'in JSON');
    t.same(
      (listed.json().items as Json[]).map((item) => item.metadata.name),
      ['tg-low'],
      'the protobuf-first list: its one class',
    );
  } finally {
    session.close();
  }
});

t.test("a pod naming a class its tenant may not use is refused, in its words; another tenant's is admitted", async (t) => {
  const refused = await alpha.kubectl(['create', '-f', '-'], { input: pod('p-high', 'tg-high') });
  t.not(refused.code, 0, 'alpha: tg-high refused');
  t.match(refused.stderr, /tg-high.*not one of the priority classes this tenant may use/);
  t.notMatch(refused.stderr, /clalfa-/, 'no upstream names');
  await kubectlOk(alpha, ['create', '-f', '-'], pod('p-low', 'tg-low'));
  await kubectlOk(bravo, ['create', '-f', '-'], pod('p-high', 'tg-high'));
  t.pass("alpha's tg-low pod and bravo's tg-high pod (same name) admitted");
  await kubectlOk(charlie, ['create', '-f', '-'], pod('p-critical', 'system-cluster-critical'));
  const upstream = JSON.parse(await direct(['get', 'pod', 'p-critical', '-n', `${charlie.id}-default`, '-o', 'json']));
  t.equal(upstream.spec.priority, 2_000_000_000, "charlie's Tenant names system-cluster-critical: its pod has it");
  const bravoCritical = await bravo.kubectl(['create', '-f', '-'], { input: pod('p-critical', 'system-cluster-critical') });
  t.not(bravoCritical.code, 0, 'bravo (nothing named) still may not');
});

t.test("a Deployment's pods are refused upstream too, and its ReplicaSet says why", async (t) => {
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'high' },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'high' } },
      template: {
        metadata: { labels: { app: 'high' } },
        spec: { priorityClassName: 'tg-high', containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
      },
    },
  };
  await kubectlOk(alpha, ['apply', '-f', '-'], JSON.stringify(deployment));
  const failure = await eventually("the ReplicaSet's ReplicaFailure condition", async () => {
    const replicaSets = JSON.parse(await kubectlOk(alpha, ['get', 'replicasets', '-l', 'app=high', '-o', 'json'])).items as Json[];
    return replicaSets.flatMap((rs) => (rs.status?.conditions ?? []) as Json[]).find((condition) => condition.type === 'ReplicaFailure');
  });
  t.match(failure.message, /tg-high is not one of the priority classes this tenant may use/, "the upstream policy's words");
  t.notMatch(failure.message, /clalfa-/, "in the tenant's names");
  const pods = JSON.parse(await direct(['get', 'pods', '-n', `${alpha.id}-default`, '-l', 'app=high', '-o', 'json'])).items as Json[];
  t.equal(pods.length, 0, 'no pod of it upstream');
  await kubectlOk(alpha, ['delete', 'deployment', 'high']);
});

t.test('a PVC naming a storage class outside the selector is refused; a class labelled into it is allowed within seconds', async (t) => {
  const refused = await alpha.kubectl(['create', '-f', '-'], { input: claim('data', 'silver') });
  t.not(refused.code, 0, 'silver refused');
  t.match(refused.stderr, /storage class silver is not one of the storage classes this tenant may use/);
  await kubectlOk(alpha, ['create', '-f', '-'], claim('data', 'gold'));
  await kubectlOk(bravo, ['create', '-f', '-'], claim('data', 'silver'));
  t.pass('gold for alpha, silver for bravo (nothing set), same claim name');
  await direct(['label', 'storageclass', 'silver', 'tier=gold', '--overwrite']);
  await eventually("silver is alpha's to see", async () => ((await names(alpha, 'storageclasses')).includes('silver') ? true : undefined));
  await eventually("silver is alpha's to use", async () =>
    (await alpha.kubectl(['create', '-f', '-'], { input: claim('more', 'silver') })).code === 0 ? true : undefined,
  );
  t.pass('relabelled upstream: alpha lists and uses silver');
});

t.test("a tenant cannot widen its own classes: the annotations on its namespaces are the platform's", async (t) => {
  const widened = await alpha.kubectl(['annotate', 'namespace', 'default', 'tenantgate.kubezoo.io/allowed-priorityclasses=tg-high', '--overwrite']);
  t.not(widened.code, 0, 'overwriting refused');
  t.match(widened.stderr, /only the platform changes/);
  const removed = await alpha.kubectl(['annotate', 'namespace', 'default', 'tenantgate.kubezoo.io/allowed-priorityclasses-']);
  t.not(removed.code, 0, 'removing refused');
  const created = await alpha.kubectl(['create', '-f', '-'], {
    input: JSON.stringify({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'sneaky', annotations: { 'tenantgate.kubezoo.io/allowed-priorityclasses': 'tg-high' } },
    }),
  });
  t.not(created.code, 0, 'a new namespace carrying one refused');
  await kubectlOk(alpha, ['create', 'namespace', 'late']);
  const late = await alpha.kubectl(['create', '-n', 'late', '-f', '-'], { input: pod('p-high', 'tg-high') });
  t.not(late.code, 0, "a namespace made now holds the tenant's classes from its first pod");
});

t.test("a tenant's defaults fill what its objects leave unset, its Deployment's pods included; another tenant's same names get none", async (t) => {
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'plain' },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: 'plain' } },
      template: { metadata: { labels: { app: 'plain' } }, spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] } },
    },
  };
  const claimWithoutClass = {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: 'plain' },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
  };
  const ingress = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name: 'plain' },
    spec: { defaultBackend: { service: { name: 'web', port: { number: 80 } } } },
  };
  for (const tenant of [delta, bravo]) {
    await kubectlOk(tenant, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [deployment, claimWithoutClass, ingress] }));
  }
  const podOf = async (tenant: TestTenant) =>
    eventually(`${tenant.id}'s Deployment has its pod upstream`, async () => {
      const pods = JSON.parse(await direct(['get', 'pods', '-n', `${tenant.id}-default`, '-l', 'app=plain', '-o', 'json'])).items as Json[];
      return pods[0];
    });
  const deltaPod = await podOf(delta);
  t.equal(deltaPod.spec.priorityClassName, 'tg-low', "delta's pod, made by the upstream's ReplicaSet controller: its default priority class");
  t.equal(deltaPod.spec.priority, 100, "and that class's priority");
  t.equal(deltaPod.spec.runtimeClassName, 'tg-sandbox', 'its default runtime class');
  const bravoPod = await podOf(bravo);
  t.equal(bravoPod.spec.priorityClassName, undefined, "bravo's pod of the same name: no class");
  t.equal(bravoPod.spec.runtimeClassName, undefined);
  const viewed = JSON.parse(await kubectlOk(delta, ['get', 'deployment', 'plain', '-o', 'json']));
  t.equal(viewed.spec.template.spec.priorityClassName, 'tg-low', 'delta sees the class its template was given');
  const claims = await Promise.all(
    [delta, bravo].map(async (tenant) => JSON.parse(await direct(['get', 'pvc', 'plain', '-n', `${tenant.id}-default`, '-o', 'json']))),
  );
  t.equal(claims[0].spec.storageClassName, 'gold', "delta's claim: its default storage class");
  t.equal(claims[1].spec.storageClassName, undefined, "bravo's: the upstream's default (none on the rig)");
  const ingresses = await Promise.all(
    [delta, bravo].map(async (tenant) => JSON.parse(await direct(['get', 'ingress', 'plain', '-n', `${tenant.id}-default`, '-o', 'json']))),
  );
  t.equal(ingresses[0].spec.ingressClassName, 'tg-internal', "delta's Ingress: its default ingress class");
  t.equal(ingresses[1].spec.ingressClassName, undefined);
  await kubectlOk(delta, ['create', '-f', '-'], pod('p-named', 'tg-high'));
  t.equal(
    JSON.parse(await direct(['get', 'pod', 'p-named', '-n', `${delta.id}-default`, '-o', 'json'])).spec.priorityClassName,
    'tg-high',
    'a class the pod names stays',
  );
  const high = structuredClone(deployment);
  high.metadata.name = 'high';
  (high.spec.template.spec as Json).priorityClassName = 'tg-high';
  await kubectlOk(delta, ['apply', '-f', '-'], JSON.stringify(high));
  const newImage = { spec: { template: { spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.9' }] } } } };
  t.match(await kubectlOk(delta, ['patch', 'deployment', 'high', '--type', 'merge', '-p', JSON.stringify(newImage)]), /patched/);
  const patched = JSON.parse(await direct(['get', 'deployment', 'high', '-n', `${delta.id}-default`, '-o', 'json']));
  t.equal(patched.spec.template.spec.containers[0].image, 'registry.k8s.io/pause:3.9', 'a patch of its pod template ...');
  t.equal(patched.spec.template.spec.priorityClassName, 'tg-high', '... leaves the class the tenant named: a patch is never defaulted');

  // A typed client sends protobuf: the same defaults.
  const moduleCache = goModuleCache();
  if (moduleCache === undefined) throw new Error('the Go module cache of the rig is missing: npm run rig');
  const messages = loadProtoMessages(moduleCache);
  const session = connectH2(credentialsOf(delta.kubeconfig));
  try {
    const body = encodeBody(messages, 'k8s.io.api.core.v1.Pod', {
      metadata: { name: 'p-protobuf' },
      spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
    });
    const created = await h2Request(session, 'POST', '/api/v1/namespaces/default/pods', {
      headers: { 'content-type': 'application/vnd.kubernetes.protobuf', accept: 'application/json' },
      body,
    });
    t.equal(created.status, 201, 'created from protobuf');
    t.same(
      [created.json().spec.priorityClassName, created.json().spec.priority, created.json().spec.runtimeClassName],
      ['tg-low', 100, 'tg-sandbox'],
      "with its defaults, in the tenant's answer",
    );
  } finally {
    session.close();
  }
});

t.test("a tenant's views show its default class as the default, as kubectl shows a cluster's", async (t) => {
  await direct(['annotate', 'storageclass', 'silver', 'storageclass.kubernetes.io/is-default-class=true', '--overwrite']);
  try {
    const deltaTable = await kubectlOk(delta, ['get', 'storageclasses']);
    t.match(deltaTable, /^gold \(default\)\s/m, 'delta: gold, its default, marked');
    t.notMatch(deltaTable, /silver \(default\)/, "not the platform's");
    t.match(await kubectlOk(bravo, ['get', 'storageclasses']), /^silver \(default\)\s/m, "bravo, without a default of its own: the platform's");
    const gold = JSON.parse(await kubectlOk(delta, ['get', 'storageclass', 'gold', '-o', 'json']));
    t.equal(gold.metadata.annotations?.['storageclass.kubernetes.io/is-default-class'], 'true', 'in the object too');
    t.equal(
      JSON.parse(await kubectlOk(delta, ['get', 'priorityclass', 'tg-low', '-o', 'json'])).globalDefault,
      true,
      'its default priority class is globalDefault',
    );
    t.match(await kubectlOk(delta, ['get', 'priorityclass', 'tg-low']), /tg-low\s+100\s+true\s/, 'in the Global-Default column too');
    t.match(await kubectlOk(bravo, ['get', 'priorityclass', 'tg-low']), /tg-low\s+100\s+false\s/, "not bravo's");
  } finally {
    await direct(['annotate', 'storageclass', 'silver', 'storageclass.kubernetes.io/is-default-class-']);
  }
});

t.test('a default that is no class name, or a default device class, is refused (400 naming the field)', async (t) => {
  for (const [spec, field] of [
    [{ storageClasses: { default: 'Gold Class' } }, 'spec.storageClasses.default'],
    [{ deviceClasses: { default: 'gpu' } }, 'spec.deviceClasses.default'],
  ] as const) {
    const answer = await patchTenant(bravo.id, spec);
    t.equal(answer.status, 400, `${JSON.stringify(spec)}: 400`);
    t.match(String(answer.body?.message), field, 'naming the field');
  }
});

t.test('a malformed allowance is refused when the Tenant is written (400 naming the field)', async (t) => {
  for (const [spec, field] of [
    [{ priorityClasses: { allowed: 'tg-low' } }, 'spec.priorityClasses.allowed'],
    [
      { storageClasses: { selector: { matchExpressions: [{ key: 'tier', operator: 'Near', values: ['x'] }] } } },
      'spec.storageClasses.selector.matchExpressions[0].operator',
    ],
    [{ runtimeClasses: { names: ['x'] } }, 'spec.runtimeClasses.names'],
  ] as const) {
    const answer = await patchTenant(bravo.id, spec);
    t.equal(answer.status, 400, `${JSON.stringify(spec)}: 400`);
    t.match(String(answer.body?.message), field, 'naming the field');
  }
});

// The second wall upstream, against the real rig: the confinement policy refuses a tenant identity's writes outside
// its prefix even when conversion is bypassed; tenants' webhooks name services (or allowed hosts); tenant tokens used
// directly against the upstream see no API groups while tenantgate still serves them their discovery.
// Its own rig (not a shared one): it restarts kube-apiserver to see the wall's policy survive it.
import t from 'tap';
import { renderKubeconfig } from '../../lib/upstream/kubeconfig.ts';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TENANT_CONFINEMENT, CLUSTER_BINDING_SUBJECT_PREFIX } from '../../lib/tenants/confinement-policy.ts';
import { AUTOUPDATE_ANNOTATION } from '../../lib/tenants/discovery-confinement.ts';
import { h1Request } from '../helpers/http.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';
import { eventually } from '../helpers/kit.ts';

const ALLOWED_HOST = 'hooks.example.com';
let stack: Stack;
let a: TestTenant;
let b: TestTenant;

t.before(async () => {
  stack = await startStack({ rig: 'private', gatewayArgs: ['--tenant-webhook-url-hosts', ALLOWED_HOST] });
  [a, b] = await Promise.all([createTestTenant(stack, 'walla1'), createTestTenant(stack, 'wallb2')]);
});
t.teardown(() => stack?.stop());

const VAP = 'validatingadmissionpolicy';
const VAPB = 'validatingadmissionpolicybinding';

t.test('tenantgate keeps its confinement policy upstream: put back when deleted or changed', async (t) => {
  const policy = await stack.kubectlDirect(['get', VAP, TENANT_CONFINEMENT, '-o', 'json']);
  t.equal(policy.code, 0, policy.stderr);
  t.equal(JSON.parse(policy.stdout).spec.failurePolicy, 'Fail');
  const deleted = await stack.kubectlDirect(['delete', VAPB, TENANT_CONFINEMENT]);
  t.equal(deleted.code, 0, deleted.stderr);
  await eventually('the binding is back', async () => ((await stack.kubectlDirect(['get', VAPB, TENANT_CONFINEMENT])).code === 0 ? true : undefined));
  const weakened = await stack.kubectlDirect(['patch', VAP, TENANT_CONFINEMENT, '--type=json', '-p', '[{"op":"remove","path":"/spec/validations/1"}]']);
  t.equal(weakened.code, 0, weakened.stderr);
  const count = async () => JSON.parse((await stack.kubectlDirect(['get', VAP, TENANT_CONFINEMENT, '-o', 'json'])).stdout).spec.validations.length as number;
  const original = (await import('../../lib/tenants/confinement-policy.ts')).TENANT_CONFINEMENT_POLICY.spec.validations.length;
  await eventually('the validations are back', async () => ((await count()) === original ? true : undefined));
  t.pass('restored');
});

t.test('a tenant sees and touches no admission policy of tenantgate', async (t) => {
  const list = await a.kubectl(['get', 'validatingadmissionpolicies,validatingadmissionpolicybindings', '-o', 'name']);
  t.equal(list.code, 0, list.stderr);
  t.notMatch(list.stdout, /tenantgate/);
  for (const verb of [['get'], ['delete']]) {
    for (const kind of [VAP, VAPB]) {
      const answer = await a.kubectl([...verb, kind, TENANT_CONFINEMENT]);
      t.not(answer.code, 0, `${verb[0]} ${kind}`);
      // (Upstream its name would be the tenant's own prefixed one, which RBAC does not let it delete.)
      t.match(answer.stderr, /NotFound|not found|Forbidden/, `${verb[0]} ${kind}: not found, or forbidden`);
    }
  }
  t.equal((await stack.kubectlDirect(['get', VAPB, TENANT_CONFINEMENT])).code, 0, 'still there upstream');
});

t.test('bypassing conversion, a tenant identity cannot write outside its prefix upstream', async (t) => {
  // As if conversion had a bug: tenant A's upstream identity, with RBAC that would allow anything.
  const grant = await stack.kubectlDirect(['create', 'clusterrolebinding', 'test-walla1-anything', '--clusterrole=cluster-admin', `--user=${a.id}-admin`]);
  t.equal(grant.code, 0, grant.stderr);
  t.teardown(() => stack.kubectlDirect(['delete', 'clusterrolebinding', 'test-walla1-anything']));
  const asA = (args: string[], input?: string) =>
    stack.kubectlDirect(['--as', `${a.id}-admin`, '--as-group', `${a.id}:system:authenticated`, '--as-user-extra', `tenant=${a.id}`, ...args], { input });
  const refused = async (what: string, args: string[], message: RegExp, input?: string) => {
    const answer = await asA(args, input);
    t.not(answer.code, 0, `${what}: refused`);
    t.match(answer.stderr, /Forbidden|forbidden/, `${what}: 403`);
    t.match(answer.stderr, message, `${what}: the policy says why`);
  };
  const outside = new RegExp(`tenant ${a.id} may write only in its own namespaces and names`);
  const created = await stack.kubectlDirect(['create', 'configmap', 'victim', '-n', `${b.id}-default`, '--from-literal=canary=b-secret']);
  t.equal(created.code, 0, created.stderr);
  // The test before this one deleted and weakened the policy: the apiserver enforces the restored one once its
  // informer has it again (a second or so on a loaded machine). Wait for that with server-side dry runs.
  for (let i = 0; i < 100; i++) {
    const probe = await asA(['create', 'configmap', 'probe', '-n', `${b.id}-default`, '--dry-run=server']);
    if (probe.code !== 0 && outside.test(probe.stderr)) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }

  await refused("create a ConfigMap in B's namespace", ['create', 'configmap', 'x', '-n', `${b.id}-default`], outside);
  await refused("update B's ConfigMap", ['label', 'configmap', 'victim', '-n', `${b.id}-default`, 'owned=a'], outside);
  await refused("delete B's ConfigMap", ['delete', 'configmap', 'victim', '-n', `${b.id}-default`], outside);
  await refused('create a Namespace without its prefix', ['create', 'namespace', 'walltest-free'], outside);
  await refused('create a Namespace with its prefix but without its label', ['create', 'namespace', `${a.id}-nolabel`], /carries the label kubezoo.io\/tenant/);
  await refused('create a ClusterRole without its prefix', ['create', 'clusterrole', 'walltest-role', '--verb=get', '--resource=pods'], outside);
  await refused(
    'create a ClusterRoleBinding naming real subjects',
    ['create', 'clusterrolebinding', `${a.id}-real`, '--clusterrole=cluster-admin', `--user=${a.id}-admin`],
    /names only its own identities/,
  );
  // A tenant's ClusterRoleBindings are kept as tenantgate's custom resources: checked alike.
  const storedBinding = (name: string, subject: string) =>
    JSON.stringify({
      apiVersion: 'rbac.tenantgate.kubezoo.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name, labels: { 'kubezoo.io/tenant': a.id } },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: subject }],
    });
  await refused(
    'create a stored ClusterRoleBinding naming real subjects',
    ['create', '-f', '-'],
    /names only its own identities/,
    storedBinding(`${a.id}-stored-real`, `${a.id}-admin`),
  );
  await refused(
    "create a stored ClusterRoleBinding naming B's shadow subjects",
    ['create', '-f', '-'],
    /names only its own identities/,
    storedBinding(`${a.id}-stored-b`, `${CLUSTER_BINDING_SUBJECT_PREFIX}${b.id}-admin`),
  );
  await refused(
    'create a stored ClusterRoleBinding without its prefix',
    ['create', '-f', '-'],
    outside,
    storedBinding('walltest-stored', `${CLUSTER_BINDING_SUBJECT_PREFIX}${a.id}-alice`),
  );
  const aggregating = JSON.stringify({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: `${a.id}-aggregating`, labels: { 'rbac.authorization.k8s.io/aggregate-to-admin': 'true' } },
    rules: [],
  });
  await refused("create a ClusterRole aggregating into the upstream's admin", ['create', '-f', '-'], /aggregate-to-/, aggregating);
  const foreignCrd = JSON.stringify({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `widgets.${b.id}-example.com` },
    spec: {
      group: `${b.id}-example.com`,
      names: { plural: 'widgets', kind: 'Widget' },
      scope: 'Namespaced',
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object' } } }],
    },
  });
  await refused("create a CRD in B's group", ['create', '-f', '-'], outside, foreignCrd);
  // Subresources that carry the object (the tenant admin's own RBAC names them on its cluster-scoped kinds) alike.
  const bNamespace = JSON.stringify({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: `${b.id}-default`, labels: { 'kubezoo.io/tenant': a.id } },
    spec: { finalizers: [] },
  });
  await refused("finalize B's namespace", ['replace', '--raw', `/api/v1/namespaces/${b.id}-default/finalize`, '-f', '-'], outside, bNamespace);
  await refused(
    "write B's namespace status",
    ['patch', 'namespace', `${b.id}-default`, '--subresource=status', '--type=merge', '-p', '{"status":{"conditions":[{"type":"WallTest","status":"True"}]}}'],
    outside,
  );
  const victim = await stack.kubectlDirect(['get', 'configmap', 'victim', '-n', `${b.id}-default`, '-o', 'jsonpath={.data.canary}{.metadata.labels}']);
  t.equal(victim.stdout, 'b-secret', "B's ConfigMap is unchanged");

  // Within its prefix, the same identity writes.
  const allowed = async (what: string, args: string[], input?: string) => {
    const answer = await asA(args, input);
    t.equal(answer.code, 0, `${what}: ${answer.stderr}`);
  };
  await allowed('a ConfigMap in its namespace', ['create', 'configmap', 'mine', '-n', `${a.id}-default`]);
  await allowed('update it', ['label', 'configmap', 'mine', '-n', `${a.id}-default`, 'x=y']);
  await allowed('delete it', ['delete', 'configmap', 'mine', '-n', `${a.id}-default`]);
  const namespace = JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: `${a.id}-walled`, labels: { 'kubezoo.io/tenant': a.id } } });
  await allowed('a labelled Namespace under its prefix', ['create', '-f', '-'], namespace);
  await allowed('a ClusterRole under its prefix', ['create', 'clusterrole', `${a.id}-role`, '--verb=get', '--resource=pods']);
  await allowed('a ClusterRoleBinding naming its shadow subjects', [
    'create',
    'clusterrolebinding',
    `${a.id}-shadow`,
    `--clusterrole=${a.id}-role`,
    `--user=${CLUSTER_BINDING_SUBJECT_PREFIX}${a.id}-alice`,
    `--group=${CLUSTER_BINDING_SUBJECT_PREFIX}${a.id}:devs`,
    `--user=${CLUSTER_BINDING_SUBJECT_PREFIX}system:serviceaccount:${a.id}-default:robot`,
  ]);
  await allowed('a CRD in its group', ['create', '-f', '-'], foreignCrd.replaceAll(b.id, a.id));
  await allowed(
    'a stored ClusterRoleBinding naming its shadow subjects',
    ['create', '-f', '-'],
    storedBinding(`${a.id}-stored-shadow`, `${CLUSTER_BINDING_SUBJECT_PREFIX}${a.id}-alice`),
  );

  // Administrators (no tenant extra) are not the policy's business.
  const admin = await stack.kubectlDirect(['create', 'configmap', 'by-admin', '-n', `${b.id}-default`]);
  t.equal(admin.code, 0, admin.stderr);
  const adminNamespace = await stack.kubectlDirect(['create', 'namespace', 'walltest-admin']);
  t.equal(adminNamespace.code, 0, adminNamespace.stderr);
});

t.test("no tenant pod takes the platform's critical priority: refused by tenantgate, and upstream whoever creates it", async (t) => {
  const podOf = (name: string, priorityClassName?: string) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: { ...(priorityClassName === undefined ? {} : { priorityClassName }), containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] },
  });
  const refused = await a.kubectl(['apply', '-f', '-'], { input: JSON.stringify(podOf('boss', 'system-node-critical')) });
  t.not(refused.code, 0, 'a pod naming system-node-critical is refused');
  t.match(refused.stderr, /Forbidden.*priority class "system-node-critical" is the platform's own/, 'with a 403 that says why');
  t.notMatch(refused.stderr, new RegExp(a.id), "in the tenant's words");

  // A Deployment is the tenant's to write; the pods its ReplicaSet would make upstream are the upstream's to refuse.
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'critical', namespace: 'default' },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'critical' } },
      template: {
        metadata: { labels: { app: 'critical' } },
        spec: { priorityClassName: 'system-cluster-critical', containers: [{ name: 'main', image: 'registry.k8s.io/pause:3.10' }] },
      },
    },
  };
  const applied = await a.kubectl(['apply', '-f', '-'], { input: JSON.stringify(deployment) });
  t.equal(applied.code, 0, applied.stderr);
  // (Later tests count the namespace's ReplicaSets.)
  t.teardown(() => a.kubectl(['delete', 'deployment', 'critical', '-n', 'default', '--wait=false']));
  const failure = await eventually(
    'the ReplicaSet reports why',
    async () => {
      const sets = JSON.parse((await a.kubectl(['get', 'replicasets', '-n', 'default', '-l', 'app=critical', '-o', 'json'])).stdout || '{"items":[]}');
      const condition = sets.items[0]?.status?.conditions?.find((c: { type: string }) => c.type === 'ReplicaFailure');
      return condition === undefined ? undefined : (condition.message as string);
    },
    { withinMs: 60_000 },
  );
  t.match(
    failure,
    /priority class system-cluster-critical \(priority 2000000000\) is the platform's own/,
    "the tenant reads why in its ReplicaSet's conditions",
  );
  t.notMatch(failure, new RegExp(a.id), 'with no upstream name');
  const upstreamPods = JSON.parse((await stack.kubectlDirect(['get', 'pods', '-n', `${a.id}-default`, '-o', 'json'])).stdout);
  t.same(
    upstreamPods.items
      .filter((pod: { spec: { priority?: number } }) => (pod.spec.priority ?? 0) > 1_000_000_000)
      .map((pod: { metadata: { name: string } }) => pod.metadata.name),
    [],
    'no pod of the tenant runs upstream with a critical priority',
  );

  // As if conversion had a bug: the tenant's identity straight at the upstream.
  const direct = await stack.kubectlDirect(
    [
      '--as',
      `${a.id}-admin`,
      '--as-group',
      `${a.id}:system:authenticated`,
      '--as-user-extra',
      `tenant=${a.id}`,
      'create',
      '--raw',
      `/api/v1/namespaces/${a.id}-default/pods`,
      '-f',
      '-',
    ],
    {
      input: JSON.stringify({ ...podOf('sneaky', 'system-node-critical'), metadata: { name: 'sneaky', namespace: `${a.id}-default` } }),
    },
  );
  t.not(direct.code, 0, 'upstream refuses it too');
  t.match(direct.stderr, /tenantgate: priority class system-node-critical \(priority 2000001000\) is the platform's own/);

  const plain = await b.kubectl(['apply', '-f', '-'], { input: JSON.stringify(podOf('plain')) });
  t.equal(plain.code, 0, "another tenant's pods without a critical class are admitted meanwhile");
  const admin = await stack.kubectlDirect(['create', '-f', '-'], {
    input: JSON.stringify({ ...podOf('platform', 'system-node-critical'), metadata: { name: 'platform', namespace: 'default' } }),
  });
  t.equal(admin.code, 0, `the platform's own namespaces keep their critical classes: ${admin.stderr}`);
  await stack.kubectlDirect(['delete', 'pod', 'platform', '-n', 'default', '--wait=false']);
});

t.test("a tenant's webhook names a service, or a URL on a host the administrator allowed", async (t) => {
  const webhook = (clientConfig: object) =>
    JSON.stringify({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: 'check-' + Object.keys(clientConfig)[0] + '-' + Math.random().toString(36).slice(2, 7) },
      webhooks: [
        {
          name: 'check.example.com',
          clientConfig,
          rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] }],
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
          failurePolicy: 'Ignore',
        },
      ],
    });
  const byUrl = await a.kubectl(['apply', '-f', '-'], { input: webhook({ url: 'https://10.0.0.1:2379/scan' }) });
  t.not(byUrl.code, 0, 'a URL on a host nobody allowed is refused');
  t.match(byUrl.stderr, /webhooks\[0\]\.clientConfig\.url: Forbidden: webhooks may call "10\.0\.0\.1" only if the administrator allows it/);
  const byService = await a.kubectl(['apply', '-f', '-'], { input: webhook({ service: { namespace: 'default', name: 'checker', port: 443 } }) });
  t.equal(byService.code, 0, byService.stderr);
  const allowed = await a.kubectl(['apply', '-f', '-'], { input: webhook({ url: `https://${ALLOWED_HOST}/check` }) });
  t.equal(allowed.code, 0, allowed.stderr);
});

t.test('upstream discovery is for system identities: a tenant token sees no groups upstream, and its own through tenantgate', async (t) => {
  const binding = JSON.parse((await stack.kubectlDirect(['get', 'clusterrolebinding', 'system:discovery', '-o', 'json'])).stdout);
  t.equal(binding.metadata.annotations[AUTOUPDATE_ANNOTATION], 'false');
  t.notOk(
    binding.subjects.some((s: { name: string }) => s.name === 'system:authenticated' || s.name === 'system:serviceaccounts'),
    'no group every tenant identity is in',
  );
  const crd = JSON.stringify({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'gadgets.walls.example.com' },
    spec: {
      group: 'walls.example.com',
      names: { plural: 'gadgets', kind: 'Gadget' },
      scope: 'Namespaced',
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object' } } }],
    },
  });
  for (const tenant of [a, b]) {
    const created = await tenant.kubectl(['apply', '-f', '-'], { input: crd });
    t.equal(created.code, 0, created.stderr);
  }
  const token = (await stack.kubectlDirect(['create', 'token', 'default', '-n', `${a.id}-default`])).stdout.trim();
  t.ok(token.length > 100, 'a token of a tenant service account');
  const upstream = await h1Request({ server: stack.rig.admin.server, caPem: stack.rig.admin.caPem }, 'GET', '/apis', {
    headers: { authorization: `Bearer ${token}` },
    withCertificate: false,
  });
  t.equal(upstream.status, 403, 'upstream /apis refuses the token');
  t.notMatch(upstream.body, new RegExp(`${b.id}-walls`), "and names no tenant's group");
  const openapi = await h1Request({ server: stack.rig.admin.server, caPem: stack.rig.admin.caPem }, 'GET', '/openapi/v3', {
    headers: { authorization: `Bearer ${token}` },
    withCertificate: false,
  });
  t.equal(openapi.status, 403, 'upstream /openapi/v3 refuses it too');

  const throughTenantgate = join(stack.dir, 'walla1-token.kubeconfig');
  writeFileSync(throughTenantgate, renderKubeconfig({ server: stack.gatewayUrl, caPem: stack.files.ca.certPem, token }, 'tenantgate'));
  const groups = await h1Request({ server: stack.gatewayUrl, caPem: stack.files.ca.certPem }, 'GET', '/apis', {
    headers: { authorization: `Bearer ${token}` },
    withCertificate: false,
  });
  t.equal(groups.status, 200, 'through tenantgate the token reads discovery');
  const names = (groups.json().groups as { name: string }[]).map((group) => group.name);
  t.ok(names.includes('apps'), 'built-in groups');
  t.ok(names.includes('walls.example.com'), 'its own group, in its own name');
  t.notOk(
    names.some((name) => name.includes(b.id) || name.includes(a.id)),
    'no upstream group name',
  );
  const kubectlDiscovery = await stack.rig.kubectl(['api-resources', '--api-group=walls.example.com', '-o', 'name'], { kubeconfig: throughTenantgate });
  t.equal(kubectlDiscovery.code, 0, kubectlDiscovery.stderr);
  t.match(kubectlDiscovery.stdout, /gadgets\.walls\.example\.com/);
  const asAdmin = await a.kubectl(['get', '--raw', '/apis/walls.example.com/v1']);
  t.equal(asAdmin.code, 0, `the tenant admin's group document: ${asAdmin.stderr}`);

  // The controller manager still reads discovery (and writes): a Deployment gets its ReplicaSet.
  const deployment = await a.kubectl(['create', 'deployment', 'web', '--image=registry.invalid/web:1']);
  t.equal(deployment.code, 0, deployment.stderr);
  const replicaSets = await eventually(
    'a ReplicaSet for the Deployment',
    async () => {
      const got = await a.kubectl(['get', 'replicasets', '-o', 'name']);
      return got.stdout.includes('replicaset.apps/web-') ? got.stdout : undefined;
    },
    { withinMs: 30_000 },
  );
  t.match(replicaSets, /web-/);
  // The garbage collector walks discovery: deleting the Deployment takes its ReplicaSet with it.
  t.equal((await a.kubectl(['delete', 'deployment', 'web'])).code, 0);
  await eventually('the ReplicaSet collected', async () => ((await a.kubectl(['get', 'replicasets', '-o', 'name'])).stdout.trim() === '' ? true : undefined), {
    withinMs: 30_000,
  });
  t.pass('garbage collected');
});

t.test("kube-apiserver's restart leaves the confined discovery binding as it is (its bootstrap skips autoupdate=false)", async (t) => {
  const read = async () => JSON.parse((await stack.kubectlDirect(['get', 'clusterrolebinding', 'system:discovery', '-o', 'json'])).stdout);
  const before = await read();
  await stack.rig.stopApiserver('graceful');
  await stack.rig.startApiserver();
  const after = await read();
  // Unchanged: neither the apiserver's bootstrap nor tenantgate (putting it back) wrote it.
  t.equal(after.metadata.resourceVersion, before.metadata.resourceVersion, 'not written since');
  t.same(after.subjects, before.subjects);
});

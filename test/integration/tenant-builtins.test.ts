// What every cluster has at birth, every tenant has: the built-in ClusterRoles (bound as anywhere, aggregating the
// tenant's own roles), Service default/kubernetes, and admission policies its admin may write; through kubectl.
// A tenant never used has none of it upstream: its first request for objects, over any protocol, writes it first.
import t from 'tap';
import { webDeployment } from '../helpers/fixtures.ts';
import { connectH2, credentialsOf, EXEC_UPGRADE_HEADERS, h1Request, h2Request } from '../helpers/http.ts';
import { encodeBody, goModuleCache, loadProtoMessages } from '../helpers/k8s-proto.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';
import { eventually, kubectlOk } from '../helpers/kit.ts';

let stack: Stack;
let alpha: TestTenant;
let bravo: TestTenant;

/** kubectl as `user` of the tenant (a client certificate of the tenant's), with what that user is allowed. */
function asUser(tenant: TestTenant, user: string) {
  const kubeconfig = stack.kubeconfigFor({ user, groups: [], tenant: tenant.id });
  return (args: string[], input?: string) => stack.kubectl(args, { kubeconfig, ...(input === undefined ? {} : { input }) });
}

t.before(async () => {
  stack = await startStack();
  alpha = await createTestTenant(stack, 'built1');
  bravo = await createTestTenant(stack, 'built2');
  await kubectlOk(alpha, ['create', 'namespace', 'shop']);
  await kubectlOk(alpha, ['create', 'namespace', 'back']);
});
t.teardown(() => stack?.stop());

/** Every upstream object labelled as the tenant's, by kind, as the upstream's administrator lists them. */
async function upstreamObjectsOf(id: string): Promise<string[]> {
  const kinds = 'namespaces,clusterroles,services,endpointslices,rolebindings,configmaps,clusterrolebindings.rbac.tenantgate.kubezoo.io';
  const r = await stack.kubectlDirect(['get', kinds, '-A', '-l', `kubezoo.io/tenant=${id}`, '-o', 'name']);
  if (r.code !== 0) throw new Error(r.stderr);
  return r.stdout.split('\n').filter((line) => line !== '');
}

async function birthConditionOf(id: string): Promise<{ status?: string; reason?: string } | undefined> {
  const r = await stack.kubectl(['get', 'tenant', id, '-o', 'json'], { kubeconfig: stack.adminKubeconfig });
  if (r.code !== 0) throw new Error(r.stderr);
  const tenant = JSON.parse(r.stdout);
  return tenant.status.conditions.find((c: { type: string }) => c.type === 'BuiltinsUpstream');
}

t.test('a tenant never used costs the upstream nothing; its first request, over any protocol, finds what a cluster has', async (t) => {
  const quiet = await createTestTenant(stack, 'unbrn1', undefined, { used: false });
  const other = await createTestTenant(stack, 'unbrn2', undefined, { used: false });
  t.same(await upstreamObjectsOf('unbrn1'), [], "Ready, and no upstream object labelled as the tenant's");
  t.match(await birthConditionOf('unbrn1'), { status: 'False', reason: 'Deferred' }, 'the Tenant says its built-ins are deferred');
  t.match(await kubectlOk(quiet, ['api-resources', '-o', 'name']), /^pods$/m, 'discovery is answered');
  t.same(await upstreamObjectsOf('unbrn1'), [], 'and writes nothing upstream');

  // HTTP/1.1, a watch served by tenantgate's watch cache, as the tenant's very first request.
  const watched = await h1Request(credentialsOf(quiet.kubeconfig), 'GET', '/api/v1/namespaces?watch=1&timeoutSeconds=1', {
    headers: { accept: 'application/json' },
  });
  t.equal(watched.status, 200);
  const added = watched.body
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line).object.metadata.name)
    .sort();
  t.same(added, ['default', 'kube-node-lease', 'kube-public', 'kube-system'], 'its first watch starts with the four built-in namespaces');
  t.match(await birthConditionOf('unbrn1'), { status: 'True' }, 'the Tenant says its built-ins are upstream');
  t.ok((await upstreamObjectsOf('unbrn1')).includes('namespace/unbrn1-kube-system'), 'now upstream, under its prefix');
  t.same(await upstreamObjectsOf('unbrn2'), [], 'the other tenant, same names, still has nothing upstream');

  // HTTP/2: the other tenant's first request is a Table of ClusterRoles, as kubectl get asks for one.
  const session = connectH2(credentialsOf(other.kubeconfig));
  try {
    const table = await h2Request(session, 'GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles', {
      headers: { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' },
    });
    t.equal(table.status, 200);
    const names: string[] = table.json().rows.map((row: { cells: string[] }) => row.cells[0]);
    t.ok(
      ['cluster-admin', 'admin', 'edit', 'view'].every((name) => names.includes(name)),
      `its first Table has the built-in roles (${names.length})`,
    );
    t.notOk(
      names.some((name) => name.startsWith('unbrn')),
      "in its own names, none of the other tenant's",
    );
  } finally {
    session.close();
  }
  const service = JSON.parse(await kubectlOk(other, ['get', 'service', 'kubernetes', '-o', 'json']));
  t.equal(service.spec.ports[0].port, 443, 'Service default/kubernetes is there');
});

t.test('a first request sent as protobuf, as YAML or as an Upgrade waits for the birth state too', async (t) => {
  const moduleCache = goModuleCache();
  if (moduleCache === undefined) throw new Error('the Go module cache of the rig is missing: npm run rig');
  const messages = loadProtoMessages(moduleCache);
  const [typed, yaml, upgraded] = await Promise.all(['unbrn3', 'unbrn4', 'unbrn5'].map((id) => createTestTenant(stack, id, undefined, { used: false })));
  for (const id of ['unbrn3', 'unbrn4', 'unbrn5']) t.same(await upstreamObjectsOf(id), [], `${id}: nothing upstream before its first request`);

  // A typed client's create, in protobuf, into namespace default, which exists upstream only once the tenant is born.
  const session = connectH2(credentialsOf(typed!.kubeconfig));
  try {
    const body = encodeBody(messages, 'k8s.io.api.core.v1.ConfigMap', { metadata: { name: 'first' }, data: { a: '1' } });
    const created = await h2Request(session, 'POST', '/api/v1/namespaces/default/configmaps', {
      headers: { 'content-type': 'application/vnd.kubernetes.protobuf', accept: 'application/json' },
      body,
    });
    t.equal(created.status, 201, `protobuf: its first write is created (${created.body.slice(0, 200)})`);
    t.equal(created.json().metadata.namespace, 'default', 'in its own names');
  } finally {
    session.close();
  }
  t.ok((await upstreamObjectsOf('unbrn3')).includes('configmap/first'), 'protobuf: upstream now, with its birth state');

  // kubectl apply of YAML: its first request is discovery, then a GET and a create in YAML's JSON form; sent raw here.
  const yamlBody = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: first\ndata:\n  a: "1"\n';
  const posted = await h1Request(credentialsOf(yaml!.kubeconfig), 'POST', '/api/v1/namespaces/kube-public/configmaps', {
    headers: { 'content-type': 'application/yaml', accept: 'application/json' },
    body: yamlBody,
  });
  t.equal(posted.status, 201, `YAML over HTTP/1.1: created in kube-public (${posted.body.slice(0, 200)})`);
  t.equal(JSON.parse(posted.body).metadata.namespace, 'kube-public', 'in its own names');
  t.notMatch(posted.body, /unbrn4-/, 'no upstream names');

  // An exec (Upgrade) as the very first request: the pod is not there, which the upstream says once the tenant is born.
  const exec = await h1Request(credentialsOf(upgraded!.kubeconfig), 'GET', '/api/v1/namespaces/default/pods/nothere/exec?command=ls&stdout=true', {
    headers: { ...EXEC_UPGRADE_HEADERS },
  });
  t.equal(exec.status, 404, `Upgrade: the upstream's 404 for the missing pod, not a 503 (${exec.body.slice(0, 200)})`);
  t.equal(JSON.parse(exec.body).message, 'pods "nothere" not found', 'in its own names');
  t.notMatch(exec.body, /unbrn5-/);
  t.match(await birthConditionOf('unbrn5'), { status: 'True' }, 'and the tenant is born');
  const others = await h1Request(credentialsOf(yaml!.kubeconfig), 'GET', '/api/v1/namespaces/default/configmaps/first', {
    headers: { accept: 'application/json' },
  });
  t.equal(others.status, 404, "the YAML tenant does not see the protobuf tenant's ConfigMap of the same name and namespace");
});

t.test('a fresh tenant lists the built-in ClusterRoles and bindings of a real cluster', async (t) => {
  const roles = (await kubectlOk(bravo, ['get', 'clusterroles', '-o', 'name'])).split('\n');
  for (const name of [
    'cluster-admin',
    'admin',
    'edit',
    'view',
    'system:discovery',
    'system:basic-user',
    'system:public-info-viewer',
    'system:aggregate-to-edit',
  ]) {
    t.ok(roles.includes(`clusterrole.rbac.authorization.k8s.io/${name}`), `${name} is listed`);
  }
  const edit = JSON.parse(await kubectlOk(bravo, ['get', 'clusterrole', 'edit', '-o', 'json']));
  t.same(
    edit.aggregationRule,
    { clusterRoleSelectors: [{ matchLabels: { 'rbac.authorization.k8s.io/aggregate-to-edit': 'true' } }] },
    "edit aggregates as anywhere, in the tenant's terms",
  );
  t.equal(edit.metadata.labels['rbac.authorization.k8s.io/aggregate-to-admin'], 'true', 'and is itself aggregated into admin');
  t.ok(
    edit.rules.some((rule: { resources?: string[] }) => rule.resources?.includes('deployments')),
    'its rules were filled by aggregation',
  );
  const binding = JSON.parse(await kubectlOk(bravo, ['get', 'clusterrolebinding', 'system:discovery', '-o', 'json']));
  t.same(
    binding.subjects,
    [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:authenticated' }],
    'system:discovery binds system:authenticated',
  );
  const upstream = await stack.kubectlDirect(['get', 'clusterrole', 'built2-edit', '-o', 'jsonpath={.metadata.labels}']);
  t.match(upstream.stdout, /built2\.aggregation\.kubezoo\.io\/aggregate-to-admin/, "upstream, the copy aggregates only in the tenant's domain");
  t.notMatch(upstream.stdout, /"rbac\.authorization\.k8s\.io\/aggregate-to/, "never into the upstream's own admin");
});

t.test('edit bound by a RoleBinding grants what edit grants, in that namespace only', async (t) => {
  await kubectlOk(alpha, ['-n', 'shop', 'create', 'rolebinding', 'alice-edits', '--clusterrole=edit', '--user=alice']);
  const alice = asUser(alpha, 'alice');
  await eventually('alice can create deployments', async () => (await alice(['auth', 'can-i', 'create', 'deployments', '-n', 'shop'])).stdout.trim() === 'yes');
  const created = await alice(['-n', 'shop', 'apply', '-f', '-'], JSON.stringify(webDeployment('web', 'shop')));
  t.equal(created.code, 0, `alice creates a deployment in shop: ${created.stderr}`);
  const binding = await alice(['-n', 'shop', 'create', 'rolebinding', 'sneaky', '--clusterrole=admin', '--user=alice']);
  t.not(binding.code, 0, 'alice cannot create a RoleBinding (edit has no RBAC writes)');
  t.match(binding.stderr, /forbidden/i);
  const elsewhere = await alice(['-n', 'back', 'get', 'configmaps']);
  t.not(elsewhere.code, 0, 'alice cannot read another namespace');
  t.match(elsewhere.stderr, /forbidden/i);
});

t.test('view bound by a ClusterRoleBinding lets bob list pods in every namespace, and write nothing', async (t) => {
  await kubectlOk(alpha, ['create', 'clusterrolebinding', 'bob-views', '--clusterrole=view', '--user=bob']);
  const bob = asUser(alpha, 'bob');
  await eventually('bob can list pods -A', async () => (await bob(['get', 'pods', '-A'])).code === 0);
  const pods = await bob(['get', 'deployments', '-A', '-o', 'name']);
  t.equal(pods.code, 0, pods.stderr);
  t.match(pods.stdout, /deployment\.apps\/web/, "bob sees alice's deployment across namespaces");
  const write = await bob(['-n', 'back', 'create', 'configmap', 'x']);
  t.not(write.code, 0, 'view writes nothing');
  // Cluster-scoped reads the ClusterRoleBinding grants (view reads namespaces): made by tenantgate once allowed.
  const namespaces = await bob(['get', 'namespaces', '-o', 'name']);
  t.equal(namespaces.code, 0, namespaces.stderr);
  t.same(
    namespaces.stdout
      .split('\n')
      .filter((l) => l !== '')
      .sort(),
    (await kubectlOk(alpha, ['get', 'namespaces', '-o', 'name']))
      .split('\n')
      .filter((l) => l !== '')
      .sort(),
    "bob lists the tenant's namespaces, as its admin does",
  );
  t.equal((await bob(['get', 'namespace', 'shop', '-o', 'jsonpath={.metadata.name}'])).stdout, 'shop', 'and reads one by name');
  const carol = asUser(alpha, 'carol');
  const refused = await carol(['get', 'namespace', 'shop']);
  t.not(refused.code, 0, 'a user without a binding is refused');
  t.match(
    refused.stderr,
    /namespaces "shop" is forbidden: User "carol" cannot get resource "namespaces" in API group "" at the cluster scope/,
    "with the apiserver's words",
  );
  const listRefused = await carol(['get', 'namespaces']);
  t.match(listRefused.stderr, /User "carol" cannot list resource "namespaces"/);
});

t.test("a tenant's role labelled aggregate-to-view joins its own view, not another tenant's nor the upstream's", async (t) => {
  const role = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'widgets-reader', labels: { 'rbac.authorization.k8s.io/aggregate-to-view': 'true' } },
    rules: [{ apiGroups: ['widgets.example.com'], resources: ['widgets'], verbs: ['get', 'list'] }],
  };
  await kubectlOk(alpha, ['apply', '-f', '-'], JSON.stringify(role));
  const hasWidgets = (yaml: string) => /widgets/.test(yaml);
  t.ok(await eventually("alpha's view aggregates widgets", async () => hasWidgets(await kubectlOk(alpha, ['get', 'clusterrole', 'view', '-o', 'yaml']))));
  const view = JSON.parse(await kubectlOk(alpha, ['get', 'clusterrole', 'view', '-o', 'json']));
  t.ok(
    view.rules.some(
      (rule: { apiGroups: string[]; resources: string[] }) => rule.apiGroups.includes('widgets.example.com') && rule.resources.includes('widgets'),
    ),
    "in the tenant's own group name",
  );
  t.ok(await eventually('and through edit into admin', async () => hasWidgets(await kubectlOk(alpha, ['get', 'clusterrole', 'admin', '-o', 'yaml']))));
  t.notOk(hasWidgets(await kubectlOk(bravo, ['get', 'clusterrole', 'view', '-o', 'yaml'])), "not in the other tenant's view");
  t.notOk(hasWidgets((await stack.kubectlDirect(['get', 'clusterrole', 'view', '-o', 'yaml'])).stdout), "not in the upstream's view");
});

t.test("a second tenant cannot see or touch the first one's copies", async (t) => {
  for (const args of [
    ['get', 'clusterrole', 'built1-edit'],
    ['delete', 'clusterrole', 'built1-edit'],
    ['get', 'clusterrolebinding', 'built1-system:discovery'],
    ['-n', 'built1-default', 'get', 'service', 'kubernetes'],
  ]) {
    const r = await bravo.kubectl(args);
    t.not(r.code, 0, args.join(' '));
    t.match(r.stderr, /NotFound|not found/, args.join(' '));
  }
  const still = await stack.kubectlDirect(['get', 'clusterrole', 'built1-edit', '-o', 'name']);
  t.equal(still.code, 0, "built1's copy is there");
});

t.test('a built-in role deleted by the tenant comes back, as its own copy', async (t) => {
  await kubectlOk(bravo, ['delete', 'clusterrole', 'view']);
  await kubectlOk(bravo, ['delete', 'clusterrolebinding', 'system:basic-user']);
  t.ok(await eventually('view is back', async () => (await bravo.kubectl(['get', 'clusterrole', 'view'])).code === 0));
  t.ok(await eventually('system:basic-user binding is back', async () => (await bravo.kubectl(['get', 'clusterrolebinding', 'system:basic-user'])).code === 0));
  const view = JSON.parse(await kubectlOk(bravo, ['get', 'clusterrole', 'view', '-o', 'json']));
  t.ok(view.aggregationRule, 'with its aggregation rule');
});

t.test('Service default/kubernetes is there in a fresh tenant, port 443 https, and comes back when deleted', async (t) => {
  const service = JSON.parse(await kubectlOk(bravo, ['get', 'svc', 'kubernetes', '-n', 'default', '-o', 'json']));
  t.same(
    service.spec.ports.map((port: { name: string; port: number; protocol: string }) => ({ name: port.name, port: port.port, protocol: port.protocol })),
    [{ name: 'https', port: 443, protocol: 'TCP' }],
  );
  t.equal(service.spec.ports[0].targetPort, Number(new URL(stack.gatewayUrl).port), 'pointing at the port tenantgate listens on');
  t.match(service.spec.clusterIP, /^\d+\.\d+\.\d+\.\d+$/, 'with a cluster IP');
  // The rig's tenantgate listens on loopback, which the apiserver refuses in an EndpointSlice: none is made.
  const slices = await bravo.kubectl(['get', 'endpointslices', '-n', 'default', '-o', 'name']);
  t.equal(slices.code, 0, slices.stderr);
  t.equal(slices.stdout.trim(), '', 'no EndpointSlice for a loopback address');
  await kubectlOk(bravo, ['delete', 'svc', 'kubernetes', '-n', 'default']);
  t.ok(await eventually('the Service is back', async () => (await bravo.kubectl(['get', 'svc', 'kubernetes', '-n', 'default'])).code === 0));
});

const CONFIGMAP_CREATES = { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] }] };

t.test('the tenant admin writes admission policies, and they bind in its cluster only', async (t) => {
  const policy = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: 'no-big-configmaps' },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: CONFIGMAP_CREATES,
      validations: [{ expression: "!has(object.data) || !('big' in object.data)", message: 'no big configmaps here' }],
    },
  };
  const binding = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: 'no-big-configmaps' },
    spec: { policyName: 'no-big-configmaps', validationActions: ['Deny'] },
  };
  await kubectlOk(alpha, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [policy, binding] }));
  t.match(await kubectlOk(alpha, ['get', 'validatingadmissionpolicies', '-o', 'name']), /no-big-configmaps/);
  await eventually('the policy refuses a big configmap', async () => {
    const r = await alpha.kubectl(['-n', 'shop', 'create', 'configmap', 'big1', '--from-literal=big=1']);
    if (r.code === 0) await alpha.kubectl(['-n', 'shop', 'delete', 'configmap', 'big1']);
    return r.code !== 0 && /no big configmaps here/.test(r.stderr);
  });
  const other = await bravo.kubectl(['-n', 'default', 'create', 'configmap', 'big1', '--from-literal=big=1']);
  t.equal(other.code, 0, `the other tenant is not bound by it: ${other.stderr}`);
  const mutating = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingAdmissionPolicy',
    metadata: { name: 'label-configmaps' },
    spec: {
      failurePolicy: 'Fail',
      reinvocationPolicy: 'Never',
      matchConstraints: CONFIGMAP_CREATES,
      mutations: [{ patchType: 'ApplyConfiguration', applyConfiguration: { expression: 'Object{metadata: Object.metadata{labels: {"stamped": "yes"}}}' } }],
    },
  };
  const mutatingBinding = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingAdmissionPolicyBinding',
    metadata: { name: 'label-configmaps' },
    spec: { policyName: 'label-configmaps' },
  };
  const applied = await alpha.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [mutating, mutatingBinding] }) });
  t.equal(applied.code, 0, `a MutatingAdmissionPolicy and its binding too (admissionregistration.k8s.io/v1 on the rig): ${applied.stderr}`);
  const stamped = await eventually('the mutating policy stamps new configmaps', async () => {
    const name = `stamp${Date.now()}`;
    await kubectlOk(alpha, ['-n', 'shop', 'create', 'configmap', name]);
    return (await kubectlOk(alpha, ['-n', 'shop', 'get', 'configmap', name, '-o', 'jsonpath={.metadata.labels.stamped}'])) === 'yes';
  });
  t.ok(stamped, "the tenant's MutatingAdmissionPolicy mutates its own objects");
  await kubectlOk(bravo, ['-n', 'default', 'create', 'configmap', 'unstamped']);
  t.equal(
    await kubectlOk(bravo, ['-n', 'default', 'get', 'configmap', 'unstamped', '-o', 'jsonpath={.metadata.labels.stamped}']),
    '',
    "and not the other tenant's",
  );
  await kubectlOk(alpha, ['delete', 'mutatingadmissionpolicybinding', 'label-configmaps']);
  await kubectlOk(alpha, ['delete', 'validatingadmissionpolicybinding', 'no-big-configmaps']);
  await kubectlOk(alpha, ['delete', 'validatingadmissionpolicy', 'no-big-configmaps']);
  await kubectlOk(alpha, ['delete', 'mutatingadmissionpolicy', 'label-configmaps']);
});

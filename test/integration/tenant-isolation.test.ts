// Two tenants use the same names everywhere; each sees a whole cluster of its own and nothing of the other's,
// through kubectl against the real apiserver: get, list (-A and per namespace), watch, apply, delete, errors.
import t from 'tap';
import { exampleCrd, webDeployment } from '../helpers/fixtures.ts';
import { connectH2, credentialsOf, EXEC_UPGRADE_HEADERS, h1Request, h2Request } from '../helpers/http.ts';
import { parseJsonStream } from '../helpers/normalize.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, withoutBuiltinRoles, type TestTenant } from '../helpers/tenants.ts';

let stack: Stack;
let alpha: TestTenant;
let bravo: TestTenant;

const BUILTIN_NAMESPACES = ['default', 'kube-node-lease', 'kube-public', 'kube-system'];

function objectsOf(owner: string) {
  return [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } },
    { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: 'shop' }, data: { owner } },
    { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'token', namespace: 'shop' }, stringData: { owner } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'reader', labels: { owner } },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
    },
  ];
}

async function applyAll(tenant: TestTenant, objects: object[]): Promise<void> {
  for (const object of objects) {
    const r = await tenant.kubectl(['apply', '-f', '-'], { input: JSON.stringify(object) });
    if (r.code !== 0) throw new Error(`${tenant.id}: apply ${JSON.stringify(object).slice(0, 80)}: ${r.stderr}`);
  }
}

async function names(tenant: TestTenant, args: string[]): Promise<string[]> {
  const r = await tenant.kubectl([...args, '-o', 'name']);
  if (r.code !== 0) throw new Error(`${tenant.id}: ${args.join(' ')}: ${r.stderr}`);
  return r.stdout
    .split('\n')
    .filter((line) => line !== '')
    .sort();
}

t.before(async () => {
  stack = await startStack();
  alpha = await createTestTenant(stack, 'alpha1');
  bravo = await createTestTenant(stack, 'bravo2');
  await applyAll(alpha, objectsOf('alpha'));
  await applyAll(bravo, objectsOf('bravo'));
});
t.teardown(() => stack?.stop());

t.test('each tenant has the built-in namespaces and its own, under the names it used', async (t) => {
  for (const tenant of [alpha, bravo]) {
    t.same(await names(tenant, ['get', 'namespaces']), [...BUILTIN_NAMESPACES, 'shop'].map((n) => `namespace/${n}`).sort(), tenant.id);
  }
  const upstream = await stack.kubectlDirect(['get', 'namespaces', '-o', 'name']);
  t.match(upstream.stdout, /namespace\/alpha1-shop/);
  t.match(upstream.stdout, /namespace\/bravo2-shop/);
});

t.test('same names, separate objects: each tenant reads its own data', async (t) => {
  for (const [tenant, owner] of [
    [alpha, 'alpha'],
    [bravo, 'bravo'],
  ] as const) {
    const cm = await tenant.kubectl(['-n', 'shop', 'get', 'configmap', 'settings', '-o', 'json']);
    t.equal(cm.code, 0, cm.stderr);
    const object = JSON.parse(cm.stdout);
    t.equal(object.data.owner, owner, `${tenant.id} reads its own configmap`);
    t.equal(object.metadata.namespace, 'shop', 'under the namespace it used');
    t.equal(object.metadata.labels?.['kubezoo.io/tenant'], undefined, "the tenant label stays tenantgate's business");
    const secret = await tenant.kubectl(['-n', 'shop', 'get', 'secret', 'token', '-o', 'jsonpath={.data.owner}']);
    t.equal(Buffer.from(secret.stdout, 'base64').toString(), owner);
    const role = await tenant.kubectl(['get', 'clusterrole', 'reader', '-o', 'jsonpath={.metadata.labels.owner}']);
    t.equal(role.stdout, owner, `${tenant.id} reads its own ClusterRole "reader"`);
  }
});

t.test("lists across namespaces show only the tenant's objects", async (t) => {
  for (const tenant of [alpha, bravo]) {
    const r = await tenant.kubectl(['get', 'configmaps', '-A', '-o', 'json']);
    t.equal(r.code, 0, r.stderr);
    const items = JSON.parse(r.stdout).items as { metadata: { name: string; namespace: string } }[];
    const seen = items.map((i) => `${i.metadata.namespace}/${i.metadata.name}`).sort();
    t.same(
      seen,
      [
        'default/kube-root-ca.crt',
        'kube-node-lease/kube-root-ca.crt',
        'kube-public/kube-root-ca.crt',
        'kube-system/kube-root-ca.crt',
        'shop/kube-root-ca.crt',
        'shop/settings',
      ],
      tenant.id,
    );
    const roles = await names(tenant, ['get', 'clusterroles']);
    t.same(withoutBuiltinRoles(roles), ['clusterrole.rbac.authorization.k8s.io/reader'], `${tenant.id} sees one ClusterRole of its own`);
    t.ok(roles.includes('clusterrole.rbac.authorization.k8s.io/edit'), 'and the built-in ones, as in any cluster');
    const table = await tenant.kubectl(['get', 'secrets', '-A']);
    t.match(table.stdout, /^shop\s+token\s/m, "kubectl's table shows the namespace as the tenant named it");
    t.notMatch(table.stdout, /alpha1-|bravo2-/, 'no prefix anywhere in the table');
  }
});

t.test("a tenant cannot reach the other's objects by any name", async (t) => {
  const attempts: [string[], RegExp][] = [
    [['get', 'namespace', 'bravo2-shop'], /NotFound/],
    [['-n', 'bravo2-shop', 'get', 'configmap', 'settings'], /NotFound/],
    [['get', 'clusterrole', 'bravo2-reader'], /NotFound/],
    [['get', 'configmaps', '-A', '-l', 'kubezoo.io/tenant=bravo2'], /reserved/],
  ];
  for (const [args, error] of attempts) {
    const r = await alpha.kubectl(args);
    t.not(r.code, 0, args.join(' '));
    t.match(r.stderr, error, args.join(' '));
    t.notMatch(r.stderr, /alpha1-/, 'the error names nothing by its upstream name');
  }
  const bySelector = await alpha.kubectl(['get', 'configmaps', '-A', '--field-selector', 'metadata.namespace=bravo2-shop', '-o', 'name']);
  t.equal(bySelector.stdout.trim(), '', "a field selector naming the other tenant's namespace finds nothing");
  const deleted = await alpha.kubectl(['-n', 'bravo2-shop', 'delete', 'configmap', 'settings']);
  t.not(deleted.code, 0);
  const still = await bravo.kubectl(['-n', 'shop', 'get', 'configmap', 'settings', '-o', 'jsonpath={.data.owner}']);
  t.equal(still.stdout, 'bravo', "bravo's configmap is untouched");
});

t.test("errors speak the tenant's names", async (t) => {
  const r = await alpha.kubectl(['-n', 'shop', 'get', 'configmap', 'missing']);
  t.match(r.stderr, /configmaps "missing" not found/);
  const ns = await alpha.kubectl(['get', 'namespace', 'nowhere']);
  t.match(ns.stderr, /namespaces "nowhere" not found/);
  t.notMatch(ns.stderr, /alpha1/);
});

t.test("a watch across namespaces sees only the tenant's changes", async (t) => {
  const watch = bravo.kubectl(['get', 'configmaps', '-A', '--watch', '--output-watch-events', '-o', 'json', '--request-timeout=8s']);
  await new Promise((r) => setTimeout(r, 1500));
  await alpha.kubectl(['-n', 'shop', 'patch', 'configmap', 'settings', '--type=merge', '-p', '{"data":{"touched":"alpha"}}']);
  await bravo.kubectl(['-n', 'shop', 'patch', 'configmap', 'settings', '--type=merge', '-p', '{"data":{"touched":"bravo"}}']);
  const events = parseJsonStream((await watch).stdout) as {
    type: string;
    object: { metadata: { namespace: string; name: string }; data?: Record<string, string> };
  }[];
  const modified = events.filter((e) => e.type === 'MODIFIED');
  t.same(
    modified.map((e) => e.object.data?.touched),
    ['bravo'],
    "bravo saw its own change and not alpha's",
  );
  t.ok(
    events.every((e) => !e.object.metadata.namespace.includes('alpha1') && e.object.data?.owner !== 'alpha'),
    "no event of alpha's",
  );
});

t.test('names too long once prefixed are refused before anything is created', async (t) => {
  const longNamespace = 'n'.repeat(60);
  const r = await alpha.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: longNamespace } }) });
  t.not(r.code, 0);
  t.match(r.stderr, /Invalid|must be no more than|too long/i);
  const upstream = await stack.kubectlDirect(['get', 'namespaces', '-o', 'name']);
  t.notMatch(upstream.stdout, /nnnnnnnnnn/, 'nothing was created upstream');
});

t.test("a Deployment's ReplicaSet and Pods, made by the controllers, belong to the tenant", async (t) => {
  const r = await alpha.kubectl(['apply', '-f', '-'], { input: JSON.stringify(webDeployment('web', 'shop')) });
  t.equal(r.code, 0, r.stderr);
  let pods: { metadata: { name: string; namespace: string; ownerReferences?: { kind: string }[] } }[] = [];
  for (let i = 0; i < 60 && pods.length === 0; i++) {
    await new Promise((r) => setTimeout(r, 500));
    const list = await alpha.kubectl(['get', 'pods', '-A', '-o', 'json']);
    pods = JSON.parse(list.stdout || '{"items":[]}').items;
  }
  t.equal(pods.length, 1, 'the controller-made pod is listed across namespaces (it carries the tenant label)');
  t.equal(pods[0]?.metadata.namespace, 'shop');
  t.equal(pods[0]?.metadata.ownerReferences?.[0]?.kind, 'ReplicaSet');
  t.same(await names(bravo, ['get', 'pods', '-A']), [], 'bravo sees no pods');
  const rs = await names(alpha, ['-n', 'shop', 'get', 'replicasets']);
  t.equal(rs.length, 1);
  const deleted = await alpha.kubectl(['-n', 'shop', 'delete', 'deployment', 'web']);
  t.equal(deleted.code, 0, deleted.stderr);
  let remaining = rs;
  for (let i = 0; i < 60 && remaining.length > 0; i++) {
    await new Promise((r) => setTimeout(r, 500));
    remaining = await names(alpha, ['-n', 'shop', 'get', 'replicasets']);
  }
  t.same(remaining, [], 'garbage collection removed the ReplicaSet');
});

t.test('a CRD with the same group in both tenants: each sees its own kind and objects', async (t) => {
  for (const [tenant, owner] of [
    [alpha, 'alpha'],
    [bravo, 'bravo'],
  ] as const) {
    const created = await tenant.kubectl(['apply', '-f', '-'], { input: JSON.stringify(exampleCrd('Widget', 'widgets')) });
    t.equal(created.code, 0, created.stderr);
    t.equal((await tenant.kubectl(['wait', '--for=condition=Established', 'crd/widgets.example.com', '--timeout=60s'])).code, 0);
    let applied = { code: 1, stderr: '' };
    for (let i = 0; i < 40 && applied.code !== 0; i++) {
      applied = await tenant.kubectl(['apply', '-f', '-'], {
        input: JSON.stringify({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w1', namespace: 'shop' }, spec: { owner } }),
      });
      if (applied.code !== 0) await new Promise((r) => setTimeout(r, 250));
    }
    t.equal(applied.code, 0, applied.stderr);
  }
  for (const [tenant, owner] of [
    [alpha, 'alpha'],
    [bravo, 'bravo'],
  ] as const) {
    const w = await tenant.kubectl(['-n', 'shop', 'get', 'widgets', 'w1', '-o', 'json']);
    t.equal(w.code, 0, w.stderr);
    const object = JSON.parse(w.stdout);
    t.equal(object.apiVersion, 'example.com/v1', 'the group as the tenant named it');
    t.equal(object.spec.owner, owner);
    const crds = await names(tenant, ['get', 'crds']);
    t.same(crds, ['customresourcedefinition.apiextensions.k8s.io/widgets.example.com']);
    const resources = await tenant.kubectl(['api-resources', '--api-group=example.com', '-o', 'name']);
    t.equal(resources.stdout.trim(), 'widgets.example.com', `${tenant.id}: api-resources shows its CRD under its own group`);
  }
  const upstream = await stack.kubectlDirect(['get', 'crds', '-o', 'name']);
  t.match(upstream.stdout, /widgets\.alpha1-example\.com/);
  t.match(upstream.stdout, /widgets\.bravo2-example\.com/);
});

t.test('an Upgrade header never turns conversion off (HTTP/1.1, any Upgrade value, JSON and protobuf, watch too)', async (t) => {
  const credentials = credentialsOf(alpha.kubeconfig);
  const paths = [
    '/api/v1/configmaps',
    '/api/v1/serviceaccounts',
    '/api/v1/events',
    '/apis/events.k8s.io/v1/events',
    '/api/v1/namespaces/shop/configmaps',
    '/api/v1/configmaps?watch=1&timeoutSeconds=1',
  ];
  for (const upgrade of ['websocket', 'SPDY/3.1', 'foo']) {
    for (const path of paths) {
      for (const accept of ['application/json', 'application/vnd.kubernetes.protobuf']) {
        const answer = await h1Request(credentials, 'GET', path, { headers: { connection: 'Upgrade', upgrade, accept } });
        const what = `${upgrade} ${path} ${accept}`;
        t.not(answer.status, 101, `${what}: not upgraded`);
        // (extension-apiserver-authentication and namespace-controller are the upstream kube-system's own.)
        t.notMatch(
          answer.body,
          /bravo|extension-apiserver-authentication|namespace-controller|alpha1-/,
          `${what}: nothing of bravo's, the upstream's or a prefix`,
        );
      }
    }
  }
  const list = await h1Request(credentials, 'GET', '/api/v1/namespaces/shop/configmaps', { headers: { connection: 'Upgrade', upgrade: 'websocket' } });
  t.equal(list.status, 200, 'a GET with Upgrade is answered as the plain GET');
  t.same(
    JSON.parse(list.body)
      .items.map((i: { metadata: { name: string } }) => i.metadata.name)
      .sort(),
    ['kube-root-ca.crt', 'settings'],
    "alpha's own configmaps, converted",
  );
  const write = await h1Request(credentials, 'POST', '/api/v1/namespaces/shop/configmaps', {
    headers: { connection: 'Upgrade', upgrade: 'websocket', 'content-type': 'application/json' },
    body: JSON.stringify({ metadata: { name: 'upgraded' } }),
  });
  t.equal(write.status, 400, 'a write with Upgrade is refused with a Status');
  t.match(JSON.parse(write.body), { kind: 'Status', code: 400 });
  const exec = await h1Request(credentials, 'GET', '/api/v1/namespaces/shop/pods/nowhere/exec?command=true&stdout=1', {
    headers: { ...EXEC_UPGRADE_HEADERS },
  });
  t.equal(exec.status, 404, "exec of a missing pod: the upstream's refusal");
  t.match(JSON.parse(exec.body), { kind: 'Status', code: 404 });
  t.notMatch(exec.body, /alpha1-/, "in the tenant's names");
});

t.test("another tenant's CRD schema is not found through OpenAPI v3, however the path is encoded", async (t) => {
  const credentials = credentialsOf(alpha.kubeconfig);
  const session = connectH2(credentials);
  t.teardown(() => session.close());
  const own = await h2Request(session, 'GET', '/openapi/v3/apis/example.com/v1');
  t.equal(own.status, 200, "alpha reads its own group's schema");
  t.notMatch(own.body, /bravo2/);
  const attempts: [string, number][] = [
    ['/openapi/v3/apis/bravo2-example.com/v1', 404],
    ['/openapi/v3/apis/bravo2-example.com/v1%3F/x', 400],
    ['/openapi/v3/apis/bravo2-example.com/v1%3Fx=1', 400],
    ['/openapi/v3/apis/bravo2-example.com/v1%23/x', 400],
    ['/openapi/v3/apis/bravo2-example.com/v1/x', 404],
    ['/apis/bravo2-example.com/v1', 404],
    ['/apis/bravo2-example.com/v1%3F', 400],
    ['/api/v1/namespaces/shop/configmaps/settings%00', 400],
    ['/api/v1/namespaces/shop/configmaps/settings%0A', 400],
    ['/api/v1/namespaces/shop/configmaps/settings%0D', 400],
    ['/api/v1/namespaces/shop/configmaps/settings%7F', 400],
  ];
  for (const [path, status] of attempts) {
    const answer = await h2Request(session, 'GET', path);
    t.equal(answer.status, status, path);
    t.match(JSON.parse(answer.body), { kind: 'Status', code: status }, `${path}: a Status`);
    t.notMatch(answer.body, /bravo|spec.*owner/, `${path}: nothing of bravo's`);
  }
});

t.test("kubectl's typed commands (protobuf bodies) create the tenant's objects", async (t) => {
  for (const args of [
    ['create', 'namespace', 'typed'],
    ['-n', 'typed', 'create', 'configmap', 'c', '--from-literal=k=v'],
    ['-n', 'typed', 'create', 'deployment', 'd', '--image=nginx:1.27'],
    ['create', 'clusterrole', 'typed-reader', '--verb=get', '--resource=pods'],
  ]) {
    const r = await alpha.kubectl(args);
    t.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
  }
  const cm = await alpha.kubectl(['-n', 'typed', 'get', 'configmap', 'c', '-o', 'jsonpath={.data.k}']);
  t.equal(cm.stdout, 'v');
  const upstream = await stack.kubectlDirect(['-n', 'alpha1-typed', 'get', 'deployment', 'd', '-o', 'json']);
  t.equal(upstream.code, 0, 'the deployment lives upstream in the prefixed namespace');
  const deployment = JSON.parse(upstream.stdout);
  t.equal(deployment.metadata.labels['kubezoo.io/tenant'], 'alpha1', "labelled as alpha1's");
  t.equal(deployment.spec.template.metadata.labels['kubezoo.io/tenant'], 'alpha1', 'and so are the pods it will make');
  t.same(await names(bravo, ['get', 'namespaces']), [...BUILTIN_NAMESPACES, 'shop'].map((n) => `namespace/${n}`).sort(), 'bravo sees none of it');
  const role = await alpha.kubectl(['get', 'clusterrole', 'typed-reader', '-o', 'name']);
  t.equal(role.stdout.trim(), 'clusterrole.rbac.authorization.k8s.io/typed-reader', 'RBAC kinds sent as protobuf are converted too');
});

t.test("another tenant's continue token and an old resourceVersion reveal nothing", async (t) => {
  const alphaSession = connectH2(credentialsOf(alpha.kubeconfig));
  const bravoSession = connectH2(credentialsOf(bravo.kubeconfig));
  const firstPage = await h2Request(alphaSession, 'GET', '/api/v1/configmaps?limit=1');
  t.equal(firstPage.status, 200);
  const token = firstPage.json().metadata.continue as string;
  t.ok(token, 'alpha got a continue token');
  const stolen = await h2Request(bravoSession, 'GET', `/api/v1/configmaps?limit=500&continue=${encodeURIComponent(token)}`);
  const stolenItems = stolen.status === 200 ? (stolen.json().items as { data?: Record<string, string> }[]) : [];
  t.ok(
    stolenItems.every((item) => item.data?.owner !== 'alpha'),
    `bravo with alpha's token (answered ${stolen.status}) sees none of alpha's configmaps`,
  );

  // A watch from resourceVersion 1 replays history: only bravo's own objects may come out.
  const replay = await h2Request(bravoSession, 'GET', '/api/v1/configmaps?watch=true&resourceVersion=1&allowWatchBookmarks=true&timeoutSeconds=2');
  const events = replay.body
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as { type: string; object: { metadata?: { namespace?: string }; data?: Record<string, string> } });
  t.ok(events.length > 0, 'the replay has events');
  t.ok(
    events.every((e) => e.object.data?.owner !== 'alpha' && !String(e.object.metadata?.namespace ?? '').startsWith('alpha1')),
    "none of them alpha's",
  );
  alphaSession.close();
  bravoSession.close();
});

t.test('access reviews answer within the tenant', async (t) => {
  const mine = await alpha.kubectl(['auth', 'can-i', 'delete', 'configmaps', '-n', 'shop']);
  t.equal(mine.stdout.trim(), 'yes', 'the tenant admin may delete in its own namespace');
  const nodes = await alpha.kubectl(['auth', 'can-i', 'delete', 'nodes']);
  t.match(nodes.stdout.trim(), /^no\b/, 'but not shared nodes');
  const whoami = await alpha.kubectl(['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}']);
  t.equal(whoami.stdout, 'admin', 'the tenant admin is "admin" to itself');
});

t.test("RBAC bindings name the tenant's roles and users, upstream under its prefix", async (t) => {
  const binding = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: 'readers', namespace: 'shop' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'reader' },
    subjects: [
      { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'bob' },
      { kind: 'ServiceAccount', name: 'builder', namespace: 'shop' },
    ],
  };
  const r = await alpha.kubectl(['apply', '-f', '-'], { input: JSON.stringify(binding) });
  t.equal(r.code, 0, r.stderr);
  const upstream = JSON.parse((await stack.kubectlDirect(['-n', 'alpha1-shop', 'get', 'rolebinding', 'readers', '-o', 'json'])).stdout);
  t.equal(upstream.roleRef.name, 'alpha1-reader', "the roleRef names alpha's ClusterRole, not bravo's or a shared one");
  t.same(
    upstream.subjects.map((s: { name: string; namespace?: string }) => `${s.name}/${s.namespace ?? ''}`),
    ['alpha1-bob/', 'builder/alpha1-shop'],
  );
  const seen = JSON.parse((await alpha.kubectl(['-n', 'shop', 'get', 'rolebinding', 'readers', '-o', 'json'])).stdout);
  t.same(seen.roleRef, binding.roleRef, 'alpha sees the binding as it wrote it');
  t.same(seen.subjects, binding.subjects);
  t.same(await names(bravo, ['-n', 'shop', 'get', 'rolebindings']), [], 'bravo has no binding of that name');
});

t.test('bad input gets a 4xx Status and creates nothing', async (t) => {
  const session = connectH2(credentialsOf(alpha.kubeconfig));
  const malformed = await h2Request(session, 'POST', '/api/v1/namespaces/shop/configmaps', {
    headers: { 'content-type': 'application/json' },
    body: '{"metadata": {"name": "broken"',
  });
  t.equal(malformed.status, 400);
  t.equal(malformed.json().kind, 'Status');
  const yaml = await h2Request(session, 'PATCH', '/api/v1/namespaces/shop/configmaps/settings?fieldManager=t', {
    headers: { 'content-type': 'application/apply-patch+yaml' },
    body: 'metadata: [unclosed',
  });
  t.equal(yaml.status, 400, 'malformed YAML');
  const unknown = await h2Request(session, 'GET', '/apis/nowhere.example/v1/namespaces/shop/things');
  t.equal(unknown.status, 404, 'an unknown kind');
  t.equal(unknown.json().kind, 'Status');
  const hidden = await h2Request(session, 'GET', '/apis/storage.k8s.io/v1/volumeattachments');
  t.equal(hidden.status, 404, 'hidden kinds do not exist for tenants');
  const otherPrefix = await h2Request(session, 'POST', '/api/v1/namespaces', {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ metadata: { name: 'bravo2-shop' } }),
  });
  t.equal(otherPrefix.status, 201, "a name that looks like another tenant's is just a name of alpha's");
  session.close();
  const upstream = await stack.kubectlDirect(['get', 'namespaces', '-o', 'name']);
  t.match(upstream.stdout, /namespace\/alpha1-bravo2-shop/, "created under alpha's prefix");
  t.notMatch(upstream.stdout, /broken/);
  const bravoCm = await bravo.kubectl(['-n', 'shop', 'get', 'configmap', 'settings', '-o', 'jsonpath={.data.owner}']);
  t.equal(bravoCm.stdout, 'bravo', "bravo's namespace was not touched");
});

t.test("kubectl get all -A and describe show only the tenant's objects", async (t) => {
  const all = await bravo.kubectl(['get', 'all', '-A']);
  t.equal(all.code, 0, all.stderr);
  t.notMatch(all.stdout, /alpha|typed/, "nothing of alpha's");
  const described = await alpha.kubectl(['-n', 'shop', 'describe', 'configmap', 'settings']);
  t.equal(described.code, 0, described.stderr);
  t.match(described.stdout, /Namespace:\s+shop/);
  t.notMatch(described.stdout, /alpha1-|bravo/);
});

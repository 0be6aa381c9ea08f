// The second wall: upstream, a tenant identity reads and writes namespaced objects only in its tenant's namespaces,
// whatever RBAC the tenant writes; its cross-namespace reads are made by tenantgate once the tenant's RBAC allowed them.
import t from 'tap';
import { TENANT_CLUSTER_SCOPE_GROUP } from '../../lib/auth/impersonation.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';
import { poll, succeeded } from '../helpers/kit.ts';

let stack: Stack;
let golf: TestTenant;
let kilo: TestTenant;
let aliceKubeconfig: string;

const RBAC = 'rbac.authorization.k8s.io';
/** Where a tenant's ClusterRoleBindings are kept upstream: tenantgate's custom resources. */
const STORED_BINDINGS = 'clusterrolebindings.rbac.tenantgate.kubezoo.io';

const asAlice = (args: string[]) => stack.kubectl(args, { kubeconfig: aliceKubeconfig });
/** kubectl straight at the upstream, as tenantgate would impersonate tenant `id`'s admin (at the cluster scope: every group). */
const asTenantIdentity = (id: string, args: string[], input?: string) =>
  stack.kubectlDirect(
    ['--as', `${id}-admin`, '--as-group', `${id}:system:authenticated`, '--as-group', TENANT_CLUSTER_SCOPE_GROUP, '--as-user-extra', `tenant=${id}`, ...args],
    { input },
  );

t.before(async () => {
  stack = await startStack();
  golf = await createTestTenant(stack, 'golf07');
  kilo = await createTestTenant(stack, 'kilo08');
  aliceKubeconfig = stack.kubeconfigFor({ user: 'alice', groups: [], tenant: 'golf07' });
  for (const [tenant, value] of [
    [golf, 'golf'],
    [kilo, 'kilo'],
  ] as const) {
    await succeeded(tenant.kubectl(['create', 'namespace', 'shop']), 'namespace');
    await succeeded(tenant.kubectl(['-n', 'shop', 'create', 'configmap', 'settings', `--from-literal=owner=${value}`]), 'configmap');
  }
});
t.teardown(() => stack?.stop());

t.test("a user may list configmaps across namespaces only once a ClusterRoleBinding grants it, and sees only its tenant's", async (t) => {
  const refused = await asAlice(['get', 'configmaps', '-A']);
  t.not(refused.code, 0, 'alice without a binding is refused');
  t.match(
    refused.stderr,
    /configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" at the cluster scope/,
    "with the apiserver's own message, in the tenant's names",
  );
  t.notMatch(refused.stderr, /golf07|tenantgate:cluster/, 'no upstream name in it');

  await succeeded(golf.kubectl(['create', 'clusterrole', 'cm-reader', '--verb=get,list,watch', '--resource=configmaps']), 'clusterrole');
  await succeeded(golf.kubectl(['create', 'clusterrolebinding', 'alice-reads', '--clusterrole=cm-reader', '--user=alice']), 'clusterrolebinding');
  const listed = await poll(async () => {
    const r = await asAlice(['get', 'configmaps', '-A', '-o', 'json']);
    return r.code === 0 ? (JSON.parse(r.stdout).items as { metadata: { namespace: string; name: string }; data?: { owner?: string } }[]) : undefined;
  });
  t.ok(listed !== undefined && listed.length > 0, 'granted, alice lists configmaps across namespaces');
  t.ok(
    listed?.some((item) => item.metadata.namespace === 'shop' && item.data?.owner === 'golf'),
    "golf's own configmap is there",
  );
  t.notOk(
    listed?.some((item) => item.data?.owner === 'kilo' || item.metadata.namespace.includes('kilo08')),
    "nothing of kilo's",
  );
  const perNamespace = await poll(async () => {
    const r = await asAlice(['-n', 'shop', 'get', 'configmap', 'settings', '-o', 'jsonpath={.data.owner}']);
    return r.code === 0 ? r.stdout : undefined;
  });
  t.equal(perNamespace, 'golf', "and reads in one namespace through the binding's expansion there");
  const secrets = await asAlice(['get', 'secrets', '-A']);
  t.match(secrets.stderr, /secrets is forbidden: User "alice" cannot list resource "secrets"/, 'only what the binding grants');
  t.equal((await asAlice(['auth', 'can-i', 'list', 'configmaps', '-A'])).stdout.trim(), 'yes', 'kubectl auth can-i -A says what the binding grants');
  t.equal((await asAlice(['auth', 'can-i', 'list', 'secrets', '-A'])).stdout.trim(), 'no');
  t.equal((await golf.kubectl(['auth', 'can-i', 'list', 'secrets', '-A'])).stdout.trim(), 'yes', 'the admin may list anything across its namespaces');
  const review = JSON.stringify({
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    spec: { user: 'alice', resourceAttributes: { verb: 'list', resource: 'configmaps' } },
  });
  const answered = JSON.parse(await succeeded(golf.kubectl(['create', '-f', '-', '-o', 'json'], { input: review }), 'review'));
  t.equal(answered.status.allowed, true, 'a SubjectAccessReview about alice at the cluster scope: allowed');
  t.match(answered.status.reason, /ClusterRoleBinding "alice-reads" of ClusterRole "cm-reader" to User "alice"/, "by her ClusterRoleBinding, in golf's names");

  await succeeded(golf.kubectl(['delete', 'clusterrolebinding', 'alice-reads']), 'unbind');
  const gone = await poll(async () => ((await asAlice(['get', 'configmaps', '-A'])).code !== 0 ? true : undefined));
  t.ok(gone, 'unbound, alice is refused again');
  const expansions = await poll(async () => {
    const r = await stack.kubectlDirect(['get', 'rolebindings', '-A', '-o', 'name', '--field-selector', 'metadata.name=tenantgate:crb:golf07-alice-reads']);
    return r.stdout.trim() === '' ? true : undefined;
  });
  t.ok(expansions, 'and its expansions are removed');
});

t.test("upstream, a tenant identity cannot read or write another tenant's namespace, nor list across namespaces, whatever it binds", async (t) => {
  const probes = async (when: string) => {
    const read = await asTenantIdentity('golf07', ['-n', 'kilo08-shop', 'get', 'configmap', 'settings']);
    t.match(read.stderr, /forbidden/i, `${when}: reading kilo's configmap is refused`);
    const write = await asTenantIdentity('golf07', ['-n', 'kilo08-shop', 'create', 'configmap', 'planted']);
    t.match(write.stderr, /forbidden/i, `${when}: writing into kilo's namespace is refused`);
    const patch = await asTenantIdentity('golf07', ['-n', 'kilo08-shop', 'patch', 'configmap', 'settings', '-p', '{"data":{"owner":"golf"}}']);
    t.match(patch.stderr, /forbidden/i, `${when}: changing kilo's configmap is refused`);
    const everywhere = await asTenantIdentity('golf07', ['get', 'configmaps', '-A']);
    t.match(everywhere.stderr, /forbidden/i, `${when}: listing configmaps cluster-wide is refused`);
    const secrets = await asTenantIdentity('golf07', ['get', 'secrets', '-A']);
    t.match(secrets.stderr, /forbidden/i, `${when}: listing secrets cluster-wide is refused`);
    const own = await asTenantIdentity('golf07', ['-n', 'golf07-shop', 'get', 'configmap', 'settings', '-o', 'jsonpath={.data.owner}']);
    t.equal(own.stdout, 'golf', `${when}: its own namespace still works`);
  };
  await probes('as bootstrapped');

  // Everything on everything, bound to the admin through tenantgate.
  await succeeded(golf.kubectl(['create', 'clusterrole', 'everything', '--verb=*', '--resource=*.*']), 'clusterrole');
  await succeeded(golf.kubectl(['create', 'clusterrolebinding', 'admin-everything', '--clusterrole=everything', '--user=admin']), 'binding');
  await succeeded(golf.kubectl(['create', 'clusterrolebinding', 'all-everything', '--clusterrole=everything', '--group=system:authenticated']), 'binding');
  await poll(async () => {
    const r = await stack.kubectlDirect(['get', 'rolebindings', '-n', 'golf07-shop', '-o', 'name']);
    return r.stdout.includes('tenantgate:crb:golf07-admin-everything') ? true : undefined;
  });
  await probes('after binding * on * to its admin and its authenticated group');
  const unchanged = await succeeded(
    stack.kubectlDirect(['-n', 'kilo08-shop', 'get', 'configmap', 'settings', '-o', 'jsonpath={.data.owner}']),
    'upstream read',
  );
  t.equal(unchanged, 'kilo', "kilo's configmap is as kilo wrote it");
  const planted = await stack.kubectlDirect(['-n', 'kilo08-shop', 'get', 'configmap', 'planted']);
  t.not(planted.code, 0, "nothing was planted in kilo's namespace");
  const upstreamBinding = JSON.parse(await succeeded(stack.kubectlDirect(['get', STORED_BINDINGS, 'golf07-admin-everything', '-o', 'json']), 'binding'));
  t.same(
    upstreamBinding.subjects.map((s: { name: string }) => s.name),
    ['tenantgate:cluster:golf07-admin'],
    "upstream the binding (tenantgate's custom resource) names a shadow user",
  );
  t.not((await stack.kubectlDirect(['get', 'clusterrolebinding', 'golf07-admin-everything'])).code, 0, 'and is no real ClusterRoleBinding');
});

t.test("the tenant admin lists across its namespaces through tenantgate, and kilo's admin sees none of golf's", async (t) => {
  const golfAll = JSON.parse(await succeeded(golf.kubectl(['get', 'configmaps', '-A', '-o', 'json']), 'list')).items as { data?: { owner?: string } }[];
  t.ok(golfAll.some((item) => item.data?.owner === 'golf'));
  t.notOk(golfAll.some((item) => item.data?.owner === 'kilo'));
  const kiloAll = JSON.parse(await succeeded(kilo.kubectl(['get', 'configmaps', '-A', '-o', 'json']), 'list')).items as { data?: { owner?: string } }[];
  t.notOk(kiloAll.some((item) => item.data?.owner === 'golf'));
  const pods = await kilo.kubectl(['get', 'pods', '-A', '-o', 'json']);
  t.equal(pods.code, 0, `label-filtered kinds too: ${pods.stderr}`);
});

t.test('in a namespace that does not exist the admin gets "not found" as in any cluster, not the upstream\'s 403', async (t) => {
  const get = await kilo.kubectl(['-n', 'nowhere', 'get', 'configmap', 'settings']);
  t.match(get.stderr, /NotFound/, 'kubectl, told the object is not found, finds the namespace missing');
  const create = await kilo.kubectl(['-n', 'nowhere', 'create', 'configmap', 'x']);
  t.match(create.stderr, /namespaces "nowhere" not found/);
  const list = await kilo.kubectl(['-n', 'nowhere', 'get', 'configmaps', '-o', 'json']);
  t.same([list.code, JSON.parse(list.stdout || '{}').items], [0, []], 'an empty list');
  const mike = stack.kubeconfigFor({ user: 'mike', groups: [], tenant: 'kilo08' });
  const denied = await stack.kubectl(['-n', 'nowhere', 'get', 'secret', 'x'], { kubeconfig: mike });
  t.match(denied.stderr, /Forbidden/, 'a user whose RBAC does not allow it is still refused');
  t.notMatch(denied.stderr, /kilo08/);
});

t.test('a tenant ClusterRoleBinding of an older tenantgate (real, real subjects) is moved to the stored form with shadow subjects', async (t) => {
  await succeeded(
    stack.kubectlDirect(['create', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: `${RBAC}/v1`,
        kind: 'ClusterRoleBinding',
        metadata: { name: 'golf07-legacy', labels: { 'kubezoo.io/tenant': 'golf07' } },
        roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'golf07-cm-reader' },
        subjects: [{ apiGroup: RBAC, kind: 'User', name: 'golf07-alice' }],
      }),
    }),
    'legacy binding',
  );
  const migrated = await poll(
    async () => {
      const r = await stack.kubectlDirect(['get', STORED_BINDINGS, 'golf07-legacy', '-o', 'jsonpath={.subjects[0].name}']);
      return r.stdout === 'tenantgate:cluster:golf07-alice' ? r.stdout : undefined;
    },
    { withinMs: 40_000 },
  );
  t.equal(migrated, 'tenantgate:cluster:golf07-alice');
  const real = await poll(async () => ((await stack.kubectlDirect(['get', 'clusterrolebinding', 'golf07-legacy'])).code !== 0 ? true : undefined), {
    withinMs: 40_000,
  });
  t.ok(real, 'the real ClusterRoleBinding is gone');
  const seen = JSON.parse(await succeeded(golf.kubectl(['get', 'clusterrolebinding', 'legacy', '-o', 'json']), 'the tenant reads it'));
  t.same([seen.roleRef.name, seen.subjects], ['cm-reader', [{ apiGroup: RBAC, kind: 'User', name: 'alice' }]], 'the tenant reads it as before');
});

t.test('the shared tenant ClusterRole, widened as an older tenantgate made it, is narrowed again', async (t) => {
  const role = JSON.parse(await succeeded(stack.kubectlDirect(['get', 'clusterrole', 'tenantgate:tenant-cluster-scope', '-o', 'json']), 'role'));
  t.notOk(
    role.rules.some((rule: { resources: string[] }) => rule.resources.includes('*') || rule.resources.includes('configmaps')),
    'no namespaced resource in it',
  );
  role.rules.unshift({ apiGroups: ['*'], resources: ['*'], verbs: ['get', 'list', 'watch'] });
  await succeeded(stack.kubectlDirect(['replace', '-f', '-'], { input: JSON.stringify(role) }), 'widen');
  const narrowed = await poll(async () => {
    const r = JSON.parse(await succeeded(stack.kubectlDirect(['get', 'clusterrole', 'tenantgate:tenant-cluster-scope', '-o', 'json']), 'role'));
    return r.rules.some((rule: { resources: string[] }) => rule.resources.includes('*')) ? undefined : true;
  });
  t.ok(narrowed, 'the lifecycle controller applied the narrow rules again');
  t.match((await asTenantIdentity('golf07', ['get', 'configmaps', '-A'])).stderr, /forbidden/i, 'and a tenant identity cannot list across namespaces');
});

t.test('the admin keeps its cluster-scoped custom resources, and another tenant cannot reach them upstream', async (t) => {
  const crd = {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'gadgets.example.com' },
    spec: {
      group: 'example.com',
      scope: 'Cluster',
      names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget' },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        },
      ],
    },
  };
  await succeeded(golf.kubectl(['apply', '-f', '-'], { input: JSON.stringify(crd) }), 'crd');
  await succeeded(golf.kubectl(['wait', '--for=condition=Established', 'crd/gadgets.example.com', '--timeout=60s']), 'established');
  const gadget = JSON.stringify({ apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name: 'g1' }, colour: 'green' });
  const created = await poll(async () => ((await golf.kubectl(['apply', '-f', '-'], { input: gadget })).code === 0 ? true : undefined), { withinMs: 30_000 });
  t.ok(created, 'golf creates a cluster-scoped custom resource');
  t.equal(await succeeded(golf.kubectl(['get', 'gadget', 'g1', '-o', 'jsonpath={.colour}']), 'get'), 'green', 'and reads it');
  const names = await succeeded(golf.kubectl(['get', 'gadgets', '-o', 'name']), 'list');
  t.match(names, /gadget\.example\.com\/g1/, 'and lists them');
  const foreign = await asTenantIdentity('kilo08', ['get', 'gadgets.golf07-example.com', 'golf07-g1']);
  t.match(foreign.stderr, /forbidden/i, "kilo's identity cannot read golf's custom resource upstream");
  const listed = await asTenantIdentity('kilo08', ['get', 'gadgets.golf07-example.com']);
  t.match(listed.stderr, /forbidden/i, 'nor list them');
  const status = await asTenantIdentity('kilo08', ['get', '--raw', '/apis/golf07-example.com/v1/gadgets/golf07-g1/status']);
  t.match(status.stderr, /forbidden/i, 'nor read one through its status');
  const own = JSON.stringify({ apiVersion: 'golf07-example.com/v1', kind: 'Gadget', metadata: { name: 'kilo08-g2' } });
  const written = await asTenantIdentity('kilo08', ['create', '--raw', '/apis/golf07-example.com/v1/gadgets', '-f', '-'], own);
  t.match(written.stderr, /may write only in its own API groups/, "nor write in golf's group, even under its own prefix: the policy says why");
  const deleted = await asTenantIdentity('kilo08', ['delete', 'gadgets.golf07-example.com', 'golf07-g1']);
  t.not(deleted.code, 0, "nor delete golf's");
  t.equal(await succeeded(golf.kubectl(['get', 'gadget', 'g1', '-o', 'jsonpath={.colour}']), 'get'), 'green', "golf's gadget is still there");
  t.match(
    await succeeded(golf.kubectl(['get', '--raw', '/apis/example.com/v1/gadgets/g1/status']), 'status'),
    /"colour":"green"/,
    'and golf reads its status (made by tenantgate upstream)',
  );
});

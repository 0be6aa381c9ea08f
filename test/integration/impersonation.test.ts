// kubectl --as through tenantgate acts as the impersonated identity, as against the apiserver itself (issue 14:
// tenantgate dropped Impersonate-* headers, so a tenant admin checking a restricted account acted as admin).
// A tenant impersonates only its own identities, as its RBAC allows; an administrator as the upstream allows.
import t from 'tap';
import { performance } from 'node:perf_hooks';
import { connectH2, credentialsOf, h1Request, h2Request } from '../helpers/http.ts';
import { startStack, type KubectlResult, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';
import { kubectlOk } from '../helpers/kit.ts';

let stack: Stack;
let tenant: TestTenant;
let other: TestTenant;
/** A user of the tenant with no rights of its own. */
let dev: (args: string[]) => Promise<KubectlResult>;
let devKubeconfig: string;

t.before(async () => {
  stack = await startStack();
  tenant = await createTestTenant(stack, 'imprsa');
  other = await createTestTenant(stack, 'imprsb');
  devKubeconfig = stack.kubeconfigFor({ user: 'dev', groups: [], tenant: tenant.id });
  dev = (args) => stack.kubectl(args, { kubeconfig: devKubeconfig });
  await kubectlOk(tenant, ['create', 'namespace', 'shop']);
  await kubectlOk(tenant, ['create', 'configmap', 'prices', '-n', 'shop', '--from-literal=apple=1']);
  await kubectlOk(other, ['create', 'configmap', 'secret-plans', '--from-literal=a=1']);
});
t.teardown(() => stack?.stop());

/** Upstream RBAC reaches the authorizer through an informer: a new grant shows within a moment, retried briefly. */
async function eventually(run: () => Promise<KubectlResult>, done: (r: KubectlResult) => boolean): Promise<KubectlResult> {
  let r = await run();
  for (let i = 0; i < 25 && !done(r); i++) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    r = await run();
  }
  return r;
}

t.test("a tenant admin asking what a service account may do gets the service account's answer", async (t) => {
  const asAdmin = await tenant.kubectl(['auth', 'can-i', 'create', 'deployments', '-n', 'shop']);
  t.equal(asAdmin.stdout.trim(), 'yes', 'the admin itself may');
  const asRobot = await tenant.kubectl(['--as=system:serviceaccount:shop:robot', 'auth', 'can-i', 'create', 'deployments', '-n', 'shop']);
  t.equal(asRobot.stdout.trim(), 'no', `robot may not (${asRobot.stderr})`);
  const whoami = await tenant.kubectl(['--as=system:serviceaccount:shop:robot', 'auth', 'whoami', '-o', 'json']);
  t.equal(whoami.code, 0, whoami.stderr);
  t.match(
    JSON.parse(whoami.stdout).status.userInfo,
    {
      username: 'system:serviceaccount:shop:robot',
      groups: ['system:serviceaccounts', 'system:serviceaccounts:shop', 'system:authenticated'],
    },
    "the service account in the tenant's names, with its groups",
  );
  t.equal(JSON.parse(whoami.stdout).status.userInfo.extra, undefined, 'and no extra: the one tenantgate adds upstream is its own');
  const admin = await tenant.kubectl(['auth', 'whoami', '-o', 'json']);
  t.equal(JSON.parse(admin.stdout).status.userInfo.extra, undefined, 'nor for the admin');
});

t.test('kubectl --as=alice is refused what alice may not do, and allowed once a RoleBinding grants her', async (t) => {
  const refused = await tenant.kubectl(['--as=alice', 'get', 'configmaps', '-n', 'shop']);
  t.not(refused.code, 0);
  t.match(refused.stderr, 'configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "shop"');
  t.notMatch(refused.stderr, /imprsa-|imprsa:/, "in the tenant's names");
  await kubectlOk(tenant, ['create', 'role', 'price-reader', '-n', 'shop', '--verb=get,list', '--resource=configmaps']);
  await kubectlOk(tenant, ['create', 'rolebinding', 'alice-reads-prices', '-n', 'shop', '--role=price-reader', '--user=alice']);
  const allowed = await eventually(
    () => tenant.kubectl(['--as=alice', 'get', 'configmaps', '-n', 'shop', '-o', 'name']),
    (r) => r.code === 0,
  );
  t.equal(allowed.code, 0, allowed.stderr);
  t.match(allowed.stdout, 'configmap/prices');
  const write = await tenant.kubectl(['--as=alice', 'delete', 'configmap', 'prices', '-n', 'shop']);
  t.match(write.stderr, 'User "alice" cannot delete resource "configmaps"', 'still only what the Role grants');
  const withUid = await tenant.kubectl(['--as=alice', '--as-group=buyers', '--as-uid=u-1', '--as-user-extra=scopes=view', 'auth', 'whoami', '-o', 'json']);
  t.match(
    JSON.parse(withUid.stdout).status.userInfo,
    { username: 'alice', uid: 'u-1', groups: ['buyers', 'system:authenticated'], extra: { scopes: ['view'] } },
    `groups, uid and extras as asked (${withUid.stderr})`,
  );
  // What impersonation costs once its reviews are cached (each cached 5 s): sequential GETs, bounded in count.
  const session = connectH2(credentialsOf(tenant.kubeconfig));
  t.teardown(() => session.close());
  const timeGets = async (headers: Record<string, string>) => {
    const started = performance.now();
    for (let i = 0; i < 100; i++) {
      const answer = await h2Request(session, 'GET', '/api/v1/namespaces/shop/configmaps/prices', { headers });
      if (answer.status !== 200) throw new Error(`GET as ${JSON.stringify(headers)}: ${answer.status} ${answer.body}`);
    }
    return (performance.now() - started) / 100;
  };
  await timeGets({ 'impersonate-user': 'alice' }); // warm: connection, caches, JIT
  const plainMs = await timeGets({});
  const impersonatedMs = await timeGets({ 'impersonate-user': 'alice' });
  t.comment(`GET one ConfigMap: ${plainMs.toFixed(2)} ms as the admin, ${impersonatedMs.toFixed(2)} ms as the admin impersonating alice (mean of 100)`);
  const log = stack.gatewayLogs.find((line) => line.includes('"as":"alice"'));
  t.ok(log, 'the request log names the caller and whom it acted as');
  t.match(JSON.parse(log!), { tenant: 'imprsa', user: 'admin', as: 'alice' });
});

t.test("a tenant user without impersonate rights gets the apiserver's 403, until its tenant's RBAC grants them", async (t) => {
  const own = await dev(['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}']);
  t.equal(own.stdout, 'dev', `dev itself is served (${own.stderr})`);
  // kubectl reports a refused discovery only as "unknown" (against the apiserver too): let dev's own discovery be cached first.
  await dev(['api-resources', '-o', 'name']);
  const refused = await dev(['--as=alice', 'get', 'configmaps', '-n', 'shop']);
  t.not(refused.code, 0);
  t.match(refused.stderr, 'users "alice" is forbidden: User "dev" cannot impersonate resource "users" in API group "" at the cluster scope');
  const account = await dev(['--as=system:serviceaccount:shop:robot', 'auth', 'can-i', 'get', 'pods', '-n', 'shop']);
  t.match(
    account.stderr,
    'serviceaccounts "robot" is forbidden: User "dev" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "shop"',
  );

  // Cluster-wide by the tenant's ClusterRoleBinding (its shadow identity upstream), named users only.
  await kubectlOk(tenant, ['create', 'clusterrole', 'impersonate-alice', '--verb=impersonate', '--resource=users', '--resource-name=alice']);
  await kubectlOk(tenant, ['create', 'clusterrolebinding', 'dev-impersonates-alice', '--clusterrole=impersonate-alice', '--user=dev']);
  const asAlice = await eventually(
    () => dev(['--as=alice', 'get', 'configmaps', '-n', 'shop', '-o', 'name']),
    (r) => r.code === 0,
  );
  t.equal(asAlice.code, 0, asAlice.stderr);
  t.match(asAlice.stdout, 'configmap/prices', 'dev reads as alice what alice may read');
  const asBob = await dev(['--as=bob', 'get', 'configmaps', '-n', 'shop']);
  t.match(asBob.stderr, 'users "bob" is forbidden: User "dev" cannot impersonate resource "users"', 'only the user named');

  // In one namespace by a RoleBinding.
  await kubectlOk(tenant, ['create', 'role', 'impersonate-robot', '-n', 'shop', '--verb=impersonate', '--resource=serviceaccounts', '--resource-name=robot']);
  await kubectlOk(tenant, ['create', 'rolebinding', 'dev-impersonates-robot', '-n', 'shop', '--role=impersonate-robot', '--user=dev']);
  const asRobot = await eventually(
    () => dev(['--as=system:serviceaccount:shop:robot', 'auth', 'can-i', 'get', 'pods', '-n', 'shop']),
    (r) => !r.stderr.includes('forbidden'),
  );
  t.equal(asRobot.stdout.trim(), 'no', `robot's own answer (${asRobot.stderr})`);
});

t.test("whatever a tenant names, it acts as an identity of its own tenant: no system identity, no other tenant's", async (t) => {
  for (const args of [
    ['--as=system:admin', '--as-group=system:masters'],
    ['--as=imprsb-admin'],
    ['--as=imprsb-admin', '--as-group=imprsb:system:authenticated'],
    ['--as=system:serviceaccount:imprsb-default:default'],
    ['--as=system:kube-controller-manager'],
  ]) {
    const whoami = await tenant.kubectl([...args, 'auth', 'whoami', '-o', 'json']);
    t.equal(whoami.code, 0, whoami.stderr);
    const userInfo = JSON.parse(whoami.stdout).status.userInfo;
    t.equal(userInfo.username, args[0]!.slice('--as='.length), `${args.join(' ')}: the name as given, in the tenant's view`);
    const configmaps = await tenant.kubectl([...args, 'get', 'configmaps', '-n', 'default', '-o', 'name']);
    t.not(configmaps.code, 0, `${args.join(' ')}: no rights in the tenant, so none anywhere`);
    t.notMatch(configmaps.stdout + configmaps.stderr, /secret-plans/);
    const upstreamSecrets = await tenant.kubectl([...args, 'get', 'secrets', '-n', 'kube-system']);
    t.match(upstreamSecrets.stderr, /forbidden/, `${args.join(' ')}: the upstream's kube-system stays out of reach`);
  }
  const extra = await tenant.kubectl(['--as=alice', '--as-user-extra=tenant=imprsb', 'get', 'configmaps', '-n', 'shop']);
  t.match(
    extra.stderr,
    'userextras.authentication.k8s.io "imprsb" is forbidden: User "admin" cannot impersonate resource "userextras/tenant"',
    "the tenant extra is never the tenant's to set",
  );
  const groupOnly = await h1Request(credentialsOf(tenant.kubeconfig), 'GET', '/api/v1/namespaces/shop/configmaps', {
    headers: { 'impersonate-group': 'system:masters' },
  });
  t.equal(groupOnly.status, 400, 'a group without a user is malformed');
});

t.test("Connection: Impersonate-User (capsule-proxy) neither drops tenantgate's impersonation nor skips the check", async (t) => {
  const credentials = credentialsOf(devKubeconfig);
  const plain = await h1Request(credentials, 'GET', '/api/v1/namespaces/shop/configmaps', { headers: { connection: 'Impersonate-User, Impersonate-Group' } });
  t.equal(plain.status, 403, 'dev, who may read nothing, is still dev');
  t.match(plain.body, 'User \\"dev\\" cannot list');
  const hidden = await h1Request(credentials, 'GET', '/api/v1/namespaces/shop/configmaps', {
    headers: { connection: 'Impersonate-User', 'impersonate-user': 'bob', 'x-remote-user': 'system:admin' },
  });
  t.equal(hidden.status, 403);
  t.match(hidden.body, 'users \\"bob\\" is forbidden: User \\"dev\\" cannot impersonate');
});

t.test('an upgrade (exec --as) is impersonated the same way', async (t) => {
  const exec = '/api/v1/namespaces/shop/pods/web/exec?command=true&stdout=true';
  const upgrade = { connection: 'Upgrade', upgrade: 'SPDY/3.1', 'x-stream-protocol-version': 'v4.channel.k8s.io' };
  const devAsBob = await h1Request(credentialsOf(devKubeconfig), 'POST', exec, { headers: { ...upgrade, 'impersonate-user': 'bob' } });
  t.equal(devAsBob.status, 403);
  t.match(devAsBob.body, 'User \\"dev\\" cannot impersonate resource \\"users\\"');
  const adminAsAlice = await h1Request(credentialsOf(tenant.kubeconfig), 'POST', exec, { headers: { ...upgrade, 'impersonate-user': 'alice' } });
  t.equal(adminAsAlice.status, 403, 'the upstream answers about alice');
  t.match(adminAsAlice.body, 'User \\"alice\\" cannot create resource \\"pods/exec\\"');
  const adminItself = await h1Request(credentialsOf(tenant.kubeconfig), 'POST', exec, { headers: upgrade });
  t.equal(adminItself.status, 404, 'the admin itself may exec: the pod is just not there');
});

t.test("an administrator's --as through tenantgate acts as that identity upstream", async (t) => {
  const asSelf = await stack.kubectl(['auth', 'can-i', 'create', 'deployments', '-n', 'default']);
  t.equal(asSelf.stdout.trim(), 'yes');
  const asNobody = await stack.kubectl(['--as=nobody', 'auth', 'can-i', 'create', 'deployments', '-n', 'default']);
  t.equal(asNobody.stdout.trim(), 'no', asNobody.stderr);
  const whoami = await stack.kubectl(['--as=system:serviceaccount:kube-system:default', 'auth', 'whoami', '-o', 'json']);
  t.equal(JSON.parse(whoami.stdout).status.userInfo.username, 'system:serviceaccount:kube-system:default', 'as given, unconverted');
  const list = await stack.kubectl(['--as=nobody', 'get', 'configmaps', '-n', 'default']);
  t.match(list.stderr, 'User "nobody" cannot list resource "configmaps"');
  // (On the rig, system:discovery is bound to named system identities only: nobody may not even discover, upstream.)
  const tenantsApi = await stack.kubectl(['--as=system:kube-controller-manager', 'get', 'tenants']);
  t.equal(tenantsApi.code, 0, `discovery and the Tenant API with --as: tenantgate's own API serves administrators (${tenantsApi.stderr})`);
});

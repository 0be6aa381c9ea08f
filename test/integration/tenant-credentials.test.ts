// Tenant admin certificates bound to their tenant, and tenants' service-account tokens, against the real rig.
// tenantgate runs in this process with a MemoryTenantStore the test fills: the Tenant API is not here yet.
// Its own rig (not a shared one): its in-process tenantgate makes tenants outside the kit that checks tenant ids are unique in a run.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { serveConfigOf, writeClientKubeconfig, writeGatewayFiles } from '../../lib/dev.ts';
import { RsaKeyPool } from '../../lib/auth/key-pool.ts';
import { startRig } from '../../lib/rig/harness.ts';
import { startGateway } from '../../lib/server/gateway.ts';
import { bootstrapTenant, ensureSharedTenantRbac } from '../../lib/tenants/bootstrap.ts';
import { issueTenantKubeconfig } from '../../lib/tenants/credentials.ts';
import { MemoryTenantStore } from '../../lib/tenants/memory-store.ts';
import { TENANT_API_VERSION } from '../../lib/tenants/tenant.ts';
import { loadKubeconfig, renderKubeconfig } from '../../lib/upstream/kubeconfig.ts';
import { connectH2, EXEC_UPGRADE_HEADERS, h1Request, h2Request } from '../helpers/http.ts';

const rig = await startRig();
const dir = mkdtempSync(join(tmpdir(), 'tenantgate-credentials-'));
const files = writeGatewayFiles(dir, rig);
const tenants = new MemoryTenantStore();
// Tenants are put into the store and bootstrapped by the test itself: no lifecycle controller.
const gateway = await startGateway(serveConfigOf(files), { tenants, lifecycle: false });
const keyPool = new RsaKeyPool(4);
t.teardown(async () => {
  keyPool.close();
  await gateway.close();
  await rig.stop();
  rmSync(dir, { recursive: true, force: true });
});

let files_ = 0;
function writeKubeconfig(text: string): string {
  const path = join(dir, `k${++files_}.kubeconfig`);
  writeFileSync(path, text, { mode: 0o600 });
  return path;
}

/** Puts a tenant into tenantgate's store (what the Tenant API will do), bootstraps it upstream, issues its kubeconfig. */
async function createTenant(id: string): Promise<string> {
  const tenant = await tenants.create({ apiVersion: TENANT_API_VERSION, kind: 'Tenant', metadata: { name: id }, spec: {} });
  await bootstrapTenant(gateway.pool, id);
  return writeKubeconfig(await issueTenantKubeconfig(files.ca, gateway.url, tenant, { keyPool }));
}

const kubectl = (kubeconfig: string, ...args: string[]) => rig.kubectl(args, { kubeconfig });
// What the lifecycle makes before any tenant: the shared bindings a tenant admin's cluster-scope rights come from.
await ensureSharedTenantRbac(gateway.pool);
const tokenKubeconfig = (token: string) => writeKubeconfig(renderKubeconfig({ server: gateway.url, caPem: files.ca.certPem, token }));
// kubectl's words for a 401: the Status's own when it asked for objects, client-go's when its discovery was refused
// (as any apiserver's answer to stale credentials reads; each tenant URL has a discovery cache of its own).
const unauthorized = /Unauthorized|the server has asked for the client to provide credentials/;

const alpha = await createTenant('alpha1');
const bravo = await createTenant('bravo2');

t.test("a tenant's issued kubeconfig works with kubectl", async (t) => {
  const answer = await kubectl(alpha, 'get', 'namespaces', '-o', 'name');
  t.equal(answer.code, 0, answer.stderr);
  t.match(answer.stdout, /namespace\/default/);
  const whoami = await kubectl(alpha, 'auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}');
  t.equal(whoami.stdout, 'admin');
});

t.test("a certificate with the tenant's OU but not issued for it (wrong serial) is refused with 401", async (t) => {
  const forged = writeClientKubeconfig(join(dir, 'unbound.kubeconfig'), gateway.url, files.ca, { user: 'admin', groups: [], tenant: 'alpha1' });
  const answer = await kubectl(forged, 'get', 'namespaces');
  t.not(answer.code, 0);
  t.match(answer.stderr, unauthorized);
  // exec/attach/port-forward take the HTTP/1.1 Upgrade path: the same check.
  const upgrade = EXEC_UPGRADE_HEADERS;
  const path = '/api/v1/namespaces/default/pods/web/exec?command=sh&stdout=true';
  const refused = await h1Request(loadKubeconfig(forged), 'GET', path, { headers: upgrade });
  t.equal(refused.status, 401, 'exec with the unbound certificate');
  t.equal(refused.json().reason, 'Unauthorized');
  const garbage = await h1Request(loadKubeconfig(forged), 'GET', path, { headers: { ...upgrade, authorization: 'Bearer garbage' }, withCertificate: false });
  t.equal(garbage.status, 401, 'exec with a garbage token');
  const bound = await h1Request(loadKubeconfig(alpha), 'GET', path, { headers: upgrade });
  t.equal(bound.status, 404, 'the bound certificate gets as far as the upstream (no such pod)');
});

t.test('a certificate of a tenant not in the store is refused with 401', async (t) => {
  const stranger = writeClientKubeconfig(join(dir, 'stranger.kubeconfig'), gateway.url, files.ca, { user: 'admin', groups: [], tenant: 'nobody' });
  t.match((await kubectl(stranger, 'get', 'namespaces')).stderr, unauthorized);
});

t.test("a removed tenant's certificate stops at the next request, on the same connection; a re-created tenant refuses it", async (t) => {
  const kubeconfig = await createTenant('gone01');
  const session = connectH2(loadKubeconfig(kubeconfig));
  t.teardown(() => session.close());
  t.equal((await h2Request(session, 'GET', '/api/v1/namespaces/default')).status, 200);

  const current = tenants.get('gone01')!;
  await tenants.update({ ...current, metadata: { ...current.metadata, deletionTimestamp: new Date().toISOString() } });
  const terminating = await h2Request(session, 'GET', '/api/v1/namespaces/default');
  t.equal(terminating.status, 401, 'terminating: refused');
  t.equal(terminating.json().reason, 'Unauthorized');

  await tenants.remove('gone01');
  t.equal((await h2Request(session, 'GET', '/api/v1/namespaces/default')).status, 401, 'removed: refused on the connection that was accepted');

  const recreated = await createTenant('gone01');
  t.equal((await h2Request(session, 'GET', '/api/v1/namespaces/default')).status, 401, 're-created with the same id: the old certificate stays refused');
  t.match((await kubectl(kubeconfig, 'get', 'namespaces')).stderr, unauthorized, 'kubectl with the old kubeconfig too');
  const fresh = await kubectl(recreated, 'get', 'namespace', 'default', '-o', 'name');
  t.equal(fresh.code, 0, fresh.stderr);
});

t.test('a service-account token from `kubectl create token` works against tenantgate, per its RBAC, within its tenant', async (t) => {
  t.equal((await kubectl(alpha, 'create', 'configmap', 'mine', '-n', 'default')).code, 0);
  t.equal((await kubectl(bravo, 'create', 'configmap', 'theirs', '-n', 'default')).code, 0);
  // The serviceaccount controller makes `default` in each new namespace: wait for it in alpha1's.
  let created = await kubectl(alpha, 'create', 'token', 'default', '-n', 'default');
  for (let i = 0; created.code !== 0 && i < 50; i++) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    created = await kubectl(alpha, 'create', 'token', 'default', '-n', 'default');
  }
  t.equal(created.code, 0, created.stderr);
  const token = created.stdout.trim();
  t.ok(token.length > 100, 'a token came back');
  const asAccount = tokenKubeconfig(token);

  const whoami = await kubectl(asAccount, 'auth', 'whoami', '-o', 'json');
  t.equal(whoami.code, 0, whoami.stderr);
  const userInfo = JSON.parse(whoami.stdout).status.userInfo;
  t.equal(userInfo.username, 'system:serviceaccount:default:default');
  t.ok(userInfo.groups.includes('system:serviceaccounts:default'), `groups in the tenant's names: ${userInfo.groups}`);
  t.notOk(JSON.stringify([userInfo.username, userInfo.groups]).includes('alpha1'), 'no upstream prefix in user or groups');

  const forbidden = await kubectl(asAccount, 'get', 'configmaps', '-n', 'default');
  t.not(forbidden.code, 0, 'no RBAC yet: forbidden');
  t.match(forbidden.stderr, /Forbidden|forbidden/);
  t.match(forbidden.stderr, /system:serviceaccount:default:default/);
  t.notMatch(forbidden.stderr, /alpha1/);

  t.equal((await kubectl(alpha, 'create', 'role', 'cm-reader', '--verb=get,list', '--resource=configmaps', '-n', 'default')).code, 0);
  t.equal((await kubectl(alpha, 'create', 'rolebinding', 'cm-reader', '--role=cm-reader', '--serviceaccount=default:default', '-n', 'default')).code, 0);
  let listed = await kubectl(asAccount, 'get', 'configmaps', '-n', 'default', '-o', 'name');
  for (let i = 0; listed.code !== 0 && i < 25; i++) {
    await new Promise((resolve) => setTimeout(resolve, 200)); // RBAC caches take a moment
    listed = await kubectl(asAccount, 'get', 'configmaps', '-n', 'default', '-o', 'name');
  }
  t.equal(listed.code, 0, listed.stderr);
  t.match(listed.stdout, /configmap\/mine/);
  t.notMatch(listed.stdout, /theirs/, "bravo2's configmap is not in its list");
  const theirs = await kubectl(asAccount, 'get', 'configmap', 'theirs', '-n', 'default');
  t.match(theirs.stderr, /NotFound|not found/, 'nor reachable by name');
  t.equal((await kubectl(asAccount, 'delete', 'configmap', 'mine', '-n', 'default')).code === 0, false, 'and it cannot write');

  t.test('a client certificate wins over a token sent beside it', async (t) => {
    const both = loadKubeconfig(bravo);
    const mixed = writeKubeconfig(renderKubeconfig({ ...both, token }));
    const who = await kubectl(mixed, 'auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}');
    t.equal(who.stdout, 'admin', "bravo2's admin, not alpha1's service account");
    t.match((await kubectl(mixed, 'get', 'configmap', 'theirs', '-n', 'default', '-o', 'name')).stdout, /theirs/);
  });

  t.test('the token stops with its tenant', async (t) => {
    const saved = tenants.get('alpha1')!;
    await tenants.update({ ...saved, metadata: { ...saved.metadata, deletionTimestamp: new Date().toISOString() } });
    t.match((await kubectl(asAccount, 'get', 'configmaps', '-n', 'default')).stderr, unauthorized);
    const current = tenants.get('alpha1')!;
    const { deletionTimestamp: _, ...metadata } = current.metadata;
    await tenants.update({ ...current, metadata });
    t.equal((await kubectl(asAccount, 'get', 'configmaps', '-n', 'default', '-o', 'name')).code, 0, 'and works again once the deletion is undone');
  });
});

t.test('a token of an upstream-only service account is refused with 401', async (t) => {
  const created = await rig.kubectl(['create', 'token', 'default', '-n', 'kube-system']);
  t.equal(created.code, 0, created.stderr);
  const answer = await kubectl(tokenKubeconfig(created.stdout.trim()), 'get', 'namespaces');
  t.not(answer.code, 0);
  t.match(answer.stderr, unauthorized);
});

t.test('a garbage token is refused with 401, and repeats are answered from the failure cache', async (t) => {
  const garbage = tokenKubeconfig('not-a-token-' + Math.random().toString(36).slice(2));
  const session = connectH2({ ...loadKubeconfig(garbage), certPem: undefined, keyPem: undefined });
  t.teardown(() => session.close());
  const authorization = `Bearer ${loadKubeconfig(garbage).token}`;
  const before = gateway.tokens.reviews;
  for (let i = 0; i < 20; i++) {
    const answer = await h2Request(session, 'GET', '/api/v1/namespaces', { headers: { authorization } });
    if (answer.status !== 401 || answer.json().reason !== 'Unauthorized') t.fail(`request ${i} answered ${answer.status}`);
  }
  t.equal(gateway.tokens.reviews - before, 1, '20 requests, one TokenReview upstream');
  t.match((await kubectl(garbage, 'get', 'namespaces')).stderr, unauthorized, 'kubectl says Unauthorized');
  const empty = await h2Request(session, 'GET', '/api/v1/namespaces', { headers: { authorization: 'Bearer ' } });
  t.equal(empty.status, 401, 'an empty bearer token');
});

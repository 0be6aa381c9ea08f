// Bad and hostile input gets a Kubernetes Status (or is dropped safely), and tenantgate keeps serving.
import http2 from 'node:http2';
import tls from 'node:tls';
import t, { type Test } from 'tap';
import { createCertificateAuthority, issueCertificate } from '../../lib/auth/pki.ts';
import { connectH2, credentialsOf, h1Request, h2Request } from '../helpers/http.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';

let stack: Stack;
/** A tenant sending bad bodies, and one whose objects must never show in the first one's answers. */
let tenant: TestTenant;
let other: TestTenant;
t.before(async () => {
  stack = await startStack({ controllers: false });
  tenant = await createTestTenant(stack, 'badin1');
  other = await createTestTenant(stack, 'badin2');
});
t.teardown(() => stack?.stop());

/** A user with no rights upstream, to show whose identity the upstream saw. */
const alice = { user: 'alice', groups: ['developers'], tenant: null };

function isStatus(t: Test, body: string, code: number, reason: string): any {
  const status = JSON.parse(body);
  t.equal(status.kind, 'Status');
  t.equal(status.apiVersion, 'v1');
  t.equal(status.status, 'Failure');
  t.equal(status.code, code);
  t.equal(status.reason, reason);
  t.type(status.message, 'string');
  return status;
}

async function stillServing(t: Test): Promise<void> {
  const session = connectH2(credentialsOf(stack.adminKubeconfig));
  const a = await h2Request(session, 'GET', '/api/v1/namespaces/default');
  session.close();
  t.equal(a.status, 200, 'tenantgate still serves');
}

t.test('malformed paths get a 400 Status over HTTP/2 and HTTP/1.1', async (t) => {
  const admin = credentialsOf(stack.adminKubeconfig);
  const session = connectH2(admin);
  for (const path of ['/api/v1/namespaces/%zz', '/api/v1/namespaces/../secrets', '/api//v1']) {
    const h2 = await h2Request(session, 'GET', path);
    t.equal(h2.status, 400, `h2 ${path}`);
    isStatus(t, h2.body, 400, 'BadRequest');
    const h1 = await h1Request(admin, 'GET', path);
    t.equal(h1.status, 400, `h1 ${path}`);
    isStatus(t, h1.body, 400, 'BadRequest');
  }
  session.close();
  await stillServing(t);
});

t.test('oversized headers are refused and tenantgate keeps serving', async (t) => {
  const admin = credentialsOf(stack.adminKubeconfig);
  const logsBefore = stack.gatewayLogs.length;
  const huge = 'x'.repeat(200_000);
  const h1 = await h1Request(admin, 'GET', '/api/v1/namespaces', { headers: { 'x-huge': huge } }).catch((e: Error) => e);
  if (h1 instanceof Error) t.fail(`HTTP/1.1 connection broke instead of answering: ${h1.message}`);
  else {
    t.equal(h1.status, 431);
    isStatus(t, h1.body, 431, 'BadRequest');
  }
  const session = connectH2(admin);
  const h2 = await h2Request(session, 'GET', '/api/v1/namespaces', { headers: { 'x-huge': huge } }).catch((e: Error) => e);
  t.ok(h2 instanceof Error || h2.status === 431, 'the HTTP/2 stream is refused');
  session.close();
  await stillServing(t);
  const warnings = stack.gatewayLogs.slice(logsBefore).filter((line) => line.includes('MaxListenersExceededWarning'));
  t.same(warnings, [], 'the connection is answered once, not once per chunk of headers (no listener leak)');
});

t.test('client impersonation headers are checked, never dropped; X-Remote-* headers are stripped', async (t) => {
  const kubeconfig = stack.kubeconfigFor(alice);
  const creds = credentialsOf(kubeconfig);
  const remote = { 'x-remote-user': 'admin', 'x-remote-group': 'system:masters' };
  const hostile = { 'impersonate-user': 'tenantgate-admin', 'impersonate-group': 'system:masters', ...remote };
  const cannotImpersonate = /users "tenantgate-admin" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope/;
  const session = connectH2(creds);
  const h2 = await h2Request(session, 'GET', '/api/v1/secrets', { headers: hostile });
  const h2Remote = await h2Request(session, 'GET', '/api/v1/secrets', { headers: remote });
  session.close();
  t.equal(h2.status, 403);
  t.match(isStatus(t, h2.body, 403, 'Forbidden').message, cannotImpersonate, "alice may not impersonate: the apiserver's 403");
  t.match(isStatus(t, h2Remote.body, 403, 'Forbidden').message, /User "alice" cannot list resource "secrets"/, 'X-Remote-* claim nothing');
  // capsule-proxy's advisory: naming the proxy's header in Connection must not strip tenantgate's own impersonation.
  const h1 = await h1Request(creds, 'GET', '/api/v1/secrets', {
    headers: { ...hostile, connection: 'Impersonate-User, Impersonate-Group' },
  });
  t.equal(h1.status, 403);
  t.match(isStatus(t, h1.body, 403, 'Forbidden').message, cannotImpersonate);
  const h1Connection = await h1Request(creds, 'GET', '/api/v1/secrets', { headers: { connection: 'Impersonate-User, Impersonate-Group' } });
  t.match(isStatus(t, h1Connection.body, 403, 'Forbidden').message, /User "alice" cannot list/, "tenantgate's own impersonation of alice stays");
  const asAdmin = await stack.kubectl(['get', '--raw', '/api/v1/secrets', '--as=tenantgate-admin'], { kubeconfig });
  t.not(asAdmin.code, 0);
  t.match(asAdmin.stderr, cannotImpersonate, 'kubectl --as (an Impersonate-User header) is checked too');
});

t.test("callers without a certificate from tenantgate's CA get 401", async (t) => {
  const admin = credentialsOf(stack.adminKubeconfig);
  const anonymous = await h1Request(admin, 'GET', '/api/v1/namespaces', { withCertificate: false });
  t.equal(anonymous.status, 401);
  isStatus(t, anonymous.body, 401, 'Unauthorized');
  const strangerCa = createCertificateAuthority('stranger');
  const stranger = issueCertificate(strangerCa, { commonName: 'tenantgate-admin', organizations: ['system:masters'], usage: 'client' });
  const forged = await h1Request({ ...admin, certPem: stranger.certPem, keyPem: stranger.keyPem }, 'GET', '/api/v1/namespaces');
  t.equal(forged.status, 401, 'a certificate signed by another CA is refused');
  const health = await h1Request(admin, 'GET', '/readyz', { withCertificate: false });
  t.equal(health.status, 200, 'health checks need no credentials');
  t.equal(health.body, 'ok');
});

t.test('health checks with ?verbose list the upstream kube-apiserver’s checks and tenantgate’s own, for anyone', async (t) => {
  const admin = credentialsOf(stack.adminKubeconfig);
  for (const endpoint of ['healthz', 'livez', 'readyz']) {
    const verbose = await h1Request(admin, 'GET', `/${endpoint}?verbose`, { withCertificate: false });
    t.equal(verbose.status, 200, `/${endpoint}?verbose`);
    const lines = verbose.body.split('\n');
    for (const check of [
      '[+]ping ok',
      '[+]log ok',
      '[+]etcd ok',
      '[+]poststarthook/start-apiextensions-informers ok',
      '[+]poststarthook/apiservice-registration-controller ok',
    ]) {
      t.ok(lines.includes(check), `/${endpoint}?verbose lists ${check}, the upstream’s`);
    }
    t.equal(lines.filter((line) => line === '[+]ping ok').length, 1, 'ping once');
    t.equal(lines.includes('[+]upstream ok'), endpoint !== 'livez', 'tenantgate’s own check of the upstream, except in liveness');
    t.equal(verbose.body.endsWith(`\n${endpoint} check passed\n`), true, 'one verdict, at the end');
  }
  t.ok((await h1Request(admin, 'GET', '/readyz?verbose', { withCertificate: false })).body.split('\n').includes('[+]informer-sync ok'));
  const excluded = await h1Request(admin, 'GET', '/readyz?verbose&exclude=etcd', { withCertificate: false });
  t.match(excluded.body, /\[\+\]etcd excluded: ok/, 'exclusions reach the upstream');
  // Through a tenant's kubeconfig, as the e2e spec reads them.
  const viaTenant = await stack.kubectl(['get', '--raw', '/readyz?verbose'], { kubeconfig: tenant.kubeconfig });
  t.equal(viaTenant.code, 0, viaTenant.stderr);
  t.match(viaTenant.stdout, /\[\+\]etcd ok\n[^]*\[\+\]upstream ok\nreadyz check passed/);
  // One check by its path: the upstream’s answer, or tenantgate’s own.
  for (const path of ['/healthz/etcd', '/livez/ping', '/readyz/upstream', '/readyz/poststarthook/start-apiextensions-informers']) {
    const one = await h1Request(admin, 'GET', path, { withCertificate: false });
    t.same([one.status, one.body], [200, 'ok'], path);
  }
  const unknown = await h1Request(admin, 'GET', '/healthz/no-such-check', { withCertificate: false });
  t.equal(unknown.status, 404, 'an unknown check is not found, as upstream');
  const traversal = await h1Request(admin, 'GET', '/healthz/../api/v1/secrets', { withCertificate: false });
  t.not(traversal.status, 200, 'a check path never reaches anything but a check');
});

t.test("an unknown content type gets the upstream's 415 Status", async (t) => {
  const session = connectH2(credentialsOf(stack.adminKubeconfig));
  const a = await h2Request(session, 'POST', '/api/v1/namespaces/default/configmaps', {
    headers: { 'content-type': 'application/x-made-up' },
    body: 'whatever',
  });
  session.close();
  t.equal(a.status, 415);
  isStatus(t, a.body, 415, 'UnsupportedMediaType');
  const direct = await stack.kubectlDirect(['get', 'configmaps', '-n', 'default', '-o', 'name']);
  t.notMatch(direct.stdout, /whatever/, 'nothing was created');
});

t.test('exec upgrades are relayed, as the caller', async (t) => {
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'shell', namespace: 'default' },
    spec: { containers: [{ name: 'c', image: 'busybox' }] },
  };
  // No kube-controller-manager in this stack: make the ServiceAccount that admission wants for the pod.
  await stack.kubectlDirect(['-n', 'default', 'create', 'serviceaccount', 'default']);
  const created = await stack.kubectlDirect(['apply', '-f', '-'], { input: JSON.stringify(pod) });
  t.equal(created.code, 0, created.stderr);
  // No kubelet runs in the rig, so exec fails upstream; tenantgate must relay the same answer kubectl gets directly.
  const viaGateway = await stack.kubectl(['exec', 'shell', '--', 'true']);
  const direct = await stack.kubectlDirect(['exec', 'shell', '--', 'true']);
  t.not(viaGateway.code, 0);
  t.equal(viaGateway.stderr.replaceAll(/\d{4}-\S+|\d+:\d+:\d+\.\d+/g, ''), direct.stderr.replaceAll(/\d{4}-\S+|\d+:\d+:\d+\.\d+/g, ''));
  // alice may read pods but not exec into them; her --as (an Impersonate-User header) is checked, and refused.
  await stack.kubectlDirect(['-n', 'default', 'create', 'role', 'pod-reader', '--verb=get', '--resource=pods']);
  await stack.kubectlDirect(['-n', 'default', 'create', 'rolebinding', 'developers-read', '--role=pod-reader', '--group=developers']);
  const denied = await stack.kubectl(['exec', 'shell', '--as=tenantgate-admin', '--as-group=system:masters', '--', 'true'], {
    kubeconfig: stack.kubeconfigFor(alice),
  });
  t.not(denied.code, 0);
  t.match(denied.stderr, /User "alice" cannot impersonate resource "users"/, 'exec --as is checked as any request is');
  const plain = await stack.kubectl(['exec', 'shell', '--', 'true'], { kubeconfig: stack.kubeconfigFor(alice) });
  t.match(plain.stderr, /User "alice" cannot (create|get) resource "pods\/exec"/, "exec runs as the certificate's user");
});

t.test('a flood of stream resets is cut off and other clients are unaffected', async (t) => {
  const admin = credentialsOf(stack.adminKubeconfig);
  const session = http2.connect(admin.server, { ca: admin.caPem, cert: admin.certPem, key: admin.keyPem });
  session.on('error', () => {});
  await new Promise((r) => session.once('connect', r));
  const cutOff = () => stack.gatewayLogs.some((line) => line.includes('cancels streams too fast'));
  const deadline = Date.now() + 10_000;
  let sent = 0;
  // Open requests and cancel each a moment later, as a rapid-reset attacker does: bounded in count and time.
  while (!cutOff() && sent < 5000 && Date.now() < deadline) {
    try {
      const stream = session.request({ ':path': '/api/v1/namespaces' });
      stream.on('error', () => {});
      setTimeout(() => stream.close(http2.constants.NGHTTP2_CANCEL), 5);
      sent++;
    } catch {
      break;
    }
    if (sent % 50 === 0) await new Promise((r) => setTimeout(r, 10));
  }
  await new Promise((r) => setTimeout(r, 500));
  t.ok(cutOff(), `tenantgate closed the flooding connection (after ${sent} cancelled requests)`);
  session.destroy();
  await stillServing(t);
});

t.test('a TLS client that speaks no HTTP is dropped without harm', async (t) => {
  const admin = credentialsOf(stack.adminKubeconfig);
  const url = new URL(admin.server);
  await new Promise<void>((resolve) => {
    const socket = tls.connect({ host: url.hostname, port: Number(url.port), ca: admin.caPem, ALPNProtocols: ['h2'] }, () => {
      socket.write(Buffer.from('this is not HTTP/2 at all\r\n\r\n'));
    });
    socket.on('error', () => resolve());
    socket.on('close', () => resolve());
    socket.resume();
  });
  await stillServing(t);
});

const CONFIGMAPS = '/api/v1/namespaces/default/configmaps';
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json';

/** `[[[...]]]` nested `depth` deep: JSON, and YAML flow style alike. */
const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);

t.test('a YAML alias cycle or alias bomb in a body gets a clear 400 Status, and tenantgate keeps serving', async (t) => {
  const session = connectH2(credentialsOf(tenant.kubeconfig));
  const cycle = '&doc {apiVersion: v1, kind: ConfigMap, metadata: {name: cycle}, data: {self: *doc}}';
  const laughs = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
  for (const name of 'bcdefghi')
    laughs.push(
      `${name}: &${name} [${Array(9)
        .fill('*' + String.fromCharCode(name.charCodeAt(0) - 1))
        .join(',')}]`,
    );
  const bomb = `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\nlaughs:\n  ${laughs.join('\n  ')}\n`;
  for (const [what, body] of [
    ['an alias cycle', cycle],
    ['an alias bomb', bomb],
  ] as const) {
    for (const method of ['POST', 'PATCH']) {
      const path = method === 'POST' ? CONFIGMAPS : `${CONFIGMAPS}/cycle`;
      const contentType = method === 'POST' ? 'application/yaml' : 'application/apply-patch+yaml';
      const answer = await h2Request(session, method, method === 'PATCH' ? `${path}?fieldManager=test` : path, {
        headers: { 'content-type': contentType },
        body,
      });
      t.equal(answer.status, 400, `${what}, ${method}`);
      t.match(isStatus(t, answer.body, 400, 'BadRequest').message, /alias/, 'the message names the problem');
    }
  }
  session.close();
  await stillServing(t);
});

t.test('a body nested 100,000 deep gets a 400 Status as JSON, YAML, merge patch and JSON patch', async (t) => {
  const session = connectH2(credentialsOf(tenant.kubeconfig));
  const created = await h2Request(session, 'POST', CONFIGMAPS, {
    body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'shallow' } }),
  });
  t.equal(created.status, 201, 'an ordinary body still passes');
  const deep = nested(100_000);
  const object = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"data":{"x":${deep}}}`;
  const cases: [string, string, string, string][] = [
    ['JSON create', 'POST', CONFIGMAPS, 'application/json'],
    ['YAML create', 'POST', CONFIGMAPS, 'application/yaml'],
    ['merge patch', 'PATCH', `${CONFIGMAPS}/shallow`, 'application/merge-patch+json'],
    ['strategic merge patch', 'PATCH', `${CONFIGMAPS}/shallow`, 'application/strategic-merge-patch+json'],
    ['update', 'PUT', `${CONFIGMAPS}/shallow`, 'application/json'],
  ];
  for (const [what, method, path, contentType] of cases) {
    const answer = await h2Request(session, method, path, {
      headers: { 'content-type': contentType },
      body: object.replace('"deep"', method === 'POST' ? '"deep"' : '"shallow"'),
    });
    t.equal(answer.status, 400, what);
    t.match(isStatus(t, answer.body, 400, 'BadRequest').message, /nested/, `${what}: the message names the problem`);
  }
  const patch = `[{"op":"add","path":"/data","value":{"x":${deep}}}]`;
  for (const path of [`${CONFIGMAPS}/shallow`, `/apis/apps/v1/namespaces/default/deployments/none/scale`]) {
    const answer = await h2Request(session, 'PATCH', path, { headers: { 'content-type': 'application/json-patch+json' }, body: patch });
    t.equal(answer.status, 400, `JSON patch of ${path}`);
    t.match(isStatus(t, answer.body, 400, 'BadRequest').message, /nested/);
  }
  session.close();
  await stillServing(t);
});

t.test("an upstream's plain-text 404 reaches the tenant as a 404 Status, not a 502", async (t) => {
  const session = connectH2(credentialsOf(tenant.kubeconfig));
  // The upstream answers both with `404 page not found` as text/plain: no such version, no such group.
  for (const path of ['/apis/apps/v9/namespaces/default/deployments', '/apis/nothere.example.com/v1', '/apis/apps/v9']) {
    const answer = await h2Request(session, 'GET', path);
    t.equal(answer.status, 404, path);
    t.match(answer.headers['content-type'], /^application\/json/);
    const status = isStatus(t, answer.body, 404, 'NotFound');
    t.notMatch(status.message, /badin1/, "in the tenant's names");
  }
  session.close();
});

t.test("a Table with includeObject=None has its rows, and only the tenant's", async (t) => {
  const mine = await tenant.kubectl(['create', 'configmap', 'table-mine', '-n', 'default']);
  t.equal(mine.code, 0, mine.stderr);
  const theirs = await other.kubectl(['create', 'configmap', 'table-theirs', '-n', 'default']);
  t.equal(theirs.code, 0, theirs.stderr);
  const session = connectH2(credentialsOf(tenant.kubeconfig));
  for (const path of [`${CONFIGMAPS}?includeObject=None`, '/api/v1/configmaps?includeObject=None', '/api/v1/namespaces?includeObject=None']) {
    const answer = await h2Request(session, 'GET', path, { headers: { accept: TABLE } });
    t.equal(answer.status, 200, path);
    const table = answer.json();
    t.equal(table.kind, 'Table');
    const names = table.rows.map((row: { cells: unknown[] }) => row.cells[0]);
    if (path.includes('namespaces?')) t.ok(names.includes('default'), `${path}: the tenant's namespaces are listed`);
    else t.ok(names.includes('table-mine'), `${path}: the tenant's configmap is listed`);
    t.notOk(names.includes('table-theirs'), `${path}: the other tenant's is not`);
    t.notMatch(answer.body, /badin[12]-|table-theirs/, 'nothing of the other tenant or the upstream names');
    t.ok(
      table.rows.every((row: { object?: unknown }) => row.object === undefined),
      'rows carry no objects, as asked',
    );
  }
  session.close();
});

t.test('a tenant with 15 namespaces lists configmaps across them without a listener leak', async (t) => {
  const namespaces = Array.from({ length: 15 }, (_, i) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: `leak-${i}` } }));
  const logsBefore = stack.gatewayLogs.length;
  const configmap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'in-the-last', namespace: 'leak-14' } };
  const created = await tenant.kubectl(['apply', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: namespaces }) });
  t.equal(created.code, 0, created.stderr);
  const inLast = await tenant.kubectl(['apply', '-f', '-'], { input: JSON.stringify(configmap) });
  t.equal(inLast.code, 0, inLast.stderr);
  const session = connectH2(credentialsOf(tenant.kubeconfig));
  const answer = await h2Request(session, 'GET', '/api/v1/configmaps');
  session.close();
  t.equal(answer.status, 200);
  const list = answer.json();
  t.equal(list.kind, 'ConfigMapList');
  t.ok(
    list.items.some((item: { metadata: { name: string; namespace: string } }) => item.metadata.name === 'in-the-last' && item.metadata.namespace === 'leak-14'),
    'the configmap in the 15th namespace is listed',
  );
  const kubectl = await tenant.kubectl(['get', 'configmaps', '-A', '-o', 'json']);
  t.equal(kubectl.code, 0, kubectl.stderr);
  await new Promise((resolve) => setTimeout(resolve, 200)); // let stderr lines arrive
  const warnings = stack.gatewayLogs.slice(logsBefore).filter((line) => line.includes('MaxListenersExceededWarning'));
  t.same(warnings, [], "no MaxListenersExceededWarning in tenantgate's stderr");
});

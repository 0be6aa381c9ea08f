// The per-tenant cap on open watches against the real rig: a tenant annotated max-watches 3 opens three, the fourth
// gets a 429 Status with Retry-After, a closed or timed-out watch frees its place; another tenant keeps the flag's cap.
import type { ClientRequest } from 'node:http';
import type { ClientHttp2Session, ClientHttp2Stream } from 'node:http2';
import https from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { connectH2, credentialsOf, EXEC_UPGRADE_HEADERS, sumMetric } from '../helpers/http.ts';
import { startStack } from '../helpers/stack.ts';
import { createTestTenant } from '../helpers/tenants.ts';

const WATCH = '/api/v1/namespaces/default/configmaps?watch=true';
const FLAG_CAP = 5;

const stack = await startStack({ controllers: false, gatewayArgs: ['--tenant-max-watches', String(FLAG_CAP)] });
t.teardown(() => stack.stop());
const capped = await createTestTenant(stack, 'watch1');
const neighbour = await createTestTenant(stack, 'watch2');
const annotated = await stack.kubectl(['annotate', 'tenant', capped.id, 'tenant.kubezoo.io/max-watches=3']);
if (annotated.code !== 0) throw new Error(`kubectl annotate: ${annotated.stderr}`);

interface OpenedWatch {
  status: number;
  retryAfter: string | undefined;
  stream: ClientHttp2Stream;
  /** The whole body, for an answer that is not a watch (read once the stream ends). */
  body: Promise<string>;
}

function openWatch(session: ClientHttp2Session, path = WATCH): Promise<OpenedWatch> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':path': path });
    const chunks: Buffer[] = [];
    const body = new Promise<string>((done) => stream.on('end', () => done(Buffer.concat(chunks).toString())));
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('error', reject);
    stream.once('response', (headers) =>
      resolve({ status: Number(headers[':status']), retryAfter: headers['retry-after'] as string | undefined, stream, body }),
    );
  });
}

/** Opens watches until one is answered `status`, for at most 5 s (a closed watch is given back asynchronously). */
async function openUntil(session: ClientHttp2Session, status: number): Promise<OpenedWatch> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const watch = await openWatch(session);
    if (watch.status === status) return watch;
    watch.stream.close();
    if (Date.now() > deadline) throw new Error(`no watch answered ${status} within 5 s (last: ${watch.status})`);
    await sleep(100);
  }
}

async function rejectedForWatchLimit(tenant: string): Promise<number> {
  const exposition = await (await fetch(stack.metricsUrl)).text();
  return sumMetric(exposition, 'tenantgate_rejected_requests_total', { tenant, reason: 'watch-limit' });
}

t.test('a tenant annotated max-watches 3 opens three watches, the fourth gets 429, a closed one makes room', async (t) => {
  const session = connectH2(credentialsOf(capped.kubeconfig));
  t.teardown(() => session.close());
  // The annotation reaches tenantgate through the Tenant watch: wait until a fourth is refused.
  const open = [await openWatch(session), await openWatch(session), await openWatch(session)];
  t.same(
    open.map((w) => w.status),
    [200, 200, 200],
    'three watches open',
  );
  const refused = await openUntil(session, 429);
  t.equal(refused.retryAfter, '1', 'the 429 says when to retry');
  t.match(JSON.parse(await refused.body), { kind: 'Status', status: 'Failure', reason: 'TooManyRequests', code: 429, message: /max-watches/ });
  t.ok((await rejectedForWatchLimit(capped.id)) >= 1, 'counted in tenantgate_rejected_requests_total{reason="watch-limit"}');
  const stillRefused = await openWatch(session);
  t.equal(stillRefused.status, 429, 'still full');

  // The client closing a watch gives its place back.
  open.shift()!.stream.close();
  open.push(await openUntil(session, 200));
  t.equal((await openWatch(session)).status, 429, 'full again');

  for (const w of open) w.stream.close();
});

t.test('a watch the upstream times out frees its place too', async (t) => {
  const session = connectH2(credentialsOf(capped.kubeconfig));
  t.teardown(() => session.close());
  const open = [await openUntil(session, 200), await openUntil(session, 200)];
  const expiring = await openWatch(session, `${WATCH}&timeoutSeconds=1`);
  t.equal(expiring.status, 200, 'a third watch, one second long');
  t.equal((await openWatch(session)).status, 429, 'full');
  await expiring.body; // the upstream ended it
  const after = await openUntil(session, 200);
  t.equal(after.status, 200, 'its place is free once it ended');
  for (const w of [...open, after]) w.stream.close();
});

/** A watch over HTTP/1.1 (chunked), as kubectl's WebSocket-less clients and the upgrade path's sockets speak. */
function openH1Watch(kubeconfig: string): Promise<{ status: number; request: ClientRequest }> {
  const credentials = credentialsOf(kubeconfig);
  const url = new URL(credentials.server);
  return new Promise((resolve, reject) => {
    const request = https.get(
      { host: url.hostname, port: url.port, path: WATCH, ca: credentials.caPem, cert: credentials.certPem, key: credentials.keyPem, agent: false },
      (res) => {
        res.resume();
        resolve({ status: res.statusCode ?? 0, request });
      },
    );
    request.on('error', (error) => (request.destroyed ? undefined : reject(error)));
  });
}

t.test('HTTP/1.1 watches count and give their place back the same way', async (t) => {
  const session = connectH2(credentialsOf(capped.kubeconfig));
  t.teardown(() => session.close());
  const h1 = [await openH1Watch(capped.kubeconfig), await openH1Watch(capped.kubeconfig)];
  t.same(
    h1.map((w) => w.status),
    [200, 200],
  );
  const h2 = await openUntil(session, 200);
  t.equal((await openH1Watch(capped.kubeconfig)).status, 429, 'the fourth, over HTTP/1.1, is refused');
  h1[0]!.request.destroy();
  const reopened = await openUntil(session, 200);
  t.equal(reopened.status, 200, 'a place freed by an HTTP/1.1 client going away');
  h1[1]!.request.destroy();
  h2.stream.close();
  reopened.stream.close();
});

/** An exec as kubectl sends it over HTTP/1.1 (WebSocket upgrade); resolves with the answer's status (101 or refusal). */
function tryExec(kubeconfig: string): Promise<number> {
  const credentials = credentialsOf(kubeconfig);
  const url = new URL(credentials.server);
  return new Promise((resolve, reject) => {
    const request = https.request({
      host: url.hostname,
      port: url.port,
      method: 'GET',
      path: '/api/v1/namespaces/default/pods/nowhere/exec?command=true&stdout=true',
      headers: { ...EXEC_UPGRADE_HEADERS },
      ca: credentials.caPem,
      cert: credentials.certPem,
      key: credentials.keyPem,
      agent: false,
    });
    request.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve(res.statusCode ?? 0);
    });
    request.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    request.on('error', reject);
    request.end();
  });
}

t.test("exec holds a flow-control place like a watch: refused with 429 while the tenant's long-running requests are at its cap", async (t) => {
  const session = connectH2(credentialsOf(capped.kubeconfig));
  t.teardown(() => session.close());
  const open = [await openUntil(session, 200), await openUntil(session, 200)];
  const admitted = await tryExec(capped.kubeconfig);
  t.not(admitted, 429, `with a place free, exec passes flow control (the upstream then answers ${admitted}: no such pod)`);
  open.push(await openUntil(session, 200));
  t.equal(await tryExec(capped.kubeconfig), 429, 'at the cap, exec is refused before it reaches the upstream');
  for (const w of open) w.stream.close();
});

t.test('another tenant is unaffected and keeps the --tenant-max-watches cap', async (t) => {
  const cappedSession = connectH2(credentialsOf(capped.kubeconfig));
  const full = [await openUntil(cappedSession, 200), await openUntil(cappedSession, 200), await openUntil(cappedSession, 200)];
  t.equal((await openWatch(cappedSession)).status, 429, 'the capped tenant is full');
  const session = connectH2(credentialsOf(neighbour.kubeconfig));
  t.teardown(() => {
    session.close();
    cappedSession.close();
  });
  const open: OpenedWatch[] = [];
  for (let i = 0; i < FLAG_CAP; i++) open.push(await openWatch(session));
  t.same(
    open.map((w) => w.status),
    Array(FLAG_CAP).fill(200),
    `the neighbour opens ${FLAG_CAP} watches while the capped tenant is full`,
  );
  t.equal((await openWatch(session)).status, 429, `its ${FLAG_CAP + 1}th is refused by the flag's cap`);
  t.equal(await rejectedForWatchLimit(neighbour.id), 1);
  const list = await stack.kubectl(['get', 'configmaps', '-n', 'default', '-o', 'name'], { kubeconfig: neighbour.kubeconfig });
  t.equal(list.code, 0, 'short requests are not capped');
  for (const w of [...open, ...full]) w.stream.close();
});

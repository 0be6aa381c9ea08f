// Issue 17, graceful shutdown: a replica given SIGTERM is not ready at once but serves through --shutdown-delay, then
// takes no new connection, sends GOAWAY, finishes what it accepted, ends watches as the apiserver ends one at its
// timeout, refuses what still waits for a seat when --shutdown-drain runs out (503, Retry-After), and exits 0.
// Two replicas share the rig's etcd for tenants; a loopback load balancer stands for the Service.
import * as k8s from '@kubernetes/client-node';
import http2, { type ClientHttp2Session } from 'node:http2';
import https from 'node:https';
import type { TLSSocket } from 'node:tls';
import { connect as tlsConnect } from 'node:tls';
import t from 'tap';
import type { ClusterCredentials } from '../../lib/upstream/kubeconfig.ts';
import { connectH2, credentialsOf, h2Request } from '../helpers/http.ts';
import { startLoadBalancer } from '../helpers/load-balancer.ts';
import { pointAt, replicaSet } from '../helpers/replicas.ts';
import { RetryingClient } from '../helpers/retrying-client.ts';
import { startStack } from '../helpers/stack.ts';
import { createTestTenant } from '../helpers/tenants.ts';
import { TENANTS_PATH } from '../../lib/tenants/tenant.ts';

const DELAY_MS = 2_000;
const DRAIN_MS = 3_000;
/** After the drain: the refusals' moment to go out, close() waited for at most 2 s, and the process's exit, on two shared cores. */
const SLACK_MS = 4_000;
const SHUTDOWN_ARGS = ['--shutdown-delay', `${DELAY_MS / 1000}s`, '--shutdown-drain', `${DRAIN_MS / 1000}s`, '--queue-wait', '30s'];
const CONFIGMAPS = 150;

const stack = await startStack({ controllers: false, gatewayArgs: SHUTDOWN_ARGS });
const others = replicaSet(stack.dir, stack.files, ['--confine-upstream-discovery', ...SHUTDOWN_ARGS]);
const b = await others.start('b');
const aPort = Number(new URL(stack.gatewayUrl).port);
const lb = await startLoadBalancer([aPort]);
t.teardown(async () => {
  await lb.close();
  await others.stopAll();
  await stack.stop();
});

const tenant = await createTestTenant(stack, 'gsd001');
// One seat of each kind: a request that never finishes its body keeps the mutating one, the next POST waits.
const narrow = await createTestTenant(stack, 'gsq001', { 'tenant.kubezoo.io/max-requests-inflight': '1,1' });
const onA = credentialsOf(tenant.kubeconfig);
const narrowOnA = credentialsOf(narrow.kubeconfig);

const CM_PATH = '/api/v1/namespaces/default/configmaps';
const PT_PATH = '/api/v1/namespaces/default/podtemplates';

{
  const session = connectH2(onA);
  const filler = 'x'.repeat(4096);
  for (let i = 0; i < CONFIGMAPS; i += 15) {
    await Promise.all(
      Array.from({ length: Math.min(15, CONFIGMAPS - i) }, async (_, j) => {
        const made = await h2Request(session, 'POST', CM_PATH, {
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ metadata: { name: `big-${i + j}` }, data: { filler } }),
        });
        if (made.status !== 201) throw new Error(`configmap big-${i + j}: ${made.status} ${made.body}`);
      }),
    );
  }
  session.close();
}

// ---- watches on A, over HTTP/2 and HTTP/1.1, from the watch cache (configmaps) and proxied upstream (podtemplates)

interface WatchRecord {
  name: string;
  text: string;
  endedAt: number;
  /** The response ended normally (END_STREAM with no error; the last chunk of a chunked HTTP/1.1 body). */
  clean: boolean;
  problem: string;
}

function watchH2(session: ClientHttp2Session, name: string, path: string): WatchRecord {
  const record: WatchRecord = { name, text: '', endedAt: 0, clean: false, problem: '' };
  const stream = session.request({ ':path': path, accept: 'application/json' });
  stream.setEncoding('utf8');
  stream.on('data', (chunk: string) => (record.text += chunk));
  stream.on('end', () => (record.clean = true));
  stream.on('error', (error: Error) => (record.problem = error.message));
  stream.on('close', () => {
    record.endedAt = performance.now();
    if (stream.rstCode !== http2.constants.NGHTTP2_NO_ERROR) record.problem ||= `RST_STREAM ${stream.rstCode}`;
  });
  return record;
}

function watchH1(credentials: ClusterCredentials, name: string, path: string): WatchRecord {
  const record: WatchRecord = { name, text: '', endedAt: 0, clean: false, problem: '' };
  const url = new URL(credentials.server);
  const req = https.request(
    {
      host: url.hostname,
      port: url.port,
      path,
      headers: { accept: 'application/json' },
      ca: credentials.caPem,
      cert: credentials.certPem,
      key: credentials.keyPem,
      agent: false,
    },
    (res) => {
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (record.text += chunk));
      res.on('end', () => (record.clean = res.complete));
      res.on('aborted', () => (record.problem = 'aborted'));
      res.on('error', (error: Error) => (record.problem ||= error.message));
      res.on('close', () => (record.endedAt = performance.now()));
    },
  );
  req.on('error', (error: Error) => {
    record.problem ||= error.message;
    record.endedAt ||= performance.now();
  });
  req.end();
  return record;
}

/** The object whose ADDED shows a watch delivers: the probe, or for the Tenant API a tenant. */
const probeOf = (record: WatchRecord) => (record.name.includes('Tenant API') ? 'gsd001' : 'probe');

/** The watch's events, each a whole JSON line (a cut line would throw). */
const eventsOf = (record: WatchRecord) =>
  record.text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { type: string; object: { metadata: { name: string; namespace: string } } });

const watchSession = connectH2(onA);
const listed = await h2Request(watchSession, 'GET', `${CM_PATH}?limit=1`);
const rv = listed.json().metadata.resourceVersion as string;
const adminSession = connectH2(credentialsOf(stack.adminKubeconfig));
const tenantApiWatch = watchH2(adminSession, 'HTTP/2 watch of the Tenant API', `${TENANTS_PATH}?watch=1`);
const watches = [
  tenantApiWatch,
  watchH2(watchSession, 'HTTP/2 watch from the cache', `${CM_PATH}?watch=1&resourceVersion=${rv}`),
  watchH2(watchSession, 'HTTP/2 watch proxied upstream', `${PT_PATH}?watch=1`),
  watchH1(onA, 'HTTP/1.1 watch from the cache', `${CM_PATH}?watch=1&resourceVersion=${rv}`),
  watchH1(onA, 'HTTP/1.1 watch proxied upstream', `${PT_PATH}?watch=1`),
];
await new Promise((resolve) => setTimeout(resolve, 300)); // the watches are open before the objects they must see
{
  const session = connectH2(onA);
  const cm = await h2Request(session, 'POST', CM_PATH, {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ metadata: { name: 'probe' } }),
  });
  const pt = await h2Request(session, 'POST', PT_PATH, {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ metadata: { name: 'probe' }, template: { spec: { containers: [{ name: 'c', image: 'example.invalid/c' }] } } }),
  });
  session.close();
  if (cm.status !== 201 || pt.status !== 201) throw new Error(`probes: ${cm.status} ${pt.status}`);
  const deadline = Date.now() + 10_000;
  while (!watches.every((w) => eventsOf(w).some((e) => e.type === 'ADDED' && e.object.metadata.name === probeOf(w))) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

// ---- load while A shuts down

/** Large lists on A's own HTTP/2 connection, two at a time, until it refuses new streams. */
interface ListRecord {
  startedAt: number;
  endedAt: number;
  status: number;
  items: number;
  /** Refused by GOAWAY (never processed) rather than answered. */
  refused: boolean;
  problem: string;
}
const lists: ListRecord[] = [];
let goawayAt = 0;
const listSession = connectH2(onA);
listSession.on('goaway', () => (goawayAt ||= performance.now()));
/** What a new stream on the watches' connection met once GOAWAY had come on it. */
let newStreamRefused = '';
watchSession.on('goaway', () => {
  goawayAt ||= performance.now();
  try {
    const stream = watchSession.request({ ':path': `${CM_PATH}/probe` });
    stream.on('error', (error: NodeJS.ErrnoException) => (newStreamRefused ||= error.code ?? error.message));
    stream.on('response', () => (newStreamRefused ||= 'answered'));
  } catch (error) {
    newStreamRefused = (error as NodeJS.ErrnoException).code ?? 'thrown';
  }
});

async function listLoop(until: number): Promise<void> {
  for (let i = 0; i < 500 && performance.now() < until; i++) {
    const record: ListRecord = { startedAt: performance.now(), endedAt: 0, status: 0, items: 0, refused: false, problem: '' };
    lists.push(record);
    try {
      const answer = await h2Request(listSession, 'GET', CM_PATH);
      record.status = answer.status;
      record.items = answer.status === 200 ? answer.json().items.length : 0;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      record.refused = code === 'ERR_HTTP2_GOAWAY_SESSION' || code === 'ERR_HTTP2_INVALID_SESSION' || /REFUSED_STREAM/.test((error as Error).message);
      record.problem = `${code}: ${(error as Error).message}`;
    }
    record.endedAt = performance.now();
    if (record.refused || record.problem !== '') return;
  }
}

/** A steady loop through the load balancer (first on A), retrying as client-go does. */
const steady = new RetryingClient({ ...onA, server: lb.url });
await steady.request('GET', `${CM_PATH}/probe`); // its connection is made while A is the only backend

/** A client-node informer through the load balancer, started on A too: it must re-watch, on B, when A ends its watch. */
const informerSeen: string[] = [];
const informerErrors: unknown[] = [];
const informer = (() => {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(pointAt(tenant.kubeconfig, lb.url));
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const made = k8s.makeInformer<k8s.V1ConfigMap>(kc, CM_PATH, () => core.listNamespacedConfigMap({ namespace: 'default' }));
  made.on(k8s.ADD, (cm: k8s.V1ConfigMap) => informerSeen.push(`add ${cm.metadata?.namespace}/${cm.metadata?.name}`));
  made.on(k8s.ERROR, (error: unknown) => informerErrors.push(error));
  return made;
})();
await informer.start();
lb.setBackends([aPort, b.port]);
const steadyAnswers: { at: number; status: number; name: string }[] = [];
async function steadyLoop(until: number): Promise<void> {
  for (let i = 0; i < 2_000 && performance.now() < until; i++) {
    const answer = await steady.request('GET', `${CM_PATH}/probe`);
    if (answer !== null) steadyAnswers.push({ at: performance.now(), status: answer.status, name: JSON.parse(answer.body).metadata?.name });
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A raw HTTP/1.1 request whose head (and `bodyBytes` of its body) is written; resolves the socket and its answer. */
function http1Raw(credentials: ClusterCredentials, head: string, bodyBytes: string): { socket: TLSSocket; answer: Promise<{ text: string; at: number }> } {
  const url = new URL(credentials.server);
  const socket = tlsConnect({
    host: url.hostname,
    port: Number(url.port),
    ca: credentials.caPem,
    cert: credentials.certPem,
    key: credentials.keyPem,
    ALPNProtocols: ['http/1.1'],
  });
  let text = '';
  const answer = new Promise<{ text: string; at: number }>((resolve) => {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', () => {});
    socket.on('close', () => resolve({ text, at: performance.now() }));
  });
  socket.on('secureConnect', () => socket.write(head + bodyBytes));
  return { socket, answer };
}

const postHead = (path: string, length: number) =>
  `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

/** Polls A's /readyz on fresh connections (no credentials: health is open) until A refuses connections. */
async function readyzUntilRefused(until: number): Promise<{ at: number; status: number; body: string }[]> {
  const seen: { at: number; status: number; body: string }[] = [];
  const url = new URL(stack.gatewayUrl);
  for (let i = 0; i < 400 && performance.now() < until; i++) {
    const answer = await new Promise<{ status: number; body: string } | null>((resolve) => {
      const req = https.request({ host: url.hostname, port: url.port, path: '/readyz', ca: onA.caPem, agent: false, timeout: 2_000 }, (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', () => resolve(null));
      req.end();
    });
    if (answer === null) return seen;
    seen.push({ at: performance.now(), ...answer });
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return seen;
}

t.test('every watch delivers before the shutdown', async (t) => {
  for (const w of watches) {
    const namespace = w === tenantApiWatch ? undefined : 'default';
    t.ok(
      eventsOf(w).some((e) => e.type === 'ADDED' && e.object.metadata.name === probeOf(w) && e.object.metadata.namespace === namespace),
      `${w.name}: the ADDED of ${probeOf(w)}, as its client names it`,
    );
  }
});

t.test(
  'SIGTERM: not ready during the delay, then GOAWAY, watches ended cleanly, accepted requests finished, queued ones refused with 503, exit 0',
  async (t) => {
    const until = performance.now() + DELAY_MS + DRAIN_MS + 15_000;
    // A request that never finishes its body keeps narrow's one mutating seat, and so the drain open to its bound.
    const stuck = http1Raw(narrowOnA, postHead(CM_PATH, 1000), '{"metadata":');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const loops = [listLoop(until), listLoop(until), steadyLoop(performance.now() + DELAY_MS + DRAIN_MS + 4_000)];
    await new Promise((resolve) => setTimeout(resolve, 500));

    const sigtermAt = performance.now();
    const exited = new Promise<{ code: number | null; at: number }>((resolve) =>
      stack.gateway.once('exit', (code) => resolve({ code, at: performance.now() })),
    );
    stack.gateway.kill('SIGTERM');
    const readyz = readyzUntilRefused(until);
    // Sent during the delay on a connection of its own: it waits for the seat the stuck request holds.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const body = JSON.stringify({ metadata: { name: 'queued' } });
    const queued = http1Raw(narrowOnA, postHead(CM_PATH, Buffer.byteLength(body)), body);

    const probes = await readyz;
    const refusedAt = performance.now();
    const exit = await exited;
    await Promise.all(loops);
    const [queuedAnswer, stuckAnswer] = await Promise.all([queued.answer, stuck.answer]);
    listSession.close();

    const ms = (at: number) => Math.round(at - sigtermAt);
    // readyz: 503 "shutting down" from the first answer after the signal was handled, until connections are refused.
    const first503 = probes.findIndex((p) => p.status === 503);
    t.ok(first503 >= 0 && first503 <= 1, `readyz turned 503 at once (answers: ${probes.map((p) => p.status).join(' ')})`);
    t.ok(
      probes.slice(first503).every((p) => p.status === 503 && p.body === 'shutting down'),
      'every readyz after that: 503 "shutting down"',
    );
    t.ok(ms(refusedAt) >= DELAY_MS * 0.9, `connections refused only after the delay (${ms(refusedAt)} ms)`);
    const ready503At = probes[first503]?.at ?? Infinity;

    // Served during the delay: lists that started after readyz had turned.
    const servedInDelay = lists.filter((l) => l.startedAt > ready503At && l.status === 200);
    t.ok(servedInDelay.length > 0, `${servedInDelay.length} large lists started and answered 200 during the delay`);
    // Accepted before GOAWAY, finished after it: complete.
    t.ok(goawayAt > 0, `GOAWAY received ${ms(goawayAt)} ms after SIGTERM`);
    t.ok(ms(goawayAt) >= DELAY_MS * 0.9, 'GOAWAY after the delay, not before');
    const answered = lists.filter((l) => !l.refused && l.problem === '');
    t.ok(
      answered.every((l) => l.status === 200 && l.items === CONFIGMAPS + 1),
      `every large list answered is whole (${answered.length} of ${lists.length})`,
    );
    t.same(
      lists.filter((l) => !l.refused && l.problem !== '').map((l) => l.problem),
      [],
      'no list failed other than refused by GOAWAY',
    );
    const spanning = answered.filter((l) => l.startedAt < goawayAt && l.endedAt > goawayAt);
    t.ok(spanning.length >= 1 && spanning.every((l) => l.status === 200), `lists in flight when GOAWAY came finished with 200 (${spanning.length})`);
    t.comment(
      `large lists: ${answered.length} answered, ${spanning.length} in flight across the GOAWAY, ${lists.length - answered.length} refused (never processed)`,
    );

    for (const w of watches) {
      t.ok(w.clean && w.problem === '', `${w.name}: ended cleanly${w.problem ? ` (${w.problem})` : ''}`);
      t.ok(ms(w.endedAt) >= DELAY_MS * 0.9 && ms(w.endedAt) <= DELAY_MS + 1_500, `${w.name}: ended when the delay ran out (${ms(w.endedAt)} ms)`);
      t.doesNotThrow(() => eventsOf(w), `${w.name}: whole events only`);
    }
    t.match(
      newStreamRefused,
      /ERR_HTTP2_(GOAWAY|INVALID)_SESSION|REFUSED_STREAM|ERR_HTTP2_STREAM_ERROR/,
      `a new stream on the old connection, once GOAWAY came, is refused (${newStreamRefused})`,
    );

    // The steady client: served throughout, by B once A went (its retries counted as client-go would make them).
    const counts = steady.counts;
    t.same(counts.failures, [], 'no request of the steady client failed');
    t.same(Object.keys(counts.answered), ['200'], `every steady answer 200 (${JSON.stringify(counts.answered)})`);
    t.ok(
      steadyAnswers.every((a) => a.name === 'probe'),
      'every steady answer is the object asked for',
    );
    t.ok(
      steadyAnswers.some((a) => a.at > exit.at),
      'served after A exited',
    );
    t.ok((lb.connectionsByBackend.get(b.port) ?? 0) >= 1, 'the client reconnected through the load balancer to B');
    t.comment(
      `steady client: ${steadyAnswers.length} answers, retries: ${counts.goawayRefused} refused by GOAWAY, ${counts.connectionLost} connection lost, ${counts.retryAfter} after Retry-After; sessions opened ${steady.sessionsOpened}`,
    );

    // The drain's bound: the request still waiting for a seat got 503 with Retry-After (and Connection: close); the one
    // that never sent its body was cut then.
    t.match(queuedAnswer.text, /^HTTP\/1\.1 503 /, `the queued POST: ${queuedAnswer.text.split('\r\n')[0]}`);
    t.match(queuedAnswer.text, /\r\nretry-after: 1\r\n/i, 'with Retry-After');
    t.match(queuedAnswer.text, /\r\nconnection: close\r\n/i, 'and Connection: close');
    t.match(queuedAnswer.text, /"reason":"ServiceUnavailable"/, 'a Status');
    t.ok(ms(queuedAnswer.at) >= DELAY_MS + DRAIN_MS * 0.9, `refused when the drain ran out (${ms(queuedAnswer.at)} ms)`);
    t.equal(stuckAnswer.text, '', 'the request that never sent its body got no answer');
    t.ok(ms(stuckAnswer.at) >= DELAY_MS + DRAIN_MS * 0.9, `its connection was closed at the drain bound (${ms(stuckAnswer.at)} ms)`);

    t.equal(exit.code, 0, 'exit code 0');
    t.ok(ms(exit.at) <= DELAY_MS + DRAIN_MS + SLACK_MS, `exited ${ms(exit.at)} ms after SIGTERM (delay ${DELAY_MS} + drain ${DRAIN_MS})`);
    t.comment(
      `readyz 503 from ${ms(ready503At)} ms; connections refused from ${ms(refusedAt)} ms; GOAWAY at ${ms(goawayAt)} ms; watches ended at ${watches.map((w) => ms(w.endedAt)).join(', ')} ms; exit at ${ms(exit.at)} ms`,
    );
    watchSession.destroy();
    adminSession.destroy();
    steady.close();
  },
);

t.test('the client-node informer re-watched on B: it sees an object made after A went, and reported no error', async (t) => {
  t.teardown(() => informer.stop());
  const session = connectH2({ ...onA, server: b.url });
  const made = await h2Request(session, 'POST', CM_PATH, {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ metadata: { name: 'after-shutdown' } }),
  });
  session.close();
  t.equal(made.status, 201, 'made through B');
  const deadline = Date.now() + 15_000;
  while (!informerSeen.includes('add default/after-shutdown') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  t.ok(informerSeen.includes('add default/after-shutdown'), 'the informer saw it');
  t.ok(
    informerSeen.includes('add default/probe') && informerSeen.filter((line) => line === 'add default/probe').length === 1,
    'each object added once: it resumed, it did not start over',
  );
  t.same(informerErrors, [], 'no error reported');
});

t.test('without a request held open, the drain ends as soon as everything is answered', async (t) => {
  const c = await others.start('c');
  const session = connectH2({ ...onA, server: c.url });
  t.equal((await h2Request(session, 'GET', `${CM_PATH}/probe`)).status, 200);
  const w = watchH2(session, 'watch', `${CM_PATH}?watch=1`);
  const started = performance.now();
  c.child.kill('SIGTERM');
  const code = await c.exited;
  const ms = Math.round(performance.now() - started);
  t.equal(code, 0, 'exit code 0');
  t.ok(ms < DELAY_MS + DRAIN_MS, `exited ${ms} ms after SIGTERM: before the drain bound`);
  t.ok(w.clean && w.problem === '', `its watch ended cleanly${w.problem ? ` (${w.problem})` : ''}`);
  session.destroy();
});

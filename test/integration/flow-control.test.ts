// A noisy tenant against a small limit set through the Tenant API: the quiet tenant beside it is served in full and
// fast, the noisy one gets 429 Status answers with Retry-After, and a new annotation changes its limit live.
import t from 'tap';
import { loadKubeconfig } from '../../lib/upstream/kubeconfig.ts';
import { UpstreamPool } from '../../lib/upstream/pool.ts';
import { loadFor, loadInWorker, request } from '../helpers/load.ts';
import { startStack } from '../helpers/stack.ts';
import { createTestTenant } from '../helpers/tenants.ts';
import { credentialsOf, h1Request, sumMetric } from '../helpers/http.ts';

const PATH = '/api/v1/namespaces/default/configmaps';
const NOISY_LOOPS = 20;
const QUIET_LOOPS = 2;
const LOAD_MS = 5000;
/** Generous for loopback on 2 shared cores: upstream, tenantgate and both clients run on the same machine. */
const QUIET_P99_BOUND_MS = 1000;

const stack = await startStack({ controllers: false, gatewayArgs: ['--tenant-queue-length', '4', '--queue-wait', '1s'] });
t.teardown(() => stack.stop());
const quiet = await createTestTenant(stack, 'quiet1');
const noisy = await createTestTenant(stack, 'noisy1');

/** Sets the noisy tenant's limit as an administrator would, then waits until a burst shows it applied. */
async function limitNoisyTo(value: string, applied: (statuses: number[]) => boolean): Promise<void> {
  const annotated = await stack.kubectl(['annotate', 'tenant', noisy.id, `tenant.kubezoo.io/max-requests-inflight=${value}`, '--overwrite']);
  if (annotated.code !== 0) throw new Error(`kubectl annotate: ${annotated.stderr}`);
  const pool = new UpstreamPool(loadKubeconfig(noisy.kubeconfig));
  try {
    const deadline = Date.now() + 5000;
    for (;;) {
      const burst = await Promise.all(Array.from({ length: NOISY_LOOPS }, () => request(pool, 'GET', PATH)));
      if (applied(burst.map((a) => a.status))) return;
      if (Date.now() > deadline) throw new Error(`the limit ${value} did not apply within 5 s`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    pool.close();
  }
}

t.test("a noisy tenant over its limit gets 429s with Retry-After; the quiet tenant's every request succeeds, fast", async (t) => {
  await limitNoisyTo('2', (statuses) => statuses.includes(429));
  const [quietLoad, noisyLoad] = await Promise.all([
    loadFor(quiet.kubeconfig, PATH, QUIET_LOOPS, LOAD_MS),
    loadInWorker(noisy.kubeconfig, PATH, NOISY_LOOPS, LOAD_MS),
  ]);
  t.comment(
    `quiet: ${quietLoad.answers.length} requests ${JSON.stringify(quietLoad.byStatus)} p50 ${quietLoad.p50.toFixed(1)} ms p99 ${quietLoad.p99.toFixed(1)} ms`,
  );
  t.comment(`noisy: ${noisyLoad.answers.length} requests ${JSON.stringify(noisyLoad.byStatus)}`);
  t.ok(quietLoad.answers.length >= 50, 'the quiet tenant got work done');
  t.same(quietLoad.byStatus, { 200: quietLoad.answers.length }, 'every request of the quiet tenant succeeded');
  t.ok(quietLoad.p99 < QUIET_P99_BOUND_MS, `quiet p99 ${quietLoad.p99.toFixed(1)} ms < ${QUIET_P99_BOUND_MS} ms`);
  t.ok(noisyLoad.answers.length > quietLoad.answers.length, 'the noisy tenant sent more');
  const refused = noisyLoad.answers.filter((a) => a.status === 429);
  t.ok(refused.length > 0, 'the noisy tenant was refused');
  t.ok((noisyLoad.byStatus[200] ?? 0) > 0, 'and still served within its limit');
  t.same(Object.keys(noisyLoad.byStatus).sort(), ['200', '429'], 'nothing but answers and refusals');
  t.ok(
    refused.every((a) => a.retryAfter === '1'),
    'every 429 says when to retry',
  );
  t.match(JSON.parse(refused[0]!.body), { kind: 'Status', status: 'Failure', reason: 'TooManyRequests', code: 429, details: { retryAfterSeconds: 1 } });
});

t.test("raising the noisy tenant's annotation lifts its limit without a restart, and lowering it brings 429s back", async (t) => {
  await limitNoisyTo('40', (statuses) => statuses.every((s) => s === 200));
  const raised = await loadFor(noisy.kubeconfig, PATH, NOISY_LOOPS, 1500);
  t.same(raised.byStatus, { 200: raised.answers.length }, `${NOISY_LOOPS} loops under a limit of 40: no refusals`);
  await limitNoisyTo('1', (statuses) => statuses.includes(429));
  const lowered = await loadFor(noisy.kubeconfig, PATH, NOISY_LOOPS, 1500);
  t.ok((lowered.byStatus[429] ?? 0) > 0, 'refused again under a limit of 1');
  t.ok(stack.gateway.exitCode === null, 'the same tenantgate process throughout');
});

t.test('writes whose clients reset mid-body give their seats back: the next write is served at once', async (t) => {
  // The noisy tenant's limit is 1 now: one mutating seat. Each round opens five POSTs that never finish their body
  // (one holds the seat while tenantgate reads it, four wait), then resets them all.
  const pool = new UpstreamPool(loadKubeconfig(noisy.kubeconfig));
  t.teardown(() => pool.close());
  for (let round = 0; round < 3; round++) {
    const streams = Array.from({ length: 5 }, () => {
      const stream = pool.request('POST', PATH, { 'content-type': 'application/json', accept: 'application/json' }, false);
      stream.on('error', () => {});
      stream.write('{"apiVersion":"v1","kind":"ConfigMap",');
      return stream;
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (const stream of streams) stream.close(0x8); // NGHTTP2_CANCEL
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = performance.now();
    const created = await new Promise<number>((resolve, reject) => {
      const stream = pool.request('POST', PATH, { 'content-type': 'application/json', accept: 'application/json' }, false);
      stream.on('response', (headers) => resolve(Number(headers[':status'])));
      stream.on('error', reject);
      stream.resume();
      stream.end(JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `after-reset-${round}` } }));
    });
    const ms = performance.now() - started;
    t.equal(created, 201, `round ${round}: created after the resets`);
    t.ok(ms < 900, `round ${round}: served in ${ms.toFixed(0)} ms, without waiting out the 1 s queue bound`);
  }
});

t.test('requests carrying Upgrade take seats like any other: past the limit they wait or get 429, and are logged', async (t) => {
  // The noisy tenant's limit is 1 now. These once went around flow control and the request log (issue 13).
  const credentials = credentialsOf(noisy.kubeconfig);
  const answered = async () => sumMetric(await (await fetch(stack.metricsUrl)).text(), 'tenantgate_requests_total', { tenant: noisy.id });
  const answeredBefore = await answered();
  const answers = await Promise.all(
    Array.from({ length: 40 }, () => h1Request(credentials, 'GET', PATH, { headers: { connection: 'Upgrade', upgrade: 'websocket' } })),
  );
  const statuses = answers.map((a) => a.status);
  t.ok(statuses.includes(429), `refused past the limit (${statuses.filter((s) => s === 429).length} of 40)`);
  t.ok(statuses.includes(200), 'and served within it');
  t.same([...new Set(statuses)].sort(), [200, 429], 'nothing but answers and refusals');
  // The request observer (metrics and the log line) sees each of them once its response closed.
  const deadline = Date.now() + 5000;
  let counted = (await answered()) - answeredBefore;
  while (counted < 40 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    counted = (await answered()) - answeredBefore;
  }
  t.equal(counted, 40, 'each of them is counted in tenantgate_requests_total');
});

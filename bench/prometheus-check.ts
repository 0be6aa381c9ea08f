// Checks grafana/tenantgate.json against a real Prometheus scraping a real tenantgate: known traffic for two tenants,
// then every PromQL expression of the dashboard must return data. Installs nothing; loopback only; bounded in time.
// Run after `npm run build`: node bench/prometheus-check.ts   (needs Debian's prometheus; exits 2 without it, 1 on a failed check)
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { ClientHttp2Stream } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../lib/rig/harness.ts';
import { startSupervised, tailFile, type SupervisedProcess } from '../lib/rig/process.ts';
import { MAX_INFLIGHT_ANNOTATIONS, TENANTS_PATH } from '../lib/tenants/tenant.ts';
import { upstreamJson } from '../lib/upstream/client.ts';
import { loadKubeconfig } from '../lib/upstream/kubeconfig.ts';
import { UpstreamPool } from '../lib/upstream/pool.ts';
import { dashboardQueries, expandVariables, readDashboard } from '../test/helpers/grafana-dashboard.ts';
import { parsePrometheusText, sampleSum } from '../test/helpers/prometheus-text.ts';
import { startStack, type Stack } from '../test/helpers/stack.ts';
import { createTestTenant, withClient, type TestTenant } from '../test/helpers/tenants.ts';

const PROMETHEUS = process.env.TENANTGATE_PROMETHEUS ?? '/usr/bin/prometheus';
const QUIET = 'promqt';
const NOISY = 'promns';
/** The noisy tenant's inflight limit (Tenant annotation): small, so its burst meets flow control. */
const NOISY_LIMIT = 2;
const BURST_REQUESTS = 300;
const BURST_CONCURRENCY = 60;
const RATE_INTERVAL = '30s';
/** `$__range` (the dashboard's time range): the whole run fits in it. */
const RANGE = '5m';
const ROUNDS = 3;
/** ConfigMaps of 600 KB for a watcher that reads nothing: about 7 MB, past the watch cache's bound of 4 MiB unread. */
const SLOW_CONFIGMAPS = 12;
const SLOW_CONFIGMAP_BYTES = 600 * 1024;
const SLOW_CLOSE_WITHIN_MS = 10_000;
const SLOW_WATCHERS_CLOSED = 'tenantgate_watch_cache_slow_watchers_closed_total';
const ROUND_GAP_MS = 1_500;
const READY_WITHIN_MS = 30_000;
/** Scrapes to wait for after the traffic, so its last counts are in Prometheus. */
const SETTLE_MS = 3_000;
/** The whole check, rig start included, ends within this. */
const DEADLINE_MS = 5 * 60_000;

/** Every tenant client of the run, closed when it ends. */
const pools: UpstreamPool[] = [];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface PrometheusRun {
  url: string;
  process: SupervisedProcess;
  dir: string;
}

async function startPrometheus(metrics: URL): Promise<PrometheusRun> {
  const dir = mkdtempSync(join(tmpdir(), 'tenantgate-prometheus-'));
  const config = join(dir, 'prometheus.yml');
  writeFileSync(
    config,
    [
      'global: { scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s }',
      'scrape_configs:',
      '  - job_name: tenantgate',
      `    metrics_path: '${metrics.pathname}'`,
      `    static_configs: [{ targets: ['${metrics.host}'] }]`,
      '',
    ].join('\n'),
  );
  const port = await freePort();
  const process = await startSupervised(
    'prometheus',
    PROMETHEUS,
    [`--config.file=${config}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
    { logPath: join(dir, 'prometheus.log'), cwd: dir },
  );
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + READY_WITHIN_MS;
  for (;;) {
    if (process.hasExited()) throw new Error(`prometheus exited:\n${tailFile(process.logPath)}`);
    const ready = await fetch(`${url}/-/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ready) return { url, process, dir };
    if (Date.now() > deadline) throw new Error(`prometheus not ready within ${READY_WITHIN_MS} ms:\n${tailFile(process.logPath)}`);
    await sleep(200);
  }
}

interface VectorSample {
  metric: Record<string, string>;
  value: [number, string];
}

async function instantQuery(prometheus: PrometheusRun, query: string): Promise<VectorSample[]> {
  const answer = await fetch(`${prometheus.url}/api/v1/query?${new URLSearchParams({ query })}`);
  const body = (await answer.json()) as { status: string; error?: string; data?: { resultType: string; result: VectorSample[] } };
  if (body.status !== 'success') throw new Error(`${query}: ${body.error ?? answer.status}`);
  return body.data!.result;
}

async function waitForScrapes(prometheus: PrometheusRun): Promise<void> {
  const deadline = Date.now() + READY_WITHIN_MS;
  while ((await instantQuery(prometheus, 'up{job="tenantgate"} == 1')).length === 0) {
    if (Date.now() > deadline) throw new Error(`prometheus did not scrape tenantgate within ${READY_WITHIN_MS} ms`);
    await sleep(500);
  }
}

/** A tenant's own HTTP/2 client to tenantgate, with its admin kubeconfig. */
function tenantClient(tenant: TestTenant) {
  const pool = new UpstreamPool(loadKubeconfig(tenant.kubeconfig));
  const call = (method: string, path: string, body?: unknown) => upstreamJson(pool, method, path, body);
  return { pool, call };
}

const CONFIGMAPS = '/api/v1/namespaces/default/configmaps';

/**
 * A watch of the tenant's configmaps in `default`, open until closed; counts the bytes it receives. JSON, and
 * configmaps are cached by default: the watch cache serves it (what the Watch cache panels show).
 */
function openWatch(pool: UpstreamPool): { stream: ClientHttp2Stream; received: () => number } {
  const headers = { accept: 'application/json', ...(pool.authorization === undefined ? {} : { authorization: pool.authorization }) };
  const stream = pool.request('GET', `${CONFIGMAPS}?watch=true`, headers, true);
  let bytes = 0;
  stream.on('data', (chunk: Buffer) => (bytes += chunk.length));
  stream.on('error', () => {});
  return { stream, received: () => bytes };
}

interface TrafficReport {
  /** Answers by tenant and status; the first message of each non-2xx status by path. */
  statuses: Record<string, Record<number, number>>;
  messages: Record<string, string>;
  retryAfterSeen: boolean;
  watchBytes: Record<string, number>;
  /** tenantgate closed the watcher that read nothing (its own count, read from its metrics listener). */
  slowWatcherClosed: boolean;
}

class TrafficLog {
  statuses: Record<string, Record<number, number>> = {};
  messages: Record<string, string> = {};
  record(id: string, path: string, answer: { status: number; body: any }): void {
    const byStatus = (this.statuses[id] ??= {});
    byStatus[answer.status] = (byStatus[answer.status] ?? 0) + 1;
    if (answer.status >= 300) this.messages[`${answer.status} ${path}`] ??= String(answer.body?.message ?? answer.body).slice(0, 200);
  }
}

/** One round of a tenant's ordinary traffic: GET, LIST, create, patch (watch events), a 404, a 503 through the service proxy. */
async function tenantRound(tenant: TestTenant, call: ReturnType<typeof tenantClient>['call'], round: number, log: TrafficLog): Promise<void> {
  const exchange = async (method: string, path: string, body?: unknown) => log.record(tenant.id, path, await call(method, path, body));
  await exchange('GET', '/api/v1/namespaces/default');
  await exchange('GET', CONFIGMAPS);
  for (let i = 0; i < 3; i++) {
    await exchange('POST', CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `check-${round}-${i}` }, data: { n: '0' } });
    await exchange('PATCH', `${CONFIGMAPS}/check-${round}-${i}`, { data: { n: '1' } });
  }
  await exchange('GET', '/api/v1/configmaps');
  await exchange('GET', `${CONFIGMAPS}/no-such-configmap`);
  // A Service whose Endpoints are empty: the apiserver's service proxy answers 503, a real server error end to end
  // (without an Endpoints object at all it answers 404).
  if (round === 0) {
    await exchange('POST', '/api/v1/namespaces/default/services', {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'no-endpoints' },
      spec: { ports: [{ port: 80 }] },
    });
    await exchange('POST', '/api/v1/namespaces/default/endpoints', { apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 'no-endpoints' }, subsets: [] });
  }
  await exchange('GET', '/api/v1/namespaces/default/services/no-endpoints:80/proxy/');
}

/**
 * A cached configmap watch whose client reads nothing, on a session of its own (HTTP/2 flow control stops its bytes,
 * they pile up in tenantgate), then big ConfigMaps until tenantgate closes it as slow: the Slow watchers closed panel
 * then has one to show. Whether tenantgate counted it is read from its own metrics, not from Prometheus.
 */
async function closeSlowWatcher(
  tenant: TestTenant,
  call: ReturnType<typeof tenantClient>['call'],
  metricsUrl: string,
  log: TrafficLog,
  watches: ReturnType<typeof openWatch>[],
): Promise<boolean> {
  const closedSoFar = async () => sampleSum(parsePrometheusText(await (await fetch(metricsUrl)).text()), SLOW_WATCHERS_CLOSED, { resource: 'configmaps' });
  const before = await closedSoFar();
  const { pool } = tenantClient(tenant);
  pools.push(pool);
  const headers = { accept: 'application/json', ...(pool.authorization === undefined ? {} : { authorization: pool.authorization }) };
  const slow = pool.request('GET', `${CONFIGMAPS}?watch=true`, headers, true);
  slow.on('response', () => slow.pause());
  slow.on('error', () => {});
  watches.push({ stream: slow, received: () => 0 });
  const big = 'x'.repeat(SLOW_CONFIGMAP_BYTES);
  for (let i = 0; i < SLOW_CONFIGMAPS; i++) {
    log.record(tenant.id, CONFIGMAPS, await call('POST', CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `slow-${i}` }, data: { big } }));
  }
  const deadline = Date.now() + SLOW_CLOSE_WITHIN_MS;
  while ((await closedSoFar()) === before) {
    if (Date.now() > deadline) return false;
    await sleep(100);
  }
  return true;
}

/**
 * Both tenants' ordinary traffic in rounds a few scrapes apart (so every counter moves inside the rate window, not
 * only between its first two scrapes), with their configmap watches open; then the noisy tenant's burst.
 */
async function generateTraffic(tenants: TestTenant[], noisy: TestTenant, watches: ReturnType<typeof openWatch>[], metricsUrl: string): Promise<TrafficReport> {
  const log = new TrafficLog();
  const clients = tenants.map((tenant) => {
    const client = tenantClient(tenant);
    pools.push(client.pool); // closed at the end: the watch stays open on its session until the check is done
    watches.push(openWatch(client.pool));
    return client;
  });
  let slowWatcherClosed = false;
  for (let round = 0; round < ROUNDS; round++) {
    if (round > 0) await sleep(ROUND_GAP_MS);
    await Promise.all(tenants.map((tenant, i) => tenantRound(tenant, clients[i]!.call, round, log)));
    // After a first round, so the counter has been scraped before it rises (where tenantgate has it from the start).
    if (round === 0) slowWatcherClosed = await closeSlowWatcher(tenants[0]!, clients[0]!.call, metricsUrl, log, watches);
  }
  let retryAfterSeen = false;
  const { pool, call } = tenantClient(noisy);
  pools.push(pool);
  let next = 0;
  // Two halves a few scrapes apart: the 429 and rejection counters then rise inside the rate window.
  for (const until of [BURST_REQUESTS / 2, BURST_REQUESTS]) {
    if (until > BURST_REQUESTS / 2) await sleep(ROUND_GAP_MS);
    const worker = async () => {
      while (next < until) {
        next++;
        const answer = await call('GET', CONFIGMAPS);
        log.record(noisy.id, CONFIGMAPS, answer);
        // the Status' retryAfterSeconds is what tenantgate turns into the Retry-After header (lib/request/status.ts)
        if (answer.status === 429) retryAfterSeen ||= answer.body?.details?.retryAfterSeconds !== undefined;
      }
    };
    await Promise.all(Array.from({ length: BURST_CONCURRENCY }, worker));
  }
  return {
    statuses: log.statuses,
    messages: log.messages,
    retryAfterSeen,
    watchBytes: Object.fromEntries(tenants.map((t, i) => [t.id, watches[i]!.received()])),
    slowWatcherClosed,
  };
}

async function setInflightLimit(stack: Stack, id: string, limit: number): Promise<void> {
  await withClient(stack.adminKubeconfig, async (pool) => {
    const patched = await upstreamJson(pool, 'PATCH', `${TENANTS_PATH}/${id}`, {
      metadata: { annotations: { [MAX_INFLIGHT_ANNOTATIONS[0]!]: String(limit) } },
    });
    if (patched.status !== 200) throw new Error(`annotating tenant ${id}: ${patched.status} ${JSON.stringify(patched.body).slice(0, 300)}`);
  });
}

async function main(): Promise<number> {
  if (!existsSync(PROMETHEUS)) {
    console.error(
      `no Prometheus at ${PROMETHEUS}; install Debian's with:\n  apt-get install -y prometheus\n(or point TENANTGATE_PROMETHEUS at a prometheus binary)`,
    );
    return 2;
  }
  const deadline = setTimeout(() => {
    console.error(`prometheus-check: not done within ${DEADLINE_MS / 1000} s`);
    process.exit(1);
  }, DEADLINE_MS);
  deadline.unref();

  const stack = await startStack({ controllers: true });
  let prometheus: PrometheusRun | undefined;
  const watches: ReturnType<typeof openWatch>[] = [];
  try {
    if (stack.metricsUrl === '') throw new Error('tenantgate announced no metrics listener');
    prometheus = await startPrometheus(new URL(stack.metricsUrl));
    await waitForScrapes(prometheus);
    const quiet = await createTestTenant(stack, QUIET);
    const noisy = await createTestTenant(stack, NOISY);
    await setInflightLimit(stack, NOISY, NOISY_LIMIT);

    const traffic = await generateTraffic([quiet, noisy], noisy, watches, stack.metricsUrl);
    console.log(JSON.stringify({ traffic }));
    await sleep(SETTLE_MS);

    const tenantValues = await fetch(`${prometheus.url}/api/v1/label/tenant/values?${new URLSearchParams({ 'match[]': 'tenantgate_requests_total' })}`).then(
      (r) => r.json() as Promise<{ data: string[] }>,
    );
    const missingTenants = [QUIET, NOISY].filter((id) => !tenantValues.data.includes(id));
    console.log(`tenant variable (label_values(tenantgate_requests_total, tenant)): ${tenantValues.data.join(', ')}`);

    // The watch cache's panels are only honest if the tenants' watches really came from it, not from the upstream.
    const cachedWatchers = await instantQuery(prometheus, `tenantgate_watch_cache_watchers{tenant=~"${QUIET}|${NOISY}"} > 0`);
    const uncached = [QUIET, NOISY].filter((id) => !cachedWatchers.some((sample) => sample.metric.tenant === id));
    console.log(`watches served from the watch cache: ${cachedWatchers.map((sample) => `${sample.metric.tenant} ${sample.value[1]}`).join(', ') || 'none'}`);

    // The one slow watcher closed (by tenantgate's own count) must show on the dashboard as one, not as 0.
    const slowPanel = dashboardQueries(readDashboard()).find((q) => q.expr.includes(SLOW_WATCHERS_CLOSED))!;
    const slowShown = (
      await instantQuery(prometheus, expandVariables(slowPanel.expr, { tenants: [QUIET, NOISY], rateInterval: RATE_INTERVAL, range: RANGE }))
    ).find((sample) => sample.metric.resource === 'configmaps');
    const slowShownCount = slowShown === undefined ? undefined : Math.round(Number(slowShown.value[1]));
    console.log(`${slowPanel.panel}, configmaps: ${slowShownCount ?? 'no data'} (tenantgate closed ${traffic.slowWatcherClosed ? 'one' : 'none'})`);
    const slowMisshown = !traffic.slowWatcherClosed || slowShownCount === undefined || slowShownCount < 1;

    const empty: string[] = [];
    for (const { panel, refId, expr } of dashboardQueries(readDashboard())) {
      const query = expandVariables(expr, { tenants: [QUIET, NOISY], rateInterval: RATE_INTERVAL, range: RANGE });
      let verdict: string;
      try {
        // NaN (a quantile of no observations in the window) is a gap on the panel, not data.
        const result = (await instantQuery(prometheus, query)).filter((sample) => !Number.isNaN(Number(sample.value[1])));
        verdict = result.length === 0 ? 'NO DATA' : `${result.length} series, e.g. ${JSON.stringify(result[0]!.metric)} = ${result[0]!.value[1]}`;
        if (result.length === 0) empty.push(`${panel} ${refId}: ${query}`);
      } catch (error) {
        verdict = `ERROR ${(error as Error).message}`;
        empty.push(`${panel} ${refId}: ${query} (${(error as Error).message})`);
      }
      console.log(`${panel} ${refId}: ${verdict}`);
    }
    if (missingTenants.length > 0) console.error(`the tenant variable lacks ${missingTenants.join(', ')}`);
    if (empty.length > 0) console.error(`\nexpressions without data (${empty.length}):\n  ${empty.join('\n  ')}`);
    if (uncached.length > 0) console.error(`the configmap watches of ${uncached.join(', ')} were not served from the watch cache`);
    if (!traffic.slowWatcherClosed) console.error(`tenantgate did not close the watcher that read nothing within ${SLOW_CLOSE_WITHIN_MS / 1000} s`);
    else if (slowMisshown) console.error(`${slowPanel.panel} shows ${slowShownCount ?? 'no data'} for configmaps after tenantgate closed one slow watcher`);
    if (empty.length > 0 || missingTenants.length > 0 || uncached.length > 0 || slowMisshown) return 1;
    console.log('\nevery expression of grafana/tenantgate.json returned data');
    return 0;
  } finally {
    for (const watch of watches) watch.stream.close();
    for (const pool of pools) pool.close();
    if (prometheus !== undefined) {
      await prometheus.process.stop();
      rmSync(prometheus.dir, { recursive: true, force: true });
    }
    await stack.stop();
  }
}

process.exitCode = await main();

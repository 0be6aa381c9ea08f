// Checks grafana/tenantgate.json against a real Prometheus scraping a real tenantgate: known traffic for two tenants,
// then every PromQL expression of the dashboard must return data. Installs nothing; loopback only; bounded in time.
// Run after `npm run build`: node bench/prometheus-check.ts   (needs Debian's prometheus; exits 2 without it, 1 on a failed check)
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { ClientHttp2Stream } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../lib/rig/harness.ts';
import { startSupervised, tailFile, type SupervisedProcess } from '../lib/rig/process.ts';
import { MAX_INFLIGHT_ANNOTATIONS, TENANT_API_VERSION } from '../lib/tenants/tenant.ts';
import { upstreamJson } from '../lib/upstream/client.ts';
import { loadKubeconfig } from '../lib/upstream/kubeconfig.ts';
import { UpstreamPool } from '../lib/upstream/pool.ts';
import { dashboardQueries, expandVariables, readDashboard } from '../test/helpers/grafana-dashboard.ts';
import { startStack, type Stack } from '../test/helpers/stack.ts';
import { createTestTenant, withAdmin, type TestTenant } from '../test/helpers/tenants.ts';

const PROMETHEUS = process.env.TENANTGATE_PROMETHEUS ?? '/usr/bin/prometheus';
const QUIET = 'promqt';
const NOISY = 'promns';
/** The noisy tenant's inflight limit (Tenant annotation): small, so its burst meets flow control. */
const NOISY_LIMIT = 2;
const BURST_REQUESTS = 300;
const BURST_CONCURRENCY = 60;
const RATE_INTERVAL = '30s';
const READY_WITHIN_MS = 30_000;
/** Scrapes to wait for after the traffic, so every counter has moved within the rate window. */
const SETTLE_MS = 4_000;
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

async function startPrometheus(metricsTarget: string): Promise<PrometheusRun> {
  const dir = mkdtempSync(join(tmpdir(), 'tenantgate-prometheus-'));
  const config = join(dir, 'prometheus.yml');
  writeFileSync(
    config,
    [
      'global: { scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s }',
      'scrape_configs:',
      '  - job_name: tenantgate',
      `    static_configs: [{ targets: ['${metricsTarget}'] }]`,
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
    const ready = await fetch(`${url}/-/ready`).then((r) => r.ok, () => false);
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

/** A watch of the tenant's configmaps in `default`, open until closed; counts the bytes it receives. */
function openWatch(pool: UpstreamPool): { stream: ClientHttp2Stream; received: () => number } {
  const headers = { accept: 'application/json', ...(pool.authorization === undefined ? {} : { authorization: pool.authorization }) };
  const stream = pool.request('GET', `${CONFIGMAPS}?watch=true`, headers, true);
  let bytes = 0;
  stream.on('data', (chunk: Buffer) => (bytes += chunk.length));
  stream.on('error', () => {});
  return { stream, received: () => bytes };
}

interface TrafficReport {
  statuses: Record<string, Record<number, number>>;
  retryAfterSeen: boolean;
  watchBytes: Record<string, number>;
}

/** GET, LIST, create, update (watch events), a 404, a 503 through the service proxy, and the noisy tenant's burst. */
async function generateTraffic(tenants: TestTenant[], noisy: TestTenant, watches: ReturnType<typeof openWatch>[]): Promise<TrafficReport> {
  const statuses: Record<string, Record<number, number>> = {};
  const count = (id: string, status: number) => {
    const byStatus = (statuses[id] ??= {});
    byStatus[status] = (byStatus[status] ?? 0) + 1;
  };
  for (const tenant of tenants) {
    const { pool, call } = tenantClient(tenant);
    pools.push(pool); // closed at the end: the watch stays open on its session until the check is done
    watches.push(openWatch(pool));
    const exchange = async (method: string, path: string, body?: unknown) => count(tenant.id, (await call(method, path, body)).status);
    await exchange('GET', '/api/v1/namespaces/default');
    await exchange('GET', CONFIGMAPS);
    for (let i = 0; i < 5; i++) {
      await exchange('POST', CONFIGMAPS, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `check-${i}` }, data: { n: '0' } });
      await exchange('PATCH', `${CONFIGMAPS}/check-${i}`, { data: { n: '1' } });
    }
    await exchange('GET', CONFIGMAPS);
    await exchange('GET', '/api/v1/configmaps');
    await exchange('GET', `${CONFIGMAPS}/no-such-configmap`);
    // A Service without endpoints: the apiserver's service proxy answers 503, a real server error end to end.
    await exchange('POST', '/api/v1/namespaces/default/services', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'no-endpoints' }, spec: { ports: [{ port: 80 }] } });
    await exchange('GET', '/api/v1/namespaces/default/services/no-endpoints:80/proxy/');
  }
  let retryAfterSeen = false;
  const { pool, call } = tenantClient(noisy);
  pools.push(pool);
  let next = 0;
  const worker = async () => {
    while (next < BURST_REQUESTS) {
      next++;
      const answer = await call('GET', CONFIGMAPS);
      count(noisy.id, answer.status);
      if (answer.status === 429) retryAfterSeen ||= (answer.body as { details?: { retryAfterSeconds?: number } })?.details?.retryAfterSeconds !== undefined;
    }
  };
  await Promise.all(Array.from({ length: BURST_CONCURRENCY }, worker));
  return { statuses, retryAfterSeen, watchBytes: Object.fromEntries(tenants.map((t, i) => [t.id, watches[i]!.received()])) };
}

async function setInflightLimit(stack: Stack, id: string, limit: number): Promise<void> {
  await withAdmin(stack, async (pool) => {
    const patched = await upstreamJson(pool, 'PATCH', `/apis/${TENANT_API_VERSION}/tenants/${id}`, { metadata: { annotations: { [MAX_INFLIGHT_ANNOTATIONS[0]!]: String(limit) } } });
    if (patched.status !== 200) throw new Error(`annotating tenant ${id}: ${patched.status} ${JSON.stringify(patched.body).slice(0, 300)}`);
  });
}

async function main(): Promise<number> {
  if (!existsSync(PROMETHEUS)) {
    console.error(`no Prometheus at ${PROMETHEUS}; install Debian's with:\n  apt-get install -y prometheus\n(or point TENANTGATE_PROMETHEUS at a prometheus binary)`);
    return 2;
  }
  const deadline = setTimeout(() => {
    console.error(`prometheus-check: not done within ${DEADLINE_MS / 1000} s`);
    process.exit(1);
  }, DEADLINE_MS);
  deadline.unref();

  const metricsPort = await freePort();
  const metricsTarget = `127.0.0.1:${metricsPort}`;
  const stack = await startStack({ controllers: true, gatewayArgs: ['--metrics-listen', metricsTarget] });
  let prometheus: PrometheusRun | undefined;
  const watches: ReturnType<typeof openWatch>[] = [];
  try {
    prometheus = await startPrometheus(metricsTarget);
    await waitForScrapes(prometheus);
    const quiet = await createTestTenant(stack, QUIET);
    const noisy = await createTestTenant(stack, NOISY);
    await setInflightLimit(stack, NOISY, NOISY_LIMIT);

    const traffic = await generateTraffic([quiet, noisy], noisy, watches);
    console.log(JSON.stringify({ traffic }));
    await sleep(SETTLE_MS);

    const tenantValues = await fetch(`${prometheus.url}/api/v1/label/tenant/values?${new URLSearchParams({ 'match[]': 'tenantgate_requests_total' })}`).then((r) => r.json() as Promise<{ data: string[] }>);
    const missingTenants = [QUIET, NOISY].filter((id) => !tenantValues.data.includes(id));
    console.log(`tenant variable (label_values(tenantgate_requests_total, tenant)): ${tenantValues.data.join(', ')}`);

    const empty: string[] = [];
    for (const { panel, refId, expr } of dashboardQueries(readDashboard())) {
      const query = expandVariables(expr, { tenants: [QUIET, NOISY], rateInterval: RATE_INTERVAL });
      let verdict: string;
      try {
        const result = await instantQuery(prometheus, query);
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
    if (empty.length > 0 || missingTenants.length > 0) return 1;
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

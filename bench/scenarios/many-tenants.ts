// Scenario 5: many tenants on one tenantgate. Tenants made through the Tenant API (create to the first kubectl call
// that works, p50/p99 on a sample), what resolving a tenant costs, then mixed traffic across all of them.
import { writeFileSync } from 'node:fs';
import type { ClientHttp2Session } from 'node:http2';
import { join } from 'node:path';
import { tenantRefusal } from '../../lib/auth/tenant-resolution.ts';
import { tenantCertificateSerial } from '../../lib/tenants/credentials.ts';
import { MemoryTenantStore } from '../../lib/tenants/memory-store.ts';
import { fetchKubeconfig } from '../../lib/tenants/tenant-command.ts';
import { TENANT_API_VERSION, TENANTS_PATH, type Tenant } from '../../lib/tenants/tenant.ts';
import { upstreamJson } from '../../lib/upstream/client.ts';
import { loadKubeconfig } from '../../lib/upstream/kubeconfig.ts';
import { UpstreamPool } from '../../lib/upstream/pool.ts';
import { connectH2, h2Request } from '../../test/helpers/http.ts';
import { startStack, type Stack } from '../../test/helpers/stack.ts';
import { waitUntilReady } from '../../test/helpers/tenants.ts';
import { seededRandom } from '../k8s-payloads.ts';
import { gatewayProfileFlags } from '../profile.ts';
import type { Chart, Scenario, ScenarioOptions, ScenarioResult } from '../scenario.ts';
import { percentile, rounded } from '../stats.ts';

/** A kubectl that fails is tried again until this long after the create (bootstrap still running). */
const FIRST_CALL_LIMIT_MS = 30_000;
const LOOKUP_TENANTS = 1000;
/** Tenants are made this many at a time after the sample (the Tenant API and the lifecycle controller in parallel). */
const CREATE_CONCURRENCY = 8;
const TRAFFIC_CONCURRENCY = 16;

const summary = (values: number[]) => ({ p50: rounded(percentile(values, 50), 1), p99: rounded(percentile(values, 99), 1) });
const tenantId = (i: number) => `mt${String(i).padStart(4, '0')}`;

/** Tenant creation as a user sees it: POST, the kubeconfig, then kubectl until it succeeds; one tenant at a time. */
async function createToFirstCall(stack: Stack, pool: UpstreamPool, ids: string[]): Promise<Record<string, unknown>> {
  const created: number[] = [];
  const issued: number[] = [];
  const firstCall: number[] = [];
  const kubectlAttempts: number[] = [];
  // kubectl's own cost (process start, TLS, discovery-free request), so the tenant's share can be told apart.
  const baseline: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    const result = await stack.kubectl(['get', 'namespaces', '-o', 'name']);
    if (result.code !== 0) throw new Error(result.stderr);
    baseline.push(performance.now() - t0);
  }
  for (const id of ids) {
    const t0 = performance.now();
    const answer = await upstreamJson(pool, 'POST', TENANTS_PATH, { apiVersion: TENANT_API_VERSION, kind: 'Tenant', metadata: { name: id }, spec: {} });
    if (answer.status !== 201) throw new Error(`create ${id}: ${answer.status} ${JSON.stringify(answer.body)}`);
    const t1 = performance.now();
    const file = join(stack.dir, `${id}.kubeconfig`);
    writeFileSync(file, await fetchKubeconfig(pool, id), { mode: 0o600 });
    const t2 = performance.now();
    let attempts = 0;
    for (;;) {
      attempts++;
      const result = await stack.kubectl(['get', 'configmaps', '-n', 'default', '-o', 'name'], { kubeconfig: file });
      if (result.code === 0) break;
      if (performance.now() - t0 > FIRST_CALL_LIMIT_MS)
        throw new Error(`tenant ${id}: no successful kubectl call within ${FIRST_CALL_LIMIT_MS} ms: ${result.stderr}`);
    }
    const t3 = performance.now();
    created.push(t1 - t0);
    issued.push(t2 - t1);
    firstCall.push(t3 - t0);
    kubectlAttempts.push(attempts);
  }
  return {
    sampleTenants: ids.length,
    createMs: summary(created),
    kubeconfigMs: summary(issued),
    createToFirstKubectlMs: summary(firstCall),
    kubectlAloneMs: summary(baseline),
    kubectlAttempts: { max: Math.max(...kubectlAttempts), total: kubectlAttempts.reduce((a, b) => a + b, 0) },
  };
}

/** The rest of the tenants, `CREATE_CONCURRENCY` at a time, each until Ready: tenants per second at scale. */
async function createMany(pool: UpstreamPool, ids: string[]): Promise<Record<string, unknown>> {
  const t0 = performance.now();
  const readyMs: number[] = [];
  let next = 0;
  const worker = async () => {
    while (next < ids.length) {
      const id = ids[next++]!;
      const started = performance.now();
      const answer = await upstreamJson(pool, 'POST', TENANTS_PATH, { apiVersion: TENANT_API_VERSION, kind: 'Tenant', metadata: { name: id }, spec: {} });
      if (answer.status !== 201) throw new Error(`create ${id}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`);
      await waitUntilReady(pool, id);
      readyMs.push(performance.now() - started);
    }
  };
  await Promise.all(Array.from({ length: CREATE_CONCURRENCY }, worker));
  const seconds = (performance.now() - t0) / 1000;
  return {
    tenants: ids.length,
    concurrency: CREATE_CONCURRENCY,
    seconds: rounded(seconds, 1),
    tenantsPerSecond: rounded(ids.length / seconds, 1),
    createToReadyMs: summary(readyMs),
  };
}

/** What the resolve-tenant stage costs per request with 1,000 tenants in the index, against a plain Map.get. */
async function lookupCost(lookups: number): Promise<{ tenantsInIndex: number; lookups: number; resolveTenantNs: number; plainMapGetNs: number }> {
  const store = new MemoryTenantStore();
  const tenants: Tenant[] = [];
  for (let i = 0; i < LOOKUP_TENANTS; i++) {
    tenants.push(await store.create({ apiVersion: TENANT_API_VERSION, kind: 'Tenant', metadata: { name: `lk${String(i).padStart(4, '0')}` }, spec: {} }));
  }
  const identities = tenants.map((tenant) => ({
    user: 'admin',
    groups: [],
    tenant: tenant.metadata.name,
    proof: { kind: 'certificate' as const, serial: tenantCertificateSerial(tenant).toUpperCase() },
  }));
  const plain = new Map(tenants.map((tenant) => [tenant.metadata.name, tenant]));
  const time = (body: (i: number) => unknown) => {
    for (let i = 0; i < 100_000; i++) body(i); // warm up
    const t0 = process.hrtime.bigint();
    let refused = 0;
    for (let i = 0; i < lookups; i++) if (body(i) !== null) refused++;
    const ns = Number(process.hrtime.bigint() - t0) / lookups;
    if (refused !== 0 && refused !== lookups) throw new Error(`${refused} of ${lookups} lookups refused`);
    return rounded(ns, 1);
  };
  const resolveTenantNs = time((i) => tenantRefusal(identities[i % LOOKUP_TENANTS]!, store));
  const plainMapGetNs = time((i) => (plain.get(identities[i % LOOKUP_TENANTS]!.tenant) === undefined ? 'missing' : null));
  return { tenantsInIndex: LOOKUP_TENANTS, lookups, resolveTenantNs, plainMapGetNs };
}

type Operation = 'get' | 'list' | 'create' | 'patch';
/** The mix, by weight: mostly reads, as controllers and kubectl make it. */
const MIX: [Operation, number][] = [
  ['get', 50],
  ['list', 25],
  ['create', 15],
  ['patch', 10],
];

/**
 * Mixed traffic for `seconds`, `TRAFFIC_CONCURRENCY` requests at a time, each by a tenant picked at random. Every
 * LIST is checked to hold only the caller's own ConfigMaps (named after the tenant): another's would be a leak.
 */
async function mixedTraffic(stack: Stack, pool: UpstreamPool, ids: string[], seconds: number, log: (line: string) => void): Promise<Record<string, unknown>> {
  const sessions = new Map<string, ClientHttp2Session>();
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CREATE_CONCURRENCY }, async () => {
      while (next < ids.length) {
        const id = ids[next++]!;
        const file = join(stack.dir, `${id}.kubeconfig`);
        writeFileSync(file, await fetchKubeconfig(pool, id), { mode: 0o600 });
        const session = connectH2(loadKubeconfig(file));
        sessions.set(id, session);
        // Each tenant starts with one ConfigMap to read.
        const seeded = await h2Request(session, 'POST', '/api/v1/namespaces/default/configmaps', {
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ metadata: { name: `${id}-0` }, data: { n: '0' } }),
        });
        if (seeded.status !== 201) throw new Error(`tenant ${id}: seeding a configmap: ${seeded.status} ${seeded.body.slice(0, 300)}`);
      }
    }),
  );
  // (Each tenant's first request here waits for its birth state to be written upstream.)
  log(`${ids.length} tenants connected with their own certificates and seeded in ${Math.round(performance.now() - t0)} ms`);
  const random = seededRandom(5);
  const weightTotal = MIX.reduce((sum, [, weight]) => sum + weight, 0);
  const pick = (): Operation => {
    let r = random() * weightTotal;
    for (const [operation, weight] of MIX) if ((r -= weight) < 0) return operation;
    return 'get';
  };
  const latencies = new Map<Operation, number[]>(MIX.map(([operation]) => [operation, []]));
  const counts = { requests: 0, errors: 0, foreignItems: 0 };
  const createdCount = new Map<string, number>();
  const deadline = performance.now() + seconds * 1000;
  const trafficStart = performance.now();
  const worker = async () => {
    while (performance.now() < deadline) {
      const id = ids[Math.floor(random() * ids.length)]!;
      const session = sessions.get(id)!;
      const operation = pick();
      const base = '/api/v1/namespaces/default/configmaps';
      const started = performance.now();
      let answer;
      if (operation === 'get') answer = await h2Request(session, 'GET', `${base}/${id}-0`);
      else if (operation === 'list') answer = await h2Request(session, 'GET', base);
      else if (operation === 'patch') {
        answer = await h2Request(session, 'PATCH', `${base}/${id}-0`, {
          headers: { 'content-type': 'application/merge-patch+json' },
          body: JSON.stringify({ data: { n: String(counts.requests) } }),
        });
      } else {
        const n = (createdCount.get(id) ?? 0) + 1;
        createdCount.set(id, n);
        answer = await h2Request(session, 'POST', base, {
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ metadata: { name: `${id}-${n}` } }),
        });
      }
      latencies.get(operation)!.push(performance.now() - started);
      counts.requests++;
      if (answer.status >= 300) counts.errors++;
      else if (operation === 'list') {
        for (const item of answer.json().items as { metadata: { name: string } }[]) if (!item.metadata.name.startsWith(`${id}-`)) counts.foreignItems++;
      }
    }
  };
  await Promise.all(Array.from({ length: TRAFFIC_CONCURRENCY }, worker));
  const trafficSeconds = (performance.now() - trafficStart) / 1000;
  for (const session of sessions.values()) session.close();
  if (counts.foreignItems > 0) throw new Error(`isolation: ${counts.foreignItems} of other tenants' ConfigMaps appeared in tenants' lists`);
  const byOperation: Record<string, unknown> = {};
  for (const [operation, values] of latencies)
    byOperation[operation] = { requests: values.length, p50Ms: rounded(percentile(values, 50), 2), p99Ms: rounded(percentile(values, 99), 2) };
  return {
    tenants: ids.length,
    concurrency: TRAFFIC_CONCURRENCY,
    seconds: rounded(trafficSeconds, 1),
    requests: counts.requests,
    requestsPerSecond: Math.round(counts.requests / trafficSeconds),
    errors: counts.errors,
    foreignItemsInLists: counts.foreignItems,
    byOperation,
  };
}

async function run({ quick, log }: ScenarioOptions): Promise<ScenarioResult> {
  const tenants = quick ? 50 : 1000;
  const sample = quick ? 5 : 20;
  const trafficSeconds = quick ? 3 : 20;
  const lookup = await lookupCost(quick ? 200_000 : 2_000_000);
  log(`tenant lookup on the request path: ${lookup.resolveTenantNs} ns (a plain Map.get: ${lookup.plainMapGetNs} ns), ${LOOKUP_TENANTS} tenants in the index`);
  // No kube-controller-manager: what it does per namespace (service accounts, root CA ConfigMaps) is not tenantgate's load.
  const stack = await startStack({ controllers: false, gatewayNodeFlags: gatewayProfileFlags() });
  const pool = new UpstreamPool(loadKubeconfig(stack.adminKubeconfig));
  try {
    const ids = Array.from({ length: tenants }, (_, i) => tenantId(i));
    const creation = await createToFirstCall(stack, pool, ids.slice(0, sample));
    log(
      `create to first kubectl, ${sample} tenants one at a time: ${JSON.stringify(creation.createToFirstKubectlMs)} ms (kubectl alone ${JSON.stringify(creation.kubectlAloneMs)})`,
    );
    const many = await createMany(pool, ids.slice(sample));
    log(
      `${tenants - sample} more tenants, ${CREATE_CONCURRENCY} at a time: ${many.tenantsPerSecond} tenants/s, create to Ready ${JSON.stringify(many.createToReadyMs)} ms`,
    );
    const rssBefore = stack.gatewayMemory().rss;
    const traffic = await mixedTraffic(stack, pool, ids, trafficSeconds, log);
    const memory = stack.gatewayMemory();
    log(
      `mixed traffic over ${tenants} tenants: ${traffic.requestsPerSecond} requests/s, ${traffic.errors} errors; tenantgate RSS ${rounded(memory.rss / 2 ** 20, 1)} MB`,
    );
    const byOperation = traffic.byOperation as Record<Operation, { p50Ms: number; p99Ms: number }>;
    const charts: Chart[] = [
      {
        title: `Mixed traffic over ${tenants} tenants, p99 by operation`,
        unit: 'ms',
        bars: Object.fromEntries(MIX.map(([operation]) => [operation, byOperation[operation].p99Ms])),
      },
      {
        title: 'Tenant creation, one at a time',
        unit: 'ms',
        bars: {
          'kubectl alone, p50': (creation.kubectlAloneMs as { p50: number }).p50,
          'create to first kubectl, p50': (creation.createToFirstKubectlMs as { p50: number }).p50,
          'create to first kubectl, p99': (creation.createToFirstKubectlMs as { p99: number }).p99,
        },
      },
      { title: 'Tenant lookup per request', unit: 'ns', bars: { 'plain Map.get': lookup.plainMapGetNs, 'resolve tenant': lookup.resolveTenantNs } },
    ];
    return {
      scenario: 'many-tenants',
      figures: {
        tenants,
        lookup,
        creation,
        createMany: many,
        traffic,
        tenantgateRssMb: {
          beforeTraffic: rounded(rssBefore / 2 ** 20, 1),
          afterTraffic: rounded(memory.rss / 2 ** 20, 1),
          peak: rounded(memory.peak / 2 ** 20, 1),
        },
      },
      targets: [],
      charts,
    };
  } finally {
    pool.close();
    await stack.stop();
  }
}

export const manyTenantsScenario: Scenario = {
  name: 'many-tenants',
  description: '1,000 tenants through the Tenant API (create to first kubectl, lookup cost), then mixed GET/LIST/create/patch traffic across all of them',
  run,
};

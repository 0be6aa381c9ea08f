// What each tenant costs the shared upstream: tenants made through the Tenant API up to each N on one stack, and at each
// N the upstream objects of one idle tenant, kube-apiserver CPU per GET, idle CPU and RSS. Reports targets, never fails on them.
//
// DENSITY_TENANTS=0,100,300 chooses the Ns (ascending; default quick 0,100, full 0,1000,10000). Creation stops at the
// scenario's time budget: the N reached is measured and reported with how many became Ready, and larger Ns are skipped.
// Besides the N tenants there is one probe tenant (`dprobe`) whose ConfigMap the tenant path reads, from N = 0 on.
import type { ClientHttp2Session } from 'node:http2';
import os from 'node:os';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { upstreamIdentityOf } from '../../lib/auth/impersonation.ts';
import { isBorn, isReady } from '../../lib/tenants/conditions.ts';
import { fetchKubeconfig } from '../../lib/tenants/tenant-command.ts';
import { TENANT_API_VERSION, TENANTS_PATH, type Tenant } from '../../lib/tenants/tenant.ts';
import { upstreamJson } from '../../lib/upstream/client.ts';
import { DiscoveryCache } from '../../lib/upstream/discovery.ts';
import { loadKubeconfig, type ClusterCredentials } from '../../lib/upstream/kubeconfig.ts';
import { watchUpstream } from '../../lib/upstream/own-watch.ts';
import { upstreamRequestHeaders } from '../../lib/upstream/headers.ts';
import { UpstreamPool } from '../../lib/upstream/pool.ts';
import { connectH2, credentialsOf, h2Request } from '../../test/helpers/http.ts';
import { startStack, stopChild, type Stack } from '../../test/helpers/stack.ts';
import { createTestTenant } from '../../test/helpers/tenants.ts';
import { spawnBare } from '../load/bare-server.ts';
import { CPU_TICK_MS, cpuMeter, idleCpuRate, rssOf, untilCpuAtMost, type Pids } from '../load/cpu.ts';
import { countedRequests, type CountedRequest } from '../load/counted.ts';
import { heapAfterCollection, INSPECTOR_FLAGS, inspectorUrlOf, type HeapReading } from '../load/heap.ts';
import { gatewayProfileFlags } from '../profile.ts';
import type { Chart, Scenario, ScenarioOptions, ScenarioResult, TargetCheck } from '../scenario.ts';
import { median, percentile, rounded } from '../stats.ts';
import { footprintOf, perTenantGrowth, type Footprint } from '../tenant-footprint.ts';
import { CONFIGMAP, tenantToken, waitUntilServed } from './small-get.ts';

interface Plan {
  tenantCounts: number[];
  idleSeconds: number;
  /** GETs per path at each N: at most this many, or for at most `getSeconds`, whichever ends first (in GET_ROUNDS rounds). */
  maxGets: number;
  getSeconds: number;
  /** The whole scenario, stack start included; under run.ts's SCENARIO_LIMIT_MS (quick 150 s, full 30 min). */
  budgetMs: number;
  /** Kept free at each N for measuring: creation stops this long before the budget ends. */
  measureReserveMs: number;
  /** How long kube-controller-manager may take to give the newest tenant's namespaces their ServiceAccount and CA. */
  controllersCatchUpMs: number;
  /** How long the rig may take after that to come back to rest, before the idle figures are read. */
  settleMs: number;
  /** A tenant not Ready this long after the creation deadline is counted as not Ready. */
  readyGraceMs: number;
}

const QUICK: Plan = {
  tenantCounts: [0, 100],
  idleSeconds: 5,
  maxGets: 2000,
  getSeconds: 3,
  budgetMs: 135_000,
  measureReserveMs: 30_000,
  controllersCatchUpMs: 15_000,
  settleMs: 25_000,
  readyGraceMs: 10_000,
};
const FULL: Plan = {
  tenantCounts: [0, 1000, 10_000],
  idleSeconds: 30,
  maxGets: 20_000,
  getSeconds: 8,
  budgetMs: 27 * 60_000,
  measureReserveMs: 240_000,
  controllersCatchUpMs: 90_000,
  settleMs: 120_000,
  readyGraceMs: 60_000,
};

/** Tenants in flight (created, not yet Ready) at once: what an administrator's script or an operator would do. */
const CREATE_CONCURRENCY = 16;
const READY_WITHIN_MS = 60_000;
/** Creation errors that end a step: the Tenant API is refusing, more tries measure nothing. */
const CREATE_ERRORS_LIMIT = 20;
const GET_CONCURRENCY = 4;
/** GETs between two looks at the clock. */
const GET_BATCH = 50;
const WARM_UP_GETS = 100;
/** Both paths' GETs are paced at this share of the slower one's unpaced rate (measured in a round of its own). */
const PACED_SHARE = 0.8;
const GET_ROUNDS = 3;
const PROBE_TENANT = 'dprobe';
const MAX_TENANTS = 99_999;
const tenantIdOf = (index: number) => `d${String(index).padStart(5, '0')}`;

const TARGET_GET_GROWTH = 1.1;
const TARGET_TENANT_VS_PLAIN = 1.2;
/** tenantgate's own share of the upstream's cost beyond impersonation's: none, within this machine's noise. */
const TARGET_TENANT_VS_FLOOR = 1.1;
const TARGET_OBJECTS_PER_TENANT = 3;
const TARGET_TENANTS_PER_SECOND = 200;
const TARGET_READY_P50_MS = 20;
/** The whole rig's idle CPU at rest: 10 % of a core. */
const TARGET_RIG_IDLE_MILLICORES = 100;
/** tenantgate's memory per idle tenant (index, credentials, conversion context, view specs, its objects' cached copies). */
const TARGET_HEAP_PER_TENANT_KB = 20;
/**
 * Tenants made before the heap's baseline: the first creations compile and optimize the lifecycle's and the caches'
 * code once (about 1 MB in V8's heap), which a baseline at 0 tenants would count against the tenants.
 */
const HEAP_WARM_UP_TENANTS = 20;

/** The Ns from DENSITY_TENANTS, or the plan's. */
export function tenantCountsFrom(text: string | undefined, defaults: number[]): number[] {
  if (text === undefined || text.trim() === '') return defaults;
  const counts = text.split(',').map((part) => Number(part.trim()));
  const valid = counts.every((n, i) => Number.isInteger(n) && n >= 0 && n <= MAX_TENANTS && (i === 0 || n > counts[i - 1]!));
  if (!valid) throw new Error(`DENSITY_TENANTS=${text}: want ascending tenant counts from 0 to ${MAX_TENANTS}, e.g. 0,100,300`);
  return counts;
}

const summary = (values: number[]) => ({ p50: rounded(percentile(values, 50), 1), p99: rounded(percentile(values, 99), 1) });
const megabytes = (bytes: number) => rounded(bytes / 2 ** 20, 1);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Ready times from one watch of the Tenant API: polling each tenant would load tenantgate while it creates them. */
interface Readiness {
  /** When the tenant turned Ready (performance.now()), or null if not by `untilMs`. */
  whenReady(id: string, untilMs: number): Promise<number | null>;
  stop(): void;
}

async function watchReadiness(admin: UpstreamPool): Promise<Readiness> {
  const readyAt = new Map<string, number>();
  const waiting = new Map<string, (at: number) => void>();
  const sawReady = (tenant: Tenant) => {
    if (!isReady(tenant) || readyAt.has(tenant.metadata.name)) return;
    const now = performance.now();
    readyAt.set(tenant.metadata.name, now);
    waiting.get(tenant.metadata.name)?.(now);
  };
  let started: () => void;
  const watching = new Promise<void>((resolve) => (started = resolve));
  const stop = watchUpstream(admin, TENANTS_PATH, {
    onEvent: (event) => sawReady(event.object as unknown as Tenant),
    // (Re)started from a list: what turned Ready while the watch was away is in it.
    onResync: () => {
      started();
      upstreamJson(admin, 'GET', TENANTS_PATH).then(
        (list) => {
          for (const tenant of (list.body?.items ?? []) as Tenant[]) sawReady(tenant);
        },
        () => {}, // the watch itself tries again
      );
    },
  });
  await watching;
  return {
    whenReady: (id, untilMs) =>
      new Promise((resolve) => {
        const known = readyAt.get(id);
        if (known !== undefined) return resolve(known);
        const timer = setTimeout(() => settle(null), Math.max(0, untilMs - performance.now()));
        const settle = (at: number | null) => {
          clearTimeout(timer);
          waiting.delete(id);
          resolve(at);
        };
        waiting.set(id, settle);
      }),
    stop,
  };
}

interface CreationStep {
  from: number;
  to: number;
  created: number;
  ready: number;
  notReadyInTime: number;
  createErrors: number;
  /** Why creation stopped before `to`: the scenario's time budget, or the Tenant API refusing; null when it got there. */
  stoppedBy: 'time budget' | 'create errors' | null;
  /** The index the next tenant's id is made from (ids of refused creates are not used again). */
  nextIndex: number;
  seconds: number;
  tenantsPerSecond: number;
  createToReadyMs: { p50: number; p99: number };
  concurrency: number;
}

/** Tenants `from` .. `to - 1`, CREATE_CONCURRENCY in flight, each from its POST until its Ready event; none after `deadline`. */
async function createTenants(
  admin: UpstreamPool,
  readiness: Readiness,
  from: number,
  to: number,
  deadline: number,
  graceMs: number,
): Promise<{ step: CreationStep; readyMs: number[] }> {
  const started = performance.now();
  const readyMs: number[] = [];
  let next = from;
  let notReadyInTime = 0;
  let createErrors = 0;
  let lastReady = started;
  const worker = async () => {
    while (next < to && performance.now() < deadline && createErrors < CREATE_ERRORS_LIMIT) {
      const id = tenantIdOf(next++);
      const posted = performance.now();
      const answer = await upstreamJson(admin, 'POST', TENANTS_PATH, {
        apiVersion: TENANT_API_VERSION,
        kind: 'Tenant',
        metadata: { name: id },
        spec: {},
      }).catch((error: Error) => ({ status: 0, body: error.message }));
      if (answer.status !== 201) {
        createErrors++;
        continue;
      }
      const readyAt = await readiness.whenReady(id, Math.min(posted + READY_WITHIN_MS, deadline + graceMs));
      if (readyAt === null) notReadyInTime++;
      else {
        readyMs.push(readyAt - posted);
        lastReady = Math.max(lastReady, readyAt);
      }
    }
  };
  await Promise.all(Array.from({ length: CREATE_CONCURRENCY }, worker));
  const seconds = (lastReady - started) / 1000;
  const created = readyMs.length + notReadyInTime;
  const step: CreationStep = {
    from,
    to,
    created,
    ready: readyMs.length,
    notReadyInTime,
    createErrors,
    stoppedBy: next >= to ? null : createErrors >= CREATE_ERRORS_LIMIT ? 'create errors' : 'time budget',
    nextIndex: next,
    seconds: rounded(seconds, 1),
    tenantsPerSecond: seconds > 0 ? rounded(readyMs.length / seconds, 1) : 0,
    createToReadyMs: summary(readyMs),
    concurrency: CREATE_CONCURRENCY,
  };
  return { step, readyMs };
}

/**
 * Waits (bounded) until kube-controller-manager gave the newest tenant's namespaces their `default` ServiceAccount and
 * root CA ConfigMap: it works through namespaces in order, so its backlog from the creation is then about done and the
 * idle figures are idle. Returns the ms waited, or null when it did not catch up in time. A tenant never used has no
 * namespaces upstream, so nothing for the controllers to do: 0.
 */
async function controllersCaughtUp(admin: UpstreamPool, upstream: UpstreamPool, tenant: string, withinMs: number): Promise<number | null> {
  const stored = await upstreamJson(admin, 'GET', `${TENANTS_PATH}/${tenant}`);
  if (stored.status === 200 && !isBorn(stored.body as Tenant)) return 0;
  const started = performance.now();
  const paths = ['default', 'kube-system', 'kube-public', 'kube-node-lease'].flatMap((namespace) => [
    `/api/v1/namespaces/${tenant}-${namespace}/serviceaccounts/default`,
    `/api/v1/namespaces/${tenant}-${namespace}/configmaps/kube-root-ca.crt`,
  ]);
  for (;;) {
    const answers = await Promise.all(paths.map((path) => upstreamJson(upstream, 'GET', path)));
    if (answers.every((answer) => answer.status === 200)) return Math.round(performance.now() - started);
    if (performance.now() - started > withinMs) return null;
    await sleep(500);
  }
}

/** GETs of one path between two readings of every process's CPU. */
interface GetRound {
  gets: number;
  wallMs: number;
  cpuMs: Record<string, number>;
}

/**
 * GETs of one ConfigMap, GET_CONCURRENCY in flight, at most `perSecond`, until `maxGets` or `seconds`; CPU read around
 * them, idle rate taken off.
 */
async function timedGets(
  session: ClientHttp2Session,
  request: CountedRequest,
  pids: Pids,
  idle: Record<string, number>,
  maxGets: number,
  seconds: number,
  perSecond: number,
): Promise<GetRound> {
  const spent = cpuMeter(pids, idle);
  const started = performance.now();
  const deadline = started + seconds * 1000;
  let gets = 0;
  while (gets < maxGets && performance.now() < deadline) {
    const batch = Math.min(GET_BATCH, maxGets - gets);
    await countedRequests(session, batch, GET_CONCURRENCY, () => request);
    gets += batch;
    const due = started + (gets / perSecond) * 1000;
    const wait = Math.min(due, deadline) - performance.now();
    if (wait > 0) await sleep(wait);
  }
  const { ms, wallMs } = spent();
  return { gets, wallMs, cpuMs: ms };
}

interface GetRun {
  gets: number;
  seconds: number;
  /** The paced rounds' rate (the same for both paths). */
  getsPerSecond: number;
  /** One round as fast as the path goes: its throughput. */
  unpacedGetsPerSecond: number;
  /** Median of the rounds' CPU per GET. */
  apiserverCpuMsPerGet: number;
  apiserverCpuMsPerGetByRound: number[];
  etcdCpuMsPerGet: number;
  tenantgateCpuMsPerGet: number;
}

function runOf(rounds: GetRound[]): Omit<GetRun, 'unpacedGetsPerSecond'> {
  const gets = rounds.reduce((sum, round) => sum + round.gets, 0);
  const wallMs = rounds.reduce((sum, round) => sum + round.wallMs, 0);
  const byRound = (name: string) => rounds.map((round) => round.cpuMs[name]! / round.gets);
  return {
    gets,
    seconds: rounded(wallMs / 1000, 2),
    getsPerSecond: Math.round((gets * 1000) / wallMs),
    apiserverCpuMsPerGet: rounded(median(byRound('kube-apiserver')), 4),
    apiserverCpuMsPerGetByRound: byRound('kube-apiserver').map((ms) => rounded(ms, 4)),
    etcdCpuMsPerGet: rounded(median(byRound('etcd')), 4),
    tenantgateCpuMsPerGet: rounded(median(byRound('tenantgate')), 4),
  };
}

/** Tenants whose first request each step times. */
const FIRST_REQUEST_SAMPLES = 5;

/** `ids`' first request (a GET of their namespace `default`) and the second, one at a time, each as the tenant's admin. */
async function firstRequests(stack: Stack, admin: UpstreamPool, ids: string[]): Promise<NonNullable<AtTenantCount['firstRequests']>> {
  const firstMs: number[] = [];
  const secondMs: number[] = [];
  for (const id of ids) {
    const path = join(stack.dir, `density-${id}.kubeconfig`);
    writeFileSync(path, await fetchKubeconfig(admin, id), { mode: 0o600 });
    const pool = new UpstreamPool(loadKubeconfig(path));
    try {
      for (const times of [firstMs, secondMs]) {
        const started = performance.now();
        const answer = await upstreamJson(pool, 'GET', '/api/v1/namespaces/default');
        if (answer.status !== 200) throw new Error(`tenant ${id}: GET namespace default answered ${answer.status}`);
        times.push(rounded(performance.now() - started, 1));
      }
    } finally {
      pool.close();
    }
  }
  return { tenants: ids, firstMs, secondMs };
}

/**
 * The ways one ConfigMap is read: as the probe tenant through tenantgate; as a plain ServiceAccount directly; the same
 * Impersonate-* headers tenantgate sends for that tenant's read, sent with tenantgate's own upstream identity straight
 * to the upstream (impersonation's own cost); and those through a bare node:http2 proxy (bench/bare-http2.ts), the
 * floor of any impersonating proxy: kube-apiserver spends more per request as fewer are in flight at once (a proxy's
 * latency lowers that), so what tenantgate itself adds upstream is the tenant path over this one.
 */
const READ_PATHS = ['tenant', 'plain', 'impersonated', 'proxied'] as const;
type ReadPath = (typeof READ_PATHS)[number];
type ReadPaths = Record<ReadPath, { credentials: ClusterCredentials; request: CountedRequest }>;

async function readPaths(stack: Stack): Promise<{ paths: ReadPaths; stop(): Promise<void> }> {
  const probe = await createTestTenant(stack, PROBE_TENANT);
  const tenantCredentials = credentialsOf(probe.kubeconfig);
  const session = connectH2(tenantCredentials);
  try {
    const created = await h2Request(session, 'POST', '/api/v1/namespaces/default/configmaps', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ metadata: { name: CONFIGMAP }, data: { greeting: 'hello' } }),
    });
    if (created.status !== 201) throw new Error(`the probe tenant's ConfigMap: ${created.status} ${created.body.slice(0, 300)}`);
  } finally {
    session.close();
  }
  // With the upstream admin's credentials, small-get's helper makes a plain ServiceAccount in the upstream's own
  // `default` (no tenant's): the ConfigMap, a Role allowing get on configmaps, its RoleBinding and a TokenRequest token.
  const admin = credentialsOf(stack.upstreamKubeconfig);
  const token = await tenantToken(admin);
  const headers = { authorization: `Bearer ${token}` };
  const namespacePath = '/api/v1/namespaces/default';
  await waitUntilServed({ name: 'direct', credentials: admin, namespacePath }, { ...headers, accept: 'application/json' });
  const path = `${namespacePath}/configmaps/${CONFIGMAP}`;
  const impersonation = upstreamRequestHeaders(
    {},
    upstreamIdentityOf({ user: 'admin', groups: [], tenant: PROBE_TENANT }, { verb: 'get', subresource: '', namespace: 'default', resource: 'configmaps' }),
    {},
  );
  const upstreamPath = `/api/v1/namespaces/${PROBE_TENANT}-default/configmaps/${CONFIGMAP}`;
  const files = stack.files;
  const proxy = await spawnBare('proxy-stream', [files.tlsCertFile, files.tlsKeyFile, files.upstreamKubeconfigPath, JSON.stringify(impersonation)]);
  const paths: ReadPaths = {
    tenant: { credentials: tenantCredentials, request: { method: 'GET', path, expect: 200 } },
    plain: { credentials: { server: admin.server, caPem: admin.caPem }, request: { method: 'GET', path, expect: 200, headers } },
    impersonated: { credentials: admin, request: { method: 'GET', path: upstreamPath, expect: 200, headers: impersonation as Record<string, string> } },
    proxied: { credentials: { server: proxy.url, caPem: files.ca.certPem }, request: { method: 'GET', path: upstreamPath, expect: 200 } },
  };
  return { paths, stop: () => stopChild(proxy.child) };
}

/**
 * Both paths after a warm-up of each, GET_ROUNDS rounds taking turns: drift in the machine's load hits both alike. Both
 * at the same rate, PACED_SHARE of the slower path's own: a Go process's CPU per request grows as its request rate falls
 * (its idle threads wake for each), so a path measured at its own lower rate would be charged for that.
 */
async function measureGets(paths: ReadPaths, pids: Pids, idle: Record<string, number>, plan: Plan): Promise<Record<ReadPath, GetRun>> {
  const names = READ_PATHS;
  const sessions = Object.fromEntries(names.map((name) => [name, connectH2(paths[name].credentials)])) as Record<ReadPath, ClientHttp2Session>;
  try {
    for (const name of names) await countedRequests(sessions[name], WARM_UP_GETS, GET_CONCURRENCY, () => paths[name].request);
    // One round each as fast as the path goes: its throughput, and the pace of the rounds measured.
    const roundGets = Math.ceil(plan.maxGets / GET_ROUNDS);
    const roundSeconds = plan.getSeconds / GET_ROUNDS;
    const unpaced: Record<ReadPath, number> = { tenant: 0, plain: 0, impersonated: 0, proxied: 0 };
    for (const name of names) {
      const round = await timedGets(sessions[name], paths[name].request, pids, idle, roundGets, roundSeconds, Number.POSITIVE_INFINITY);
      unpaced[name] = (round.gets * 1000) / round.wallMs;
    }
    const perSecond = PACED_SHARE * Math.min(...names.map((name) => unpaced[name]));
    const rounds: Record<ReadPath, GetRound[]> = { tenant: [], plain: [], impersonated: [], proxied: [] };
    for (let round = 0; round < GET_ROUNDS; round++) {
      for (const name of names) {
        rounds[name].push(await timedGets(sessions[name], paths[name].request, pids, idle, roundGets, roundSeconds, perSecond));
      }
    }
    return Object.fromEntries(names.map((name) => [name, { ...runOf(rounds[name]), unpacedGetsPerSecond: Math.round(unpaced[name]) }])) as Record<
      ReadPath,
      GetRun
    >;
  } finally {
    for (const name of names) sessions[name].close();
  }
}

interface AtTenantCount {
  tenantsWanted: number;
  /** Tenants made so far (Ready or not), the probe tenant not counted. */
  tenants: number;
  tenantsReady: number;
  creation: CreationStep | null;
  controllersCaughtUpMs: number | null;
  /** The machine's 1-minute load average as measuring began: other work on its two cores stretches every CPU figure. */
  loadavg1m: number;
  /** How long the rig took to come back to rest (TARGET_RIG_IDLE_MILLICORES) before the idle figures (null: not within the plan's wait). */
  settledAfterMs: number | null;
  idleMillicores: Record<string, number>;
  rssMb: Record<string, number>;
  /** tenantgate's V8 heap after a full collection (null: the inspector did not answer). */
  tenantgateHeapAfterGcMb: number | null;
  tenantgateHeapAfterGcBytes: number | null;
  getAsTenant: GetRun;
  getAsPlainServiceAccount: GetRun;
  /** tenantgate's upstream identity impersonating the tenant's read straight at the upstream. */
  getImpersonatedDirect: GetRun;
  /** The floor: the same through a bare node:http2 proxy. */
  getThroughBareProxy: GetRun;
  /** kube-apiserver CPU per GET, tenant path over plain path. */
  tenantVsPlain: number;
  /** Impersonation's own cost: the floor over the plain path. */
  impersonatedVsPlain: number;
  /** The tenant path over the impersonated read sent directly. */
  tenantVsImpersonated: number;
  /** What tenantgate adds to the upstream's cost beyond any impersonating proxy's: the tenant path over the floor. */
  tenantVsProxied: number;
  /** One tenant's upstream objects: the first of the N (idle since its creation), or the probe tenant at N = 0. */
  sampleTenant: string;
  sampleIsIdle: boolean;
  objectsOfSample: Footprint['byKind'];
  objectsOfSampleTotal: number;
  upstreamTotals: Footprint['clusterTotals'];
  /** Cluster-scoped objects added per tenant since the N before, from the totals. */
  clusterObjectsPerTenantSinceLast: Record<string, number>;
  unlisted: string[];
  footprintSeconds: number;
  /**
   * The first request of a few tenants never used before (the newest), and the second on the same connection: the
   * difference is the wait for the birth state written upstream. Those tenants are used from then on.
   */
  firstRequests: { tenants: string[]; firstMs: number[]; secondMs: number[] } | null;
}

const CLUSTER_ROLE_BINDINGS = 'clusterrolebindings.rbac.authorization.k8s.io';
const CLUSTER_ROLES = 'clusterroles.rbac.authorization.k8s.io';

/** tenantgate's heap after a full collection with `tenants` made: what each tenant made after it adds is measured from. */
interface HeapBaseline {
  tenants: number;
  heapUsedBytes: number;
}

function targetsOf(steps: AtTenantCount[], creations: CreationStep[], readyMs: number[], heapBaseline: HeapBaseline | null): TargetCheck[] {
  const first = steps[0]!;
  const last = steps.at(-1)!;
  const targets: TargetCheck[] = [];
  for (const [label, of] of [
    ['tenant via tenantgate', (step: AtTenantCount) => step.getAsTenant.apiserverCpuMsPerGet],
    ['plain ServiceAccount direct', (step: AtTenantCount) => step.getAsPlainServiceAccount.apiserverCpuMsPerGet],
  ] as const) {
    const growth = of(last) / of(first);
    targets.push({
      target: `kube-apiserver CPU per GET, ${label}: at ${last.tenants} tenants <= ${TARGET_GET_GROWTH}x at ${first.tenants} (${rounded(of(first), 3)} -> ${rounded(of(last), 3)} ms)`,
      value: rounded(growth, 2),
      unit: `x ${first.tenants} tenants`,
      met: growth <= TARGET_GET_GROWTH,
    });
  }
  const worst = steps.reduce((a, b) => (b.tenantVsPlain > a.tenantVsPlain ? b : a));
  targets.push({
    target:
      `kube-apiserver CPU per GET, tenant path <= ${TARGET_TENANT_VS_PLAIN}x plain path at every N (worst at ${worst.tenants} tenants; ` +
      `the same read impersonated straight at the upstream ${worst.impersonatedVsPlain}x plain there, through a bare node:http2 proxy ${rounded(worst.getThroughBareProxy.apiserverCpuMsPerGet / worst.getAsPlainServiceAccount.apiserverCpuMsPerGet, 2)}x)`,
    value: worst.tenantVsPlain,
    unit: 'x plain',
    met: worst.tenantVsPlain <= TARGET_TENANT_VS_PLAIN,
  });
  const worstOverFloor = steps.reduce((a, b) => (b.tenantVsProxied > a.tenantVsProxied ? b : a));
  targets.push({
    target: `kube-apiserver CPU per GET, tenant path <= ${TARGET_TENANT_VS_FLOOR}x a bare node:http2 proxy's with the same impersonation at every N: tenantgate adds nothing upstream beyond what any impersonating proxy costs (worst at ${worstOverFloor.tenants} tenants)`,
    value: worstOverFloor.tenantVsProxied,
    unit: 'x floor',
    met: worstOverFloor.tenantVsProxied <= TARGET_TENANT_VS_FLOOR,
  });
  const rigIdle = Object.values(last.idleMillicores).reduce((sum, millicores) => sum + millicores, 0);
  targets.push({
    target: `the rig at rest at ${last.tenants} tenants (${last.settledAfterMs === null ? 'not back at rest within the wait' : `back at rest ${Math.round(last.settledAfterMs / 1000)} s after the controllers caught up`}): idle CPU of kube-apiserver, kube-controller-manager, etcd and tenantgate together <= ${TARGET_RIG_IDLE_MILLICORES} millicores`,
    value: rounded(rigIdle, 0),
    unit: 'millicores',
    met: rigIdle <= TARGET_RIG_IDLE_MILLICORES,
  });
  if (heapBaseline !== null && last.tenantgateHeapAfterGcBytes !== null && last.tenants > heapBaseline.tenants) {
    const perTenantKb = (last.tenantgateHeapAfterGcBytes - heapBaseline.heapUsedBytes) / 1024 / (last.tenants - heapBaseline.tenants);
    targets.push({
      target: `tenantgate heap per idle tenant (after a full collection, ${heapBaseline.tenants} -> ${last.tenants} tenants) <= ${TARGET_HEAP_PER_TENANT_KB} KB`,
      value: rounded(perTenantKb, 1),
      unit: 'KB',
      met: perTenantKb <= TARGET_HEAP_PER_TENANT_KB,
    });
  }
  const idle = steps.filter((step) => step.sampleIsIdle).at(-1);
  if (idle !== undefined) {
    const at = `idle tenant ${idle.sampleTenant} at ${idle.tenants} tenants`;
    const crbs = idle.objectsOfSample[CLUSTER_ROLE_BINDINGS] ?? 0;
    const roles = idle.objectsOfSample[CLUSTER_ROLES] ?? 0;
    targets.push({
      target: `upstream objects per ${at} <= ${TARGET_OBJECTS_PER_TENANT}`,
      value: idle.objectsOfSampleTotal,
      unit: 'objects',
      met: idle.objectsOfSampleTotal <= TARGET_OBJECTS_PER_TENANT,
    });
    targets.push({ target: `ClusterRoleBindings per ${at} = 0`, value: crbs, unit: 'ClusterRoleBindings', met: crbs === 0 });
    targets.push({ target: `ClusterRoles per ${at} = 0`, value: roles, unit: 'ClusterRoles', met: roles === 0 });
  }
  if (readyMs.length > 0) {
    const seconds = creations.reduce((sum, step) => sum + step.seconds, 0);
    const rate = seconds > 0 ? readyMs.length / seconds : 0;
    const p50 = percentile(readyMs, 50);
    targets.push({
      target: `tenant creation >= ${TARGET_TENANTS_PER_SECOND} tenants/s (${CREATE_CONCURRENCY} in flight, to Ready)`,
      value: rounded(rate, 1),
      unit: 'tenants/s',
      met: rate >= TARGET_TENANTS_PER_SECOND,
    });
    targets.push({ target: `create -> Ready p50 <= ${TARGET_READY_P50_MS} ms`, value: rounded(p50, 1), unit: 'ms', met: p50 <= TARGET_READY_P50_MS });
  }
  return targets;
}

function chartsOf(steps: AtTenantCount[]): Chart[] {
  const perGet: Record<string, number> = {};
  const idle: Record<string, number> = {};
  for (const step of steps) {
    perGet[`${step.tenants} tenants, tenant via tenantgate`] = step.getAsTenant.apiserverCpuMsPerGet;
    perGet[`${step.tenants} tenants, plain ServiceAccount`] = step.getAsPlainServiceAccount.apiserverCpuMsPerGet;
    perGet[`${step.tenants} tenants, impersonated directly`] = step.getImpersonatedDirect.apiserverCpuMsPerGet;
    perGet[`${step.tenants} tenants, bare proxy impersonating (floor)`] = step.getThroughBareProxy.apiserverCpuMsPerGet;
    for (const [name, millicores] of Object.entries(step.idleMillicores)) idle[`${step.tenants} tenants, ${name}`] = millicores;
  }
  const charts: Chart[] = [
    { title: 'kube-apiserver CPU per GET of one ConfigMap, by tenants', unit: 'ms', bars: perGet },
    { title: 'Idle CPU by tenants', unit: 'millicores', bars: idle },
  ];
  const heaps = Object.fromEntries(
    steps.filter((step) => step.tenantgateHeapAfterGcMb !== null).map((step) => [`${step.tenants} tenants`, step.tenantgateHeapAfterGcMb!]),
  );
  if (Object.keys(heaps).length > 0) charts.push({ title: 'tenantgate heap after a full collection, by tenants', unit: 'MB', bars: heaps });
  const sample = steps.filter((step) => step.sampleIsIdle).at(-1);
  if (sample !== undefined)
    charts.push({ title: `Upstream objects of one idle tenant at ${sample.tenants} tenants, by kind`, unit: 'objects', bars: sample.objectsOfSample });
  return charts;
}

async function run({ quick, log }: ScenarioOptions): Promise<ScenarioResult> {
  const plan = quick ? QUICK : FULL;
  const tenantCounts = tenantCountsFrom(process.env.DENSITY_TENANTS, plan.tenantCounts);
  const scenarioStarted = performance.now();
  const budgetEnds = scenarioStarted + plan.budgetMs;
  const stack = await startStack({ gatewayNodeFlags: [...gatewayProfileFlags(), ...INSPECTOR_FLAGS] });
  const inspector = inspectorUrlOf(stack.gatewayLogs);
  const admin = new UpstreamPool(loadKubeconfig(stack.adminKubeconfig));
  const upstream = new UpstreamPool(loadKubeconfig(stack.upstreamKubeconfig));
  const discovery = new DiscoveryCache(upstream);
  let readiness: Readiness | undefined;
  let stopReads: (() => Promise<void>) | undefined;
  try {
    const pid = (name: string) => stack.rig.processes.find((p) => p.name === name)!.pid;
    const pids: Pids = {
      'kube-apiserver': pid('kube-apiserver'),
      'kube-controller-manager': pid('kube-controller-manager'),
      etcd: pid('etcd'),
      tenantgate: stack.gateway.pid!,
    };
    const reads = await readPaths(stack);
    stopReads = reads.stop;
    const paths = reads.paths;
    readiness = await watchReadiness(admin);
    log(
      `stack, probe tenant ${PROBE_TENANT} and plain ServiceAccount ready in ${Math.round((performance.now() - scenarioStarted) / 1000)} s; Ns ${tenantCounts.join(', ')}`,
    );
    const steps: AtTenantCount[] = [];
    const creations: CreationStep[] = [];
    const readyMs: number[] = [];
    const skipped: number[] = [];
    let tenants = 0;
    let tenantsReady = 0;
    let nextIndex = 0;
    let previousTotals: Record<string, number> | null = null;
    let previousTenants = 0;
    let heapBaseline: HeapBaseline | null = null;
    /** `count` more tenants, taken into the run's counts. */
    const tenantReadiness = readiness;
    const createMore = async (count: number): Promise<CreationStep> => {
      const made = await createTenants(admin, tenantReadiness, nextIndex, nextIndex + count, budgetEnds - plan.measureReserveMs, plan.readyGraceMs);
      nextIndex = made.step.nextIndex;
      creations.push(made.step);
      readyMs.push(...made.readyMs);
      tenants += made.step.created;
      tenantsReady += made.step.ready;
      return made.step;
    };
    for (const wanted of tenantCounts) {
      if (performance.now() + plan.measureReserveMs > budgetEnds) {
        skipped.push(wanted);
        continue;
      }
      let creation: CreationStep | null = null;
      if (heapBaseline === null && inspector !== null && wanted - tenants > 2 * HEAP_WARM_UP_TENANTS) {
        await createMore(HEAP_WARM_UP_TENANTS);
        await controllersCaughtUp(admin, upstream, tenantIdOf(nextIndex - 1), plan.controllersCatchUpMs);
        const heap = await heapAfterCollection(inspector).catch((error: Error) => (log(`  tenantgate heap not read: ${error.message}`), null));
        if (heap !== null) heapBaseline = { tenants, heapUsedBytes: heap.heapUsedBytes };
        log(`${tenants} tenants made to warm tenantgate's code up; heap after a full collection ${heap === null ? '?' : megabytes(heap.heapUsedBytes)} MB`);
      }
      if (wanted > tenants) {
        creation = await createMore(wanted - tenants);
        log(
          `${creation.created} tenants made (${creation.ready} Ready, ${creation.notReadyInTime} not in time, ${creation.createErrors} create errors${creation.stoppedBy === null ? '' : `, stopped by the ${creation.stoppedBy}`}): ` +
            `${creation.tenantsPerSecond} tenants/s, create -> Ready p50 ${creation.createToReadyMs.p50} ms, p99 ${creation.createToReadyMs.p99} ms`,
        );
      }
      const newest = nextIndex > 0 ? tenantIdOf(nextIndex - 1) : PROBE_TENANT;
      const controllersCaughtUpMs = await controllersCaughtUp(admin, upstream, newest, plan.controllersCatchUpMs);
      const loadavg1m = os.loadavg()[0]!;
      const settling = await untilCpuAtMost(pids, TARGET_RIG_IDLE_MILLICORES, plan.settleMs);
      const idle = await idleCpuRate(pids, plan.idleSeconds);
      const rssMb = Object.fromEntries(Object.entries(pids).map(([name, p]) => [name, megabytes(rssOf(p))]));
      const heap: HeapReading | null =
        inspector === null ? null : await heapAfterCollection(inspector).catch((error: Error) => (log(`  tenantgate heap not read: ${error.message}`), null));
      const {
        tenant: getAsTenant,
        plain: getAsPlainServiceAccount,
        impersonated: getImpersonatedDirect,
        proxied: getThroughBareProxy,
      } = await measureGets(paths, pids, idle, plan);
      const footprintStarted = performance.now();
      const sampleTenant = tenants > 0 ? tenantIdOf(0) : PROBE_TENANT;
      const footprint = await footprintOf(upstream, discovery, sampleTenant);
      const step: AtTenantCount = {
        tenantsWanted: wanted,
        tenants,
        tenantsReady,
        creation,
        controllersCaughtUpMs,
        loadavg1m: rounded(loadavg1m, 2),
        settledAfterMs: settling.reached ? settling.waitedMs : null,
        idleMillicores: Object.fromEntries(Object.entries(idle).map(([name, ms]) => [name, rounded(ms, 1)])),
        rssMb,
        tenantgateHeapAfterGcMb: heap === null ? null : megabytes(heap.heapUsedBytes),
        tenantgateHeapAfterGcBytes: heap?.heapUsedBytes ?? null,
        getAsTenant,
        getAsPlainServiceAccount,
        getImpersonatedDirect,
        getThroughBareProxy,
        tenantVsPlain: rounded(getAsTenant.apiserverCpuMsPerGet / getAsPlainServiceAccount.apiserverCpuMsPerGet, 2),
        impersonatedVsPlain: rounded(getImpersonatedDirect.apiserverCpuMsPerGet / getAsPlainServiceAccount.apiserverCpuMsPerGet, 2),
        tenantVsImpersonated: rounded(getAsTenant.apiserverCpuMsPerGet / getImpersonatedDirect.apiserverCpuMsPerGet, 2),
        tenantVsProxied: rounded(getAsTenant.apiserverCpuMsPerGet / getThroughBareProxy.apiserverCpuMsPerGet, 2),
        sampleTenant,
        sampleIsIdle: sampleTenant !== PROBE_TENANT,
        objectsOfSample: footprint.byKind,
        objectsOfSampleTotal: footprint.total,
        upstreamTotals: footprint.clusterTotals,
        clusterObjectsPerTenantSinceLast: previousTotals === null ? {} : perTenantGrowth(previousTotals, footprint.clusterTotals, tenants - previousTenants),
        unlisted: footprint.unlisted,
        footprintSeconds: rounded((performance.now() - footprintStarted) / 1000, 1),
        // (After the footprint: the sample tenant, the first made, stays idle.)
        firstRequests:
          tenants > FIRST_REQUEST_SAMPLES
            ? await firstRequests(
                stack,
                admin,
                Array.from({ length: FIRST_REQUEST_SAMPLES }, (_, i) => tenantIdOf(nextIndex - 1 - i)),
              )
            : null,
      };
      steps.push(step);
      previousTotals = footprint.clusterTotals;
      previousTenants = tenants;
      log(
        `${tenants} tenants: kube-apiserver CPU per GET ${getAsTenant.apiserverCpuMsPerGet} ms as a tenant, ${getAsPlainServiceAccount.apiserverCpuMsPerGet} ms as a plain ServiceAccount, ` +
          `${getImpersonatedDirect.apiserverCpuMsPerGet} ms impersonated directly, ${getThroughBareProxy.apiserverCpuMsPerGet} ms through a bare proxy (${getAsPlainServiceAccount.unpacedGetsPerSecond} direct GETs/s unpaced; all measured at ${getAsPlainServiceAccount.getsPerSecond}/s); ${step.upstreamTotals[CLUSTER_ROLE_BINDINGS]} ClusterRoleBindings, ${step.upstreamTotals[CLUSTER_ROLES]} ClusterRoles, ${step.upstreamTotals.namespaces} namespaces upstream`,
      );
      if (step.firstRequests !== null) {
        log(
          `  first requests of ${step.firstRequests.tenants.join(', ')}: ${step.firstRequests.firstMs.join(', ')} ms (the second: ${step.firstRequests.secondMs.join(', ')} ms)`,
        );
      }
      log(
        `  ${sampleTenant}${step.sampleIsIdle ? ' (idle)' : ' (probe)'} has ${footprint.total} upstream objects: ${Object.entries(footprint.byKind)
          .map(([kind, n]) => `${kind} ${n}`)
          .join(', ')}`,
      );
      log(
        `  ${step.settledAfterMs === null ? `not at rest within ${plan.settleMs} ms` : `at rest after ${step.settledAfterMs} ms`}; idle millicores ${JSON.stringify(step.idleMillicores)}, RSS MB ${JSON.stringify(rssMb)}, tenantgate heap after a full collection ${step.tenantgateHeapAfterGcMb} MB, load average ${step.loadavg1m}${controllersCaughtUpMs === null ? '; kube-controller-manager had not caught up' : ''}`,
      );
      if (creation !== null && creation.stoppedBy !== null) {
        skipped.push(...tenantCounts.filter((n) => n > wanted));
        break;
      }
    }
    if (skipped.length > 0) log(`not reached within the time budget: ${skipped.join(', ')} tenants`);
    return {
      scenario: 'density',
      figures: {
        plan: { ...plan, tenantCounts },
        probeTenant: PROBE_TENANT,
        skippedTenantCounts: skipped,
        getConcurrency: GET_CONCURRENCY,
        getRounds: GET_ROUNDS,
        cpuSource: `/proc/<pid>/stat utime+stime, ${CPU_TICK_MS} ms resolution, each process's idle rate taken off the per-GET figures`,
        heapBaseline,
        steps,
      },
      targets: targetsOf(steps, creations, readyMs, heapBaseline),
      charts: chartsOf(steps),
    };
  } finally {
    readiness?.stop();
    await stopReads?.();
    admin.close();
    upstream.close();
    await stack.stop();
  }
}

export const densityScenario: Scenario = {
  name: 'density',
  description:
    "What each tenant costs the shared upstream: one idle tenant's upstream objects, kube-apiserver CPU per GET (tenant and plain), idle CPU and RSS, at growing tenant counts",
  run,
};

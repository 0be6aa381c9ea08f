// Watch fan-out: many tenants × many HTTP/2 watchers and a steady rate of upstream ConfigMap writes; delivery latency
// from the write to the client's receipt, RSS per idle watcher, CPU per delivered event and the upstream's open watches,
// for the direct upstream, tenantgate with its watch cache and tenantgate --watch-cache=false, in the same run. Beside
// it two of issue 16's cases: 100 watchers of one namespace at 100 writes/s, and a burst of 500 watch opens by one
// tenant. Loopback only; every phase is bounded in count and time and never retried forever.
import type { ChildProcess } from 'node:child_process';
import http2, { type ClientHttp2Session, type ClientHttp2Stream, type IncomingHttpHeaders } from 'node:http2';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { issueCertificate, newRsaKeyPair } from '../../lib/auth/pki.ts';
import { TENANT_LABEL } from '../../lib/convert/prefix.ts';
import { tenantCertificateSerial } from '../../lib/tenants/credentials.ts';
import { isReady } from '../../lib/tenants/conditions.ts';
import { TENANT_API_VERSION, TENANTS_PATH, type Tenant } from '../../lib/tenants/tenant.ts';
import { upstreamJson } from '../../lib/upstream/client.ts';
import { loadKubeconfig, type ClusterCredentials } from '../../lib/upstream/kubeconfig.ts';
import { UpstreamPool } from '../../lib/upstream/pool.ts';
import { sumMetric } from '../../test/helpers/http.ts';
import { request } from '../../test/helpers/load.ts';
import { spawnGateway, startStack, stopChild, type Stack } from '../../test/helpers/stack.ts';
import { firstRequest } from '../../test/helpers/tenants.ts';
import { rssOf } from '../load/cpu.ts';
import { heapAfterCollection, INSPECTOR_FLAGS, inspectorUrlOf, type HeapReading } from '../load/heap.ts';
import { idleStreamFloor, type IdleStreamFloor } from '../load/idle-stream-floor.ts';
import { runBounded } from '../load/run-bounded.ts';
import { watchCacheMetrics, watchCacheOffFlags, type WatchCacheMetrics } from '../load/watch-cache.ts';
import type { Chart, Scenario, ScenarioOptions, ScenarioResult, TargetCheck } from '../scenario.ts';

export interface FanoutSize {
  tenants: number;
  watchersPerTenant: number;
  /** Upstream ConfigMap writes per second across all tenants (each reaches every watcher of its tenant). */
  eventsPerSecond: number;
  steadySeconds: number;
}

/** Issue 16's two side-by-side cases, on one tenant. */
export interface SideCasesSize {
  /** Watchers of the tenant's `default` namespace, and the writes per second to its ConfigMaps (each reaches all). */
  namespaceWatchers: number;
  namespaceWritesPerSecond: number;
  namespaceSteadySeconds: number;
  /** ConfigMaps the writes go round (one object written 100 times a second would measure etcd's contention on it). */
  namespaceConfigMaps: number;
  /** Watch opens the tenant sends at once. */
  burstWatches: number;
}

export const FULL_SIZE: FanoutSize = { tenants: 1000, watchersPerTenant: 10, eventsPerSecond: 1000, steadySeconds: 20 };
export const QUICK_SIZE: FanoutSize = { tenants: 20, watchersPerTenant: 10, eventsPerSecond: 100, steadySeconds: 4 };
export const FULL_SIDE_CASES: SideCasesSize = {
  namespaceWatchers: 100,
  namespaceWritesPerSecond: 100,
  namespaceSteadySeconds: 10,
  namespaceConfigMaps: 10,
  burstWatches: 500,
};
export const QUICK_SIDE_CASES: SideCasesSize = {
  namespaceWatchers: 100,
  namespaceWritesPerSecond: 100,
  namespaceSteadySeconds: 2,
  namespaceConfigMaps: 10,
  burstWatches: 500,
};

const CONFIGMAP = 'fanout';
const NAMESPACE_CONFIGMAP_PREFIX = 'fanout-ns-';
/** The data key carrying the write's timestamp (ms since the epoch); found in each event by indexOf, not parsed. */
const SENT_AT_KEY = 'fanoutSentAt';
const SENT_AT_MARKER = `"${SENT_AT_KEY}":"`;
const TENANT_CREATE_CONCURRENCY = 16;
const UPSTREAM_WRITE_CONCURRENCY = 32;
const WATCH_OPEN_CONCURRENCY = 200;
/** Watches per client connection at most: kube-apiserver allows 100 streams on one. */
const WATCHES_PER_SESSION = 50;
/** Writes in flight at most during the steady phase: a slow upstream lowers the rate achieved, it does not pile up. */
const MAX_WRITES_INFLIGHT = 200;
const WATCH_OPEN_TIMEOUT_MS = 30_000;
const WATCH_OPEN_ATTEMPTS = 5;
/** Opening stops after this many failures: past a limit every further watch would wait out its timeout too. */
const WATCH_OPEN_GIVE_UP_AFTER = WATCH_OPEN_CONCURRENCY;
const SETTLE_MS = 2000;
/** How long deliveries may arrive after the writes stop (on a loaded machine seconds late: late is not lost). */
const LATE_DELIVERIES_WAIT_MS = { quick: 5_000, full: 20_000 };
const CLOCK_TICKS_PER_SECOND = 100; // Linux USER_HZ
/** Issue 16's targets. */
const TARGET_P99_MS = 50;
const TARGET_P99_VS_DIRECT = 0.1;
const TARGET_RSS_PER_WATCHER_BYTES = 4096;

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
}

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat. */
export function cpuSecondsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces): state is [0], utime [11], stime [12].
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}

const tenantIdOf = (index: number) => `wf${String(index).padStart(4, '0')}`;
const upstreamNamespaceOf = (id: string) => `${id}-default`;

interface TenantsCreated {
  ready: Tenant[];
  createSeconds: number;
  readySeconds: number;
  /** From Ready until every tenant's first request was answered (each one's birth state written upstream). */
  bornSeconds?: number;
}

/** Tenants through the Tenant API, as an administrator makes them; ready once the lifecycle controller bootstrapped them. */
async function createTenants(stack: Stack, count: number, readyWithinMs: number, log: (line: string) => void): Promise<TenantsCreated> {
  const admin = new UpstreamPool(loadKubeconfig(stack.adminKubeconfig));
  try {
    const started = performance.now();
    await runBounded(count, TENANT_CREATE_CONCURRENCY, async (index) => {
      const id = tenantIdOf(index);
      const answer = await upstreamJson(admin, 'POST', TENANTS_PATH, { apiVersion: TENANT_API_VERSION, kind: 'Tenant', metadata: { name: id }, spec: {} });
      if (answer.status !== 201) throw new Error(`creating tenant ${id}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`);
    });
    const createSeconds = (performance.now() - started) / 1000;
    log(`watch-fanout: ${count} tenants created in ${createSeconds.toFixed(1)} s; waiting until they are Ready (at most ${readyWithinMs / 1000} s)`);
    const deadline = started + readyWithinMs;
    for (;;) {
      const list = await upstreamJson(admin, 'GET', TENANTS_PATH);
      if (list.status !== 200) throw new Error(`listing tenants: ${list.status}`);
      const ready = (list.body.items as Tenant[]).filter(isReady);
      if (ready.length >= count || performance.now() > deadline) {
        ready.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
        return { ready, createSeconds, readySeconds: (performance.now() - started) / 1000 };
      }
      await sleep(500);
    }
  } finally {
    admin.close();
  }
}

/** The leg's memory after a forced full collection, through its inspector (null: none, or it did not answer). */
async function collectedHeapOf(leg: Leg, log: (line: string) => void): Promise<HeapReading | null> {
  if (leg.inspectorUrl === null) return null;
  return heapAfterCollection(leg.inspectorUrl).catch((error: Error) => (log(`${leg.name}: heap not read: ${error.message}`), null));
}

/** A tenantgate's V8 heap and the memory outside it (Buffers, nghttp2 and OpenSSL state), from its metrics listener. */
async function gatewayHeap(metricsUrl: string): Promise<{ heapUsedBytes: number; externalBytes: number }> {
  const text = await (await fetch(metricsUrl)).text(); // the listener logs its URL with /metrics
  const sample = (name: string) => Number(new RegExp(`^tenantgate_${name} (\\S+)`, 'm').exec(text)?.[1] ?? NaN);
  return { heapUsedBytes: sample('nodejs_heap_size_used_bytes'), externalBytes: sample('nodejs_external_memory_bytes') };
}

/** Open watches the upstream serves now, from kube-apiserver's own metrics (apiserver_longrunning_requests, verb WATCH). */
interface UpstreamWatches {
  all: number;
  byResource: Record<string, number>;
}

async function upstreamWatches(admin: UpstreamPool): Promise<UpstreamWatches> {
  const answer = await request(admin, 'GET', '/metrics');
  if (answer.status !== 200) throw new Error(`kube-apiserver /metrics: ${answer.status}`);
  const byResource: Record<string, number> = {};
  for (const match of answer.body.matchAll(/^apiserver_longrunning_requests\{([^}]*)\} (\S+)$/gm)) {
    const labels = match[1]!;
    if (!labels.includes('verb="WATCH"')) continue;
    const resource = /(?:^|,)resource="([^"]*)"/.exec(labels)?.[1] ?? '';
    byResource[resource] = (byResource[resource] ?? 0) + Number(match[2]);
  }
  return { all: sumMetric(answer.body, 'apiserver_longrunning_requests', { verb: 'WATCH' }), byResource };
}

/** Watches per resource in `after` beyond `before` (resources with none added left out). */
function watchesAdded(before: UpstreamWatches, after: UpstreamWatches): Record<string, number> {
  const added: Record<string, number> = {};
  for (const [resource, count] of Object.entries(after.byResource)) {
    const more = count - (before.byResource[resource] ?? 0);
    if (more !== 0) added[resource] = more;
  }
  return added;
}

type LegName = 'direct' | 'tenantgate' | 'watch-cache-off';

/** Where a leg's watchers connect, what they watch, and where the one-namespace case writes. */
interface Leg {
  name: LegName;
  /** The process whose memory and CPU are measured. */
  pid: number;
  /** Its metrics listener, for a tenantgate: where per-watcher memory goes (heap or outside it), its cache's figures. */
  metricsUrl: string | null;
  /** Its inspector, for a tenantgate: memory read after a forced full collection (null: none). */
  inspectorUrl: string | null;
  credentialsOf(tenant: string): ClusterCredentials;
  watchPathOf(tenant: string): string;
  /** The one-namespace case's writes: as the tenant through this tenantgate, or as the administrator upstream (direct). */
  namespaceWriter(tenant: string): { pool: UpstreamPool; pathOf(configMap: string): string; shared: boolean };
  /** Open upstream watches before this leg's process started (a tenantgate started for the leg only), else null. */
  upstreamWatchesBeforeProcess: UpstreamWatches | null;
}

interface FanoutFigures {
  leg: LegName;
  watchersWanted: number;
  watchersOpened: number;
  watchersSynced: number;
  watchOpenFailures: Record<string, number>;
  openSeconds: number;
  rssBeforeConnectionsBytes: number;
  rssWithConnectionsBytes: number;
  rssWithIdleWatchersBytes: number;
  /** (RSS with idle watchers − RSS with the same connections and no watcher) / watchers */
  rssPerIdleWatcherBytes: number;
  /** (RSS with idle watchers − RSS before any connection) / watchers: the connections' share included */
  rssPerIdleWatcherWithConnectionsBytes: number;
  /** V8 heap used and memory outside the heap, per idle watcher (a tenantgate only; NaN for the direct upstream) */
  heapUsedPerIdleWatcherBytes: number;
  externalPerIdleWatcherBytes: number;
  /**
   * The same three read after a forced full collection on both sides (a tenantgate only): garbage and the young
   * generation's slack left out, which a plain RSS delta of one run counts or not by chance.
   */
  rssPerIdleWatcherAfterGcBytes: number;
  heapUsedPerIdleWatcherAfterGcBytes: number;
  externalPerIdleWatcherAfterGcBytes: number;
  writeRoundTripP50Ms: number;
  writeRoundTripP99Ms: number;
  writesIssued: number;
  writesFailed: number;
  achievedEventsPerSecond: number;
  deliveriesExpected: number;
  deliveriesReceived: number;
  deliveryP50Ms: number;
  deliveryP90Ms: number;
  deliveryP99Ms: number;
  deliveryMaxMs: number;
  processCpuCores: number;
  /** CPU of the measured process from the first write until the last delivery arrived (or the wait ended), per 1,000 deliveries */
  processCpuSecondsPer1000Deliveries: number;
  benchClientCpuCores: number;
  steadySeconds: number;
  /** kube-apiserver's open watches: before this leg's tenantgate started (one started for the leg), before its watchers opened, halfway through the steady phase */
  upstreamWatchesBeforeProcess: number | null;
  upstreamWatchesBeforeWatchers: number;
  upstreamWatchesSteady: number;
  /** Steady − before this leg's tenantgate started (one started for the leg), else steady − before its watchers opened */
  upstreamWatchesAdded: number;
  /** The same per resource: what the leg watches upstream (a tenantgate's own watches included) */
  upstreamWatchesAddedByResource: Record<string, number>;
  /** A tenantgate started for the leg: its upstream watches before any watcher opened, per resource (its own work: reconcile, a cache) */
  upstreamWatchesIdleByResource: Record<string, number> | null;
  /** The tenantgate's watch cache, with idle watchers and after the steady phase (null: no cache) */
  watchCacheIdle: WatchCacheMetrics | null;
  watchCacheAfter: WatchCacheMetrics | null;
  /** Cache bytes per 1,000 cached objects (the whole cache, every resource) */
  watchCacheBytesPer1000Objects: number;
}

/** A watcher's stream: counts its events, and for each write of the steady phase records write-to-receipt latency. */
class WatchLatencies {
  /** Write timestamps before this are the initial state (the ADDED event of a fresh watch), not deliveries to time. */
  steadyFrom = Infinity;
  latencies = new Float64Array(1024);
  count = 0;
  synced = 0;

  record(latencyMs: number): void {
    if (this.count === this.latencies.length) {
      const grown = new Float64Array(this.latencies.length * 2);
      grown.set(this.latencies);
      this.latencies = grown;
    }
    this.latencies[this.count++] = latencyMs;
  }

  /** Feeds one watch stream's text to the counters; returns the function to pass its chunks to. */
  reader(onSynced: () => void): (chunk: string) => void {
    let carry = '';
    let synced = false;
    return (chunk) => {
      const receivedAt = now();
      const text = carry === '' ? chunk : carry + chunk;
      let start = 0;
      let newline: number;
      while ((newline = text.indexOf('\n', start)) !== -1) {
        const marker = text.indexOf(SENT_AT_MARKER, start);
        if (marker !== -1 && marker < newline) {
          const from = marker + SENT_AT_MARKER.length;
          const sentAt = Number(text.slice(from, text.indexOf('"', from)));
          if (sentAt >= this.steadyFrom) this.record(receivedAt - sentAt);
          else if (!synced) {
            synced = true;
            this.synced++;
            onSynced();
          }
        }
        start = newline + 1;
      }
      carry = start === text.length ? '' : text.slice(start);
    };
  }
}

function connect(credentials: ClusterCredentials): Promise<ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(credentials.server, { ca: credentials.caPem, cert: credentials.certPem, key: credentials.keyPem });
    session.once('error', reject);
    // A first request completes the server's per-connection state (TLS, settings, its session objects).
    const probe = session.request({ ':path': '/version' });
    probe.on('error', reject);
    probe.resume();
    probe.on('end', () => {
      session.off('error', reject);
      session.on('error', () => {}); // streams see their own errors
      resolve(session);
    });
  });
}

/** Opens one watch and resolves once its response headers say 200; a 429 is retried after Retry-After. */
async function openWatch(session: ClientHttp2Session, path: string, onChunk: (chunk: string) => void): Promise<ClientHttp2Stream> {
  for (let attempt = 1; ; attempt++) {
    const stream = session.request({ ':path': path, accept: 'application/json' });
    stream.setEncoding('utf8');
    const outcome = await new Promise<{ status: number; retryAfter: number }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no response headers within ${WATCH_OPEN_TIMEOUT_MS / 1000} s`)), WATCH_OPEN_TIMEOUT_MS);
      stream.once('response', (headers: IncomingHttpHeaders) => {
        clearTimeout(timer);
        resolve({ status: Number(headers[':status']), retryAfter: Number(headers['retry-after'] ?? 1) });
      });
      stream.once('error', (error: Error) => {
        clearTimeout(timer);
        reject(error);
      });
    }).catch((error: Error) => {
      stream.close();
      throw error;
    });
    if (outcome.status === 200) {
      stream.on('data', onChunk);
      stream.on('error', () => {}); // ends when the phase closes its sessions
      return stream;
    }
    stream.close();
    if (outcome.status !== 429 || attempt >= WATCH_OPEN_ATTEMPTS) throw new Error(`HTTP ${outcome.status}`);
    await sleep(Math.min(5, outcome.retryAfter) * 1000);
  }
}

interface WritesDone {
  issued: number;
  failed: number;
  /** Answers by HTTP status (0: the stream failed without one) */
  byStatus: Record<string, number>;
  seconds: number;
  roundTripP50Ms: number;
  roundTripP99Ms: number;
}

/** Merge-patches at a steady rate, each carrying its write time: write `i` goes where `target(i)` says. */
async function writeSteadily(
  target: (index: number) => { pool: UpstreamPool; path: string },
  eventsPerSecond: number,
  steadySeconds: number,
): Promise<WritesDone> {
  // The write's own round trip: how much of a delivery's latency the write path takes before any watch sees it.
  const roundTrips = new Float64Array(Math.ceil(eventsPerSecond * steadySeconds) + 1);
  const byStatus: Record<string, number> = {};
  let issued = 0;
  let failed = 0;
  let inflight = 0;
  let answered = 0;
  const started = performance.now();
  const endsAt = started + steadySeconds * 1000;
  const write = (index: number) => {
    inflight++;
    const sentAt = now();
    const body = `{"data":{"${SENT_AT_KEY}":"${sentAt.toFixed(3)}"}}`;
    const { pool, path } = target(index);
    const stream = pool.request('PATCH', path, { 'content-type': 'application/merge-patch+json' }, false);
    let status = 0;
    stream.once('response', (headers) => {
      status = Number(headers[':status']);
      if (answered < roundTrips.length) roundTrips[answered++] = now() - sentAt;
    });
    stream.on('error', () => {});
    stream.resume();
    stream.once('close', () => {
      inflight--;
      byStatus[status] = (byStatus[status] ?? 0) + 1;
      if (status !== 200) failed++;
    });
    stream.end(body);
  };
  while (performance.now() < endsAt) {
    const due = Math.floor(((performance.now() - started) / 1000) * eventsPerSecond);
    while (issued < due && inflight < MAX_WRITES_INFLIGHT) write(issued++);
    await sleep(2);
  }
  const seconds = (performance.now() - started) / 1000;
  while (inflight > 0) await sleep(5);
  const sorted = roundTrips.slice(0, answered).sort();
  return { issued, failed, byStatus, seconds, roundTripP50Ms: round(percentile(sorted, 50)), roundTripP99Ms: round(percentile(sorted, 99)) };
}

/** Open watchers of some tenants, each on one of its tenant's connections; close() ends every connection. */
interface Watchers {
  latencies: WatchLatencies;
  opened: number;
  failures: Record<string, number>;
  openSeconds: number;
  close(): void;
}

async function connectAll(leg: Leg, tenants: string[], sessionsPerTenant: number): Promise<ClientHttp2Session[]> {
  return runBounded(tenants.length * sessionsPerTenant, WATCH_OPEN_CONCURRENCY, (index) => connect(leg.credentialsOf(tenants[index % tenants.length]!)));
}

/** Opens `perTenant` watchers for every tenant on `sessions` (connectAll's), and waits until each has its initial event. */
async function openWatchers(leg: Leg, tenants: string[], perTenant: number, sessions: ClientHttp2Session[], log: (line: string) => void): Promise<Watchers> {
  const wanted = tenants.length * perTenant;
  const latencies = new WatchLatencies();
  const failures: Record<string, number> = {};
  let opened = 0;
  let failed = 0;
  let syncedWaiter: (() => void) | null = null;
  const onSynced = () => latencies.synced >= opened && syncedWaiter?.();
  const started = performance.now();
  await runBounded(wanted, WATCH_OPEN_CONCURRENCY, async (index) => {
    // Watcher i of every tenant before watcher i+1 of any: a limit that is hit shows as tenants × i, not a lost tenant.
    if (failed >= WATCH_OPEN_GIVE_UP_AFTER) {
      failures['not tried: too many failures before'] = (failures['not tried: too many failures before'] ?? 0) + 1;
      return;
    }
    const tenantIndex = index % tenants.length;
    // connectAll's order: session k of tenant t is at k × tenants + t; the tenant's watchers take its sessions in turn.
    const turn = Math.floor(index / tenants.length) % (sessions.length / tenants.length);
    const session = sessions[turn * tenants.length + tenantIndex]!;
    try {
      await openWatch(session, leg.watchPathOf(tenants[tenantIndex]!), latencies.reader(onSynced));
      opened++;
    } catch (error) {
      failed++;
      const reason = (error as Error).message;
      failures[reason] = (failures[reason] ?? 0) + 1;
    }
  });
  const openSeconds = (performance.now() - started) / 1000;
  // Every open watch has its initial ADDED event (the tenant's ConfigMap) before anything is measured.
  if (latencies.synced < opened) await Promise.race([new Promise<void>((resolve) => (syncedWaiter = resolve)), sleep(WATCH_OPEN_TIMEOUT_MS)]);
  log(`${leg.name}: ${opened} of ${wanted} watchers open in ${openSeconds.toFixed(1)} s, ${latencies.synced} synced`);
  return { latencies, opened, failures, openSeconds, close: () => sessions.forEach((session) => session.destroy()) };
}

/** Waits until `expected` deliveries arrived or the wait is over; their latencies, sorted. */
async function deliveriesOf(latencies: WatchLatencies, expected: number, waitMs: number): Promise<Float64Array> {
  const waitUntil = performance.now() + waitMs;
  while (latencies.count < expected && performance.now() < waitUntil) await sleep(50);
  return latencies.latencies.slice(0, latencies.count).sort();
}

interface FanoutContext {
  tenants: string[];
  size: FanoutSize;
  /** The administrator's client of the upstream: the fan-out's writes and kube-apiserver's metrics. */
  admin: UpstreamPool;
  lateWaitMs: number;
  log(line: string): void;
}

async function measureFanout(leg: Leg, { tenants, size, admin, lateWaitMs, log }: FanoutContext): Promise<FanoutFigures> {
  const wanted = tenants.length * size.watchersPerTenant;
  const rssBeforeConnections = rssOf(leg.pid);
  const sessions = await connectAll(leg, tenants, Math.ceil(size.watchersPerTenant / WATCHES_PER_SESSION));
  await sleep(SETTLE_MS);
  const rssWithConnections = rssOf(leg.pid);
  const heapWithConnections = leg.metricsUrl === null ? null : await gatewayHeap(leg.metricsUrl);
  const collectedWithConnections = await collectedHeapOf(leg, log);
  const upstreamWatchesBeforeWatchers = await upstreamWatches(admin);
  let watchers: Watchers | null = null;
  try {
    watchers = await openWatchers(leg, tenants, size.watchersPerTenant, sessions, log);
    const { latencies, opened } = watchers;
    await sleep(SETTLE_MS);
    const rssWithIdleWatchers = rssOf(leg.pid);
    const heapWithIdleWatchers = leg.metricsUrl === null ? null : await gatewayHeap(leg.metricsUrl);
    const collectedWithIdleWatchers = await collectedHeapOf(leg, log);
    const watchCacheIdle = leg.metricsUrl === null ? null : await watchCacheMetrics(leg.metricsUrl);
    const perWatcher = (before: number | undefined, after: number | undefined) =>
      before === undefined || after === undefined || opened === 0 ? NaN : Math.round((after - before) / opened);

    latencies.steadyFrom = now();
    const cpuBefore = cpuSecondsOf(leg.pid);
    const clientCpuBefore = process.cpuUsage();
    // Sampled halfway through the steady phase, once: kube-apiserver's metrics are large, and reading them costs it CPU.
    const steadySample = sleep((size.steadySeconds * 1000) / 2).then(() => upstreamWatches(admin));
    const writes = await writeSteadily(
      (index) => ({ pool: admin, path: `/api/v1/namespaces/${upstreamNamespaceOf(tenants[index % tenants.length]!)}/configmaps/${CONFIGMAP}` }),
      size.eventsPerSecond,
      size.steadySeconds,
    );
    const cpuSeconds = cpuSecondsOf(leg.pid) - cpuBefore;
    const clientCpu = process.cpuUsage(clientCpuBefore);
    const upstreamWatchesSteady = await steadySample;
    const expected = (writes.issued - writes.failed) * (opened / tenants.length);
    const sorted = await deliveriesOf(latencies, expected, lateWaitMs);
    const cpuSecondsUntilDelivered = cpuSecondsOf(leg.pid) - cpuBefore;
    const watchCacheAfter = leg.metricsUrl === null ? null : await watchCacheMetrics(leg.metricsUrl);
    const baseline = leg.upstreamWatchesBeforeProcess ?? upstreamWatchesBeforeWatchers;
    const addedByResource = watchesAdded(baseline, upstreamWatchesSteady);
    log(
      `${leg.name}: ${latencies.count} deliveries of ${writes.issued} writes, p50 ${percentile(sorted, 50).toFixed(1)} ms, p99 ${percentile(sorted, 99).toFixed(1)} ms; ` +
        `upstream watches ${upstreamWatchesSteady.all} (+${upstreamWatchesSteady.all - baseline.all})`,
    );
    return {
      leg: leg.name,
      watchersWanted: wanted,
      watchersOpened: opened,
      watchersSynced: latencies.synced,
      watchOpenFailures: watchers.failures,
      openSeconds: round(watchers.openSeconds),
      rssBeforeConnectionsBytes: rssBeforeConnections,
      rssWithConnectionsBytes: rssWithConnections,
      rssWithIdleWatchersBytes: rssWithIdleWatchers,
      rssPerIdleWatcherBytes: opened === 0 ? NaN : Math.round((rssWithIdleWatchers - rssWithConnections) / opened),
      rssPerIdleWatcherWithConnectionsBytes: opened === 0 ? NaN : Math.round((rssWithIdleWatchers - rssBeforeConnections) / opened),
      heapUsedPerIdleWatcherBytes: perWatcher(heapWithConnections?.heapUsedBytes, heapWithIdleWatchers?.heapUsedBytes),
      externalPerIdleWatcherBytes: perWatcher(heapWithConnections?.externalBytes, heapWithIdleWatchers?.externalBytes),
      rssPerIdleWatcherAfterGcBytes: perWatcher(collectedWithConnections?.rssBytes, collectedWithIdleWatchers?.rssBytes),
      heapUsedPerIdleWatcherAfterGcBytes: perWatcher(collectedWithConnections?.heapUsedBytes, collectedWithIdleWatchers?.heapUsedBytes),
      externalPerIdleWatcherAfterGcBytes: perWatcher(collectedWithConnections?.externalBytes, collectedWithIdleWatchers?.externalBytes),
      writeRoundTripP50Ms: writes.roundTripP50Ms,
      writeRoundTripP99Ms: writes.roundTripP99Ms,
      writesIssued: writes.issued,
      writesFailed: writes.failed,
      achievedEventsPerSecond: round((writes.issued - writes.failed) / writes.seconds, 1),
      deliveriesExpected: expected,
      deliveriesReceived: latencies.count,
      deliveryP50Ms: round(percentile(sorted, 50)),
      deliveryP90Ms: round(percentile(sorted, 90)),
      deliveryP99Ms: round(percentile(sorted, 99)),
      deliveryMaxMs: round(sorted[sorted.length - 1] ?? NaN),
      processCpuCores: round(cpuSeconds / writes.seconds),
      processCpuSecondsPer1000Deliveries: latencies.count === 0 ? NaN : round((cpuSecondsUntilDelivered * 1000) / latencies.count, 3),
      benchClientCpuCores: round((clientCpu.user + clientCpu.system) / 1e6 / writes.seconds),
      steadySeconds: round(writes.seconds),
      upstreamWatchesBeforeProcess: leg.upstreamWatchesBeforeProcess?.all ?? null,
      upstreamWatchesBeforeWatchers: upstreamWatchesBeforeWatchers.all,
      upstreamWatchesSteady: upstreamWatchesSteady.all,
      upstreamWatchesAdded: upstreamWatchesSteady.all - baseline.all,
      upstreamWatchesAddedByResource: addedByResource,
      upstreamWatchesIdleByResource:
        leg.upstreamWatchesBeforeProcess === null ? null : watchesAdded(leg.upstreamWatchesBeforeProcess, upstreamWatchesBeforeWatchers),
      watchCacheIdle,
      watchCacheAfter,
      watchCacheBytesPer1000Objects:
        watchCacheAfter === null || watchCacheAfter.objects === 0 ? NaN : Math.round((watchCacheAfter.bytes * 1000) / watchCacheAfter.objects),
    };
  } finally {
    if (watchers === null) sessions.forEach((session) => session.destroy());
    else watchers.close();
    // The gateway closes its upstream watches as the clients go; let that finish before the next phase.
    await sleep(SETTLE_MS);
  }
}

interface NamespaceFigures {
  leg: LegName;
  watchersOpened: number;
  /** direct: the administrator writes upstream; a tenantgate: the tenant writes through it */
  writer: string;
  writesIssued: number;
  writesByStatus: Record<string, number>;
  /** Writes answered with anything but 200 (429 from flow control, 5xx, none) / writes issued */
  writesRefusedShare: number;
  achievedWritesPerSecond: number;
  writeRoundTripP99Ms: number;
  deliveriesExpected: number;
  deliveriesReceived: number;
  deliveryP50Ms: number;
  deliveryP99Ms: number;
  deliveryMaxMs: number;
  processCpuSecondsPer1000Deliveries: number;
}

/** Issue 16's first case: `namespaceWatchers` watchers of one tenant's namespace, `namespaceWritesPerSecond` writes to it. */
async function measureOneNamespace(leg: Leg, tenant: string, side: SideCasesSize, lateWaitMs: number, log: (line: string) => void): Promise<NamespaceFigures> {
  const sessions = await connectAll(leg, [tenant], Math.ceil(side.namespaceWatchers / WATCHES_PER_SESSION));
  const writer = leg.namespaceWriter(tenant);
  let watchers: Watchers | null = null;
  try {
    watchers = await openWatchers(leg, [tenant], side.namespaceWatchers, sessions, log);
    const { latencies, opened } = watchers;
    latencies.steadyFrom = now();
    const cpuBefore = cpuSecondsOf(leg.pid);
    const writes = await writeSteadily(
      (index) => ({ pool: writer.pool, path: writer.pathOf(`${NAMESPACE_CONFIGMAP_PREFIX}${index % side.namespaceConfigMaps}`) }),
      side.namespaceWritesPerSecond,
      side.namespaceSteadySeconds,
    );
    const expected = (writes.issued - writes.failed) * opened;
    const sorted = await deliveriesOf(latencies, expected, lateWaitMs);
    const cpuSeconds = cpuSecondsOf(leg.pid) - cpuBefore;
    const refusedShare = writes.issued === 0 ? NaN : round(writes.failed / writes.issued, 3);
    log(
      `${leg.name}: one namespace, ${opened} watchers: p99 ${percentile(sorted, 99).toFixed(1)} ms, ${latencies.count} of ${expected} deliveries, writes refused ${(refusedShare * 100).toFixed(1)} %`,
    );
    return {
      leg: leg.name,
      watchersOpened: opened,
      writer: leg.name === 'direct' ? 'administrator, upstream' : 'the tenant, through this tenantgate',
      writesIssued: writes.issued,
      writesByStatus: writes.byStatus,
      writesRefusedShare: refusedShare,
      achievedWritesPerSecond: round((writes.issued - writes.failed) / writes.seconds, 1),
      writeRoundTripP99Ms: writes.roundTripP99Ms,
      deliveriesExpected: expected,
      deliveriesReceived: latencies.count,
      deliveryP50Ms: round(percentile(sorted, 50)),
      deliveryP99Ms: round(percentile(sorted, 99)),
      deliveryMaxMs: round(sorted[sorted.length - 1] ?? NaN),
      processCpuSecondsPer1000Deliveries: latencies.count === 0 ? NaN : round((cpuSeconds * 1000) / latencies.count, 3),
    };
  } finally {
    if (watchers === null) sessions.forEach((session) => session.destroy());
    else watchers.close();
    if (!writer.shared) writer.pool.close();
    await sleep(SETTLE_MS);
  }
}

interface BurstFigures {
  leg: LegName;
  watchOpens: number;
  /** First answers by HTTP status (0: none within the open timeout, or the stream failed) */
  byStatus: Record<string, number>;
  refused429: number;
  openP50Ms: number;
  openP99Ms: number;
  allAnsweredMs: number;
}

/** Issue 16's second case: one tenant opens `count` watches at once on one connection, none retried; what answered. */
async function measureWatchBurst(leg: Leg, tenant: string, count: number, log: (line: string) => void): Promise<BurstFigures> {
  const session = await connect(leg.credentialsOf(tenant));
  try {
    const started = performance.now();
    const outcomes = await Promise.all(
      Array.from(
        { length: count },
        () =>
          new Promise<{ status: number; ms: number }>((resolve) => {
            const stream: ClientHttp2Stream = session.request({ ':path': leg.watchPathOf(tenant), accept: 'application/json' });
            const timer = setTimeout(() => resolve({ status: 0, ms: performance.now() - started }), WATCH_OPEN_TIMEOUT_MS);
            stream.once('response', (headers: IncomingHttpHeaders) => {
              clearTimeout(timer);
              resolve({ status: Number(headers[':status']), ms: performance.now() - started });
            });
            stream.once('error', () => {
              clearTimeout(timer);
              resolve({ status: 0, ms: performance.now() - started });
            });
            stream.resume(); // open until the session ends: every watch holds its place while the others are answered
          }),
      ),
    );
    const byStatus: Record<string, number> = {};
    for (const outcome of outcomes) byStatus[outcome.status] = (byStatus[outcome.status] ?? 0) + 1;
    const sorted = Float64Array.from(outcomes.map((outcome) => outcome.ms)).sort();
    log(`${leg.name}: burst of ${count} watch opens: ${JSON.stringify(byStatus)}`);
    return {
      leg: leg.name,
      watchOpens: count,
      byStatus,
      refused429: byStatus['429'] ?? 0,
      openP50Ms: round(percentile(sorted, 50)),
      openP99Ms: round(percentile(sorted, 99)),
      allAnsweredMs: round(sorted[sorted.length - 1] ?? NaN),
    };
  } finally {
    session.destroy();
    await sleep(SETTLE_MS);
  }
}

/** The upstream's HTTP/2 stream limit per connection: with tenantgate's pool size it bounds the upstream watches. */
async function upstreamStreamLimit(credentials: ClusterCredentials): Promise<number | null> {
  const session = await connect(credentials);
  const limit = session.remoteSettings.maxConcurrentStreams ?? null;
  session.destroy();
  return limit;
}

/** Every case of one leg: the fan-out first (its idle RSS is measured on a tenantgate that served nothing else). */
interface LegFigures {
  fanout: FanoutFigures;
  oneNamespace: NamespaceFigures;
  burst: BurstFigures | null;
}

async function measureLeg(leg: Leg, context: FanoutContext, side: SideCasesSize): Promise<LegFigures> {
  const fanout = await measureFanout(leg, context);
  const tenant = context.tenants[0]!;
  const oneNamespace = await measureOneNamespace(leg, tenant, side, context.lateWaitMs, context.log);
  // Directly the bench's administrator is exempt from the upstream's flow control: a burst would measure nothing.
  const burst = leg.name === 'direct' ? null : await measureWatchBurst(leg, tenant, side.burstWatches, context.log);
  return { fanout, oneNamespace, burst };
}

export async function runWatchFanout(size: FanoutSize, side: SideCasesSize, options: ScenarioOptions): Promise<ScenarioResult> {
  const { log } = options;
  const started = performance.now();
  const cacheOff = watchCacheOffFlags();
  if (cacheOff === null) log('this tenantgate has no --watch-cache flag: both tenantgate legs run without a watch cache');
  // The stack's tenantgate (the Tenant API only) keeps no cache: it would ingest every write of the legs and take CPU
  // from them.
  const stack = await startStack({ controllers: false, gatewayArgs: cacheOff ?? [] });
  const admin = new UpstreamPool(stack.rig.admin);
  const tenantWriters: UpstreamPool[] = [];
  /** Leg tenantgates still running (a leg that threw leaves its own). */
  const running = new Set<ChildProcess>();
  try {
    const created = await createTenants(stack, size.tenants, options.quick ? 60_000 : 600_000, log);
    const tenants = created.ready.map((tenant) => tenant.metadata.name);
    log(`${tenants.length} of ${size.tenants} tenants Ready after ${created.readySeconds.toFixed(1)} s`);
    if (tenants.length === 0) throw new Error('no tenant became Ready');

    // One client key for every tenant certificate: RSA generation would cost ~50 ms per tenant and measure nothing here.
    const keys = newRsaKeyPair();
    const tenantCredentials = new Map<string, ClusterCredentials>();
    for (const tenant of created.ready) {
      const id = tenant.metadata.name;
      const issued = issueCertificate(stack.files.ca, {
        serialNumberHex: tenantCertificateSerial(tenant),
        commonName: `${id}-admin`,
        organizationalUnits: [id],
        usage: 'client',
        keys,
      });
      tenantCredentials.set(id, { server: stack.gatewayUrl, caPem: stack.files.ca.certPem, certPem: issued.certPem, keyPem: issued.keyPem });
    }
    // Each tenant's first request writes its birth state upstream (its namespaces, where the writers below write).
    const birthsStarted = performance.now();
    await runBounded(tenants.length, TENANT_CREATE_CONCURRENCY, async (index) => {
      const pool = new UpstreamPool(tenantCredentials.get(tenants[index]!)!);
      try {
        await firstRequest(pool, tenants[index]!);
      } finally {
        pool.close();
      }
    });
    created.bornSeconds = (performance.now() - birthsStarted) / 1000;
    log(`${tenants.length} tenants' first requests answered (their birth state upstream) in ${created.bornSeconds.toFixed(1)} s`);
    const configMap = (namespace: string, name: string, tenant: string) =>
      upstreamJson(admin, 'POST', `/api/v1/namespaces/${namespace}/configmaps`, {
        metadata: { name, labels: { [TENANT_LABEL]: tenant } },
        data: { [SENT_AT_KEY]: '0' },
      }).then((answer) => {
        if (answer.status !== 201) throw new Error(`creating ${namespace}/${name} upstream: ${answer.status}`);
      });
    await runBounded(tenants.length, UPSTREAM_WRITE_CONCURRENCY, (index) => configMap(upstreamNamespaceOf(tenants[index]!), CONFIGMAP, tenants[index]!));
    const namespaceTenant = tenants[0]!;
    await runBounded(side.namespaceConfigMaps, UPSTREAM_WRITE_CONCURRENCY, (index) =>
      configMap(upstreamNamespaceOf(namespaceTenant), `${NAMESPACE_CONFIGMAP_PREFIX}${index}`, namespaceTenant),
    );
    const upstreamMaxConcurrentStreams = await upstreamStreamLimit(stack.rig.admin);
    const watchQuery = '?watch=1&allowWatchBookmarks=true';
    const apiserverPid = stack.rig.processes.find((p) => p.name === 'kube-apiserver')!.pid;
    const context: FanoutContext = { tenants, size, admin, lateWaitMs: LATE_DELIVERIES_WAIT_MS[options.quick ? 'quick' : 'full'], log };
    const throughTenantgate = (url: string) => (tenant: string) => {
      const pool = new UpstreamPool({ ...tenantCredentials.get(tenant)!, server: url });
      tenantWriters.push(pool);
      return { pool, pathOf: (name: string) => `/api/v1/namespaces/default/configmaps/${name}`, shared: false };
    };

    const legs: Partial<Record<LegName, LegFigures>> = {};
    // Each tenantgate leg on a tenantgate started for it and stopped after: the upstream watches it holds are counted
    // from before it started, and the stack's own adds nothing to another leg's run.
    const measureGatewayLeg = async (name: 'tenantgate' | 'watch-cache-off', flags: string[]) => {
      const beforeProcess = await upstreamWatches(admin);
      const gateway = await spawnGateway(stack.files, ['--confine-upstream-discovery', ...flags], INSPECTOR_FLAGS);
      running.add(gateway.child);
      const url = gateway.url;
      try {
        legs[name] = await measureLeg(
          {
            name,
            pid: gateway.child.pid!,
            metricsUrl: gateway.metricsUrl,
            inspectorUrl: inspectorUrlOf(gateway.logs),
            credentialsOf: (id) => ({ ...tenantCredentials.get(id)!, server: url }),
            watchPathOf: () => `/api/v1/namespaces/default/configmaps${watchQuery}`,
            namespaceWriter: throughTenantgate(url),
            upstreamWatchesBeforeProcess: beforeProcess,
          },
          context,
          side,
        );
      } finally {
        await stopChild(gateway.child);
        running.delete(gateway.child);
      }
    };
    await measureGatewayLeg('tenantgate', []);
    await measureGatewayLeg('watch-cache-off', cacheOff ?? []);
    // node:http2's own memory per idle stream, on the same sessions and streams: the floor under RSS per watcher.
    const sessionsPerTenant = Math.ceil(size.watchersPerTenant / WATCHES_PER_SESSION);
    const floor = await idleStreamFloor({
      certFile: stack.files.tlsCertFile,
      keyFile: stack.files.tlsKeyFile,
      caPem: stack.files.ca.certPem,
      sessions: tenants.length * sessionsPerTenant,
      streamsPerSession: Math.ceil(size.watchersPerTenant / sessionsPerTenant),
    }).catch((error: Error) => (log(`idle-stream floor not measured: ${error.message}`), null));
    if (floor !== null)
      log(`bare node:http2: ${floor.streams} idle streams, ${(floor.rssPerStreamAfterGcBytes / 1024).toFixed(1)} KB RSS per stream after a full collection`);
    legs.direct = await measureLeg(
      {
        name: 'direct',
        pid: apiserverPid,
        metricsUrl: null,
        inspectorUrl: null,
        credentialsOf: () => stack.rig.admin,
        watchPathOf: (id) => `/api/v1/namespaces/${upstreamNamespaceOf(id)}/configmaps${watchQuery}`,
        namespaceWriter: (id) => ({ pool: admin, pathOf: (name) => `/api/v1/namespaces/${upstreamNamespaceOf(id)}/configmaps/${name}`, shared: true }),
        upstreamWatchesBeforeProcess: null,
      },
      context,
      side,
    );
    return report(legs as Record<LegName, LegFigures>, {
      size,
      side,
      tenants,
      created,
      cacheOff,
      upstreamMaxConcurrentStreams,
      floor,
      scenarioSeconds: round((performance.now() - started) / 1000, 1),
    });
  } finally {
    admin.close();
    for (const pool of tenantWriters) pool.close();
    for (const child of running) await stopChild(child);
    await stack.stop();
  }
}

const LEG_LABELS: Record<LegName, string> = { direct: 'direct', tenantgate: 'tenantgate (watch cache)', 'watch-cache-off': 'tenantgate --watch-cache=false' };
const ratio = (value: number, base: number, digits = 3) => round(value / base, digits);

function report(
  legs: Record<LegName, LegFigures>,
  run: {
    size: FanoutSize;
    side: SideCasesSize;
    tenants: string[];
    created: TenantsCreated;
    cacheOff: string[] | null;
    upstreamMaxConcurrentStreams: number | null;
    /** node:http2's own memory per idle stream (null: not measured). */
    floor: IdleStreamFloor | null;
    scenarioSeconds: number;
  },
): ScenarioResult {
  const { size, side, tenants, created } = run;
  const cache = legs.tenantgate;
  const off = legs['watch-cache-off'];
  const direct = legs.direct;
  const gateway = cache.fanout;
  const watchers = gateway.watchersSynced;
  const cachedResources = gateway.watchCacheAfter?.cachedResources.length ?? NaN;
  // The cache's upstream watches: what the cache-on tenantgate added in the steady phase beyond what the same build
  // without the cache holds for its own work (reconcile), per cached resource. The cache's label is resource[.group],
  // kube-apiserver's the resource alone.
  const ownWatches = off.fanout.upstreamWatchesIdleByResource ?? {};
  const cacheWatchesByResource = Object.fromEntries(
    (gateway.watchCacheAfter?.cachedResources ?? []).map((label) => {
      const resource = label.split('.')[0]!;
      return [label, (gateway.upstreamWatchesAddedByResource[resource] ?? 0) - (ownWatches[resource] ?? 0)];
    }),
  );
  const cacheWatches = gateway.watchCacheAfter === null ? NaN : Object.values(cacheWatchesByResource).reduce((sum, count) => sum + count, 0);
  const p99VsDirect = ratio(gateway.deliveryP99Ms, direct.fanout.deliveryP99Ms);
  const collected = !Number.isNaN(gateway.rssPerIdleWatcherAfterGcBytes);
  const rssPerWatcher = collected ? gateway.rssPerIdleWatcherAfterGcBytes : gateway.rssPerIdleWatcherBytes;
  const burst429 = cache.burst?.refused429 ?? NaN;
  const targets: TargetCheck[] = [
    {
      target: `watch fan-out: 10,000 watchers over 1,000 tenants (run: ${size.tenants * size.watchersPerTenant} over ${size.tenants})`,
      value: watchers,
      unit: 'watchers',
      met: watchers >= 10_000 && tenants.length >= 1000,
    },
    {
      target: `watch fan-out: p99 <= ${TARGET_P99_MS} ms at 1,000 events/s with 10,000 watchers (run: ${gateway.achievedEventsPerSecond} events/s, ${watchers} watchers)`,
      value: gateway.deliveryP99Ms,
      unit: 'ms',
      met: gateway.deliveryP99Ms <= TARGET_P99_MS && gateway.achievedEventsPerSecond >= 950 && watchers >= 10_000,
    },
    { target: `watch fan-out: p99 <= ${TARGET_P99_VS_DIRECT}x direct's p99`, value: p99VsDirect, unit: 'x direct', met: p99VsDirect <= TARGET_P99_VS_DIRECT },
    {
      target:
        `watch fan-out: <= ${TARGET_RSS_PER_WATCHER_BYTES / 1024} KB RSS per idle watcher${collected ? ', after a forced full collection' : ''}` +
        (run.floor === null ? '' : ` (bare node:http2, same sessions and streams: ${round(run.floor.rssPerStreamAfterGcBytes / 1024)} KB per idle stream)`),
      value: round(rssPerWatcher / 1024),
      unit: 'KB',
      met: rssPerWatcher <= TARGET_RSS_PER_WATCHER_BYTES,
    },
    {
      target: `watch fan-out: upstream watches of the watch cache in the steady phase <= cached resources (${Number.isNaN(cachedResources) ? 'no watch cache' : cachedResources})`,
      value: cacheWatches,
      unit: 'watches',
      met: cacheWatches <= cachedResources,
    },
    {
      target: `watch opens: a burst of ${side.burstWatches} by one tenant gets no 429 with the watch cache under default limits`,
      value: burst429,
      unit: 'refused',
      met: burst429 === 0,
    },
  ];
  const bars = (pick: (figures: LegFigures) => number | undefined) =>
    Object.fromEntries(
      (Object.keys(LEG_LABELS) as LegName[]).flatMap((name) => {
        const value = pick(legs[name]);
        return value === undefined ? [] : [[LEG_LABELS[name], value]];
      }),
    );
  const charts: Chart[] = [
    {
      title: `Watch delivery p99, ${watchers} watchers over ${tenants.length} tenants, ${gateway.achievedEventsPerSecond} writes/s`,
      unit: 'ms',
      bars: bars((l) => l.fanout.deliveryP99Ms),
    },
    { title: 'Watch delivery p50', unit: 'ms', bars: bars((l) => l.fanout.deliveryP50Ms) },
    {
      title: 'RSS per idle watcher (tenantgate: its process; direct: kube-apiserver)',
      unit: 'KB',
      bars: bars((l) => round(l.fanout.rssPerIdleWatcherBytes / 1024)),
    },
    {
      title: 'CPU per 1,000 delivered events (tenantgate: its process; direct: kube-apiserver)',
      unit: 'CPU s',
      bars: bars((l) => l.fanout.processCpuSecondsPer1000Deliveries),
    },
    { title: 'Upstream watches added in the steady phase, a tenantgate its own included', unit: 'watches', bars: bars((l) => l.fanout.upstreamWatchesAdded) },
    {
      title: `One namespace, ${side.namespaceWatchers} watchers at ${side.namespaceWritesPerSecond} writes/s: delivery p99`,
      unit: 'ms',
      bars: bars((l) => l.oneNamespace.deliveryP99Ms),
    },
    { title: 'One namespace: writes refused', unit: '%', bars: bars((l) => round(l.oneNamespace.writesRefusedShare * 100, 1)) },
    { title: `Burst of ${side.burstWatches} watch opens by one tenant: refused with 429`, unit: 'watches', bars: bars((l) => l.burst?.refused429) },
  ];
  return {
    scenario: 'watch-fanout',
    figures: {
      machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, memoryBytes: os.totalmem(), node: process.version, loadavg: os.loadavg() },
      size,
      sideCases: side,
      watchCacheOffFlags: run.cacheOff ?? 'none: this tenantgate has no watch cache, both tenantgate legs ran without one',
      tenantsReady: tenants.length,
      tenantCreateSeconds: round(created.createSeconds),
      tenantsReadySeconds: round(created.readySeconds),
      tenantsBornSeconds: round(created.bornSeconds ?? NaN),
      tenantsReadyPerSecond: round(tenants.length / created.readySeconds),
      upstreamMaxConcurrentStreams: run.upstreamMaxConcurrentStreams,
      idleStreamFloor: run.floor,
      legs,
      /** Per cached resource: the cache-on tenantgate's upstream watches in the steady phase − the cache-off one's own at idle */
      upstreamWatchesOfTheCache: cacheWatchesByResource,
      ratios: {
        fanoutP50VsDirect: ratio(gateway.deliveryP50Ms, direct.fanout.deliveryP50Ms),
        fanoutP99VsDirect: p99VsDirect,
        fanoutP50VsWatchCacheOff: ratio(gateway.deliveryP50Ms, off.fanout.deliveryP50Ms),
        fanoutP99VsWatchCacheOff: ratio(gateway.deliveryP99Ms, off.fanout.deliveryP99Ms),
        rssPerWatcherVsWatchCacheOff: ratio(gateway.rssPerIdleWatcherBytes, off.fanout.rssPerIdleWatcherBytes),
        rssPerWatcherAfterGcVsFloor: run.floor === null ? NaN : ratio(gateway.rssPerIdleWatcherAfterGcBytes, run.floor.rssPerStreamAfterGcBytes),
        cpuPer1000DeliveriesVsWatchCacheOff: ratio(gateway.processCpuSecondsPer1000Deliveries, off.fanout.processCpuSecondsPer1000Deliveries),
        cpuPer1000DeliveriesVsDirect: ratio(gateway.processCpuSecondsPer1000Deliveries, direct.fanout.processCpuSecondsPer1000Deliveries),
        oneNamespaceP99VsDirect: ratio(cache.oneNamespace.deliveryP99Ms, direct.oneNamespace.deliveryP99Ms),
        oneNamespaceP99VsWatchCacheOff: ratio(cache.oneNamespace.deliveryP99Ms, off.oneNamespace.deliveryP99Ms),
      },
      scenarioSeconds: run.scenarioSeconds,
    },
    targets,
    charts,
  };
}

export const watchFanout: Scenario = {
  name: 'watch-fanout',
  description:
    "Watch fan-out: tenants × HTTP/2 watchers of ConfigMaps, a steady rate of upstream writes; write-to-receipt p50/p99, RSS per idle watcher, CPU per 1,000 deliveries and the upstream's open watches; " +
    '100 watchers of one namespace at 100 writes/s; a burst of 500 watch opens by one tenant; tenantgate with its watch cache against the direct upstream and --watch-cache=false',
  run: (options) => runWatchFanout(options.quick ? QUICK_SIZE : FULL_SIZE, options.quick ? QUICK_SIDE_CASES : FULL_SIDE_CASES, options),
};

export default watchFanout;

/** `node bench/scenarios/watch-fanout.ts [--quick] [--tenants N] [--watchers-per-tenant N] [--events-per-second N] [--steady-seconds N]` */
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2);
  const quick = argv.includes('--quick');
  const flag = (name: string, fallback: number) => {
    const at = argv.indexOf(`--${name}`);
    return at === -1 ? fallback : Number(argv[at + 1]);
  };
  const base = quick ? QUICK_SIZE : FULL_SIZE;
  const size: FanoutSize = {
    tenants: flag('tenants', base.tenants),
    watchersPerTenant: flag('watchers-per-tenant', base.watchersPerTenant),
    eventsPerSecond: flag('events-per-second', base.eventsPerSecond),
    steadySeconds: flag('steady-seconds', base.steadySeconds),
  };
  const startedAt = performance.now();
  runWatchFanout(size, quick ? QUICK_SIDE_CASES : FULL_SIDE_CASES, { quick, log: (line) => console.error(line) }).then(
    (result) => {
      console.log(JSON.stringify(result, null, 2));
      console.error(`watch-fanout: ${((performance.now() - startedAt) / 1000).toFixed(1)} s`);
      process.exit(0);
    },
    (error: Error) => {
      console.error(error);
      process.exit(1);
    },
  );
}

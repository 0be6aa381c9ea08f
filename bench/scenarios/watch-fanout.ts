// Watch fan-out: many tenants × many HTTP/2 watchers on one tenantgate and a steady rate of upstream ConfigMap writes;
// delivery latency from the write to the client's receipt, RSS per idle watcher and CPU, against the direct upstream
// and --passthrough in the same run. Loopback only; every phase is bounded in count and time and never retried forever.
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
import { spawnGateway, startStack, stopChild, type Stack } from '../../test/helpers/stack.ts';
import type { Chart, Scenario, ScenarioOptions, ScenarioResult, TargetCheck } from '../scenario.ts';

export interface FanoutSize {
  tenants: number;
  watchersPerTenant: number;
  /** Upstream ConfigMap writes per second across all tenants (each reaches every watcher of its tenant). */
  eventsPerSecond: number;
  steadySeconds: number;
}

export const FULL_SIZE: FanoutSize = { tenants: 1000, watchersPerTenant: 10, eventsPerSecond: 1000, steadySeconds: 20 };
export const QUICK_SIZE: FanoutSize = { tenants: 20, watchersPerTenant: 10, eventsPerSecond: 100, steadySeconds: 4 };

const CONFIGMAP = 'fanout';
/** The data key carrying the write's timestamp (ms since the epoch); found in each event by indexOf, not parsed. */
const SENT_AT_KEY = 'fanoutSentAt';
const SENT_AT_MARKER = `"${SENT_AT_KEY}":"`;
const TENANT_CREATE_CONCURRENCY = 16;
const UPSTREAM_WRITE_CONCURRENCY = 32;
const WATCH_OPEN_CONCURRENCY = 200;
/** Writes in flight at most during the steady phase: a slow upstream lowers the rate achieved, it does not pile up. */
const MAX_WRITES_INFLIGHT = 200;
const WATCH_OPEN_TIMEOUT_MS = 30_000;
const WATCH_OPEN_ATTEMPTS = 5;
/** Opening stops after this many failures: past a limit every further watch would wait out its timeout too. */
const WATCH_OPEN_GIVE_UP_AFTER = WATCH_OPEN_CONCURRENCY;
const SETTLE_MS = 2000;
const LATE_DELIVERIES_WAIT_MS = 20_000;
const CLOCK_TICKS_PER_SECOND = 100; // Linux USER_HZ

const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
}

/** Resident memory of a process now (bytes), from /proc. */
function rssOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? NaN) * 1024;
}

/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat. */
export function cpuSecondsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces): state is [0], utime [11], stime [12].
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}

async function runBounded<T>(count: number, concurrency: number, work: (index: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const index = next++;
      results[index] = await work(index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
  return results;
}

const tenantIdOf = (index: number) => `wf${String(index).padStart(4, '0')}`;
const upstreamNamespaceOf = (id: string) => `${id}-default`;

interface TenantsCreated {
  ready: Tenant[];
  createSeconds: number;
  readySeconds: number;
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

/** A tenantgate's V8 heap and the memory outside it (Buffers, nghttp2 and OpenSSL state), from its metrics listener. */
async function gatewayHeap(metricsUrl: string): Promise<{ heapUsedBytes: number; externalBytes: number }> {
  const text = await (await fetch(metricsUrl)).text(); // the listener logs its URL with /metrics
  const sample = (name: string) => Number(new RegExp(`^tenantgate_${name} (\\S+)`, 'm').exec(text)?.[1] ?? NaN);
  return { heapUsedBytes: sample('nodejs_heap_size_used_bytes'), externalBytes: sample('nodejs_external_memory_bytes') };
}

/** Where a target's watchers connect and what they watch. */
interface WatchTarget {
  name: 'direct' | 'passthrough' | 'tenantgate';
  /** The process whose memory and CPU are measured. */
  pid: number;
  /** Its metrics listener, for a tenantgate: where per-watcher memory goes (heap or outside it). */
  metricsUrl: string | null;
  credentialsOf(tenant: string): ClusterCredentials;
  watchPathOf(tenant: string): string;
}

interface TargetFigures {
  target: string;
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
  benchClientCpuCores: number;
  steadySeconds: number;
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

/** Upstream ConfigMap writes at a steady rate, round robin over the tenants, each carrying its write time. */
async function writeSteadily(
  writer: UpstreamPool,
  tenants: string[],
  size: FanoutSize,
): Promise<{ issued: number; failed: number; seconds: number; roundTripP50Ms: number; roundTripP99Ms: number }> {
  // The write's own round trip: how much of a delivery's latency the upstream's write path takes before any watch sees it.
  const roundTrips = new Float64Array(Math.ceil(size.eventsPerSecond * size.steadySeconds) + 1);
  let issued = 0;
  let failed = 0;
  let inflight = 0;
  let answered = 0;
  const started = performance.now();
  const endsAt = started + size.steadySeconds * 1000;
  const write = (tenant: string) => {
    inflight++;
    const sentAt = now();
    const body = `{"data":{"${SENT_AT_KEY}":"${sentAt.toFixed(3)}"}}`;
    const stream = writer.request('PATCH', `/api/v1/namespaces/${upstreamNamespaceOf(tenant)}/configmaps/${CONFIGMAP}`, { 'content-type': 'application/merge-patch+json' }, false);
    let status = 0;
    stream.once('response', (headers) => {
      status = Number(headers[':status']);
      if (answered < roundTrips.length) roundTrips[answered++] = now() - sentAt;
    });
    stream.on('error', () => {});
    stream.resume();
    stream.once('close', () => {
      inflight--;
      if (status !== 200) failed++;
    });
    stream.end(body);
  };
  while (performance.now() < endsAt) {
    const due = Math.floor(((performance.now() - started) / 1000) * size.eventsPerSecond);
    while (issued < due && inflight < MAX_WRITES_INFLIGHT) write(tenants[issued++ % tenants.length]!);
    await sleep(2);
  }
  const seconds = (performance.now() - started) / 1000;
  while (inflight > 0) await sleep(5);
  const sorted = roundTrips.slice(0, answered).sort();
  return { issued, failed, seconds, roundTripP50Ms: round(percentile(sorted, 50)), roundTripP99Ms: round(percentile(sorted, 99)) };
}

async function measureTarget(target: WatchTarget, tenants: string[], size: FanoutSize, writer: UpstreamPool, log: (line: string) => void): Promise<TargetFigures> {
  const wanted = tenants.length * size.watchersPerTenant;
  const rssBeforeConnections = rssOf(target.pid);
  const sessions = await runBounded(tenants.length, WATCH_OPEN_CONCURRENCY, (index) => connect(target.credentialsOf(tenants[index]!)));
  await sleep(SETTLE_MS);
  const rssWithConnections = rssOf(target.pid);
  const heapWithConnections = target.metricsUrl === null ? null : await gatewayHeap(target.metricsUrl);
  const latencies = new WatchLatencies();
  const failures: Record<string, number> = {};
  let opened = 0;
  let syncedWaiter: (() => void) | null = null;
  const onSynced = () => latencies.synced >= opened && syncedWaiter?.();
  const openStarted = performance.now();
  try {
    let failed = 0;
    await runBounded(wanted, WATCH_OPEN_CONCURRENCY, async (index) => {
      // Watcher i of every tenant before watcher i+1 of any: a limit that is hit shows as tenants × i, not a lost tenant.
      const tenantIndex = index % tenants.length;
      if (failed >= WATCH_OPEN_GIVE_UP_AFTER) {
        failures['not tried: too many failures before'] = (failures['not tried: too many failures before'] ?? 0) + 1;
        return;
      }
      try {
        await openWatch(sessions[tenantIndex]!, target.watchPathOf(tenants[tenantIndex]!), latencies.reader(onSynced));
        opened++;
      } catch (error) {
        failed++;
        const reason = (error as Error).message;
        failures[reason] = (failures[reason] ?? 0) + 1;
      }
    });
    const openSeconds = (performance.now() - openStarted) / 1000;
    // Every open watch has its initial ADDED event (the tenant's ConfigMap) before the idle measure.
    if (latencies.synced < opened) {
      await Promise.race([new Promise<void>((resolve) => (syncedWaiter = resolve)), sleep(WATCH_OPEN_TIMEOUT_MS)]);
    }
    log(`watch-fanout: ${target.name}: ${opened} of ${wanted} watchers open in ${openSeconds.toFixed(1)} s, ${latencies.synced} synced`);
    await sleep(SETTLE_MS);
    const rssWithIdleWatchers = rssOf(target.pid);
    const heapWithIdleWatchers = target.metricsUrl === null ? null : await gatewayHeap(target.metricsUrl);
    const perWatcher = (before: number | undefined, after: number | undefined) =>
      before === undefined || after === undefined || opened === 0 ? NaN : Math.round((after - before) / opened);

    latencies.steadyFrom = now();
    const cpuBefore = cpuSecondsOf(target.pid);
    const clientCpuBefore = process.cpuUsage();
    const writes = await writeSteadily(writer, tenants, size);
    const cpuSeconds = cpuSecondsOf(target.pid) - cpuBefore;
    const clientCpu = process.cpuUsage(clientCpuBefore);
    // Deliveries still on their way when the writes stop (on a loaded machine seconds late: late is not lost).
    const expected = (writes.issued - writes.failed) * (opened / tenants.length);
    const waitUntil = performance.now() + LATE_DELIVERIES_WAIT_MS;
    while (latencies.count < expected && performance.now() < waitUntil) await sleep(50);
    const sorted = latencies.latencies.slice(0, latencies.count).sort();
    log(`watch-fanout: ${target.name}: ${latencies.count} deliveries of ${writes.issued} writes, p50 ${percentile(sorted, 50).toFixed(1)} ms, p99 ${percentile(sorted, 99).toFixed(1)} ms`);
    return {
      target: target.name,
      watchersWanted: wanted,
      watchersOpened: opened,
      watchersSynced: latencies.synced,
      watchOpenFailures: failures,
      openSeconds: round(openSeconds),
      rssBeforeConnectionsBytes: rssBeforeConnections,
      rssWithConnectionsBytes: rssWithConnections,
      rssWithIdleWatchersBytes: rssWithIdleWatchers,
      rssPerIdleWatcherBytes: opened === 0 ? NaN : Math.round((rssWithIdleWatchers - rssWithConnections) / opened),
      rssPerIdleWatcherWithConnectionsBytes: opened === 0 ? NaN : Math.round((rssWithIdleWatchers - rssBeforeConnections) / opened),
      heapUsedPerIdleWatcherBytes: perWatcher(heapWithConnections?.heapUsedBytes, heapWithIdleWatchers?.heapUsedBytes),
      externalPerIdleWatcherBytes: perWatcher(heapWithConnections?.externalBytes, heapWithIdleWatchers?.externalBytes),
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
      benchClientCpuCores: round((clientCpu.user + clientCpu.system) / 1e6 / writes.seconds),
      steadySeconds: round(writes.seconds),
    };
  } finally {
    for (const session of sessions) session.destroy();
    // The gateway closes its upstream watches as the clients go; let that finish before the next target.
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

export async function runWatchFanout(size: FanoutSize, options: ScenarioOptions): Promise<ScenarioResult> {
  const { log } = options;
  const started = performance.now();
  const stack = await startStack({ controllers: false });
  const writer = new UpstreamPool(stack.rig.admin);
  let passthrough: Awaited<ReturnType<typeof spawnGateway>> | null = null;
  try {
    const created = await createTenants(stack, size.tenants, options.quick ? 60_000 : 600_000, log);
    const tenants = created.ready.map((tenant) => tenant.metadata.name);
    log(`watch-fanout: ${tenants.length} of ${size.tenants} tenants Ready after ${created.readySeconds.toFixed(1)} s`);
    if (tenants.length === 0) throw new Error('no tenant became Ready');

    // One client key for every tenant certificate: RSA generation would cost ~50 ms per tenant and measure nothing here.
    const keys = newRsaKeyPair();
    const tenantCredentials = new Map<string, ClusterCredentials>();
    for (const tenant of created.ready) {
      const id = tenant.metadata.name;
      const issued = issueCertificate(stack.files.ca, { serialNumberHex: tenantCertificateSerial(tenant), commonName: `${id}-admin`, organizationalUnits: [id], usage: 'client', keys });
      tenantCredentials.set(id, { server: stack.gatewayUrl, caPem: stack.files.ca.certPem, certPem: issued.certPem, keyPem: issued.keyPem });
    }
    await runBounded(tenants.length, UPSTREAM_WRITE_CONCURRENCY, async (index) => {
      const id = tenants[index]!;
      const answer = await upstreamJson(writer, 'POST', `/api/v1/namespaces/${upstreamNamespaceOf(id)}/configmaps`, {
        metadata: { name: CONFIGMAP, labels: { [TENANT_LABEL]: id } },
        data: { [SENT_AT_KEY]: '0' },
      });
      if (answer.status !== 201) throw new Error(`creating ${id}'s ConfigMap upstream: ${answer.status}`);
    });
    const upstreamMaxConcurrentStreams = await upstreamStreamLimit(stack.rig.admin);
    const watchQuery = '?watch=1&allowWatchBookmarks=true';
    const apiserverPid = stack.rig.processes.find((p) => p.name === 'kube-apiserver')!.pid;

    const results: TargetFigures[] = [];
    results.push(
      await measureTarget(
        {
          name: 'tenantgate',
          pid: stack.gateway.pid!,
          metricsUrl: stack.metricsUrl,
          credentialsOf: (id) => tenantCredentials.get(id)!,
          watchPathOf: () => `/api/v1/namespaces/default/configmaps${watchQuery}`,
        },
        tenants,
        size,
        writer,
        log,
      ),
    );
    // Only while it is measured: its own lifecycle controller would otherwise add upstream traffic to the others' runs.
    passthrough = await spawnGateway(stack.files, ['--passthrough']);
    const passthroughUrl = passthrough.url;
    results.push(
      await measureTarget(
        {
          name: 'passthrough',
          pid: passthrough.child.pid!,
          metricsUrl: passthrough.metricsUrl,
          credentialsOf: (id) => ({ ...tenantCredentials.get(id)!, server: passthroughUrl }),
          watchPathOf: (id) => `/api/v1/namespaces/${upstreamNamespaceOf(id)}/configmaps${watchQuery}`,
        },
        tenants,
        size,
        writer,
        log,
      ),
    );
    await stopChild(passthrough.child);
    passthrough = null;
    results.push(
      await measureTarget(
        {
          name: 'direct',
          pid: apiserverPid,
          metricsUrl: null,
          credentialsOf: () => stack.rig.admin,
          watchPathOf: (id) => `/api/v1/namespaces/${upstreamNamespaceOf(id)}/configmaps${watchQuery}`,
        },
        tenants,
        size,
        writer,
        log,
      ),
    );
    const byName = new Map(results.map((r) => [r.target, r]));
    const gateway = byName.get('tenantgate')!;
    const direct = byName.get('direct')!;
    const plain = byName.get('passthrough')!;
    const watchers = gateway.watchersSynced;
    const targets: TargetCheck[] = [
      {
        target: `watch fan-out: 10,000 watchers over 1,000 tenants (run: ${size.tenants * size.watchersPerTenant} over ${size.tenants})`,
        value: watchers,
        unit: 'watchers',
        met: watchers >= 10_000 && tenants.length >= 1000,
      },
      {
        target: `watch fan-out: p99 <= 50 ms at 1,000 events/s with 10,000 watchers (run: ${gateway.achievedEventsPerSecond} events/s, ${watchers} watchers)`,
        value: gateway.deliveryP99Ms,
        unit: 'ms',
        met: gateway.deliveryP99Ms <= 50 && gateway.achievedEventsPerSecond >= 950 && watchers >= 10_000,
      },
      {
        target: 'watch fan-out: <= 4 KB RSS per idle watcher',
        value: round(gateway.rssPerIdleWatcherBytes / 1024),
        unit: 'KB',
        met: gateway.rssPerIdleWatcherBytes <= 4096,
      },
    ];
    const charts: Chart[] = [
      {
        title: `Watch delivery p99, ${watchers} watchers over ${tenants.length} tenants, ${gateway.achievedEventsPerSecond} writes/s`,
        unit: 'ms',
        bars: Object.fromEntries(results.map((r) => [r.target, r.deliveryP99Ms])),
      },
      { title: 'Watch delivery p50', unit: 'ms', bars: Object.fromEntries(results.map((r) => [r.target, r.deliveryP50Ms])) },
      {
        title: 'RSS per idle watcher (tenantgate and passthrough: the proxy process; direct: kube-apiserver)',
        unit: 'KB',
        bars: Object.fromEntries(results.map((r) => [r.target, round(r.rssPerIdleWatcherBytes / 1024)])),
      },
      {
        title: 'CPU during the steady phase (tenantgate and passthrough: the proxy process; direct: kube-apiserver)',
        unit: 'cores',
        bars: Object.fromEntries(results.map((r) => [r.target, r.processCpuCores])),
      },
    ];
    return {
      scenario: 'watch-fanout',
      figures: {
        machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, memoryBytes: os.totalmem(), node: process.version, loadavg: os.loadavg() },
        size,
        tenantsReady: tenants.length,
        tenantCreateSeconds: round(created.createSeconds),
        tenantsReadySeconds: round(created.readySeconds),
        tenantsReadyPerSecond: round(tenants.length / created.readySeconds),
        upstreamMaxConcurrentStreams,
        targets: results,
        ratios: {
          p50VsDirect: round(gateway.deliveryP50Ms / direct.deliveryP50Ms),
          p99VsDirect: round(gateway.deliveryP99Ms / direct.deliveryP99Ms),
          p50VsPassthrough: round(gateway.deliveryP50Ms / plain.deliveryP50Ms),
          p99VsPassthrough: round(gateway.deliveryP99Ms / plain.deliveryP99Ms),
          rssPerWatcherVsPassthrough: round(gateway.rssPerIdleWatcherBytes / plain.rssPerIdleWatcherBytes),
          cpuVsPassthrough: round(gateway.processCpuCores / plain.processCpuCores),
        },
        scenarioSeconds: round((performance.now() - started) / 1000, 1),
      },
      targets,
      charts,
    };
  } finally {
    writer.close();
    if (passthrough !== null) await stopChild(passthrough.child);
    await stack.stop();
  }
}

export const watchFanout: Scenario = {
  name: 'watch-fanout',
  description:
    'Watch fan-out: tenants × HTTP/2 watchers of ConfigMaps on one tenantgate, a steady rate of upstream writes; write-to-receipt latency p50/p99, RSS per idle watcher and CPU, against the direct upstream and --passthrough',
  run: (options) => runWatchFanout(options.quick ? QUICK_SIZE : FULL_SIZE, options),
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
  runWatchFanout(size, { quick, log: (line) => console.error(line) }).then(
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

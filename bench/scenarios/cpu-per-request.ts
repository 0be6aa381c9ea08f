// Issue 15's scenario: the CPU one request costs tenantgate and kube-apiserver (from /proc, same run), for GET, create,
// LIST of many pods and one watch event, directly, through --passthrough and through tenantgate; and small GET latency
// at a fixed moderate rate. Every loop is bounded in count; loopback only.
import type { ClientHttp2Session } from 'node:http2';
import { connectH2 } from '../../test/helpers/http.ts';
import { CPU_TICK_MS, cpuMeter, idleCpuRate, type Pids } from '../load/cpu.ts';
import { countedRequests, type CountedRequest } from '../load/counted.ts';
import { http1Load } from '../load/http1.ts';
import { startThreeTargets, type BenchTarget, type TargetName } from '../load/targets.ts';
import type { Chart, Scenario, ScenarioOptions, ScenarioResult, TargetCheck } from '../scenario.ts';
import { percentile, rounded } from '../stats.ts';
import { createPods } from './list.ts';
import { CONFIGMAP, tenantToken, urlOf, waitUntilServed } from './small-get.ts';
import { eventually } from '../../test/helpers/kit.ts';

const TENANT = 'bcpu01';
const CONCURRENCY = 4;
const TARGET_GET_RATIO = 0.25;
const TARGET_LIST_RATIO = 0.3;
const TARGET_P50_ADDED_MS = 0.3;
const RATE_PER_SECOND = 200;
const WATCH_DELIVERED_WITHIN_MS = 60_000;

interface Counts {
  gets: number;
  creates: number;
  pods: number;
  lists: number;
  watchEvents: number;
  rateRequests: number;
  idleSeconds: number;
}

const QUICK: Counts = { gets: 1000, creates: 200, pods: 500, lists: 3, watchEvents: 200, rateRequests: 400, idleSeconds: 2 };
const FULL: Counts = { gets: 5000, creates: 1000, pods: 5000, lists: 10, watchEvents: 2000, rateRequests: 2000, idleSeconds: 5 };

/** CPU ms per request of each process that served it. */
interface PerRequest {
  gatewayMs: number | null;
  apiserverMs: number;
  etcdMs: number;
}

type Operation = 'get' | 'create' | 'list' | 'watchEvent';

/** One watch held open on `path`; counts the events (one JSON line each) that reached it. */
function openWatch(session: ClientHttp2Session, path: string): Promise<{ events(): number; close(): void }> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':path': path, accept: 'application/json' });
    let lines = 0;
    stream.on('data', (chunk: Buffer) => {
      for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) lines++;
    });
    stream.on('error', reject);
    stream.on('response', (headers) => {
      const status = Number(headers[':status']);
      if (status !== 200) return reject(new Error(`watch ${path}: ${status}`));
      resolve({ events: () => lines, close: () => stream.close() });
    });
  });
}

const until = (condition: () => boolean, withinMs: number, what: string) => eventually(what, condition, { withinMs, everyMs: 20 });

async function run({ quick, log }: ScenarioOptions): Promise<ScenarioResult> {
  const counts = quick ? QUICK : FULL;
  const three = await startThreeTargets(TENANT);
  const sessions = three.targets.map((target) => connectH2(target.credentials));
  const upstream = sessions[0]!;
  try {
    const apiserver = three.stack.rig.processes.find((p) => p.name === 'kube-apiserver')!;
    const etcd = three.stack.rig.processes.find((p) => p.name === 'etcd')!;
    const gatewayPid: Record<TargetName, number | null> = { direct: null, passthrough: three.passthrough.child.pid!, tenantgate: three.stack.gateway.pid! };
    const pids: Pids = { passthrough: gatewayPid.passthrough!, tenantgate: gatewayPid.tenantgate!, apiserver: apiserver.pid, etcd: etcd.pid };
    const token = await tenantToken(three.targets[2]!.credentials);
    const tokenHeaders = { authorization: `Bearer ${token}`, accept: 'application/json' };
    for (const target of three.targets) await waitUntilServed(target, tokenHeaders);
    const idle = await idleCpuRate(pids, counts.idleSeconds);
    log(
      `idle CPU ms/s: ${Object.entries(idle)
        .map(([name, ms]) => `${name} ${rounded(ms, 1)}`)
        .join(', ')}`,
    );

    const perRequest = new Map<string, PerRequest>();
    const record = (operation: Operation, target: BenchTarget, spent: Record<string, number>, count: number, apiserverBaselineMs = 0) => {
      const pid = gatewayPid[target.name];
      const row: PerRequest = {
        gatewayMs: pid === null ? null : spent[target.name]! / count,
        // Signed: a watch event's share is a difference of two runs, and noise may make it negative; shown as it is.
        apiserverMs: (spent.apiserver! - apiserverBaselineMs) / count,
        etcdMs: spent.etcd! / count,
      };
      perRequest.set(`${operation} ${target.name}`, row);
      log(
        `${operation.padEnd(10)} ${target.name.padEnd(11)} ${count} requests: ${row.gatewayMs === null ? '' : `gateway ${rounded(row.gatewayMs, 3)} ms, `}kube-apiserver ${rounded(row.apiserverMs, 3)} ms, etcd ${rounded(row.etcdMs, 3)} ms per request`,
      );
    };
    /** `count` requests through each target (after a few unmeasured ones), CPU of every process read around them. */
    const measure = async (operation: Operation, count: number, concurrency: number, requestFor: (target: BenchTarget, index: number) => CountedRequest) => {
      for (const [i, target] of three.targets.entries()) {
        const warmUp = Math.min(50, count);
        await countedRequests(sessions[i]!, warmUp, concurrency, (index) => requestFor(target, count + index));
        const spent = cpuMeter(pids, idle);
        await countedRequests(sessions[i]!, count, concurrency, (index) => requestFor(target, index));
        record(operation, target, spent().ms, count);
      }
    };

    await measure('get', counts.gets, CONCURRENCY, (target) => ({ method: 'GET', path: `${target.namespacePath}/configmaps/${CONFIGMAP}`, expect: 200 }));
    await measure('create', counts.creates, CONCURRENCY, (target, index) => ({
      method: 'POST',
      path: `${target.namespacePath}/configmaps`,
      body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cpu-${target.name}-${index}` }, data: { greeting: 'hello' } }),
      expect: 201,
    }));

    log(`creating ${counts.pods} pods upstream in ${three.upstreamNamespace}`);
    await createPods(upstream, three.upstreamNamespace, 0, counts.pods);
    let listBytes = 0;
    await measure('list', counts.lists, 1, (target) => ({ method: 'GET', path: `${target.namespacePath}/pods`, expect: 200 }));
    {
      const probe = await countedRequests(sessions[2]!, 1, 1, () => ({ method: 'GET', path: `${three.targets[2]!.namespacePath}/pods`, expect: 200 }));
      listBytes = probe.bytes;
    }

    // Watch: the same creates (upstream, admin) with no watcher, then with one watcher through each target; what
    // kube-apiserver spends beyond the no-watcher run is what delivering the events cost it.
    const createWatched = async (label: string) =>
      countedRequests(upstream, counts.watchEvents, CONCURRENCY, (index) => ({
        method: 'POST',
        path: `/api/v1/namespaces/${three.upstreamNamespace}/configmaps`,
        body: JSON.stringify({
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: `watched-${label}-${index}`, labels: { 'bench-watch': label } },
          data: { n: String(index) },
        }),
        expect: 201,
      }));
    // The no-watcher run comes right before each watched one, so drift in the machine's load hits both alike.
    await createWatched('warmup');
    const apiserverWithoutWatcherMs: Record<string, number> = {};
    for (const [i, target] of three.targets.entries()) {
      const baseline = cpuMeter(pids, idle);
      await createWatched(`nobody-${target.name}`);
      apiserverWithoutWatcherMs[target.name] = baseline().ms.apiserver!;
      const label = `w-${target.name}`;
      const watch = await openWatch(sessions[i]!, `${target.namespacePath}/configmaps?watch=1&labelSelector=bench-watch%3D${label}`);
      try {
        const spent = cpuMeter(pids, idle);
        await createWatched(label);
        await until(() => watch.events() >= counts.watchEvents, WATCH_DELIVERED_WITHIN_MS, `${counts.watchEvents} watch events through ${target.name}`);
        record('watchEvent', target, spent().ms, counts.watchEvents, apiserverWithoutWatcherMs[target.name]);
      } finally {
        watch.close();
      }
    }

    // Latency at a fixed moderate rate, one connection, HTTP/1.1 (autocannon paces it): the added cost one request
    // sees when nothing queues.
    const rateP50 = new Map<TargetName, number>();
    for (const target of three.targets) {
      await http1Load({ url: urlOf(target), headers: tokenHeaders, connections: 1, seconds: 10, amount: 100, overallRate: RATE_PER_SECOND });
      const paced = await http1Load({
        url: urlOf(target),
        headers: tokenHeaders,
        connections: 1,
        seconds: 60,
        amount: counts.rateRequests,
        overallRate: RATE_PER_SECOND,
      });
      if (paced.non2xx > 0) throw new Error(`${target.name}: ${paced.non2xx} answers not 2xx at ${RATE_PER_SECOND}/s`);
      rateP50.set(target.name, percentile(paced.latenciesMs, 50));
      log(
        `at ${RATE_PER_SECOND}/s ${target.name.padEnd(11)} p50 ${rounded(percentile(paced.latenciesMs, 50), 3)} ms, p99 ${rounded(percentile(paced.latenciesMs, 99), 3)} ms`,
      );
    }

    const figures: Record<string, unknown> = {
      counts,
      concurrency: CONCURRENCY,
      client: 'node:http2 in the bench process, client certificates (tenant certificate through tenantgate, admin directly and through --passthrough)',
      cpuSource: `/proc/<pid>/stat utime+stime, ${CPU_TICK_MS} ms resolution, each process's idle rate taken off`,
      idleCpuMsPerSecond: Object.fromEntries(Object.entries(idle).map(([name, ms]) => [name, rounded(ms, 2)])),
      listBytesThroughTenantgate: listBytes,
      watchNote:
        "kube-apiserver's share of a watch event is (creates with the watcher) - (the same creates without), so run-to-run noise of the creates can exceed it",
      watchApiserverMsWithoutWatcher: Object.fromEntries(Object.entries(apiserverWithoutWatcherMs).map(([name, ms]) => [name, rounded(ms, 1)])),
      rate: { requestsPerSecond: RATE_PER_SECOND, requests: counts.rateRequests, client: 'autocannon, HTTP/1.1, one connection, bearer token' },
    };
    const targets: TargetCheck[] = [];
    const charts: Chart[] = [];
    for (const operation of ['get', 'create', 'list', 'watchEvent'] as const) {
      const of = (name: TargetName) => perRequest.get(`${operation} ${name}`)!;
      const direct = of('direct');
      const row = (name: TargetName) => {
        const measured = of(name);
        return {
          gatewayCpuMsPerRequest: measured.gatewayMs === null ? null : rounded(measured.gatewayMs, 4),
          apiserverCpuMsPerRequest: rounded(measured.apiserverMs, 4),
          etcdCpuMsPerRequest: rounded(measured.etcdMs, 4),
          apiserverVsDirect: rounded(measured.apiserverMs / direct.apiserverMs, 3),
          gatewayVsItsApiserver: measured.gatewayMs === null ? null : rounded(measured.gatewayMs / measured.apiserverMs, 3),
          gatewayVsDirectApiserver: measured.gatewayMs === null ? null : rounded(measured.gatewayMs / direct.apiserverMs, 3),
        };
      };
      figures[operation] = { direct: row('direct'), passthrough: row('passthrough'), tenantgate: row('tenantgate') };
      const gateway = of('tenantgate');
      const ratio = gateway.gatewayMs! / gateway.apiserverMs;
      if (operation === 'get')
        targets.push({
          target: `GET one ConfigMap: tenantgate CPU <= ${TARGET_GET_RATIO}x kube-apiserver's`,
          value: rounded(ratio, 3),
          unit: 'x kube-apiserver',
          met: ratio <= TARGET_GET_RATIO,
        });
      if (operation === 'list')
        targets.push({
          target: `LIST ${counts.pods} pods: tenantgate CPU <= ${TARGET_LIST_RATIO}x kube-apiserver's`,
          value: rounded(ratio, 3),
          unit: 'x kube-apiserver',
          met: ratio <= TARGET_LIST_RATIO,
        });
      charts.push({
        title: `CPU per ${operation}: kube-apiserver direct, kube-apiserver and tenantgate through tenantgate`,
        unit: 'ms',
        bars: {
          'kube-apiserver direct': rounded(direct.apiserverMs, 3),
          'kube-apiserver via tenantgate': rounded(gateway.apiserverMs, 3),
          tenantgate: rounded(gateway.gatewayMs!, 3),
        },
      });
    }
    const added = rateP50.get('tenantgate')! - rateP50.get('direct')!;
    figures.rateP50Ms = Object.fromEntries([...rateP50.entries()].map(([name, ms]) => [name, rounded(ms, 3)]));
    targets.push({
      target: `small GET at ${RATE_PER_SECOND}/s: p50 added <= ${TARGET_P50_ADDED_MS} ms`,
      value: rounded(added, 3),
      unit: 'ms',
      met: added <= TARGET_P50_ADDED_MS,
    });
    return { scenario: 'cpu-per-request', figures, targets, charts };
  } finally {
    for (const session of sessions) session.close();
    await three.stop();
  }
}

export const cpuPerRequestScenario: Scenario = {
  name: 'cpu-per-request',
  description:
    'CPU per request of tenantgate and kube-apiserver (from /proc, same run) for GET, create, LIST of pods and a watch event, and small GET p50 at a fixed rate',
  run,
};

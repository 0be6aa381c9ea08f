// Issue 18 item 3: large lists rewritten on a worker thread. A quiet tenant's small GETs (p50, p99) while another
// tenant streams a 50 MB list, through a tenantgate that offloads every list and one that offloads none, and that
// list's own throughput both ways against the upstream directly: ConfigMaps (rewritten at byte level) and RoleBindings
// (each item parsed by its rule). Then, in memory, lists of 64 KB to 50 MB both ways: the event loop's busy time, to
// show where the worker's hop pays for itself. Objects are made upstream; bounded in count and time.
import { readFileSync, writeFileSync } from 'node:fs';
import type { ClientHttp2Session } from 'node:http2';
import { connectH2, credentialsOf, h2Request } from '../../test/helpers/http.ts';
import { loadFor, loadInWorker, type LoadResult } from '../../test/helpers/load.ts';
import { spawnGateway, startStack, stopChild } from '../../test/helpers/stack.ts';
import { createTestTenant } from '../../test/helpers/tenants.ts';
import type { Chart, Scenario, ScenarioOptions, ScenarioResult } from '../scenario.ts';
import { median, rounded } from '../stats.ts';
import { closeOffload, LIST_OFFLOAD_MEASURED_BYTES } from '../../lib/request/offload.ts';
import { FAST_ROW, rewriteOnce, SLOW_ROW, upstreamList } from '../load/list-offload-memory.ts';
import { timedList, type TimedList } from './list.ts';

const JSON_MEDIA_TYPE = 'application/json';
const PROTOBUF_MEDIA_TYPE = 'application/vnd.kubernetes.protobuf';

const LOUD = 'loud01';
const QUIET = 'quiet1';
const CREATE_CONCURRENCY = 16;
/** The big lists: 500 objects of about 100 KB each (about 50 MB). */
const BIG_ITEMS = 500;
const CONFIGMAP_VALUE_BYTES = 100 * 1024;
const ROLEBINDING_SUBJECTS = 1000;
const QUIET_LOOPS = 2;
const LOUD_LOOPS = 2;
/** Whole-list timings per target: the median is reported. */
const LIST_ROUNDS = 3;
const MEMORY_SIZES = [64 * 1024, 1024 * 1024, 8 * 1024 * 1024, 50 * 1024 * 1024];

const BIG_LISTS = [
  {
    name: 'configmaps',
    path: '/api/v1/namespaces/NS/configmaps',
    object: (index: number, tenant: string) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `cm-${index}`, labels: { 'kubezoo.io/tenant': tenant } },
      data: { value: 'v'.repeat(CONFIGMAP_VALUE_BYTES) },
    }),
  },
  {
    name: 'rolebindings',
    path: '/apis/rbac.authorization.k8s.io/v1/namespaces/NS/rolebindings',
    object: (index: number, tenant: string) => ({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: `rb-${index}`, labels: { 'kubezoo.io/tenant': tenant } },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'reader' },
      subjects: Array.from({ length: ROLEBINDING_SUBJECTS }, (_, s) => ({
        kind: 'ServiceAccount',
        name: `service-account-${s}`,
        namespace: `${tenant}-default`,
      })),
    }),
  },
] as const;

/** `count` objects made upstream in `namespace`, CREATE_CONCURRENCY at a time. */
async function createObjects(upstream: ClientHttp2Session, path: string, count: number, object: (index: number) => object): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const index = next++;
      const answer = await h2Request(upstream, 'POST', path, { headers: { 'content-type': 'application/json' }, body: JSON.stringify(object(index)) });
      if (answer.status !== 201 && answer.status !== 409) throw new Error(`${path} ${index}: ${answer.status} ${answer.body.slice(0, 200)}`);
    }
  };
  await Promise.all(Array.from({ length: CREATE_CONCURRENCY }, worker));
}
async function medianList(
  session: ClientHttp2Session,
  path: string,
  accept = JSON_MEDIA_TYPE,
): Promise<{ ms: number; firstByteMs: number; bytes: number; mbPerSecond: number }> {
  const warm = await timedList(session, path, accept); // warm: TLS, discovery, the worker thread
  // A leg must not silently measure another encoding than it says.
  if (!warm.contentType.startsWith(accept)) throw new Error(`LIST ${path}: asked ${accept}, answered ${warm.contentType}`);
  const runs: TimedList[] = [];
  for (let i = 0; i < LIST_ROUNDS; i++) runs.push(await timedList(session, path, accept));
  const ms = median(runs.map((r) => r.ms));
  const bytes = runs[0]!.bytes;
  return { ms: rounded(ms, 1), firstByteMs: rounded(median(runs.map((r) => r.firstByteMs)), 2), bytes, mbPerSecond: rounded(bytes / 1e6 / (ms / 1000), 1) };
}

/** A copy of a kubeconfig that points at another tenantgate (same CA, same credentials). */
function kubeconfigAt(kubeconfig: string, server: string): string {
  const copy = `${kubeconfig}.${new URL(server).port}`;
  writeFileSync(copy, readFileSync(kubeconfig, 'utf8').replace(/server: \S+/, `server: ${server}`), { mode: 0o600 });
  return copy;
}

const quietFigures = (load: LoadResult) => ({
  requests: load.answers.length,
  notOk: load.answers.filter((a) => a.status !== 200).length,
  p50Ms: rounded(load.p50, 2),
  p99Ms: rounded(load.p99, 2),
});

/** In memory: each size of each kind's list through the rewriter inline and on a worker, the median of a few runs. */
async function memorySweep(quick: boolean, log: (line: string) => void): Promise<Record<string, unknown>[]> {
  const rows: Record<string, unknown>[] = [];
  for (const [kind, row] of [
    ['configmaps', FAST_ROW],
    ['rolebindings', SLOW_ROW],
  ] as const) {
    for (const size of quick ? MEMORY_SIZES.slice(0, 3) : MEMORY_SIZES) {
      const list = upstreamList(row, size);
      const runs = size > 10e6 ? 3 : 7;
      const figures: Record<string, unknown> = { kind, bytes: list.length, runs };
      for (const [way, threshold] of [
        ['inline', 0],
        ['worker', 1],
      ] as const) {
        await rewriteOnce(row, list, threshold); // warm: JIT, the worker thread
        const measured = [];
        for (let i = 0; i < runs; i++) measured.push(await rewriteOnce(row, list, threshold));
        figures[way] = {
          ms: rounded(median(measured.map((m) => m.ms)), 2),
          eventLoopBusyMs: rounded(median(measured.map((m) => m.loopBusyMs)), 2),
          longestBlockMs: rounded(median(measured.map((m) => m.longestBlockMs)), 2),
        };
      }
      const inline = figures.inline as { eventLoopBusyMs: number; ms: number };
      const worker = figures.worker as { eventLoopBusyMs: number; ms: number };
      figures.eventLoopBusyWorkerVsInline = rounded(worker.eventLoopBusyMs / inline.eventLoopBusyMs, 2);
      figures.timeWorkerVsInline = rounded(worker.ms / inline.ms, 2);
      rows.push(figures);
      log(
        `in memory, ${kind} ${(list.length / 1e6).toFixed(2)} MB: event loop busy inline ${inline.eventLoopBusyMs} ms, worker ${worker.eventLoopBusyMs} ms; list ${inline.ms} / ${worker.ms} ms`,
      );
    }
  }
  await closeOffload();
  return rows;
}

async function run({ quick, log }: ScenarioOptions): Promise<ScenarioResult> {
  const loadMs = quick ? 2000 : 5000;
  const bigItems = quick ? 100 : BIG_ITEMS;
  const figures: Record<string, any> = { loadMs, quietLoops: QUIET_LOOPS, loudLoops: LOUD_LOOPS, listRounds: LIST_ROUNDS, bigItems };
  figures.memory = await memorySweep(quick, log);
  // Lists from the measured JSON threshold on go to the pool here, protobuf lists too (by default they stay inline);
  // the other tenantgate rewrites every list inline.
  const offloadAt = String(LIST_OFFLOAD_MEASURED_BYTES);
  const stack = await startStack({ controllers: false, gatewayArgs: ['--list-offload-threshold', offloadAt, '--protobuf-list-offload-threshold', offloadAt] });
  let inline: Awaited<ReturnType<typeof spawnGateway>> | null = null;
  const sessions: ClientHttp2Session[] = [];
  try {
    inline = await spawnGateway(stack.files, ['--confine-upstream-discovery', '--list-offload-threshold', '0', '--protobuf-list-offload-threshold', '0']);
    const loud = await createTestTenant(stack, LOUD);
    const quiet = await createTestTenant(stack, QUIET);
    const upstream = connectH2(credentialsOf(stack.upstreamKubeconfig));
    sessions.push(upstream);
    const t0 = performance.now();
    for (const big of BIG_LISTS) await createObjects(upstream, big.path.replace('NS', `${LOUD}-default`), bigItems, (i) => big.object(i, LOUD));
    await createObjects(upstream, `/api/v1/namespaces/${QUIET}-default/configmaps`, 1, (i) => ({ metadata: { name: `small-${i}` }, data: { value: 'small' } }));
    figures.createdMs = Math.round(performance.now() - t0);
    log(`${bigItems} ConfigMaps and ${bigItems} RoleBindings created upstream in ${figures.createdMs} ms`);

    const gateways = { worker: stack.gatewayUrl, inline: inline.url } as const;
    const quietPath = '/api/v1/namespaces/default/configmaps/small-0';
    /** The loud tenant's list at `url` in `accept`: its median time, on a session of its own. */
    const listOn = (url: string, listPath: string, accept: string) => {
      const session = connectH2({ ...credentialsOf(loud.kubeconfig), server: url });
      sessions.push(session);
      return medianList(session, listPath, accept);
    };
    /** The quiet tenant's small GETs at `url` while the loud tenant lists in `accept` in a loop, and what the lists moved. */
    const besideLists = async (url: string, listPath: string, accept: string) => {
      const [beside, lists] = await Promise.all([
        loadFor(kubeconfigAt(quiet.kubeconfig, url), quietPath, QUIET_LOOPS, loadMs),
        loadInWorker(kubeconfigAt(loud.kubeconfig, url), listPath, LOUD_LOOPS, loadMs, false, accept),
      ]);
      const listBytes = lists.answers.reduce((n, a) => n + (a.status === 200 ? a.body.length : 0), 0);
      return {
        quietP99: beside.p99,
        lists: lists.answers.length,
        figures: {
          quietBesideLists: quietFigures(beside),
          loudListsDone: lists.answers.filter((a) => a.status === 200).length,
          loudMbPerSecond: rounded(listBytes / 1e6 / (loadMs / 1000), 1),
        },
      };
    };
    const charts: Chart[] = [];
    for (const big of BIG_LISTS) {
      const listPath = big.path.replace('NS', 'default');
      const direct = await medianList(upstream, big.path.replace('NS', `${LOUD}-default`));
      const kind: Record<string, any> = { direct };
      for (const [name, url] of Object.entries(gateways)) {
        const timed = await listOn(url, listPath, JSON_MEDIA_TYPE);
        // A quiet tenant's small GETs alone, then beside the loud tenant's lists in a loop.
        const alone = await loadFor(kubeconfigAt(quiet.kubeconfig, url), quietPath, QUIET_LOOPS, loadMs);
        const besides = await besideLists(url, listPath, JSON_MEDIA_TYPE);
        kind[name] = {
          list: { ...timed, throughputVsDirect: rounded(timed.mbPerSecond / direct.mbPerSecond, 2) },
          quietAlone: quietFigures(alone),
          ...besides.figures,
        };
        log(
          `${big.name} ${(direct.bytes / 1e6).toFixed(1)} MB, ${name}: ${timed.mbPerSecond} MB/s (direct ${direct.mbPerSecond}); quiet p99 alone ${rounded(alone.p99)} ms, beside the lists ${rounded(besides.quietP99)} ms (${besides.lists} lists)`,
        );
      }
      kind.quietP99BesideWorkerVsInline = rounded(kind.worker.quietBesideLists.p99Ms / kind.inline.quietBesideLists.p99Ms, 2);
      figures[big.name] = kind;
      charts.push({
        title: `Quiet tenant's small GET p99 beside ${(direct.bytes / 1e6).toFixed(0)} MB ${big.name} lists`,
        unit: 'ms',
        bars: {
          alone: kind.inline.quietAlone.p99Ms,
          'lists on a worker': kind.worker.quietBesideLists.p99Ms,
          'lists inline': kind.inline.quietBesideLists.p99Ms,
        },
      });
      charts.push({
        title: `One ${big.name} list's throughput`,
        unit: 'MB/s',
        bars: { direct: direct.mbPerSecond, 'tenantgate, worker': kind.worker.list.mbPerSecond, 'tenantgate, inline': kind.inline.list.mbPerSecond },
      });
      // (RoleBindings have no protobuf answer in tenantgate yet: they stay JSON.)
      if (big.name !== 'configmaps') continue;
      // The same list in protobuf (client-go's controllers ask for it): its throughput both ways against direct, and
      // the quiet tenant's GETs beside it (what decides whether protobuf lists go to the pool).
      const directProtobuf = await medianList(upstream, big.path.replace('NS', `${LOUD}-default`), PROTOBUF_MEDIA_TYPE);
      const protobuf: Record<string, any> = { direct: directProtobuf };
      kind.protobuf = protobuf;
      for (const [name, url] of Object.entries(gateways)) {
        const timed = await listOn(url, listPath, PROTOBUF_MEDIA_TYPE);
        const besides = await besideLists(url, listPath, PROTOBUF_MEDIA_TYPE);
        protobuf[name] = { list: { ...timed, throughputVsDirect: rounded(timed.mbPerSecond / directProtobuf.mbPerSecond, 2) }, ...besides.figures };
        log(
          `${big.name} in protobuf ${(directProtobuf.bytes / 1e6).toFixed(1)} MB, ${name}: ${timed.mbPerSecond} MB/s (direct ${directProtobuf.mbPerSecond}); quiet p99 beside the lists ${rounded(besides.quietP99)} ms (${besides.lists} lists)`,
        );
      }
      protobuf.quietP99BesideWorkerVsInline = rounded(protobuf.worker.quietBesideLists.p99Ms / protobuf.inline.quietBesideLists.p99Ms, 2);
      charts.push({
        title: `Quiet tenant's small GET p99 beside ${(directProtobuf.bytes / 1e6).toFixed(0)} MB ${big.name} lists in protobuf`,
        unit: 'ms',
        bars: {
          alone: kind.inline.quietAlone.p99Ms,
          'lists on a worker': protobuf.worker.quietBesideLists.p99Ms,
          'lists inline': protobuf.inline.quietBesideLists.p99Ms,
        },
      });
      charts.push({
        title: `One ${big.name} list's throughput in protobuf`,
        unit: 'MB/s',
        bars: {
          direct: directProtobuf.mbPerSecond,
          'tenantgate, worker': protobuf.worker.list.mbPerSecond,
          'tenantgate, inline': protobuf.inline.list.mbPerSecond,
        },
      });
    }
    return { scenario: 'list-offload', figures, targets: [], charts };
  } finally {
    for (const session of sessions) session.close();
    if (inline !== null) await stopChild(inline.child);
    await stack.stop();
  }
}

export const listOffloadScenario: Scenario = {
  name: 'list-offload',
  description:
    "A quiet tenant's small GET p99 while another streams 50 MB lists (ConfigMaps: byte-level, in JSON and protobuf; RoleBindings: parsed per item), lists on a worker thread and inline, with the lists' throughput against direct; in memory, the event loop's busy time per list size both ways",
  run,
};

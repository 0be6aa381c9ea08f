// Scenario 2: LIST of 500 and 5,000 realistic pods (JSON) through the upstream directly, tenantgate --passthrough and
// tenantgate as a tenant: throughput, time to first byte, tenantgate's peak RSS growth. Then issue 16's cached LIST
// (resourceVersion=0): tenantgate's watch cache against the upstream's own and --watch-cache=false. Pods are made upstream.
import type { ClientHttp2Session } from 'node:http2';
import { connectH2, h2Request } from '../../test/helpers/http.ts';
import { realisticPod, seededRandom } from '../k8s-payloads.ts';
import { spawnGateway, stopChild } from '../../test/helpers/stack.ts';
import { rssOf } from '../load/cpu.ts';
import { startThreeTargets, type TargetName } from '../load/targets.ts';
import { watchCacheMetrics, watchCacheOffFlags } from '../load/watch-cache.ts';
import type { Chart, Scenario, ScenarioOptions, ScenarioResult, TargetCheck } from '../scenario.ts';
import { median, rounded } from '../stats.ts';

const TENANT = 'blist1';
const CREATE_CONCURRENCY = 32;
const TARGET_THROUGHPUT_RATIO = 0.9;
const TARGET_FIRST_BYTE_RATIO = 1.1;
const TARGET_RSS_GROWTH_MB = 32;
/** Issue 16: a LIST served from tenantgate's watch cache against the upstream's (resourceVersion=0 both). */
const TARGET_CACHED_THROUGHPUT_RATIO = 2;
const TARGET_CACHED_FIRST_BYTE_RATIO = 0.5;
/** How long a cache may take to hold every pod just created before its LIST is timed. */
const CACHE_FILL_WAIT_MS = 30_000;

export interface TimedList {
  ms: number;
  firstByteMs: number;
  bytes: number;
  contentType: string;
}

/** One LIST at `path`, timed from the request to its last byte; `accept` chooses the encoding (JSON unless told). */
export function timedList(session: ClientHttp2Session, path: string, accept = 'application/json'): Promise<TimedList> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    let firstByte = 0n;
    let bytes = 0;
    let status = 0;
    let contentType = '';
    const stream = session.request({ ':path': path, accept });
    stream.on('response', (headers) => {
      status = Number(headers[':status']);
      contentType = String(headers['content-type'] ?? '');
    });
    stream.on('data', (chunk: Buffer) => {
      if (firstByte === 0n) firstByte = process.hrtime.bigint();
      bytes += chunk.length;
    });
    stream.on('end', () =>
      status === 200
        ? resolve({ ms: Number(process.hrtime.bigint() - started) / 1e6, firstByteMs: Number(firstByte - started) / 1e6, bytes, contentType })
        : reject(new Error(`LIST ${path}: ${status}`)),
    );
    stream.on('error', reject);
  });
}

/** Waits until a LIST at `path` holds `count` items (a watch cache may still be taking in the pods just made). */
async function untilListHolds(session: ClientHttp2Session, path: string, count: number): Promise<void> {
  const deadline = performance.now() + CACHE_FILL_WAIT_MS;
  for (;;) {
    const answer = await h2Request(session, 'GET', path, { headers: { accept: 'application/json' } });
    const items = answer.status === 200 ? (answer.json() as { items: unknown[] }).items.length : -1;
    if (items === count) return;
    if (performance.now() > deadline) throw new Error(`LIST ${path}: ${answer.status}, ${items} items, not ${count}, after ${CACHE_FILL_WAIT_MS / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** A realistic pod as a client would create it: the server's fields (uid, resourceVersion, status...) left out. */
function podToCreate(random: () => number, index: number, namespace: string): object {
  const pod = realisticPod(random, index, namespace) as { metadata: Record<string, unknown>; spec: { containers: { volumeMounts: { name: string }[] }[] } };
  const { uid: _uid, resourceVersion: _rv, creationTimestamp: _ct, generateName: _gn, ...metadata } = pod.metadata;
  for (const container of pod.spec.containers) container.volumeMounts[1]!.name = 'kube-api-access-x'; // the volume's name
  return { apiVersion: 'v1', kind: 'Pod', metadata: { ...metadata, name: `pod-${index}` }, spec: pod.spec };
}

/** Pods `pod-<from>` .. `pod-<to - 1>` in `namespace` upstream, CREATE_CONCURRENCY at a time. */
export async function createPods(upstream: ClientHttp2Session, namespace: string, from: number, to: number): Promise<void> {
  // Pods need their service account to exist (the admission plugin looks it up); no controller makes it here.
  const account = await h2Request(upstream, 'POST', `/api/v1/namespaces/${namespace}/serviceaccounts`, {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ metadata: { name: 'default' } }),
  });
  if (account.status !== 201 && account.status !== 409) throw new Error(`service account: ${account.status} ${account.body.slice(0, 300)}`);
  const random = seededRandom(from + 1);
  let next = from;
  const worker = async () => {
    while (next < to) {
      const index = next++;
      const answer = await h2Request(upstream, 'POST', `/api/v1/namespaces/${namespace}/pods`, {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(podToCreate(random, index, namespace)),
      });
      if (answer.status !== 201) throw new Error(`creating pod ${index}: ${answer.status} ${answer.body.slice(0, 300)}`);
    }
  };
  await Promise.all(Array.from({ length: CREATE_CONCURRENCY }, worker));
}

async function run({ quick, log }: ScenarioOptions): Promise<ScenarioResult> {
  const sizes = quick ? [500] : [500, 5000];
  const rounds = quick ? 3 : 7;
  const three = await startThreeTargets(TENANT);
  const sessions = three.targets.map((target) => connectH2(target.credentials));
  const upstream = sessions[0]!;
  let cacheOff: Awaited<ReturnType<typeof spawnGateway>> | null = null;
  try {
    const figures: Record<string, unknown> = { rounds, createConcurrency: CREATE_CONCURRENCY, client: 'node:http2, client certificates' };
    const targets: TargetCheck[] = [];
    const charts: Chart[] = [];
    let created = 0;
    let largestRssGrowthMb = 0;
    for (const pods of sizes) {
      const t0 = performance.now();
      await createPods(upstream, three.upstreamNamespace, created, pods);
      created = pods;
      log(`${pods} pods created upstream in ${Math.round(performance.now() - t0)} ms`);
      const rssBefore = rssOf(three.stack.gateway.pid!);
      const passthroughRssBefore = rssOf(three.passthrough.child.pid!);
      let passthroughRssPeak = passthroughRssBefore;
      const results = three.targets.map(() => ({ ms: [] as number[], firstByteMs: [] as number[], bytes: 0 }));
      // Rounds interleaved across targets so drift on a noisy machine hits all of them alike; round 0 warms up.
      for (let round = 0; round <= rounds; round++) {
        for (const [i, target] of three.targets.entries()) {
          const timed = await timedList(sessions[i]!, `${target.namespacePath}/pods`);
          passthroughRssPeak = Math.max(passthroughRssPeak, rssOf(three.passthrough.child.pid!));
          if (round === 0) continue;
          results[i]!.ms.push(timed.ms);
          results[i]!.firstByteMs.push(timed.firstByteMs);
          results[i]!.bytes = timed.bytes;
        }
      }
      const rssGrowthMb = (three.stack.gatewayMemory().peak - rssBefore) / 2 ** 20;
      largestRssGrowthMb = Math.max(largestRssGrowthMb, rssGrowthMb);
      const row = (name: TargetName) => {
        const r = results[three.targets.findIndex((t) => t.name === name)]!;
        return { ms: median(r.ms), firstByteMs: median(r.firstByteMs), bytes: r.bytes, mbPerSecond: r.bytes / 1e6 / (median(r.ms) / 1000) };
      };
      const direct = row('direct');
      const sizeFigures: Record<string, unknown> = { listBytes: direct.bytes, bytesPerPod: Math.round(direct.bytes / pods) };
      for (const name of ['direct', 'passthrough', 'tenantgate'] as const) {
        const r = row(name);
        sizeFigures[name] = {
          listMs: rounded(r.ms, 1),
          mbPerSecond: rounded(r.mbPerSecond, 1),
          throughputVsDirect: rounded(direct.ms / r.ms, 3),
          firstByteMs: rounded(r.firstByteMs, 2),
          firstByteVsDirect: rounded(r.firstByteMs / direct.firstByteMs, 3),
          bytes: r.bytes,
        };
      }
      sizeFigures.tenantgateRssBeforeMb = rounded(rssBefore / 2 ** 20, 1);
      sizeFigures.tenantgatePeakRssGrowthMb = rounded(rssGrowthMb, 1);
      sizeFigures.passthroughPeakRssGrowthMb = rounded((passthroughRssPeak - passthroughRssBefore) / 2 ** 20, 1);
      figures[`pods${pods}`] = sizeFigures;
      const gateway = row('tenantgate');
      log(
        `${pods} pods, ${(direct.bytes / 1e6).toFixed(1)} MB: MB/s direct ${direct.mbPerSecond.toFixed(0)}, passthrough ${row('passthrough').mbPerSecond.toFixed(0)}, tenantgate ${gateway.mbPerSecond.toFixed(0)}; ` +
          `first byte ms ${direct.firstByteMs.toFixed(1)} / ${row('passthrough').firstByteMs.toFixed(1)} / ${gateway.firstByteMs.toFixed(1)}; tenantgate RSS +${rssGrowthMb.toFixed(1)} MB`,
      );
      if (pods === sizes[sizes.length - 1]) {
        const throughput = direct.ms / gateway.ms;
        const firstByte = gateway.firstByteMs / direct.firstByteMs;
        targets.push(
          {
            target: `${pods}-pod LIST: >= ${TARGET_THROUGHPUT_RATIO}x direct throughput`,
            value: rounded(throughput, 3),
            unit: 'x direct',
            met: throughput >= TARGET_THROUGHPUT_RATIO,
          },
          {
            target: `${pods}-pod LIST: time to first byte <= ${TARGET_FIRST_BYTE_RATIO}x direct`,
            value: rounded(firstByte, 3),
            unit: 'x direct',
            met: firstByte <= TARGET_FIRST_BYTE_RATIO,
          },
        );
      }
      const bars = (pick: (r: ReturnType<typeof row>) => number) => ({
        direct: pick(row('direct')),
        passthrough: pick(row('passthrough')),
        tenantgate: pick(row('tenantgate')),
      });
      charts.push(
        { title: `LIST of ${pods} pods, throughput`, unit: 'MB/s', bars: bars((r) => rounded(r.mbPerSecond, 1)) },
        { title: `LIST of ${pods} pods, time to first byte`, unit: 'ms', bars: bars((r) => rounded(r.firstByteMs, 2)) },
      );
    }
    targets.push({
      target: `LIST: tenantgate RSS growth <= ${TARGET_RSS_GROWTH_MB} MB whatever the list size (largest of ${sizes.join(', ')} pods)`,
      value: rounded(largestRssGrowthMb, 1),
      unit: 'MB',
      met: largestRssGrowthMb <= TARGET_RSS_GROWTH_MB,
    });

    // Issue 16: the cached LIST (resourceVersion=0) of the largest size, after the consistent ones (their peak RSS
    // growth stays theirs). The upstream answers it from its own watch cache too.
    const offFlags = watchCacheOffFlags();
    const tenantgate = three.targets.find((t) => t.name === 'tenantgate')!;
    if (offFlags !== null) {
      cacheOff = await spawnGateway(three.stack.files, ['--confine-upstream-discovery', ...offFlags]);
      sessions.push(connectH2({ ...tenantgate.credentials, server: cacheOff.url }));
    }
    const cachedLegs = [
      { name: 'direct', label: 'direct', session: upstream, path: `${three.targets[0]!.namespacePath}/pods?resourceVersion=0` },
      { name: 'tenantgate', label: 'tenantgate (watch cache)', session: sessions[2]!, path: `${tenantgate.namespacePath}/pods?resourceVersion=0` },
      ...(cacheOff === null
        ? []
        : [
            {
              name: 'watch-cache-off',
              label: 'tenantgate --watch-cache=false',
              session: sessions[3]!,
              path: `${tenantgate.namespacePath}/pods?resourceVersion=0`,
            },
          ]),
    ];
    const pods = sizes[sizes.length - 1]!;
    for (const leg of cachedLegs) await untilListHolds(leg.session, leg.path, pods);
    const cachedResults = cachedLegs.map(() => ({ ms: [] as number[], firstByteMs: [] as number[], bytes: 0 }));
    for (let round = 0; round <= rounds; round++) {
      for (const [i, leg] of cachedLegs.entries()) {
        const timed = await timedList(leg.session, leg.path);
        if (round === 0) continue;
        cachedResults[i]!.ms.push(timed.ms);
        cachedResults[i]!.firstByteMs.push(timed.firstByteMs);
        cachedResults[i]!.bytes = timed.bytes;
      }
    }
    const cachedRow = (i: number) => {
      const r = cachedResults[i]!;
      return { ms: median(r.ms), firstByteMs: median(r.firstByteMs), bytes: r.bytes, mbPerSecond: r.bytes / 1e6 / (median(r.ms) / 1000) };
    };
    const cachedDirect = cachedRow(0);
    const cachedFigures: Record<string, unknown> = {
      query: 'resourceVersion=0',
      watchCacheOffFlags: offFlags ?? "none: this tenantgate has no watch cache (its leg is today's path; no --watch-cache=false leg)",
    };
    for (const [i, leg] of cachedLegs.entries()) {
      const r = cachedRow(i);
      cachedFigures[leg.name] = {
        listMs: rounded(r.ms, 1),
        mbPerSecond: rounded(r.mbPerSecond, 1),
        throughputVsDirect: rounded(cachedDirect.ms / r.ms, 3),
        firstByteMs: rounded(r.firstByteMs, 2),
        firstByteVsDirect: rounded(r.firstByteMs / cachedDirect.firstByteMs, 3),
        bytes: r.bytes,
      };
    }
    const cache = await watchCacheMetrics(three.stack.metricsUrl);
    cachedFigures.tenantgateWatchCache = cache;
    if (cache !== null && cache.objects > 0) cachedFigures.tenantgateWatchCacheBytesPer1000Objects = Math.round((cache.bytes * 1000) / cache.objects);
    figures[`cachedPods${pods}`] = cachedFigures;
    const cachedGateway = cachedRow(1);
    const cachedThroughput = cachedDirect.ms / cachedGateway.ms;
    const cachedFirstByte = cachedGateway.firstByteMs / cachedDirect.firstByteMs;
    log(
      `cached LIST of ${pods} pods (resourceVersion=0): ${cachedLegs.map((leg, i) => `${leg.name} ${cachedRow(i).mbPerSecond.toFixed(0)} MB/s, first byte ${cachedRow(i).firstByteMs.toFixed(1)} ms`).join('; ')}`,
    );
    targets.push(
      {
        target: `${pods}-pod cached LIST (resourceVersion=0): >= ${TARGET_CACHED_THROUGHPUT_RATIO}x direct throughput`,
        value: rounded(cachedThroughput, 3),
        unit: 'x direct',
        met: cachedThroughput >= TARGET_CACHED_THROUGHPUT_RATIO,
      },
      {
        target: `${pods}-pod cached LIST (resourceVersion=0): time to first byte <= ${TARGET_CACHED_FIRST_BYTE_RATIO}x direct`,
        value: rounded(cachedFirstByte, 3),
        unit: 'x direct',
        met: cachedFirstByte <= TARGET_CACHED_FIRST_BYTE_RATIO,
      },
    );
    const cachedBars = (pick: (r: ReturnType<typeof cachedRow>) => number) => Object.fromEntries(cachedLegs.map((leg, i) => [leg.label, pick(cachedRow(i))]));
    charts.push(
      { title: `Cached LIST (resourceVersion=0) of ${pods} pods, throughput`, unit: 'MB/s', bars: cachedBars((r) => rounded(r.mbPerSecond, 1)) },
      { title: `Cached LIST (resourceVersion=0) of ${pods} pods, time to first byte`, unit: 'ms', bars: cachedBars((r) => rounded(r.firstByteMs, 2)) },
    );
    return { scenario: 'list', figures, targets, charts };
  } finally {
    for (const session of sessions) session.close();
    if (cacheOff !== null) await stopChild(cacheOff.child);
    await three.stop();
  }
}

export const listScenario: Scenario = {
  name: 'list',
  description:
    'LIST of 500 and 5,000 realistic pods (JSON): throughput, time to first byte, tenantgate peak RSS growth; direct vs passthrough vs tenantgate; ' +
    "then the cached LIST (resourceVersion=0): tenantgate's watch cache vs direct vs --watch-cache=false",
  run,
};

// Issue 18: LIST of 300 and 5,000 realistic pods in protobuf (what client-go's controllers ask for) directly, through
// tenantgate --passthrough and through tenantgate as a tenant, beside the JSON path: throughput, time to first byte,
// bytes on the wire and CPU per list, all in one run. Pods are made upstream; every loop is bounded in count.
import type { ClientHttp2Session } from 'node:http2';
import { connectH2, h2Request, sumMetric } from '../../test/helpers/http.ts';
import { decodeMessage, goModuleCache, loadProtoMessages, protoFields } from '../../test/helpers/k8s-proto.ts';
import { CPU_TICK_MS, cpuMeter, idleCpuRate, type Pids } from '../load/cpu.ts';
import { startThreeTargets, type TargetName } from '../load/targets.ts';
import type { Chart, Scenario, ScenarioOptions, ScenarioResult, TargetCheck } from '../scenario.ts';
import { median, rounded } from '../stats.ts';
import { createPods, timedList } from './list.ts';

const TENANT = 'blpb01';
const PROTOBUF = 'application/vnd.kubernetes.protobuf';
/** What client-go sends with ContentType protobuf. */
const ACCEPT_PROTOBUF = `${PROTOBUF}, application/json`;
const ACCEPT_JSON = 'application/json';
const TARGET_THROUGHPUT_RATIO = 0.9;

interface Leg {
  /** Figures key and chart label, e.g. `tenantgate protobuf`. */
  label: string;
  target: TargetName;
  encoding: 'protobuf' | 'json';
}

/** Interleaved in this order every round; the JSON legs are there for bytes (and the CPU) against protobuf. */
const LEGS: readonly Leg[] = [
  { label: 'direct protobuf', target: 'direct', encoding: 'protobuf' },
  { label: 'passthrough protobuf', target: 'passthrough', encoding: 'protobuf' },
  { label: 'tenantgate protobuf', target: 'tenantgate', encoding: 'protobuf' },
  { label: 'direct json', target: 'direct', encoding: 'json' },
  { label: 'tenantgate json', target: 'tenantgate', encoding: 'json' },
];

interface Sizes {
  /** List sizes in order, pods topped up between them: one under the 4 MiB a protobuf list is held whole to (300 pods: 2.9 MB), one over. */
  pods: number[];
  rounds: number;
  idleSeconds: number;
}
const QUICK: Sizes = { pods: [300], rounds: 2, idleSeconds: 1 };
const FULL: Sizes = { pods: [300, 5000], rounds: 7, idleSeconds: 3 };

/** How long tenantgate may take to go quiet after the pods are made (its watch cache taking them in) before lists are timed. */
const QUIET_WAIT_MS = 60_000;
const QUIET_WINDOW_MS = 1000;
/** CPU above its idle rate tenantgate may spend in a quiet window, ms per second: the metrics scrape itself and a tick or two. */
const QUIET_MARGIN_MS_PER_SECOND = 30;

/** The field a streamed protobuf list pads with (lib/convert/protobuf/streams.ts); Go's Unmarshal skips it as unknown. */
const PADDING_FIELD = 2 ** 29 - 1;

/**
 * Checks once, outside the timed rounds, that the tenant's protobuf LIST is what it should be: every pod, each in the
 * tenant's own `default` namespace, nothing but items, list metadata and padding. A bench that silently measured JSON
 * or a wrong view would be worse than none. Returns the padding bytes (what the tenant view saved, sent as zeros).
 */
async function checkTenantList(session: ClientHttp2Session, path: string, pods: number): Promise<{ paddingBytes: number }> {
  const moduleCache = goModuleCache();
  if (moduleCache === undefined) throw new Error('the Go module cache with k8s.io/api v0.36.3 is not on this machine: build the rig first (npm run rig)');
  const messages = loadProtoMessages(moduleCache);
  const answer = await h2Request(session, 'GET', path, { headers: { accept: ACCEPT_PROTOBUF } });
  if (answer.status !== 200 || !String(answer.headers['content-type']).startsWith(PROTOBUF) || answer.bytes.subarray(0, 4).toString('latin1') !== 'k8s\0') {
    throw new Error(`tenant LIST ${path} in protobuf: ${answer.status} ${String(answer.headers['content-type'])}`);
  }
  const raw = protoFields(answer.bytes.subarray(4)).find((field) => field.number === 2)!.value as Buffer;
  let items = 0;
  let paddingBytes = 0;
  for (const field of protoFields(raw)) {
    if (field.number === PADDING_FIELD) {
      paddingBytes += (field.value as Buffer).length;
    } else if (field.number === 2) {
      items++;
      const metadata = protoFields(field.value as Buffer).find((member) => member.number === 1)!.value as Buffer;
      const { namespace } = decodeMessage(messages, 'k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta', metadata);
      if (namespace !== 'default') throw new Error(`tenant LIST in protobuf: a pod in namespace ${String(namespace)}`);
    } else if (field.number !== 1) {
      throw new Error(`tenant LIST in protobuf: PodList field ${field.number}`);
    }
  }
  if (items !== pods) throw new Error(`tenant LIST in protobuf: ${items} pods, ${pods} expected`);
  return { paddingBytes };
}

/** tenantgate's watch cache figures for pods (null: it keeps no cache of them, or announced no metrics listener). */
async function cachedPods(metricsUrl: string): Promise<{ objects: number; events: number } | null> {
  if (metricsUrl === '') return null;
  const text = await (await fetch(metricsUrl)).text();
  if (!text.includes('tenantgate_watch_cache_objects{') || !/^tenantgate_watch_cache_objects\{[^}]*resource="pods"/m.test(text)) return null;
  return {
    objects: sumMetric(text, 'tenantgate_watch_cache_objects', { resource: 'pods' }),
    events: sumMetric(text, 'tenantgate_watch_cache_events_total', { resource: 'pods' }),
  };
}

/**
 * Waits until tenantgate is quiet: its watch cache holds every pod just made and took in no event over a whole window,
 * and it spent no more than its idle rate (and a margin) of CPU in that window. Lists timed while it still ingests the
 * pods would charge that work to them. Returns how long that took and what the last window cost.
 */
async function untilGatewayQuiet(
  metricsUrl: string,
  pid: number,
  idleMsPerSecond: number,
  pods: number,
): Promise<{ waitedMs: number; cacheSeen: boolean; lastWindowCpuMsPerSecond: number }> {
  const started = performance.now();
  for (;;) {
    const before = await cachedPods(metricsUrl);
    const spent = cpuMeter({ tenantgate: pid });
    await new Promise((resolve) => setTimeout(resolve, QUIET_WINDOW_MS));
    const { ms, wallMs } = spent();
    const after = await cachedPods(metricsUrl);
    const cpuMsPerSecond = (ms.tenantgate! * 1000) / wallMs;
    const cacheCaughtUp = after === null || (after.objects >= pods && after.events === before?.events);
    if (cacheCaughtUp && cpuMsPerSecond <= idleMsPerSecond + QUIET_MARGIN_MS_PER_SECOND) {
      return { waitedMs: performance.now() - started, cacheSeen: after !== null, lastWindowCpuMsPerSecond: cpuMsPerSecond };
    }
    if (performance.now() - started > QUIET_WAIT_MS) {
      throw new Error(
        `tenantgate not quiet after ${QUIET_WAIT_MS / 1000} s: ${cpuMsPerSecond.toFixed(0)} CPU ms/s (idle ${idleMsPerSecond.toFixed(0)}), cache ${JSON.stringify(after)} of ${pods} pods`,
      );
    }
  }
}

async function run({ quick, log }: ScenarioOptions): Promise<ScenarioResult> {
  const sizes = quick ? QUICK : FULL;
  const three = await startThreeTargets(TENANT);
  const sessions = new Map(three.targets.map((target) => [target.name, connectH2(target.credentials)]));
  try {
    const apiserver = three.stack.rig.processes.find((p) => p.name === 'kube-apiserver')!;
    const pids: Pids = { passthrough: three.passthrough.child.pid!, tenantgate: three.stack.gateway.pid!, apiserver: apiserver.pid };
    const pathOf = (name: TargetName) => `${three.targets.find((t) => t.name === name)!.namespacePath}/pods`;

    const idle = await idleCpuRate(pids, sizes.idleSeconds);
    const figures: Record<string, unknown> = {
      rounds: sizes.rounds,
      client: `node:http2, client certificates; Accept "${ACCEPT_PROTOBUF}" (client-go's) or "${ACCEPT_JSON}"`,
      throughputNote: 'lists per second, each leg against the direct leg of its own encoding (the median list time of each)',
      cpuSource: `/proc/<pid>/stat utime+stime around each list, ${CPU_TICK_MS} ms resolution, each process's idle rate taken off; median of the rounds`,
      quietNote: `lists timed only once tenantgate is quiet: its watch cache holds every pod and took no event for ${QUIET_WINDOW_MS} ms, and its CPU over that window was within ${QUIET_MARGIN_MS_PER_SECOND} ms/s of idle`,
      paddingNote: 'a protobuf list longer than 4 MiB streams with its length declared up front: what the tenant view saves is sent as a padding field',
    };
    const targets: TargetCheck[] = [];
    const charts: Chart[] = [];
    let created = 0;
    for (const pods of sizes.pods) {
      const t0 = performance.now();
      await createPods(sessions.get('direct')!, three.upstreamNamespace, created, pods);
      created = pods;
      log(`${pods} pods created upstream in ${Math.round(performance.now() - t0)} ms`);
      const quiet = await untilGatewayQuiet(three.stack.metricsUrl, pids.tenantgate!, idle.tenantgate!, pods);
      log(
        `tenantgate quiet ${Math.round(quiet.waitedMs)} ms after the pods were made (${quiet.cacheSeen ? 'watch cache caught up, ' : 'no watch cache of pods, '}${quiet.lastWindowCpuMsPerSecond.toFixed(0)} CPU ms/s in the last window)`,
      );
      const { paddingBytes } = await checkTenantList(sessions.get('tenantgate')!, pathOf('tenantgate'), pods);

      const results = LEGS.map(() => ({
        ms: [] as number[],
        firstByteMs: [] as number[],
        bytes: 0,
        gatewayCpuMs: [] as number[],
        apiserverCpuMs: [] as number[],
      }));
      // Rounds interleaved across legs so drift on a noisy machine hits all of them alike; round 0 warms up.
      for (let round = 0; round <= sizes.rounds; round++) {
        for (const [i, leg] of LEGS.entries()) {
          const spent = cpuMeter(pids, idle);
          const timed = await timedList(sessions.get(leg.target)!, pathOf(leg.target), leg.encoding === 'protobuf' ? ACCEPT_PROTOBUF : ACCEPT_JSON);
          const cpu = spent().ms;
          const answeredProtobuf = timed.contentType.startsWith(PROTOBUF);
          if (answeredProtobuf !== (leg.encoding === 'protobuf')) throw new Error(`${leg.label}: answered as ${timed.contentType}`);
          if (round === 0) continue;
          const r = results[i]!;
          r.ms.push(timed.ms);
          r.firstByteMs.push(timed.firstByteMs);
          r.bytes = timed.bytes;
          if (leg.target !== 'direct') r.gatewayCpuMs.push(cpu[leg.target]!);
          r.apiserverCpuMs.push(cpu.apiserver!);
        }
      }

      const row = (label: string) => {
        const r = results[LEGS.findIndex((leg) => leg.label === label)]!;
        const ms = median(r.ms);
        return {
          ms,
          firstByteMs: median(r.firstByteMs),
          bytes: r.bytes,
          mbPerSecond: r.bytes / 1e6 / (ms / 1000),
          listsPerSecond: 1000 / ms,
          gatewayCpuMsPerList: r.gatewayCpuMs.length === 0 ? 0 : median(r.gatewayCpuMs),
          apiserverCpuMsPerList: median(r.apiserverCpuMs),
        };
      };
      const directProtobuf = row('direct protobuf');
      const directJson = row('direct json');
      const sizeFigures: Record<string, unknown> = {};
      figures[`pods${pods}`] = sizeFigures;
      for (const leg of LEGS) {
        const r = row(leg.label);
        const direct = leg.encoding === 'protobuf' ? directProtobuf : directJson;
        sizeFigures[leg.label] = {
          listMs: rounded(r.ms, 1),
          listsPerSecond: rounded(r.listsPerSecond, 2),
          mbPerSecond: rounded(r.mbPerSecond, 1),
          throughputVsDirect: rounded(direct.ms / r.ms, 3),
          // The hop alone costs what --passthrough loses; what tenantgate loses beyond it is the conversion's.
          throughputVsPassthrough: leg.label === 'tenantgate protobuf' ? rounded(row('passthrough protobuf').ms / r.ms, 3) : undefined,
          firstByteMs: rounded(r.firstByteMs, 2),
          firstByteVsDirect: rounded(r.firstByteMs / direct.firstByteMs, 3),
          bytes: r.bytes,
          bytesPerPod: Math.round(r.bytes / pods),
          gatewayCpuMsPerList: leg.target === 'direct' ? null : rounded(r.gatewayCpuMsPerList, 1),
          apiserverCpuMsPerList: rounded(r.apiserverCpuMsPerList, 1),
        };
      }
      const gatewayProtobuf = row('tenantgate protobuf');
      const gatewayJson = row('tenantgate json');
      const throughput = directProtobuf.ms / gatewayProtobuf.ms;
      sizeFigures.tenantgateProtobufVsJson = {
        bytes: rounded(gatewayProtobuf.bytes / gatewayJson.bytes, 3),
        listTime: rounded(gatewayProtobuf.ms / gatewayJson.ms, 3),
        bytesWithoutPadding: rounded((gatewayProtobuf.bytes - paddingBytes) / gatewayJson.bytes, 3),
        paddingBytes,
        gatewayCpu: rounded(gatewayProtobuf.gatewayCpuMsPerList / gatewayJson.gatewayCpuMsPerList, 3),
      };
      const passthroughProtobuf = row('passthrough protobuf');
      sizeFigures.tenantgateProtobufCpuVsPassthrough = {
        tenantgateMsPerList: rounded(gatewayProtobuf.gatewayCpuMsPerList, 1),
        passthroughMsPerList: rounded(passthroughProtobuf.gatewayCpuMsPerList, 1),
        ratio: passthroughProtobuf.gatewayCpuMsPerList === 0 ? null : rounded(gatewayProtobuf.gatewayCpuMsPerList / passthroughProtobuf.gatewayCpuMsPerList, 3),
      };
      log(
        `${pods} pods: lists/s ${LEGS.map((leg) => `${leg.label} ${row(leg.label).listsPerSecond.toFixed(2)}`).join(', ')}; ` +
          `first byte ms ${LEGS.map((leg) => row(leg.label).firstByteMs.toFixed(1)).join(' / ')}`,
      );
      log(
        `tenantgate protobuf ${(directProtobuf.ms / gatewayProtobuf.ms).toFixed(3)}x direct, ${(row('passthrough protobuf').ms / gatewayProtobuf.ms).toFixed(3)}x passthrough; bytes per list: protobuf ${gatewayProtobuf.bytes} vs JSON ${gatewayJson.bytes} through tenantgate (${((100 * gatewayProtobuf.bytes) / gatewayJson.bytes).toFixed(1)} %, ${paddingBytes} of them padding); ` +
          `tenantgate CPU per list ${gatewayProtobuf.gatewayCpuMsPerList.toFixed(1)} ms protobuf (passthrough ${passthroughProtobuf.gatewayCpuMsPerList.toFixed(1)} ms), ${gatewayJson.gatewayCpuMsPerList.toFixed(1)} ms JSON`,
      );
      if (pods === sizes.pods.at(-1)) {
        targets.push({
          target: `${pods}-pod LIST in protobuf: >= ${TARGET_THROUGHPUT_RATIO}x direct protobuf throughput`,
          value: rounded(throughput, 3),
          unit: 'x direct',
          met: throughput >= TARGET_THROUGHPUT_RATIO,
        });
      }
      const bars = (pick: (r: ReturnType<typeof row>) => number) => Object.fromEntries(LEGS.map((leg) => [leg.label, rounded(pick(row(leg.label)), 2)]));
      charts.push(
        { title: `LIST of ${pods} pods, protobuf and JSON, lists per second`, unit: 'lists/s', bars: bars((r) => r.listsPerSecond) },
        { title: `LIST of ${pods} pods, protobuf and JSON, time to first byte`, unit: 'ms', bars: bars((r) => r.firstByteMs) },
        { title: `LIST of ${pods} pods, protobuf and JSON, bytes on the wire`, unit: 'MB', bars: bars((r) => r.bytes / 1e6) },
      );
    }
    return { scenario: 'list-protobuf', figures, targets, charts };
  } finally {
    for (const session of sessions.values()) session.close();
    await three.stop();
  }
}

export const listProtobufScenario: Scenario = {
  name: 'list-protobuf',
  description:
    'LIST of 300 and 5,000 realistic pods in protobuf: direct vs passthrough vs tenantgate throughput and time to first byte, ' +
    'bytes on the wire and CPU per list against the JSON path',
  run,
};

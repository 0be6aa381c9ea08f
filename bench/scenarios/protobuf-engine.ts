// Issue 18's engine bench: the protobuf tenant view (lib/convert/protobuf/streams.ts) alone, in memory, on a pod list
// and a pod watch stream as kube-apiserver encodes them, against a raw copy and the JSON rewriter on the same pods.
// Never touches a socket or a file; payloads are encoded from the rig's generated.proto (the Go module cache).
import { kindOf } from '../../lib/convert/kinds.ts';
import { ProtobufListToTenant, ProtobufWatchToTenant } from '../../lib/convert/protobuf/streams.ts';
import type { ConvertContext } from '../../lib/convert/rules/index.ts';
import { TenantViewScanner } from '../../lib/stream/tenant-view.ts';
import { tenantViewSpecOf } from '../../lib/stream/view-spec.ts';
import { encodeBody, goModuleCache, loadProtoMessages, protoField } from '../../test/helpers/k8s-proto.ts';
import { podListPayload, podWatchPayload, realisticPod, seededRandom } from '../k8s-payloads.ts';
import type { Scenario, ScenarioOptions, ScenarioResult } from '../scenario.ts';

const TENANT = 'abc123';
const OTHER_EVERY = 10;
const CHUNK = 64 * 1024;
const TARGET_MB_PER_SECOND = 1000;
const PODS_ROW = kindOf('', 'pods')!;
const CTX: ConvertContext = { tenant: TENANT, scopeOf: () => undefined, kindScope: () => undefined };

/** A realistic pod as the upstream holds it, without the nulls Go leaves out of protobuf (lastProbeTime). */
function protobufPod(random: () => number, index: number): Record<string, unknown> {
  const namespace = `${index % OTHER_EVERY === OTHER_EVERY - 1 ? 'zzz999' : TENANT}-team-${index % 7}`;
  const { apiVersion, kind, ...pod } = JSON.parse(JSON.stringify(realisticPod(random, index, namespace)), (_, value) => (value === null ? undefined : value));
  return pod;
}

function payloads(pods: number): { list: Buffer; watch: Buffer } {
  const messages = loadProtoMessages(goModuleCache() ?? '');
  const random = seededRandom(1);
  const items = Array.from({ length: pods }, (_, i) => protobufPod(random, i));
  const list = encodeBody(messages, 'k8s.io.api.core.v1.PodList', { apiVersion: 'v1', kind: 'PodList', metadata: { resourceVersion: '987654' }, items });
  const frames = items.map((pod, i) => {
    const object = encodeBody(messages, 'k8s.io.api.core.v1.Pod', { apiVersion: 'v1', kind: 'Pod', ...pod });
    const event = Buffer.concat([protoField(1, Buffer.from(i % 20 === 0 ? 'ADDED' : 'MODIFIED')), protoField(2, protoField(1, object))]);
    const head = Buffer.alloc(4);
    head.writeUInt32BE(event.length);
    return Buffer.concat([head, event]);
  });
  return { list, watch: Buffer.concat(frames) };
}

function chunksOf(input: Buffer): Buffer[] {
  const chunks: Buffer[] = [];
  for (let i = 0; i < input.length; i += CHUNK) chunks.push(input.subarray(i, i + CHUNK));
  return chunks;
}

/** Output bytes of one pass over the chunks through `write`/`finish`. */
function drive(engine: { write(chunk: Buffer): Buffer; finish(): Buffer }, chunks: readonly Buffer[]): number {
  let out = 0;
  for (const chunk of chunks) out += engine.write(chunk).length;
  return out + engine.finish().length;
}

interface Case {
  readonly payload: 'list' | 'watch';
  readonly approach: string;
  readonly input: Buffer;
  readonly run: () => number;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

async function run(options: ScenarioOptions): Promise<ScenarioResult> {
  if (goModuleCache() === undefined) throw new Error('the Go module cache with k8s.io/api v0.36.3 is not on this machine: build the rig first (npm run rig)');
  const pods = options.quick ? 1000 : 5000;
  const runs = options.quick ? 5 : 15;
  const { list, watch } = payloads(pods);
  const jsonList = podListPayload({ pods, tenant: TENANT, otherEvery: OTHER_EVERY });
  const jsonWatch = podWatchPayload({ pods, tenant: TENANT, otherEvery: OTHER_EVERY });
  const chunks = { list: chunksOf(list), watch: chunksOf(watch), jsonList: chunksOf(jsonList), jsonWatch: chunksOf(jsonWatch) };
  options.log(
    `protobuf: ${pods} pods, list ${(list.length / 1e6).toFixed(1)} MB, watch ${(watch.length / 1e6).toFixed(1)} MB; JSON of the same pods: ${(jsonList.length / 1e6).toFixed(1)} MB, ${(jsonWatch.length / 1e6).toFixed(1)} MB`,
  );
  options.log(`1 in ${OTHER_EVERY} pods another tenant's; fed in ${CHUNK / 1024} KiB chunks; ${runs} runs of each, round-robin`);
  const spec = tenantViewSpecOf(PODS_ROW, CTX);
  const cases: Case[] = [
    { payload: 'list', approach: 'raw copy (protobuf)', input: list, run: () => chunks.list.reduce((sum, chunk) => sum + Buffer.from(chunk).length, 0) },
    {
      payload: 'list',
      approach: 'protobuf, streamed (padded)',
      input: list,
      run: () => drive(new ProtobufListToTenant(PODS_ROW, CTX, 'v1', { holdListBytes: 0 }), chunks.list),
    },
    {
      payload: 'list',
      approach: 'protobuf, held whole (exact length)',
      input: list,
      run: () => drive(new ProtobufListToTenant(PODS_ROW, CTX, 'v1', { holdListBytes: Infinity }), chunks.list),
    },
    { payload: 'list', approach: 'JSON rewriter (same pods)', input: jsonList, run: () => drive(new TenantViewScanner('list', spec), chunks.jsonList) },
    { payload: 'watch', approach: 'raw copy (protobuf)', input: watch, run: () => chunks.watch.reduce((sum, chunk) => sum + Buffer.from(chunk).length, 0) },
    { payload: 'watch', approach: 'protobuf watch frames', input: watch, run: () => drive(new ProtobufWatchToTenant(PODS_ROW, CTX, 'v1'), chunks.watch) },
    { payload: 'watch', approach: 'JSON rewriter (same pods)', input: jsonWatch, run: () => drive(new TenantViewScanner('watch', spec), chunks.jsonWatch) },
  ];
  for (const c of cases) c.run(); // warm up
  const times = cases.map((): number[] => []);
  // CPU time of this process too: on a shared machine other processes stretch the wall time, not the CPU time.
  const cpuTimes = cases.map((): number[] => []);
  const outBytes = cases.map(() => 0);
  for (let round = 0; round < runs; round++) {
    for (const [i, c] of cases.entries()) {
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      outBytes[i] = c.run();
      times[i]!.push(performance.now() - t0);
      const cpu = process.cpuUsage(cpu0);
      cpuTimes[i]!.push((cpu.user + cpu.system) / 1000);
    }
  }
  const rows = cases.map((c, i) => ({
    payload: c.payload,
    approach: c.approach,
    inBytes: c.input.length,
    outBytes: outBytes[i]!,
    mbPerSecond: Math.round(c.input.length / 1e6 / (median(times[i]!) / 1000)),
    bestMbPerSecond: Math.round(c.input.length / 1e6 / (Math.min(...times[i]!) / 1000)),
    cpuMbPerSecond: Math.round(c.input.length / 1e6 / (median(cpuTimes[i]!) / 1000)),
  }));
  options.log(
    `${'payload'.padEnd(7)} ${'approach'.padEnd(38)} ${'MB/s'.padStart(6)} ${'best'.padStart(6)} ${'CPU'.padStart(6)} ${'in MB'.padStart(7)} ${'out MB'.padStart(7)}`,
  );
  for (const row of rows) {
    options.log(
      `${row.payload.padEnd(7)} ${row.approach.padEnd(38)} ${String(row.mbPerSecond).padStart(6)} ${String(row.bestMbPerSecond).padStart(6)} ${String(row.cpuMbPerSecond).padStart(6)} ${(row.inBytes / 1e6).toFixed(2).padStart(7)} ${(row.outBytes / 1e6).toFixed(2).padStart(7)}`,
    );
  }
  options.log('MB/s: median wall time; best: fastest run; CPU: median CPU time of this process (what a loaded machine does not stretch)');
  const engine = (payload: string, approach: string) => rows.find((row) => row.payload === payload && row.approach === approach)!.mbPerSecond;
  const targets = [
    ['list', 'protobuf, streamed (padded)'],
    ['watch', 'protobuf watch frames'],
  ].map(([payload, approach]) => {
    const value = engine(payload!, approach!);
    return { target: `protobuf engine, ${payload}: >= ${TARGET_MB_PER_SECOND} MB/s in memory`, value, unit: 'MB/s', met: value >= TARGET_MB_PER_SECOND };
  });
  const charts = (['list', 'watch'] as const).map((payload) => ({
    title: `Protobuf tenant view of a ${payload === 'list' ? 'pod list' : 'pod watch stream'}, in memory`,
    unit: 'MB/s',
    bars: Object.fromEntries(rows.filter((row) => row.payload === payload).map((row) => [row.approach, row.mbPerSecond])),
  }));
  return { scenario: 'protobuf-engine', figures: { pods, chunkBytes: CHUNK, runs, rows }, targets, charts };
}

export const protobufEngineScenario: Scenario = {
  name: 'protobuf-engine',
  description:
    'Protobuf tenant view alone, in memory: MB/s of a pod list (streamed and held) and a pod watch stream, against a raw copy and the JSON rewriters',
  run,
};

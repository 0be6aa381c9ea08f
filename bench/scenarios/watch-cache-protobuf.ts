// The watch cache's fan-out in each encoding: one tenant's watchers of its namespace served by the cache in JSON, then
// the same number in protobuf (client-go's Accept), the same upstream writes for each; deliveries per second, the
// tenantgate's CPU per 1,000 deliveries and bytes per delivery. Loopback only; bounded in watchers, writes and time.
import http2, { type ClientHttp2Session } from 'node:http2';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { TENANT_LABEL } from '../../lib/convert/prefix.ts';
import { upstreamJson } from '../../lib/upstream/client.ts';
import { loadKubeconfig } from '../../lib/upstream/kubeconfig.ts';
import { UpstreamPool } from '../../lib/upstream/pool.ts';
import { startStack } from '../../test/helpers/stack.ts';
import { createTestTenant } from '../../test/helpers/tenants.ts';
import { watchCacheMetrics } from '../load/watch-cache.ts';
import type { Scenario, ScenarioOptions, ScenarioResult } from '../scenario.ts';
import { cpuSecondsOf } from './watch-fanout.ts';

interface Size {
  watchers: number;
  writes: number;
  writesPerSecond: number;
}

const FULL: Size = { watchers: 500, writes: 1000, writesPerSecond: 100 };
const QUICK: Size = { watchers: 100, writes: 200, writesPerSecond: 100 };
const TENANT = 'wcpb01';
const CONFIGMAPS = 10;
const WATCHES_PER_SESSION = 50;
const DELIVERY_WAIT_MS = 30_000;
const ACCEPT = { json: 'application/json', protobuf: 'application/vnd.kubernetes.protobuf, application/json' } as const;
type Encoding = keyof typeof ACCEPT;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

interface LegFigures {
  encoding: Encoding;
  watchers: number;
  writes: number;
  deliveriesExpected: number;
  deliveriesReceived: number;
  deliveriesPerSecond: number;
  gatewayCpuSecondsPer1000Deliveries: number;
  bytesPerDelivery: number;
  seconds: number;
}

/** Counts the events of one watch as they arrive: JSON lines, or length-prefixed protobuf frames. */
class EventCounter {
  events = 0;
  bytes = 0;
  #pending = Buffer.alloc(0);
  readonly encoding: Encoding;
  constructor(encoding: Encoding) {
    this.encoding = encoding;
  }

  take(chunk: Buffer): void {
    this.bytes += chunk.length;
    if (this.encoding === 'json') {
      for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) this.events++;
      return;
    }
    let bytes = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    while (bytes.length >= 4 && bytes.length >= 4 + bytes.readUInt32BE(0)) {
      bytes = bytes.subarray(4 + bytes.readUInt32BE(0));
      this.events++;
    }
    this.#pending = Buffer.from(bytes);
  }
}

async function measureLeg(
  encoding: Encoding,
  size: Size,
  gatewayUrl: string,
  metricsUrl: string,
  credentials: ReturnType<typeof loadKubeconfig>,
  admin: UpstreamPool,
  gatewayPid: number,
  log: (line: string) => void,
): Promise<LegFigures> {
  const sessions: ClientHttp2Session[] = [];
  const counters: EventCounter[] = [];
  try {
    const opened: Promise<void>[] = [];
    for (let i = 0; i < size.watchers; i++) {
      if (i % WATCHES_PER_SESSION === 0) {
        const session = http2.connect(gatewayUrl, { ca: credentials.caPem, cert: credentials.certPem, key: credentials.keyPem });
        session.on('error', () => {});
        sessions.push(session);
      }
      const counter = new EventCounter(encoding);
      counters.push(counter);
      const stream = sessions.at(-1)!.request({ ':path': '/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0', accept: ACCEPT[encoding] });
      stream.on('data', (chunk: Buffer) => counter.take(chunk));
      stream.on('error', () => {});
      opened.push(
        new Promise((resolve, reject) => {
          stream.on('response', (head) => (head[':status'] === 200 ? resolve() : reject(new Error(`watch: ${head[':status']}`))));
          stream.on('close', () => reject(new Error('watch closed before its head')));
        }),
      );
    }
    await Promise.all(opened);
    await sleep(500);
    for (const counter of counters) {
      counter.events = 0;
      counter.bytes = 0;
    }
    const cpuBefore = cpuSecondsOf(gatewayPid);
    const started = performance.now();
    let lastDelivery = started;
    const expected = size.watchers * size.writes;
    const received = () => counters.reduce((sum, counter) => sum + counter.events, 0);
    // Writes at the rate asked, a bounded number in flight, straight to the upstream (the tenant's namespace there).
    const inflight = new Set<Promise<unknown>>();
    for (let i = 0; i < size.writes; i++) {
      const due = started + (i * 1000) / size.writesPerSecond;
      if (due > performance.now()) await sleep(due - performance.now());
      while (inflight.size >= 32) await Promise.race(inflight);
      const name = `bench-${i % CONFIGMAPS}`;
      const write = upstreamJson(admin, 'PATCH', `/api/v1/namespaces/${TENANT}-default/configmaps/${name}`, { data: { at: String(i) } }).finally(() =>
        inflight.delete(write),
      );
      inflight.add(write);
    }
    await Promise.all(inflight);
    const deadline = performance.now() + DELIVERY_WAIT_MS;
    let seen = received();
    while (seen < expected && performance.now() < deadline) {
      await sleep(20);
      const now = received();
      if (now !== seen) lastDelivery = performance.now();
      seen = now;
    }
    if (seen >= expected) lastDelivery = performance.now();
    const cpu = cpuSecondsOf(gatewayPid) - cpuBefore;
    const seconds = (lastDelivery - started) / 1000;
    const bytes = counters.reduce((sum, counter) => sum + counter.bytes, 0);
    log(`watch-cache-protobuf: ${encoding}: ${seen} of ${expected} deliveries in ${seconds.toFixed(1)} s, ${cpu.toFixed(2)} CPU s`);
    return {
      encoding,
      watchers: size.watchers,
      writes: size.writes,
      deliveriesExpected: expected,
      deliveriesReceived: seen,
      deliveriesPerSecond: round(seen / seconds, 0),
      gatewayCpuSecondsPer1000Deliveries: round((cpu / seen) * 1000, 4),
      bytesPerDelivery: round(bytes / seen, 0),
      seconds: round(seconds, 1),
    };
  } finally {
    // (close() would wait for the watches to end: they are reset, as a client that leaves.)
    for (const session of sessions) session.destroy();
    // The next leg opens as many: the tenant's open watches must have been given back first (flow control counts them).
    for (let i = 0; i < 100 && ((await watchCacheMetrics(metricsUrl))?.watchers ?? 0) > 0; i++) await sleep(100);
  }
}

/** The legs of one encoding averaged (their counts summed). */
function mean(legs: LegFigures[]): LegFigures {
  const average = (pick: (leg: LegFigures) => number, digits: number) => round(legs.reduce((sum, leg) => sum + pick(leg), 0) / legs.length, digits);
  return {
    encoding: legs[0]!.encoding,
    watchers: legs[0]!.watchers,
    writes: legs[0]!.writes,
    deliveriesExpected: legs.reduce((sum, leg) => sum + leg.deliveriesExpected, 0),
    deliveriesReceived: legs.reduce((sum, leg) => sum + leg.deliveriesReceived, 0),
    deliveriesPerSecond: average((leg) => leg.deliveriesPerSecond, 0),
    gatewayCpuSecondsPer1000Deliveries: average((leg) => leg.gatewayCpuSecondsPer1000Deliveries, 4),
    bytesPerDelivery: average((leg) => leg.bytesPerDelivery, 0),
    seconds: average((leg) => leg.seconds, 1),
  };
}

export async function runWatchCacheProtobuf(size: Size, options: ScenarioOptions): Promise<ScenarioResult> {
  const stack = await startStack({ controllers: false });
  const admin = new UpstreamPool(stack.rig.admin);
  try {
    const tenant = await createTestTenant(stack, TENANT);
    for (let i = 0; i < CONFIGMAPS; i++) {
      const created = await upstreamJson(admin, 'POST', `/api/v1/namespaces/${TENANT}-default/configmaps`, {
        metadata: { name: `bench-${i}`, labels: { [TENANT_LABEL]: TENANT, app: 'bench' } },
        data: { at: '-1', payload: 'x'.repeat(512) },
      });
      if (created.status !== 201) throw new Error(`creating a configmap upstream: ${created.status}`);
    }
    const credentials = loadKubeconfig(tenant.kubeconfig);
    const gatewayPid = stack.gateway.pid!;
    // Alternated, twice each: on a shared machine the second of two legs would otherwise carry the drift of the run.
    const rounds: LegFigures[] = [];
    for (const encoding of ['json', 'protobuf', 'protobuf', 'json'] as const)
      rounds.push(await measureLeg(encoding, size, stack.gatewayUrl, stack.metricsUrl, credentials, admin, gatewayPid, options.log));
    const json = mean(rounds.filter((leg) => leg.encoding === 'json'));
    const protobuf = mean(rounds.filter((leg) => leg.encoding === 'protobuf'));
    const cpuRatio = round(protobuf.gatewayCpuSecondsPer1000Deliveries / json.gatewayCpuSecondsPer1000Deliveries, 3);
    return {
      scenario: 'watch-cache-protobuf',
      figures: {
        machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version, loadavg: os.loadavg() },
        size,
        json,
        protobuf,
        rounds,
        ratios: {
          protobufCpuPer1000DeliveriesVsJson: cpuRatio,
          protobufDeliveriesPerSecondVsJson: round(protobuf.deliveriesPerSecond / json.deliveriesPerSecond, 3),
          protobufBytesPerDeliveryVsJson: round(protobuf.bytesPerDelivery / json.bytesPerDelivery, 3),
        },
      },
      targets: [
        {
          // Converted once per event per encoding: a protobuf watcher costs what a JSON one does, not a conversion each.
          target: 'watch cache: protobuf watchers cost <= 1.5x the CPU per delivery of JSON watchers',
          value: cpuRatio,
          unit: 'x JSON',
          met: cpuRatio <= 1.5 && protobuf.deliveriesReceived === protobuf.deliveriesExpected,
        },
      ],
      charts: [
        {
          title: `Watch cache: CPU per 1,000 deliveries, ${size.watchers} watchers of one namespace`,
          unit: 'CPU s',
          bars: { JSON: json.gatewayCpuSecondsPer1000Deliveries, protobuf: protobuf.gatewayCpuSecondsPer1000Deliveries },
        },
        { title: 'Watch cache: bytes per delivery', unit: 'bytes', bars: { JSON: json.bytesPerDelivery, protobuf: protobuf.bytesPerDelivery } },
      ],
    };
  } finally {
    admin.close();
    await stack.stop();
  }
}

export const watchCacheProtobufScenario: Scenario = {
  name: 'watch-cache-protobuf',
  description:
    "Watch cache fan-out in JSON and in protobuf: one tenant's watchers of one namespace, the same upstream writes; deliveries/s, tenantgate CPU per 1,000 deliveries, bytes per delivery",
  run: (options) => runWatchCacheProtobuf(options.quick ? QUICK : FULL, options),
};

/** `node bench/scenarios/watch-cache-protobuf.ts [--quick]` */
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const quick = process.argv.includes('--quick');
  runWatchCacheProtobuf(quick ? QUICK : FULL, { quick, log: (line) => console.error(line) }).then(
    (result) => {
      console.log(JSON.stringify(result.figures, null, 2));
      process.exit(0);
    },
    (error: Error) => {
      console.error(error);
      process.exit(1);
    },
  );
}

// LIST and WATCH through tenantgate (converting, as a tenant) against the upstream directly and tenantgate
// as a plain pass-through (--passthrough), in one run on one machine, so every figure is also a ratio.
// Run after `npm run build`: node bench/list-watch.ts [--quick]   (loopback only; bounded in count and time)
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { connectH2, credentialsOf, h2Request } from '../test/helpers/http.ts';
import { spawnGateway, startStack, stopChild } from '../test/helpers/stack.ts';
import { createTestTenant } from '../test/helpers/tenants.ts';
import type { ClientHttp2Session } from 'node:http2';

const quick = process.argv.includes('--quick');
const OBJECTS = quick ? 300 : 2000;
const OBJECT_BYTES = 8 * 1024;
const ROUNDS = quick ? 3 : 7;
const WATCH_UPDATES = quick ? 50 : 300;
const TENANT = 'bench1';

interface Target {
  name: string;
  session: ClientHttp2Session;
  listPath: string;
  watchPath: string;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
}

function timedList(session: ClientHttp2Session, path: string): Promise<{ ms: number; firstByteMs: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    let firstByte = 0n;
    let bytes = 0;
    const stream = session.request({ ':path': path, accept: 'application/json' });
    stream.on('data', (chunk: Buffer) => {
      if (firstByte === 0n) firstByte = process.hrtime.bigint();
      bytes += chunk.length;
    });
    stream.on('end', () => resolve({ ms: Number(process.hrtime.bigint() - started) / 1e6, firstByteMs: Number(firstByte - started) / 1e6, bytes }));
    stream.on('error', reject);
  });
}

async function main(): Promise<void> {
  const stack = await startStack({ controllers: false });
  const passthrough = await spawnGateway(stack.files, ['--passthrough']);
  try {
    await createTestTenant(stack, TENANT);
    const upstream = connectH2(credentialsOf(stack.upstreamKubeconfig));
    const filler = 'x'.repeat(OBJECT_BYTES);
    for (let start = 0; start < OBJECTS; start += 100) {
      await Promise.all(
        Array.from({ length: Math.min(100, OBJECTS - start) }, (_, i) =>
          h2Request(upstream, 'POST', `/api/v1/namespaces/${TENANT}-default/configmaps`, {
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ metadata: { name: `cm-${start + i}`, labels: { 'kubezoo.io/tenant': TENANT } }, data: { filler } }),
          }),
        ),
      );
    }
    const tenantKubeconfig = stack.kubeconfigFor({ user: 'admin', groups: [], tenant: TENANT });
    const adminThroughPassthrough = { ...credentialsOf(stack.adminKubeconfig), server: passthrough.url };
    const upstreamPath = `/api/v1/namespaces/${TENANT}-default/configmaps`;
    const targets: Target[] = [
      { name: 'upstream directly', session: upstream, listPath: upstreamPath, watchPath: upstreamPath },
      { name: 'tenantgate --passthrough', session: connectH2(adminThroughPassthrough), listPath: upstreamPath, watchPath: upstreamPath },
      { name: 'tenantgate (tenant, converted)', session: connectH2(credentialsOf(tenantKubeconfig)), listPath: '/api/v1/namespaces/default/configmaps', watchPath: '/api/v1/namespaces/default/configmaps' },
    ];

    // LIST: rounds interleaved across targets so drift on a noisy machine hits all of them alike.
    const lists = new Map<string, { ms: number[]; firstByteMs: number[]; bytes: number }>();
    for (const target of targets) lists.set(target.name, { ms: [], firstByteMs: [], bytes: 0 });
    for (let round = 0; round < ROUNDS + 1; round++) {
      for (const target of targets) {
        const run = await timedList(target.session, target.listPath);
        if (round === 0) continue; // warm-up
        const entry = lists.get(target.name)!;
        entry.ms.push(run.ms);
        entry.firstByteMs.push(run.firstByteMs);
        entry.bytes = run.bytes;
      }
    }

    // WATCH: one watch per target, then sequential upstream writes; latency from write to each target's receipt.
    const latencies = new Map<string, number[]>();
    const pending = new Map<string, Map<string, bigint>>();
    for (const target of targets) {
      latencies.set(target.name, []);
      pending.set(target.name, new Map());
      const watch = target.session.request({ ':path': `${target.watchPath}?watch=true&fieldSelector=metadata.name%3Dticker` });
      watch.on('error', () => {}); // the watch ends when the stack stops
      let buffered = '';
      watch.setEncoding('utf8');
      watch.on('data', (chunk: string) => {
        const now = process.hrtime.bigint();
        buffered += chunk;
        let newline;
        while ((newline = buffered.indexOf('\n')) !== -1) {
          const event = JSON.parse(buffered.slice(0, newline)) as { object: { data?: { n?: string } } };
          buffered = buffered.slice(newline + 1);
          const sentAt = pending.get(target.name)!.get(event.object.data?.n ?? '');
          if (sentAt !== undefined) latencies.get(target.name)!.push(Number(now - sentAt) / 1e6);
        }
      });
    }
    await h2Request(upstream, 'POST', upstreamPath, {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ metadata: { name: 'ticker', labels: { 'kubezoo.io/tenant': TENANT } }, data: { n: '0' } }),
    });
    await new Promise((r) => setTimeout(r, 500));
    for (let n = 1; n <= WATCH_UPDATES; n++) {
      const sentAt = process.hrtime.bigint();
      for (const map of pending.values()) map.set(String(n), sentAt);
      await h2Request(upstream, 'PATCH', `${upstreamPath}/ticker`, { headers: { 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ data: { n: String(n) } }) });
    }
    await new Promise((r) => setTimeout(r, 1000));

    const direct = lists.get('upstream directly')!;
    const rows = targets.map(({ name }) => {
      const list = lists.get(name)!;
      const watch = latencies.get(name)!;
      return {
        target: name,
        listMs: median(list.ms),
        listMBps: list.bytes / 1e6 / (median(list.ms) / 1000),
        listThroughputVsDirect: median(direct.ms) / median(list.ms),
        firstByteMs: median(list.firstByteMs),
        firstByteVsDirect: median(list.firstByteMs) / median(direct.firstByteMs),
        watchEvents: watch.length,
        watchP50Ms: percentile(watch, 50),
        watchP99Ms: percentile(watch, 99),
      };
    });
    const result = {
      scenario: 'list-watch',
      machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version, loadavg: os.loadavg() },
      objects: OBJECTS,
      listBytes: direct.bytes,
      rounds: ROUNDS,
      watchUpdates: WATCH_UPDATES,
      rows,
    };
    mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
    writeFileSync(new URL('./results/list-watch.json', import.meta.url), JSON.stringify(result, null, 2) + '\n');
    console.log(`LIST of ${OBJECTS} configmaps (${(direct.bytes / 1e6).toFixed(1)} MB), median of ${ROUNDS}; WATCH of ${WATCH_UPDATES} updates`);
    console.log('| target | list ms | MB/s | × direct throughput | first byte ms | × direct | watch p50 ms | p99 ms | events |');
    console.log('|---|---|---|---|---|---|---|---|---|');
    for (const r of rows) {
      console.log(
        `| ${r.target} | ${r.listMs.toFixed(1)} | ${r.listMBps.toFixed(0)} | ${r.listThroughputVsDirect.toFixed(2)} | ${r.firstByteMs.toFixed(1)} | ${r.firstByteVsDirect.toFixed(2)} | ${r.watchP50Ms.toFixed(2)} | ${r.watchP99Ms.toFixed(2)} | ${r.watchEvents} |`,
      );
    }
    for (const t of targets) t.session.close();
  } finally {
    await stopChild(passthrough.child);
    await stack.stop();
  }
}

main().then(
  () => process.exit(0),
  (error: Error) => {
    console.error(error);
    process.exit(1);
  },
);

// Where whole-document conversions should leave the event loop: OpenAPI v2 documents of growing size converted
// inline (the event loop is blocked the whole time) and through the piscina pool (blocked only to hand over).
// Run: node bench/offload.ts   (starts its own rig; loopback only; bounded: 5 sizes x 7 runs)
import { mkdirSync, writeFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { openapiV2ToTenant } from '../lib/convert/openapi.ts';
import { closeOffload, convertOffThread, OFFLOAD_MIN_BYTES } from '../lib/request/offload.ts';
import { connectH2, credentialsOf, h2Request } from '../test/helpers/http.ts';
import { startStack } from '../test/helpers/stack.ts';

const RUNS = 7;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

/** A document like the upstream's with only the first `fraction` of its paths and definitions. */
function part(doc: any, fraction: number): Buffer {
  const take = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).slice(0, Math.max(1, Math.round(Object.keys(o).length * fraction))));
  return Buffer.from(JSON.stringify({ ...doc, paths: take(doc.paths), definitions: take(doc.definitions) }));
}

async function main(): Promise<void> {
  const stack = await startStack({ controllers: false });
  let upstream: any;
  try {
    const session = connectH2(credentialsOf(stack.upstreamKubeconfig));
    upstream = (await h2Request(session, 'GET', '/openapi/v2', { headers: { accept: 'application/json' } })).json();
    session.close();
  } finally {
    await stack.stop();
  }
  const rows: object[] = [];
  console.log(`| document | inline ms (event loop blocked) | pool ms (wall) | event loop blocked, pool (max delay ms) |`);
  console.log('|---|---|---|---|');
  for (const fraction of [0.02, 0.05, 0.12, 0.3, 1]) {
    const body = part(upstream, fraction);
    const inline: number[] = [];
    const pooled: number[] = [];
    const blocked: number[] = [];
    for (let run = 0; run < RUNS + 2; run++) {
      const t0 = performance.now();
      Buffer.from(JSON.stringify(openapiV2ToTenant(JSON.parse(body.toString('utf8')), 'bench1')));
      const t1 = performance.now();
      const delay = monitorEventLoopDelay({ resolution: 1 });
      delay.enable();
      await convertOffThread({ kind: 'openapi-v2', tenant: 'bench1', body: new Uint8Array(body), protobuf: false });
      const t2 = performance.now();
      delay.disable();
      if (run < 2) continue; // warm-up: JIT and the pool's first thread
      inline.push(t1 - t0);
      pooled.push(t2 - t1);
      blocked.push(delay.max / 1e6);
    }
    const row = { bytes: body.length, inlineMs: median(inline), poolMs: median(pooled), poolBlockedMs: median(blocked) };
    rows.push(row);
    console.log(`| ${(body.length / 1024).toFixed(0)} KiB | ${row.inlineMs.toFixed(2)} | ${row.poolMs.toFixed(2)} | ${row.poolBlockedMs.toFixed(2)} |`);
  }
  await closeOffload();
  console.log(`\noffload threshold in lib/request/offload.ts: ${OFFLOAD_MIN_BYTES / 1024} KiB`);
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(new URL('./results/offload.json', import.meta.url), JSON.stringify({ rows, threshold: OFFLOAD_MIN_BYTES }, null, 2));
}

await main();

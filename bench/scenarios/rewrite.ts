// Scenario 4: the list and watch rewriters, and the byte path for one object, against the obvious alternatives, in
// memory (no sockets, no files). Each payload runs in a child process of its own, so no payload runs on code the JIT tuned for another.
import { spawnSync } from 'node:child_process';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { parserStream } from 'stream-json';
import pick from 'stream-json/filters/pick.js';
import streamArray from 'stream-json/streamers/stream-array.js';
import streamValues from 'stream-json/streamers/stream-values.js';
import { ListRewriter, TenantViewScanner, rewriteListBuffer, type TenantViewSpec } from '../../lib/stream/tenant-view.ts';
import { referenceListView, referenceTenantItem, referenceWatchView } from '../../lib/stream/tenant-view-reference.ts';
import { kindOf, type KindRow } from '../../lib/convert/kinds.ts';
import { objectToTenant, type ConvertContext } from '../../lib/convert/rules/index.ts';
import { objectToTenantBytes } from '../../lib/stream/object-view.ts';
import { tenantViewSpecOf } from '../../lib/stream/view-spec.ts';
import { TENANTGATE_NODE_FLAGS } from '../../lib/runtime.ts';
import { podListPayload, podWatchPayload, realisticConfigMap, realisticPod, seededRandom } from '../k8s-payloads.ts';
import type { Scenario, ScenarioOptions, ScenarioResult } from '../scenario.ts';

// In the child processes (--payload): how big and how many runs.
const quick = process.argv.includes('--quick');
/** Writes a table line: to stdout in the child (the parent passes it on to the runner's log). */
let log = (line: string) => console.log(line);

const PODS = quick ? 1000 : 5000;
const CHUNK = 64 * 1024;
const TENANT = 'abc123';
// Pods as the proxy rewrites them: the byte-level fast path, and the pod rule applied to every item (the slow path).
const PODS_ROW = kindOf('', 'pods')!;
const CONVERT: ConvertContext = { tenant: TENANT, scopeOf: () => undefined, kindScope: () => undefined };
const fast: TenantViewSpec = tenantViewSpecOf(PODS_ROW, CONVERT);
const slow: TenantViewSpec = { ...fast, tenantMetadata: undefined };
// The name prefix cut alone, as the issue's prototype measured it: what the metadata edits cost on top.
const nameOnly: TenantViewSpec = { tenant: TENANT, nameField: 'namespace' };

interface Run {
  /** Milliseconds from the start of the run to the first output byte. */
  firstByteMs: number;
  outBytes: number;
}

interface Row {
  payload: string;
  approach: string;
  runs: number;
  mbPerSecond: number;
  bestMbPerSecond: number;
  cpuMbPerSecond: number;
  firstByteMs: number;
  /** The fastest first byte: without a collection of the previous case's garbage landing in the first chunk. */
  minFirstByteMs: number;
  outBytes: number;
}

const rows: Row[] = [];
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

interface Case {
  payload: string;
  input: Buffer;
  approach: string;
  runs: number;
  /** Untimed, before each run: the chunks a run that writes over its input gets, fresh. */
  prepare?: () => Buffer[];
  run: (chunks: Buffer[]) => Run | Promise<Run>;
}

/**
 * Runs the cases round-robin (one run of each in turn, `runs` times), so that load from other processes on this
 * shared machine spreads over all of them instead of sinking whichever ran at the wrong moment.
 */
async function measureAll(cases: Case[]): Promise<void> {
  // Warm up: the scanner reaches its fast code after a few runs (and forcing a full GC between runs set it back:
  // V8 dropped optimized code that embedded collected objects), so every case runs twice before it counts.
  for (const c of cases) {
    await c.run(c.prepare?.() ?? []);
    if (c.runs > 2) await c.run(c.prepare?.() ?? []);
  }
  const wall = cases.map((): number[] => []);
  const cpu = cases.map((): number[] => []);
  const first = cases.map((): number[] => []);
  const outBytes = cases.map(() => 0);
  const rounds = Math.max(...cases.map((c) => c.runs));
  for (let round = 0; round < rounds; round++) {
    for (const [i, c] of cases.entries()) {
      if (round >= c.runs) continue;
      const chunks = c.prepare?.() ?? [];
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      const result = await c.run(chunks);
      wall[i]!.push(performance.now() - t0);
      const used = process.cpuUsage(cpu0);
      cpu[i]!.push((used.user + used.system) / 1000);
      first[i]!.push(result.firstByteMs);
      outBytes[i] = result.outBytes;
    }
  }
  for (const [i, c] of cases.entries()) {
    const mb = c.input.length / 1e6;
    const row: Row = {
      payload: c.payload,
      approach: c.approach,
      runs: c.runs,
      mbPerSecond: Math.round(mb / (median(wall[i]!) / 1000)),
      bestMbPerSecond: Math.round(mb / (Math.min(...wall[i]!) / 1000)),
      cpuMbPerSecond: Math.round(mb / (median(cpu[i]!) / 1000)),
      firstByteMs: Number(median(first[i]!).toFixed(2)),
      minFirstByteMs: Number(Math.min(...first[i]!).toFixed(2)),
      outBytes: outBytes[i]!,
    };
    rows.push(row);
    log(
      `${c.payload.padEnd(6)} ${c.approach.padEnd(52)} ${String(row.mbPerSecond).padStart(6)} ${String(row.bestMbPerSecond).padStart(6)} ${String(row.cpuMbPerSecond).padStart(6)} ${row.firstByteMs.toFixed(2).padStart(9)} ${row.minFirstByteMs.toFixed(2).padStart(8)}`,
    );
  }
}

function chunksOf(input: Buffer): Buffer[] {
  const chunks: Buffer[] = [];
  for (let i = 0; i < input.length; i += CHUNK) chunks.push(input.subarray(i, i + CHUNK));
  return chunks;
}

/** Fresh copies of the chunks, for a run that writes over its input (made before the run, not timed). */
const freshCopies = (chunks: Buffer[]) => () => chunks.map((chunk) => Buffer.from(chunk));

/**
 * Drives a TenantViewScanner by hand, chunk by chunk, as the Transform does minus the stream machinery: by default
 * with writeOwned(), building the output over chunks of its own, as the proxy does with the upstream's; `copying`:
 * with write(), which copies the output into new memory and leaves the chunks as they are.
 */
function scannerRun(kind: 'list' | 'watch', chunks: Buffer[], spec: TenantViewSpec, copying = false): Run {
  const t0 = performance.now();
  const scanner = new TenantViewScanner(kind, spec);
  let firstByteMs = -1;
  let outBytes = 0;
  for (const chunk of chunks) {
    for (const out of copying ? [scanner.write(chunk)] : scanner.writeOwned(chunk)) {
      if (out.length > 0 && firstByteMs < 0) firstByteMs = performance.now() - t0;
      outBytes += out.length;
    }
  }
  outBytes += scanner.finish().length;
  return { firstByteMs, outBytes };
}

function wholeRun(rewrite: () => Buffer): Run {
  const t0 = performance.now();
  const out = rewrite();
  return { firstByteMs: performance.now() - t0, outBytes: out.length };
}

function rawCopyRun(chunks: Buffer[]): Run {
  const t0 = performance.now();
  let firstByteMs = -1;
  let outBytes = 0;
  for (const chunk of chunks) {
    outBytes += Buffer.from(chunk).length;
    if (firstByteMs < 0) firstByteMs = performance.now() - t0;
  }
  return { firstByteMs, outBytes };
}

const NAMESPACE_KEY = Buffer.from('"namespace":"');
const PREFIX = Buffer.from(`${TENANT}-`);

/**
 * FACTS.md's "byte scanner looking for namespace keys": indexOf for `"namespace":"` and cut the prefix. Wrong
 * (it rewrites nested and escaped keys, drops nothing), kept only to compare this machine with the one in FACTS.md.
 */
function keyScannerRun(input: Buffer): Run {
  const t0 = performance.now();
  const parts: Buffer[] = [];
  let from = 0;
  let at = 0;
  while ((at = input.indexOf(NAMESPACE_KEY, at)) >= 0) {
    const value = at + NAMESPACE_KEY.length;
    if (input.compare(PREFIX, 0, PREFIX.length, value, value + PREFIX.length) === 0) {
      parts.push(input.subarray(from, value));
      from = value + PREFIX.length;
    }
    at = value;
  }
  parts.push(input.subarray(from));
  const out = Buffer.concat(parts);
  return { firstByteMs: performance.now() - t0, outBytes: out.length };
}

/** The floor of any byte-by-byte JavaScript scanner on this machine: read every byte, do nothing with it. */
function readEveryByteRun(input: Buffer): Run {
  const t0 = performance.now();
  let sum = 0;
  for (let i = 0; i < input.length; i++) sum = (sum + input[i]!) | 0;
  return { firstByteMs: performance.now() - t0, outBytes: sum & 0 };
}

class Sink extends Writable {
  firstByteMs = -1;
  outBytes = 0;
  private readonly t0: number;
  constructor(t0: number) {
    super({ objectMode: false });
    this.t0 = t0;
  }
  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: () => void): void {
    if (this.firstByteMs < 0) this.firstByteMs = performance.now() - this.t0;
    this.outBytes += chunk.length;
    callback();
  }
}

async function transformRun(chunks: Buffer[]): Promise<Run> {
  const t0 = performance.now();
  const sink = new Sink(t0);
  await pipeline(Readable.from(chunks), new ListRewriter(fast), sink);
  return { firstByteMs: sink.firstByteMs, outBytes: sink.outBytes };
}

/** stream-json as FACTS.md measured it: parser (packed tokens only, its fastest mode), pick items, streamArray, JSON.stringify per kept item. */
async function streamJsonListRun(chunks: Buffer[]): Promise<Run> {
  const t0 = performance.now();
  let firstByteMs = -1;
  let outBytes = 0;
  const items = new Writable({
    objectMode: true,
    write({ value }: { value: unknown }, _encoding, callback) {
      const item = referenceTenantItem(value, fast);
      if (item !== null) {
        outBytes += Buffer.byteLength(JSON.stringify(item)) + 1;
        if (firstByteMs < 0) firstByteMs = performance.now() - t0;
      }
      callback();
    },
  });
  await pipeline(Readable.from(chunks), parserStream({ streamValues: false }), pick.asStream({ filter: 'items' }), streamArray.asStream(), items);
  return { firstByteMs, outBytes };
}

async function streamJsonWatchRun(chunks: Buffer[]): Promise<Run> {
  const t0 = performance.now();
  let firstByteMs = -1;
  let outBytes = 0;
  const events = new Writable({
    objectMode: true,
    write({ value }: { value: any }, _encoding, callback) {
      const object = value.type === 'BOOKMARK' || value.type === 'ERROR' ? value.object : referenceTenantItem(value.object, fast);
      if (object !== null) {
        outBytes += Buffer.byteLength(JSON.stringify({ type: value.type, object })) + 1;
        if (firstByteMs < 0) firstByteMs = performance.now() - t0;
      }
      callback();
    },
  });
  await pipeline(Readable.from(chunks), parserStream({ jsonStreaming: true, streamValues: false }), streamValues.asStream(), events);
  return { firstByteMs, outBytes };
}

function checkAgreement(what: string, got: Buffer, want: Buffer): void {
  if (JSON.stringify(JSON.parse(got.toString())) !== want.toString()) throw new Error(`${what}: the rewriter and the reference disagree`);
}

/** One payload's cases, in a process of its own (run by main), so that no payload runs on code the JIT tuned for the other. */
async function runPayload(payload: 'list' | 'watch'): Promise<void> {
  const many = quick ? 3 : 9;
  const few = quick ? 1 : 3;
  const once = quick ? 1 : 2;
  if (payload === 'list') {
    const list = podListPayload({ pods: PODS, tenant: TENANT, otherEvery: 10 });
    const listChunks = chunksOf(list);
    const freshList = freshCopies(listChunks);
    checkAgreement('list', rewriteListBuffer(list, fast), referenceListView(list, fast));
    checkAgreement('list, slow path', rewriteListBuffer(list, slow), referenceListView(list, slow));
    await measureAll([
      { payload, input: list, approach: 'raw copy (64 KiB chunks)', runs: many, run: () => rawCopyRun(listChunks) },
      { payload, input: list, approach: 'calibration: indexOf "namespace" scanner (unsafe)', runs: many, run: () => keyScannerRun(list) },
      { payload, input: list, approach: 'calibration: JS loop reading every byte', runs: many, run: () => readEveryByteRun(list) },
      { payload, input: list, approach: FAST_PATH, runs: many, prepare: freshList, run: (chunks) => scannerRun('list', chunks, fast) },
      { payload, input: list, approach: FAST_PATH_COPYING, runs: many, run: () => scannerRun('list', listChunks, fast, true) },
      {
        payload,
        input: list,
        approach: 'tenant-view name prefix only (64 KiB chunks)',
        runs: many,
        prepare: freshList,
        run: (chunks) => scannerRun('list', chunks, nameOnly),
      },
      { payload, input: list, approach: 'tenant-view fast path (whole buffer)', runs: many, run: () => wholeRun(() => rewriteListBuffer(list, fast)) },
      { payload, input: list, approach: 'tenant-view fast path, ListRewriter stream', runs: many, prepare: freshList, run: (chunks) => transformRun(chunks) },
      {
        payload,
        input: list,
        approach: 'tenant-view slow path, pod rule per item (chunks)',
        runs: few,
        prepare: freshList,
        run: (chunks) => scannerRun('list', chunks, slow),
      },
      { payload, input: list, approach: 'JSON.parse + pod rule + JSON.stringify', runs: few, run: () => wholeRun(() => referenceListView(list, fast)) },
      { payload, input: list, approach: 'stream-json pick + streamArray + stringify (chunks)', runs: once, run: () => streamJsonListRun(listChunks) },
    ]);
  } else {
    const watch = podWatchPayload({ pods: PODS, tenant: TENANT, otherEvery: 10 });
    const watchChunks = chunksOf(watch);
    const freshWatch = freshCopies(watchChunks);
    await measureAll([
      { payload, input: watch, approach: 'raw copy (64 KiB chunks)', runs: many, run: () => rawCopyRun(watchChunks) },
      { payload, input: watch, approach: FAST_PATH, runs: many, prepare: freshWatch, run: (chunks) => scannerRun('watch', chunks, fast) },
      { payload, input: watch, approach: FAST_PATH_COPYING, runs: many, run: () => scannerRun('watch', watchChunks, fast, true) },
      {
        payload,
        input: watch,
        approach: 'tenant-view name prefix only (64 KiB chunks)',
        runs: many,
        prepare: freshWatch,
        run: (chunks) => scannerRun('watch', chunks, nameOnly),
      },
      {
        payload,
        input: watch,
        approach: 'tenant-view slow path, pod rule per item (chunks)',
        runs: few,
        prepare: freshWatch,
        run: (chunks) => scannerRun('watch', chunks, slow),
      },
      {
        payload,
        input: watch,
        approach: 'JSON.parse + pod rule + JSON.stringify per event',
        runs: few,
        run: () => wholeRun(() => referenceWatchView(watch, fast)),
      },
      { payload, input: watch, approach: 'stream-json jsonStreaming + streamValues (chunks)', runs: once, run: () => streamJsonWatchRun(watchChunks) },
    ]);
  }
  process.stdout.write(`${ROWS_MARK}${JSON.stringify(rows)}\n`);
}

/** One object's tenant view (a GET's answer), µs per object by one approach. */
interface ObjectRow {
  object: string;
  approach: string;
  bytes: number;
  microsPerObject: number;
  bestMicrosPerObject: number;
}

const OBJECT_PARSED = 'JSON.parse + rule + JSON.stringify + encode (today)';
const OBJECT_BYTES = 'byte path: tenantViewSpecOf + objectToTenantBytes';

/**
 * The single-object cases: a ConfigMap and a Pod as kube-apiserver answers a GET, converted by the parsed path
 * (wholeBodyToTenant's way: parse, rule, stringify, and the string's encoding on the way out) and by the byte path,
 * with the spec made per request as the response path would and made once; timed over `count` objects per run.
 */
function runObjects(): void {
  const random = seededRandom(7);
  const objects: [name: string, row: KindRow, input: Buffer, count: number][] = [
    [
      'ConfigMap',
      kindOf('', 'configmaps')!,
      Buffer.from(JSON.stringify(realisticConfigMap(random, 1, `${TENANT}-default`, TENANT)) + '\n'),
      quick ? 4000 : 20000,
    ],
    [
      'Pod',
      PODS_ROW,
      Buffer.from(JSON.stringify({ kind: 'Pod', apiVersion: 'v1', ...realisticPod(random, 1, `${TENANT}-default`) }) + '\n'),
      quick ? 1000 : 5000,
    ],
  ];
  const rounds = quick ? 3 : 9;
  const objectRows: ObjectRow[] = [];
  for (const [name, row, input, count] of objects) {
    const spec = tenantViewSpecOf(row, CONVERT);
    let ruleCalls = 0;
    const got = objectToTenantBytes(input, { ...spec, rewriteItem: (item) => (ruleCalls++, spec.rewriteItem!(item)) });
    const want = JSON.stringify(objectToTenant(JSON.parse(input.toString('utf8')), CONVERT, row));
    if (!Buffer.isBuffer(got) || JSON.stringify(JSON.parse(got.toString('utf8'))) !== want) throw new Error(`${name}: the byte path and the rule disagree`);
    if (ruleCalls !== 0) throw new Error(`${name}: the byte path handed the object to the rule`);
    const cases: [approach: string, convert: () => number][] = [
      ['raw copy', () => Buffer.from(input).length],
      [OBJECT_PARSED, () => Buffer.from(JSON.stringify(objectToTenant(JSON.parse(input.toString('utf8')), CONVERT, row))).length],
      [OBJECT_BYTES, () => (objectToTenantBytes(input, tenantViewSpecOf(row, CONVERT)) as Buffer).length],
      ['byte path, spec made once', () => (objectToTenantBytes(input, spec) as Buffer).length],
    ];
    const times = cases.map((): number[] => []);
    let sink = 0;
    for (const [, convert] of cases) for (let i = 0; i < count; i++) sink += convert(); // warm up
    for (let round = 0; round < rounds; round++) {
      for (const [k, [, convert]] of cases.entries()) {
        const t0 = performance.now();
        for (let i = 0; i < count; i++) sink += convert();
        times[k]!.push(((performance.now() - t0) * 1000) / count);
      }
    }
    if (sink === 0) throw new Error('nothing converted');
    for (const [k, [approach]] of cases.entries()) {
      const objectRow = {
        object: name,
        approach,
        bytes: input.length,
        microsPerObject: Number(median(times[k]!).toFixed(2)),
        bestMicrosPerObject: Number(Math.min(...times[k]!).toFixed(2)),
      };
      objectRows.push(objectRow);
      log(
        `${`${name} ${input.length} B`.padEnd(16)} ${approach.padEnd(52)} ${objectRow.microsPerObject.toFixed(2).padStart(8)} ${objectRow.bestMicrosPerObject.toFixed(2).padStart(8)}`,
      );
    }
  }
  process.stdout.write(`${OBJECT_ROWS_MARK}${JSON.stringify(objectRows)}\n`);
}

const OBJECT_ROWS_MARK = 'object rows: ';
const ROWS_MARK = 'rows: ';
/** The proxy's way: writeOwned(), output over the upstream's chunks. */
const FAST_PATH = 'tenant-view fast path (64 KiB chunks)';
const FAST_PATH_COPYING = 'tenant-view fast path, output copied (write())';
const TARGET_MB_PER_SECOND = 500;

/** MB/s of each approach to one payload, in the order a reader compares them: the alternatives, then ours. */
const CHART_APPROACHES: [label: string, approach: string][] = [
  ['JSON.parse + stringify', 'JSON.parse + pod rule + JSON.stringify'],
  ['JSON.parse + stringify', 'JSON.parse + pod rule + JSON.stringify per event'],
  ['stream-json', 'stream-json pick + streamArray + stringify (chunks)'],
  ['stream-json', 'stream-json jsonStreaming + streamValues (chunks)'],
  ['slow path (pod rule per item)', 'tenant-view slow path, pod rule per item (chunks)'],
  ['name prefix only', 'tenant-view name prefix only (64 KiB chunks)'],
  ['raw copy', 'raw copy (64 KiB chunks)'],
  ['fast path (tenantgate)', FAST_PATH],
];

async function run(options: ScenarioOptions): Promise<ScenarioResult> {
  log = options.log;
  // The same sizes the child processes build for themselves from --quick.
  const pods = options.quick ? 1000 : 5000;
  const list = podListPayload({ pods, tenant: TENANT, otherEvery: 10 });
  const watch = podWatchPayload({ pods, tenant: TENANT, otherEvery: 10 });
  log(
    `list: ${pods} pods, ${(list.length / 1e6).toFixed(1)} MB (${Math.round(list.length / pods)} B each, 1 in 10 another tenant's, 1 in 10 with last-applied-configuration)`,
  );
  log(`watch: ${pods} events + bookmarks, ${(watch.length / 1e6).toFixed(1)} MB; input fed in ${CHUNK / 1024} KiB chunks where it says so`);
  log(
    `${'payload'.padEnd(6)} ${'approach'.padEnd(52)} ${'MB/s'.padStart(6)} ${'best'.padStart(6)} ${'cpu'.padStart(6)} ${'1st byte'.padStart(9)} ${'min'.padStart(8)}`,
  );
  const all: Row[] = [];
  const objectRows: ObjectRow[] = [];
  for (const payload of ['list', 'watch', 'object']) {
    if (payload === 'object') log(`${'object'.padEnd(16)} ${'approach'.padEnd(52)} ${'µs/obj'.padStart(8)} ${'best'.padStart(8)}`);
    // With tenantgate's Node flags: the young generation size changes what the rewriters' garbage costs.
    const child = spawnSync(
      process.execPath,
      [...TENANTGATE_NODE_FLAGS, fileURLToPath(import.meta.url), '--payload', payload, ...(options.quick ? ['--quick'] : [])],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
        encoding: 'utf8',
        timeout: 120_000,
      },
    );
    if (child.status !== 0) throw new Error(`the ${payload} benchmark failed (${child.status ?? child.signal})`);
    for (const line of child.stdout.split('\n')) {
      if (line.startsWith(ROWS_MARK)) all.push(...(JSON.parse(line.slice(ROWS_MARK.length)) as Row[]));
      else if (line.startsWith(OBJECT_ROWS_MARK)) objectRows.push(...(JSON.parse(line.slice(OBJECT_ROWS_MARK.length)) as ObjectRow[]));
      else if (line !== '') log(line);
    }
  }

  log('MB/s: input bytes over the median wall time; best: the fastest run; cpu: over the median CPU time (user+system,');
  log('GC threads included); 1st byte: median ms from the start of a run to its first output byte; min: the fastest.');
  log('µs/obj: one object converted, median over the runs of the mean per object; best: the fastest run.');
  const mbPerSecond = (payload: string, approach: string) => all.find((row) => row.payload === payload && row.approach === approach)?.mbPerSecond;
  const charts = (['list', 'watch'] as const).map((payload) => {
    const bars: Record<string, number> = {};
    for (const [label, approach] of CHART_APPROACHES) {
      const value = mbPerSecond(payload, approach);
      if (value !== undefined) bars[label] = value;
    }
    return { title: `Rewrite of a ${payload === 'list' ? 'pod list' : 'pod watch stream'}, in memory`, unit: 'MB/s', bars };
  });
  for (const object of new Set(objectRows.map((row) => row.object))) {
    const bars: Record<string, number> = {};
    for (const row of objectRows) if (row.object === object && row.approach !== 'raw copy') bars[row.approach] = row.microsPerObject;
    charts.push({ title: `Tenant view of one ${object} (a GET's answer), in memory: lower is better`, unit: 'µs per object', bars });
  }
  const targets = (['list', 'watch'] as const).map((payload) => {
    const value = mbPerSecond(payload, FAST_PATH) ?? NaN;
    return {
      target: `rewrite engine, ${payload}: >= ${TARGET_MB_PER_SECOND} MB/s in memory (fast path)`,
      value,
      unit: 'MB/s',
      met: value >= TARGET_MB_PER_SECOND,
    };
  });
  return {
    scenario: 'rewrite',
    figures: { pods, listBytes: list.length, watchBytes: watch.length, chunkBytes: CHUNK, rows: all, objectRows },
    targets,
    charts,
  };
}

export const rewriteScenario: Scenario = {
  name: 'rewrite',
  description:
    'Rewrite engine alone, in memory: MB/s of pod list and watch payloads, against JSON.parse+stringify, stream-json and a raw copy; µs per single object, byte path against JSON.parse+stringify',
  run,
};

// Started by run() with --payload: one payload's cases in this process of its own.
if (process.argv[1] === fileURLToPath(import.meta.url) && process.argv.includes('--payload')) {
  const payload = process.argv[process.argv.indexOf('--payload') + 1];
  if (payload === 'object') runObjects();
  else await runPayload(payload === 'watch' ? 'watch' : 'list');
}

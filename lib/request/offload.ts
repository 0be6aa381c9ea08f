// Whole documents whose conversion would hold the event loop for tens of milliseconds (OpenAPI v2: about 2 MB,
// 30-80 ms to parse, convert and serialize here), and large list answers as they stream, are converted in a piscina
// pool, so every other tenant's requests and watches go on meanwhile. Smaller ones stay inline, where the hop would
// cost more than it saves.
import { PLATFORM_CLASS_RESOURCES } from '../convert/rules/platform-classes.ts';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { Piscina } from 'piscina';
import type { ConvertDocumentResult, ConvertDocumentTask } from '../../workers/convert-document.ts';
import type { RewriteStreamTask } from '../../workers/rewrite-stream.ts';
import type { KindRow } from '../convert/kinds.ts';
import type { ConvertContext } from '../convert/rules/index.ts';
import { StatusError, type StatusReason } from '../errors/status-error.ts';
import { log } from '../log.ts';
import { ProtobufListToTenant } from '../convert/protobuf/streams.ts';
import { SizeRoutedListRewriter } from '../stream/offloaded-list.ts';
import { ProtobufListRewriter } from '../stream/protobuf-view.ts';
import { ListRewriter, TenantViewScanner, type TenantViewSpec } from '../stream/tenant-view.ts';
import type { DiscoveryCache } from '../upstream/discovery.ts';

/**
 * Documents at least this large go to the pool. Measured with bench/offload.ts on the rig's OpenAPI v2 document
 * and parts of it: inline, the event loop is blocked 0.5 ms at 53 KiB, 1.3 ms at 148 KiB, 3.6 ms at 347 KiB and
 * 41 ms at 2.1 MiB; through the pool it is blocked at most 1.1 to 2.1 ms whatever the size (handing the bytes over
 * and back). Below about 256 KiB the hop saves nothing.
 */
export const OFFLOAD_MIN_BYTES = 256 * 1024;

/**
 * The default list offload threshold (--list-offload-threshold), from bench/scenarios/list-offload.ts (one run, 2
 * shared cores, heavily loaded). The event loop's busy time per list in memory, inline / worker: ConfigMaps (byte
 * level) 0.95 / 1.76 ms at 64 KB, 6.0 / 3.3 ms at 1 MB, 14.5 / 8.7 ms at 8 MB, 195 / 50 ms at 52 MB; RoleBindings
 * (parsed per item) 2.2 / 0.9 ms at 64 KB, 14.4 / 2.2 ms at 1 MB, 86 / 7.8 ms at 8 MB. Below 1 MB the hop costs a
 * byte-level kind more than it saves, and the head held while deciding delays a list's first byte; from 1 MB the worker
 * frees the event loop for every kind. Over the rig, 51 MB of ConfigMaps: a quiet tenant's GET p99 beside them 95 ms
 * with the pool against 119 ms inline, the list itself 0.44x direct against 0.36x inline (0.57x against 0.27x in
 * protobuf, before runtime.ts's GC floor; protobuf lists now have their own threshold, below); 42 MB of RoleBindings:
 * p99 217 against 235 ms, the list 0.40x against 0.31x.
 */
export const LIST_OFFLOAD_MEASURED_BYTES = 1024 * 1024;

/**
 * The default protobuf list offload threshold (--protobuf-list-offload-threshold): never. The protobuf engine costs
 * the event loop about 1 ms per MB, less than the hop to the worker and back. Measured on 2 shared, loaded cores, one
 * run each: a LIST of 5,000 pods (47.7 MB) took tenantgate 240 ms of CPU inline against 733 ms on the worker, and its
 * RSS peak grew 16 MB against 96 MB; beside 51 MB protobuf ConfigMap lists (bench list-offload) a quiet tenant's GET
 * p99 was 38 ms inline against 82 ms with the pool, the list itself 180 against 101 MB/s; on a quiet machine 40
 * against 38 ms, the list 167 against 149 MB/s. The pool frees the event loop for no one and costs three times the CPU.
 */
export const PROTOBUF_LIST_OFFLOAD_MEASURED_BYTES = 0;

/** List answers at least this large are rewritten on a worker thread; 0: never (the gateway sets it from its config). */
let listOffloadBytes = 0;
let protobufListOffloadBytes = 0;

/**
 * Sets the list offload thresholds in bytes, JSON and protobuf (0: every such list is rewritten on the event loop);
 * the protobuf one is the JSON one unless given (tests that send both encodings to the pool).
 */
export function setListOffloadThreshold(bytes: number, protobufBytes = bytes): void {
  listOffloadBytes = bytes;
  protobufListOffloadBytes = protobufBytes;
}

// The workers run from the same tree as this module: dist/ as .js, or the sources as .ts (Node strips the types).
const EXTENSION = extname(fileURLToPath(import.meta.url));
const WORKER = new URL(`../../workers/convert-document${EXTENSION}`, import.meta.url);
const STREAM_WORKER = new URL(`../../workers/rewrite-stream${EXTENSION}`, import.meta.url);

/**
 * Streamed rewrites sharing one thread: each waits for its chunks most of the time (the upstream, the client), so a
 * slow client's list holds a slot, not a thread.
 */
const STREAMS_PER_THREAD = 16;

let openStreams = 0;

let pool: Piscina | null = null;

function workers(): Piscina {
  // Two threads at most (the machine's cores are shared with the event loop); idle threads exit after a minute.
  pool ??= new Piscina({ filename: WORKER.href, minThreads: 0, maxThreads: 2, idleTimeout: 60_000, concurrentTasksPerWorker: STREAMS_PER_THREAD });
  return pool;
}

/** The tenant's view of an upstream document, converted on a worker thread. Rejects with a StatusError. */
export async function convertOffThread(task: ConvertDocumentTask): Promise<Buffer> {
  // Moved, not copied, when the bytes own their memory (a pooled small Buffer's memory is shared with others).
  const { body } = task;
  const owned = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength;
  const sent = owned ? task : { ...task, body: new Uint8Array(body) };
  const result: ConvertDocumentResult = await workers().run(sent, { transferList: [sent.body.buffer as ArrayBuffer] });
  if ('error' in result) throw new StatusError(result.error.code, result.error.reason as StatusReason, result.error.message);
  return Buffer.from(result.view.buffer, result.view.byteOffset, result.view.byteLength);
}

/** What a list's rewrite needs to run on a worker as on the event loop (TenantConversions.viewSpecOf's inputs). */
export interface ListRewriteSource {
  row: KindRow;
  convert: ConvertContext;
  discovery: DiscoveryCache;
  /** The event loop's spec, for a list that stays inline. */
  spec: TenantViewSpec;
  /** The upstream's Content-Length, or null. */
  declaredLength: number | null;
}

/** Whether a list of `declaredLength` bytes (null: not said) may go to a worker at `threshold`: else it is rewritten inline. */
function mayOffload(declaredLength: number | null, threshold: number): boolean {
  return threshold > 0 && (declaredLength === null || declaredLength >= threshold);
}

/** The rewriter of a JSON list answer: inline below the threshold, on a worker thread at or above it. */
export function listRewriter(source: ListRewriteSource): ListRewriter | SizeRoutedListRewriter {
  const { declaredLength } = source;
  // A worker's context cannot ask which platform classes the tenant may use (its Tenant is in this thread's store).
  if (!mayOffload(declaredLength, listOffloadBytes) || PLATFORM_CLASS_RESOURCES.has(source.row.resource)) return new ListRewriter(source.spec);
  return new SizeRoutedListRewriter({
    threshold: listOffloadBytes,
    declaredLength,
    inline: () => new TenantViewScanner('list', source.spec),
    offload: () => offloadList('json-list', source),
  });
}

/** What a protobuf list's rewrite needs, on a worker as on the event loop. */
export interface ProtobufListRewriteSource {
  row: KindRow;
  convert: ConvertContext;
  discovery: DiscoveryCache;
  /** The list's apiVersion, as asked of the upstream. */
  apiVersion: string;
  /** The upstream's Content-Length, or null. */
  declaredLength: number | null;
}

/**
 * The rewriter of a protobuf list answer, as listRewriter's for JSON. Throws, before any byte is sent, for a kind or
 * version the protobuf engine cannot convert (the caller answers a Status).
 */
export function protobufListRewriter(source: ProtobufListRewriteSource): ProtobufListRewriter | SizeRoutedListRewriter {
  const { row, convert, apiVersion, declaredLength } = source;
  if (!mayOffload(declaredLength, protobufListOffloadBytes)) return new ProtobufListRewriter(row, convert, apiVersion);
  // Made now, whichever way the list goes: its constructor is where the engine refuses what it cannot convert.
  const inline = new ProtobufListToTenant(row, convert, apiVersion);
  return new SizeRoutedListRewriter({
    threshold: protobufListOffloadBytes,
    declaredLength,
    inline: () => inline,
    offload: () => offloadList('protobuf-list', source, apiVersion),
  });
}

function offloadList(
  kind: RewriteStreamTask['kind'],
  source: { row: KindRow; convert: ConvertContext; discovery: DiscoveryCache; declaredLength: number | null },
  apiVersion?: string,
): MessagePort {
  const { tenant } = source.convert;
  log.debug('a list goes to a worker thread', { tenant, resource: source.row.resource, kind, declaredLength: source.declaredLength });
  return startStreamRewrite({
    kind,
    tenant,
    row: source.row,
    apiVersion,
    discovery: source.discovery.tables(),
    webhookUrlHosts: source.convert.webhookUrlHosts,
  });
}

/**
 * Starts a streamed rewrite on a worker and gives the event loop's end of its channel (workers/rewrite-stream.ts).
 * Closing that end cancels the task and frees its slot.
 */
export function startStreamRewrite(task: Omit<RewriteStreamTask, 'port'>): MessagePort {
  const { port1, port2 } = new MessageChannel();
  openStreams++;
  workers()
    .run({ ...task, port: port2 }, { filename: STREAM_WORKER.href, transferList: [port2] })
    .then(
      () => streamEnded(null),
      (error: Error) => {
        streamEnded(error);
        // The worker died or the pool closed: the answer ends as it would on a broken upstream stream.
        port1.emit('message', { error: `the list rewrite stopped: ${error.message}` });
      },
    );
  return port1;
}

function streamEnded(error: Error | null): void {
  openStreams--;
  // The tests of faults read it: every task started ends, whatever became of its list.
  log.debug('a list rewrite on a worker ended', { open: openStreams, ...(error === null ? {} : { error: error.message }) });
}

/** Streamed rewrites started and not yet ended on their worker (cancelled ones end when their port closes). */
export function openStreamRewrites(): number {
  return openStreams;
}

/** Conversions waiting for a worker thread now (the metrics read it at scrape time). */
export function offloadQueueSize(): number {
  return pool?.queueSize ?? 0;
}

/** Stops the pool's threads (tenantgate shutting down). */
export async function closeOffload(): Promise<void> {
  const closing = pool;
  pool = null;
  await closing?.destroy();
}

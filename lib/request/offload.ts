// Whole documents whose conversion would hold the event loop for tens of milliseconds (OpenAPI v2: about 2 MB,
// 30-80 ms to parse, convert and serialize here) are converted in a piscina pool, so every other tenant's requests
// and watches go on meanwhile. Smaller ones stay inline, where the hop would cost more than it saves.
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import type { ConvertDocumentResult, ConvertDocumentTask } from '../../workers/convert-document.ts';
import { StatusError, type StatusReason } from '../errors/status-error.ts';

/**
 * Documents at least this large go to the pool. Measured with bench/offload.ts on the rig's OpenAPI v2 document
 * and parts of it: inline, the event loop is blocked 0.5 ms at 53 KiB, 1.3 ms at 148 KiB, 3.6 ms at 347 KiB and
 * 41 ms at 2.1 MiB; through the pool it is blocked at most 1.1 to 2.1 ms whatever the size (handing the bytes over
 * and back). Below about 256 KiB the hop saves nothing.
 */
export const OFFLOAD_MIN_BYTES = 256 * 1024;

// The worker runs from the same tree as this module: dist/ as .js, or the sources as .ts (Node strips the types).
const WORKER = new URL(`../../workers/convert-document${extname(fileURLToPath(import.meta.url))}`, import.meta.url);

let pool: Piscina<ConvertDocumentTask, ConvertDocumentResult> | null = null;

function workers(): Piscina<ConvertDocumentTask, ConvertDocumentResult> {
  // Two threads at most (the machine's cores are shared with the event loop); idle threads exit after a minute.
  pool ??= new Piscina({ filename: WORKER.href, minThreads: 0, maxThreads: 2, idleTimeout: 60_000 });
  return pool;
}

/** The tenant's view of an upstream document, converted on a worker thread. Rejects with a StatusError. */
export async function convertOffThread(task: ConvertDocumentTask): Promise<Buffer> {
  // Moved, not copied, when the bytes own their memory (a pooled small Buffer's memory is shared with others).
  const { body } = task;
  const owned = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength;
  const sent = owned ? task : { ...task, body: new Uint8Array(body) };
  const result = await workers().run(sent, { transferList: [sent.body.buffer as ArrayBuffer] });
  if ('error' in result) throw new StatusError(result.error.code, result.error.reason as StatusReason, result.error.message);
  return Buffer.from(result.view.buffer, result.view.byteOffset, result.view.byteLength);
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

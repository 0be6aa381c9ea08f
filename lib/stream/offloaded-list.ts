// A list answer rewritten into the tenant's view inline when small, on a worker thread when large: the size is the
// upstream's Content-Length when it says, else decided once `threshold` bytes have arrived (held until then).
// Never sends a byte the rewriter has not passed, and never lets itself or the worker hold more than a few chunks.
import { performance } from 'node:perf_hooks';
import { Transform, type TransformCallback } from 'node:stream';
import type { MessagePort } from 'node:worker_threads';
import type { RewriteInput, RewriteOutput } from '../../workers/rewrite-stream.ts';
import type { TenantViewScanner } from './tenant-view.ts';

/** Most bytes sent to the worker in one message (the hop costs about the same for 16 KiB as for 256 KiB). */
export const OFFLOAD_BATCH_BYTES = 256 * 1024;
/** Batches sent and not yet answered: the most the worker holds for one list, and what keeps it busy meanwhile. */
export const OFFLOAD_WINDOW = 4;

export interface SizeRoutedListOptions {
  /** Answers at least this large go to a worker; 0: never. */
  threshold: number;
  /** The upstream's Content-Length, or null when it streams without one (kube-apiserver's lists do). */
  declaredLength: number | null;
  /** The event loop's own scanner, for answers that stay inline. */
  inline(): TenantViewScanner;
  /** Starts the rewrite on a worker and gives its channel (workers/rewrite-stream.ts's protocol). */
  offload(): MessagePort;
}

type Mode = 'deciding' | 'inline' | 'offloaded';

/** A list response in, the tenant's view of it out, with backpressure both ways; counts what passed (RewriteCounters). */
export class SizeRoutedListRewriter extends Transform {
  bytesIn = 0;
  bytesOut = 0;
  readonly eventsOut = 0;
  scanSeconds = 0;
  /** Whether the answer went to a worker (for tests and the bench). */
  offloaded = false;

  readonly #options: SizeRoutedListOptions;
  #mode: Mode;
  /** Deciding: the head of the answer, not yet rewritten. */
  #held: Buffer[] = [];
  #heldBytes = 0;
  #scanner: TenantViewScanner | null = null;
  #port: MessagePort | null = null;
  #batch: Buffer | null = null;
  #batchFill = 0;
  #inflight = 0;
  /** A write held until the worker answers a batch (the window was full). */
  #waiting: TransformCallback | null = null;
  #flushed: TransformCallback | null = null;

  constructor(options: SizeRoutedListOptions) {
    super();
    this.#options = options;
    const { threshold, declaredLength } = options;
    this.#mode = threshold <= 0 ? 'inline' : declaredLength === null ? 'deciding' : declaredLength >= threshold ? 'offloaded' : 'inline';
    if (this.#mode === 'offloaded') this.#startWorker();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytesIn += chunk.length;
    switch (this.#mode) {
      case 'inline':
        this.#scanInline(chunk, callback);
        return;
      case 'deciding':
        this.#held.push(chunk);
        this.#heldBytes += chunk.length;
        if (this.#heldBytes < this.#options.threshold) {
          callback();
          return;
        }
        this.#mode = 'offloaded';
        this.#startWorker();
        for (const held of this.#held.splice(0)) this.#append(held);
        this.#afterWrite(callback);
        return;
      case 'offloaded':
        this.#append(chunk);
        this.#afterWrite(callback);
    }
  }

  override _flush(callback: TransformCallback): void {
    if (this.#mode === 'deciding') {
      // Smaller than the threshold: rewritten here, chunk by chunk as it came.
      this.#mode = 'inline';
      for (const held of this.#held.splice(0)) if (!this.#scanInline(held, null)) return callback(this.#failure);
    }
    if (this.#mode === 'inline') {
      this.#scanInline(null, callback);
      return;
    }
    this.#sendBatch();
    this.#flushed = callback;
    this.#post(null);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    // Cancels the worker's task (it ends when its port closes); the pipeline resets the upstream stream.
    this.#closePort();
    this.#held = [];
    callback(error);
  }

  #failure: Error | null = null;

  /** Scans a chunk (null: the end) inline; with a callback, answers it; false after an error. */
  #scanInline(chunk: Buffer | null, callback: TransformCallback | null): boolean {
    this.#scanner ??= this.#options.inline();
    const started = performance.now();
    let out: Buffer;
    try {
      out = chunk === null ? this.#scanner.finish() : this.#scanner.write(chunk);
    } catch (error) {
      this.#failure = error as Error;
      callback?.(error as Error);
      return false;
    } finally {
      this.scanSeconds += (performance.now() - started) / 1000;
    }
    this.#pushOut(out);
    callback?.();
    return true;
  }

  #startWorker(): void {
    this.offloaded = true;
    const port = this.#options.offload();
    port.on('message', (output: RewriteOutput) => this.#answered(output));
    this.#port = port;
  }

  /** Copies a chunk into batches (an HTTP/2 chunk is a view of the session's read buffer: it cannot be moved). */
  #append(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      this.#batch ??= Buffer.allocUnsafeSlow(OFFLOAD_BATCH_BYTES);
      const copied = chunk.copy(this.#batch, this.#batchFill, at);
      this.#batchFill += copied;
      at += copied;
      if (this.#batchFill === OFFLOAD_BATCH_BYTES) this.#sendBatch();
    }
    // A part batch goes at once when the worker is idle, else it fills while the worker works: no wait, fewer hops.
    if (this.#inflight === 0) this.#sendBatch();
  }

  #sendBatch(): void {
    if (this.#batch === null || this.#batchFill === 0) return;
    const batch = this.#batch.subarray(0, this.#batchFill);
    this.#batch = null;
    this.#batchFill = 0;
    this.#post(batch);
  }

  #post(input: RewriteInput): void {
    if (this.#port === null) return;
    this.#inflight++;
    this.#port.postMessage(input, input === null ? [] : [input.buffer as ArrayBuffer]);
  }

  /** Takes the next chunk now, or once the worker has answered enough of those in flight. */
  #afterWrite(callback: TransformCallback): void {
    if (this.#inflight < OFFLOAD_WINDOW) callback();
    else this.#waiting = callback;
  }

  #answered(output: RewriteOutput): void {
    if (this.destroyed) return;
    this.#inflight--;
    if ('error' in output) {
      this.#closePort();
      this.destroy(new Error(output.error));
      return;
    }
    this.scanSeconds += output.scanSeconds;
    this.#pushOut(Buffer.from(output.out.buffer, output.out.byteOffset, output.out.byteLength));
    if (output.last) {
      this.#closePort();
      const flushed = this.#flushed;
      this.#flushed = null;
      flushed?.();
      return;
    }
    if (this.#inflight === 0) this.#sendBatch();
    const waiting = this.#waiting;
    if (waiting !== null && this.#inflight < OFFLOAD_WINDOW) {
      this.#waiting = null;
      waiting();
    }
  }

  #pushOut(out: Buffer): void {
    this.bytesOut += out.length;
    if (out.length > 0) this.push(out);
  }

  #closePort(): void {
    const port = this.#port;
    this.#port = null;
    port?.close();
  }
}

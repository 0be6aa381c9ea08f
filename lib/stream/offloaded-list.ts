// A list answer (JSON or protobuf) rewritten into the tenant's view inline when small, on a worker thread when large:
// the size is the upstream's Content-Length when it says, else decided once `threshold` bytes have arrived (held
// until then). Never sends a byte the converter has not passed, and never lets itself or the worker hold more than a
// few batches: a client that does not read holds the upstream back.
import { performance } from 'node:perf_hooks';
import { Transform, type TransformCallback } from 'node:stream';
import type { MessagePort } from 'node:worker_threads';
import type { RewriteInput, RewriteOutput } from '../../workers/rewrite-stream.ts';
import { failWhenSourceCut } from './tenant-view.ts';

/** Most bytes sent to the worker in one message (the hop costs about the same for 16 KiB as for 256 KiB). */
export const OFFLOAD_BATCH_BYTES = 256 * 1024;
/** Batches sent and not yet answered: the most the worker holds for one list, and what keeps it busy meanwhile. */
export const OFFLOAD_WINDOW = 4;

/** A list's converter on the event loop: TenantViewScanner (JSON), ProtobufListToTenant (protobuf). */
export interface ListConverter {
  /** The bytes ready to send after `chunk` (possibly none). */
  write(chunk: Buffer): Buffer;
  /** The last bytes; throws when the answer ended where it may not. */
  finish(): Buffer;
}

export interface SizeRoutedListOptions {
  /** Answers at least this large go to a worker; 0: never. */
  threshold: number;
  /** The upstream's Content-Length, or null when it streams without one (kube-apiserver's lists do). */
  declaredLength: number | null;
  /** The event loop's own converter, for answers that stay inline. */
  inline(): ListConverter;
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
  #converter: ListConverter | null = null;
  #port: MessagePort | null = null;
  #batch: Buffer | null = null;
  #batchFill = 0;
  #inflight = 0;
  /** A write taken and not yet answered: the worker's window is full, or the client has not read what is out. */
  #waiting: TransformCallback | null = null;
  /** The reader has asked for more (_read) and nothing has been pushed since: writes go on until something is. */
  #wanted = false;
  #flushed: TransformCallback | null = null;

  constructor(options: SizeRoutedListOptions) {
    super();
    failWhenSourceCut(this);
    this.#options = options;
    const { threshold, declaredLength } = options;
    this.#mode = threshold <= 0 ? 'inline' : declaredLength === null ? 'deciding' : declaredLength >= threshold ? 'offloaded' : 'inline';
    if (this.#mode === 'offloaded') this.#startWorker();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytesIn += chunk.length;
    switch (this.#mode) {
      case 'inline':
        if (this.#convertInline(chunk)) this.#whenRoom(callback);
        else callback(this.#failure);
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
        this.#whenRoom(callback);
        return;
      case 'offloaded':
        this.#append(chunk);
        this.#whenRoom(callback);
    }
  }

  override _read(size: number): void {
    // The client took what was out: a write held for it goes on (unless the worker's window is what holds it).
    this.#wanted = true;
    if (this.#waiting !== null && this.#inflight < OFFLOAD_WINDOW) this.#release();
    super._read(size);
  }

  override _flush(callback: TransformCallback): void {
    if (this.#mode === 'deciding') {
      // Smaller than the threshold: rewritten here, chunk by chunk as it came.
      this.#mode = 'inline';
      for (const held of this.#held.splice(0)) if (!this.#convertInline(held)) return callback(this.#failure);
    }
    if (this.#mode === 'inline') {
      if (this.#convertInline(null)) callback();
      else callback(this.#failure);
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
    this.#waiting = null;
    this.#flushed = null;
    callback(error);
  }

  #failure: Error | null = null;

  /** Converts a chunk (null: the end) inline; false after an error (in #failure). */
  #convertInline(chunk: Buffer | null): boolean {
    this.#converter ??= this.#options.inline();
    const started = performance.now();
    let out: Buffer;
    try {
      out = chunk === null ? this.#converter.finish() : this.#converter.write(chunk);
    } catch (error) {
      this.#failure = error as Error;
      return false;
    } finally {
      this.scanSeconds += (performance.now() - started) / 1000;
    }
    this.#pushOut(out);
    return true;
  }

  /** Answers a write now, or once there is room: the worker's window has a slot and the client has read what is out. */
  #whenRoom(callback: TransformCallback): void {
    if (this.#hasRoom()) callback();
    else this.#waiting = callback;
  }

  /**
   * Whether another write may be taken. (Not held for the client while it waits for a push: a reader asks again only
   * after one, so holding then would stall the answer for good.)
   */
  #hasRoom(): boolean {
    return this.#inflight < OFFLOAD_WINDOW && (this.#wanted || this.readableLength < this.readableHighWaterMark);
  }

  #release(): void {
    const waiting = this.#waiting;
    this.#waiting = null;
    waiting?.();
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

  #answered(output: RewriteOutput): void {
    if (this.destroyed) return;
    this.#inflight--;
    if ('error' in output) {
      this.#closePort();
      this.destroy(new Error(output.error));
      return;
    }
    this.scanSeconds += output.scanSeconds;
    for (const part of output.out) this.#pushOut(Buffer.from(part.buffer, part.byteOffset, part.byteLength));
    if (output.last) {
      this.#closePort();
      const flushed = this.#flushed;
      this.#flushed = null;
      flushed?.();
      return;
    }
    if (this.#inflight === 0) this.#sendBatch();
    if (this.#waiting !== null && this.#hasRoom()) this.#release();
  }

  #pushOut(out: Buffer): void {
    this.bytesOut += out.length;
    if (out.length === 0) return;
    this.#wanted = false;
    this.push(out);
  }

  #closePort(): void {
    const port = this.#port;
    this.#port = null;
    port?.close();
  }
}

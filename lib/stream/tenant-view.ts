// Rewrites upstream list and watch JSON, and single objects, into a tenant's view byte by byte, holding one item at most:
// the stream and whole-buffer forms of TenantViewScanner. Never emits an object outside the tenant's prefix.
// The scanner is split along its seams: json-tokens.ts (tokenizer) → item-notes.ts (spans) → item-judgement.ts
// (verdict, pure) → item-edits.ts and item-framing.ts → view-output.ts (bytes out) → tenant-view-scanner.ts (driver).
import { performance } from 'node:perf_hooks';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { TenantViewScanner } from './tenant-view-scanner.ts';
import type { ItemsOnly, TenantViewSpec } from './tenant-view-spec.ts';

export { TenantViewScanner } from './tenant-view-scanner.ts';
export { TenantViewError, type ItemsOnly, type TenantMetadataView, type TenantViewSpec } from './tenant-view-spec.ts';

/**
 * Fails `transform` when the stream piped into it closes before its end. Node's HTTP/2 client stream, when its
 * session's socket closes (the apiserver killed, the connection cut), ends its readable side with bytes still buffered
 * and is destroyed: it never emits 'end', and stream.pipeline waits for that 'end' (an ended source that closes early
 * is not an error to it), so the client's answer would hang, with its worker task and flow-control seat.
 */
export function failWhenSourceCut(transform: Transform): void {
  transform.once('pipe', (source: Readable) => {
    source.once('close', () => {
      if (!source.readableEnded && !transform.destroyed) transform.destroy(new Error('the upstream answer broke off before its end'));
    });
  });
}

/**
 * A Transform over one TenantViewScanner: upstream bytes in, the tenant's view out, with backpressure. It counts what
 * passed and the time spent scanning (two clock reads per chunk), for metrics and the request log.
 */
class TenantViewTransform extends Transform {
  readonly scanner: TenantViewScanner;
  bytesIn = 0;
  bytesOut = 0;
  scanSeconds = 0;

  constructor(kind: 'list' | 'watch', spec: TenantViewSpec, itemsOnly?: ItemsOnly) {
    super();
    this.scanner = new TenantViewScanner(kind, spec, itemsOnly);
    failWhenSourceCut(this);
  }

  get eventsOut(): number {
    return this.scanner.eventsKept;
  }

  // (A paused client holds the upstream back here at most one item late: Transform holds back the write that
  // pushed while the output is full, and chunks inside an item push nothing until the item ends.)
  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytesIn += chunk.length;
    pushThrough(this, this.scanner, chunk, callback);
  }

  override _flush(callback: TransformCallback): void {
    pushThrough(this, this.scanner, null, callback);
  }
}

/** A list response (`{"kind":"...List","metadata":{...},"items":[...]}`) in, the tenant's view of it out. */
export class ListRewriter extends TenantViewTransform {
  constructor(spec: TenantViewSpec, itemsOnly?: ItemsOnly) {
    super('list', spec, itemsOnly);
  }
}

/** A JSON watch stream (one event per line) in, the tenant's events out, one per line. */
export class WatchRewriter extends TenantViewTransform {
  constructor(spec: TenantViewSpec) {
    super('watch', spec);
  }
}

/**
 * Whether the output is built over a chunk written to the stream (writeOwned): when the chunk is at least a quarter
 * of the memory it lies in. An HTTP/2 DATA frame is a view into the session's read buffer, shared with other streams
 * (measured: 16 KiB frames in 32-64 KiB buffers, a 300-byte event in a 33 KB one), which the output then keeps
 * alive until it is sent: for a watch's small events, longer than the events themselves.
 */
function outputOverChunk(chunk: Buffer): boolean {
  return chunk.length * 4 >= chunk.buffer.byteLength;
}

/** Rewrites a chunk written to the stream (the stream's own from then on) or, with null, ends. */
function pushThrough(stream: TenantViewTransform, scanner: TenantViewScanner, chunk: Buffer | null, callback: TransformCallback): void {
  let out: Buffer | Buffer[];
  const started = performance.now();
  try {
    out = chunk === null ? scanner.finish() : outputOverChunk(chunk) ? scanner.writeOwned(chunk) : scanner.write(chunk);
  } catch (error) {
    callback(error as Error);
    return;
  } finally {
    stream.scanSeconds += (performance.now() - started) / 1000;
  }
  if (Array.isArray(out)) for (const part of out) pushOut(stream, part);
  else pushOut(stream, out);
  callback();
}

function pushOut(stream: TenantViewTransform, out: Buffer): void {
  stream.bytesOut += out.length;
  if (out.length > 0) stream.push(out);
}

/** The tenant's view of a whole list response held in memory. Throws TenantViewError. */
export function rewriteListBuffer(upstream: Buffer, spec: TenantViewSpec): Buffer {
  return rewriteWhole(new TenantViewScanner('list', spec), upstream);
}

/** The tenant's view of a whole JSON watch stream held in memory. Throws TenantViewError. */
export function rewriteWatchBuffer(upstream: Buffer, spec: TenantViewSpec): Buffer {
  return rewriteWhole(new TenantViewScanner('watch', spec), upstream);
}

function rewriteWhole(scanner: TenantViewScanner, upstream: Buffer): Buffer {
  const body = scanner.write(upstream);
  const tail = scanner.finish();
  return tail.length === 0 ? body : Buffer.concat([body, tail]);
}

// Protobuf lists and watch streams of the upstream rewritten to a tenant's view as their bytes arrive, as streams:
// the wire-level engine (lib/convert/protobuf/to-tenant.ts) behind a Transform with the rewriters' counters.
// Never passes a byte of an upstream item or event on before the engine has converted it; a watch is written in whole frames.
import { performance } from 'node:perf_hooks';
import { Transform, type TransformCallback } from 'node:stream';
import type { KindRow } from '../convert/kinds.ts';
import { ProtobufListToTenant, ProtobufWatchToTenant } from '../convert/protobuf/streams.ts';
import type { ConvertContext } from '../convert/rules/index.ts';
import type { RewriteCounters } from '../metrics/metrics.ts';
import { failWhenSourceCut } from './tenant-view.ts';

abstract class ProtobufRewriter extends Transform implements RewriteCounters {
  bytesIn = 0;
  bytesOut = 0;
  scanSeconds = 0;
  abstract readonly eventsOut: number;
  protected abstract convert(chunk: Buffer): Buffer;
  protected abstract finish(): Buffer;

  constructor() {
    super();
    // A cut upstream connection must end the answer as broken, never leave it waiting (tenant-view.ts says why).
    failWhenSourceCut(this);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytesIn += chunk.length;
    const started = performance.now();
    let out: Buffer;
    try {
      out = this.convert(chunk);
    } catch (error) {
      callback(error as Error);
      return;
    } finally {
      this.scanSeconds += (performance.now() - started) / 1000;
    }
    this.#send(out);
    callback();
  }

  override _flush(callback: TransformCallback): void {
    try {
      this.#send(this.finish());
      callback();
    } catch (error) {
      callback(error as Error);
    }
  }

  #send(out: Buffer): void {
    if (out.length === 0) return;
    this.bytesOut += out.length;
    this.push(out);
  }
}

/** A `<Kind>List` in protobuf, item by item (ProtobufListToTenant: held up to 4 MiB, streamed beyond). */
export class ProtobufListRewriter extends ProtobufRewriter {
  readonly eventsOut = 0;
  readonly #list: ProtobufListToTenant;

  /** `apiVersion`: the list's, as asked of the upstream. */
  constructor(row: KindRow, ctx: ConvertContext, apiVersion: string) {
    super();
    this.#list = new ProtobufListToTenant(row, ctx, apiVersion);
  }

  protected convert(chunk: Buffer): Buffer {
    return this.#list.write(chunk);
  }

  protected finish(): Buffer {
    return this.#list.finish();
  }
}

/** A protobuf watch stream, frame by frame; frames of objects not the tenant's are dropped. */
export class ProtobufWatchRewriter extends ProtobufRewriter {
  readonly #watch: ProtobufWatchToTenant;

  /** `apiVersion`: the watched objects', as asked of the upstream. */
  constructor(row: KindRow, ctx: ConvertContext, apiVersion: string) {
    super();
    this.#watch = new ProtobufWatchToTenant(row, ctx, apiVersion);
  }

  get eventsOut(): number {
    return this.#watch.kept;
  }

  protected convert(chunk: Buffer): Buffer {
    return this.#watch.write(chunk);
  }

  protected finish(): Buffer {
    return this.#watch.finish();
  }
}

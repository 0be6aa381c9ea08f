// Compressed answers for clients that ask (`Accept-Encoding: gzip`, which client-go sends by default), as
// kube-apiserver compresses them: gzip at level 1, for an answer of 128 KiB or more. tenantgate streams its answers,
// so it holds the first 128 KiB (and the head) to decide: an answer that ends before is sent as it is, whole; a longer
// one goes out compressed as it comes, on libuv's threads, not the event loop. (A list of 300 ConfigMaps: 1,428 KB
// on the wire became 78 KB, and loopback latency fell too: docs/behaviour.md.)
import { pipeline, Writable } from 'node:stream';
import { createGzip, gzip, type Gzip } from 'node:zlib';

/** The apiserver's threshold (responsewriters: defaultGzipThresholdBytes) and level (defaultGzipContentEncodingLevel). */
export const GZIP_THRESHOLD_BYTES = 128 * 1024;
const GZIP_LEVEL = 1;

/** Whether Accept-Encoding takes gzip (by name or `*`, with a q above 0). */
export function acceptsGzip(acceptEncoding: string | string[] | undefined): boolean {
  if (acceptEncoding === undefined) return false;
  const text = Array.isArray(acceptEncoding) ? acceptEncoding.join(',') : acceptEncoding;
  return text.split(',').some((part) => {
    const [coding, ...parameters] = part.split(';').map((piece) => piece.trim().toLowerCase());
    if (coding !== 'gzip' && coding !== '*') return false;
    const q = parameters.find((parameter) => parameter.startsWith('q='));
    return q === undefined || Number.parseFloat(q.slice(2)) > 0;
  });
}

/** A whole answer, compressed when it is large enough; calls back with the bytes to send and whether they are gzip. */
export function compressWhole(body: Buffer, done: (bytes: Buffer, compressed: boolean) => void): void {
  if (body.length < GZIP_THRESHOLD_BYTES) {
    done(body, false);
    return;
  }
  gzip(body, { level: GZIP_LEVEL }, (error, zipped) => (error === null ? done(zipped, true) : done(body, false)));
}

/**
 * The response body for a client that takes gzip. `release(compressed, length)` sends the held head once it is
 * decided (the whole length when not compressed). Before a head is held (a Status, a non-200), `passThrough()`.
 */
export class GzipOut extends Writable {
  readonly #to: Writable;
  readonly #release: (compressed: boolean, length: number) => void;
  #held: Buffer[] = [];
  #heldBytes = 0;
  /** null until decided; then the compressor, or false: the bytes go out as they are. */
  #gzip: Gzip | false | null = null;
  #finished: ((error?: Error | null) => void) | null = null;

  constructor(to: Writable, release: (compressed: boolean, length: number) => void) {
    super();
    this.#to = to;
    this.#release = release;
    to.once('close', () => this.destroy());
  }

  /** The head was sent without waiting: bytes go out as written. */
  passThrough(): void {
    if (this.#gzip === null) this.#gzip = false;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.#gzip === null) {
      this.#held.push(chunk);
      this.#heldBytes += chunk.length;
      if (this.#heldBytes < GZIP_THRESHOLD_BYTES) {
        callback();
        return;
      }
      // (What was held, this chunk with it, goes into the compressor first.)
      const compressor = this.#startGzip();
      if (compressor.write(this.#takeHeld())) callback();
      else compressor.once('drain', () => callback());
      return;
    }
    const target = this.#gzip === false ? this.#to : (this.#gzip as Gzip);
    if (target.write(chunk)) callback();
    else target.once('drain', () => callback());
  }

  #takeHeld(): Buffer {
    const held = Buffer.concat(this.#held);
    this.#held = [];
    return held;
  }

  /** Sends the head, saying gzip, and starts the compressor into the client. */
  #startGzip(): Gzip {
    const compressor = createGzip({ level: GZIP_LEVEL });
    this.#gzip = compressor;
    this.#release(true, 0);
    pipeline(compressor, this.#to, (error) => {
      const finished = this.#finished;
      this.#finished = null;
      if (finished !== null) finished(error ?? null);
      else if (error) this.destroy(error);
    });
    return compressor;
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (this.#gzip === null) {
      // Ended below the threshold: sent whole, with its length.
      const body = this.#takeHeld();
      this.#gzip = false;
      this.#release(false, body.length);
      this.#to.end(body, () => callback());
      return;
    }
    if (this.#gzip === false) {
      this.#to.end(() => callback());
      return;
    }
    this.#finished = callback;
    this.#gzip.end();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (this.#gzip) this.#gzip.destroy();
    if (!this.#to.destroyed && (error !== null || !this.#to.writableEnded)) this.#to.destroy(error ?? undefined);
    callback(error);
  }
}

// Rewrites a response or request body that must be seen whole (one object, a Status, a Table, discovery):
// collects it up to a bound, then hands the parsed JSON to a rewrite function. Lists and watches never come here.
import { Transform, type TransformCallback } from 'node:stream';

/** The apiserver refuses request bodies over 3 MiB; single objects stay well under this. */
export const MAX_WHOLE_BODY_BYTES = 16 * 1024 * 1024;

export class BodyTooLargeError extends Error {}
export class BodyNotJsonError extends Error {}

/** `rewrite` gets the parsed body and returns the value to send (serialized as JSON). */
export class WholeJsonRewriter extends Transform {
  private readonly chunks: Buffer[] = [];
  private size = 0;
  private readonly rewrite: (body: unknown) => unknown;

  constructor(rewrite: (body: unknown) => unknown) {
    super();
    this.rewrite = rewrite;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.size += chunk.length;
    if (this.size > MAX_WHOLE_BODY_BYTES) return done(new BodyTooLargeError(`body larger than ${MAX_WHOLE_BODY_BYTES} bytes`));
    this.chunks.push(chunk);
    done();
  }

  override _flush(done: TransformCallback): void {
    const text = Buffer.concat(this.chunks, this.size).toString('utf8');
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return done(new BodyNotJsonError('the body is not valid JSON'));
    }
    try {
      done(null, Buffer.from(JSON.stringify(this.rewrite(body))));
    } catch (error) {
      done(error as Error);
    }
  }
}

// A request context for unit tests of the pipeline's stages and response converters: no server and no socket, the
// request body from memory, and the answer (status, head, body bytes) recorded. Never opens a connection itself.
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import { PassThrough, Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { TLSSocket } from 'node:tls';
import type { Identity } from '../../lib/auth/identity.ts';
import { RequestContext, setContentLength, type UpgradeRequest } from '../../lib/request/context.ts';

export interface RecordingOptions {
  headers?: IncomingHttpHeaders;
  /** The request body; none when omitted (the request is bodyless). */
  body?: string | Buffer;
  upgrade?: UpgradeRequest;
  identity?: Identity;
}

export class RecordingContext extends RequestContext {
  readonly rawHeaders: string[];
  readonly body = new PassThrough();
  readonly bodyless: boolean;
  readonly out: Writable;
  /** The head sent with respond() (null before), and the body bytes written to `out`. */
  sentHeaders: OutgoingHttpHeaders | null = null;
  readonly chunks: Buffer[] = [];
  #status = 0;

  constructor(method: string, path: string, options: RecordingOptions = {}) {
    const headers = options.headers ?? {};
    super(method, path, headers, {} as TLSSocket, options.upgrade ?? null);
    this.rawHeaders = Object.entries(headers).flatMap(([name, value]) => (Array.isArray(value) ? value.flatMap((v) => [name, v]) : [name, String(value)]));
    this.bodyless = options.body === undefined;
    this.body.end(options.body);
    const chunks = this.chunks;
    this.out = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        chunks.push(Buffer.from(chunk));
        callback();
      },
    });
    if (options.identity !== undefined) this.identity = options.identity;
  }

  get headersSent(): boolean {
    return this.sentHeaders !== null;
  }
  get statusCode(): number {
    return this.#status;
  }
  respond(status: number, headers: OutgoingHttpHeaders): void {
    if (this.sentHeaders !== null) return;
    this.#status = status;
    this.sentHeaders = headers;
  }
  answer(status: number, headers: OutgoingHttpHeaders, body?: string | Buffer): void {
    if (this.sentHeaders !== null || this.out.destroyed) return;
    if (body !== undefined) setContentLength(headers, body);
    this.respond(status, headers);
    this.out.end(body);
  }

  /** Resolves once the answer ended or was cut off. */
  async ended(): Promise<void> {
    await finished(this.out).catch(() => undefined);
  }
  get text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }
  get json(): any {
    return JSON.parse(this.text);
  }
}

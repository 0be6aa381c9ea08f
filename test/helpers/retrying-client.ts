// An HTTP/2 client that retries as client-go does across replicas: a request refused by GOAWAY (never processed) or
// lost with its connection before any byte of an answer goes again on a new connection, a 503 or 429 with Retry-After
// after that wait; every outcome counted by kind. Anything else (a wrong status, a stream cut mid-answer) is a failure.
import http2, { type ClientHttp2Session, type IncomingHttpHeaders } from 'node:http2';
import type { ClusterCredentials } from '../../lib/upstream/kubeconfig.ts';
import { connectH2 } from './http.ts';

export interface Outcome {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface RetryCounts {
  /** Answers (after retries) by status. */
  answered: Record<number, number>;
  /** Retries after a stream refused by GOAWAY (or a session that had received one). */
  goawayRefused: number;
  /** Retries after a connection lost before any byte of the answer (reset, refused, closed). */
  connectionLost: number;
  /** Retries after a 503 or 429 with Retry-After. */
  retryAfter: number;
  /** Requests given up on: the message of each (cut mid-answer, too many retries). */
  failures: string[];
}

const MAX_ATTEMPTS = 8;
const REQUEST_TIMEOUT_MS = 20_000;
const { NGHTTP2_REFUSED_STREAM } = http2.constants;

class Retry extends Error {
  readonly kind: 'goawayRefused' | 'connectionLost' | 'retryAfter';
  readonly waitMs: number;
  constructor(kind: Retry['kind'], waitMs = 0) {
    super(kind);
    this.kind = kind;
    this.waitMs = waitMs;
  }
}

export class RetryingClient {
  readonly counts: RetryCounts = { answered: {}, goawayRefused: 0, connectionLost: 0, retryAfter: 0, failures: [] };
  readonly #credentials: ClusterCredentials;
  #session: ClientHttp2Session | null = null;
  /** Sessions that received GOAWAY: a stream of theirs that closes unanswered was refused, not lost. */
  readonly #goaway = new WeakSet<ClientHttp2Session>();
  /** Sessions opened so far (the first, and one per reconnection). */
  sessionsOpened = 0;

  constructor(credentials: ClusterCredentials) {
    this.#credentials = credentials;
  }

  #sessionNow(): ClientHttp2Session {
    const current = this.#session;
    if (current !== null && !current.closed && !current.destroyed) return current;
    this.sessionsOpened++;
    const session = connectH2(this.#credentials);
    session.once('goaway', () => this.#goaway.add(session));
    this.#session = session;
    return session;
  }

  /** One request, retried as the kinds above allow; resolves with the final answer, or null when given up on. */
  async request(method: string, path: string, body?: unknown): Promise<Outcome | null> {
    let last = '';
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      try {
        const outcome = await this.#attempt(method, path, body);
        this.counts.answered[outcome.status] = (this.counts.answered[outcome.status] ?? 0) + 1;
        return outcome;
      } catch (error) {
        if (!(error instanceof Retry)) {
          this.counts.failures.push(`${method} ${path}: ${(error as Error).message}`);
          return null;
        }
        this.counts[error.kind]++;
        last = error.kind;
        // A lost connection is tried again after a backoff (50 ms doubling, at most 1 s), as real clients wait: one
        // that tries 8 times within milliseconds has given up before any replica could take it.
        const waitMs = error.kind === 'connectionLost' ? Math.min(1_000, 50 * 2 ** attempt) : error.waitMs;
        if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
      }
    }
    this.counts.failures.push(`${method} ${path}: still ${last} after ${MAX_ATTEMPTS} attempts`);
    return null;
  }

  #attempt(method: string, path: string, body: unknown): Promise<Outcome> {
    return new Promise((resolve, reject) => {
      let session: ClientHttp2Session;
      let stream;
      try {
        session = this.#sessionNow();
        const headers = { ':method': method, ':path': path, accept: 'application/json', ...(body === undefined ? {} : { 'content-type': 'application/json' }) };
        stream = session.request(headers, { endStream: body === undefined });
      } catch (error) {
        // The session had received GOAWAY (or died) before the request went out: never sent.
        this.#session = null;
        reject(new Retry((error as NodeJS.ErrnoException).code === 'ERR_HTTP2_GOAWAY_SESSION' ? 'goawayRefused' : 'connectionLost'));
        return;
      }
      let responded = false;
      let headers: IncomingHttpHeaders = {};
      const chunks: Buffer[] = [];
      stream.setTimeout(REQUEST_TIMEOUT_MS, () => stream.close(http2.constants.NGHTTP2_CANCEL));
      stream.on('response', (h) => {
        responded = true;
        headers = h;
      });
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        // A connection that went before any answer ends its streams too, headless: 'close' decides.
        if (!responded) return;
        const status = Number(headers[':status'] ?? 0);
        const retryAfter = headers['retry-after'];
        if ((status === 503 || status === 429) && retryAfter !== undefined) {
          reject(new Retry('retryAfter', Math.min(1_000, Number(retryAfter) * 1000)));
          return;
        }
        resolve({ status, headers, body: Buffer.concat(chunks).toString('utf8') });
      });
      stream.on('close', () => {
        if (responded && stream.readableEnded) return;
        if (responded) {
          reject(new Error(`the stream was cut mid-answer (HTTP/2 code ${stream.rstCode})`));
          return;
        }
        this.#session = null;
        const refused = stream.rstCode === NGHTTP2_REFUSED_STREAM || this.#goaway.has(session);
        reject(new Retry(refused ? 'goawayRefused' : 'connectionLost'));
      });
      stream.on('error', () => {}); // 'close' decides
      if (body !== undefined) stream.end(JSON.stringify(body));
    });
  }

  close(): void {
    this.#session?.close();
    this.#session = null;
  }
}

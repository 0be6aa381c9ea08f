// A fixed number of HTTP/2 requests over one session, a few in flight at once: what a CPU-per-request figure divides
// by. Bounded in count and time; every answer's status is checked, bodies are read and dropped.
import type { ClientHttp2Session } from 'node:http2';

export interface CountedRequest {
  method: string;
  path: string;
  body?: string;
  /** The status a served request answers with (200, 201). */
  expect: number;
  /** More request headers (e.g. Impersonate-*). */
  headers?: Record<string, string | string[]>;
}

export interface CountedRun {
  seconds: number;
  /** Bytes of all response bodies together. */
  bytes: number;
}

const REQUEST_TIMEOUT_MS = 60_000;

function one(session: ClientHttp2Session, request: CountedRequest): Promise<number> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | string[]> = { ...request.headers, ':method': request.method, ':path': request.path, accept: 'application/json' };
    if (request.body !== undefined) headers['content-type'] = 'application/json';
    const stream = session.request(headers, { endStream: request.body === undefined });
    let status = 0;
    let bytes = 0;
    let firstChunk = '';
    stream.setTimeout(REQUEST_TIMEOUT_MS, () => stream.close());
    stream.on('response', (h) => (status = Number(h[':status'])));
    stream.on('data', (chunk: Buffer) => {
      if (bytes === 0) firstChunk = chunk.subarray(0, 300).toString();
      bytes += chunk.length;
    });
    stream.on('end', () => (status === request.expect ? resolve(bytes) : reject(new Error(`${request.method} ${request.path}: ${status} ${firstChunk}`))));
    stream.on('error', reject);
    if (request.body !== undefined) stream.end(request.body);
  });
}

/** `count` requests, `concurrency` at a time; `requestFor(i)` says what the i-th is. Fails on the first unexpected answer. */
export async function countedRequests(
  session: ClientHttp2Session,
  count: number,
  concurrency: number,
  requestFor: (index: number) => CountedRequest,
): Promise<CountedRun> {
  const started = performance.now();
  let next = 0;
  let bytes = 0;
  const loop = async () => {
    while (next < count) bytes += await one(session, requestFor(next++));
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, loop));
  return { seconds: (performance.now() - started) / 1000, bytes };
}

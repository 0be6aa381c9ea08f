// tenantgate's own calls to the upstream (bootstrap, reconcile, probes), made with its own identity:
// small JSON requests, never a tenant's request and never impersonating anyone.
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http2';
import type { UpstreamPool } from './pool.ts';

export interface UpstreamAnswer {
  status: number;
  body: any;
}

const TIMEOUT_MS = 10_000;

export function upstreamJson(pool: UpstreamPool, method: string, path: string, body?: unknown, extraHeaders?: OutgoingHttpHeaders): Promise<UpstreamAnswer> {
  const headers: OutgoingHttpHeaders = { ...extraHeaders };
  if (body !== undefined) headers['content-type'] = method === 'PATCH' ? 'application/merge-patch+json' : 'application/json';
  return upstreamRequest(pool, method, path, body === undefined ? undefined : JSON.stringify(body), headers);
}

/** A request whose body is sent as it is, under the content-type `headers` give; the answer read as JSON when it is. */
export function upstreamRequest(
  pool: UpstreamPool,
  method: string,
  path: string,
  body: string | Buffer | undefined,
  extraHeaders: OutgoingHttpHeaders,
): Promise<UpstreamAnswer> {
  return new Promise((resolve, reject) => {
    const headers: OutgoingHttpHeaders = { accept: 'application/json', ...extraHeaders };
    if (pool.authorization !== undefined) headers.authorization = pool.authorization;
    const stream = pool.request(method, path, headers, body === undefined);
    let status = 0;
    const chunks: Buffer[] = [];
    stream.setTimeout(TIMEOUT_MS, () => stream.close());
    stream.on('response', (h: IncomingHttpHeaders) => (status = Number(h[':status'])));
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('error', reject);
    stream.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        // not JSON (e.g. a plain-text health answer)
      }
      resolve({ status, body: parsed });
    });
    stream.on('close', () => {
      if (status === 0) reject(new Error(`${method} ${path}: the upstream closed the stream (code ${stream.rstCode})`));
    });
    if (body !== undefined) stream.end(body);
  });
}

// Bounded load through tenantgate as one tenant: closed loops of requests for a fixed time, every answer recorded
// (status, Retry-After, latency). Used by the flow-control test and bench/fairness.ts alike.
import type { IncomingHttpHeaders } from 'node:http2';
import { loadKubeconfig } from '../../lib/upstream/kubeconfig.ts';
import { UpstreamPool } from '../../lib/upstream/pool.ts';

export interface Answer {
  status: number;
  retryAfter: string | undefined;
  body: string;
  ms: number;
}

export interface LoadResult {
  answers: Answer[];
  /** Answers by HTTP status. */
  byStatus: Record<number, number>;
  p50: number;
  p99: number;
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
}

export function request(pool: UpstreamPool, method: string, path: string): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const stream = pool.request(method, path, { accept: 'application/json' }, true);
    let headers: IncomingHttpHeaders = {};
    let body = '';
    stream.setEncoding('utf8');
    stream.setTimeout(30_000, () => stream.close());
    stream.on('response', (h) => (headers = h));
    stream.on('data', (chunk: string) => (body += chunk));
    stream.on('error', reject);
    stream.on('end', () =>
      resolve({ status: Number(headers[':status'] ?? 0), retryAfter: headers['retry-after'] as string | undefined, body, ms: performance.now() - started }),
    );
  });
}

/** `loops` concurrent closed loops of GET `path` for `durationMs` (a loop starts its next request when one ends). */
export async function loadFor(kubeconfig: string, path: string, loops: number, durationMs: number): Promise<LoadResult> {
  const pool = new UpstreamPool(loadKubeconfig(kubeconfig));
  const answers: Answer[] = [];
  const deadline = performance.now() + durationMs;
  try {
    // One request first so the TLS session exists before the clock matters.
    await request(pool, 'GET', path);
    await Promise.all(
      Array.from({ length: loops }, async () => {
        while (performance.now() < deadline) answers.push(await request(pool, 'GET', path));
      }),
    );
  } finally {
    pool.close();
  }
  const byStatus: Record<number, number> = {};
  for (const a of answers) byStatus[a.status] = (byStatus[a.status] ?? 0) + 1;
  const ok = answers.filter((a) => a.status === 200).map((a) => a.ms);
  return { answers, byStatus, p50: percentile(ok, 50), p99: percentile(ok, 99) };
}

// Bounded load through tenantgate as one tenant: closed loops of requests for a fixed time, every answer recorded
// (status, Retry-After, latency). Used by the flow-control test and bench/scenarios/noisy-neighbour.ts alike.
import type { IncomingHttpHeaders } from 'node:http2';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { loadKubeconfig } from '../../lib/upstream/kubeconfig.ts';
import { UpstreamPool } from '../../lib/upstream/pool.ts';

const JSON_MEDIA_TYPE = 'application/json';

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

/** `accept` other than JSON: the body is kept as latin1, a character a byte. */
export function request(pool: UpstreamPool, method: string, path: string, accept = JSON_MEDIA_TYPE): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const stream = pool.request(method, path, { accept }, true);
    let headers: IncomingHttpHeaders = {};
    let body = '';
    stream.setEncoding(accept === JSON_MEDIA_TYPE ? 'utf8' : 'latin1');
    stream.setTimeout(30_000, () => stream.close());
    stream.on('response', (h) => (headers = h));
    stream.on('data', (chunk: string) => (body += chunk));
    stream.on('error', reject);
    stream.on('end', () =>
      resolve({ status: Number(headers[':status'] ?? 0), retryAfter: headers['retry-after'] as string | undefined, body, ms: performance.now() - started }),
    );
  });
}

/**
 * `loops` concurrent closed loops of GET `path` for `durationMs` (a loop starts its next request when one ends).
 * `honourRetryAfter`: after a 429 a loop waits as long as Retry-After says, as client-go does.
 */
export async function loadFor(
  kubeconfig: string,
  path: string,
  loops: number,
  durationMs: number,
  honourRetryAfter = false,
  accept = JSON_MEDIA_TYPE,
): Promise<LoadResult> {
  const pool = new UpstreamPool(loadKubeconfig(kubeconfig));
  const answers: Answer[] = [];
  const deadline = performance.now() + durationMs;
  try {
    // One request first so the TLS session exists before the clock matters.
    await request(pool, 'GET', path, accept);
    await Promise.all(
      Array.from({ length: loops }, async () => {
        while (performance.now() < deadline) {
          const answer = await request(pool, 'GET', path, accept);
          answers.push(answer);
          if (honourRetryAfter && answer.status === 429) await new Promise((resolve) => setTimeout(resolve, Number(answer.retryAfter ?? 1) * 1000));
        }
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

interface LoadJob {
  kubeconfig: string;
  path: string;
  loops: number;
  durationMs: number;
  honourRetryAfter: boolean;
  accept: string;
}

/**
 * The same load from a worker thread: a noisy client on its own event loop, so it cannot delay the quiet client's
 * callbacks and what the quiet client measures is tenantgate, not its neighbour in the test process.
 */
export function loadInWorker(
  kubeconfig: string,
  path: string,
  loops: number,
  durationMs: number,
  honourRetryAfter = false,
  accept = JSON_MEDIA_TYPE,
): Promise<LoadResult> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL(import.meta.url), { workerData: { kubeconfig, path, loops, durationMs, honourRetryAfter, accept } satisfies LoadJob });
    worker.once('message', resolve);
    worker.once('error', reject);
    worker.once('exit', (code) => code !== 0 && reject(new Error(`load worker exited with ${code}`)));
  });
}

if (!isMainThread && (workerData as LoadJob | undefined)?.kubeconfig !== undefined) {
  const job = workerData as LoadJob;
  const result = await loadFor(job.kubeconfig, job.path, job.loops, job.durationMs, job.honourRetryAfter, job.accept);
  parentPort!.postMessage(result);
}

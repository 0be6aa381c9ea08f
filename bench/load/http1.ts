// HTTP/1.1 load with autocannon (it speaks only HTTP/1.1): requests/s at some concurrency, or each response's latency.
// Counts only 2xx answers as served; never retries, never reads bodies beyond what autocannon does.
import { createRequire } from 'node:module';

/** The part of autocannon's API used here (it ships no types). */
interface AutocannonInstance {
  on(event: 'response', listener: (client: unknown, statusCode: number, resBytes: number, responseTime: number) => void): void;
  on(event: 'done', listener: (result: unknown) => void): void;
}
type Autocannon = (
  options: { url: string; connections: number; duration: number; headers: Record<string, string>; pipelining: number; amount?: number; overallRate?: number },
  callback: (error: Error | null, result: unknown) => void,
) => AutocannonInstance;

const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

export interface Http1Run {
  requestsPerSecond: number;
  /** Every 2xx response's time from request to response, ms (autocannon's float, not its integer histogram). */
  latenciesMs: number[];
  non2xx: number;
}

export interface Http1Load {
  url: string;
  headers: Record<string, string>;
  connections: number;
  seconds: number;
  /** A fixed number of requests instead of `seconds` (autocannon then runs until all are answered). */
  amount?: number;
  /** Requests per second over all connections: a fixed rate instead of as fast as answers come. */
  overallRate?: number;
}

export function http1Load(load: Http1Load): Promise<Http1Run> {
  return new Promise((resolve, reject) => {
    const latenciesMs: number[] = [];
    let non2xx = 0;
    const started = performance.now();
    const instance = autocannon(
      {
        url: load.url,
        connections: load.connections,
        duration: load.seconds,
        headers: load.headers,
        pipelining: 1,
        ...(load.amount === undefined ? {} : { amount: load.amount }),
        ...(load.overallRate === undefined ? {} : { overallRate: load.overallRate }),
      },
      (error) => {
        if (error !== null) return reject(error);
        const seconds = (performance.now() - started) / 1000;
        resolve({ requestsPerSecond: latenciesMs.length / seconds, latenciesMs, non2xx });
      },
    );
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      if (statusCode >= 200 && statusCode < 300) latenciesMs.push(responseTime);
      else non2xx++;
    });
  });
}

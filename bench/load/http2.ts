// HTTP/2 load with h2load (Debian's nghttp2-client), as kubectl and client-go speak it: requests/s, and each
// request's latency from its log file. h2load has no client-certificate flag, so callers send a bearer token.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const H2LOAD = '/usr/bin/h2load';
export const H2LOAD_INSTALL = 'apt-get install -y nghttp2-client';

export function h2loadAvailable(): boolean {
  return existsSync(H2LOAD);
}

export interface Http2Load {
  url: string;
  headers: Record<string, string>;
  connections: number;
  /** Concurrent streams per connection. */
  streams: number;
  seconds: number;
  /** A fixed number of requests instead of `seconds` (h2load's -n); `seconds` then only bounds the wait. */
  requests?: number;
}

export interface Http2Run {
  requestsPerSecond: number;
  /** Each 2xx request's time until the end of its response, ms. */
  latenciesMs: number[];
  non2xx: number;
}

/** One h2load run for `seconds`; fails when h2load does, or when nothing succeeded. */
export async function http2Load(load: Http2Load): Promise<Http2Run> {
  const dir = mkdtempSync(join(tmpdir(), 'tenantgate-h2load-'));
  const logFile = join(dir, 'requests.log');
  try {
    const args = [
      '-c',
      String(load.connections),
      '-m',
      String(load.streams),
      '-t',
      '1',
      ...(load.requests === undefined ? ['-D', String(load.seconds)] : ['-n', String(load.requests)]),
      `--log-file=${logFile}`,
    ];
    for (const [name, value] of Object.entries(load.headers)) args.push('-H', `${name}: ${value}`);
    args.push(load.url);
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile(H2LOAD, args, { timeout: (load.seconds + 30) * 1000 }, (error, out, err) =>
        error === null ? resolve(out) : reject(new Error(`h2load: ${error.message} ${err}`)),
      );
    });
    const finished = /finished in ([\d.]+)(m?s), ([\d.]+) req\/s/.exec(stdout);
    if (finished === null) throw new Error(`h2load: no result in its output:\n${stdout}`);
    if (!/Application protocol: h2/.test(stdout)) throw new Error(`h2load did not negotiate HTTP/2:\n${stdout}`);
    // The log: start time (µs since the epoch), status code, µs until the end of the response; one request a line.
    const latenciesMs: number[] = [];
    let non2xx = 0;
    for (const line of readFileSync(logFile, 'utf8').split('\n')) {
      const [, status, micros] = line.split('\t');
      if (status === undefined || micros === undefined) continue;
      const code = Number(status);
      if (code >= 200 && code < 300) latenciesMs.push(Number(micros) / 1000);
      else non2xx++;
    }
    if (latenciesMs.length === 0) throw new Error(`h2load: no 2xx response (${non2xx} others):\n${stdout}`);
    return { requestsPerSecond: Number(finished[3]) * (latenciesMs.length / (latenciesMs.length + non2xx)), latenciesMs, non2xx };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

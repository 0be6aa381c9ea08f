// /livez, /readyz and /healthz of tenantgate itself, answered without authentication (like the apiserver's).
// Ready means the upstream answers its own /readyz; the answer is cached briefly so probes cost the upstream little.
import type { ServerResponse } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http2';
import type { UpstreamPool } from '../upstream/pool.ts';
import type { RequestContext } from './context.ts';

const READY_CACHE_MS = 1000;
const UPSTREAM_PROBE_TIMEOUT_MS = 2000;

export class HealthChecks {
  private readonly pool: UpstreamPool;
  private lastProbeAt = 0;
  private lastProbe: Promise<string | null> = Promise.resolve('not probed yet');

  constructor(pool: UpstreamPool) {
    this.pool = pool;
  }

  /** True when the request was a health check and has been answered. */
  serve(ctx: RequestContext): boolean {
    const { path } = ctx;
    const end = path.indexOf('?');
    const endpoint = end === -1 ? path : path.slice(0, end);
    if (endpoint !== '/livez' && endpoint !== '/readyz' && endpoint !== '/healthz') return false;
    // `?verbose` lists each check as the apiserver does ("[+]ping ok"), which clients and e2e tests read.
    const verbose = end !== -1 && new URLSearchParams(path.slice(end + 1)).has('verbose');
    const name = endpoint.slice(1);
    if (endpoint === '/livez') {
      answer(ctx, 200, checksText(name, verbose, null, false));
      return true;
    }
    this.upstreamProblem().then(
      (problem) => answer(ctx, problem === null ? 200 : 503, checksText(name, verbose, problem, true)),
      () => answer(ctx, 503, checksText(name, verbose, 'not probed', true)),
    );
    return true;
  }

  /** Null when the upstream is ready, else why not. */
  private upstreamProblem(): Promise<string | null> {
    const now = Date.now();
    if (now - this.lastProbeAt > READY_CACHE_MS) {
      this.lastProbeAt = now;
      this.lastProbe = this.probeUpstream();
    }
    return this.lastProbe;
  }

  private probeUpstream(): Promise<string | null> {
    return new Promise((resolve) => {
      const headers = this.pool.authorization === undefined ? {} : { authorization: this.pool.authorization };
      let stream;
      try {
        stream = this.pool.request('GET', '/readyz', headers, true);
      } catch (error) {
        resolve((error as Error).message);
        return;
      }
      stream.setTimeout(UPSTREAM_PROBE_TIMEOUT_MS, () => {
        stream.close();
        resolve('timed out');
      });
      stream.on('error', (error: Error) => resolve(error.message));
      stream.on('response', (headers: IncomingHttpHeaders) => {
        const status = Number(headers[':status']);
        resolve(status === 200 ? null : `upstream /readyz answered ${status}`);
        stream.resume();
      });
    });
  }
}

/** The body of a health answer: `ok` or why not, or with `?verbose` one line per check and a verdict. */
export function checksText(name: string, verbose: boolean, upstreamProblem: string | null, checksUpstream: boolean): string {
  if (!verbose) return upstreamProblem === null ? 'ok' : `upstream not ready: ${upstreamProblem}`;
  let text = '[+]ping ok\n';
  if (checksUpstream) text += upstreamProblem === null ? '[+]upstream ok\n' : `[-]upstream failed: ${upstreamProblem}\n`;
  return text + `${name} check ${upstreamProblem === null ? 'passed' : 'failed'}\n`;
}

function answer(ctx: RequestContext, status: number, text: string): void {
  const { res } = ctx;
  if (res.headersSent) return;
  (res as ServerResponse).writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'cache-control': 'no-cache, private',
    'x-content-type-options': 'nosniff',
  });
  res.end(text);
}

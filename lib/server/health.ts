// /livez, /readyz and /healthz, answered without authentication (like the apiserver's): tenantgate's own checks, and
// with `?verbose` (or for one named check) the upstream's, read with tenantgate's identity. Answers are cached briefly
// so probes cost the upstream little. Never forwards anything of the caller's but the check's path and `exclude`.
import type { ServerResponse } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http2';
import type { UpstreamPool } from '../upstream/pool.ts';
import type { RequestContext } from './context.ts';

const CACHE_MS = 1000;
const UPSTREAM_PROBE_TIMEOUT_MS = 2000;
const MAX_UPSTREAM_ANSWER_BYTES = 64 * 1024;

type Endpoint = 'livez' | 'readyz' | 'healthz';
const ENDPOINTS: ReadonlySet<string> = new Set<Endpoint>(['livez', 'readyz', 'healthz']);

/** tenantgate's own check besides `ping`: whether the upstream answers its /readyz (not part of liveness). */
export const UPSTREAM_CHECK = 'upstream';

/** An upstream health answer, or why there is none. */
export type UpstreamHealth = { status: number; text: string } | { problem: string };

/** A check name as the apiserver spells them (`etcd`, `poststarthook/start-apiextensions-informers`). */
const CHECK_NAME = /^[a-z0-9][a-z0-9./_-]{0,252}$/;

export class HealthChecks {
  private readonly pool: UpstreamPool;
  /** Upstream answers by path and query, each at most CACHE_MS old. */
  private readonly cache = new Map<string, { at: number; answer: Promise<UpstreamHealth> }>();

  constructor(pool: UpstreamPool) {
    this.pool = pool;
  }

  /** True when the request was a health check and has been (or is being) answered. */
  serve(ctx: RequestContext): boolean {
    const { path } = ctx;
    const end = path.indexOf('?');
    const pathname = end === -1 ? path : path.slice(0, end);
    const slash = pathname.indexOf('/', 1);
    const endpoint = pathname.slice(1, slash === -1 ? undefined : slash);
    if (!ENDPOINTS.has(endpoint)) return false;
    const query = new URLSearchParams(end === -1 ? '' : path.slice(end + 1));
    if (slash !== -1) {
      this.serveOneCheck(ctx, endpoint as Endpoint, pathname.slice(slash + 1));
      return true;
    }
    // `?verbose` lists each check as the apiserver does ("[+]etcd ok"), which clients and e2e tests read.
    const verbose = query.has('verbose');
    const name = endpoint as Endpoint;
    const excluded = new Set(query.getAll('exclude'));
    const own = name === 'livez' || excluded.has(UPSTREAM_CHECK) ? Promise.resolve(null) : this.upstreamReadiness();
    const upstream = verbose ? this.upstreamAnswer(name, excluded) : Promise.resolve(null);
    Promise.all([own, upstream]).then(
      ([problem, upstreamChecks]) => {
        const health = verbose ? verboseHealth(name, problem, upstreamChecks!) : { status: problem === null ? 200 : 503, text: checksText(problem) };
        answer(ctx, health.status, health.text);
      },
      () => answer(ctx, 503, 'not probed'),
    );
    return true;
  }

  /** `/readyz/upstream` is tenantgate's own; any other check is the upstream's, answered as it answers. */
  private serveOneCheck(ctx: RequestContext, endpoint: Endpoint, check: string): void {
    if (check === UPSTREAM_CHECK && endpoint !== 'livez') {
      this.upstreamReadiness().then((problem) => answer(ctx, problem === null ? 200 : 503, checksText(problem)));
      return;
    }
    if (check === 'ping') {
      answer(ctx, 200, 'ok'); // tenantgate answers: it is alive, whatever the upstream says
      return;
    }
    if (!CHECK_NAME.test(check) || check.includes('..') || check.includes('//')) {
      answer(ctx, 404, `${endpoint} check "${check}" not found`);
      return;
    }
    this.cached(`/${endpoint}/${check}`).then((upstream) => {
      if ('problem' in upstream) answer(ctx, 503, `upstream not reachable: ${upstream.problem}`);
      else answer(ctx, upstream.status, upstream.text);
    });
  }

  /** Null when the upstream is ready, else why not. */
  private upstreamReadiness(): Promise<string | null> {
    return this.cached('/readyz').then((upstream) => ('problem' in upstream ? upstream.problem : upstream.status === 200 ? null : `upstream /readyz answered ${upstream.status}`));
  }

  /** The upstream's verbose answer for an endpoint, its own exclusions passed on. */
  private upstreamAnswer(endpoint: Endpoint, excluded: ReadonlySet<string>): Promise<UpstreamHealth> {
    const query = new URLSearchParams({ verbose: '1' });
    for (const check of [...excluded].sort()) if (CHECK_NAME.test(check)) query.append('exclude', check);
    return this.cached(`/${endpoint}?${query}`);
  }

  private cached(path: string): Promise<UpstreamHealth> {
    const now = Date.now();
    const hit = this.cache.get(path);
    if (hit !== undefined && now - hit.at <= CACHE_MS) return hit.answer;
    // Bounded: a few endpoints, their checks and exclusions; stale entries go at the next miss past the bound.
    if (this.cache.size >= 256) for (const [key, entry] of this.cache) if (now - entry.at > CACHE_MS) this.cache.delete(key);
    const answer = this.fetch(path);
    if (this.cache.size < 256) this.cache.set(path, { at: now, answer });
    return answer;
  }

  private fetch(path: string): Promise<UpstreamHealth> {
    return new Promise((resolve) => {
      const headers = { accept: 'text/plain', ...(this.pool.authorization === undefined ? {} : { authorization: this.pool.authorization }) };
      let stream;
      try {
        stream = this.pool.request('GET', path, headers, true);
      } catch (error) {
        resolve({ problem: (error as Error).message });
        return;
      }
      let status = 0;
      let size = 0;
      const chunks: Buffer[] = [];
      stream.setTimeout(UPSTREAM_PROBE_TIMEOUT_MS, () => {
        stream.close();
        resolve({ problem: 'timed out' });
      });
      stream.on('error', (error: Error) => resolve({ problem: error.message }));
      stream.on('response', (h: IncomingHttpHeaders) => (status = Number(h[':status'])));
      stream.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= MAX_UPSTREAM_ANSWER_BYTES) chunks.push(chunk);
      });
      stream.on('end', () => resolve({ status, text: Buffer.concat(chunks).toString('utf8') }));
      stream.on('close', () => resolve({ problem: 'the upstream closed the stream' }));
    });
  }
}

/** The body of a short health answer: `ok` or why not. */
export function checksText(upstreamProblem: string | null): string {
  return upstreamProblem === null ? 'ok' : `upstream not ready: ${upstreamProblem}`;
}

/** The upstream's own verdict line (`readyz check passed`), which the combined answer replaces with its own. */
const VERDICT = /^\S+ check (passed|failed)$/;

/**
 * The verbose answer: the upstream's checks line by line, then tenantgate's own (`ping` unless the upstream listed it,
 * `upstream` for readiness), and the verdict. Ready and healthy only when the upstream is and tenantgate reaches it;
 * live whenever tenantgate answers (its restart would not mend the upstream), the upstream's failing checks listed.
 */
export function verboseHealth(name: Endpoint, upstreamProblem: string | null, upstream: UpstreamHealth): { status: number; text: string } {
  const lines = 'problem' in upstream ? [] : upstream.text.split('\n').filter((line) => line !== '' && !VERDICT.test(line));
  if (!lines.includes('[+]ping ok')) lines.unshift('[+]ping ok');
  let healthy = true;
  if (name !== 'livez') {
    lines.push(upstreamProblem === null ? `[+]${UPSTREAM_CHECK} ok` : `[-]${UPSTREAM_CHECK} failed: ${upstreamProblem}`);
    healthy = upstreamProblem === null && !('problem' in upstream) && upstream.status === 200;
  }
  return { status: healthy ? 200 : 503, text: `${lines.join('\n')}\n${name} check ${healthy ? 'passed' : 'failed'}\n` };
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

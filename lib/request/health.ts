// /livez, /readyz and /healthz, answered without authentication (like the apiserver's): tenantgate's own checks, and
// with `?verbose` (or for one named check) the upstream's, read with tenantgate's identity. Answers are cached briefly
// so probes cost the upstream little. Never sends the upstream anything of the caller's: a fixed few paths.
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
/** tenantgate's own readiness check that fails from the moment it starts shutting down (a Service drops it then). */
export const SHUTDOWN_CHECK = 'shutdown';
const SHUTTING_DOWN = 'shutting down';

/** An upstream health answer, or why there is none. */
export type UpstreamHealth = { status: number; text: string } | { problem: string };

export class HealthChecks {
  private readonly pool: UpstreamPool;
  /** Upstream answers by path (a fixed few: /readyz and the three verbose lists), each at most CACHE_MS old. */
  private readonly cache = new Map<string, { at: number; answer: Promise<UpstreamHealth> }>();
  #shuttingDown = false;

  constructor(pool: UpstreamPool) {
    this.pool = pool;
  }

  /** From now on /readyz fails, whatever the upstream says; liveness is unchanged (the process still serves). */
  shutdownStarted(): void {
    this.#shuttingDown = true;
  }

  /** True when the request was a health check and has been (or is being) answered. */
  serve(ctx: RequestContext): boolean {
    const pathname = ctx.pathname;
    const slash = pathname.indexOf('/', 1);
    const endpoint = pathname.slice(1, slash === -1 ? undefined : slash);
    if (!ENDPOINTS.has(endpoint)) return false;
    const name = endpoint as Endpoint;
    if (slash !== -1) {
      this.serveOneCheck(ctx, name, pathname.slice(slash + 1));
      return true;
    }
    const query = ctx.query;
    // `?verbose` lists each check as the apiserver does ("[+]etcd ok"), which clients and e2e tests read.
    const verbose = query.has('verbose');
    const excluded = new Set(query.getAll('exclude'));
    if (name === 'readyz' && this.#shuttingDown && !excluded.has(SHUTDOWN_CHECK)) {
      // Answered at once: a probe must see it now, not after an upstream round trip.
      answer(ctx, 503, verbose ? `[+]ping ok\n[-]${SHUTDOWN_CHECK} failed: ${SHUTTING_DOWN}\nreadyz check failed\n` : SHUTTING_DOWN);
      return true;
    }
    const own = name === 'livez' || excluded.has(UPSTREAM_CHECK) ? Promise.resolve(null) : this.upstreamReadiness();
    const upstream = verbose ? this.upstreamChecks(name) : Promise.resolve(null);
    Promise.all([own, upstream]).then(
      ([problem, upstreamChecks]) => {
        const health = verbose ? verboseHealth(name, problem, upstreamChecks!, excluded) : { status: problem === null ? 200 : 503, text: checksText(problem) };
        answer(ctx, health.status, health.text);
      },
      () => answer(ctx, 503, 'not probed'),
    );
    return true;
  }

  /**
   * `/<endpoint>/ping` and `/readyz/upstream` are tenantgate's own; any other check is answered from the upstream's
   * verbose list (so a caller's check names never become upstream requests): ok, failed (500) or not found.
   */
  private serveOneCheck(ctx: RequestContext, endpoint: Endpoint, check: string): void {
    if (check === 'ping') {
      answer(ctx, 200, 'ok'); // tenantgate answers: it is alive, whatever the upstream says
      return;
    }
    if (check === SHUTDOWN_CHECK && endpoint === 'readyz') {
      answer(ctx, this.#shuttingDown ? 503 : 200, this.#shuttingDown ? SHUTTING_DOWN : 'ok');
      return;
    }
    if (check === UPSTREAM_CHECK && endpoint !== 'livez') {
      this.upstreamReadiness().then((problem) => answer(ctx, problem === null ? 200 : 503, checksText(problem)));
      return;
    }
    this.upstreamChecks(endpoint).then((upstream) => {
      const found = 'problem' in upstream ? undefined : parseChecks(upstream.text).find((line) => line.check === check);
      if (found === undefined)
        answer(ctx, 'problem' in upstream ? 503 : 404, 'problem' in upstream ? `upstream not reachable: ${upstream.problem}` : `${endpoint} check not found`);
      else answer(ctx, found.passed ? 200 : 500, found.passed ? 'ok' : `internal server error: ${found.outcome}`);
    });
  }

  /** Null when the upstream is ready, else why not. */
  private upstreamReadiness(): Promise<string | null> {
    return this.cached('/readyz').then((upstream) =>
      'problem' in upstream ? upstream.problem : upstream.status === 200 ? null : `upstream /readyz answered ${upstream.status}`,
    );
  }

  /** The upstream's verbose list for an endpoint. */
  private upstreamChecks(endpoint: Endpoint): Promise<UpstreamHealth> {
    return this.cached(`/${endpoint}?verbose`);
  }

  private cached(path: string): Promise<UpstreamHealth> {
    const now = Date.now();
    const hit = this.cache.get(path);
    if (hit !== undefined && now - hit.at <= CACHE_MS) return hit.answer;
    const answer = this.fetch(path);
    this.cache.set(path, { at: now, answer });
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

interface CheckLine {
  check: string;
  passed: boolean;
  /** What follows the name: `ok`, `failed: reason withheld`, `excluded: ok`. */
  outcome: string;
}

/** The check lines of a verbose answer (`[+]etcd ok`, `[-]etcd failed: reason withheld`); anything else is left out. */
export function parseChecks(text: string): CheckLine[] {
  const lines: CheckLine[] = [];
  for (const line of text.split('\n')) {
    const match = /^\[([+-])\](\S+) (.+)$/.exec(line);
    if (match !== null) lines.push({ check: match[2]!, passed: match[1] === '+', outcome: match[3]! });
  }
  return lines;
}

/**
 * The verbose answer: the upstream's checks line by line (those the caller excluded marked so, as the apiserver does),
 * then tenantgate's own (`ping` unless the upstream listed it, `upstream` for readiness), and the verdict. Ready and
 * healthy only when every check not excluded passed and tenantgate reaches the upstream; live whenever tenantgate
 * answers (its restart would not mend the upstream), the upstream's failing checks listed.
 */
export function verboseHealth(
  name: Endpoint,
  upstreamProblem: string | null,
  upstream: UpstreamHealth,
  excluded: ReadonlySet<string> = new Set(),
): { status: number; text: string } {
  const checks = 'problem' in upstream ? [] : parseChecks(upstream.text);
  const unmatched = new Set(excluded);
  const lines: string[] = [];
  let healthy = !('problem' in upstream) && (upstream.status === 200 || checks.some((line) => !line.passed));
  if (!checks.some((line) => line.check === 'ping')) lines.push('[+]ping ok');
  for (const line of checks) {
    if (excluded.has(line.check)) {
      unmatched.delete(line.check);
      lines.push(`[+]${line.check} excluded: ok`);
      continue;
    }
    if (!line.passed) healthy = false;
    lines.push(`[${line.passed ? '+' : '-'}]${line.check} ${line.outcome}`);
  }
  if (name === 'livez') {
    healthy = true;
  } else if (excluded.has(UPSTREAM_CHECK)) {
    unmatched.delete(UPSTREAM_CHECK);
    lines.push(`[+]${UPSTREAM_CHECK} excluded: ok`);
  } else {
    lines.push(upstreamProblem === null ? `[+]${UPSTREAM_CHECK} ok` : `[-]${UPSTREAM_CHECK} failed: ${upstreamProblem}`);
    if (upstreamProblem !== null) healthy = false;
  }
  if (unmatched.size > 0)
    lines.push(`warn: some health checks cannot be excluded: no matches for ${[...unmatched].map((check) => JSON.stringify(check)).join(',')}`);
  return { status: healthy ? 200 : 503, text: `${lines.join('\n')}\n${name} check ${healthy ? 'passed' : 'failed'}\n` };
}

function answer(ctx: RequestContext, status: number, text: string): void {
  ctx.answer(
    status,
    {
      'content-type': 'text/plain; charset=utf-8',
      'cache-control': 'no-cache, private',
      'x-content-type-options': 'nosniff',
    },
    text,
  );
}

// Observes each request as its response ends (or its client goes away): its metrics, and its log line (one JSON line
// per request, at the configured level). Never logs a header, a query string, a body or any credential.
import { performance } from 'node:perf_hooks';
import { log, type LogLevel } from '../log.ts';
import type { TenantgateMetrics } from '../metrics/metrics.ts';
import { Http2RequestContext, type RequestContext } from './context.ts';

export type RequestLogLevel = LogLevel | 'off';
export const REQUEST_LOG_LEVELS: readonly RequestLogLevel[] = ['debug', 'info', 'warn', 'error', 'off'];

/** The verb of a request the pipeline did not classify (administrators, the Tenant API, health): from its method. */
const METHOD_VERBS: Record<string, string> = { GET: 'get', HEAD: 'get', POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete', OPTIONS: 'options' };

/** The Kubernetes verb of a request: as classified, else from its method. */
export function verbOf(ctx: RequestContext): string {
  return ctx.info?.verb ?? METHOD_VERBS[ctx.method] ?? 'unknown';
}

/** Bytes of the response body, when known: what a rewriter sent, or the length an HTTP/2 response declared. */
function responseBytes(ctx: RequestContext): number | undefined {
  if (ctx.rewrite !== null) return ctx.rewrite.bytesOut;
  // (HTTP/1.1 responses written with writeHead(status, headers) do not keep their headers readable.)
  const length = ctx instanceof Http2RequestContext ? ctx.stream.sentHeaders?.['content-length'] : undefined;
  return length === undefined ? undefined : Number(length);
}

export class RequestObserver {
  readonly #metrics: TenantgateMetrics | null;
  readonly #logLevel: RequestLogLevel;

  constructor(metrics: TenantgateMetrics | null, logLevel: RequestLogLevel) {
    this.#metrics = metrics;
    this.#logLevel = logLevel;
  }

  /** Starts observing one request; call before its first stage. */
  begin(ctx: RequestContext): void {
    ctx.startedAt = performance.now();
  }

  /** The request's exchange closed (its response ended, or its client went away). */
  ended(ctx: RequestContext): void {
    const seconds = (performance.now() - ctx.startedAt) / 1000;
    const { identity, caller, info } = ctx;
    const verb = verbOf(ctx);
    const resource = info?.resource ?? '';
    // 0: no response was sent (the client went away first).
    const code = ctx.statusCode;
    this.#metrics?.requestEnded(this.#metrics.tenantLabel(identity?.tenant ?? null, identity !== null), verb, resource, code, seconds);
    if (ctx.upstreamAnsweredAt !== 0) this.#metrics?.upstreamResponded(verb, (ctx.upstreamAnsweredAt - ctx.upstreamSentAt) / 1000);
    if (this.#logLevel === 'off') return;
    log[this.#logLevel]('request', {
      tenant: identity?.tenant ?? null,
      // Who called, and whom an impersonating request ran as (the tenant is the same: impersonation never changes it).
      user: (caller ?? identity)?.user ?? null,
      ...(caller === null ? {} : { as: identity?.user ?? null }),
      verb,
      resource,
      // The tenant's view: ctx.info is classified before conversion.
      namespace: info?.namespace ?? '',
      code,
      durationMs: Math.round(seconds * 10_000) / 10,
      bytes: responseBytes(ctx),
    });
  }
}

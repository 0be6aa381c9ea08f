// Forwards one request upstream and streams the answer back, both ways with backpressure.
// A client that goes away cancels the upstream stream; an upstream that fails before answering becomes a 503 Status.
import http2, { type ClientHttp2Stream, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http2';
import type { ServerResponse } from 'node:http';
import { pipeline } from 'node:stream';
import { upstreamIdentityOf } from '../auth/impersonation.ts';
import { performance } from 'node:perf_hooks';
import type { TenantgateMetrics } from '../metrics/metrics.ts';
import { releaseStartSeat } from '../flowcontrol/stage.ts';
import type { RequestContext } from '../server/context.ts';
import { verbOf } from '../server/request-end.ts';
import { sendStatus } from '../server/status.ts';
import { upstreamUnavailable } from '../errors/status-error.ts';
import { clientResponseHeaders, upstreamRequestHeaders } from './headers.ts';
import type { UpstreamPool } from './pool.ts';

const { NGHTTP2_CANCEL } = http2.constants;

function ignoreError(): void {}

/** True when the request carries no body, so the upstream stream can end with its headers. */
function hasNoBody(ctx: RequestContext): boolean {
  const { req } = ctx;
  if ('stream' in req) return req.stream.endAfterHeaders;
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] === undefined && (length === undefined || length === '0');
}

/**
 * Opens the upstream stream for a client's request and ties their fates: a client that goes away cancels it; an
 * upstream that fails or closes before `onResponse` ran becomes a 503 Status. Null when no stream could be opened
 * (the client has its 503 already).
 */
export function openUpstreamStream(
  res: RequestContext['res'],
  pool: UpstreamPool,
  method: string,
  path: string,
  headers: OutgoingHttpHeaders,
  endStream: boolean,
  onResponse: (upstreamHeaders: IncomingHttpHeaders) => void,
): ClientHttp2Stream | null {
  let upstream: ClientHttp2Stream;
  try {
    upstream = pool.request(method, path, headers, endStream);
  } catch (error) {
    sendStatus(res, upstreamUnavailable((error as Error).message));
    return null;
  }
  let responded = false;
  res.once('close', () => {
    // The client went away (or the response ended): make sure the upstream stream is gone too.
    if (!upstream.closed) upstream.close(NGHTTP2_CANCEL);
  });
  upstream.on('error', (error: Error) => {
    if (!res.headersSent) sendStatus(res, upstreamUnavailable(error.message));
    else res.destroy();
  });
  // A session that dies (upstream crash, GOAWAY past this stream) may close its streams without an 'error'.
  upstream.once('close', () => {
    if (!responded && !res.headersSent && !res.writableEnded) sendStatus(res, upstreamUnavailable(`the connection closed (HTTP/2 code ${upstream.rstCode})`));
  });
  upstream.once('response', (upstreamHeaders: IncomingHttpHeaders) => {
    responded = true;
    releaseStartSeat(res); // a watch holds its flow-control seat only while it starts
    // The client went away while the upstream answered: nothing to answer, and piping to it would throw.
    if (res.destroyed) return;
    onResponse(upstreamHeaders);
  });
  return upstream;
}

export function forwardToUpstream(ctx: RequestContext, pool: UpstreamPool, metrics: TenantgateMetrics | null = null): void {
  const { req, res } = ctx;
  const headers = upstreamRequestHeaders(req.headers, upstreamIdentityOf(ctx.identity!), pool);
  const endStream = hasNoBody(ctx);
  const sentAt = performance.now();
  const upstream = openUpstreamStream(res, pool, req.method ?? 'GET', ctx.path, headers, endStream, (upstreamHeaders) => {
    metrics?.upstreamResponded(verbOf(ctx), (performance.now() - sentAt) / 1000);
    const status = Number(upstreamHeaders[':status'] ?? 502);
    (res as ServerResponse).writeHead(status, clientResponseHeaders(upstreamHeaders));
    // Watches must reach the client event by event, not when a buffer fills.
    if ('flushHeaders' in res) res.flushHeaders();
    pipeline(upstream!, res, ignoreError);
  });
  if (upstream === null) return;
  if (!endStream) {
    // pipe, not pipeline: a failed upstream must not destroy the client's request before its 503 is written.
    req.on('error', () => upstream.close(NGHTTP2_CANCEL));
    req.pipe(upstream);
  }
}

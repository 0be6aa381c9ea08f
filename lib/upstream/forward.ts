// Forwards one request upstream and streams the answer back, both ways with backpressure.
// A client that goes away cancels the upstream stream; an upstream that fails before answering becomes a 503 Status.
import http2, { type ClientHttp2Stream, type IncomingHttpHeaders } from 'node:http2';
import type { ServerResponse } from 'node:http';
import { pipeline } from 'node:stream';
import { upstreamIdentityOf } from '../auth/impersonation.ts';
import type { RequestContext } from '../server/context.ts';
import { sendStatus, upstreamUnavailable } from '../server/status.ts';
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

export function forwardToUpstream(ctx: RequestContext, pool: UpstreamPool): void {
  const { req, res } = ctx;
  const headers = upstreamRequestHeaders(req.headers, upstreamIdentityOf(ctx.identity!), pool);
  const endStream = hasNoBody(ctx);
  let upstream: ClientHttp2Stream;
  try {
    upstream = pool.request(req.method ?? 'GET', ctx.path, headers, endStream);
  } catch (error) {
    sendStatus(res, upstreamUnavailable((error as Error).message));
    return;
  }

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
    if (!res.headersSent && !res.writableEnded) sendStatus(res, upstreamUnavailable(`the connection closed (HTTP/2 code ${upstream.rstCode})`));
  });
  upstream.once('response', (upstreamHeaders: IncomingHttpHeaders) => {
    const status = Number(upstreamHeaders[':status'] ?? 502);
    (res as ServerResponse).writeHead(status, clientResponseHeaders(upstreamHeaders));
    // Watches must reach the client event by event, not when a buffer fills.
    if ('flushHeaders' in res) res.flushHeaders();
    pipeline(upstream, res, ignoreError);
  });
  if (!endStream) {
    // pipe, not pipeline: a failed upstream must not destroy the client's request before its 503 is written.
    req.on('error', () => upstream.close(NGHTTP2_CANCEL));
    req.pipe(upstream);
  }
}

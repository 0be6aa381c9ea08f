// The upstream request of every request that reaches the upstream: its target and headers (converted for a tenant:
// prefixed names, tenantgate's impersonation of the tenant's identity, JSON asked for), then its stream, opened on a
// pooled session. A client that goes away cancels it; an upstream that fails before answering becomes a 503 Status.
import http2, { type ClientHttp2Stream, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http2';
import { performance } from 'node:perf_hooks';
import { upstreamIdentityOf, withGrantedClusterScope } from '../auth/impersonation.ts';
import type { TenantId } from '../convert/prefix.ts';
import { upstreamNonResourcePath, upstreamResourceTarget } from '../convert/request.ts';
import { rowObjectsFor } from '../convert/table.ts';
import { internalError, notFound, upstreamUnavailable } from '../errors/status-error.ts';
import { sendStatus } from './status.ts';
import { dropImpersonation, upstreamRequestHeaders } from '../upstream/headers.ts';
import type { UpstreamPool } from '../upstream/pool.ts';
import { identityOf, isConverted, upstreamHeadersOf, type RequestContext } from './context.ts';
import { asksForTable, isOpenApiV2, jsonAccept, openApiV2AsProtobuf, partialMetadataProtobufOf, protobufAnswerOf } from './negotiation.ts';
import type { Stage } from './stage.ts';
import type { TenantConversions } from './tenant-conversions.ts';
import { PROTOBUF_MEDIA_TYPE } from '../convert/protobuf/envelope.ts';

const { NGHTTP2_CANCEL } = http2.constants;

/** A discovery or OpenAPI request's upstream target; classification let through only paths that have one. */
function nonResourceTarget(decodedPath: string, query: URLSearchParams, tenant: TenantId): string {
  const path = upstreamNonResourcePath(decodedPath, tenant);
  if (path === null) throw notFound();
  const search = query.toString();
  return search === '' ? path : `${path}?${search}`;
}

/** The stage "prepare upstream request": target, method and headers; a tenant's converted. */
export function prepareUpstreamRequestStage(conversions: TenantConversions): Stage['run'] {
  const pool = conversions.pool;
  return (ctx) => {
    const identity = identityOf(ctx);
    // A tenant's answers are converted: their bodies must arrive uncompressed, and their length changes.
    const form = upstreamIdentityOf(identity, ctx.info);
    const headers = upstreamRequestHeaders(ctx.headers, ctx.grantedClusterScope ? withGrantedClusterScope(form) : form, pool, ctx.converts);
    ctx.upstreamHeaders = headers;
    ctx.upstreamMethod = ctx.method;
    if (!ctx.converts) {
      ctx.upstreamTarget = ctx.path;
      return false;
    }
    if (!isConverted(ctx)) throw internalError('a converted request reached "prepare upstream request" unclassified');
    const tenant = ctx.identity.tenant;
    const info = ctx.info;
    const row = ctx.row;
    let query = ctx.query;
    if (row !== null && asksForTable(ctx)) {
      // Kinds whose rule reads more than metadata need whole objects in the rows: asked upstream, cut back after.
      query = new URLSearchParams(query);
      ctx.rowObjects = rowObjectsFor(query, row);
    }
    ctx.upstreamTarget = row === null ? nonResourceTarget(info.path, query, tenant) : upstreamResourceTarget(info, row, query, tenant, conversions.of(tenant));
    // A read at the cluster scope its RBAC allowed, or a discovery document (stages "classify" and "authorize reads at
    // the cluster scope"): made as tenantgate, converted to the tenant's view.
    if (ctx.asTenantgate) dropImpersonation(headers);
    headers.accept = jsonAccept(ctx.headers.accept, row === null);
    const partialMetadata = partialMetadataProtobufOf(ctx);
    if (partialMetadata !== null) headers.accept = `application/json;as=${partialMetadata};g=meta.k8s.io;v=v1`;
    // (As client-go asks: protobuf, else JSON for what the apiserver does not serve as protobuf.)
    else if (protobufAnswerOf(ctx)) headers.accept = `${PROTOBUF_MEDIA_TYPE}, application/json`;
    if (row === null && isOpenApiV2(info.path)) {
      // tenantgate's own conditional request for the view it keeps (the client's went with the headers above).
      const cache = conversions.openapiV2;
      const protobuf = openApiV2AsProtobuf(ctx);
      const upstreamEtag = cache.upstreamEtagOf(tenant, protobuf);
      ctx.openapiV2 = { cache, kept: upstreamEtag === undefined ? undefined : cache.get(tenant, protobuf, upstreamEtag) };
      if (ctx.openapiV2.kept !== undefined) headers['if-none-match'] = ctx.openapiV2.kept.upstreamEtag;
    }
    return false;
  };
}

/** Where an upstream stream keeps its request's context, for listeners shared by every request (no closure per request). */
const CONTEXT = Symbol('tenantgate.upstream.requestContext');
export type UpstreamStream = ClientHttp2Stream & { [CONTEXT]?: RequestContext };

/** The request an upstream stream serves. */
export function contextOf(upstream: ClientHttp2Stream): RequestContext {
  return (upstream as UpstreamStream)[CONTEXT]!;
}

function onUpstreamError(this: UpstreamStream, error: Error): void {
  const ctx = this[CONTEXT]!;
  if (!ctx.headersSent) sendStatus(ctx, upstreamUnavailable(error.message));
  // With an error: a reset with NO_ERROR would let an HTTP/2 client take a cut list for a whole one.
  else ctx.out.destroy(error);
}

/** A session that dies (upstream crash, GOAWAY past this stream) may close its streams without an 'error'. */
function onUpstreamClose(this: UpstreamStream): void {
  const ctx = this[CONTEXT]!;
  ctx.upstream = null;
  if (ctx.upstreamStatus === 0 && !ctx.headersSent && !ctx.out.writableEnded)
    sendStatus(ctx, upstreamUnavailable(`the connection closed (HTTP/2 code ${this.rstCode})`));
}

/** Opens the upstream stream for `ctx` and sends its body: converted (`ctx.upstreamBody`) or, passing through, streamed. */
export function openUpstream(ctx: RequestContext, pool: UpstreamPool): ClientHttp2Stream {
  const streamsBody = !ctx.converts && !ctx.bodyless;
  const body = ctx.upstreamBody;
  const headers = upstreamHeadersOf(ctx);
  let upstream: UpstreamStream;
  try {
    upstream = pool.request(ctx.upstreamMethod, ctx.upstreamTarget, headers, body === null && !streamsBody);
  } catch (error) {
    throw upstreamUnavailable((error as Error).message);
  }
  ctx.upstream = upstream;
  ctx.upstreamSentAt = performance.now();
  upstream[CONTEXT] = ctx;
  upstream.on('error', onUpstreamError);
  upstream.once('close', onUpstreamClose);
  if (body !== null) upstream.end(body);
  else if (streamsBody) {
    // pipe, not pipeline: a failed upstream must not destroy the client's request before its 503 is written.
    ctx.body.once('error', () => cancelUpstream(ctx));
    ctx.body.pipe(upstream);
  }
  return upstream;
}

/** The stage "open upstream". */
export function openUpstreamStage(conversions: TenantConversions): Stage['run'] {
  const pool = conversions.pool;
  return (ctx) => {
    openUpstream(ctx, pool);
    return false;
  };
}

/** Ends the request's upstream stream if it is still open (the client went away, or the answer is complete). */
export function cancelUpstream(ctx: RequestContext): void {
  const upstream = ctx.upstream;
  if (upstream !== null && !upstream.closed) upstream.close(NGHTTP2_CANCEL);
}

/**
 * One upstream request of tenantgate's own on a client's behalf (an administrator's discovery with the Tenant API
 * added), answered by `onResponse` once its head arrives; failures before that are the client's 503.
 */
export function requestUpstreamFor(
  ctx: RequestContext,
  pool: UpstreamPool,
  path: string,
  headers: OutgoingHttpHeaders,
  onResponse: (upstream: ClientHttp2Stream, headers: IncomingHttpHeaders) => void,
): void {
  ctx.upstreamMethod = 'GET';
  ctx.upstreamTarget = path;
  ctx.upstreamHeaders = headers;
  ctx.upstreamBody = null;
  const upstream = openUpstream(ctx, pool);
  upstream.once('response', (upstreamHeaders: IncomingHttpHeaders) => {
    ctx.upstreamStatus = Number(upstreamHeaders[':status'] ?? 502);
    if (!ctx.out.destroyed) onResponse(upstream, upstreamHeaders);
  });
}

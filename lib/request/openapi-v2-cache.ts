// Each tenant's view of the upstream's OpenAPI v2 document (JSON or protobuf), and the answer made of it: kept while
// the upstream's ETag holds, revalidated upstream on every request (a 304 there costs milliseconds, so a CRD's schema
// shows as soon as the upstream publishes it), converted only when the document changed, with an ETag of its own.
// Never answers one tenant with another's view, nor a 304 for a validator that is not the asking tenant's.
import { createHash } from 'node:crypto';
import type { OutgoingHttpHeaders } from 'node:http';
import { openapiV2ToTenant } from '../convert/openapi.ts';
import { OPENAPI_V2_PROTOBUF, openapiV2ToProtobuf } from '../convert/protobuf/openapi-v2.ts';
import type { TenantId } from '../convert/prefix.ts';
import type { RequestContext } from './context.ts';
import { badGateway } from '../errors/status-error.ts';
import { convertOffThread, OFFLOAD_MIN_BYTES } from './offload.ts';

interface CachedView {
  upstreamEtag: string;
  tenantEtag: string;
  body: Buffer;
}

/** Whole views kept at most (~2 MB each here): LRU by bytes, so a thousand tenants cannot hold gigabytes. */
const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;

export class TenantOpenApiV2Cache {
  private readonly views = new Map<string, CachedView>();
  private bytes = 0;
  private readonly maxBytes: number;

  constructor(maxBytes = DEFAULT_MAX_BYTES) {
    this.maxBytes = maxBytes;
  }

  private static key(tenant: TenantId, protobuf: boolean): string {
    return `${tenant}\0${protobuf ? 'protobuf' : 'json'}`;
  }

  /** The upstream ETag of the view kept for this tenant and form: tenantgate's If-None-Match upstream. */
  upstreamEtagOf(tenant: TenantId, protobuf: boolean): string | undefined {
    return this.views.get(TenantOpenApiV2Cache.key(tenant, protobuf))?.upstreamEtag;
  }

  /** The view kept for this upstream ETag (the upstream answered 304 to it), most recently used now; or undefined. */
  get(tenant: TenantId, protobuf: boolean, upstreamEtag: string): CachedView | undefined {
    const key = TenantOpenApiV2Cache.key(tenant, protobuf);
    const view = this.views.get(key);
    if (view === undefined || view.upstreamEtag !== upstreamEtag) return undefined;
    this.views.delete(key);
    this.views.set(key, view);
    return view;
  }

  /** Keeps a freshly converted view of the upstream document that carried `upstreamEtag`; returns it with its ETag. */
  put(tenant: TenantId, protobuf: boolean, upstreamEtag: string, body: Buffer): CachedView {
    const key = TenantOpenApiV2Cache.key(tenant, protobuf);
    const view = { upstreamEtag, tenantEtag: tenantEtagOf(tenant, protobuf, upstreamEtag), body };
    this.drop(key);
    if (body.length > this.maxBytes) return view;
    this.views.set(key, view);
    this.bytes += body.length;
    for (const oldest of this.views.keys()) {
      if (this.bytes <= this.maxBytes) break;
      this.drop(oldest);
    }
    return view;
  }

  private drop(key: string): void {
    const view = this.views.get(key);
    if (view === undefined) return;
    this.views.delete(key);
    this.bytes -= view.body.length;
  }
}

/**
 * A tenant's own validator for its view of one upstream document: a digest of tenant, form and the upstream's ETag,
 * so it never equals another tenant's (nor the upstream's), and changes whenever the upstream document does.
 */
export function tenantEtagOf(tenant: TenantId, protobuf: boolean, upstreamEtag: string): string {
  const digest = createHash('sha256')
    .update(`${tenant}\0${protobuf ? 'protobuf' : 'json'}\0${upstreamEtag}`)
    .digest('hex');
  return `"${digest.slice(0, 32).toUpperCase()}"`;
}

/** Whether a client's If-None-Match names `etag` (a list of validators, `*`, or weak forms compare weakly). */
export function ifNoneMatchHolds(ifNoneMatch: string | string[] | undefined, etag: string): boolean {
  if (ifNoneMatch === undefined) return false;
  const wanted = etag.replace(/^W\//, '');
  for (const candidate of (Array.isArray(ifNoneMatch) ? ifNoneMatch.join(',') : ifNoneMatch).split(',')) {
    const value = candidate.trim();
    if (value === '*' || value.replace(/^W\//, '') === wanted) return true;
  }
  return false;
}

/** A view of OpenAPI v2 kept for the tenant, which tenantgate asks the upstream whether it still holds. */
export interface OpenApiV2Revalidation {
  cache: TenantOpenApiV2Cache;
  kept: ReturnType<TenantOpenApiV2Cache['get']>;
}

/**
 * The tenant's OpenAPI v2 answer from the upstream's 200 (converted, and kept under the upstream's ETag) or 304 (the
 * view kept): with the tenant's own ETag, and 304 when the client's If-None-Match names it (e2e and kubectl poll).
 */
export async function answerOpenApiV2(
  ctx: RequestContext,
  tenant: TenantId,
  protobuf: boolean,
  upstream: { status: number; etag: unknown; body: Buffer },
  revalidation: OpenApiV2Revalidation | null,
  responseHeaders: OutgoingHttpHeaders,
): Promise<void> {
  let view = upstream.status === 304 ? revalidation?.kept : undefined;
  if (view === undefined) {
    if (upstream.status === 304) throw badGateway('the upstream answered 304 to a request tenantgate did not make conditional');
    const body =
      upstream.body.length >= OFFLOAD_MIN_BYTES
        ? await convertOffThread({ kind: 'openapi-v2', tenant, body: upstream.body, protobuf })
        : convertOpenApiV2Inline(upstream.body, tenant, protobuf);
    const etag = typeof upstream.etag === 'string' && upstream.etag !== '' ? upstream.etag : null;
    view = etag !== null && revalidation !== null ? revalidation.cache.put(tenant, protobuf, etag, body) : { upstreamEtag: '', tenantEtag: '', body };
  }
  delete responseHeaders.etag;
  responseHeaders['content-type'] = protobuf ? OPENAPI_V2_PROTOBUF : 'application/json';
  if (view.tenantEtag !== '') responseHeaders.etag = view.tenantEtag;
  if (view.tenantEtag !== '' && ifNoneMatchHolds(ctx.headers['if-none-match'], view.tenantEtag)) {
    delete responseHeaders['content-type'];
    ctx.answer(304, responseHeaders);
    return;
  }
  ctx.answer(200, responseHeaders, view.body);
}

function convertOpenApiV2Inline(buffer: Buffer, tenant: TenantId, protobuf: boolean): Buffer {
  let document: unknown;
  try {
    document = JSON.parse(buffer.toString('utf8'));
  } catch {
    throw badGateway('the upstream OpenAPI v2 document is not JSON');
  }
  const view = openapiV2ToTenant(document as never, tenant);
  return protobuf ? openapiV2ToProtobuf(view as Record<string, unknown>, buffer.length) : Buffer.from(JSON.stringify(view));
}

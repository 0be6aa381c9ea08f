// Each tenant's view of the upstream's OpenAPI v2 document (JSON or protobuf), kept while the upstream's ETag holds:
// tenantgate revalidates upstream on every request (a 304 there costs milliseconds, so a CRD's schema shows as soon
// as the upstream publishes it), converts only when the document changed, and gives each view an ETag of its own.
// Never answers one tenant with another's view, nor a 304 for a validator that is not the asking tenant's.
import { createHash } from 'node:crypto';
import type { TenantId } from '../convert/prefix.ts';

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
  const digest = createHash('sha256').update(`${tenant}\0${protobuf ? 'protobuf' : 'json'}\0${upstreamEtag}`).digest('hex');
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

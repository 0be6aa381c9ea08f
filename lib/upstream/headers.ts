// Which request and response headers cross the proxy. Client credentials, impersonation and hop-by-hop headers
// never reach the upstream: they are dropped before tenantgate adds its own impersonation headers (a caller's
// Impersonate-* headers are honoured earlier, auth/requested-impersonation.ts: as tenantgate's impersonation of the target).
import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http2';
import type { TenantId } from '../convert/prefix.ts';
import { stripTenantPrefixes } from '../convert/status.ts';
import type { UpstreamIdentity } from '../auth/impersonation.ts';

/** Headers that describe one hop (RFC 9110 §7.6.1) or the client's own credentials: never forwarded. */
const DROPPED_REQUEST_HEADERS = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authorization',
  'proxy-authenticate',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'host',
  'http2-settings',
  'authorization',
]);

/** Prefixes that let a caller claim another identity upstream (capsule-proxy and kcp advisories). */
const DROPPED_REQUEST_PREFIXES = ['impersonate-', 'x-remote-'];

const DROPPED_RESPONSE_HEADERS = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade']);

function namesListedInConnection(value: string | string[] | undefined): Set<string> | null {
  if (value === undefined) return null;
  const names = new Set<string>();
  for (const part of (Array.isArray(value) ? value.join(',') : value).split(',')) {
    const name = part.trim().toLowerCase();
    if (name !== '') names.add(name);
  }
  return names;
}

function isDroppedRequestHeader(name: string, listedInConnection: Set<string> | null): boolean {
  if (name.charCodeAt(0) === 58 /* ':' pseudo-header */) return true;
  if (DROPPED_REQUEST_HEADERS.has(name)) return true;
  if (listedInConnection !== null && listedInConnection.has(name)) return true;
  for (const prefix of DROPPED_REQUEST_PREFIXES) if (name.startsWith(prefix)) return true;
  return false;
}

/**
 * Conditions on the upstream's validators. A tenant's discovery and OpenAPI answers are converted per tenant while
 * the upstream's ETag is the same for all: a 304 to one tenant's If-None-Match would confirm a body converted for
 * another (a kubectl cache shared by two tenants' kubeconfigs, keyed by server address, then shows one tenant the
 * other's API). Tenants' requests go unconditional; their answers are always their own.
 */
const CONDITIONAL_REQUEST_HEADERS: ReadonlySet<string> = new Set(['if-none-match', 'if-modified-since', 'if-match', 'if-unmodified-since', 'if-range']);

/** A body that tenantgate rewrites must arrive uncompressed, and its length is the converted one. */
const REWRITTEN_BODY_HEADERS: ReadonlySet<string> = new Set(['accept-encoding', 'content-length']);

export interface UpstreamCredentialsHeader {
  /** `Bearer <token>` when the upstream kubeconfig uses a token; client certificates travel in TLS instead. */
  authorization?: string;
}

/**
 * Headers for the upstream request: the client's headers minus everything dropped above (for a tenant, also its
 * conditions; with `rewritesBodies`, what a rewritten body cannot keep), then tenantgate's own credentials and
 * impersonation of `identity`. Built by copying what stays: a header deleted afterwards would cost every later read.
 */
export function upstreamRequestHeaders(
  incoming: IncomingHttpHeaders,
  identity: UpstreamIdentity,
  credentials: UpstreamCredentialsHeader,
  rewritesBodies = false,
): OutgoingHttpHeaders {
  const listedInConnection = namesListedInConnection(incoming.connection);
  const unconditional = identity.tenant != null;
  const out: OutgoingHttpHeaders = {};
  for (const name in incoming) {
    if (isDroppedRequestHeader(name, listedInConnection)) continue;
    if (unconditional && CONDITIONAL_REQUEST_HEADERS.has(name)) continue;
    if (rewritesBodies && REWRITTEN_BODY_HEADERS.has(name)) continue;
    out[name] = incoming[name];
  }
  if (credentials.authorization !== undefined) out.authorization = credentials.authorization;
  out['impersonate-user'] = identity.user;
  if (identity.groups.length > 0) out['impersonate-group'] = identity.groups;
  if (identity.uid !== undefined) out['impersonate-uid'] = identity.uid;
  if (identity.extra !== undefined) {
    for (const key in identity.extra) out[`impersonate-extra-${encodeURIComponent(key)}`] = identity.extra[key];
  }
  return out;
}

/** Makes upstream request headers tenantgate's own: its credentials stay, every Impersonate-* header goes. */
export function dropImpersonation(headers: OutgoingHttpHeaders): void {
  for (const name in headers) if (name.startsWith('impersonate-')) delete headers[name];
}

/** Response headers for the client: the upstream's, minus pseudo and hop-by-hop headers. */
export function clientResponseHeaders(upstream: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const name in upstream) {
    if (name.charCodeAt(0) === 58 || DROPPED_RESPONSE_HEADERS.has(name)) continue;
    out[name] = upstream[name];
  }
  return out;
}

/**
 * Upstream internals a tenant does not see: the UIDs of the upstream's own FlowSchemas and priority levels (never a
 * tenant's); and the length, since a tenant's body is the converted one.
 */
const NOT_FOR_TENANTS: ReadonlySet<string> = new Set(['x-kubernetes-pf-flowschema-uid', 'x-kubernetes-pf-prioritylevel-uid', 'content-length']);

/** Response headers for a tenant: the client's, minus upstream internals and the length, warnings in the tenant's names. */
export function tenantResponseHeaders(upstream: IncomingHttpHeaders, tenant: TenantId): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const name in upstream) {
    if (name.charCodeAt(0) === 58 || DROPPED_RESPONSE_HEADERS.has(name) || NOT_FOR_TENANTS.has(name)) continue;
    out[name] = upstream[name];
  }
  const warning = out.warning;
  // (Node types warning as one string; the upstream may send several.)
  if (Array.isArray(warning)) (out as Record<string, unknown>).warning = warning.map((w: unknown) => stripTenantPrefixes(String(w), tenant));
  else if (warning !== undefined) out.warning = stripTenantPrefixes(String(warning), tenant);
  return out;
}

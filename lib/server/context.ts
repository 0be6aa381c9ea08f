// The state one request carries through the pipeline: kept small and flat, one object per request.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type { Duplex } from 'node:stream';
import type { Identity } from '../auth/identity.ts';
import type { KindRow } from '../convert/kinds.ts';
import type { RequestInfo } from '../convert/request-info.ts';
import type { RewriteCounters } from '../metrics/metrics.ts';

export interface RequestContext {
  req: Http2ServerRequest | IncomingMessage;
  res: Http2ServerResponse | ServerResponse;
  /** The request target (path and query) as validated by the pipeline. */
  path: string;
  /** Who the request runs as: the caller, or whom its Impersonate-* headers name once the caller may impersonate them. */
  identity: Identity | null;
  /** The authenticated caller when the request impersonates someone (for the request log); null otherwise. */
  caller: Identity | null;
  /** A tenant's request as the apiserver would classify it (null for administrators, who pass through). */
  info: RequestInfo | null;
  /** The kind it names, from the table of kinds; null for non-resource requests (discovery). */
  row: KindRow | null;
  /** performance.now() when the request arrived (request duration, the request log line). */
  startedAt: number;
  /**
   * Made with tenantgate's own identity instead of the tenant's: a read at the cluster scope, which upstream no tenant
   * identity may make, once the tenant's own RBAC allowed it (still narrowed to the tenant); or a discovery document,
   * converted to the tenant's view.
   */
  asTenantgate: boolean;
  /** The list or watch rewriter the response streams through, if any (bytes sent, for the request log line). */
  rewrite: RewriteCounters | null;
  /**
   * An HTTP/1.1 request that asked for an Upgrade: its raw socket and the bytes read past its headers. It passes every
   * stage like any request (`res` writes to that socket); only exec, attach, port-forward and proxy are upgraded.
   */
  upgrade: UpgradeRequest | null;
}

export interface UpgradeRequest {
  socket: Duplex;
  head: Buffer;
}

/** A request's context before its first stage; `upgrade` for an HTTP/1.1 request handed over as a socket. */
export function newRequestContext(req: RequestContext['req'], res: RequestContext['res'], upgrade: UpgradeRequest | null = null): RequestContext {
  return { req, res, path: req.url ?? '', identity: null, caller: null, info: null, row: null, startedAt: 0, asTenantgate: false, rewrite: null, upgrade };
}

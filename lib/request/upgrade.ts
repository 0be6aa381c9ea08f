// exec, attach, port-forward and proxy: HTTP/1.1 Upgrade (SPDY or WebSocket) proxied as two raw sockets once the
// upstream agrees. HTTP/2 cannot carry Upgrade, so this path opens its own HTTP/1.1 connection upstream.
// Never relays a tenant anything but a 101 and its stream, or a Status in the tenant's names.
import type { IncomingMessage, OutgoingHttpHeaders } from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import { upstreamIdentityOf } from '../auth/impersonation.ts';
import type { TenantId } from '../convert/prefix.ts';
import type { RequestInfo } from '../convert/request-info.ts';
import { releaseStartSeat } from '../flowcontrol/stage.ts';
import { identityOf, isConverted, type Http1RequestContext, type RequestContext } from './context.ts';
import type { Stage } from './stage.ts';
import { upstreamResourceTarget } from '../convert/request.ts';
import { sendStatus } from './status.ts';
import { badRequest, internalError, StatusError, upstreamUnavailable } from '../errors/status-error.ts';
import { upstreamRequestHeaders } from '../upstream/headers.ts';
import { readBody, tenantStatusError } from './read-body.ts';
import { bearerAuthorization, type ClusterCredentials } from '../upstream/kubeconfig.ts';

/** Subresources whose protocol is an upgraded stream (the apiserver's exec, attach, portforward and proxy handlers). */
const UPGRADED_SUBRESOURCES: Readonly<Record<string, ReadonlySet<string>>> = {
  pods: new Set(['exec', 'attach', 'portforward', 'proxy']),
  services: new Set(['proxy']),
  nodes: new Set(['proxy']),
};

/** True when the request names a subresource that speaks an upgraded protocol; any other request is served plainly. */
export function isUpgradableRequest(info: RequestInfo): boolean {
  if (!info.isResourceRequest || info.apiPrefix !== 'api') return false;
  // The deprecated /api/v1/proxy/... form: the proxy verb on the resource itself.
  if (info.verb === 'proxy') return UPGRADED_SUBRESOURCES[info.resource]?.has('proxy') === true;
  return UPGRADED_SUBRESOURCES[info.resource]?.has(info.subresource) === true;
}

/** A refusal is a short Status; anything longer is not relayed. */
const MAX_REFUSAL_BYTES = 64 * 1024;

/**
 * The tenant's view of the upstream's answer to an upgrade it did not grant: its Status in the tenant's names, or, for
 * anything that is not a Status (an object, a list, a page of text), only its code: nothing of it is relayed.
 */
export function refusalToTenant(body: Buffer, statusCode: number, tenant: TenantId): StatusError {
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    // Not JSON: nothing of it can be shown safely.
  }
  // A success that is not a 101 is no answer to an upgrade: the tenant learns only that it did not happen.
  const code = statusCode >= 400 ? statusCode : 502;
  if (typeof parsed === 'object' && parsed !== null && (parsed as { kind?: unknown }).kind === 'Status') return tenantStatusError(code, parsed, tenant);
  return new StatusError(code, 'InternalError', `the upstream did not upgrade the connection (HTTP ${statusCode})`);
}

/** The upgraded connection's 101 as the upstream sent it (its Upgrade, Connection and Sec-WebSocket-* headers). */
function switchingProtocolsHead(upstreamResponse: IncomingMessage): string {
  let head = `HTTP/1.1 101 ${upstreamResponse.statusMessage || 'Switching Protocols'}\r\n`;
  const raw = upstreamResponse.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) head += `${raw[i]}: ${raw[i + 1]}\r\n`;
  return head + '\r\n';
}

/** Response headers relayed to an administrator with a refusal (hop-by-hop ones are the response's own). */
const HOP_BY_HOP_RESPONSE = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'upgrade']);

function administratorHeaders(upstreamResponse: IncomingMessage): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(upstreamResponse.headers)) if (!HOP_BY_HOP_RESPONSE.has(name) && value !== undefined) out[name] = value;
  return out;
}

/**
 * Opens the upgrade upstream at `path` (already converted for a tenant) as the caller, and on 101 joins the two
 * sockets. Refusals are answered through the request's context (a Status); a 101 is marked on its response, so the
 * request is observed and its flow-control seat released like any other.
 */
export function forwardUpgrade(ctx: RequestContext, path: string, credentials: ClusterCredentials): void {
  if (ctx.upgrade === null) throw internalError('an upgrade was forwarded for a request that asked for none');
  const { socket: clientSocket, head } = ctx.upgrade;
  const identity = identityOf(ctx);
  const url = new URL(credentials.server);
  const headers = upstreamRequestHeaders(ctx.headers, upstreamIdentityOf(identity, ctx.info), {
    authorization: bearerAuthorization(credentials),
  });
  // The upgrade itself is the one hop-by-hop exchange this path must carry.
  headers.connection = 'Upgrade';
  headers.upgrade = ctx.headers.upgrade;
  // A refusal is converted for tenants: it must arrive uncompressed.
  delete headers['accept-encoding'];
  const upstreamRequest = https.request({
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port === '' ? 443 : Number(url.port),
    method: ctx.method,
    path,
    headers,
    ca: credentials.caPem,
    cert: credentials.certPem,
    key: credentials.keyPem,
    rejectUnauthorized: credentials.insecureSkipTlsVerify !== true,
    agent: false,
  });

  const abandon = () => upstreamRequest.destroy();
  clientSocket.once('close', abandon);
  clientSocket.on('error', abandon);

  upstreamRequest.once('upgrade', (upstreamResponse: IncomingMessage, upstreamSocket: Duplex, upstreamHead: Buffer) => {
    // Marked as answered for the request log and metrics; the head itself goes out as the upstream wrote it.
    (ctx as Http1RequestContext).res.statusCode = 101;
    releaseStartSeat(ctx);
    clientSocket.write(switchingProtocolsHead(upstreamResponse));
    if (upstreamHead.length > 0) clientSocket.write(upstreamHead);
    if (head.length > 0) upstreamSocket.write(head);
    const closeBoth = () => {
      clientSocket.destroy();
      upstreamSocket.destroy();
    };
    upstreamSocket.on('error', closeBoth);
    upstreamSocket.once('close', closeBoth);
    clientSocket.once('close', closeBoth);
    upstreamSocket.pipe(clientSocket);
    clientSocket.pipe(upstreamSocket);
  });
  // The upstream answered without upgrading (forbidden, no such pod, or a plain answer): a tenant gets a Status in its
  // own names and nothing else of the answer; an administrator gets the answer as it is.
  upstreamRequest.once('response', (upstreamResponse: IncomingMessage) => {
    const statusCode = upstreamResponse.statusCode ?? 502;
    const tenant = identity.tenant;
    if (tenant === null) {
      ctx.respond(statusCode, administratorHeaders(upstreamResponse));
      upstreamResponse.pipe(ctx.out);
      return;
    }
    const tooLarge = () => upstreamUnavailable('the upstream refused the upgrade with an answer too large to convert');
    readBody(upstreamResponse, MAX_REFUSAL_BYTES, tooLarge).then(
      (refusal) => sendStatus(ctx, refusalToTenant(refusal, statusCode, tenant)),
      (error: unknown) => sendStatus(ctx, error),
    );
  });
  upstreamRequest.once('error', (error) => sendStatus(ctx, upstreamUnavailable(error.message)));
  upstreamRequest.end();
}

/**
 * The stage "upgrade": a request that carries Upgrade (HTTP/1.1 only). An administrator's is relayed whatever it names.
 * A tenant's exec, attach, port-forward and proxy are upgraded under the tenant's names; any other GET goes on as a
 * plain request (converted by the stages after this); any other method is refused, since its body was not read as a
 * request body.
 */
export function upgradeStage(credentials: ClusterCredentials): Stage['run'] {
  return (ctx) => {
    if (ctx.upgrade === null) return false;
    if (!ctx.converts) {
      forwardUpgrade(ctx, ctx.path, credentials);
      return true;
    }
    if (!isConverted(ctx)) throw internalError('a converted upgrade reached its stage unclassified');
    const info = ctx.info;
    if (isUpgradableRequest(info)) {
      // (exec, attach, port-forward and proxy are subresources of kinds in the table: "admit" let nothing else by.)
      if (ctx.row === null) throw internalError('an upgradable request reached its stage without its kind');
      forwardUpgrade(ctx, upstreamResourceTarget(info, ctx.row, ctx.query, ctx.identity.tenant), credentials);
      return true;
    }
    if (ctx.method === 'GET' || ctx.method === 'HEAD') return false;
    throw badRequest('Upgrade is served only for exec, attach, port-forward and proxy; send this request without it');
  };
}

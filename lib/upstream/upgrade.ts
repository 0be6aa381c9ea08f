// exec, attach and port-forward: HTTP/1.1 Upgrade (SPDY or WebSocket) proxied as two raw sockets once the
// upstream agrees. HTTP/2 cannot carry Upgrade, so this path opens its own HTTP/1.1 connection upstream.
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import type { Identity } from '../auth/identity.ts';
import { upstreamIdentityOf } from '../auth/impersonation.ts';
import type { TenantId } from '../convert/prefix.ts';
import { statusToTenant } from '../convert/status.ts';
import { StatusError, upstreamUnavailable, writeRawStatus } from '../server/status.ts';
import { upstreamRequestHeaders } from './headers.ts';
import { readBody } from './read-body.ts';
import type { ClusterCredentials } from './kubeconfig.ts';

const HOP_BY_HOP_RESPONSE = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'upgrade']);

function responseHead(statusCode: number, statusMessage: string, rawHeaders: string[], keepHopByHop: boolean, contentLength?: number): string {
  let head = `HTTP/1.1 ${statusCode} ${statusMessage}\r\n`;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (!keepHopByHop && HOP_BY_HOP_RESPONSE.has(name.toLowerCase())) continue;
    head += `${name}: ${rawHeaders[i + 1]}\r\n`;
  }
  if (contentLength !== undefined) head += `Content-Length: ${contentLength}\r\n`;
  if (!keepHopByHop) head += 'Connection: close\r\n';
  return head + '\r\n';
}

/** A refusal is a short Status; anything longer is not relayed. */
const MAX_REFUSAL_BYTES = 64 * 1024;

/** The tenant's view of the upstream's JSON answer to a refused upgrade (a Status, usually). */
export function refusalToTenant(body: Buffer, statusCode: number, tenant: TenantId): Buffer {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    // Not JSON after all: nothing of it can be shown safely.
    const status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: 'the upstream refused the upgrade', code: statusCode };
    return Buffer.from(JSON.stringify(status));
  }
  return Buffer.from(JSON.stringify(statusToTenant(parsed, tenant)));
}

export function forwardUpgrade(
  req: IncomingMessage,
  path: string,
  clientSocket: Duplex,
  head: Buffer,
  identity: Identity,
  credentials: ClusterCredentials,
): void {
  const url = new URL(credentials.server);
  const headers = upstreamRequestHeaders(req.headers as IncomingHttpHeaders, upstreamIdentityOf(identity), {
    authorization: credentials.token === undefined ? undefined : `Bearer ${credentials.token}`,
  });
  // The upgrade itself is the one hop-by-hop exchange this path must carry.
  headers.connection = 'Upgrade';
  headers.upgrade = req.headers.upgrade;
  // A refusal is converted for tenants: it must arrive uncompressed.
  delete headers['accept-encoding'];
  const upstreamRequest = https.request({
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: url.port === '' ? 443 : Number(url.port),
    method: req.method,
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

  upstreamRequest.once('upgrade', (upstreamResponse, upstreamSocket: Duplex, upstreamHead: Buffer) => {
    clientSocket.write(responseHead(101, upstreamResponse.statusMessage ?? 'Switching Protocols', upstreamResponse.rawHeaders, true));
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
  // The upstream refused to upgrade (forbidden, no such pod, ...): relay its answer, then close. A tenant gets a
  // Status in its own names (the upstream's message names the prefixed namespace and user); anything else as is.
  upstreamRequest.once('response', (upstreamResponse) => {
    const statusCode = upstreamResponse.statusCode ?? 502;
    const statusMessage = upstreamResponse.statusMessage ?? '';
    const isJson = String(upstreamResponse.headers['content-type'] ?? '').startsWith('application/json');
    if (identity.tenant === null || !isJson) {
      clientSocket.write(responseHead(statusCode, statusMessage, upstreamResponse.rawHeaders, false));
      upstreamResponse.pipe(clientSocket);
      return;
    }
    const tenant = identity.tenant;
    const tooLarge = () => upstreamUnavailable('the upstream refused the upgrade with an answer too large to convert');
    readBody(upstreamResponse, MAX_REFUSAL_BYTES, tooLarge).then(
      (refusal) => {
        const body = refusalToTenant(refusal, statusCode, tenant);
        clientSocket.write(responseHead(statusCode, statusMessage, upstreamResponse.rawHeaders, false, body.length));
        clientSocket.end(body);
      },
      (error: unknown) => (error instanceof StatusError ? writeRawStatus(clientSocket, error) : clientSocket.destroy()),
    );
  });
  upstreamRequest.once('error', (error) => writeRawStatus(clientSocket, upstreamUnavailable(error.message)));
  upstreamRequest.end();
}

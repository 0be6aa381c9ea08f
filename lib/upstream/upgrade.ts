// exec, attach and port-forward: HTTP/1.1 Upgrade (SPDY or WebSocket) proxied as two raw sockets once the
// upstream agrees. HTTP/2 cannot carry Upgrade, so this path opens its own HTTP/1.1 connection upstream.
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import type { Identity } from '../auth/identity.ts';
import { upstreamIdentityOf } from '../auth/impersonation.ts';
import { upstreamUnavailable, writeRawStatus } from '../server/status.ts';
import { upstreamRequestHeaders } from './headers.ts';
import type { ClusterCredentials } from './kubeconfig.ts';

const HOP_BY_HOP_RESPONSE = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'upgrade']);

function responseHead(statusCode: number, statusMessage: string, rawHeaders: string[], keepHopByHop: boolean): string {
  let head = `HTTP/1.1 ${statusCode} ${statusMessage}\r\n`;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (!keepHopByHop && HOP_BY_HOP_RESPONSE.has(name.toLowerCase())) continue;
    head += `${name}: ${rawHeaders[i + 1]}\r\n`;
  }
  if (!keepHopByHop) head += 'Connection: close\r\n';
  return head + '\r\n';
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
  // The upstream refused to upgrade (forbidden, no such pod, ...): relay its answer as is, then close.
  upstreamRequest.once('response', (upstreamResponse) => {
    clientSocket.write(
      responseHead(upstreamResponse.statusCode ?? 502, upstreamResponse.statusMessage ?? '', upstreamResponse.rawHeaders, false),
    );
    upstreamResponse.pipe(clientSocket);
  });
  upstreamRequest.once('error', (error) => writeRawStatus(clientSocket, upstreamUnavailable(error.message)));
  upstreamRequest.end();
}

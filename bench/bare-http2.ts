// The floor of bench/get-breakdown.ts, run as its own process: a bare node:http2 TLS server that answers every request
// with a fixed small body, or forwards it to the upstream over one pooled session. No stages, no conversion, no logs;
// never serves anything but loopback. Usage: node bench/bare-http2.ts <mode> <cert> <key> [upstream-kubeconfig [extra-headers-json]]
import { readFileSync } from 'node:fs';
import http2, { type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { loadKubeconfig } from '../lib/upstream/kubeconfig.ts';

/**
 * static-compat / proxy-compat: the compatibility API (request, response), HTTP/1.1 and HTTP/2 alike, as tenantgate
 * serves today; static-stream / proxy-stream: the http2 session's `stream` event (HTTP/2 only), issue 15's target shape;
 * hold-stream: every stream answered with its headers and one watch event and kept open, as an idle watch
 * (load/idle-stream-floor.ts: node:http2's own memory per idle watcher).
 */
const BARE_MODES = ['static-compat', 'static-stream', 'proxy-compat', 'proxy-stream', 'hold-stream'] as const;
type BareMode = (typeof BARE_MODES)[number];

/** About the size of the ConfigMap the breakdown GETs. */
const BODY = Buffer.from(
  JSON.stringify({
    kind: 'ConfigMap',
    apiVersion: 'v1',
    metadata: {
      name: 'probe',
      namespace: 'default',
      uid: '0b7c9a3e-2d9f-4b8e-9a51-3f1c2d4e5f60',
      resourceVersion: '1234',
      creationTimestamp: '2026-01-01T00:00:00Z',
    },
    data: { greeting: 'hello' },
  }),
);

function main(): void {
  const [mode, certFile, keyFile, upstreamKubeconfig, extraHeadersJson] = process.argv.slice(2) as [
    BareMode,
    string,
    string,
    string | undefined,
    string | undefined,
  ];
  // Headers every upstream request carries besides its own (a proxy's impersonation: bench/scenarios/density.ts).
  const extraHeaders = extraHeadersJson === undefined ? {} : (JSON.parse(extraHeadersJson) as Record<string, string>);
  if (!BARE_MODES.includes(mode)) throw new Error(`mode must be one of ${BARE_MODES.join(', ')}`);
  const proxying = mode.startsWith('proxy');
  const upstreamCredentials = proxying ? loadKubeconfig(upstreamKubeconfig!) : null;
  const upstream =
    upstreamCredentials === null
      ? null
      : http2.connect(upstreamCredentials.server, { ca: upstreamCredentials.caPem, cert: upstreamCredentials.certPem, key: upstreamCredentials.keyPem });
  upstream?.on('error', (error) => {
    console.error(`upstream session: ${error.message}`);
    process.exit(1);
  });
  const upstreamRequest = (headers: IncomingHttpHeaders) =>
    upstream!.request(
      { ...extraHeaders, ':method': headers[':method'] ?? 'GET', ':path': headers[':path'] ?? '/', accept: headers.accept ?? 'application/json' },
      { endStream: true },
    );

  const server = http2.createSecureServer({ cert: readFileSync(certFile), key: readFileSync(keyFile), allowHTTP1: mode.endsWith('compat') });
  if (mode === 'hold-stream') {
    const event = Buffer.from(JSON.stringify({ type: 'ADDED', object: JSON.parse(BODY.toString()) }) + '\n');
    server.on('stream', (stream: ServerHttp2Stream) => {
      stream.on('error', () => {});
      stream.respond({ ':status': 200, 'content-type': 'application/json' });
      stream.write(event);
    });
  } else if (mode === 'static-stream') {
    server.on('stream', (stream: ServerHttp2Stream) => {
      stream.on('error', () => {});
      stream.respond({ ':status': 200, 'content-type': 'application/json' });
      stream.end(BODY);
    });
  } else if (mode === 'proxy-stream') {
    server.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
      stream.on('error', () => {});
      const out = upstreamRequest(headers);
      out.on('error', () => stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR));
      out.on('response', (answer) => {
        stream.respond({ ':status': answer[':status'] ?? 502, 'content-type': answer['content-type'] ?? 'application/json' });
        out.pipe(stream);
      });
    });
  } else if (mode === 'static-compat') {
    server.on('request', (_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(BODY);
    });
  } else {
    server.on('request', (request, response) => {
      // HTTP/1.1 requests carry no pseudo-headers: make the upstream's from the request line.
      const out = upstreamRequest({ ':method': request.method, ':path': request.url, accept: request.headers.accept });
      out.on('error', () => response.destroy());
      out.on('response', (answer) => {
        response.writeHead(Number(answer[':status'] ?? 502), { 'content-type': answer['content-type'] ?? 'application/json' });
        out.pipe(response);
      });
    });
  }
  // As tenantgate does: a response's body written after its head must not wait for the client's delayed ACK (Nagle).
  server.on('secureConnection', (socket: TLSSocket) => socket.setNoDelay(true));
  server.listen(0, '127.0.0.1', () => {
    console.log(JSON.stringify({ url: `https://127.0.0.1:${(server.address() as AddressInfo).port}` }));
  });
  process.on('SIGTERM', () => process.exit(0));
}

main();

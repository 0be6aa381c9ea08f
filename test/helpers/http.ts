// Raw HTTP/2 and HTTP/1.1 requests with a kubeconfig's credentials, for tests that need to see the wire:
// status codes, headers, streaming, resets.
import http2, { type ClientHttp2Session, type IncomingHttpHeaders } from 'node:http2';
import https from 'node:https';
import { loadKubeconfig, type ClusterCredentials } from '../../lib/upstream/kubeconfig.ts';

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** The body's bytes (protobuf answers are not text). */
  bytes: Buffer;
  json(): any;
}

/** The headers kubectl exec sends to open its WebSocket (an HTTP/1.1 Upgrade), with a fixed key. */
export const EXEC_UPGRADE_HEADERS: Readonly<Record<string, string>> = {
  connection: 'Upgrade',
  upgrade: 'websocket',
  'sec-websocket-version': '13',
  'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
  'sec-websocket-protocol': 'v5.channel.k8s.io',
};

export function credentialsOf(kubeconfigPath: string): ClusterCredentials {
  return loadKubeconfig(kubeconfigPath);
}

export function connectH2(credentials: ClusterCredentials): ClientHttp2Session {
  const session = http2.connect(credentials.server, { ca: credentials.caPem, cert: credentials.certPem, key: credentials.keyPem });
  session.on('error', () => {});
  return session;
}

function answer(status: number, headers: IncomingHttpHeaders, body: string | Buffer): Answer {
  const bytes = typeof body === 'string' ? Buffer.from(body) : body;
  const text = bytes.toString();
  return { status, headers, body: text, bytes, json: () => JSON.parse(text) };
}

export function h2Request(
  session: ClientHttp2Session,
  method: string,
  path: string,
  options: { headers?: Record<string, string | string[]>; body?: string | Buffer } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':method': method, ':path': path, ...options.headers }, { endStream: options.body === undefined });
    let headers: IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    stream.on('response', (h) => (headers = h));
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => resolve(answer(Number(headers[':status']), headers, Buffer.concat(chunks))));
    stream.on('error', reject);
    if (options.body !== undefined) stream.end(options.body);
  });
}

export function h1Request(
  credentials: ClusterCredentials,
  method: string,
  path: string,
  options: { headers?: Record<string, string | string[]>; body?: string | Buffer; withCertificate?: boolean; servername?: string } = {},
): Promise<Answer> {
  const url = new URL(credentials.server);
  return new Promise((resolve, reject) => {
    const req = https.request(
      {
        host: url.hostname,
        port: url.port,
        method,
        path,
        headers: options.headers,
        ca: credentials.caPem,
        cert: options.withCertificate === false ? undefined : credentials.certPem,
        key: options.withCertificate === false ? undefined : credentials.keyPem,
        agent: false,
        // (The certificate is checked against this name; by default the Host header's.)
        servername: options.servername,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(answer(res.statusCode ?? 0, res.headers as IncomingHttpHeaders, Buffer.concat(chunks))));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Sums a Prometheus metric's samples whose labels include every given label. */
export function sumMetric(exposition: string, name: string, labels: Record<string, string>): number {
  let sum = 0;
  for (const line of exposition.split('\n')) {
    if (!line.startsWith(name + '{')) continue;
    const close = line.lastIndexOf('}');
    const labelText = line.slice(name.length + 1, close);
    if (Object.entries(labels).every(([k, v]) => labelText.includes(`${k}="${v}"`))) sum += Number(line.slice(close + 1).trim());
  }
  return sum;
}

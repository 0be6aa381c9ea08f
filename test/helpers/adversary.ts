// The adversarial suite's machinery: an oracle that looks for planted canaries in every byte an attacker receives,
// and a bounded runner that sends generated attack requests over HTTP/2 and HTTP/1.1. Never more than `concurrency`
// requests in flight, never a request or stream without a time bound.
import http2, { type ClientHttp2Session } from 'node:http2';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import type { ClusterCredentials } from '../../lib/upstream/kubeconfig.ts';

/** A string the attacker must never receive, and what it belongs to. */
export interface Canary {
  value: string;
  what: string;
}

export interface Hit {
  canary: Canary;
  /** where in the answer: `body`, `gunzipped body`, `header <name>`, `upgraded stream` */
  where: string;
  context: string;
}

/** Finds canaries in bytes; a canary the request itself carried (its path, headers or body) is the attacker's echo. */
export class Oracle {
  private readonly needles: { canary: Canary; bytes: Buffer }[];

  constructor(canaries: Canary[]) {
    this.needles = canaries.map((canary) => ({ canary, bytes: Buffer.from(canary.value) }));
  }

  scan(bytes: Buffer, where: string, sent: string): Hit[] {
    const hits: Hit[] = [];
    for (const { canary, bytes: needle } of this.needles) {
      const at = bytes.indexOf(needle);
      if (at === -1 || sent.includes(canary.value)) continue;
      const context = bytes
        .subarray(Math.max(0, at - 60), at + needle.length + 60)
        .toString('latin1')
        .replace(/[^\x20-\x7e]/g, '.');
      hits.push({ canary, where, context });
    }
    return hits;
  }
}

export type Credential = 'cert' | 'token' | 'none';
export type Protocol = 'h2' | 'h1';

/** One generated request of an attack class. */
export interface AttackRequest {
  attackClass: string;
  protocol: Protocol;
  credential: Credential;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** a watch or upgraded stream: read this long, then close */
  streamMs?: number;
}

export interface Received {
  status: number;
  headers: Record<string, unknown>;
  body: Buffer;
  /** bytes after a 101 Switching Protocols */
  upgraded?: Buffer;
  /** the request could not be sent, or the connection broke */
  error?: string;
}

const REQUEST_TIMEOUT_MS = 15_000;
const MAX_BODY_BYTES = 64 * 1024 * 1024;
const H2_SESSIONS_PER_CREDENTIAL = 2;

/** HTTP/2 sessions and HTTP/1.1 keep-alive agents for the attacker's credentials. */
export class AttackClient {
  private readonly sessions = new Map<string, ClientHttp2Session>();
  private readonly agents = new Map<Credential, https.Agent>();

  private readonly cert: ClusterCredentials;
  private readonly token: string;

  constructor(cert: ClusterCredentials, token: string) {
    this.cert = cert;
    this.token = token;
  }

  private tls(credential: Credential): { ca?: string; cert?: string; key?: string } {
    return credential === 'cert' ? { ca: this.cert.caPem, cert: this.cert.certPem, key: this.cert.keyPem } : { ca: this.cert.caPem };
  }

  private authorization(credential: Credential): Record<string, string> {
    return credential === 'token' ? { authorization: `Bearer ${this.token}` } : {};
  }

  private session(credential: Credential, slot: number): ClientHttp2Session {
    const key = `${credential}/${slot % H2_SESSIONS_PER_CREDENTIAL}`;
    let session = this.sessions.get(key);
    if (session === undefined || session.closed || session.destroyed) {
      session = http2.connect(this.cert.server, this.tls(credential));
      session.on('error', () => {}); // a broken session is seen by its streams; the next request reconnects
      this.sessions.set(key, session);
    }
    return session;
  }

  private agent(credential: Credential): https.Agent {
    let agent = this.agents.get(credential);
    if (agent === undefined) {
      agent = new https.Agent({ keepAlive: true, maxSockets: 24, ...this.tls(credential) });
      this.agents.set(credential, agent);
    }
    return agent;
  }

  send(request: AttackRequest, slot: number): Promise<Received> {
    const headers = { ...this.authorization(request.credential), ...request.headers };
    return request.protocol === 'h2' ? this.sendH2(request, headers, slot) : this.sendH1(request, headers);
  }

  private sendH2(request: AttackRequest, headers: Record<string, string>, slot: number): Promise<Received> {
    return new Promise((resolve) => {
      let stream: http2.ClientHttp2Stream;
      try {
        stream = this.session(request.credential, slot).request(
          { ':method': request.method, ':path': request.path, ...headers },
          { endStream: request.body === undefined },
        );
      } catch (error) {
        resolve({ status: 0, headers: {}, body: Buffer.alloc(0), error: `not sent: ${(error as Error).message}` });
        return;
      }
      let status = 0;
      let responseHeaders: Record<string, unknown> = {};
      const chunks: Buffer[] = [];
      let size = 0;
      let error: string | undefined;
      const done = () => {
        clearTimeout(timer);
        if (status === 0) error ??= `closed without an answer (code ${stream.rstCode})`;
        resolve({ status, headers: responseHeaders, body: Buffer.concat(chunks), error });
      };
      const timer = setTimeout(() => {
        if (request.streamMs === undefined) error = 'timed out';
        stream.close(http2.constants.NGHTTP2_CANCEL);
      }, request.streamMs ?? REQUEST_TIMEOUT_MS);
      stream.on('response', (h) => {
        responseHeaders = h as Record<string, unknown>;
        status = Number(h[':status']);
      });
      stream.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size <= MAX_BODY_BYTES) chunks.push(chunk);
      });
      stream.on('error', (e: Error) => (error ??= e.message));
      stream.on('close', done);
      if (request.body !== undefined) stream.end(request.body);
    });
  }

  private sendH1(request: AttackRequest, headers: Record<string, string>): Promise<Received> {
    const url = new URL(this.cert.server);
    const upgrade = Object.keys(headers).some((name) => name.toLowerCase() === 'upgrade');
    return new Promise((resolve) => {
      let settled = false;
      const chunks: Buffer[] = [];
      let size = 0;
      const finish = (received: Received) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(received);
      };
      let req: ReturnType<typeof https.request>;
      try {
        req = https.request({
          host: url.hostname,
          port: url.port,
          method: request.method,
          path: request.path,
          headers,
          // an upgrade may take the socket for itself: it gets a connection of its own
          ...(upgrade ? { agent: false, ...this.tls(request.credential) } : { agent: this.agent(request.credential) }),
        });
      } catch (error) {
        finish({ status: 0, headers: {}, body: Buffer.alloc(0), error: `not sent: ${(error as Error).message}` });
        return;
      }
      let status = 0;
      let responseHeaders: Record<string, unknown> = {};
      const timer = setTimeout(() => {
        req.destroy();
        finish({ status, headers: responseHeaders, body: Buffer.concat(chunks), error: request.streamMs === undefined ? 'timed out' : undefined });
      }, request.streamMs ?? REQUEST_TIMEOUT_MS);
      req.on('response', (res) => {
        status = res.statusCode ?? 0;
        responseHeaders = res.headers;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size <= MAX_BODY_BYTES) chunks.push(chunk);
        });
        res.on('end', () => finish({ status, headers: responseHeaders, body: Buffer.concat(chunks) }));
        res.on('error', (e) => finish({ status, headers: responseHeaders, body: Buffer.concat(chunks), error: e.message }));
      });
      req.on('upgrade', (res, socket: Duplex, head: Buffer) => {
        status = res.statusCode ?? 101;
        responseHeaders = res.headers;
        const upgraded: Buffer[] = [head];
        socket.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size <= MAX_BODY_BYTES) upgraded.push(chunk);
        });
        socket.on('error', () => {});
        const close = () => {
          socket.destroy();
          finish({ status, headers: responseHeaders, body: Buffer.alloc(0), upgraded: Buffer.concat(upgraded) });
        };
        socket.on('close', close);
        setTimeout(close, request.streamMs ?? 1000);
      });
      req.on('error', (e) => finish({ status, headers: responseHeaders, body: Buffer.concat(chunks), error: e.message }));
      req.end(request.body);
    });
  }

  close(): void {
    for (const session of this.sessions.values()) session.close();
    for (const agent of this.agents.values()) agent.destroy();
  }
}

/** The text of everything the attacker sent, so the oracle can tell an echo of its own input from a leak. */
export function sentText(request: AttackRequest): string {
  let decodedPath = request.path;
  try {
    decodedPath = decodeURIComponent(request.path);
  } catch {
    // not decodable: the raw path is what was sent
  }
  return [request.method, request.path, decodedPath, JSON.stringify(request.headers), request.body?.toString('latin1') ?? ''].join('\n');
}

/**
 * Every place in an answer where a canary could hide: body, headers, the gunzipped body, an upgraded stream.
 * `published`: what the attacker wrote elsewhere in this run, and so may read back.
 */
export function findLeaks(oracle: Oracle, request: AttackRequest, received: Received, published = ''): Hit[] {
  const sent = sentText(request) + published;
  const hits = [...oracle.scan(received.body, 'body', sent)];
  for (const [name, value] of Object.entries(received.headers)) {
    hits.push(...oracle.scan(Buffer.from(String(value)), `header ${name}`, sent));
  }
  if (received.upgraded !== undefined) hits.push(...oracle.scan(received.upgraded, 'upgraded stream', sent));
  if (String(received.headers['content-encoding'] ?? '').includes('gzip')) {
    try {
      hits.push(...oracle.scan(gunzipSync(received.body), 'gunzipped body', sent));
    } catch {
      // cut short (a watch closed by us): whatever was complete was scanned raw above
    }
  }
  return hits;
}

/** Runs `requests` with at most `concurrency` in flight; `onAnswer` sees each answer as it arrives. */
export async function runBounded(
  client: AttackClient,
  requests: AttackRequest[],
  concurrency: number,
  onAnswer: (request: AttackRequest, received: Received) => void,
): Promise<void> {
  let next = 0;
  const worker = async (slot: number) => {
    while (next < requests.length) {
      const request = requests[next++]!;
      onAnswer(request, await client.send(request, slot));
    }
  };
  await Promise.all(Array.from({ length: concurrency }, (_, slot) => worker(slot)));
}

// ---- protobuf bodies: just enough of the wire format for the objects the suite writes

function varint(n: number): Buffer {
  const bytes: number[] = [];
  while (n > 0x7f) {
    bytes.push((n & 0x7f) | 0x80);
    n >>>= 7;
  }
  bytes.push(n);
  return Buffer.from(bytes);
}

/** A length-delimited field (strings, bytes, messages). */
function field(number: number, value: Buffer | string): Buffer {
  const bytes = typeof value === 'string' ? Buffer.from(value) : value;
  return Buffer.concat([varint((number << 3) | 2), varint(bytes.length), bytes]);
}

function mapEntries(number: number, map: Record<string, string> | undefined): Buffer[] {
  return Object.entries(map ?? {}).map(([key, value]) => field(number, Buffer.concat([field(1, key), field(2, value)])));
}

export interface ProtoMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string }[];
}

/** ObjectMeta (k8s.io/apimachinery generated.proto: name 1, generateName 2, namespace 3, labels 11, annotations 12, ownerReferences 13). */
function objectMeta(meta: ProtoMeta): Buffer {
  const parts: Buffer[] = [];
  if (meta.name !== undefined) parts.push(field(1, meta.name));
  if (meta.generateName !== undefined) parts.push(field(2, meta.generateName));
  if (meta.namespace !== undefined) parts.push(field(3, meta.namespace));
  parts.push(...mapEntries(11, meta.labels), ...mapEntries(12, meta.annotations));
  for (const ref of meta.ownerReferences ?? []) {
    parts.push(field(13, Buffer.concat([field(1, ref.kind), field(3, ref.name), field(4, ref.uid), field(5, ref.apiVersion)])));
  }
  return Buffer.concat(parts);
}

/** `k8s\0` + runtime.Unknown{typeMeta 1 {apiVersion 1, kind 2}, raw 2}. */
function envelope(apiVersion: string, kind: string, raw: Buffer): Buffer {
  return Buffer.concat([Buffer.from('k8s\0', 'latin1'), field(1, Buffer.concat([field(1, apiVersion), field(2, kind)])), field(2, raw)]);
}

/** A ConfigMap (metadata 1, data 2) as Kubernetes protobuf. */
export function protobufConfigMap(meta: ProtoMeta, data: Record<string, string>): Buffer {
  return envelope('v1', 'ConfigMap', Buffer.concat([field(1, objectMeta(meta)), ...mapEntries(2, data)]));
}

export interface ProtoSubject {
  kind: string;
  name: string;
  namespace?: string;
}

/** A RoleBinding or ClusterRoleBinding (metadata 1, subjects 2 {kind 1, apiGroup 2, name 3, namespace 4}, roleRef 3 {apiGroup 1, kind 2, name 3}). */
export function protobufBinding(
  kind: 'RoleBinding' | 'ClusterRoleBinding',
  meta: ProtoMeta,
  subjects: ProtoSubject[],
  roleRef: { kind: string; name: string },
): Buffer {
  const subjectBytes = subjects.map((s) =>
    field(
      2,
      Buffer.concat([
        field(1, s.kind),
        ...(s.kind === 'ServiceAccount' ? [] : [field(2, 'rbac.authorization.k8s.io')]),
        field(3, s.name),
        ...(s.namespace === undefined ? [] : [field(4, s.namespace)]),
      ]),
    ),
  );
  const ref = field(3, Buffer.concat([field(1, 'rbac.authorization.k8s.io'), field(2, roleRef.kind), field(3, roleRef.name)]));
  return envelope('rbac.authorization.k8s.io/v1', kind, Buffer.concat([field(1, objectMeta(meta)), ...subjectBytes, ref]));
}

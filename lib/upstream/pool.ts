// Pooled HTTP/2 sessions to the upstream kube-apiserver, authenticated with tenantgate's own credentials.
// A session that gets GOAWAY, errors or closes leaves the pool at once; the next request opens a fresh one.
import http2, { type ClientHttp2Session, type ClientHttp2Stream, type OutgoingHttpHeaders } from 'node:http2';
import { bearerAuthorization, type ClusterCredentials } from './kubeconfig.ts';

const { HTTP2_HEADER_METHOD, HTTP2_HEADER_PATH, HTTP2_HEADER_SCHEME, HTTP2_HEADER_AUTHORITY } = http2.constants;

export interface UpstreamPoolOptions {
  /** Streams tenantgate opens on one session before it opens another (never above the server's own limit). */
  maxStreamsPerSession?: number;
  /** Sessions kept at most; past it, requests share the least busy session. */
  maxSessions?: number;
}

interface PooledSession {
  session: ClientHttp2Session;
  streams: number;
  /** The server's SETTINGS arrived: its stream limit is known. */
  settled: boolean;
  pool: UpstreamPool;
}

/** Where a stream keeps its session, for the one 'close' listener every stream shares (no closure per request). */
const POOLED = Symbol('tenantgate.upstream.pooledSession');
type PooledStream = ClientHttp2Stream & { [POOLED]?: PooledSession };

function streamClosed(this: PooledStream): void {
  const pooled = this[POOLED]!;
  pooled.streams--;
  pooled.pool.activeStreams--;
}

/** Streams a session takes before the server said its limit: HTTP/2's recommended minimum, and kube-apiserver's. */
const STREAMS_BEFORE_SETTINGS = 100;

export class UpstreamPool {
  readonly url: URL;
  private readonly credentials: ClusterCredentials;
  private readonly maxStreamsPerSession: number;
  private readonly maxSessions: number;
  private readonly sessions: PooledSession[] = [];
  private closed = false;
  /** The server's stream limit as the last session learned it: a new session is filled to it before its own SETTINGS. */
  private serverStreamLimit: number | undefined;
  /** Upstream streams open right now (a gauge for metrics and tests). */
  activeStreams = 0;

  constructor(credentials: ClusterCredentials, options: UpstreamPoolOptions = {}) {
    this.credentials = credentials;
    this.url = new URL(credentials.server);
    if (this.url.protocol !== 'https:') throw new Error(`upstream ${credentials.server}: only https is supported`);
    this.maxStreamsPerSession = options.maxStreamsPerSession ?? 500;
    // Every tenant watch holds an upstream stream, and kube-apiserver allows 100 per connection: 32 sessions held
    // 3,200 watches, and past that a new stream waited in nghttp2's queue for a slot that a watch never frees
    // (measured with bench/scenarios/watch-fanout.ts). Sessions open only on demand, so the cap costs nothing idle.
    this.maxSessions = options.maxSessions ?? 1024;
  }

  /** The bearer authorization to send upstream, when the credentials carry a token. */
  get authorization(): string | undefined {
    return bearerAuthorization(this.credentials);
  }

  /**
   * Opens a stream upstream. Never throws for network trouble: a session that cannot connect
   * fails the stream with an 'error' event, so callers handle one path.
   */
  request(method: string, path: string, headers: OutgoingHttpHeaders, endStream: boolean): ClientHttp2Stream {
    const pooled = this.pickSession();
    headers[HTTP2_HEADER_METHOD] = method;
    headers[HTTP2_HEADER_PATH] = path;
    headers[HTTP2_HEADER_SCHEME] = 'https';
    headers[HTTP2_HEADER_AUTHORITY] = this.url.host;
    const stream: PooledStream = pooled.session.request(headers, { endStream });
    pooled.streams++;
    this.activeStreams++;
    stream[POOLED] = pooled;
    stream.once('close', streamClosed);
    return stream;
  }

  close(): void {
    this.closed = true;
    for (const { session } of this.sessions.splice(0)) session.close();
  }

  private pickSession(): PooledSession {
    if (this.closed) throw new Error('upstream pool is closed');
    let leastBusy: PooledSession | undefined;
    for (const pooled of this.sessions) {
      if (leastBusy === undefined || pooled.streams < leastBusy.streams) leastBusy = pooled;
    }
    if (leastBusy !== undefined && (leastBusy.streams < this.streamLimit(leastBusy) || this.sessions.length >= this.maxSessions)) {
      return leastBusy;
    }
    return this.openSession();
  }

  private streamLimit(pooled: PooledSession): number {
    // A burst of watches on a session whose SETTINGS have not arrived would be refused past the server's limit.
    const serverLimit = pooled.settled ? pooled.session.remoteSettings?.maxConcurrentStreams : (this.serverStreamLimit ?? STREAMS_BEFORE_SETTINGS);
    return serverLimit === undefined ? this.maxStreamsPerSession : Math.min(serverLimit, this.maxStreamsPerSession);
  }

  private openSession(): PooledSession {
    const { caPem, certPem, keyPem, insecureSkipTlsVerify } = this.credentials;
    const session = http2.connect(this.url.origin, {
      ca: caPem,
      cert: certPem,
      key: keyPem,
      rejectUnauthorized: insecureSkipTlsVerify !== true,
      servername: this.url.hostname === '127.0.0.1' || this.url.hostname.startsWith('[') ? undefined : this.url.hostname,
      // Lists can be large: let the upstream send a lot before waiting for WINDOW_UPDATE, as kubectl does.
      settings: { initialWindowSize: 1024 * 1024 },
    });
    const pooled: PooledSession = { session, streams: 0, settled: false, pool: this };
    session.once('remoteSettings', (settings) => {
      pooled.settled = true;
      this.serverStreamLimit = settings.maxConcurrentStreams;
    });
    const leave = () => {
      const index = this.sessions.indexOf(pooled);
      if (index !== -1) this.sessions.splice(index, 1);
    };
    session.once('goaway', leave);
    session.once('close', leave);
    session.on('error', leave); // streams see the error themselves
    // Let a large list flow without waiting on session-level flow control; per-stream windows still bound memory.
    session.once('connect', () => session.setLocalWindowSize(4 * 1024 * 1024));
    this.sessions.push(pooled);
    return pooled;
  }
}

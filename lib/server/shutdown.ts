// Graceful shutdown of a serving tenantgate: not ready at once; after the delay no new connections, GOAWAY on every
// HTTP/2 session, `Connection: close` on HTTP/1.1, every watch ended as at its timeout, a bounded drain, then the rest cut.
// Never cuts a request that finishes within the drain bound, and never ends a watch inside an event.
import type { ServerResponse } from 'node:http';
import type { Http2SecureServer, ServerHttp2Session } from 'node:http2';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type { FlowController } from '../flowcontrol/dispatcher.ts';
import { isLongRunning } from '../flowcontrol/stage.ts';
import { log } from '../log.ts';
import type { RequestContext } from '../request/context.ts';
import { ProtobufWatchRewriter } from '../stream/protobuf-view.ts';
import { WatchRewriter } from '../stream/tenant-view.ts';
import { TENANTS_PATH } from '../tenants/tenant.ts';
import type { HealthChecks } from '../request/health.ts';

export interface ShutdownTimes {
  /** Still serving but not ready, so that a Service takes the endpoint out before connections are refused. */
  delayMs: number;
  /** The bound on the drain: whatever is still open then is closed. */
  drainMs: number;
}

export const DEFAULT_SHUTDOWN_TIMES: ShutdownTimes = { delayMs: 0, drainMs: 30_000 };

/** During the drain, watches started since (on an HTTP/1.1 connection still open) are looked for this often. */
const WATCH_SWEEP_MS = 500;
/** Once the drain bound passed: how long the 503s of requests still queued get to go out before connections are cut. */
const REFUSALS_WRITTEN_MS = 250;

/**
 * After the drain: how long closing may wait for background work (the lifecycle controller's bootstrap or cleanup of
 * a tenant upstream). That work is idempotent and every replica reconciles it, so a replica that exits first loses nothing.
 */
const CLOSE_BOUND_MS = 2_000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The server's connections from the TLS handshake to their close; HTTP/1.1 ones with their responses under way. */
export class Connections {
  readonly #sockets = new Set<TLSSocket>();
  readonly #sessions = new Set<ServerHttp2Session>();
  /** HTTP/1.1 responses not closed yet, by connection. */
  readonly #http1 = new Map<Duplex, Set<ServerResponse>>();
  #draining = false;
  #allClosed: (() => void) | null = null;

  constructor(server: Http2SecureServer) {
    server.on('secureConnection', (socket: TLSSocket) => {
      this.#sockets.add(socket);
      socket.once('close', () => {
        this.#sockets.delete(socket);
        this.#http1.delete(socket);
        if (this.#sockets.size === 0) this.#allClosed?.();
      });
    });
    server.on('session', (session: ServerHttp2Session) => {
      this.#sessions.add(session);
      session.once('close', () => this.#sessions.delete(session));
      if (this.#draining) session.close();
    });
    // First of the 'request' listeners: a response the pipeline writes at once must already know it closes the connection.
    server.prependListener('request', (req: { socket: Duplex }, res: ServerResponse) => this.#http1Request(req.socket, res));
  }

  get size(): number {
    return this.#sockets.size;
  }

  #http1Request(socket: Duplex, res: ServerResponse): void {
    let open = this.#http1.get(socket);
    if (open === undefined) this.#http1.set(socket, (open = new Set()));
    open.add(res);
    if (this.#draining) res.shouldKeepAlive = false;
    res.once('close', () => {
      open.delete(res);
      if (this.#draining && open.size === 0) socket.end();
    });
  }

  /**
   * GOAWAY on every HTTP/2 session (streams it accepted finish; the client opens new ones elsewhere), and HTTP/1.1
   * connections closed once their response is done (`Connection: close` on those not answered yet), idle ones now.
   */
  drain(): void {
    this.#draining = true;
    for (const session of this.#sessions) session.close();
    for (const socket of this.#sockets) {
      if (socket.alpnProtocol === 'h2') continue;
      const open = this.#http1.get(socket);
      if (open === undefined || open.size === 0) socket.end();
      else for (const res of open) if (!res.headersSent) res.shouldKeepAlive = false;
    }
  }

  /** Resolves once every connection has closed. */
  whenAllClosed(): Promise<void> {
    if (this.#sockets.size === 0) return Promise.resolve();
    return new Promise((resolve) => (this.#allClosed = resolve));
  }

  destroyAll(): void {
    for (const socket of this.#sockets) socket.destroy();
  }
}

/**
 * Ends a watch's response as the apiserver ends one at its timeout: normally, after its last whole event, so that the
 * client resumes from what it saw (on another replica). False when the request is no watch tenantgate can end so: an
 * administrator's watch passed through unconverted is cut when the drain ends.
 */
export function endWatch(ctx: RequestContext): boolean {
  if (ctx.cacheWatcher !== null) {
    ctx.cacheWatcher.end();
    return true;
  }
  const out = ctx.out;
  // The Tenant API's watch writes each event whole, at once: its response always ends between events.
  if (ctx.pathname.startsWith(TENANTS_PATH) && ctx.headersSent && isLongRunning(ctx.method, ctx.path)) {
    if (!out.writableEnded) out.end();
    return true;
  }
  const rewriter = ctx.rewrite;
  // (Both send whole events only: JSON lines, protobuf frames.)
  if (!(rewriter instanceof WatchRewriter || rewriter instanceof ProtobufWatchRewriter)) return false;
  if (out.writableEnded || out.destroyed) return true;
  // A rewriter sends whole events only: what it still holds is (part of) events the client is sent again on resuming.
  ctx.upstream?.unpipe(rewriter);
  rewriter.unpipe(out);
  out.end();
  return true;
}

function endWatches(open: ReadonlySet<RequestContext>): number {
  let ended = 0;
  for (const ctx of [...open]) if (!ctx.out.writableEnded && endWatch(ctx)) ended++;
  return ended;
}

export interface ShutdownParts {
  server: Http2SecureServer;
  connections: Connections;
  health: HealthChecks;
  /** The exchanges still open (RequestRunner.open). */
  open: ReadonlySet<RequestContext>;
  flow: FlowController;
}

/** Runs the graceful part of a shutdown; the caller closes the gateway afterwards (which cuts what is left). */
export async function drainGracefully(parts: ShutdownParts, times: ShutdownTimes): Promise<void> {
  const { server, connections, health, open, flow } = parts;
  const started = performance.now();
  health.shutdownStarted();
  log.info('shutting down: not ready, still serving', { delayMs: times.delayMs, drainMs: times.drainMs });
  await sleep(times.delayMs);
  server.close();
  connections.drain();
  const watches = endWatches(open);
  log.info('draining: no new connections, GOAWAY sent, watches ended', { connections: connections.size, watches });
  const sweep = setInterval(() => endWatches(open), WATCH_SWEEP_MS);
  let timer: NodeJS.Timeout | undefined;
  const drained = await Promise.race([
    connections.whenAllClosed().then(() => true),
    new Promise<boolean>((resolve) => (timer = setTimeout(resolve, times.drainMs, false))),
  ]);
  clearTimeout(timer);
  clearInterval(sweep);
  if (!drained) {
    // Requests still waiting for a seat never ran: a 503 with Retry-After sends them to another replica.
    flow.refuseQueued('shutting-down');
    await Promise.race([connections.whenAllClosed(), sleep(REFUSALS_WRITTEN_MS)]);
  }
  log.info(drained ? 'drained' : 'drain bound reached: closing what is left', { connections: connections.size, ms: Math.round(performance.now() - started) });
}

/** Waits for `closing` at most CLOSE_BOUND_MS; what is still running then is left to the other replicas. */
export async function closeWithinBound(closing: Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const closed = await Promise.race([closing.then(() => true), new Promise<boolean>((resolve) => (timer = setTimeout(resolve, CLOSE_BOUND_MS, false)))]);
  clearTimeout(timer);
  if (!closed) log.warn('background work still running after the drain is left to the other replicas', { waitedMs: CLOSE_BOUND_MS });
}

// The watch cache's conversation with the upstream for one resource, with tenantgate's own identity: a consistent
// list page by page, then watches resumed from the newest resourceVersion, a new list when the upstream says that is
// too old (410), backoff while the upstream is away, and a ping when a watch goes silent. What the events mean is the
// sink's; the reflector only reads them off the wire.
import type { ClientHttp2Stream, IncomingHttpHeaders } from 'node:http2';
import { log } from '../log.ts';
import { upstreamJson } from '../upstream/client.ts';
import type { UpstreamPool } from '../upstream/pool.ts';
import type { CacheEventType } from './cached-object.ts';

/** What the reflector feeds. */
export interface ReflectorSink {
  /** Where a watch resumes: the newest resourceVersion seen. */
  watchFrom(): number;
  /** Lists the whole resource (through `listPages`) and replaces what it held; throws ResourceGone on a 404. */
  relist(): Promise<void>;
  /** One change, the upstream's object as the watch sent it. */
  event(type: CacheEventType, upstream: any, resourceVersion: number): void;
  /** The upstream has reached this resourceVersion (a bookmark). */
  bookmark(resourceVersion: number): void;
  /** The upstream no longer serves the resource: the reflector has stopped. */
  gone(): void;
}

export interface ReflectorOptions {
  /** Longest wait between attempts while the upstream is away (default 5 s). */
  maxBackoffMs?: number;
  /** How long the upstream watch may stay silent before its connection is pinged (default 75 s). */
  upstreamIdleMs?: number;
}

/** The upstream answered 404 for the resource's list. */
export class ResourceGone extends Error {}

const PAGE_SIZE = 500;
const WATCH_TIMEOUT_SECONDS = 300;
const FIRST_BACKOFF_MS = 200;
/** How long a connection suspected dead has to answer a ping (client-go gives 15 s). */
const UPSTREAM_PING_TIMEOUT_MS = 15_000;

export class Reflector {
  readonly #pool: UpstreamPool;
  /** The upstream collection, e.g. /api/v1/pods. */
  readonly #path: string;
  readonly #sink: ReflectorSink;
  readonly #maxBackoffMs: number;
  readonly #upstreamIdleMs: number;
  #stopped = false;
  #stream: ClientHttp2Stream | undefined;
  #timer: NodeJS.Timeout | undefined;
  #backoffMs = FIRST_BACKOFF_MS;

  constructor(pool: UpstreamPool, path: string, sink: ReflectorSink, options: ReflectorOptions = {}) {
    this.#pool = pool;
    this.#path = path;
    this.#sink = sink;
    this.#maxBackoffMs = options.maxBackoffMs ?? 5_000;
    // The apiserver bookmarks a watch every minute: longer silence makes the connection doubtful.
    this.#upstreamIdleMs = options.upstreamIdleMs ?? 75_000;
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  start(): void {
    void this.#relistThenWatch();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#stream?.close();
    this.#stream = undefined;
  }

  /**
   * A consistent list of the upstream collection at `path` (the resource, or its objects in one upstream namespace),
   * page by page from one snapshot, each page's items handed over with the list's kind; resolves to the snapshot's
   * resourceVersion.
   */
  async listPages(path: string, query: string, onPage: (items: any[], listKind: unknown) => void): Promise<number> {
    let listResourceVersion = 0;
    let next = '';
    do {
      const page = `${path}?${query === '' ? '' : `${query}&`}limit=${PAGE_SIZE}${next === '' ? '' : `&continue=${encodeURIComponent(next)}`}`;
      const answer = await upstreamJson(this.#pool, 'GET', page);
      if (answer.status === 404) throw new ResourceGone();
      if (answer.status !== 200) throw new Error(`listing ${path}: the upstream answered ${answer.status}`);
      if (next === '') listResourceVersion = Number(answer.body?.metadata?.resourceVersion ?? 0);
      onPage((answer.body?.items ?? []) as any[], answer.body?.kind);
      next = answer.body?.metadata?.continue ?? '';
    } while (next !== '' && !this.#stopped);
    return listResourceVersion;
  }

  async #relistThenWatch(): Promise<void> {
    while (!this.#stopped) {
      try {
        await this.#sink.relist();
      } catch (error) {
        if (this.#stopped) return;
        if (error instanceof ResourceGone) {
          this.stop();
          this.#sink.gone();
          return;
        }
        log.warn('the watch cache could not list the upstream', { resource: this.#path, error: (error as Error).message });
        await this.#backoff();
        continue;
      }
      // Watches resume from the newest resourceVersion seen until the upstream says it is too old (410): relist then.
      for (;;) {
        if (this.#stopped) return;
        const outcome = await this.#watchOnce();
        if (outcome === 'expired') break;
        if (outcome === 'failed') await this.#backoff();
        else this.#backoffMs = FIRST_BACKOFF_MS;
      }
    }
  }

  #backoff(): Promise<void> {
    const wait = this.#backoffMs;
    this.#backoffMs = Math.min(this.#backoffMs * 2, this.#maxBackoffMs);
    return new Promise((resolve) => {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        resolve();
      }, wait);
    });
  }

  /** One upstream watch from the newest resourceVersion, until it ends: resume ('ended'), relist ('expired'), or retry. */
  #watchOnce(): Promise<'ended' | 'expired' | 'failed'> {
    return new Promise((resolve) => {
      const query = `watch=1&allowWatchBookmarks=true&timeoutSeconds=${WATCH_TIMEOUT_SECONDS}&resourceVersion=${this.#sink.watchFrom()}`;
      const headers: Record<string, string> = { accept: 'application/json' };
      if (this.#pool.authorization !== undefined) headers.authorization = this.#pool.authorization;
      let stream: ClientHttp2Stream;
      try {
        stream = this.#pool.request('GET', `${this.#path}?${query}`, headers, true);
      } catch (error) {
        log.warn('the watch cache could not watch the upstream', { resource: this.#path, error: (error as Error).message });
        resolve('failed');
        return;
      }
      this.#stream = stream;
      let status = 0;
      let expired = false;
      let pending: Buffer | null = null;
      let settled = false;
      const settle = (outcome: 'ended' | 'expired' | 'failed') => {
        if (settled) return;
        settled = true;
        if (this.#stream === stream) this.#stream = undefined;
        resolve(expired ? 'expired' : outcome);
      };
      stream.on('response', (h: IncomingHttpHeaders) => {
        status = Number(h[':status']);
        if (status === 410) expired = true;
      });
      stream.on('data', (chunk: Buffer) => {
        if (status !== 200) return;
        const data = pending === null ? chunk : Buffer.concat([pending, chunk]);
        let from = 0;
        let newline: number;
        while ((newline = data.indexOf(10, from)) !== -1) {
          if (newline > from) this.#ingestLine(data.subarray(from, newline), () => (expired = true));
          from = newline + 1;
        }
        pending = from === data.length ? null : Buffer.from(data.subarray(from));
      });
      // A connection gone silent (a host lost without a reset, a NAT that forgot the flow) tells nobody: after longer
      // than the apiserver leaves between bookmarks, the connection must answer a ping or go, and the watch resumes.
      stream.setTimeout(this.#upstreamIdleMs, () => {
        const session = stream.session;
        if (session !== undefined && session !== null && !session.destroyed) {
          const silent = setTimeout(() => session.destroy(new Error('the upstream connection went silent')), UPSTREAM_PING_TIMEOUT_MS);
          silent.unref();
          try {
            session.ping((error) => {
              clearTimeout(silent);
              if (error !== null) session.destroy(error);
            });
          } catch {
            clearTimeout(silent);
            session.destroy();
          }
        }
        stream.close();
      });
      stream.on('end', () => settle(status === 200 ? 'ended' : 'failed'));
      stream.on('error', () => settle('failed'));
      stream.on('close', () => settle(status === 200 ? 'ended' : 'failed'));
    });
  }

  #ingestLine(line: Buffer, expired: () => void): void {
    let event: { type?: string; object?: any };
    try {
      event = JSON.parse(line.toString('utf8'));
    } catch {
      log.warn('the watch cache skipped an upstream watch line that is not JSON', { resource: this.#path });
      return;
    }
    const object = event.object;
    if (object === undefined || object === null) return;
    if (event.type === 'ERROR') {
      if (object.code === 410) expired();
      return;
    }
    const resourceVersion = Number(object.metadata?.resourceVersion);
    if (!Number.isSafeInteger(resourceVersion)) return;
    if (event.type === 'BOOKMARK') {
      this.#sink.bookmark(resourceVersion);
      return;
    }
    if (event.type !== 'ADDED' && event.type !== 'MODIFIED' && event.type !== 'DELETED') return;
    this.#sink.event(event.type, object, resourceVersion);
  }
}

// tenantgate's own lists and watches of the upstream (reconcile, tenant cleanup), with its own identity:
// whole lists page by page, and watches that resume from where they stopped and report when events may have been missed.
// Never used for a tenant's request, and never keeps the objects it sees: callers are told, not given a cache.
import type { ClientHttp2Stream, IncomingHttpHeaders } from 'node:http2';
import { upstreamJson } from './client.ts';
import type { UpstreamPool } from './pool.ts';

export interface UpstreamObjectMeta {
  name: string;
  namespace?: string;
  resourceVersion?: string;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
}

export interface UpstreamItem {
  metadata: UpstreamObjectMeta;
  status?: { phase?: string };
  [field: string]: unknown;
}

const PAGE_SIZE = 500;

/** Every item of a list (`path` may carry selectors), page by page. Throws with the status when the upstream refuses. */
export async function listUpstream(pool: UpstreamPool, path: string): Promise<UpstreamItem[]> {
  const items: UpstreamItem[] = [];
  const separator = path.includes('?') ? '&' : '?';
  let next = '';
  do {
    const page = `${path}${separator}limit=${PAGE_SIZE}${next === '' ? '' : `&continue=${encodeURIComponent(next)}`}`;
    const answer = await upstreamJson(pool, 'GET', page);
    if (answer.status !== 200) throw new UpstreamListError(path, answer.status, answer.body?.message);
    items.push(...((answer.body?.items ?? []) as UpstreamItem[]));
    next = answer.body?.metadata?.continue ?? '';
  } while (next !== '');
  return items;
}

export class UpstreamListError extends Error {
  readonly status: number;
  constructor(path: string, status: number, message: unknown) {
    super(`listing ${path}: the upstream answered ${status}${typeof message === 'string' ? `: ${message}` : ''}`);
    this.status = status;
  }
}

export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: UpstreamItem;
}

export interface OwnWatchOptions {
  /** Each change after the watch (re)started from a fresh list. */
  onEvent(event: WatchEvent): void;
  /** The watch (re)started from a fresh list: changes may have been missed since the last one, look again. */
  onResync(): void;
  onError?(error: Error): void;
  /** Longest wait between attempts while the upstream is away. */
  maxBackoffMs?: number;
}

const WATCH_TIMEOUT_SECONDS = 300;
const FIRST_BACKOFF_MS = 200;

/**
 * Watches `path` (a collection, selectors allowed) until the returned function is called. Starts at the current
 * resourceVersion (no synthetic ADDED events), resumes from the last one seen after the stream ends, and starts over
 * (calling onResync) when that resourceVersion is too old (410 Gone) or the upstream was away.
 */
export function watchUpstream(pool: UpstreamPool, path: string, options: OwnWatchOptions): () => void {
  const separator = path.includes('?') ? '&' : '?';
  const maxBackoffMs = options.maxBackoffMs ?? 5_000;
  let stopped = false;
  let stream: ClientHttp2Stream | undefined;
  let timer: NodeJS.Timeout | undefined;
  let resourceVersion = '';
  let backoffMs = FIRST_BACKOFF_MS;

  const retryLater = (error: Error, startOver: boolean) => {
    if (stopped) return;
    options.onError?.(error);
    if (startOver) resourceVersion = '';
    timer = setTimeout(() => void run(), backoffMs);
    backoffMs = Math.min(backoffMs * 2, maxBackoffMs);
  };

  const run = async () => {
    timer = undefined;
    if (stopped) return;
    if (resourceVersion === '') {
      try {
        // One item is enough: the list's resourceVersion is where the watch starts.
        const answer = await upstreamJson(pool, 'GET', `${path}${separator}limit=1`);
        if (answer.status !== 200) throw new UpstreamListError(path, answer.status, answer.body?.message);
        resourceVersion = String(answer.body?.metadata?.resourceVersion ?? '');
      } catch (error) {
        retryLater(error as Error, true);
        return;
      }
      if (stopped) return;
      options.onResync();
    }
    open();
  };

  const open = () => {
    const query = `watch=true&allowWatchBookmarks=true&timeoutSeconds=${WATCH_TIMEOUT_SECONDS}&resourceVersion=${encodeURIComponent(resourceVersion)}`;
    const headers: Record<string, string> = { accept: 'application/json' };
    if (pool.authorization !== undefined) headers.authorization = pool.authorization;
    let current: ClientHttp2Stream;
    try {
      current = pool.request('GET', `${path}${separator}${query}`, headers, true);
    } catch (error) {
      retryLater(error as Error, false);
      return;
    }
    stream = current;
    let status = 0;
    let pending = '';
    let gone = false;
    let settled = false;
    const settle = (error: Error | null) => {
      if (settled) return;
      settled = true;
      if (stream === current) stream = undefined;
      if (stopped) return;
      if (error === null && !gone) {
        backoffMs = FIRST_BACKOFF_MS;
        void run(); // the server ended the watch (timeoutSeconds): resume where it stopped
      } else {
        retryLater(error ?? new Error(`watch ${path}: resourceVersion ${resourceVersion} is too old`), gone || status !== 200);
      }
    };
    current.setEncoding('utf8');
    current.on('response', (h: IncomingHttpHeaders) => {
      status = Number(h[':status']);
      if (status === 410) gone = true;
    });
    current.on('data', (chunk: string) => {
      pending += chunk;
      let newline: number;
      while ((newline = pending.indexOf('\n')) !== -1) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        if (line.trim() !== '') handleLine(line);
      }
    });
    const handleLine = (line: string) => {
      if (status !== 200) return;
      let event: { type?: string; object?: UpstreamItem & { code?: number } };
      try {
        event = JSON.parse(line);
      } catch {
        return;
      }
      const object = event.object;
      if (object === undefined) return;
      if (event.type === 'ERROR') {
        if (object.code === 410) gone = true;
        return;
      }
      const seen = object.metadata?.resourceVersion;
      if (seen !== undefined && seen !== '') resourceVersion = seen;
      backoffMs = FIRST_BACKOFF_MS;
      if (event.type === 'ADDED' || event.type === 'MODIFIED' || event.type === 'DELETED') options.onEvent({ type: event.type, object });
    };
    current.on('end', () => settle(status === 200 ? null : new Error(`watch ${path}: the upstream answered ${status}`)));
    current.on('error', (error: Error) => settle(error));
    current.on('close', () => settle(status === 200 ? null : new Error(`watch ${path}: the stream closed (code ${current.rstCode})`)));
  };

  void run();
  return () => {
    stopped = true;
    if (timer !== undefined) clearTimeout(timer);
    stream?.close();
    stream = undefined;
  };
}

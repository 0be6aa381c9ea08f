// A raw HTTP/2 watch for tests that compare event streams: its JSON events as they come, its head, and its end.
// Reads only; never retries or reconnects, so a test sees exactly what one watch was sent.
import type { ClientHttp2Session, IncomingHttpHeaders } from 'node:http2';
import { h2Request, sumMetric } from './http.ts';

export interface WatchEvent {
  type: string;
  object: any;
}

export interface OpenedWatch {
  readonly events: WatchEvent[];
  /** The response head (resolves with it, or with {} if the stream fails first). */
  readonly head: Promise<IncomingHttpHeaders>;
  readonly status: Promise<number>;
  /** Resolves when the server ends the watch (or the stream closes). */
  readonly done: Promise<void>;
  readonly ended: boolean;
  close(): void;
  /** Waits until `check(events)` holds; throws with what arrived after `timeoutMs`. */
  until(what: string, check: (events: WatchEvent[]) => boolean, timeoutMs?: number): Promise<void>;
}

/** Opens `path` as a JSON watch on `session` (extra request headers allowed, e.g. another Accept). */
export function openWatch(session: ClientHttp2Session, path: string, headers: Record<string, string> = {}): OpenedWatch {
  const events: WatchEvent[] = [];
  let ended = false;
  let pending = '';
  const stream = session.request({ ':path': path, accept: 'application/json', ...headers });
  stream.setEncoding('utf8');
  const head = new Promise<IncomingHttpHeaders>((resolve) => {
    stream.on('response', resolve);
    stream.on('close', () => resolve({}));
  });
  const done = new Promise<void>((resolve) => {
    const end = () => {
      ended = true;
      resolve();
    };
    stream.on('end', end);
    stream.on('close', end);
    stream.on('error', end);
  });
  stream.on('data', (chunk: string) => {
    pending += chunk;
    let newline: number;
    while ((newline = pending.indexOf('\n')) !== -1) {
      const line = pending.slice(0, newline);
      pending = pending.slice(newline + 1);
      if (line.trim() !== '') events.push(JSON.parse(line));
    }
  });
  return {
    events,
    head,
    status: head.then((h) => Number(h[':status'] ?? 0)),
    done,
    get ended() {
      return ended;
    },
    close: () => stream.close(),
    async until(what, check, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (!check(events)) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(summary(events))}`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
  };
}

/** [type, name, resourceVersion] of each event: what a tenant's watch and the apiserver's own must agree on. */
export function summary(events: readonly WatchEvent[]): [string, string, string][] {
  return events.map((e) => [e.type, e.object?.metadata?.name ?? '', e.object?.metadata?.resourceVersion ?? '']);
}

/** Watches of `resource` the apiserver holds open now (its apiserver_longrunning_requests), read with `session`'s identity. */
export async function upstreamWatchCount(session: ClientHttp2Session, resource: string): Promise<number> {
  const metrics = await h2Request(session, 'GET', '/metrics');
  return sumMetric(metrics.body, 'apiserver_longrunning_requests', { resource, verb: 'WATCH' });
}

/**
 * What `read` counts, once two reads `intervalMs` apart agree. A baseline read just after watches were closed may
 * still count them (the gateway and the apiserver see a connection close a moment later on a busy machine); if it
 * drops afterwards, a test waits for a difference that never comes. Throws, with the last reading, after `timeoutMs`.
 */
export async function settled<T>(what: string, read: () => Promise<T>, intervalMs = 250, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = await read();
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
    const now = await read();
    if (JSON.stringify(now) === JSON.stringify(last)) return now;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} to settle (last ${JSON.stringify(now)})`);
    last = now;
  }
}

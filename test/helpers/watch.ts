// Watches as clients hold them, for tests of watch faults: a client that lists, watches, resumes from the last
// resourceVersion it saw and relists on 410, as client-go's reflector does; etcd's own record of a collection's
// changes, the ground truth that neither tenantgate nor the apiserver stands between; and the check that a client's
// record has no silent gap against it.
import type { ClientHttp2Session, ClientHttp2Stream } from 'node:http2';
import { Etcd3, type Watcher } from 'etcd3';
import type { WatchEvent } from './watch-events.ts';

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `check` every 50 ms until it holds; throws after `timeoutMs` with `what` and `detail()`. */
export async function waitFor(what: string, check: () => boolean, timeoutMs = 15_000, detail: () => string = () => ''): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${detail() === '' ? '' : `; ${detail()}`}`);
    await sleep(50);
  }
}

/** What a reflector did and saw, in order. */
export type ReflectorEntry =
  | { kind: 'listed'; resourceVersion: number; items: any[] }
  | { kind: 'event'; type: 'ADDED' | 'MODIFIED' | 'DELETED'; resourceVersion: number; object: any }
  | { kind: 'bookmark'; resourceVersion: number }
  /** An ERROR event with a 410 Status: the reflector relists next. */
  | { kind: 'expired'; status: any }
  | { kind: 'error'; status: any }
  /** The watch's response ended (the server closed it, or the connection went). */
  | { kind: 'ended' }
  /** A list or watch answered with other than 200, or not at all. */
  | { kind: 'refused'; status: number; detail: string };

const RETRY_MS = 200;

/**
 * A client of one collection as client-go's reflector holds it: list, then watch from the list's resourceVersion; when
 * a watch ends, watch again from the last resourceVersion seen (an event's or a bookmark's); on a 410 ERROR event, list
 * again (consistent: resourceVersion unset) and watch from there. Keeps the objects it knows and a log of everything.
 */
export class Reflector {
  readonly log: ReflectorEntry[] = [];
  /** `namespace/name` → the object as last seen. */
  readonly objects = new Map<string, any>();
  /** The last resourceVersion seen. */
  resourceVersion = 0;
  readonly #connect: () => ClientHttp2Session;
  readonly #collection: string;
  readonly #firstList: 'cached' | 'consistent';
  #session: ClientHttp2Session | undefined;
  #stream: ClientHttp2Stream | undefined;
  #stopped = false;
  #running: Promise<void> | undefined;

  /** `firstList`: 'cached' lists with resourceVersion=0 first (as informers do), 'consistent' without. */
  constructor(connect: () => ClientHttp2Session, collection: string, firstList: 'cached' | 'consistent') {
    this.#connect = connect;
    this.#collection = collection;
    this.#firstList = firstList;
  }

  /** Resolves once the first list is in and the first watch has its headers. */
  async start(): Promise<void> {
    let started!: () => void;
    const whenStarted = new Promise<void>((resolve) => (started = resolve));
    this.#running = this.#run(started);
    await whenStarted;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#stream?.close();
    await this.#running;
    this.#session?.close();
  }

  count(kind: ReflectorEntry['kind']): number {
    return this.log.filter((entry) => entry.kind === kind).length;
  }

  until(what: string, check: () => boolean, timeoutMs = 30_000): Promise<void> {
    return waitFor(what, check, timeoutMs, () => `resourceVersion ${this.resourceVersion}, log ${JSON.stringify(this.log.slice(-12).map(describeEntry))}`);
  }

  /** Resolves once it has seen `resourceVersion` (an event or a list at or after it). */
  reached(resourceVersion: number, timeoutMs = 30_000): Promise<void> {
    return this.until(`resourceVersion ${resourceVersion}`, () => this.resourceVersion >= resourceVersion, timeoutMs);
  }

  #sessionNow(): ClientHttp2Session {
    if (this.#session === undefined || this.#session.closed || this.#session.destroyed) {
      const session = this.#connect();
      // A server going away (GOAWAY) takes no new streams on this session: the next request opens another.
      session.on('goaway', () => session.close());
      this.#session = session;
    }
    return this.#session;
  }

  async #run(started: () => void): Promise<void> {
    let mustList = true;
    let first = true;
    while (!this.#stopped) {
      if (mustList) {
        if (!(await this.#list(first && this.#firstList === 'cached'))) {
          await sleep(RETRY_MS);
          continue;
        }
        mustList = false;
        first = false;
      }
      const outcome = await this.#watch(started);
      if (outcome === 'expired') mustList = true;
      await sleep(outcome === 'failed' ? RETRY_MS : 20);
    }
    started();
  }

  async #list(cached: boolean): Promise<boolean> {
    const path = cached ? `${this.#collection}?resourceVersion=0` : this.#collection;
    const answer = await new Promise<{ status: number; body: string }>((resolve) => {
      let stream: ClientHttp2Stream;
      try {
        stream = this.#sessionNow().request({ ':path': path, accept: 'application/json' });
      } catch (error) {
        resolve({ status: 0, body: (error as Error).message });
        return;
      }
      let status = 0;
      let body = '';
      stream.setEncoding('utf8');
      stream.on('response', (h) => (status = Number(h[':status'])));
      stream.on('data', (chunk: string) => (body += chunk));
      stream.on('end', () => resolve({ status, body }));
      stream.on('error', (error: Error) => resolve({ status: 0, body: error.message }));
    });
    if (answer.status !== 200) {
      this.log.push({ kind: 'refused', status: answer.status, detail: `list: ${answer.body.slice(0, 200)}` });
      return false;
    }
    const list = JSON.parse(answer.body);
    const resourceVersion = Number(list.metadata.resourceVersion);
    this.log.push({ kind: 'listed', resourceVersion, items: list.items });
    this.objects.clear();
    for (const item of list.items) this.objects.set(keyOf(item), item);
    this.resourceVersion = resourceVersion;
    return true;
  }

  #watch(started: () => void): Promise<'ended' | 'expired' | 'failed'> {
    return new Promise((resolve) => {
      const path = `${this.#collection}?watch=1&allowWatchBookmarks=true&resourceVersion=${this.resourceVersion}`;
      let stream: ClientHttp2Stream;
      try {
        stream = this.#sessionNow().request({ ':path': path, accept: 'application/json' });
      } catch (error) {
        this.log.push({ kind: 'refused', status: 0, detail: `watch: ${(error as Error).message}` });
        resolve('failed');
        return;
      }
      this.#stream = stream;
      let status = 0;
      let expired = false;
      let pending = '';
      let settled = false;
      const settle = (failed: boolean) => {
        if (settled) return;
        settled = true;
        this.#stream = undefined;
        if (status === 200) this.log.push({ kind: 'ended' });
        else this.log.push({ kind: 'refused', status, detail: 'watch' });
        resolve(expired ? 'expired' : failed || status !== 200 ? 'failed' : 'ended');
      };
      stream.setEncoding('utf8');
      stream.on('response', (h) => {
        status = Number(h[':status']);
        started();
      });
      stream.on('data', (chunk: string) => {
        if (status !== 200) return;
        pending += chunk;
        let newline: number;
        while ((newline = pending.indexOf('\n')) !== -1) {
          const line = pending.slice(0, newline);
          pending = pending.slice(newline + 1);
          if (line.trim() !== '' && this.#take(JSON.parse(line))) expired = true;
        }
      });
      stream.on('end', () => settle(false));
      stream.on('close', () => settle(false));
      stream.on('error', () => settle(true));
    });
  }

  /** Applies one watch event; true when it says the resourceVersion is too old (410). */
  #take(event: WatchEvent): boolean {
    if (this.#stopped) return false;
    const object = event.object;
    if (event.type === 'ERROR') {
      const expired = object?.code === 410;
      this.log.push(expired ? { kind: 'expired', status: object } : { kind: 'error', status: object });
      return expired;
    }
    const resourceVersion = Number(object.metadata.resourceVersion);
    if (event.type === 'BOOKMARK') this.log.push({ kind: 'bookmark', resourceVersion });
    else {
      const type = event.type as 'ADDED' | 'MODIFIED' | 'DELETED';
      this.log.push({ kind: 'event', type, resourceVersion, object });
      if (type === 'DELETED') this.objects.delete(keyOf(object));
      else this.objects.set(keyOf(object), object);
    }
    this.resourceVersion = resourceVersion;
    return false;
  }
}

function keyOf(object: any): string {
  return `${object.metadata.namespace ?? ''}/${object.metadata.name}`;
}

/** One line per log entry, for failure messages. */
export function describeEntry(entry: ReflectorEntry): string {
  switch (entry.kind) {
    case 'listed':
      return `listed@${entry.resourceVersion} [${entry.items.map((i) => i.metadata.name).join(',')}]`;
    case 'event':
      return `${entry.type} ${entry.object.metadata.namespace}/${entry.object.metadata.name}@${entry.resourceVersion}`;
    case 'bookmark':
      return `BOOKMARK@${entry.resourceVersion}`;
    case 'expired':
    case 'error':
      return `${entry.kind} ${entry.status?.code} ${entry.status?.message}`;
    case 'ended':
      return 'ended';
    case 'refused':
      return `refused ${entry.status} ${entry.detail}`;
  }
}

/** A change to one object as etcd recorded it: its resourceVersion is etcd's revision. */
export interface TruthEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  name: string;
  resourceVersion: number;
}

/**
 * etcd's record of every change under `keyPrefix` (e.g. /registry/configmaps/<namespace>/) from now on, read by a
 * watch of etcd itself: what any watch of the apiserver should deliver, whatever happens to the apiserver.
 */
export async function etcdRecord(endpoint: string, keyPrefix: string) {
  const client = new Etcd3({ hosts: endpoint });
  const { header } = await client.get('tenantgate-test-revision').exec();
  const events: TruthEvent[] = [];
  const watcher: Watcher = await client
    .watch()
    .prefix(keyPrefix)
    .startRevision(String(Number(header.revision) + 1))
    .create();
  const nameOf = (key: Buffer) => key.toString('utf8').slice(keyPrefix.length);
  watcher.on('put', (kv) =>
    events.push({ type: kv.create_revision === kv.mod_revision ? 'ADDED' : 'MODIFIED', name: nameOf(kv.key), resourceVersion: Number(kv.mod_revision) }),
  );
  watcher.on('delete', (kv) => events.push({ type: 'DELETED', name: nameOf(kv.key), resourceVersion: Number(kv.mod_revision) }));
  return {
    events,
    /** Compacts etcd's history up to its newest revision (as the apiserver's compactor does, every 5 minutes). */
    async compact(): Promise<number> {
      const { header } = await client.get('tenantgate-test-revision').exec();
      await client.kv.compact({ revision: header.revision, physical: true });
      return Number(header.revision);
    },
    /** Resolves once the change at `resourceVersion` is in. */
    reached(resourceVersion: number): Promise<void> {
      return waitFor(`etcd's revision ${resourceVersion} under ${keyPrefix}`, () => events.some((e) => e.resourceVersion >= resourceVersion));
    },
    async close(): Promise<void> {
      await watcher.cancel();
      client.close();
    },
  };
}

/** name → resourceVersion of what exists after the changes up to `resourceVersion`. */
export function stateAt(truth: readonly TruthEvent[], resourceVersion: number): Map<string, number> {
  const state = new Map<string, number>();
  for (const event of truth) {
    if (event.resourceVersion > resourceVersion) break;
    if (event.type === 'DELETED') state.delete(event.name);
    else state.set(event.name, event.resourceVersion);
  }
  return state;
}

const render = (state: Map<string, number>) => JSON.stringify([...state].sort());

/**
 * Where a client's record departs from the truth: an event that is not the next change after what it had seen (one
 * missed, repeated, out of order, or not of this collection), a bookmark that passes over a change it was not sent,
 * a list that is not the state at its resourceVersion, or an object whose data is not what was written at its
 * resourceVersion. `nameOf` gives an object's name in the truth, or null when it is not of the collection (such an
 * object in a list or event is a departure too). Empty: no silent gap.
 */
export function departures(
  log: readonly ReflectorEntry[],
  truth: readonly TruthEvent[],
  nameOf: (object: any) => string | null,
  written: ReadonlyMap<number, unknown>,
): string[] {
  const problems: string[] = [];
  let position: number | null = null;
  const nextAfter = (resourceVersion: number) => truth.find((e) => e.resourceVersion > resourceVersion);
  const checkData = (object: any, where: string) => {
    const resourceVersion = Number(object.metadata.resourceVersion);
    const data = written.get(resourceVersion);
    if (data !== undefined && JSON.stringify(object.data) !== JSON.stringify(data))
      problems.push(`${where}: data ${JSON.stringify(object.data)}, written at ${resourceVersion}: ${JSON.stringify(data)}`);
  };
  for (const entry of log) {
    if (entry.kind === 'listed') {
      const got = new Map<string, number>();
      for (const item of entry.items) {
        const name = nameOf(item);
        if (name === null) problems.push(`list at ${entry.resourceVersion}: an object not of the collection: ${item.metadata.namespace}/${item.metadata.name}`);
        else {
          got.set(name, Number(item.metadata.resourceVersion));
          checkData(item, `list at ${entry.resourceVersion}, ${name}`);
        }
      }
      const expected = stateAt(truth, entry.resourceVersion);
      if (render(got) !== render(expected)) problems.push(`list at ${entry.resourceVersion}: ${render(got)}, the state then: ${render(expected)}`);
      position = entry.resourceVersion;
    } else if (entry.kind === 'event') {
      const name = nameOf(entry.object);
      const seen = `${entry.type} ${entry.object.metadata.namespace}/${entry.object.metadata.name}@${entry.resourceVersion}`;
      if (position === null) {
        problems.push(`${seen} before any list`);
        continue;
      }
      const expected = nextAfter(position);
      if (
        name === null ||
        expected === undefined ||
        expected.resourceVersion !== entry.resourceVersion ||
        expected.type !== entry.type ||
        expected.name !== name
      ) {
        problems.push(
          `after ${position}: ${seen}, the next change was ${expected === undefined ? 'none' : `${expected.type} ${expected.name}@${expected.resourceVersion}`}`,
        );
      }
      if (entry.type !== 'DELETED') checkData(entry.object, seen);
      position = Math.max(position, entry.resourceVersion);
    } else if (entry.kind === 'bookmark' && position !== null) {
      const expected = nextAfter(position);
      if (expected !== undefined && expected.resourceVersion <= entry.resourceVersion)
        problems.push(`bookmark at ${entry.resourceVersion} after ${position} passes over ${expected.type} ${expected.name}@${expected.resourceVersion}`);
      position = Math.max(position, entry.resourceVersion);
    }
  }
  return problems;
}

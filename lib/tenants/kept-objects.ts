// Keeps a few cluster-scoped upstream objects exactly as tenantgate wants them (its admission policy, confined
// discovery bindings): creates them on start, and puts them back whenever they are deleted or changed.
// Never touches fields it does not own beyond what a PUT of the wanted object implies, and never stops on a failure.
import { isDeepStrictEqual } from 'node:util';
import { log } from '../log.ts';
import { upstreamJson } from '../upstream/client.ts';
import { watchUpstream } from '../upstream/own-watch.ts';
import type { UpstreamPool } from '../upstream/pool.ts';

export interface KeptObject {
  /** The collection's path, e.g. /apis/rbac.authorization.k8s.io/v1/clusterrolebindings. */
  collection: string;
  /** The wanted object: every top-level field but metadata is owned; of metadata, the labels and annotations given. */
  object: { metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> }; [field: string]: unknown };
}

type Meta = {
  resourceVersion?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  managedFields?: unknown;
  [field: string]: unknown;
};

const RECHECK_DEBOUNCE_MS = 100;
const RETRY_MS = 2_000;

function pathOf(kept: KeptObject): string {
  return `${kept.collection}/${encodeURIComponent(kept.object.metadata.name)}`;
}

function ownedMetadataMatches(wanted: Record<string, string> | undefined, actual: Record<string, string> | undefined): boolean {
  if (wanted === undefined) return true;
  return Object.entries(wanted).every(([key, value]) => actual?.[key] === value);
}

/**
 * Whether `actual` is `canonical` (the wanted object as the apiserver stores it, defaults filled in) in every owned
 * field: a field added, changed or removed by anyone is a difference.
 */
export function keptObjectDiffers(kept: KeptObject, canonical: Record<string, unknown>, actual: Record<string, unknown>): boolean {
  for (const field of Object.keys(kept.object)) {
    if (field === 'metadata' || field === 'apiVersion' || field === 'kind') continue;
    if (!isDeepStrictEqual(canonical[field], actual[field])) return true;
  }
  const meta = (actual.metadata ?? {}) as Meta;
  return !ownedMetadataMatches(kept.object.metadata.labels, meta.labels) || !ownedMetadataMatches(kept.object.metadata.annotations, meta.annotations);
}

/** The wanted object over the stored one's metadata (its other labels and annotations kept), at its resourceVersion. */
function replacementOf(kept: KeptObject, stored: Record<string, unknown>): Record<string, unknown> {
  const { managedFields: _managed, ...meta } = (stored.metadata ?? {}) as Meta;
  return {
    ...kept.object,
    metadata: {
      ...meta,
      labels: { ...meta.labels, ...kept.object.metadata.labels },
      annotations: { ...meta.annotations, ...kept.object.metadata.annotations },
    },
  };
}

/** An upstream refusal, with its code: a 409 is someone else's write in between, looked at again. */
class KeptObjectRefused extends Error {
  readonly status: number;
  constructor(what: string, answer: { status: number; body: any }) {
    super(`${what} answered ${answer.status}: ${String(answer.body?.message ?? '').slice(0, 1000)}`);
    this.status = answer.status;
  }
}

/** Creates the object, or replaces it when it differs in an owned field. Resolves to what it did. */
export async function ensureKeptObject(pool: UpstreamPool, kept: KeptObject): Promise<'created' | 'updated' | 'unchanged'> {
  const path = pathOf(kept);
  const current = await upstreamJson(pool, 'GET', path);
  if (current.status === 404) {
    const created = await upstreamJson(pool, 'POST', kept.collection, kept.object);
    if (created.status === 201 || created.status === 409) return 'created'; // 409: another replica was first
    throw new KeptObjectRefused(`creating ${path}`, created);
  }
  if (current.status !== 200) throw new KeptObjectRefused(`reading ${path}`, current);
  const replacement = replacementOf(kept, current.body);
  // What the apiserver would store for the wanted object (defaults filled in), without storing it.
  const dryRun = await upstreamJson(pool, 'PUT', `${path}?dryRun=All`, replacement);
  if (dryRun.status !== 200) throw new KeptObjectRefused(`checking ${path}`, dryRun);
  if (!keptObjectDiffers(kept, dryRun.body, current.body)) return 'unchanged';
  const updated = await upstreamJson(pool, 'PUT', path, replacement);
  if (updated.status === 200) return 'updated';
  throw new KeptObjectRefused(`restoring ${path}`, updated);
}

/** Keeps `objects` as wanted until stop(): each is checked on start, on every change to it, and after a resync. */
export class ObjectKeeper {
  readonly #pool: UpstreamPool;
  readonly #objects: readonly KeptObject[];
  readonly #stoppers: (() => void)[] = [];
  readonly #timers = new Map<KeptObject, NodeJS.Timeout>();
  readonly #running = new Set<Promise<void>>();
  #stopped = false;

  constructor(pool: UpstreamPool, objects: readonly KeptObject[]) {
    this.#pool = pool;
    this.#objects = objects;
  }

  /** Resolves once every object has been checked (or failed once, then retried in the background). */
  async start(): Promise<void> {
    await Promise.all(this.#objects.map((kept) => this.#check(kept, 'start')));
    for (const kept of this.#objects) {
      const byName = `fieldSelector=${encodeURIComponent(`metadata.name=${kept.object.metadata.name}`)}`;
      this.#stoppers.push(
        watchUpstream(this.#pool, `${kept.collection}?${byName}`, {
          onEvent: () => this.#later(kept, RECHECK_DEBOUNCE_MS),
          onResync: () => this.#later(kept, RECHECK_DEBOUNCE_MS),
          onError: (error) => log.debug('kept object watch', { object: pathOf(kept), error: error.message }),
        }),
      );
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    for (const stop of this.#stoppers.splice(0)) stop();
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    await Promise.allSettled([...this.#running]);
  }

  #later(kept: KeptObject, delayMs: number, when: 'start' | 'change' = 'change'): void {
    if (this.#stopped || this.#timers.has(kept)) return;
    this.#timers.set(
      kept,
      setTimeout(() => {
        this.#timers.delete(kept);
        void this.#check(kept, when);
      }, delayMs),
    );
  }

  /**
   * `start`: the first look, where a missing object is made for the first time (created) and one unlike the wanted
   * one is most likely an older tenantgate's (updated); `change`: after someone deleted or changed it (restored).
   */
  #check(kept: KeptObject, when: 'start' | 'change'): Promise<void> {
    const running = ensureKeptObject(this.#pool, kept).then(
      (done) => {
        if (done === 'unchanged') return;
        if (when === 'change') log.info('upstream object restored', { object: pathOf(kept), done });
        else log.info(done === 'created' ? 'upstream object created' : 'upstream object updated', { object: pathOf(kept) });
      },
      (error: Error) => {
        // A controller's write between the read and the check (a CRD's status, just after its creation): routine.
        if (error instanceof KeptObjectRefused && error.status === 409)
          log.info('upstream object changed while checked; checking again', { object: pathOf(kept) });
        else
          log.warn(when === 'start' ? 'upstream object could not be written' : 'upstream object could not be restored', {
            object: pathOf(kept),
            error: error.message,
          });
        this.#later(kept, RETRY_MS, when);
      },
    );
    this.#running.add(running);
    void running.finally(() => this.#running.delete(running));
    return running;
  }
}

// The in-memory index every tenant store serves reads from: tenants by id, a bounded history of changes for watches
// that resume from a resourceVersion, and the listeners. It never talks to storage: stores feed it what storage committed.
import type { TenantId } from '../convert/prefix.ts';
import { TenantWatchExpired, type Tenant, type TenantEvent } from './tenant.ts';

/** Changes a watch can resume from; older resourceVersions get 410 Gone. */
export const HISTORY_LIMIT = 1000;

/** Freezes a tenant all the way down: readers share the index's objects, so none may change them in place. */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

export class TenantIndex {
  readonly #tenants = new Map<TenantId, Tenant>();
  readonly #history: { revision: number; event: TenantEvent }[] = [];
  readonly #listeners = new Set<(event: TenantEvent) => void>();
  #revision: number;
  /** Oldest revision a watch may resume from without missing a change (the history may be empty yet complete). */
  #resumableFrom: number;

  constructor(revision = 1) {
    this.#revision = revision;
    this.#resumableFrom = revision;
  }

  get revision(): number {
    return this.#revision;
  }

  /** Frozen: copy (structuredClone) before changing it. */
  get(id: TenantId): Tenant | undefined {
    return this.#tenants.get(id);
  }

  /** Sorted by name; the tenants are frozen. */
  list(): Tenant[] {
    return [...this.#tenants.values()].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
  }

  /**
   * Applies one change storage committed at `revision` and tells every listener. The tenant carries its own
   * resourceVersion already: the revision that last wrote it, or the deletion's for DELETED.
   */
  apply(type: TenantEvent['type'], tenant: Tenant, revision: number): void {
    deepFreeze(tenant);
    if (type === 'DELETED') this.#tenants.delete(tenant.metadata.name);
    else this.#tenants.set(tenant.metadata.name, tenant);
    this.#advance(revision);
    const event: TenantEvent = deepFreeze({ type, tenant });
    this.#history.push({ revision, event });
    if (this.#history.length > HISTORY_LIMIT) this.#resumableFrom = this.#history.shift()!.revision;
    for (const listener of [...this.#listeners]) listener(event);
  }

  /**
   * Storage moved on to `revision` with no change under our prefix (a progress notice, a fresh read): watches from
   * any revision up to it miss nothing.
   */
  advance(revision: number): void {
    this.#advance(revision);
  }

  /**
   * Replaces the whole index with what storage holds at `revision` (after a watch lost its place), applying the
   * difference as events at `revision` so listeners and watches see every tenant that came, changed or went meanwhile.
   */
  replaceAll(stored: Tenant[], revision: number): void {
    const seen = new Set<TenantId>();
    for (const tenant of stored) {
      seen.add(tenant.metadata.name);
      const current = this.#tenants.get(tenant.metadata.name);
      if (current === undefined) this.apply('ADDED', tenant, revision);
      else if (current.metadata.resourceVersion !== tenant.metadata.resourceVersion) this.apply('MODIFIED', tenant, revision);
    }
    for (const [id, tenant] of [...this.#tenants]) {
      if (seen.has(id)) continue;
      const gone = structuredClone(tenant);
      gone.metadata.resourceVersion = String(revision);
      this.apply('DELETED', gone, revision);
    }
    this.#advance(revision);
  }

  /**
   * The first read of storage at `revision`: its tenants come in as ADDED (listeners registered before hear them),
   * and no watch may resume from before it, since the index never saw what happened then.
   */
  load(stored: Tenant[], revision: number): void {
    this.replaceAll(stored, revision);
    this.#resumableFrom = Math.max(this.#resumableFrom, revision);
  }

  watch(onEvent: (event: TenantEvent) => void, fromResourceVersion?: string): () => void {
    if (fromResourceVersion === undefined || fromResourceVersion === '' || fromResourceVersion === '0') {
      for (const tenant of this.list()) onEvent({ type: 'ADDED', tenant });
    } else {
      const from = Number(fromResourceVersion);
      if (!Number.isInteger(from) || from < 0) throw new TenantWatchExpired(`invalid resourceVersion ${fromResourceVersion}`);
      if (from < this.#resumableFrom) throw new TenantWatchExpired(`too old resource version: ${from} (${this.#resumableFrom})`);
      for (const { revision, event } of this.#history) if (revision > from) onEvent(event);
    }
    return this.onChange(onEvent);
  }

  onChange(listener: (event: TenantEvent) => void): () => void {
    // A wrapper per registration: the same function registered twice is two listeners, each removed by its own stop.
    const registration = (event: TenantEvent) => listener(event);
    this.#listeners.add(registration);
    return () => this.#listeners.delete(registration);
  }

  clearListeners(): void {
    this.#listeners.clear();
  }

  #advance(revision: number): void {
    if (revision > this.#revision) this.#revision = revision;
  }
}

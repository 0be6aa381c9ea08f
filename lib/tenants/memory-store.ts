// The embedded tenant store: one process, nothing on disk. The default when no etcd is configured (dev, unit tests).
// Keeps a bounded history of changes so watches can resume from a recent resourceVersion, as etcd's would.
import { randomUUID } from 'node:crypto';
import type { TenantId } from '../convert/prefix.ts';
import {
  TenantConflict,
  TenantExists,
  TenantMissing,
  TenantWatchExpired,
  type Tenant,
  type TenantEvent,
  type TenantStore,
} from './tenant.ts';

/** Changes a watch can resume from; older resourceVersions get 410 Gone. */
const HISTORY_LIMIT = 1000;

export class MemoryTenantStore implements TenantStore {
  readonly #tenants = new Map<TenantId, Tenant>();
  readonly #history: { revision: number; event: TenantEvent }[] = [];
  readonly #listeners = new Set<(event: TenantEvent) => void>();
  #revision = 1;

  async start(): Promise<void> {}

  get resourceVersion(): string {
    return String(this.#revision);
  }

  get(id: TenantId): Tenant | undefined {
    return this.#tenants.get(id);
  }

  list(): Tenant[] {
    return [...this.#tenants.values()].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
  }

  async create(tenant: Parameters<TenantStore['create']>[0]): Promise<Tenant> {
    const id = tenant.metadata.name;
    if (this.#tenants.has(id)) throw new TenantExists(`tenant ${id} already exists`);
    const stored: Tenant = structuredClone({
      ...tenant,
      metadata: {
        ...tenant.metadata,
        uid: randomUUID(),
        resourceVersion: '',
        creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
        generation: 1,
      },
    }) as Tenant;
    this.#commit('ADDED', stored);
    return structuredClone(stored);
  }

  async update(tenant: Tenant): Promise<Tenant> {
    const current = this.#current(tenant.metadata.name, tenant.metadata.resourceVersion);
    const stored = structuredClone(tenant);
    // Identity fields are the store's, not the writer's.
    stored.metadata.uid = current.metadata.uid;
    stored.metadata.creationTimestamp = current.metadata.creationTimestamp;
    this.#commit('MODIFIED', stored);
    return structuredClone(stored);
  }

  async remove(id: TenantId, resourceVersion?: string): Promise<void> {
    const current = this.#current(id, resourceVersion);
    this.#tenants.delete(id);
    this.#commit('DELETED', structuredClone(current), false);
  }

  watch(onEvent: (event: TenantEvent) => void, fromResourceVersion?: string): () => void {
    if (fromResourceVersion === undefined || fromResourceVersion === '' || fromResourceVersion === '0') {
      for (const tenant of this.list()) onEvent({ type: 'ADDED', tenant: structuredClone(tenant) });
    } else {
      const from = Number(fromResourceVersion);
      if (!Number.isInteger(from) || from < 0) throw new TenantWatchExpired(`invalid resourceVersion ${fromResourceVersion}`);
      const oldest = this.#history[0]?.revision ?? this.#revision + 1;
      if (from < oldest - 1 && from < this.#revision) throw new TenantWatchExpired(`too old resource version: ${from} (${oldest - 1})`);
      for (const { revision, event } of this.#history) if (revision > from) onEvent(structuredClone(event));
    }
    return this.onChange(onEvent);
  }

  onChange(listener: (event: TenantEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async close(): Promise<void> {
    this.#listeners.clear();
  }

  #current(id: TenantId, resourceVersion: string | undefined): Tenant {
    const current = this.#tenants.get(id);
    if (current === undefined) throw new TenantMissing(`tenant ${id} not found`);
    if (resourceVersion !== undefined && resourceVersion !== '' && resourceVersion !== current.metadata.resourceVersion) {
      throw new TenantConflict(`tenant ${id} was modified: resourceVersion ${resourceVersion} is not the latest (${current.metadata.resourceVersion})`);
    }
    return current;
  }

  #commit(type: TenantEvent['type'], tenant: Tenant, keep = true): void {
    this.#revision++;
    tenant.metadata.resourceVersion = String(this.#revision);
    if (keep) this.#tenants.set(tenant.metadata.name, tenant);
    const event: TenantEvent = { type, tenant };
    this.#history.push({ revision: this.#revision, event });
    if (this.#history.length > HISTORY_LIMIT) this.#history.shift();
    for (const listener of [...this.#listeners]) listener(structuredClone(event));
  }
}

// The embedded tenant store: one process, nothing on disk. The default when no etcd is configured (dev, unit tests).
// Keeps a bounded history of changes (TenantIndex) so watches can resume from a recent resourceVersion, as etcd's would.
import type { TenantId } from '../convert/prefix.ts';
import { newTenant, updatedTenant } from './stored-tenant.ts';
import { TenantIndex } from './tenant-index.ts';
import { TenantConflict, TenantExists, TenantMissing, type Tenant, type TenantEvent, type TenantStore } from './tenant.ts';

export class MemoryTenantStore implements TenantStore {
  readonly #index = new TenantIndex();

  async start(): Promise<void> {}

  get resourceVersion(): string {
    return String(this.#index.revision);
  }

  get(id: TenantId): Tenant | undefined {
    return this.#index.get(id);
  }

  list(): Tenant[] {
    return this.#index.list();
  }

  async create(tenant: Parameters<TenantStore['create']>[0]): Promise<Tenant> {
    const id = tenant.metadata.name;
    if (this.#index.get(id) !== undefined) throw new TenantExists(`tenant ${id} already exists`);
    return this.#commit('ADDED', newTenant(tenant));
  }

  async update(tenant: Tenant): Promise<Tenant> {
    const current = this.#current(tenant.metadata.name, tenant.metadata.resourceVersion);
    return this.#commit('MODIFIED', updatedTenant(tenant, current));
  }

  async remove(id: TenantId, resourceVersion?: string): Promise<void> {
    this.#commit('DELETED', structuredClone(this.#current(id, resourceVersion)));
  }

  watch(onEvent: (event: TenantEvent) => void, fromResourceVersion?: string): () => void {
    return this.#index.watch(onEvent, fromResourceVersion);
  }

  onChange(listener: (event: TenantEvent) => void): () => void {
    return this.#index.onChange(listener);
  }

  async close(): Promise<void> {
    this.#index.clearListeners();
  }

  #current(id: TenantId, resourceVersion: string | undefined): Tenant {
    const current = this.#index.get(id);
    if (current === undefined) throw new TenantMissing(`tenant ${id} not found`);
    if (resourceVersion !== undefined && resourceVersion !== '' && resourceVersion !== current.metadata.resourceVersion) {
      throw new TenantConflict(`tenant ${id} was modified: resourceVersion ${resourceVersion} is not the latest (${current.metadata.resourceVersion})`);
    }
    return current;
  }

  /** Gives the caller its own copy: the index's is frozen. */
  #commit(type: TenantEvent['type'], tenant: Tenant): Tenant {
    const revision = this.#index.revision + 1;
    tenant.metadata.resourceVersion = String(revision);
    this.#index.apply(type, tenant, revision);
    return structuredClone(tenant);
  }
}

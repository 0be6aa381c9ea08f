// Tenants in etcd under one key prefix (value: the Tenant's JSON; resourceVersion: the key's mod_revision), served
// from an in-memory index fed by a watch of the prefix. Reads never wait for etcd; writes never hang when it is gone.
import { ExponentialBackoff, noop } from 'cockatiel';
import { Etcd3, type IKeyValue, type IWatchResponse, type Watcher } from 'etcd3';
import { isTenantId, type TenantId } from '../convert/prefix.ts';
import { log } from '../log.ts';
import { newTenant, updatedTenant } from './stored-tenant.ts';
import { TenantIndex } from './tenant-index.ts';
import { TenantConflict, TenantExists, TenantMissing, TenantStoreUnavailable, type Tenant, type TenantEvent, type TenantStore } from './tenant.ts';

export const DEFAULT_ETCD_PREFIX = '/tenantgate/tenants/';

export interface EtcdTenantStoreOptions {
  endpoints: string[];
  /** Every tenant's key is this prefix and its id. */
  prefix?: string;
  /** How long a write (and start's read) may take before it fails with TenantStoreUnavailable. */
  timeoutMs?: number;
}

const DEFAULT_TIMEOUT_MS = 3_000;
/** How soon after losing its place (compaction, etcd down) the index tries to read the prefix again. */
const RELIST_RETRY_MS = 500;

/** Failures the caller must see as they are (the rest of etcd's become TenantStoreUnavailable). */
type Typed = TenantConflict | TenantExists | TenantMissing | TenantStoreUnavailable;
function isTyped(error: unknown): error is Typed {
  return error instanceof TenantConflict || error instanceof TenantExists || error instanceof TenantMissing || error instanceof TenantStoreUnavailable;
}

/** The JSON etcd keeps: resourceVersion is the key's mod_revision, so it is never stored. */
function storedValue(tenant: Tenant): string {
  return JSON.stringify({ ...tenant, metadata: { ...tenant.metadata, resourceVersion: undefined } });
}

export class EtcdTenantStore implements TenantStore {
  readonly #client: Etcd3;
  readonly #prefix: string;
  readonly #timeoutMs: number;
  readonly #index = new TenantIndex(0);
  /** Writes waiting for the watch to bring their revision into the index (read-your-writes). */
  readonly #waiters = new Set<{ revision: number; done: () => void }>();
  #watcher: Watcher | undefined;
  #relistTimer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: EtcdTenantStoreOptions) {
    this.#prefix = options.prefix ?? DEFAULT_ETCD_PREFIX;
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const timeoutMs = this.#timeoutMs;
    this.#client = new Etcd3({
      hosts: options.endpoints,
      // A deadline on every call but the watch stream, which lives as long as the store.
      defaultCallOptions: (context) => (context.isStream ? {} : { deadline: Date.now() + timeoutMs }),
      faultHandling: {
        // No circuit breaker (its default keeps failing writes for 5 s after etcd is back) and no retries of our own:
        // a write either lands within the deadline or answers 503, and the caller decides to retry.
        host: () => noop,
        global: noop,
        // etcd3's default backs the watch off up to 30 s: the index would lag that long after etcd returns.
        watchBackoff: new ExponentialBackoff({ initialDelay: 100, maxDelay: 1_000 }).next(),
      },
      grpcOptions: {
        'grpc.initial_reconnect_backoff_ms': 100,
        'grpc.max_reconnect_backoff_ms': 1_000,
        // A peer that vanishes without closing the connection (a partition) is noticed in seconds, not hours.
        'grpc.keepalive_time_ms': 10_000,
        'grpc.keepalive_timeout_ms': 5_000,
      },
    });
  }

  /** Reads every tenant under the prefix, then watches it from just after that read. */
  async start(): Promise<void> {
    const revision = await this.#readAll((tenants, at) => this.#index.load(tenants, at));
    this.#watchFrom(revision + 1);
    log.info('tenant store: etcd index loaded', { prefix: this.#prefix, tenants: this.#index.list().length, revision });
  }

  get resourceVersion(): string {
    return String(this.#index.revision);
  }

  get(id: TenantId): Tenant | undefined {
    return this.#index.get(id);
  }

  list(): Tenant[] {
    return this.#index.list();
  }

  async create(input: Parameters<TenantStore['create']>[0]): Promise<Tenant> {
    const tenant = newTenant(input);
    const key = this.#key(tenant.metadata.name);
    const result = await this.#call(() =>
      this.#client
        .if(key, 'Create', '==', 0)
        .then(this.#client.put(key).value(storedValue(tenant)))
        .commit(),
    );
    if (!result.succeeded) throw new TenantExists(`tenant ${tenant.metadata.name} already exists`);
    return this.#committed(tenant, result.header.revision);
  }

  async update(tenant: Tenant): Promise<Tenant> {
    const id = tenant.metadata.name;
    const expected = this.#expectedRevision(id, tenant.metadata.resourceVersion);
    // The identity fields come from the version being replaced: let the index reach it first.
    if (expected !== undefined) await this.#caughtUp(expected);
    const stored = updatedTenant(tenant, this.#index.get(id));
    const key = this.#key(id);
    const result = await this.#call(() =>
      this.#ifStill(key, expected)
        .then(this.#client.put(key).value(storedValue(stored)))
        .else(this.#client.get(key))
        .commit(),
    );
    if (!result.succeeded) this.#whyNot(id, expected, result.responses[0]?.response_range?.kvs ?? []);
    return this.#committed(stored, result.header.revision);
  }

  async remove(id: TenantId, resourceVersion?: string): Promise<void> {
    const expected = this.#expectedRevision(id, resourceVersion);
    const key = this.#key(id);
    const result = await this.#call(() => this.#ifStill(key, expected).then(this.#client.delete().key(key)).else(this.#client.get(key)).commit());
    if (!result.succeeded) this.#whyNot(id, expected, result.responses[0]?.response_range?.kvs ?? []);
    await this.#caughtUp(Number(result.header.revision));
  }

  watch(onEvent: (event: TenantEvent) => void, fromResourceVersion?: string): () => void {
    return this.#index.watch(onEvent, fromResourceVersion);
  }

  onChange(listener: (event: TenantEvent) => void): () => void {
    return this.#index.onChange(listener);
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#relistTimer);
    for (const waiter of this.#waiters) waiter.done();
    this.#index.clearListeners();
    const watcher = this.#watcher;
    this.#watcher = undefined;
    // cancel() waits for etcd to confirm; with etcd gone that never comes, and close() must not hang.
    if (watcher !== undefined) await Promise.race([watcher.cancel().catch(() => {}), new Promise((r) => setTimeout(r, 500).unref())]);
    this.#client.close();
  }

  #key(id: TenantId): string {
    return this.#prefix + id;
  }

  /** The tenant in a key-value pair under the prefix, or undefined for anything else found there. */
  #tenantOf(kv: IKeyValue): Tenant | undefined {
    const id = kv.key.toString('utf8').slice(this.#prefix.length);
    if (!isTenantId(id)) return undefined;
    try {
      const tenant = JSON.parse(kv.value.toString('utf8')) as Tenant;
      if (tenant?.metadata?.name !== id) return undefined;
      tenant.metadata.resourceVersion = kv.mod_revision;
      return tenant;
    } catch {
      log.warn('tenant store: a value under the prefix is not a tenant', { key: kv.key.toString('utf8') });
      return undefined;
    }
  }

  /** Reads the prefix in one range request and hands its tenants and revision to `use`; returns the revision. */
  async #readAll(use: (tenants: Tenant[], revision: number) => void): Promise<number> {
    const response = await this.#call(() => this.#client.getAll().prefix(this.#prefix).exec());
    const tenants = response.kvs.map((kv) => this.#tenantOf(kv)).filter((tenant): tenant is Tenant => tenant !== undefined);
    const revision = Number(response.header.revision);
    use(tenants, revision);
    this.#settleWaiters();
    return revision;
  }

  #watchFrom(revision: number): void {
    if (this.#closed) return;
    const watcher = this.#client.watch().prefix(this.#prefix).startRevision(String(revision)).watcher();
    this.#watcher = watcher;
    watcher.on('data', (response: IWatchResponse) => this.#applyWatch(response));
    watcher.on('disconnected', (error: Error) => log.warn('tenant store: etcd watch disconnected; serving from the index', { error: error.message }));
    watcher.on('connected', () => log.debug('tenant store: etcd watch connected', { from: watcher.lastRevision() }));
    // etcd cancels a watch whose revision it has compacted away: read everything again and watch from there.
    watcher.on('error', (error: Error) => {
      log.warn('tenant store: etcd watch cancelled; reading the prefix again', { error: error.message });
      if (this.#watcher === watcher) this.#watcher = undefined;
      void watcher.cancel().catch(() => {});
      this.#relist();
    });
  }

  #relist(): void {
    if (this.#closed) return;
    this.#readAll((tenants, at) => this.#index.replaceAll(tenants, at)).then(
      (revision) => this.#watchFrom(revision + 1),
      (error: Error) => {
        log.warn('tenant store: reading the prefix failed; trying again', { error: error.message });
        this.#relistTimer = setTimeout(() => this.#relist(), RELIST_RETRY_MS);
        this.#relistTimer.unref();
      },
    );
  }

  #applyWatch(response: IWatchResponse): void {
    if (this.#closed) return;
    for (const event of response.events) {
      const revision = Number(event.kv.mod_revision);
      if (event.type === 'Put') {
        const tenant = this.#tenantOf(event.kv);
        if (tenant === undefined) continue;
        this.#index.apply(this.#index.get(tenant.metadata.name) === undefined ? 'ADDED' : 'MODIFIED', tenant, revision);
      } else {
        const id = event.kv.key.toString('utf8').slice(this.#prefix.length);
        const current = this.#index.get(id);
        if (current === undefined) continue;
        const gone = structuredClone(current);
        gone.metadata.resourceVersion = String(revision);
        this.#index.apply('DELETED', gone, revision);
      }
    }
    // The header's revision covers everything etcd had when it answered: nothing under the prefix is missing up to it.
    this.#index.advance(Number(response.header.revision));
    this.#settleWaiters();
  }

  #settleWaiters(): void {
    for (const waiter of this.#waiters) if (waiter.revision <= this.#index.revision) waiter.done();
  }

  /**
   * Resolves once the index has applied `revision`, so a caller that wrote gets its own write back from get and
   * list. Bounded: if the watch is down the write still happened, and the index catches up when it returns.
   */
  #caughtUp(revision: number): Promise<void> {
    if (this.#closed || revision <= this.#index.revision) return Promise.resolve();
    return new Promise((resolve) => {
      const waiter = {
        revision,
        done: () => {
          clearTimeout(timer);
          this.#waiters.delete(waiter);
          resolve();
        },
      };
      const timer = setTimeout(waiter.done, this.#timeoutMs);
      timer.unref();
      this.#waiters.add(waiter);
    });
  }

  async #committed(tenant: Tenant, revision: string): Promise<Tenant> {
    tenant.metadata.resourceVersion = revision;
    await this.#caughtUp(Number(revision));
    return tenant;
  }

  /** The mod_revision a write must still find, or undefined when the writer did not say (then: the key must exist). */
  #expectedRevision(id: TenantId, resourceVersion: string | undefined): number | undefined {
    if (resourceVersion === undefined || resourceVersion === '') return undefined;
    if (!/^[1-9]\d{0,15}$/.test(resourceVersion))
      throw new TenantConflict(`tenant ${id}: resourceVersion ${JSON.stringify(resourceVersion)} is not one this store gave`);
    return Number(resourceVersion);
  }

  #ifStill(key: string, expected: number | undefined) {
    return expected === undefined ? this.#client.if(key, 'Create', '>', 0) : this.#client.if(key, 'Mod', '==', expected);
  }

  /** A guarded write that did not apply: the key is gone (404) or holds another version (409). */
  #whyNot(id: TenantId, expected: number | undefined, kvs: IKeyValue[]): never {
    const current = kvs[0];
    if (current === undefined) throw new TenantMissing(`tenant ${id} not found`);
    throw new TenantConflict(`tenant ${id} was modified: resourceVersion ${expected} is not the latest (${current.mod_revision})`);
  }

  /** Runs one etcd call: typed errors pass, anything else (unreachable, deadline, closed) is TenantStoreUnavailable. */
  async #call<T>(call: () => Promise<T>): Promise<T> {
    if (this.#closed) throw new TenantStoreUnavailable('tenant store is closed');
    let timer: NodeJS.Timeout | undefined;
    // The call's deadline ends it; this is the backstop should the client itself stall before the call goes out.
    const backstop = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new TenantStoreUnavailable(`etcd did not answer within ${this.#timeoutMs} ms`)), this.#timeoutMs + 500);
    });
    try {
      return await Promise.race([call(), backstop]);
    } catch (error) {
      if (isTyped(error)) throw error;
      throw new TenantStoreUnavailable(`etcd is unavailable: ${(error as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  }
}

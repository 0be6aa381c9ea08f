// A Tenant's spec.quota.hard, held over the sum of all its namespaces by the upstream itself: each of the tenant's
// namespaces has one ResourceQuota (`tenantgate-tenant-quota`) whose hard limits are that namespace's share, and the
// shares never add up to more than the tenant's limit. Pods that upstream controllers create are counted and refused
// by the apiserver's own quota admission, exactly, however many creates run at once in however many namespaces.
// Free capacity moves to where it is wanted: a namespace that was refused (a tenant's create through tenantgate, or a
// controller's FailedCreate event) gets the tenant's free capacity, shared with others refused at the same time.
// Never lets the shares' sum pass the limit, even for a moment: a share is lowered (and the lowering in effect in the
// quota's status, which admission reads) before another is raised. A tenant without spec.quota has no such object.
import { TENANT_LABEL, toUpstreamName, type TenantId } from '../convert/prefix.ts';
import { quotaResourceToTenant, quotaResourceToUpstream } from '../convert/rules/quota.ts';
import { log } from '../log.ts';
import { upstreamJson } from '../upstream/client.ts';
import { listUpstream, watchUpstream, type UpstreamItem } from '../upstream/own-watch.ts';
import type { UpstreamPool } from '../upstream/pool.ts';
import { formatQuantity, parseQuantity } from './quantity.ts';
import { writeTenantStatus } from './status-writes.ts';
import type { Tenant, TenantStore } from './tenant.ts';

/** The upstream ResourceQuota in each of a quota'd tenant's namespaces; the confinement policy refuses tenants' writes of it. */
export const TENANT_QUOTA_NAME = 'tenantgate-tenant-quota';
/** Its label, valued with the tenant id: what the allocator lists and watches. */
export const TENANT_QUOTA_LABEL = 'tenantgate.kubezoo.io/tenant-quota';

/** A resource name (upstream form) to an amount in nano-units. */
export type Amounts = Map<string, bigint>;

/** One namespace's share as the upstream has it: spec.hard, status.hard (what admission enforces) and status.used. */
export interface Share {
  namespace: string;
  spec: Amounts;
  enforced: Amounts;
  used: Amounts;
}

/** One whole unit of any resource (a pod, a core, a byte), in nano-units. */
const UNIT = 1_000_000_000n;
/** A namespace refused for quota within this long still gets a part of the free capacity. */
const DEMAND_WINDOW_MS = 10_000;
const SYNC_ATTEMPTS = 8;
const RETRY_MS = 1_000;
const RESYNC_MS = 30_000;
const STATUS_DEBOUNCE_MS = 500;

function amountsOf(map: unknown): Amounts {
  const amounts: Amounts = new Map();
  if (typeof map !== 'object' || map === null) return amounts;
  for (const [key, text] of Object.entries(map)) {
    const value = typeof text === 'string' ? parseQuantity(text) : null;
    if (value !== null) amounts.set(key, value);
  }
  return amounts;
}

function formatted(amounts: Amounts): Record<string, string> {
  return Object.fromEntries([...amounts].map(([key, value]) => [key, formatQuantity(value)]));
}

const max = (a: bigint, b: bigint) => (a > b ? a : b);
const at = (amounts: Amounts, key: string) => amounts.get(key) ?? 0n;

/** What a namespace may take of `key` now: admission enforces status.hard, and a share is only lowered below use by its use. */
function heldBy(share: Share, key: string): bigint {
  return max(max(at(share.spec, key), at(share.enforced, key)), at(share.used, key));
}

/** The tenant's limits in upstream resource names; null without a quota (or with an empty one). */
export function tenantHardOf(tenant: Tenant): Amounts | null {
  const hard = tenant.spec?.quota?.hard;
  if (hard === undefined || Object.keys(hard).length === 0) return null;
  const amounts: Amounts = new Map();
  for (const [key, text] of Object.entries(hard)) {
    const value = parseQuantity(text);
    if (value !== null) amounts.set(quotaResourceToUpstream(key, tenant.metadata.name), value);
  }
  return amounts;
}

/**
 * Each namespace's new spec.hard. With namespaces recently refused (`wanted`, most recent first), every other
 * namespace keeps only what it uses and the free capacity is split among the wanted ones (the remainder to the most
 * recent). Otherwise shares stay where they are, a limit lowered takes back unused shares (others' before `home`'s),
 * and capacity no share holds goes to `home`. Never gives out more than the limit beyond what is already used.
 */
export function planShares(hard: Amounts, shares: readonly Share[], wanted: readonly string[], home: string): Map<string, Amounts> {
  const plan = new Map<string, Amounts>(shares.map((share) => [share.namespace, new Map()]));
  const wantedHere = wanted.filter((namespace) => plan.has(namespace));
  for (const [key, limit] of hard) {
    const used = shares.reduce((sum, share) => sum + at(share.used, key), 0n);
    const free = max(limit - used, 0n);
    if (wantedHere.length > 0) {
      // Whole units apiece (a count shared as 2.5 and 2.5 admits only 2 and 2), the remainder to the most recent.
      const part = (free / BigInt(wantedHere.length) / UNIT) * UNIT;
      const remainder = free - part * BigInt(wantedHere.length);
      for (const share of shares) {
        const index = wantedHere.indexOf(share.namespace);
        const extra = index < 0 ? 0n : part + (index === 0 ? remainder : 0n);
        plan.get(share.namespace)!.set(key, at(share.used, key) + extra);
      }
      continue;
    }
    const held = new Map(shares.map((share) => [share.namespace, heldBy(share, key)]));
    let total = [...held.values()].reduce((sum, value) => sum + value, 0n);
    // Over the limit (it was lowered): unused shares given back, others' first.
    const byReclaimOrder = [...shares].sort((a, b) => Number(a.namespace === home) - Number(b.namespace === home));
    for (const share of byReclaimOrder) {
      if (total <= limit) break;
      const unused = held.get(share.namespace)! - at(share.used, key);
      const back = unused < total - limit ? unused : total - limit;
      if (back <= 0n) continue;
      held.set(share.namespace, held.get(share.namespace)! - back);
      total -= back;
    }
    if (total < limit && held.has(home)) held.set(home, held.get(home)! + (limit - total));
    for (const share of shares) plan.get(share.namespace)!.set(key, held.get(share.namespace)!);
  }
  return plan;
}

class Conflict extends Error {}

function failure(what: string, answer: { status: number; body: any }): Error {
  if (answer.status === 409) return new Conflict(what);
  return new Error(`${what} answered ${answer.status}: ${String(answer.body?.message ?? '').slice(0, 500)}`);
}

function shareOf(item: UpstreamItem): Share {
  const spec = item.spec as { hard?: unknown } | undefined;
  const status = item.status as { hard?: unknown; used?: unknown } | undefined;
  return { namespace: item.metadata.namespace!, spec: amountsOf(spec?.hard), enforced: amountsOf(status?.hard), used: amountsOf(status?.used) };
}

function sameAmounts(a: Amounts, b: Amounts): boolean {
  return a.size === b.size && [...a].every(([key, value]) => b.get(key) === value);
}

export interface TenantQuotasOptions {
  store: TenantStore;
  pool: UpstreamPool;
}

/** Keeps every quota'd tenant's shares, moves free capacity to where it is wanted, and reports use on the Tenant. */
export class TenantQuotas {
  readonly #store: TenantStore;
  readonly #pool: UpstreamPool;
  /** Per tenant: the sync under way (never two at once), and whether another was asked for meanwhile. */
  readonly #syncs = new Map<TenantId, { running: Promise<void>; again: boolean }>();
  /** Per tenant: namespace → when it was last refused for quota. */
  readonly #wanted = new Map<TenantId, Map<string, number>>();
  /** The limits each tenant was last synced with (a Tenant's other changes need no sync). */
  readonly #synced = new Map<TenantId, string>();
  readonly #statusTimers = new Map<TenantId, NodeJS.Timeout>();
  readonly #retryTimers = new Map<TenantId, NodeJS.Timeout>();
  readonly #stoppers: (() => void)[] = [];
  #resyncTimer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(options: TenantQuotasOptions) {
    this.#store = options.store;
    this.#pool = options.pool;
  }

  start(): void {
    this.#stoppers.push(
      this.#store.onChange((event) => {
        const id = event.tenant.metadata.name;
        // (Tenants without a quota cost nothing here: never synced, nothing to take away.)
        if (event.type === 'DELETED' || (tenantHardOf(event.tenant) === null && !this.#synced.has(id))) return;
        if (this.#synced.get(id) !== JSON.stringify(event.tenant.spec?.quota?.hard ?? {})) void this.#kick(id);
      }),
    );
    for (const tenant of this.#store.list()) if (tenantHardOf(tenant) !== null) void this.#kick(tenant.metadata.name);
    const onError = (error: Error) => log.debug('tenant quota watch', { error: error.message });
    const resyncAll = () => {
      for (const tenant of this.#store.list())
        if (tenantHardOf(tenant) !== null || this.#synced.has(tenant.metadata.name)) void this.#kick(tenant.metadata.name);
    };
    // A tenant's new namespace needs its share; a deleted quota is put back; use changes the Tenant's status.
    this.#stoppers.push(
      watchUpstream(this.#pool, `/api/v1/resourcequotas?labelSelector=${encodeURIComponent(TENANT_QUOTA_LABEL)}`, {
        onEvent: (event) => {
          const id = event.object.metadata.labels?.[TENANT_QUOTA_LABEL] as TenantId | undefined;
          if (id === undefined) return;
          // Deleted, or left from a quota taken away while no tenantgate ran: synced again.
          if (event.type === 'DELETED' || !this.#synced.has(id)) void this.#kick(id);
          else this.#statusLater(id);
        },
        onResync: resyncAll,
        onError,
      }),
      watchUpstream(this.#pool, `/api/v1/namespaces?labelSelector=${encodeURIComponent(TENANT_LABEL)}`, {
        onEvent: (event) => {
          const id = event.object.metadata.labels?.[TENANT_LABEL] as TenantId | undefined;
          if (event.type === 'ADDED' && id !== undefined && this.#hasQuota(id)) void this.#kick(id);
        },
        onResync: resyncAll,
        onError,
      }),
      // Controllers' creates (a Deployment's pods) refused for quota: their namespace wants capacity.
      watchUpstream(this.#pool, `/api/v1/events?fieldSelector=${encodeURIComponent('reason=FailedCreate')}`, {
        onEvent: (event) => {
          const namespace = event.object.metadata.namespace;
          const message = (event.object as { message?: string }).message ?? '';
          if (event.type === 'DELETED' || namespace === undefined || !message.includes(`exceeded quota: ${TENANT_QUOTA_NAME}`)) return;
          const id = namespace.slice(0, 6) as TenantId;
          if (namespace.charAt(6) === '-' && this.#hasQuota(id)) void this.demand(id, namespace);
        },
        onResync: () => {},
        onError,
      }),
    );
    this.#resyncTimer = setInterval(resyncAll, RESYNC_MS);
    this.#resyncTimer.unref();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    for (const stop of this.#stoppers.splice(0)) stop();
    clearInterval(this.#resyncTimer);
    for (const timer of [...this.#statusTimers.values(), ...this.#retryTimers.values()]) clearTimeout(timer);
    await Promise.allSettled([...this.#syncs.values()].map((sync) => sync.running));
  }

  #hasQuota(id: TenantId): boolean {
    const tenant = this.#store.get(id);
    return tenant !== undefined && (tenantHardOf(tenant) !== null || this.#synced.has(id));
  }

  /**
   * The upstream refused a create in `upstreamNamespace` for the tenant's quota: moves free capacity there. Resolves
   * to whether the namespace now may take more than before (a retry may pass), false when the tenant is at its limit.
   */
  async demand(id: TenantId, upstreamNamespace: string, requested?: Amounts): Promise<boolean> {
    const tenant = this.#store.get(id);
    if (tenant === undefined || tenantHardOf(tenant) === null) return false;
    let wanted = this.#wanted.get(id);
    if (wanted === undefined) this.#wanted.set(id, (wanted = new Map()));
    wanted.set(upstreamNamespace, Date.now());
    await this.#kick(id);
    const share = (await this.#sharesOf(id).catch(() => [])).find((candidate) => candidate.namespace === upstreamNamespace);
    if (share === undefined) return false;
    const room = (key: string) => at(share.enforced, key) - at(share.used, key);
    if (requested === undefined || requested.size === 0) return [...share.enforced.keys()].some((key) => room(key) > 0n);
    return [...requested].every(([key, amount]) => !share.enforced.has(key) || room(key) >= amount);
  }

  /**
   * A tenant's namespace was just created (before the create is answered): its share, nothing at first, is in place
   * and in force before the tenant can create anything in it. (A namespace that has had no time to hold anything uses
   * nothing: its status says so at once, where the quota controller would say it only after its first sync.)
   */
  async namespaceCreated(id: TenantId, upstreamNamespace: string): Promise<void> {
    const tenant = this.#store.get(id);
    const hard = tenant === undefined ? null : tenantHardOf(tenant);
    if (hard === null) return;
    const zero = new Map([...hard.keys()].map((key) => [key, 0n]));
    const created = await this.#create(id, upstreamNamespace, zero);
    if (created !== null) {
      const status = { hard: formatted(zero), used: formatted(zero) };
      const answer = await upstreamJson(this.#pool, 'PUT', `/api/v1/namespaces/${upstreamNamespace}/resourcequotas/${TENANT_QUOTA_NAME}/status`, {
        ...created,
        status,
      });
      if (answer.status !== 200 && answer.status !== 409) throw failure(`enforcing the quota of ${upstreamNamespace}`, answer);
    }
    void this.#kick(id);
  }

  /** Runs the tenant's sync now, or once more after the one under way; resolves when a sync that began after this call ends. */
  #kick(id: TenantId): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    const current = this.#syncs.get(id);
    if (current !== undefined) {
      current.again = true; // (its loop runs once more before `running` resolves)
      return current.running;
    }
    const entry = { running: Promise.resolve(), again: false };
    entry.running = (async () => {
      do {
        entry.again = false;
        await this.#sync(id).then(
          () => clearTimeout(this.#retryTimers.get(id)),
          (error: Error) => {
            log.warn('tenant quota sync failed', { tenant: id, error: error.message });
            clearTimeout(this.#retryTimers.get(id));
            this.#retryTimers.set(id, setTimeout(() => void this.#kick(id), RETRY_MS).unref());
          },
        );
      } while (entry.again && !this.#stopped);
      this.#syncs.delete(id);
    })();
    this.#syncs.set(id, entry);
    return entry.running;
  }

  async #sharesOf(id: TenantId): Promise<(Share & { item: UpstreamItem })[]> {
    const items = await listUpstream(this.#pool, `/api/v1/resourcequotas?labelSelector=${encodeURIComponent(`${TENANT_QUOTA_LABEL}=${id}`)}`);
    return items.filter((item) => item.metadata.name === TENANT_QUOTA_NAME).map((item) => ({ ...shareOf(item), item }));
  }

  async #sync(id: TenantId): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.#syncOnce(id);
        return;
      } catch (error) {
        // Admission counts use in the quota's status: a busy namespace moves its resourceVersion under us.
        if (!(error instanceof Conflict) || attempt >= SYNC_ATTEMPTS) throw error;
      }
    }
  }

  async #syncOnce(id: TenantId): Promise<void> {
    const tenant = this.#store.get(id);
    const hard = tenant === undefined || tenant.metadata.deletionTimestamp !== undefined ? null : tenantHardOf(tenant);
    const limits = JSON.stringify(tenant?.spec?.quota?.hard ?? {});
    let shares = await this.#sharesOf(id);
    if (hard === null) {
      // No quota (any more): the shares go; a deleted tenant's go with its namespaces.
      if (tenant !== undefined && tenant.metadata.deletionTimestamp === undefined) {
        for (const share of shares) await this.#delete(share.namespace);
        await this.#writeStatus(id, null);
      }
      this.#synced.delete(id);
      this.#wanted.delete(id);
      return;
    }
    const namespaces = await listUpstream(this.#pool, `/api/v1/namespaces?labelSelector=${encodeURIComponent(`${TENANT_LABEL}=${id}`)}`);
    const live = namespaces.filter((namespace) => namespace.metadata.deletionTimestamp === undefined).map((namespace) => namespace.metadata.name);
    const missing = live.filter((namespace) => !shares.some((share) => share.namespace === namespace));
    // A new namespace starts with nothing: its share comes from the free capacity below.
    for (const namespace of missing) await this.#create(id, namespace, new Map([...hard.keys()].map((key) => [key, 0n])));
    if (missing.length > 0) shares = await this.#sharesOf(id);
    const now = Date.now();
    const wanted = [...(this.#wanted.get(id) ?? new Map<string, number>())]
      .filter(([, when]) => now - when < DEMAND_WINDOW_MS)
      .sort((a, b) => b[1] - a[1])
      .map(([namespace]) => namespace);
    const plan = planShares(hard, shares, wanted, toUpstreamName('default', id));
    // Lowered first, each in effect (status.hard) before anything is raised: the sum never passes the limit.
    for (const share of shares) {
      const target = plan.get(share.namespace)!;
      const lowered = new Map([...hard.keys()].map((key) => [key, target.get(key)! < heldBy(share, key) ? target.get(key)! : heldBy(share, key)]));
      const dropsKeys = [...share.spec.keys()].some((key) => !hard.has(key));
      if (dropsKeys || [...hard.keys()].some((key) => lowered.get(key)! < heldBy(share, key))) await this.#setShare(share.item, lowered);
    }
    // Every lowered share now holds exactly its target (each write was at the resourceVersion its plan read), and no
    // other holds more than its target: raising to the plan keeps the sum within the limit. (Fresh resourceVersions.)
    for (const share of await this.#sharesOf(id)) {
      const target = plan.get(share.namespace);
      if (target === undefined) continue; // a namespace new since the plan: the next sync
      if (!sameAmounts(share.spec, target) || !sameAmounts(share.enforced, target)) await this.#setShare(share.item, target);
    }
    this.#synced.set(id, limits);
    this.#statusLater(id);
  }

  /** Creates a share; resolves to it as stored, or null when it was there already (or the namespace is going). */
  async #create(id: TenantId, namespace: string, hard: Amounts): Promise<Record<string, unknown> | null> {
    const quota = {
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: { name: TENANT_QUOTA_NAME, namespace, labels: { [TENANT_LABEL]: id, [TENANT_QUOTA_LABEL]: id } },
      spec: { hard: formatted(hard) },
    };
    const answer = await upstreamJson(this.#pool, 'POST', `/api/v1/namespaces/${namespace}/resourcequotas`, quota);
    // 409: another replica made it; 403/404: the namespace is being deleted.
    if (answer.status === 201) return answer.body;
    if (answer.status !== 409 && answer.status !== 403 && answer.status !== 404) throw failure(`creating the quota of ${namespace}`, answer);
    return null;
  }

  async #delete(namespace: string): Promise<void> {
    const answer = await upstreamJson(this.#pool, 'DELETE', `/api/v1/namespaces/${namespace}/resourcequotas/${TENANT_QUOTA_NAME}`);
    if (answer.status !== 200 && answer.status !== 404) throw failure(`deleting the quota of ${namespace}`, answer);
  }

  /**
   * Sets a share's spec.hard, then its status.hard to the same (admission enforces status.hard; the quota controller
   * would copy it only later), each at the resourceVersion read: a create admitted meanwhile is a Conflict.
   */
  async #setShare(item: UpstreamItem, hard: Amounts): Promise<void> {
    const path = `/api/v1/namespaces/${item.metadata.namespace}/resourcequotas/${TENANT_QUOTA_NAME}`;
    const spec = { ...(item.spec as object), hard: formatted(hard) };
    const updated = await upstreamJson(this.#pool, 'PUT', path, { ...item, spec });
    if (updated.status !== 200) throw failure(`updating the quota of ${item.metadata.namespace}`, updated);
    const status = { ...(updated.body.status ?? {}), hard: formatted(hard) };
    const enforced = await upstreamJson(this.#pool, 'PUT', `${path}/status`, { ...updated.body, status });
    if (enforced.status !== 200) throw failure(`enforcing the quota of ${item.metadata.namespace}`, enforced);
  }

  #statusLater(id: TenantId): void {
    if (this.#stopped || this.#statusTimers.has(id)) return;
    this.#statusTimers.set(
      id,
      setTimeout(() => {
        this.#statusTimers.delete(id);
        void this.#reportUse(id).catch((error: Error) => log.debug('tenant quota status', { tenant: id, error: error.message }));
      }, STATUS_DEBOUNCE_MS).unref(),
    );
  }

  /** status.quota: the limits and their use summed over the tenant's namespaces, in the tenant's resource names. */
  async #reportUse(id: TenantId): Promise<void> {
    const tenant = this.#store.get(id);
    if (tenant === undefined) return;
    const hard = tenantHardOf(tenant);
    if (hard === null) return;
    const shares = await this.#sharesOf(id);
    const used: Record<string, string> = {};
    for (const key of hard.keys()) {
      const name = quotaResourceToTenant(key, id);
      if (name !== null) used[name] = formatQuantity(shares.reduce((sum, share) => sum + at(share.used, key), 0n));
    }
    await this.#writeStatus(id, { hard: { ...tenant.spec.quota!.hard! }, used });
  }

  async #writeStatus(id: TenantId, quota: { hard: Record<string, string>; used: Record<string, string> } | null): Promise<void> {
    await writeTenantStatus(this.#store, id, (tenant) => {
      const status = (tenant.status ??= {});
      if (JSON.stringify(status.quota ?? null) === JSON.stringify(quota)) return false;
      if (quota === null) delete status.quota;
      else status.quota = quota;
      return true;
    });
  }
}

// Follows the tenant store and the upstream: marks each new tenant Ready at once, writes its birth state upstream on
// its first request (whenBorn), puts back whatever of a born tenant's bootstrap objects goes missing, and removes all
// of a deleted tenant's upstream objects before the Tenant itself. Never creates anything for a tenant being deleted,
// nor deletes outside a tenant's exact prefix.
import { bulkhead, type BulkheadPolicy } from 'cockatiel';
import { isTenantId, TENANT_LABEL, tenantOfUpstreamName, toUpstreamName, type TenantId } from '../convert/prefix.ts';
import { Once } from './once.ts';
import { log } from '../log.ts';
import type { RecordTenantOperation } from '../metrics/metrics.ts';
import { upstreamJson } from '../upstream/client.ts';
import { DiscoveryCache } from '../upstream/discovery.ts';
import { listUpstream, watchUpstream, type UpstreamItem, type WatchEvent } from '../upstream/own-watch.ts';
import type { UpstreamPool } from '../upstream/pool.ts';
import {
  AGGREGATE_TO_TENANTS_LABEL,
  bootstrapTenant,
  BUILTIN_NAMESPACES,
  CUSTOM_RESOURCES_ROLE_LABEL,
  differs,
  ensure,
  ensureSharedTenantRbac,
  ensureTenantCustomResources,
  ensureTenantNamespace,
  ensureTenantSigners,
  grantTenantNamespace,
  legacyTenantBindingsOf,
  SHARED_TENANT_RBAC,
  SHARED_TENANT_RBAC_LABEL,
  TENANT_ADMIN_BINDING,
  syncTenantCustomResources,
  tenantCustomResourcesName,
  tenantCustomResourcesRole,
  tenantSignersName,
  tenantSignersRole,
  TENANTGATE_OWNED_LABEL,
  type CustomResourceDefinition,
} from './bootstrap.ts';
import {
  BOOTSTRAPPING_LABEL,
  builtinBindingNamesOf,
  builtinBindingsOf,
  ensureTenantBuiltinBinding,
  ensureTenantBuiltinBindings,
  ensureTenantBuiltinRoles,
  readBuiltinRoles,
  tenantBuiltinBinding,
  tenantBuiltinRole,
  type BuiltinRole,
} from './builtin-roles.ts';
import { ensureKubernetesService, KUBERNETES_SERVICE, kubernetesServicesAmiss, type ClusterAddress } from './cluster-service.ts';
import {
  EXPANSION_LABEL,
  expansionName,
  expansionOf,
  isExpansionName,
  isTenantClusterBinding,
  migrateClusterBinding,
  migratedSubjects,
  REAL_CLUSTER_BINDINGS,
  STORED_CLUSTER_BINDINGS,
  type ClusterRoleBinding,
} from './cluster-bindings.ts';
import { cleanupDone, deleteTenantObjects, type CleanupProgress } from './cleanup.ts';
import { BIRTH_STATE_CONDITION, isBorn, isReady, markCreated, setCondition } from './conditions.ts';
import { ensureStoredKindCrds, ensureTenantFlowControlDefaults, readMandatoryFlowControl, type MandatoryObject } from './stored-kinds.ts';
import { writeTenantStatus } from './status-writes.ts';
import { TENANT_CLEANUP_FINALIZER, TenantMissing, type Tenant, type TenantEvent, type TenantStore } from './tenant.ts';
import { serviceUnavailable, type StatusError } from '../errors/status-error.ts';

export interface TenantLifecycleOptions {
  store: TenantStore;
  pool: UpstreamPool;
  discovery?: DiscoveryCache;
  /**
   * Full reconcile of every tenant, a safety net behind the upstream watches (default 5 minutes): it lists every
   * tenant's objects, so its cost grows with tenants (at 1,000, every 30 s cost tenantgate 68 millicores at rest).
   */
  resyncIntervalMs?: number;
  /** How often a deleted tenant's cleanup looks again while namespaces and CRDs finalize. */
  cleanupIntervalMs?: number;
  /** Longest wait before retrying a failed bootstrap or cleanup. */
  maxBackoffMs?: number;
  /** Counts bootstraps and cleanups (metrics): a finished one as ok, each failed step as an error. */
  recordOperation?: RecordTenantOperation | undefined;
  /** tenantgate as tenants reach it, for each tenant's Service `default/kubernetes`; absent: no such Service. */
  clusterAddress?: ClusterAddress | undefined;
  /**
   * How long after this lifecycle starts the per-tenant ClusterRoleBindings of an older tenantgate are kept: replicas
   * still on that version (a rolling upgrade) impersonate no cluster-scope group and rely on them. Default 10 minutes.
   */
  legacyBindingsGraceMs?: number;
  /** Tenants whose bootstrap or cleanup steps run at once (default 16); the others wait their turn in order. */
  concurrentSteps?: number;
  /**
   * What a tenant's new namespace must carry before the tenant may use it (its quota share, its class annotations):
   * awaited for each built-in namespace before the request waiting for the birth goes on, as for a namespace the
   * tenant creates itself.
   */
  namespaceCreated?: ((id: TenantId, upstreamNamespace: string) => Promise<void>) | undefined;
}

/**
 * Enough tenants at once to keep a 2-core upstream busy with their writes. Without a bound, a thousand tenants created
 * together all advance at once and none is Ready until nearly all are (watch-fanout: 5 of 1,000 Ready after 600 s).
 */
const CONCURRENT_STEPS = 16;

/** ready: the Ready condition written (the store alone); bootstrap: the birth state written upstream, asked by a request. */
type Phase = 'ready' | 'bootstrap' | 'cleanup' | 'idle';

/** One tenant's bootstrap or cleanup: never two steps of one tenant at once. */
interface TenantWork {
  phase: Phase;
  running: Promise<void> | null;
  again: boolean;
  failures: number;
  timer: NodeJS.Timeout | undefined;
}

const FIRST_BACKOFF_MS = 500;
const RECONCILE_DEBOUNCE_MS = 100;
/** Past this many tenants to look at, one pass over all is cheaper than selectors naming each. */
const MAX_SELECTOR_TENANTS = 50;

const RBAC = '/apis/rbac.authorization.k8s.io/v1';
/** A namespace younger than this that lacks its admin's RoleBinding is new (the grant is created), not robbed of it. */
const NEW_NAMESPACE_MS = 60_000;

/** What a reconcile did to one upstream object, as its log line says. */
type ReconcileAction = 'restored' | 'created' | 'updated' | 'removed' | 'replaced';

/** What a tenant's first request waits for: its birth state upstream (resolved), or why not yet (rejected). */
interface Birth {
  promise: Promise<void>;
  resolve: () => void;
  reject: (error: Error) => void;
}

/** What a tenant's request is told while its birth state cannot be written: no upstream names (the Tenant's condition has them). */
function birthFailed(): StatusError {
  return serviceUnavailable("the tenant's built-in objects could not be set up yet; try again", { retryAfterSeconds: 1 });
}

function progressMessage(progress: CleanupProgress): string {
  const unlisted = progress.unlisted.length === 0 ? '' : `; cannot list ${progress.unlisted.join(', ')} yet`;
  return `deleting ${progress.namespaces} namespaces, ${progress.clusterObjects} cluster-scoped objects remaining${unlisted}`;
}

export class TenantLifecycle {
  readonly #store: TenantStore;
  readonly #pool: UpstreamPool;
  readonly #discovery: DiscoveryCache;
  readonly #resyncIntervalMs: number;
  readonly #cleanupIntervalMs: number;
  readonly #maxBackoffMs: number;
  readonly #recordOperation: RecordTenantOperation | undefined;
  readonly #clusterAddress: ClusterAddress | undefined;
  readonly #legacyBindingsGraceMs: number;
  readonly #namespaceCreated: TenantLifecycleOptions['namespaceCreated'];
  #startedAt = 0;
  /** The upstream's built-in roles: every tenant's copies are made from them. */
  readonly #builtinRoles: Once<BuiltinRole[]>;
  /** The upstream's mandatory flow-control objects: every tenant's copies are made from them. */
  readonly #mandatoryFlowControl: Once<MandatoryObject[]>;
  /** The RBAC all tenants share, made (again when the upstream lost it) before any tenant's. */
  readonly #sharedRbac: Once<void>;
  readonly #work = new Map<TenantId, TenantWork>();
  /** Tenants whose birth state a request asked for, until it is upstream (or the tenant is deleted). */
  readonly #birthsWanted = new Set<TenantId>();
  /** The requests waiting on each of those births. */
  readonly #births = new Map<TenantId, Birth>();
  /** Where tenants' steps wait for one of the few that run at once, first come first served. */
  readonly #steps: BulkheadPolicy;
  readonly #stoppers: (() => void)[] = [];
  #stopped = false;
  #resyncTimer: NodeJS.Timeout | undefined;
  // Reconcile: tenants whose upstream objects changed, coalesced into one pass.
  readonly #dirty = new Set<TenantId>();
  #dirtyAll = false;
  #flushTimer: NodeJS.Timeout | undefined;
  #reconciling: Promise<void> | null = null;

  constructor(options: TenantLifecycleOptions) {
    this.#store = options.store;
    this.#pool = options.pool;
    this.#discovery = options.discovery ?? new DiscoveryCache(options.pool);
    this.#resyncIntervalMs = options.resyncIntervalMs ?? 5 * 60_000;
    this.#cleanupIntervalMs = options.cleanupIntervalMs ?? 1_000;
    this.#maxBackoffMs = options.maxBackoffMs ?? 30_000;
    this.#recordOperation = options.recordOperation;
    this.#clusterAddress = options.clusterAddress;
    this.#legacyBindingsGraceMs = options.legacyBindingsGraceMs ?? 10 * 60_000;
    this.#namespaceCreated = options.namespaceCreated;
    this.#steps = bulkhead(options.concurrentSteps ?? CONCURRENT_STEPS, Number.POSITIVE_INFINITY);
    this.#builtinRoles = new Once(() => readBuiltinRoles(this.#pool));
    this.#mandatoryFlowControl = new Once(() => readMandatoryFlowControl(this.#pool));
    this.#sharedRbac = new Once(() => ensureSharedTenantRbac(this.#pool));
  }

  /** A shared object deleted or changed by someone: made again (a failure leaves the next bootstrap or reconcile to try). */
  #repairSharedRbac(): void {
    if (this.#stopped) return;
    this.#sharedRbac.forget();
    this.#sharedRbac.get().then(
      () => log.info('shared tenant rbac restored'),
      (error: Error) => log.warn('shared tenant rbac could not be restored', { error: error.message }),
    );
  }

  async start(): Promise<void> {
    this.#startedAt = Date.now();
    // Where tenants' ClusterRoleBindings (their built-in ones too) are kept: served before the first bootstrap.
    const established = await ensureStoredKindCrds(this.#pool).catch((error: Error) => error.message);
    if (established !== true)
      log.warn("the CRDs of tenants' stored kinds are not established yet: bootstraps retry until they are", { error: established || 'not established' });
    this.#stoppers.push(this.#store.onChange((event) => this.#onTenantEvent(event)));
    for (const tenant of this.#store.list()) this.#follow(tenant);
    this.#watchUpstream();
    this.#resyncTimer = setInterval(() => this.#markDirty('all'), this.#resyncIntervalMs);
    this.#resyncTimer.unref();
  }

  /** Ends every watch and timer, and waits for the steps under way. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const stop of this.#stoppers.splice(0)) stop();
    clearInterval(this.#resyncTimer);
    clearTimeout(this.#flushTimer);
    const running: Promise<void>[] = [];
    for (const work of this.#work.values()) {
      clearTimeout(work.timer);
      if (work.running !== null) running.push(work.running);
    }
    if (this.#reconciling !== null) running.push(this.#reconciling);
    await Promise.allSettled(running);
    this.#work.clear();
    for (const id of [...this.#births.keys()]) this.#settleBirth(id, serviceUnavailable('tenantgate is shutting down'));
  }

  /**
   * null when the tenant's birth state is upstream (or there is no such tenant to make it for); otherwise a promise
   * that resolves once it is, written now, in its turn with other tenants' steps. A tenant is Ready without it: an idle
   * tenant costs the upstream no object, and the first request that needs objects waits for them (70–150 ms on the rig).
   */
  whenBorn(id: TenantId): Promise<void> | null {
    const tenant = this.#store.get(id);
    if (tenant === undefined || tenant.metadata.deletionTimestamp !== undefined || isBorn(tenant)) return null;
    if (this.#stopped) return Promise.reject(serviceUnavailable('tenantgate is shutting down'));
    let birth = this.#births.get(id);
    if (birth === undefined) {
      let resolve!: () => void;
      let reject!: (error: Error) => void;
      const promise = new Promise<void>((yes, no) => {
        resolve = yes;
        reject = no;
      });
      promise.catch(() => {}); // every caller is handed the promise; this only keeps an early rejection from being unhandled
      birth = { promise, resolve, reject };
      this.#births.set(id, birth);
    }
    this.#birthsWanted.add(id);
    this.#kick(id);
    return birth.promise;
  }

  /** Ends the wait of the requests for this tenant's birth: they go on, or get `error`. */
  #settleBirth(id: TenantId, error?: Error): void {
    const birth = this.#births.get(id);
    if (birth === undefined) return;
    this.#births.delete(id);
    if (error === undefined) birth.resolve();
    else birth.reject(error);
  }

  #wantedPhase(tenant: Tenant): Phase {
    if (tenant.metadata.deletionTimestamp !== undefined) return 'cleanup';
    if (this.#birthsWanted.has(tenant.metadata.name) && !isBorn(tenant)) return 'bootstrap';
    return isReady(tenant) ? 'idle' : 'ready';
  }

  // ---- the store's side: bootstrap and cleanup, one tenant at a time ----

  #onTenantEvent(event: TenantEvent): void {
    const id = event.tenant.metadata.name;
    if (event.type === 'DELETED') {
      const work = this.#work.get(id);
      if (work !== undefined && work.running === null) {
        clearTimeout(work.timer);
        this.#work.delete(id);
      }
      return;
    }
    this.#follow(event.tenant);
  }

  /** Starts the tenant's bootstrap or cleanup unless it is already under way (our own status writes land here too). */
  #follow(tenant: Tenant): void {
    const phase = this.#wantedPhase(tenant);
    const work = this.#work.get(tenant.metadata.name);
    if (work !== undefined && work.phase === phase && (work.running !== null || work.timer !== undefined)) return;
    if (phase === 'idle' && work === undefined) return;
    this.#kick(tenant.metadata.name);
  }

  #kick(id: TenantId): void {
    if (this.#stopped) return;
    let work = this.#work.get(id);
    if (work === undefined) {
      work = { phase: 'idle', running: null, again: false, failures: 0, timer: undefined };
      this.#work.set(id, work);
    }
    if (work.running !== null) {
      work.again = true;
      return;
    }
    clearTimeout(work.timer);
    work.timer = undefined;
    const current = work;
    // (A step still waiting for its turn when the lifecycle stops does nothing.)
    current.running = this.#steps
      .execute(() => (this.#stopped ? Promise.resolve(null) : this.#step(id, current)))
      .then((delayMs) => {
        current.running = null;
        if (this.#stopped) return;
        if (current.again) {
          current.again = false;
          this.#kick(id);
        } else if (delayMs !== null) {
          current.timer = setTimeout(() => this.#kick(id), delayMs);
        } else if (this.#work.get(id) === current && current.phase === 'idle') {
          this.#work.delete(id);
        }
      });
  }

  /** One step of the tenant's bootstrap or cleanup; resolves to when to look again (null: done). Never rejects. */
  async #step(id: TenantId, work: TenantWork): Promise<number | null> {
    const tenant = this.#store.get(id);
    if (tenant === undefined) {
      work.phase = 'idle';
      this.#birthsWanted.delete(id);
      this.#settleBirth(id, serviceUnavailable('the tenant is gone'));
      return null;
    }
    work.phase = this.#wantedPhase(tenant);
    try {
      if (work.phase === 'cleanup') {
        this.#birthsWanted.delete(id);
        this.#settleBirth(id, serviceUnavailable('the tenant is being deleted'));
        const done = await this.#cleanup(id);
        work.failures = 0;
        if (done) this.#recordOperation?.('cleanup', true);
        return done ? null : this.#cleanupIntervalMs;
      }
      if (work.phase === 'ready') await this.#markReady(id);
      if (work.phase === 'bootstrap') {
        await this.#bootstrap(id);
        this.#recordOperation?.('bootstrap', true);
        this.#birthsWanted.delete(id);
      }
      // (Born here, or by another replica: the requests waiting go on.)
      if (isBorn(this.#store.get(id) ?? tenant)) this.#settleBirth(id);
      work.failures = 0;
      work.phase = 'idle';
      return null;
    } catch (error) {
      const message = (error as Error).message;
      log.warn('tenant lifecycle step failed', { tenant: id, phase: work.phase, error: message });
      if (work.phase === 'bootstrap' || work.phase === 'cleanup') this.#recordOperation?.(work.phase, false);
      if (work.phase === 'bootstrap') this.#settleBirth(id, birthFailed());
      // The reason and the upstream's words go to the Tenant's status, for its administrator.
      const condition: { type: string; status: 'True' | 'False'; reason: string } =
        work.phase === 'cleanup'
          ? { type: 'Terminating', status: 'True', reason: 'CleanupFailed' }
          : work.phase === 'bootstrap'
            ? { type: BIRTH_STATE_CONDITION, status: 'False', reason: 'BootstrapFailed' }
            : { type: 'Ready', status: 'False', reason: 'StatusWriteFailed' };
      await this.#writeStatus(id, (t) => setCondition(t, { ...condition, message: message.slice(0, 500) })).catch(
        () => {}, // the store is unavailable too: the retry will tell
      );
      const delay = Math.min(FIRST_BACKOFF_MS * 2 ** work.failures, this.#maxBackoffMs);
      work.failures++;
      return delay;
    }
  }

  /**
   * Ready (no upstream write) for a tenant stored without it: the Tenant API's create stores it Ready; a tenant of an
   * older version, or one whose status was written back, gets it here.
   */
  async #markReady(id: TenantId): Promise<void> {
    await this.#writeStatus(id, (tenant) => tenant.metadata.deletionTimestamp === undefined && markCreated(tenant));
  }

  async #bootstrap(id: TenantId): Promise<void> {
    await this.#sharedRbac.get();
    // What a cluster has at birth: its namespaces, the built-in roles and bindings, and Service default/kubernetes;
    // independent of each other, so made at once.
    const address = this.#clusterAddress;
    await Promise.all([
      bootstrapTenant(this.#pool, id),
      this.#builtinRoles.get().then((roles) => ensureTenantBuiltinRoles(this.#pool, id, roles)),
      ensureTenantBuiltinBindings(this.#pool, id),
      this.#mandatoryFlowControl.get().then((mandatory) => ensureTenantFlowControlDefaults(this.#pool, id, mandatory)),
    ]);
    const namespaceCreated = this.#namespaceCreated;
    await Promise.all([
      // (In the tenant's namespace `default`, made above.)
      address === undefined ? undefined : ensureKubernetesService(this.#pool, id, address),
      namespaceCreated === undefined ? undefined : Promise.all(BUILTIN_NAMESPACES.map((namespace) => namespaceCreated(id, toUpstreamName(namespace, id)))),
    ]);
    await this.#writeStatus(id, (tenant) => {
      if (tenant.metadata.deletionTimestamp !== undefined) return false;
      return setCondition(tenant, {
        type: BIRTH_STATE_CONDITION,
        status: 'True',
        reason: 'Bootstrapped',
        message: 'built-in namespaces, RBAC and Service default/kubernetes are in place upstream',
      });
    });
  }

  /** One cleanup pass; true once the Tenant is removed (or already was). */
  async #cleanup(id: TenantId): Promise<boolean> {
    const progress = await deleteTenantObjects(this.#pool, this.#discovery, id);
    if (!cleanupDone(progress)) {
      await this.#writeStatus(id, (tenant) => {
        let changed = setCondition(tenant, { type: 'Terminating', status: 'True', reason: 'DeletingUpstreamObjects', message: progressMessage(progress) });
        changed = setCondition(tenant, { type: 'Ready', status: 'False', reason: 'Terminating', message: 'the tenant is being deleted' }) || changed;
        if (tenant.status!.online !== false) {
          tenant.status!.online = false;
          changed = true;
        }
        return changed;
      });
      return false;
    }
    // Nothing is left upstream: the Tenant goes last, first its finalizer, then the object.
    const final = await this.#writeStatus(id, (tenant) => {
      const finalizers = tenant.metadata.finalizers ?? [];
      const changed = setCondition(tenant, {
        type: 'Terminating',
        status: 'True',
        reason: 'UpstreamObjectsRemoved',
        message: 'no upstream objects of the tenant remain',
      });
      if (!finalizers.includes(TENANT_CLEANUP_FINALIZER)) return changed;
      tenant.metadata.finalizers = finalizers.filter((finalizer) => finalizer !== TENANT_CLEANUP_FINALIZER);
      return true;
    });
    if (final === undefined) return true;
    try {
      await this.#store.remove(id, final.metadata.resourceVersion);
    } catch (error) {
      if (error instanceof TenantMissing) return true; // another replica was first
      throw error;
    }
    log.info('tenant deleted', { tenant: id });
    return true;
  }

  /**
   * Applies `mutate` to the stored tenant and writes it when it says something changed, re-reading on conflict
   * (another replica, or the Tenant API, wrote first). Resolves to the tenant as stored, undefined when it is gone.
   */
  #writeStatus(id: TenantId, mutate: (tenant: Tenant) => boolean): Promise<Tenant | undefined> {
    return writeTenantStatus(this.#store, id, mutate);
  }

  // ---- the upstream's side: put back what active tenants lack ----

  #watchUpstream(): void {
    const onError = (error: Error) => log.debug('tenant lifecycle watch', { error: error.message });
    const onResync = () => this.#markDirty('all');
    const watch = (path: string, onEvent: (event: WatchEvent) => void) => this.#stoppers.push(watchUpstream(this.#pool, path, { onEvent, onResync, onError }));
    const byLabel = `labelSelector=${encodeURIComponent(TENANT_LABEL)}`;

    // New namespaces need their RoleBinding; deleted ones may be built-in ones to put back.
    watch(`/api/v1/namespaces?${byLabel}`, (event) => {
      if (event.type !== 'MODIFIED') this.#markDirty(event.object.metadata.labels?.[TENANT_LABEL]);
    });
    watch(`${RBAC}/rolebindings?fieldSelector=${encodeURIComponent(`metadata.name=${TENANT_ADMIN_BINDING}`)}`, (event) => {
      if (event.type === 'DELETED') this.#markDirty(event.object.metadata.labels?.[TENANT_LABEL] ?? tenantOfUpstreamName(event.object.metadata.namespace));
    });
    // Bootstrap bindings deleted; a tenant's own ClusterRoleBindings in any change (their expansions follow them).
    watch(`${STORED_CLUSTER_BINDINGS}?${byLabel}`, (event) => {
      const id = event.object.metadata.labels?.[TENANT_LABEL];
      if (event.type === 'DELETED' || (id !== undefined && event.object.metadata.name.startsWith(id + '-'))) this.#markDirty(id);
    });
    // A tenant's own roles that the shared role aggregates (its custom resources', its signers'), deleted or changed.
    watch(`${RBAC}/clusterroles?labelSelector=${encodeURIComponent(AGGREGATE_TO_TENANTS_LABEL)}`, (event) => {
      const id = event.object.metadata.labels?.[TENANTGATE_OWNED_LABEL];
      if (event.type === 'ADDED' || id === undefined || !isTenantId(id)) return;
      // A signers role is made on first need (the tenant's first CSR) and kept from then on; the reconcile makes the other.
      if (event.object.metadata.name === tenantSignersName(id)) {
        if (event.type === 'DELETED' || differs(event.object, tenantSignersRole(id))) this.#keepSigners(id);
      } else this.#markDirty(id);
    });
    // A tenant's real ClusterRoleBinding (an older tenantgate's, or one made upstream in that form): moved to the stored form.
    watch(`${REAL_CLUSTER_BINDINGS}?${byLabel}`, (event) => {
      const id = event.object.metadata.labels?.[TENANT_LABEL];
      if (event.type !== 'DELETED' && id !== undefined && event.object.metadata.name.startsWith(id + '-')) this.#markDirty(id);
    });
    watch(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions?${byLabel}`, (event) => this.#markDirty(event.object.metadata.labels?.[TENANT_LABEL]));
    watch(`${RBAC}/rolebindings?labelSelector=${encodeURIComponent(EXPANSION_LABEL)}`, (event) => {
      if (event.type !== 'ADDED') this.#markDirty(event.object.metadata.labels?.[TENANT_LABEL]);
    });
    // A tenant's copies of the built-in roles, deleted or changed (the aggregation controller's changes included).
    watch(`${RBAC}/clusterroles?labelSelector=${encodeURIComponent(`${BOOTSTRAPPING_LABEL},${TENANT_LABEL}`)}`, (event) => {
      if (event.type !== 'ADDED') this.#markDirty(event.object.metadata.labels?.[TENANT_LABEL]);
    });
    // Service default/kubernetes deleted; its EndpointSlice deleted or changed (pointed elsewhere).
    const kubernetesByName = `fieldSelector=${encodeURIComponent(`metadata.name=${KUBERNETES_SERVICE}`)}&${byLabel}`;
    watch(`/api/v1/services?${kubernetesByName}`, (event) => {
      if (event.type === 'DELETED') this.#markDirty(tenantOfUpstreamName(event.object.metadata.namespace));
    });
    watch(`/apis/discovery.k8s.io/v1/endpointslices?${kubernetesByName}`, (event) => {
      if (event.type !== 'ADDED') this.#markDirty(tenantOfUpstreamName(event.object.metadata.namespace));
    });
    // The shared RBAC deleted, or changed by anyone (an older tenantgate's wider rules): made again.
    const sharedByName = new Map(SHARED_TENANT_RBAC.map((shared) => [`${shared.collection}/${shared.object.metadata.name}`, shared.object]));
    for (const collection of [`${RBAC}/clusterroles`, `${RBAC}/clusterrolebindings`]) {
      watch(`${collection}?labelSelector=${encodeURIComponent(SHARED_TENANT_RBAC_LABEL)}`, (event) => {
        const wanted = sharedByName.get(`${collection}/${event.object.metadata.name}`);
        if (wanted !== undefined && (event.type === 'DELETED' || differs(event.object, wanted))) this.#repairSharedRbac();
      });
    }
  }

  #keepSigners(id: TenantId): void {
    const tenant = this.#store.get(id);
    if (this.#stopped || tenant === undefined || tenant.metadata.deletionTimestamp !== undefined) return;
    ensureTenantSigners(this.#pool, id).then(
      () => log.info('tenant reconcile restored', { tenant: id, what: `clusterrole ${tenantSignersName(id)}` }),
      (error: Error) => log.warn('tenant reconcile could not restore', { tenant: id, what: `clusterrole ${tenantSignersName(id)}`, error: error.message }),
    );
  }

  #markDirty(id: TenantId | 'all' | undefined): void {
    if (this.#stopped || id === undefined) return;
    if (id === 'all') this.#dirtyAll = true;
    else if (isTenantId(id)) this.#dirty.add(id);
    else return;
    if (this.#flushTimer === undefined && this.#reconciling === null) {
      this.#flushTimer = setTimeout(() => this.#flush(), RECONCILE_DEBOUNCE_MS);
    }
  }

  #flush(): void {
    this.#flushTimer = undefined;
    if (this.#stopped) return;
    const all = this.#dirtyAll || this.#dirty.size > MAX_SELECTOR_TENANTS;
    const ids = [...this.#dirty];
    this.#dirtyAll = false;
    this.#dirty.clear();
    this.#reconciling = this.#reconcile(all ? 'all' : ids)
      .catch((error: Error) => {
        log.warn('tenant reconcile failed', { error: error.message });
        // Try again on the next change or resync; mark everything so nothing is forgotten.
        this.#dirtyAll = true;
      })
      .finally(() => {
        this.#reconciling = null;
        if (this.#stopped || (!this.#dirtyAll && this.#dirty.size === 0)) return;
        this.#flushTimer = setTimeout(() => this.#flush(), this.#dirtyAll && this.#dirty.size === 0 ? this.#cleanupIntervalMs : RECONCILE_DEBOUNCE_MS);
      });
  }

  /**
   * Re-creates what active tenants lack upstream: the shared ClusterRole, each tenant's ClusterRoleBindings, its
   * built-in namespaces, the admin RoleBinding in every namespace labelled as its own, and there the expansion of
   * each of its ClusterRoleBindings (removing expansions whose binding is gone). Also migrates what an older
   * tenantgate made: a wider shared ClusterRole, tenant ClusterRoleBindings with real subjects. A namespace being deleted
   * is left to finish; a built-in one comes back once it is gone (its watch's DELETED event brings us here again).
   */
  async #reconcile(which: TenantId[] | 'all'): Promise<void> {
    // (A tenant not born yet has nothing upstream to keep: its first request writes it all.)
    const tenants = (which === 'all' ? this.#store.list() : which.map((id) => this.#store.get(id)).filter((t) => t !== undefined)).filter(
      (tenant) => tenant.metadata.deletionTimestamp === undefined && isBorn(tenant),
    );
    if (tenants.length === 0) return;
    const ids = tenants.map((tenant) => tenant.metadata.name);
    const selector = which === 'all' ? TENANT_LABEL : `${TENANT_LABEL} in (${ids.join(',')})`;
    const bySelector = `labelSelector=${encodeURIComponent(selector)}`;
    const repairs: Promise<void>[] = [];
    // `done` says what the log reports: `restored` only for what was there and was deleted or changed (the birth
    // state of a born tenant); what follows the tenant's own objects is `created`, `updated` or `removed`.
    const repair = (what: string, id: TenantId, action: () => Promise<void>, done: ReconcileAction = 'restored') =>
      repairs.push(
        action().then(
          () => log.info(`tenant reconcile ${done}`, { tenant: id, what }),
          (error: Error) => log.warn('tenant reconcile could not write', { tenant: id, what, would: done, error: error.message }),
        ),
      );

    // Missing, or as an older tenantgate wrote it (wider): the shared RBAC is applied again before anything relies on it
    // (looked at anew on a full pass, the safety net behind the watches).
    if (which === 'all') this.#sharedRbac.forget();
    await this.#sharedRbac.get();

    // A tenant's real ClusterRoleBindings (an older tenantgate's) move to the stored form first: copied, then deleted.
    const realBindings = (await listUpstream(this.#pool, `${REAL_CLUSTER_BINDINGS}?${bySelector}`)) as ClusterRoleBinding[];
    const migrating = realBindings.filter((binding) => ids.some((id) => isTenantClusterBinding(binding, id)));
    await Promise.all(migrating.map((binding) => migrateClusterBinding(this.#pool, binding)));
    if (migrating.length > 0) log.info('tenant clusterrolebindings moved to the stored form', { count: migrating.length });
    const clusterBindings = (await listUpstream(this.#pool, `${STORED_CLUSTER_BINDINGS}?${bySelector}`)) as ClusterRoleBinding[];
    const ownSelector = `labelSelector=${encodeURIComponent(which === 'all' ? TENANTGATE_OWNED_LABEL : `${TENANTGATE_OWNED_LABEL} in (${ids.join(',')})`)}`;
    const ownBindings = await listUpstream(this.#pool, `${RBAC}/clusterrolebindings?${ownSelector}`);
    // tenantgate's own bindings of a tenant: as this tenantgate labels them, or an older one did (the tenant label).
    const bindings = new Set([...realBindings, ...ownBindings].map((item) => item.metadata.name));
    const tenantBindings = new Map<TenantId, ClusterRoleBinding[]>();
    const clusterBindingsByName = new Map(clusterBindings.map((item) => [item.metadata.name, item]));
    for (const id of ids) {
      for (const builtin of builtinBindingsOf(id)) {
        const wanted = tenantBuiltinBinding(id, builtin);
        const current = clusterBindingsByName.get(wanted.metadata.name);
        if (current === undefined || differs(current, wanted))
          repair(`clusterrolebinding ${wanted.metadata.name}`, id, () => ensureTenantBuiltinBinding(this.#pool, id, builtin));
      }
      const builtinBindings = builtinBindingNamesOf(id);
      const legacy = legacyTenantBindingsOf(id).filter((name) => bindings.has(name));
      // (After the grace the next full pass, every resync interval, removes them.)
      const graceOver = Date.now() - this.#startedAt >= this.#legacyBindingsGraceMs;
      if (legacy.length > 0 && graceOver)
        repair(`clusterrolebindings ${legacy.join(', ')} by the shared ones`, id, () => this.#replaceLegacyBindings(id, legacy), 'replaced');
      const mine: ClusterRoleBinding[] = [];
      for (const binding of clusterBindings) {
        // The built-in bindings grant only discovery and self-reviews, nothing a RoleBinding could: never expanded.
        if (!isTenantClusterBinding(binding, id) || builtinBindings.has(binding.metadata.name)) continue;
        // Stored with real subjects (written upstream by hand): rewritten to shadow subjects, as the rule writes them.
        const migrated = migratedSubjects(binding);
        if (migrated !== null) {
          binding.subjects = migrated;
          const path = `${STORED_CLUSTER_BINDINGS}/${encodeURIComponent(binding.metadata.name)}`;
          repair(
            `clusterrolebinding ${binding.metadata.name} subjects`,
            id,
            async () => {
              const updated = await upstreamJson(this.#pool, 'PUT', path, binding);
              if (updated.status !== 200) throw new Error(`updating ${path} answered ${updated.status}`);
            },
            'updated',
          );
        }
        mine.push(binding);
      }
      tenantBindings.set(id, mine);
    }
    // The tenant's copies of the built-in roles, as the upstream's own are.
    const builtinRoles = await this.#builtinRoles.get();
    const copies = new Map(
      (await listUpstream(this.#pool, `${RBAC}/clusterroles?labelSelector=${encodeURIComponent(`${BOOTSTRAPPING_LABEL},${selector}`)}`)).map((item) => [
        item.metadata.name,
        item,
      ]),
    );
    for (const id of ids) {
      const missing = builtinRoles.filter((role) => {
        const current = copies.get(toUpstreamName(role.metadata.name, id));
        return current === undefined || differs(current, tenantBuiltinRole(id, role));
      });
      if (missing.length > 0)
        repair(`built-in clusterroles ${missing.map((role) => role.metadata.name).join(', ')}`, id, () => ensureTenantBuiltinRoles(this.#pool, id, missing));
    }
    if (this.#clusterAddress !== undefined) {
      const address = this.#clusterAddress;
      for (const id of await kubernetesServicesAmiss(this.#pool, address, ids, bySelector)) {
        repair(`service ${toUpstreamName('default', id)}/${KUBERNETES_SERVICE}`, id, () => ensureKubernetesService(this.#pool, id, address));
      }
    }
    // The admin's rights on the tenant's cluster-scoped custom resources follow its CRDs.
    const crds = await listUpstream(this.#pool, `/apis/apiextensions.k8s.io/v1/customresourcedefinitions?${bySelector}`);
    const customRoles = new Map(
      (await listUpstream(this.#pool, `${RBAC}/clusterroles?labelSelector=${encodeURIComponent(CUSTOM_RESOURCES_ROLE_LABEL)}`)).map((item) => [
        item.metadata.name,
        item,
      ]),
    );
    for (const id of ids) {
      const mine = crds.filter((crd) => crd.metadata.labels?.[TENANT_LABEL] === id) as CustomResourceDefinition[];
      const wanted = tenantCustomResourcesRole(id, mine);
      const current = customRoles.get(wanted.metadata.name);
      // A tenant without cluster-scoped custom resources keeps no such role (an older tenantgate made it empty).
      if (wanted.rules.length === 0 ? current !== undefined : current === undefined || differs(current, wanted)) {
        const done = current === undefined ? 'created' : wanted.rules.length === 0 ? 'removed' : 'updated';
        repair(`clusterrole ${wanted.metadata.name}`, id, () => ensureTenantCustomResources(this.#pool, id, mine), done);
      }
    }
    const expansionSelector = `labelSelector=${encodeURIComponent(which === 'all' ? `${EXPANSION_LABEL},${TENANT_LABEL}` : `${EXPANSION_LABEL},${selector}`)}`;
    const expansions = new Map<string, UpstreamItem>();
    for (const item of await listUpstream(this.#pool, `${RBAC}/rolebindings?${expansionSelector}`)) {
      if (isExpansionName(item.metadata.name)) expansions.set(`${item.metadata.namespace}/${item.metadata.name}`, item);
    }

    const namespaces = await listUpstream(this.#pool, `/api/v1/namespaces?${bySelector}`);
    const adminBindings = `fieldSelector=${encodeURIComponent(`metadata.name=${TENANT_ADMIN_BINDING}`)}${which === 'all' ? '' : '&' + bySelector}`;
    const granted = new Set((await listUpstream(this.#pool, `${RBAC}/rolebindings?${adminBindings}`)).map((item) => item.metadata.namespace));
    const namespacesOf = new Map<TenantId, typeof namespaces>();
    for (const namespace of namespaces) {
      const id = namespace.metadata.labels?.[TENANT_LABEL];
      // A label is not enough: only a namespace under the tenant's own prefix is the tenant's.
      if (id === undefined || tenantOfUpstreamName(namespace.metadata.name) !== id) continue;
      const list = namespacesOf.get(id) ?? [];
      list.push(namespace);
      namespacesOf.set(id, list);
    }
    for (const id of ids) {
      const mine = namespacesOf.get(id) ?? [];
      const present = new Set(mine.map((namespace) => namespace.metadata.name));
      for (const builtin of BUILTIN_NAMESPACES) {
        const name = toUpstreamName(builtin, id);
        if (!present.has(name)) repair(`namespace ${name}`, id, () => ensureTenantNamespace(this.#pool, id, name));
      }
      for (const namespace of mine) {
        const terminating = namespace.metadata.deletionTimestamp !== undefined || namespace.status?.phase === 'Terminating';
        const name = namespace.metadata.name;
        if (terminating) {
          // Its expansions go with it: not ours to delete.
          for (const binding of tenantBindings.get(id) ?? []) expansions.delete(`${name}/${expansionName(binding.metadata.name)}`);
          continue;
        }
        // A namespace the tenant just made gets its first grant; an older one lost it (deleted by someone).
        const isNew = Date.now() - Date.parse(namespace.metadata.creationTimestamp ?? '') < NEW_NAMESPACE_MS;
        if (!granted.has(name))
          repair(`rolebinding ${name}/${TENANT_ADMIN_BINDING}`, id, () => grantTenantNamespace(this.#pool, id, name), isNew ? 'created' : 'restored');
        // Each of the tenant's ClusterRoleBindings, as a RoleBinding in this namespace for its real subjects.
        for (const binding of tenantBindings.get(id) ?? []) {
          const wanted = expansionOf(binding, name, id);
          const key = `${name}/${wanted.metadata.name}`;
          const current = expansions.get(key);
          expansions.delete(key);
          if (current === undefined || differs(current, wanted))
            repair(
              `rolebinding ${key}`,
              id,
              () => ensure(this.#pool, `${RBAC}/namespaces/${name}/rolebindings`, wanted),
              current === undefined ? 'created' : 'updated',
            );
        }
      }
    }
    // Expansions of ClusterRoleBindings that are gone (only of the tenants looked at: the selector named them), once
    // the new ones are in: a binding whose stored name differs from its real one (migrated) never lacks one.
    await Promise.all(repairs.splice(0));
    for (const [key, item] of expansions) {
      const id = item.metadata.labels?.[TENANT_LABEL];
      if (id === undefined || !ids.includes(id)) continue;
      const path = `${RBAC}/namespaces/${item.metadata.namespace}/rolebindings/${encodeURIComponent(item.metadata.name)}`;
      repair(
        `rolebinding ${key}`,
        id,
        async () => {
          const deleted = await upstreamJson(this.#pool, 'DELETE', path);
          if (deleted.status !== 200 && deleted.status !== 404) throw new Error(`deleting ${path} answered ${deleted.status}`);
        },
        'removed',
      );
    }
    await Promise.all(repairs);
  }

  /**
   * Removes the ClusterRoleBindings an older tenantgate kept for the tenant once what replaces them is in force: the
   * shared bindings (made before any reconcile), and the tenant's signers and custom-resources roles as the shared role
   * aggregates them (in force upstream, as the upstream's own review says). No moment without a right.
   */
  async #replaceLegacyBindings(id: TenantId, legacy: readonly string[]): Promise<void> {
    if (legacy.includes(tenantSignersName(id))) await ensureTenantSigners(this.#pool, id);
    if (legacy.includes(tenantCustomResourcesName(id))) {
      const crds = (await listUpstream(
        this.#pool,
        `/apis/apiextensions.k8s.io/v1/customresourcedefinitions?labelSelector=${encodeURIComponent(`${TENANT_LABEL}=${id}`)}`,
      )) as CustomResourceDefinition[];
      await syncTenantCustomResources(this.#pool, id, crds.find((crd) => crd.spec?.scope === 'Cluster') ?? {});
    }
    for (const name of legacy) {
      const path = `${RBAC}/clusterrolebindings/${encodeURIComponent(name)}`;
      const deleted = await upstreamJson(this.#pool, 'DELETE', path);
      if (deleted.status !== 200 && deleted.status !== 404) throw new Error(`deleting ${path} answered ${deleted.status}`);
    }
  }
}

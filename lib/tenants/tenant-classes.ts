// The platform's classes a tenant may use (Tenant spec.priorityClasses, runtimeClasses, storageClasses, ingressClasses,
// deviceClasses: names and a label selector). Resolved against the classes the upstream has (one watch per class kind,
// whatever the number of tenants) and written on each of the tenant's namespaces as one annotation per restricted kind,
// `tenantgate.kubezoo.io/allowed-<resource>: a,b`, which the shared admission policy (class-policy.ts) reads: a pod,
// PVC, Ingress or ResourceClaim naming another class is refused upstream, whoever creates it. The tenant's views of
// the class kinds show only what it may use. A tenant with nothing set carries no annotation: the platform's classes
// are all its own to use but the two critical priority classes. A default (spec.<kind>Classes.default) is what its
// objects get when they name none (rules/class-defaults.ts). Never writes anything for a tenant with nothing restricted.
import { TENANT_LABEL, toTenantName, type TenantId } from '../convert/prefix.ts';
import { HIGHEST_USER_DEFINABLE_PRIORITY, PLATFORM_CRITICAL_PRIORITY_CLASSES } from '../convert/rules/platform-classes.ts';
import { INT32_MIN, TENANT_GLOBAL_DEFAULT_ANNOTATION, type PriorityBand } from '../convert/rules/priority-classes.ts';
import { labelsMatch, type LabelRequirement } from '../convert/selectors.ts';
import { log } from '../log.ts';
import { upstreamJson } from '../upstream/client.ts';
import { listUpstream, watchUpstream, type UpstreamItem } from '../upstream/own-watch.ts';
import type { UpstreamPool } from '../upstream/pool.ts';
import { PLATFORM_CLASS_FIELDS, type ClassAllowance, type LabelSelector, type PlatformClassField, type Tenant, type TenantStore } from './tenant.ts';

const ANNOTATION_PREFIX = 'tenantgate.kubezoo.io/allowed-';

/** The namespace annotation listing the classes of `resource` (e.g. priorityclasses) the tenant may use. */
export function allowedClassesAnnotation(resource: string): string {
  return `${ANNOTATION_PREFIX}${resource}`;
}

/** Every such annotation: only tenantgate writes them (the confinement policy refuses a tenant's change of one). */
export const ALLOWED_CLASSES_ANNOTATIONS: readonly string[] = Object.values(PLATFORM_CLASS_FIELDS).map((kind) => allowedClassesAnnotation(kind.resource));

/**
 * The namespace annotation with the values (`min,max`) a tenant's own PriorityClasses may give its pods, which the
 * shared priority policy (priority-policy.ts) reads. Written where it bounds more than the apiserver's own 1e9 ceiling.
 */
export const PRIORITY_BAND_ANNOTATION = 'tenantgate.kubezoo.io/priority-band';

/** The annotations of a tenant's namespaces that only tenantgate writes (the confinement policy refuses a tenant's change of one). */
export const TENANTGATE_NAMESPACE_ANNOTATIONS: readonly string[] = [...ALLOWED_CLASSES_ANNOTATIONS, PRIORITY_BAND_ANNOTATION];

const FIELD_OF_RESOURCE: ReadonlyMap<string, PlatformClassField> = new Map(
  Object.entries(PLATFORM_CLASS_FIELDS).map(([field, kind]) => [kind.resource, field as PlatformClassField]),
);

function requirementsOf(selector: LabelSelector): LabelRequirement[] {
  const requirements: LabelRequirement[] = Object.entries(selector.matchLabels ?? {}).map(([key, value]) => ({ key, operator: '=', values: [value] }));
  for (const expression of selector.matchExpressions ?? []) {
    const operator = ({ In: 'in', NotIn: 'notin', Exists: 'exists', DoesNotExist: '!' } as const)[expression.operator];
    requirements.push({ key: expression.key, operator, values: expression.values ?? [] });
  }
  return requirements;
}

/**
 * The names an allowance admits among `classes` (name → labels): those it lists and its default, even before they
 * exist, and those its selector matches. An allowance restricts the kind to these (`selector: {}` matches every class).
 */
export function allowedNames(allowance: ClassAllowance, classes: ReadonlyMap<string, Record<string, string>>): Set<string> {
  const names = new Set(allowance.allowed ?? []);
  if (allowance.default !== undefined) names.add(allowance.default);
  if (allowance.selector !== undefined) {
    const requirements = requirementsOf(allowance.selector);
    for (const [name, labels] of classes) if (labelsMatch(requirements, labels)) names.add(name);
  }
  return names;
}

/** The allowance as a restriction of the platform's classes: none when it names no class (a band alone restricts nothing). */
function restrictionOf(allowance: ClassAllowance | undefined): ClassAllowance | undefined {
  return allowance?.allowed === undefined && allowance?.selector === undefined && allowance?.default === undefined ? undefined : allowance;
}

/**
 * The values a tenant's own PriorityClasses may take: its Tenant's band, whose unset ends are the lowest int32 and just
 * below the lowest platform class it may not use (`values`: the platform's classes' values), at most 1e9.
 */
export function priorityBandOf(tenant: Tenant, values: ReadonlyMap<string, number>, allows: (name: string) => boolean): PriorityBand {
  const band = tenant.spec.priorityClasses?.band;
  let max = band?.max;
  if (max === undefined) {
    max = HIGHEST_USER_DEFINABLE_PRIORITY;
    for (const [name, value] of values) if (!allows(name) && value <= max) max = value - 1;
  }
  return { min: band?.min ?? INT32_MIN, max };
}

/**
 * Each restricted kind's annotation value (sorted names, comma-joined), null for a kind the tenant does not restrict;
 * the priority band where the tenant's Tenant restricts priority classes or sets a band.
 */
export function classAnnotationsOf(
  tenant: Tenant,
  classes: ReadonlyMap<string, ReadonlyMap<string, Record<string, string>>>,
  priorityValues: ReadonlyMap<string, number> = new Map(),
): Record<string, string | null> {
  const annotations: Record<string, string | null> = {};
  for (const [field, kind] of Object.entries(PLATFORM_CLASS_FIELDS) as [PlatformClassField, (typeof PLATFORM_CLASS_FIELDS)[PlatformClassField]][]) {
    const allowance = restrictionOf(tenant.spec[field]);
    annotations[allowedClassesAnnotation(kind.resource)] =
      allowance === undefined ? null : [...allowedNames(allowance, classes.get(kind.resource) ?? new Map())].sort().join(',');
  }
  if (tenant.spec.priorityClasses === undefined) annotations[PRIORITY_BAND_ANNOTATION] = null;
  else {
    const restriction = restrictionOf(tenant.spec.priorityClasses);
    const allowed = restriction === undefined ? null : allowedNames(restriction, classes.get('priorityclasses') ?? new Map());
    const band = priorityBandOf(tenant, priorityValues, (name) => (allowed === null ? !PLATFORM_CRITICAL_PRIORITY_CLASSES.has(name) : allowed.has(name)));
    annotations[PRIORITY_BAND_ANNOTATION] = `${band.min},${band.max}`;
  }
  return annotations;
}

function restricts(tenant: Tenant): boolean {
  return Object.keys(PLATFORM_CLASS_FIELDS).some((field) => tenant.spec[field as PlatformClassField] !== undefined);
}

/** A tenant's own PriorityClass, as TenantClasses knows it. */
interface OwnPriorityClass {
  readonly value: number;
  readonly globalDefault: boolean;
}

const RESYNC_MS = 30_000;
const CLASSES_CHANGED_DEBOUNCE_MS = 200;

export class TenantClasses {
  readonly #store: TenantStore;
  readonly #pool: UpstreamPool;
  /** resource → the platform's class name → labels, as the upstream has them (tenants' own PriorityClasses apart). */
  readonly #classes = new Map<string, Map<string, Record<string, string>>>();
  /** The platform's PriorityClasses' values, by name. */
  readonly #priorityValues = new Map<string, number>();
  /** Each tenant's own PriorityClasses, by its name for them. */
  readonly #ownPriorityClasses = new Map<TenantId, Map<string, OwnPriorityClass>>();
  /** Class kinds whose whole collection has been read since the watch (re)started. */
  readonly #synced = new Set<string>();
  /** Tenants whose namespaces carry annotations: to take away once nothing is restricted. */
  readonly #written = new Set<TenantId>();
  readonly #running = new Map<TenantId, Promise<void>>();
  readonly #stoppers: (() => void)[] = [];
  #resyncTimer: NodeJS.Timeout | undefined;
  #classesTimer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(options: { store: TenantStore; pool: UpstreamPool }) {
    this.#store = options.store;
    this.#pool = options.pool;
  }

  /**
   * Whether the tenant may use the class: the names its Tenant allows (those listed and those its selector matches),
   * or without a restriction of that kind, any class but the two critical priority classes.
   */
  allows(id: TenantId, resource: string, name: string): boolean {
    const field = FIELD_OF_RESOURCE.get(resource);
    const allowance = field === undefined ? undefined : restrictionOf(this.#store.get(id)?.spec[field]);
    if (allowance === undefined) return resource !== 'priorityclasses' || !PLATFORM_CRITICAL_PRIORITY_CLASSES.has(name);
    return allowedNames(allowance, this.#classes.get(resource) ?? new Map()).has(name);
  }

  /**
   * The class of `resource` the tenant's objects get when they name none, or undefined: for priority classes its own
   * class marked globalDefault (the highest, as the apiserver picks), else its Tenant's default.
   */
  defaultOf(id: TenantId, resource: string): string | undefined {
    if (resource === 'priorityclasses') {
      let own: [string, OwnPriorityClass] | undefined;
      for (const entry of this.#ownPriorityClasses.get(id) ?? [])
        if (entry[1].globalDefault && (own === undefined || entry[1].value > own[1].value)) own = entry;
      if (own !== undefined) return own[0];
    }
    const field = FIELD_OF_RESOURCE.get(resource);
    return field === undefined ? undefined : this.#store.get(id)?.spec[field]?.default;
  }

  /**
   * Whether `name` means the platform's PriorityClass to the tenant (else its own: rules/priority-classes.ts): one the
   * platform has that the tenant may use, or may not use but has no class of its own of that name (so a pod naming it
   * is refused as before). Until the classes are read (moments after start), every name is the platform's.
   */
  isPlatformPriorityClass(id: TenantId, name: string): boolean {
    if (!this.#synced.has('priorityclasses')) return true;
    if (!this.#classes.get('priorityclasses')!.has(name)) return false;
    return this.allows(id, 'priorityclasses', name) || this.#ownPriorityClasses.get(id)?.has(name) !== true;
  }

  /** The values the tenant's own PriorityClasses may take. */
  priorityBandOf(id: TenantId): PriorityBand {
    const tenant = this.#store.get(id);
    if (tenant === undefined) return { min: INT32_MIN, max: HIGHEST_USER_DEFINABLE_PRIORITY };
    return priorityBandOf(tenant, this.#priorityValues, (name) => this.allows(id, 'priorityclasses', name));
  }

  /** An upstream class's event or listed state: the platform's, or (PriorityClasses) a tenant's own. */
  #classSeen(resource: string, object: UpstreamItem, deleted: boolean): void {
    const { name } = object.metadata;
    const labels = (object.metadata.labels ?? {}) as Record<string, string>;
    const owner = resource === 'priorityclasses' ? labels[TENANT_LABEL] : undefined;
    if (owner !== undefined) {
      const mine = toTenantName(name, owner);
      if (mine === null) return;
      let own = this.#ownPriorityClasses.get(owner);
      if (deleted) {
        own?.delete(mine);
        if (own?.size === 0) this.#ownPriorityClasses.delete(owner);
        return;
      }
      if (own === undefined) this.#ownPriorityClasses.set(owner, (own = new Map()));
      const annotations = (object.metadata as { annotations?: Record<string, string> }).annotations;
      own.set(mine, { value: Number((object as { value?: unknown }).value ?? 0), globalDefault: annotations?.[TENANT_GLOBAL_DEFAULT_ANNOTATION] === 'true' });
      return;
    }
    const classes = this.#classes.get(resource)!;
    if (deleted) {
      classes.delete(name);
      if (resource === 'priorityclasses') this.#priorityValues.delete(name);
      return;
    }
    classes.set(name, labels);
    if (resource === 'priorityclasses') this.#priorityValues.set(name, Number((object as { value?: unknown }).value ?? 0));
  }

  /** Reads a class kind's whole collection: the watch starts from now, and classes made before would be missed. */
  async #readAll(resource: string, path: string): Promise<void> {
    const items = await listUpstream(this.#pool, path);
    this.#classes.get(resource)!.clear();
    if (resource === 'priorityclasses') {
      this.#priorityValues.clear();
      this.#ownPriorityClasses.clear();
    }
    for (const item of items) this.#classSeen(resource, item, false);
    this.#synced.add(resource);
    this.#classesChanged();
  }

  start(): void {
    const onError = (error: Error) => log.debug('tenant classes watch', { error: error.message });
    for (const { group, version, resource } of Object.values(PLATFORM_CLASS_FIELDS)) {
      this.#classes.set(resource, new Map());
      const path = `/apis/${group}/${version}/${resource}`;
      this.#stoppers.push(
        watchUpstream(this.#pool, path, {
          onEvent: (event) => {
            this.#classSeen(resource, event.object, event.type === 'DELETED');
            this.#classesChanged();
          },
          onResync: () => {
            this.#readAll(resource, path).catch(onError);
          },
          onError,
        }),
      );
    }
    this.#stoppers.push(
      this.#store.onChange((event) => {
        if (event.type !== 'DELETED' && (restricts(event.tenant) || this.#written.has(event.tenant.metadata.name))) void this.#sync(event.tenant.metadata.name);
      }),
      // A tenant's new namespace (made by the lifecycle, or by the tenant) takes its annotations.
      watchUpstream(this.#pool, `/api/v1/namespaces?labelSelector=${encodeURIComponent(TENANT_LABEL)}`, {
        onEvent: (event) => {
          const id = event.object.metadata.labels?.[TENANT_LABEL] as TenantId | undefined;
          const tenant = id === undefined ? undefined : this.#store.get(id);
          if (event.type === 'ADDED' && tenant !== undefined && restricts(tenant)) void this.#sync(id!);
        },
        onResync: () => this.#syncAll(),
        onError,
      }),
    );
    this.#resyncTimer = setInterval(() => this.#syncAll(), RESYNC_MS);
    this.#resyncTimer.unref();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    for (const stop of this.#stoppers.splice(0)) stop();
    clearInterval(this.#resyncTimer);
    clearTimeout(this.#classesTimer);
    await Promise.allSettled([...this.#running.values()]);
  }

  /** A tenant's namespace just created (before the create is answered): it carries the tenant's annotations. */
  async namespaceCreated(id: TenantId, upstreamNamespace: string): Promise<void> {
    const tenant = this.#store.get(id);
    if (tenant === undefined || !restricts(tenant)) return;
    await this.#annotate(upstreamNamespace, classAnnotationsOf(tenant, this.#classes, this.#priorityValues));
  }

  #classesChanged(): void {
    if (this.#stopped || this.#classesTimer !== undefined) return;
    this.#classesTimer = setTimeout(() => {
      this.#classesTimer = undefined;
      this.#syncAll();
    }, CLASSES_CHANGED_DEBOUNCE_MS);
  }

  #syncAll(): void {
    for (const tenant of this.#store.list()) if (restricts(tenant) || this.#written.has(tenant.metadata.name)) void this.#sync(tenant.metadata.name);
  }

  /** Writes the tenant's annotations on every namespace of its that lacks them; one sync per tenant at a time. */
  #sync(id: TenantId): Promise<void> {
    const previous = this.#running.get(id) ?? Promise.resolve();
    const next = previous
      .then(() => this.#syncOnce(id))
      .catch((error: Error) => log.warn('tenant classes sync failed', { tenant: id, error: error.message }))
      .finally(() => {
        if (this.#running.get(id) === next) this.#running.delete(id);
      });
    this.#running.set(id, next);
    return next;
  }

  async #syncOnce(id: TenantId): Promise<void> {
    if (this.#stopped) return;
    const tenant = this.#store.get(id);
    if (tenant === undefined || tenant.metadata.deletionTimestamp !== undefined) return;
    const wanted = classAnnotationsOf(tenant, this.#classes, this.#priorityValues);
    const namespaces = await listUpstream(this.#pool, `/api/v1/namespaces?labelSelector=${encodeURIComponent(`${TENANT_LABEL}=${id}`)}`);
    for (const namespace of namespaces) {
      if (namespace.metadata.deletionTimestamp !== undefined) continue;
      const current = (namespace.metadata as { annotations?: Record<string, string> }).annotations ?? {};
      if (Object.entries(wanted).some(([key, value]) => (current[key] ?? null) !== value)) await this.#annotate(namespace.metadata.name, wanted);
    }
    if (restricts(tenant)) this.#written.add(id);
    else this.#written.delete(id);
  }

  async #annotate(namespace: string, annotations: Record<string, string | null>): Promise<void> {
    const answer = await upstreamJson(
      this.#pool,
      'PATCH',
      `/api/v1/namespaces/${encodeURIComponent(namespace)}`,
      { metadata: { annotations } },
      { 'content-type': 'application/merge-patch+json' },
    );
    if (answer.status !== 200 && answer.status !== 404)
      throw new Error(`annotating namespace ${namespace} answered ${answer.status}: ${String(answer.body?.message ?? '').slice(0, 300)}`);
  }
}

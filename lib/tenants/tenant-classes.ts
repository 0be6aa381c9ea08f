// The platform's classes a tenant may use (Tenant spec.priorityClasses, runtimeClasses, storageClasses, ingressClasses,
// deviceClasses: names and a label selector). Resolved against the classes the upstream has (one watch per class kind,
// whatever the number of tenants) and written on each of the tenant's namespaces as one annotation per restricted kind,
// `tenantgate.kubezoo.io/allowed-<resource>: a,b`, which the shared admission policy (class-policy.ts) reads: a pod,
// PVC, Ingress or ResourceClaim naming another class is refused upstream, whoever creates it. The tenant's views of
// the class kinds show only what it may use. A tenant with nothing set carries no annotation: the platform's classes
// are all its own to use but the two critical priority classes. A default (spec.<kind>Classes.default) is what its
// objects get when they name none (rules/class-defaults.ts). Never writes anything for a tenant with nothing restricted.
import { TENANT_LABEL, type TenantId } from '../convert/prefix.ts';
import { PLATFORM_CRITICAL_PRIORITY_CLASSES } from '../convert/rules/platform-classes.ts';
import { labelsMatch, type LabelRequirement } from '../convert/selectors.ts';
import { log } from '../log.ts';
import { upstreamJson } from '../upstream/client.ts';
import { listUpstream, watchUpstream } from '../upstream/own-watch.ts';
import type { UpstreamPool } from '../upstream/pool.ts';
import { PLATFORM_CLASS_FIELDS, type ClassAllowance, type LabelSelector, type PlatformClassField, type Tenant, type TenantStore } from './tenant.ts';

const ANNOTATION_PREFIX = 'tenantgate.kubezoo.io/allowed-';

/** The namespace annotation listing the classes of `resource` (e.g. priorityclasses) the tenant may use. */
export function allowedClassesAnnotation(resource: string): string {
  return `${ANNOTATION_PREFIX}${resource}`;
}

/** Every such annotation: only tenantgate writes them (the confinement policy refuses a tenant's change of one). */
export const ALLOWED_CLASSES_ANNOTATIONS: readonly string[] = Object.values(PLATFORM_CLASS_FIELDS).map((kind) => allowedClassesAnnotation(kind.resource));

const FIELD_OF_RESOURCE: ReadonlyMap<string, PlatformClassField> = new Map(Object.entries(PLATFORM_CLASS_FIELDS).map(([field, kind]) => [kind.resource, field as PlatformClassField]));

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

/** Each restricted kind's annotation value (sorted names, comma-joined), null for a kind the tenant does not restrict. */
export function classAnnotationsOf(tenant: Tenant, classes: ReadonlyMap<string, ReadonlyMap<string, Record<string, string>>>): Record<string, string | null> {
  const annotations: Record<string, string | null> = {};
  for (const [field, kind] of Object.entries(PLATFORM_CLASS_FIELDS) as [PlatformClassField, (typeof PLATFORM_CLASS_FIELDS)[PlatformClassField]][]) {
    const allowance = tenant.spec[field];
    annotations[allowedClassesAnnotation(kind.resource)] = allowance === undefined ? null : [...allowedNames(allowance, classes.get(kind.resource) ?? new Map())].sort().join(',');
  }
  return annotations;
}

function restricts(tenant: Tenant): boolean {
  return Object.keys(PLATFORM_CLASS_FIELDS).some((field) => tenant.spec[field as PlatformClassField] !== undefined);
}

const RESYNC_MS = 30_000;
const CLASSES_CHANGED_DEBOUNCE_MS = 200;

export class TenantClasses {
  readonly #store: TenantStore;
  readonly #pool: UpstreamPool;
  /** resource → class name → labels, as the upstream has them. */
  readonly #classes = new Map<string, Map<string, Record<string, string>>>();
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
    const allowance = field === undefined ? undefined : this.#store.get(id)?.spec[field];
    if (allowance === undefined) return resource !== 'priorityclasses' || !PLATFORM_CRITICAL_PRIORITY_CLASSES.has(name);
    return allowedNames(allowance, this.#classes.get(resource) ?? new Map()).has(name);
  }

  /** The class of `resource` the tenant's objects get when they name none (its Tenant's default), or undefined. */
  defaultOf(id: TenantId, resource: string): string | undefined {
    const field = FIELD_OF_RESOURCE.get(resource);
    return field === undefined ? undefined : this.#store.get(id)?.spec[field]?.default;
  }

  start(): void {
    const onError = (error: Error) => log.debug('tenant classes watch', { error: error.message });
    for (const { group, version, resource } of Object.values(PLATFORM_CLASS_FIELDS)) {
      const classes = new Map<string, Record<string, string>>();
      this.#classes.set(resource, classes);
      this.#stoppers.push(
        watchUpstream(this.#pool, `/apis/${group}/${version}/${resource}`, {
          onEvent: (event) => {
            if (event.type === 'DELETED') classes.delete(event.object.metadata.name);
            else classes.set(event.object.metadata.name, event.object.metadata.labels ?? {});
            this.#classesChanged();
          },
          onResync: () => this.#classesChanged(),
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
    await this.#annotate(upstreamNamespace, classAnnotationsOf(tenant, this.#classes));
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
    const wanted = classAnnotationsOf(tenant, this.#classes);
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
    const answer = await upstreamJson(this.#pool, 'PATCH', `/api/v1/namespaces/${encodeURIComponent(namespace)}`, { metadata: { annotations } }, { 'content-type': 'application/merge-patch+json' });
    if (answer.status !== 200 && answer.status !== 404) throw new Error(`annotating namespace ${namespace} answered ${answer.status}: ${String(answer.body?.message ?? '').slice(0, 300)}`);
  }
}

// Which of the platform's priority classes a tenant's pods may take. Priority orders every tenant's pods against each
// other, so the platform's critical classes (above any class a user may define) are a tenant's only when its Tenant
// names them; other classes as its Tenant allows. A tenant's view marks its own default class as the default.
// Never allows a class the Tenant does not.
import { forbidden } from '../../errors/status-error.ts';

/** The apiserver's bound for a user-defined PriorityClass (HighestUserDefinablePriority): above it, only system classes. */
export const HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000;

/** The platform's critical classes: they preempt anything, the control plane's and nodes' own pods included. */
export const PLATFORM_CRITICAL_PRIORITY_CLASSES: ReadonlySet<string> = new Set(['system-node-critical', 'system-cluster-critical']);

/**
 * The 403 for a pod naming a priority class the tenant may not use (`allows`, its Tenant's allowed set; without it,
 * any class but the platform-critical ones); nothing for any other value (the apiserver judges the rest).
 */
export function refusePlatformPriorityClass(priorityClassName: unknown, allows?: (resource: string, name: string) => boolean): void {
  if (typeof priorityClassName !== 'string' || priorityClassName === '') return;
  const critical = PLATFORM_CRITICAL_PRIORITY_CLASSES.has(priorityClassName);
  if (allows?.('priorityclasses', priorityClassName) ?? !critical) return;
  const why = critical
    ? "is the platform's own: a tenant's pods may not take it (it would preempt every other tenant's)"
    : 'is not one of the priority classes this tenant may use';
  throw forbidden(`pods is forbidden: priority class ${JSON.stringify(priorityClassName)} ${why}`, { kind: 'pods' });
}

/** Whether a tenant's view leaves out this object of a platform class kind: a class its Tenant does not let it use. */
export function platformClassHidden(
  resource: string,
  object: { metadata?: { name?: unknown } },
  allows: ((resource: string, name: string) => boolean) | undefined,
): boolean {
  if (allows === undefined || !PLATFORM_CLASS_RESOURCES.has(resource)) return false;
  const name = object.metadata?.name;
  return typeof name === 'string' && !allows(resource, name);
}

/** The platform's class kinds a Tenant's spec restricts (tenants/tenant.ts PLATFORM_CLASS_FIELDS). */
export const PLATFORM_CLASS_RESOURCES: ReadonlySet<string> = new Set([
  'priorityclasses',
  'runtimeclasses',
  'storageclasses',
  'ingressclasses',
  'deviceclasses',
]);

/** Where each class kind marks its default (the annotation the apiserver's default-class admission reads). */
const DEFAULT_ANNOTATIONS: Readonly<Record<string, readonly string[]>> = {
  storageclasses: ['storageclass.kubernetes.io/is-default-class', 'storageclass.beta.kubernetes.io/is-default-class'],
  ingressclasses: ['ingressclass.kubernetes.io/is-default-class'],
};

/**
 * Whether the tenant's view of a platform class is its default: its Tenant's default class of the kind when it has one
 * (the one its objects get), else whatever the platform marked. Undefined for kinds without a default (runtime, device).
 */
export function isDefaultInView(
  resource: string,
  object: Record<string, unknown>,
  defaultClass: ((resource: string) => string | undefined) | undefined,
): boolean | undefined {
  const tenantDefault = defaultClass?.(resource);
  const name = (object.metadata as { name?: unknown } | undefined)?.name;
  if (resource === 'priorityclasses') return tenantDefault === undefined ? object.globalDefault === true : name === tenantDefault;
  const keys = DEFAULT_ANNOTATIONS[resource];
  if (keys === undefined) return undefined;
  if (tenantDefault !== undefined) return name === tenantDefault;
  const annotations = (object.metadata as { annotations?: Record<string, unknown> } | undefined)?.annotations;
  return keys.some((key) => annotations?.[key] === 'true');
}

/** Marks the tenant's default class (and no other) as the default in its view of a platform class, when its Tenant names one. */
export function markTenantDefault(
  resource: string,
  object: Record<string, unknown>,
  defaultClass: ((resource: string) => string | undefined) | undefined,
): void {
  if (defaultClass?.(resource) === undefined) return;
  const isDefault = isDefaultInView(resource, object, defaultClass);
  if (resource === 'priorityclasses') {
    if (isDefault) object.globalDefault = true;
    else delete object.globalDefault;
    return;
  }
  const keys = DEFAULT_ANNOTATIONS[resource];
  if (keys === undefined) return;
  const metadata = (object.metadata ??= {}) as { annotations?: Record<string, string> };
  const annotations = (metadata.annotations ??= {});
  for (const key of keys) delete annotations[key];
  if (isDefault) annotations[keys[0]!] = 'true';
  if (Object.keys(annotations).length === 0) delete metadata.annotations;
}

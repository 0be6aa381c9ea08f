// The Tenant object (tenant.kubezoo.io/v1alpha1, cluster-scoped, name = tenant id) and the store that keeps it.
// Shapes follow KubeZoo's Tenant (spec.id, spec.quota.hard, status.online) plus status.conditions.
import { TENANT_ID_PATTERN, type TenantId } from '../convert/prefix.ts';
import { RESERVED_TENANT_IDS } from '../convert/rules/identity.ts';

export const TENANT_GROUP = 'tenant.kubezoo.io';
export const TENANT_VERSION = 'v1alpha1';
export const TENANT_API_VERSION = `${TENANT_GROUP}/${TENANT_VERSION}`;
/** The Tenant API's collection, on tenantgate itself (administrators only). */
export const TENANTS_PATH = `/apis/${TENANT_API_VERSION}/tenants`;

/** Set with deletionTimestamp by the Tenant API; the lifecycle controller drops it once the tenant's upstream objects are gone. */
export const TENANT_CLEANUP_FINALIZER = 'tenant.kubezoo.io/cleanup';

/** Per-tenant inflight limit (issue 5); KubeZoo's older key is accepted too. */
export const MAX_INFLIGHT_ANNOTATIONS = ['tenant.kubezoo.io/max-requests-inflight', 'tce.kubezoo/max-requests-inflight'];

export interface TenantCondition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastTransitionTime: string;
}

export interface Tenant {
  apiVersion: typeof TENANT_API_VERSION;
  kind: 'Tenant';
  metadata: {
    name: TenantId;
    uid: string;
    resourceVersion: string;
    creationTimestamp: string;
    deletionTimestamp?: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
  };
  spec: {
    /** KubeZoo's numeric id; kept as given, never used to route. */
    id?: number;
    quota?: { hard?: Record<string, string> };
  } & { [field in PlatformClassField]?: ClassAllowance };
  status?: {
    online?: boolean;
    conditions?: TenantCondition[];
    /** spec.quota.hard and its use summed over the tenant's namespaces (tenant-quota.ts). */
    quota?: { hard: Record<string, string>; used: Record<string, string> };
  };
}

/** A label selector as Kubernetes writes one (metav1.LabelSelector). */
export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[] }[];
}

/**
 * The platform's classes of one kind a tenant may use: those named, those the selector matches, and the default, the
 * one its objects get when they name none.
 */
export interface ClassAllowance {
  allowed?: string[];
  selector?: LabelSelector;
  default?: string;
  /**
   * PriorityClasses only: the values the tenant's own classes may take, both ends included. Unset ends: the lowest
   * int32, and just below the lowest platform class the tenant may not use (at most 1,000,000,000).
   */
  band?: { min?: number; max?: number };
}

/** The Tenant spec field of each kind of platform class, and the class kind's collection. */
export const PLATFORM_CLASS_FIELDS = {
  priorityClasses: { group: 'scheduling.k8s.io', version: 'v1', resource: 'priorityclasses' },
  runtimeClasses: { group: 'node.k8s.io', version: 'v1', resource: 'runtimeclasses' },
  storageClasses: { group: 'storage.k8s.io', version: 'v1', resource: 'storageclasses' },
  ingressClasses: { group: 'networking.k8s.io', version: 'v1', resource: 'ingressclasses' },
  deviceClasses: { group: 'resource.k8s.io', version: 'v1', resource: 'deviceclasses' },
} as const;
export type PlatformClassField = keyof typeof PLATFORM_CLASS_FIELDS;

/** Why an id cannot be a tenant's, or null when it can. */
export function invalidTenantId(id: string): string | null {
  if (!TENANT_ID_PATTERN.test(id)) return `a tenant's name must be exactly 6 characters of [a-z0-9], got ${JSON.stringify(id)}`;
  if (RESERVED_TENANT_IDS.has(id))
    return `the tenant name ${JSON.stringify(id)} is reserved: Kubernetes gives users and groups named ${id}:* powers of its own`;
  return null;
}

/** A change seen by a store's watch. */
export interface TenantEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  tenant: Tenant;
}

/** The store cannot reach its backing storage: reads may still come from the index, writes answer 503. */
export class TenantStoreUnavailable extends Error {
  override name = 'TenantStoreUnavailable';
}
/** The write lost a race: the stored resourceVersion is not the one given (409 Conflict). */
export class TenantConflict extends Error {
  override name = 'TenantConflict';
}
/** Create of an id that exists (409 AlreadyExists). */
export class TenantExists extends Error {
  override name = 'TenantExists';
}
/** Update or delete of an id that does not exist (404). */
export class TenantMissing extends Error {
  override name = 'TenantMissing';
}
/** A watch from a resourceVersion the store no longer remembers (410 Gone). */
export class TenantWatchExpired extends Error {
  override name = 'TenantWatchExpired';
}

/**
 * Where tenants live: etcd under one key prefix, or an embedded store when no etcd is configured.
 * Every replica keeps an in-memory index fed by a watch of the prefix: `get` and `list` read the index only, so
 * the request path never waits for storage and keeps serving while storage is down.
 */
export interface TenantStore {
  /** Loads the index and starts watching; resolves once the index holds what storage held. */
  start(): Promise<void>;
  get(id: TenantId): Tenant | undefined;
  /** Sorted by name. */
  list(): Tenant[];
  /** resourceVersion of the newest change the index has seen (for lists and watches). */
  readonly resourceVersion: string;
  /** Stores a new tenant; fills uid, resourceVersion, creationTimestamp. */
  create(tenant: Omit<Tenant, 'metadata'> & { metadata: Partial<Tenant['metadata']> & { name: TenantId } }): Promise<Tenant>;
  /** Replaces a tenant when `tenant.metadata.resourceVersion` is still the stored one. */
  update(tenant: Tenant): Promise<Tenant>;
  /** Removes the tenant for good (after its upstream objects are gone). */
  remove(id: TenantId, resourceVersion?: string): Promise<void>;
  /**
   * Changes after `fromResourceVersion` (all current tenants as ADDED when omitted), then every change as it
   * happens. Returns a function that stops the watch. A resourceVersion older than the store remembers throws
   * TenantWatchExpired (410 Gone).
   */
  watch(onEvent: (event: TenantEvent) => void, fromResourceVersion?: string): () => void;
  /** Called with every change the index applies, from any replica (for credentials, reconcile, metrics). */
  onChange(listener: (event: TenantEvent) => void): () => void;
  close(): Promise<void>;
}

// What every conversion rule is: a pure pair of functions over a parsed JSON object, and the context they may ask.
// A rule never performs I/O; discovery answers come in through the context.
import type { TenantId } from '../prefix.ts';
import type { Scope } from '../kinds.ts';

/** A parsed Kubernetes object (or any JSON object inside one). */
export type Json = Record<string, unknown>;

/**
 * What a rule may know besides the object. The two lookups are asked only about custom (non built-in) groups,
 * in their upstream form (`abc123-example.com`); built-in kinds are answered from the table of kinds.
 * They should refresh discovery on a miss: an unknown owner kind is refused rather than guessed.
 */
export interface ConvertContext {
  readonly tenant: TenantId;
  /** Scope of an upstream resource: upstream group and plural resource. */
  scopeOf(group: string, resource: string): Scope | undefined;
  /** Scope of an upstream kind: upstream apiVersion (`abc123-example.com/v1`) and kind. */
  kindScope(apiVersion: string, kind: string): Scope | undefined;
  /**
   * Hosts (lower case) an administrator lets tenants' admission webhooks call by `clientConfig.url`
   * (`--tenant-webhook-url-hosts`); absent or empty: a webhook must name a service in the tenant's namespaces.
   */
  readonly webhookUrlHosts?: ReadonlySet<string> | undefined;
  /**
   * Whether an upstream group version serves anything the tenant may see (what discovery shows of it); absent: yes.
   * APIServices follow it, so `kubectl get apiservices` and `kubectl api-versions` agree.
   */
  readonly servesTenantResources?: ((upstreamGroup: string, version: string) => boolean) | undefined;
  /**
   * Whether the tenant may use the platform's class `name` of `resource` (priorityclasses, runtimeclasses,
   * storageclasses, ingressclasses, deviceclasses): what its Tenant allows. Absent: every class but the two critical
   * priority classes. The tenant's views of those kinds show only what it may use.
   */
  readonly allowsPlatformClass?: ((resource: string, name: string) => boolean) | undefined;
  /**
   * The tenant's default class of `resource` (its Tenant's spec.<kind>Classes.default), filled into a whole object it
   * sends where the object names none (rules/class-defaults.ts). Absent or undefined: the upstream's own default.
   */
  readonly defaultPlatformClass?: ((resource: string) => string | undefined) | undefined;
  /**
   * The tenant's PriorityClasses beside the platform's (rules/priority-classes.ts). Absent: every PriorityClass name
   * is the platform's, and the tenant has none of its own.
   */
  readonly priorityClasses?: TenantPriorityClasses | undefined;
}

export interface TenantPriorityClasses {
  /**
   * Whether `name` means a platform PriorityClass to the tenant: one it may use, or one it may not use and has no
   * class of its own of that name (then a pod naming it is refused). Otherwise a name of its own.
   */
  isPlatformClass(name: string): boolean;
  /** The values the tenant's own classes may take, both ends included. */
  band(): { readonly min: number; readonly max: number };
}

/**
 * A kind-specific rule, applied on top of the generic one. Both functions mutate their argument.
 * toUpstream returns the upstream object or throws a StatusError for input the tenant may not send;
 * toTenant returns the tenant's view, or null when the object (or anything it refers to) is not the tenant's.
 */
export interface KindRule {
  toUpstream(obj: Json, ctx: ConvertContext): Json;
  toTenant(obj: Json, ctx: ConvertContext): Json | null;
}

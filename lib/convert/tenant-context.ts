// A tenant's conversion context: its id, what discovery knows of custom groups, and its Tenant's classes. Built by
// the request layer (request/tenant-conversions.ts) and by the list workers alike, from what each has of discovery.
import type { Scope } from './kinds.ts';
import type { TenantId } from './prefix.ts';
import { groupOfApiVersion } from './rules/api-groups.ts';
import type { ConvertContext } from './rules/index.ts';

/** What conversion asks of discovery (upstream/discovery.ts DiscoveryCache has it). */
export interface TenantDiscovery {
  scopeOf(group: string, resource: string): Scope | undefined;
  scopeOfKind(group: string, kind: string): Scope | undefined;
  servesTenantResources(group: string, version: string): boolean;
}

/** The platform's classes each tenant may use, and its defaults among them (tenants/tenant-classes.ts). */
export interface PlatformClassesOfTenants {
  allows(tenant: TenantId, resource: string, name: string): boolean;
  /** The class of `resource` the tenant's objects get when they name none; undefined: the upstream's own default. */
  defaultOf(tenant: TenantId, resource: string): string | undefined;
  /** Whether `name` is a platform PriorityClass the tenant may use, rather than a name of its own. */
  isPlatformPriorityClass(tenant: TenantId, name: string): boolean;
  /** The values the tenant's own PriorityClasses may take. */
  priorityBandOf(tenant: TenantId): { readonly min: number; readonly max: number };
}

/** A tenant's conversion context over `discovery` (its closures read discovery as it is at each call). */
export function convertContextOf(
  tenant: TenantId,
  discovery: TenantDiscovery,
  webhookUrlHosts: ReadonlySet<string> | undefined,
  platformClasses?: PlatformClassesOfTenants,
): ConvertContext {
  return {
    tenant,
    webhookUrlHosts,
    ...(platformClasses !== undefined && {
      allowsPlatformClass: (resource: string, name: string) => platformClasses.allows(tenant, resource, name),
      defaultPlatformClass: (resource: string) => platformClasses.defaultOf(tenant, resource),
      priorityClasses: {
        isPlatformClass: (name: string) => platformClasses.isPlatformPriorityClass(tenant, name),
        band: () => platformClasses.priorityBandOf(tenant),
      },
    }),
    scopeOf: (group, resource) => discovery.scopeOf(group, resource),
    kindScope: (apiVersion, kind) => discovery.scopeOfKind(groupOfApiVersion(apiVersion), kind),
    servesTenantResources: (group, version) => discovery.servesTenantResources(group, version),
  };
}

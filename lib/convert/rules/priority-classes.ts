// PriorityClass: the one shared kind a tenant also writes. The platform's classes are read as they are (those its
// Tenant allows, by their real names) and never written; a tenant's own class `mine` is `<id>-mine` upstream, carries
// the tenant label, and takes a value within the band its Tenant sets. Its `globalDefault` is the tenant's own default
// (what its pods get when they name no class), kept upstream in an annotation: the upstream's own global default is
// every tenant's and the platform's. A name means the platform's class when the tenant may use one of that name, its
// own otherwise (so a hidden platform class looks, to the tenant, like a name that is free).
import { alreadyExists, forbidden } from '../../errors/status-error.ts';
import { TENANT_LABEL, toTenantName, toUpstreamName, type TenantId } from '../prefix.ts';
import { ensureObject, objectAt, stringAt } from './json.ts';
import { forceTenantLabel, removeTenantLabel } from './labels.ts';
import { managedFieldsToTenant } from './managed-fields.ts';
import { invalidField, MAX_TENANT_NAME } from './names.ts';
import { markTenantDefault, platformClassHidden, PLATFORM_CRITICAL_PRIORITY_CLASSES, refusePlatformPriorityClass } from './platform-classes.ts';
import type { ConvertContext, Json, KindRule } from './rule.ts';

/** Upstream, where a tenant's own class keeps its `globalDefault` (false upstream). */
export const TENANT_GLOBAL_DEFAULT_ANNOTATION = 'tenantgate.kubezoo.io/global-default';

/** The values a tenant's own PriorityClasses may take, both ends included. */
export interface PriorityBand {
  readonly min: number;
  readonly max: number;
}

/** The lowest and highest int32: a band that bounds nothing on that side. */
export const INT32_MIN = -2_147_483_648;

/** What the names of PriorityClasses depend on: the tenant, and which classes are the platform's to it. */
export type PriorityClassNames = Pick<ConvertContext, 'tenant' | 'allowsPlatformClass' | 'priorityClasses'>;

/** Whether `name` means a platform class to this tenant (ConvertContext.priorityClasses); its own class otherwise. */
function isPlatformClass(name: string, ctx: PriorityClassNames): boolean {
  // Without the tenant's classes (a gateway that keeps no watch of them), every name is the platform's, as before.
  // The critical ones are the platform's whatever the tenant's view (the apiserver reserves `system-` for them).
  return ctx.priorityClasses === undefined || PLATFORM_CRITICAL_PRIORITY_CLASSES.has(name) || ctx.priorityClasses.isPlatformClass(name);
}

/** The upstream name of the PriorityClass a tenant calls `name` (a URL, a field selector, a pod spec). */
export function priorityClassNameToUpstream(name: string, ctx: PriorityClassNames): string {
  return name === '' || isPlatformClass(name, ctx) ? name : toUpstreamName(name, ctx.tenant);
}

/** The tenant's name of an upstream PriorityClass name: its own classes lose the prefix; the platform's stay. */
export function priorityClassNameToTenant(upstreamName: string, tenant: TenantId): string {
  return toTenantName(upstreamName, tenant) ?? upstreamName;
}

/** A pod spec's priorityClassName, upstream: the platform's class the tenant may use, or the tenant's own. */
export function podPriorityClassToUpstream(name: unknown, ctx: PriorityClassNames): unknown {
  return typeof name === 'string' ? priorityClassNameToUpstream(name, ctx) : name;
}

/**
 * The 403 for a Pod naming a platform class its Tenant does not allow (a template is not refused: its pods are,
 * upstream, tenants/priority-policy.ts). A name that is the tenant's own is for the apiserver to find or not.
 */
export function refusePodPriorityClass(name: unknown, ctx: PriorityClassNames): void {
  if (typeof name === 'string' && name !== '' && isPlatformClass(name, ctx)) refusePlatformPriorityClass(name, ctx.allowsPlatformClass);
}

/**
 * What a name is when it is the platform's: a class the tenant may use (read-only to it) or one hidden from it (not
 * found, as in its lists); undefined when it is the tenant's own.
 */
export function platformPriorityClassOf(name: string, ctx: PriorityClassNames): 'usable' | 'hidden' | undefined {
  if (name === '' || !isPlatformClass(name, ctx)) return undefined;
  return (ctx.allowsPlatformClass?.('priorityclasses', name) ?? !PLATFORM_CRITICAL_PRIORITY_CLASSES.has(name)) ? 'usable' : 'hidden';
}

export const priorityClass: KindRule = {
  toUpstream(obj, ctx) {
    const { tenant } = ctx;
    const metadata = ensureObject(obj, 'metadata');
    const name = stringAt(metadata, 'name');
    // Without the tenant's classes (a gateway that keeps no watch of them) a tenant has none of its own.
    if (ctx.priorityClasses === undefined)
      throw forbidden("priorityclasses.scheduling.k8s.io is forbidden: this gateway keeps no tenant priority classes; the platform's are read-only");
    if (name) {
      // (A platform class hidden from the tenant does not exist for it: the name is free, and its own class shadows it.)
      if (platformPriorityClassOf(name, ctx) === 'usable') {
        throw alreadyExists(`priorityclasses.scheduling.k8s.io ${JSON.stringify(name)} already exists: it is one of the platform's classes, read-only`, {
          name,
          group: 'scheduling.k8s.io',
          kind: 'priorityclasses',
        });
      }
      if (name.length > MAX_TENANT_NAME)
        throw invalidField('PriorityClass', 'scheduling.k8s.io', name, 'metadata.name', name, `must be no more than ${MAX_TENANT_NAME} characters`);
      metadata.name = toUpstreamName(name, tenant);
    }
    const generateName = stringAt(metadata, 'generateName');
    if (generateName) metadata.generateName = toUpstreamName(generateName, tenant);
    const band = ctx.priorityClasses?.band();
    if (band !== undefined && typeof obj.value === 'number' && (obj.value < band.min || obj.value > band.max)) {
      throw forbidden(
        `priorityclasses.scheduling.k8s.io ${JSON.stringify(name ?? generateName ?? '')} is forbidden: value ${obj.value} is outside the values this tenant's priority classes may take (${band.min} to ${band.max})`,
        { name: name ?? '', group: 'scheduling.k8s.io', kind: 'priorityclasses' },
      );
    }
    const annotations = ensureObject(metadata, 'annotations');
    delete annotations[TENANT_GLOBAL_DEFAULT_ANNOTATION];
    if (obj.globalDefault === true) annotations[TENANT_GLOBAL_DEFAULT_ANNOTATION] = 'true';
    // A body without a value (required, and immutable) is a patch: there, a globalDefault turned off or removed
    // removes the annotation (null, in merge and strategic merge patches alike).
    else if ('globalDefault' in obj && !('value' in obj)) annotations[TENANT_GLOBAL_DEFAULT_ANNOTATION] = null;
    if (Object.keys(annotations).length === 0) delete metadata.annotations;
    delete obj.globalDefault;
    // (The generic rule after this one maps managedFields, as for every kind.)
    forceTenantLabel(metadata, tenant);
    return obj;
  },
  toTenant(obj, ctx) {
    const metadata = objectAt(obj, 'metadata');
    const owner = metadata === undefined ? undefined : (objectAt(metadata, 'labels')?.[TENANT_LABEL] as unknown);
    if (owner === undefined) {
      // The platform's: only what the tenant may use, its default marked as the tenant's.
      if (platformClassHidden('priorityclasses', obj, ctx.allowsPlatformClass)) return null;
      markTenantDefault('priorityclasses', obj, ctx.defaultPlatformClass);
      return obj;
    }
    if (owner !== ctx.tenant || metadata === undefined) return null;
    const name = stringAt(metadata, 'name');
    const mine = name === undefined ? null : toTenantName(name, ctx.tenant);
    if (mine === null) return null;
    metadata.name = mine;
    const generateName = stringAt(metadata, 'generateName');
    if (generateName) metadata.generateName = toTenantName(generateName, ctx.tenant) ?? generateName;
    removeTenantLabel(metadata, ctx.tenant);
    managedFieldsToTenant(metadata, ctx.tenant);
    const annotations = objectAt(metadata, 'annotations');
    const isDefault = annotations?.[TENANT_GLOBAL_DEFAULT_ANNOTATION] === 'true';
    if (annotations !== undefined) {
      delete annotations[TENANT_GLOBAL_DEFAULT_ANNOTATION];
      if (Object.keys(annotations).length === 0) delete metadata.annotations;
    }
    // (The apiserver leaves out a false globalDefault: so does the tenant's view.)
    if (isDefault) obj.globalDefault = true;
    else delete obj.globalDefault;
    markTenantDefault('priorityclasses', obj, ctx.defaultPlatformClass);
    return obj;
  },
};

/** `priorityClassName` of a tenant's view of a pod spec (Json): its own class without the prefix. */
export function podPriorityClassToTenant(spec: Json, tenant: TenantId): void {
  const name = spec.priorityClassName;
  if (typeof name === 'string' && name !== '') spec.priorityClassName = priorityClassNameToTenant(name, tenant);
}

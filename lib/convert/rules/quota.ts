// ResourceQuota: the resource names its hard and used maps count by (`count/<resource>.<group>`) name the tenant's
// CRD groups upstream (`<id>-<group>`), so a tenant's quota counts its own custom resources and no one else's.
// Never lets a key reach another tenant's group, and never shows the tenant a key of a group that is not its own.
import { isTenantCrdGroup } from '../kinds.ts';
import { PREFIX_LENGTH, toTenantName, toUpstreamName, type TenantId } from '../prefix.ts';
import { isObject, objectAt, stringAt } from './json.ts';
import { invalidField } from './names.ts';
import type { Json, KindRule } from './rule.ts';

/** The maps keyed by resource name: spec.hard, status.hard, status.used (scopes and scopeSelector name scopes, not resources). */
const RESOURCE_MAPS = [
  ['spec', 'hard'],
  ['status', 'hard'],
  ['status', 'used'],
] as const;

const COUNT = 'count/';
/** A resource name is a qualified name: the part after `count/` is at most 63 bytes, upstream, prefix included. */
const MAX_NAME_PART = 63;
export const MAX_TENANT_COUNT_NAME_PART = MAX_NAME_PART - PREFIX_LENGTH;

/** `count/<resource>.<group>` split at the resource's end (plurals hold no dot); null for any other key, or core's `count/<resource>`. */
function countedGroup(key: string): { head: string; group: string } | null {
  if (!key.startsWith(COUNT)) return null;
  const dot = key.indexOf('.', COUNT.length);
  if (dot < 0) return null;
  return { head: key.slice(0, dot + 1), group: key.slice(dot + 1) };
}

/** The upstream key of a tenant's resource name: a tenant CRD group's count gets the prefix; every other key is the same. */
export function quotaResourceToUpstream(key: string, tenant: TenantId): string {
  const counted = countedGroup(key);
  return counted === null || !isTenantCrdGroup(counted.group) ? key : counted.head + toUpstreamName(counted.group, tenant);
}

/** The tenant's key for an upstream one; null for the count of a custom group that is not the tenant's. */
export function quotaResourceToTenant(key: string, tenant: TenantId): string | null {
  const counted = countedGroup(key);
  if (counted === null || !isTenantCrdGroup(counted.group)) return key;
  const group = toTenantName(counted.group, tenant);
  return group !== null && isTenantCrdGroup(group) ? counted.head + group : null;
}

/**
 * Maps the keys of every resource map. Both directions are one-to-one (a prefixed group never is a built-in one, and a
 * stripped group must be a tenant CRD group), so no two keys ever become one.
 */
function mapKeys(obj: Json, map: (key: string, field: string) => string | null): Json {
  for (const [parent, member] of RESOURCE_MAPS) {
    const holder = objectAt(obj, parent);
    const resources = holder?.[member];
    if (holder === undefined || !isObject(resources)) continue;
    const mapped: Json = {};
    for (const [key, value] of Object.entries(resources)) {
      const to = map(key, `${parent}.${member}[${key}]`);
      if (to !== null) mapped[to] = value;
    }
    holder[member] = mapped;
  }
  return obj;
}

export const resourceQuota: KindRule = {
  toUpstream: (obj, ctx) =>
    mapKeys(obj, (key, field) => {
      const upstream = quotaResourceToUpstream(key, ctx.tenant);
      // The apiserver would refuse the prefixed name in words about a key the tenant did not write.
      if (upstream !== key && upstream.length - COUNT.length > MAX_NAME_PART) {
        const name = stringAt(objectAt(obj, 'metadata') ?? {}, 'name') ?? '';
        throw invalidField(
          'ResourceQuota',
          '',
          name,
          field,
          key,
          `name part must be no more than ${MAX_TENANT_COUNT_NAME_PART} bytes for a count of a custom resource group (tenantgate prefixes the group)`,
        );
      }
      return upstream;
    }),
  // Counts of other custom groups cannot come from the tenant (its groups are always prefixed): left out of its view.
  toTenant: (obj, ctx) => mapKeys(obj, (key) => quotaResourceToTenant(key, ctx.tenant)),
};

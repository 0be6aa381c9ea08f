// The tenant label `kubezoo.io/tenant=<id>`: forced on everything a tenant writes (and on the templates controllers
// stamp children from), removed from everything a tenant reads, so a tenant can neither see nor fake it.
import { TENANT_LABEL, type TenantId } from '../prefix.ts';
import { ensureObject, isObject } from './json.ts';
import type { Json } from './rule.ts';

/** Sets `<mapKey>[kubezoo.io/tenant] = <id>` on `owner` (metadata's labels, a selector's matchLabels). */
export function forceTenantEntry(owner: Json, mapKey: string, tenant: TenantId): void {
  ensureObject(owner, mapKey)[TENANT_LABEL] = tenant;
}

/**
 * Removes the tenant entry from `owner[mapKey]` (and the map, once emptied). False when it names another tenant:
 * the object (or selector) is not this tenant's.
 */
export function removeTenantEntry(owner: Json, mapKey: string, tenant: TenantId): boolean {
  const map = owner[mapKey];
  if (!isObject(map) || !(TENANT_LABEL in map)) return true;
  if (map[TENANT_LABEL] !== tenant) return false;
  delete map[TENANT_LABEL];
  for (const _ in map) return true;
  delete owner[mapKey];
  return true;
}

/** Sets the tenant label in an object's metadata (or any ObjectMeta, e.g. a pod template's). */
export function forceTenantLabel(metadata: Json, tenant: TenantId): void {
  forceTenantEntry(metadata, 'labels', tenant);
}

/** Removes the tenant label from metadata; false when the label names another tenant. */
export function removeTenantLabel(metadata: Json, tenant: TenantId): boolean {
  return removeTenantEntry(metadata, 'labels', tenant);
}

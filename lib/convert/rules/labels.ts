// The tenant label `kubezoo.io/tenant=<id>`: forced on everything a tenant writes (and on the templates controllers
// stamp children from), removed from everything a tenant reads, so a tenant can neither see nor fake it.
import { TENANT_LABEL, type TenantId } from '../prefix.ts';
import { ensureObject, isObject } from './json.ts';
import type { Json } from './rule.ts';

/** Sets the tenant label in an object's metadata (or any ObjectMeta, e.g. a pod template's). */
export function forceTenantLabel(metadata: Json, tenant: TenantId): void {
  ensureObject(metadata, 'labels')[TENANT_LABEL] = tenant;
}

/**
 * Removes the tenant label from metadata (and an emptied labels map). False when the label names another tenant:
 * the object is not this tenant's.
 */
export function removeTenantLabel(metadata: Json, tenant: TenantId): boolean {
  const labels = metadata.labels;
  if (!isObject(labels) || !(TENANT_LABEL in labels)) return true;
  if (labels[TENANT_LABEL] !== tenant) return false;
  delete labels[TENANT_LABEL];
  for (const _ in labels) return true;
  delete metadata.labels;
  return true;
}

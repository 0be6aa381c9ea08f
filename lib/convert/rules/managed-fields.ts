// metadata.managedFields: their apiVersion names a custom group (prefixed upstream), and their field sets name the
// tenant label wherever it was forced; the tenant sees neither.
import { TENANT_LABEL, type TenantId } from '../prefix.ts';
import { apiVersionToTenant, apiVersionToUpstream } from './api-groups.ts';
import { isObject, stringAt } from './json.ts';
import type { Json } from './rule.ts';

const TENANT_LABEL_FIELD = 'f:' + TENANT_LABEL;

/** `kind`: the object's, whose apiVersion every entry names (a stored kind's is in its stored group upstream). */
export function managedFieldsToUpstream(metadata: Json, tenant: TenantId, kind: string): void {
  const entries = metadata.managedFields;
  if (!Array.isArray(entries)) return;
  for (const entry of entries) {
    const apiVersion = isObject(entry) ? stringAt(entry, 'apiVersion') : undefined;
    if (apiVersion !== undefined && isObject(entry)) entry.apiVersion = apiVersionToUpstream(apiVersion, tenant, kind);
  }
}

/** Deletes every `f:kubezoo.io/tenant` key, and any field set that held nothing else; true when something was deleted. */
function forgetTenantLabel(fields: Json): boolean {
  let changed = false;
  for (const key in fields) {
    if (key === TENANT_LABEL_FIELD) {
      delete fields[key];
      changed = true;
      continue;
    }
    const child = fields[key];
    if (isObject(child) && forgetTenantLabel(child)) {
      changed = true;
      let empty = true;
      for (const _ in child) {
        empty = false;
        break;
      }
      if (empty) delete fields[key];
    }
  }
  return changed;
}

export function managedFieldsToTenant(metadata: Json, tenant: TenantId): void {
  const entries = metadata.managedFields;
  if (!Array.isArray(entries)) return;
  for (const entry of entries) {
    if (!isObject(entry)) continue;
    const apiVersion = stringAt(entry, 'apiVersion');
    if (apiVersion !== undefined) entry.apiVersion = apiVersionToTenant(apiVersion, tenant) ?? apiVersion;
    const fields = entry.fieldsV1;
    if (isObject(fields)) forgetTenantLabel(fields);
  }
}

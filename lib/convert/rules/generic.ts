// The rule every tenant object takes, before any kind-specific one: namespace or cluster-scoped name (and
// generateName) prefixed, owner references mapped, the tenant label forced; and the way back, where an object
// outside the tenant's prefix, labelled for another tenant or owned from outside is not the tenant's (false).
import { toTenantName, toUpstreamName } from '../prefix.ts';
import { carriesTenantLabel, type KindRow } from '../kinds.ts';
import { ensureObject, isObject, objectAt, stringAt } from './json.ts';
import { forceTenantLabel, removeTenantLabel } from './labels.ts';
import { managedFieldsToTenant, managedFieldsToUpstream } from './managed-fields.ts';
import { checkNameFits, checkNamespaceFits, nameMappingOfRow, namespaceToTenant, namespaceToUpstream, nameToTenant, nameToUpstream } from './names.ts';
import { ownerReferencesToTenant, ownerReferencesToUpstream } from './references.ts';
import type { ConvertContext, Json } from './rule.ts';
import { stripTenantPrefixes } from '../status.ts';

function isEmpty(obj: Json): boolean {
  for (const _ in obj) return false;
  return true;
}

export function genericToUpstream(obj: Json, ctx: ConvertContext, row: KindRow): Json {
  const { tenant } = ctx;
  const metadata = ensureObject(obj, 'metadata');
  const name = stringAt(metadata, 'name');
  if (row.scope === 'Namespaced') {
    const namespace = stringAt(metadata, 'namespace');
    if (namespace) {
      checkNamespaceFits(row, name ?? '', namespace);
      metadata.namespace = namespaceToUpstream(namespace, tenant);
    }
  } else {
    const mapping = nameMappingOfRow(row);
    if (name) {
      checkNameFits(row, name);
      metadata.name = nameToUpstream(mapping, name, tenant);
    }
    // The apiserver truncates a long generateName itself, keeping the prefix at its start.
    const generateName = stringAt(metadata, 'generateName');
    if (generateName && (mapping === 'prefix' || mapping === 'encoded-prefix')) metadata.generateName = toUpstreamName(generateName, tenant);
  }
  ownerReferencesToUpstream(metadata, ctx);
  if (carriesTenantLabel(row)) forceTenantLabel(metadata, tenant);
  managedFieldsToUpstream(metadata, tenant, row.kind);
  return obj;
}

/** False when the object is not the tenant's. Condition messages name the tenant's objects without the prefix. */
export function genericToTenant(obj: Json, ctx: ConvertContext, row: KindRow): boolean {
  const { tenant } = ctx;
  const metadata = objectAt(obj, 'metadata');
  if (metadata !== undefined) {
    if (row.scope === 'Namespaced') {
      const namespace = stringAt(metadata, 'namespace');
      if (namespace) {
        const mine = namespaceToTenant(namespace, tenant);
        if (mine === null) return false;
        metadata.namespace = mine;
      }
    } else {
      const mapping = nameMappingOfRow(row);
      const name = stringAt(metadata, 'name');
      if (name) {
        const mine = nameToTenant(mapping, name, tenant);
        if (mine === null) return false;
        metadata.name = mine;
      }
      const generateName = stringAt(metadata, 'generateName');
      if (generateName && (mapping === 'prefix' || mapping === 'encoded-prefix')) metadata.generateName = toTenantName(generateName, tenant) ?? generateName;
    }
    if (!removeTenantLabel(metadata, tenant) || !ownerReferencesToTenant(metadata, ctx)) return false;
    managedFieldsToTenant(metadata, tenant);
    if (isEmpty(metadata)) delete obj.metadata; // a review's metadata held nothing but the label
  }
  const conditions = objectAt(obj, 'status')?.conditions;
  if (Array.isArray(conditions)) {
    for (const condition of conditions) {
      if (!isObject(condition)) continue;
      const message = stringAt(condition, 'message');
      if (message) condition.message = stripTenantPrefixes(message, tenant);
    }
  }
  return true;
}

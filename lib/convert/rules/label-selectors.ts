// Label selectors that reach beyond one namespace: namespace selectors (webhooks, admission policies, network
// policies, pod affinity) and object selectors (webhooks, aggregated ClusterRoles). Upstream they are ANDed with the
// tenant label, so they only ever select the tenant's own namespaces and objects; namespace selectors on
// `kubernetes.io/metadata.name` take the prefix.
import type { TenantId } from '../prefix.ts';
import { isObject } from './json.ts';
import { forceTenantEntry, removeTenantEntry } from './labels.ts';
import { namespaceToTenant, namespaceToUpstream } from './names.ts';
import type { Json } from './rule.ts';

/** The label the apiserver sets on every namespace to its name. */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

/** ANDs the tenant label into a selector. */
export function objectSelectorToUpstream(selector: Json, tenant: TenantId): void {
  forceTenantEntry(selector, 'matchLabels', tenant);
}

/** Removes the tenant label requirement; false when the selector requires another tenant's label. */
export function objectSelectorToTenant(selector: Json, tenant: TenantId): boolean {
  return removeTenantEntry(selector, 'matchLabels', tenant);
}

function mapNamespaceNames(selector: Json, map: (name: string) => string | null): boolean {
  const matchLabels = selector.matchLabels;
  if (isObject(matchLabels) && typeof matchLabels[NAMESPACE_NAME_LABEL] === 'string') {
    const mapped = map(matchLabels[NAMESPACE_NAME_LABEL]);
    if (mapped === null) return false;
    matchLabels[NAMESPACE_NAME_LABEL] = mapped;
  }
  const expressions = selector.matchExpressions;
  if (!Array.isArray(expressions)) return true;
  for (const expression of expressions) {
    if (!isObject(expression) || expression.key !== NAMESPACE_NAME_LABEL || !Array.isArray(expression.values)) continue;
    const values: unknown[] = expression.values;
    for (let i = 0; i < values.length; i++) {
      const value = values[i];
      if (typeof value !== 'string') continue;
      const mapped = map(value);
      if (mapped === null) return false;
      values[i] = mapped;
    }
  }
  return true;
}

export function namespaceSelectorToUpstream(selector: Json, tenant: TenantId): void {
  mapNamespaceNames(selector, (name) => namespaceToUpstream(name, tenant));
  objectSelectorToUpstream(selector, tenant);
}

export function namespaceSelectorToTenant(selector: Json, tenant: TenantId): boolean {
  return objectSelectorToTenant(selector, tenant) && mapNamespaceNames(selector, (name) => namespaceToTenant(name, tenant));
}

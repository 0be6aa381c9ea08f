// Which upstream API groups a tenant sees, and under which names: the one rule discovery and OpenAPI documents
// are filtered by. Built-in groups keep their names unless every kind in them is hidden; custom groups are seen only
// when they are the tenant's own CRD groups, without the prefix.
import { KINDS, STORED_UPSTREAM_GROUPS, isBuiltinGroup } from './kinds.ts';
import type { TenantId } from './prefix.ts';
import { apiGroupToTenant } from './rules/api-groups.ts';
import { isObject } from './rules/json.ts';

/**
 * Built-in groups none of whose resources a tenant may see, and the upstream groups of stored kinds (the tenant sees
 * those kinds in their own group's documents, never tenantgate's CRDs).
 */
export const HIDDEN_GROUPS: ReadonlySet<string> = new Set([
  ...[...new Set(KINDS.map((row) => row.group))].filter((group) => KINDS.every((row) => row.group !== group || row.tenancy === 'hidden')),
  ...STORED_UPSTREAM_GROUPS,
]);

/** The tenant's name for an upstream group, or null when the tenant must not see it. */
export function visibleGroup(upstreamGroup: string, tenant: TenantId): string | null {
  if (isBuiltinGroup(upstreamGroup)) return HIDDEN_GROUPS.has(upstreamGroup) ? null : upstreamGroup;
  return apiGroupToTenant(upstreamGroup, tenant);
}

/**
 * A `{group, version, kind}` reference (discovery's responseKind, OpenAPI's x-kubernetes-group-version-kind) with the
 * tenant's group; null when it names a group the tenant must not see. Anything without a group passes as it is.
 */
export function groupVersionKindToTenant(ref: unknown, tenant: TenantId): unknown {
  if (!isObject(ref) || typeof ref.group !== 'string') return ref;
  const group = visibleGroup(ref.group, tenant);
  return group === null ? null : group === ref.group ? ref : { ...ref, group };
}

// The tenant's view of legacy discovery documents (APIGroupList, APIResourceList): other tenants' CRD groups,
// custom groups of nobody and hidden kinds removed; the tenant's own CRD groups shown without the prefix.
import { KINDS, isBuiltinGroup, kindOf } from './kinds.ts';
import type { TenantId } from './prefix.ts';
import { apiGroupToTenant } from './rules/index.ts';
import { groupOfApiVersion } from './rules/api-groups.ts';

/** Built-in groups none of whose resources a tenant may see. */
export const HIDDEN_GROUPS: ReadonlySet<string> = new Set(
  [...new Set(KINDS.map((row) => row.group))].filter((group) => KINDS.every((row) => row.group !== group || row.tenancy === 'hidden')),
);
const READ_VERBS = ['get', 'list', 'watch'];

interface GroupVersion {
  groupVersion: string;
  version: string;
}

/** The tenant's name for an upstream group, or null when the tenant must not see it. */
function visibleGroup(upstreamGroup: string, tenant: TenantId): string | null {
  if (isBuiltinGroup(upstreamGroup)) return HIDDEN_GROUPS.has(upstreamGroup) ? null : upstreamGroup;
  return apiGroupToTenant(upstreamGroup, tenant);
}

function groupVersionToTenant(gv: GroupVersion, group: string): GroupVersion {
  return { ...gv, groupVersion: `${group}/${gv.version}` };
}

/**
 * `servesVisibleResources(upstreamGroup, version)` says whether a version has anything the tenant may see; versions
 * without (e.g. certificates.k8s.io/v1, only CSRs) are left out, since clients treat an empty version as an error.
 */
export function discoveryToTenant(body: unknown, tenant: TenantId, servesVisibleResources: (group: string, version: string) => boolean = () => true): unknown {
  if (typeof body !== 'object' || body === null) return body;
  const doc = body as Record<string, any>;
  if (doc.kind === 'APIGroupList' && Array.isArray(doc.groups)) {
    const groups = [];
    for (const group of doc.groups) {
      const name = visibleGroup(group.name, tenant);
      if (name === null) continue;
      const versions = (group.versions ?? []).filter((gv: GroupVersion) => servesVisibleResources(group.name, gv.version));
      if (versions.length === 0) continue;
      const preferred = versions.find((gv: GroupVersion) => gv.version === group.preferredVersion?.version) ?? versions[0];
      groups.push({
        ...group,
        name,
        versions: versions.map((gv: GroupVersion) => groupVersionToTenant(gv, name)),
        preferredVersion: groupVersionToTenant(preferred, name),
      });
    }
    return { ...doc, groups };
  }
  if (doc.kind === 'APIGroup' && typeof doc.name === 'string') {
    const name = visibleGroup(doc.name, tenant);
    if (name === null) return null;
    return {
      ...doc,
      name,
      versions: (doc.versions ?? []).map((gv: GroupVersion) => groupVersionToTenant(gv, name)),
      preferredVersion: doc.preferredVersion && groupVersionToTenant(doc.preferredVersion, name),
    };
  }
  if (doc.kind === 'APIResourceList' && typeof doc.groupVersion === 'string') {
    const upstreamGroup = groupOfApiVersion(doc.groupVersion);
    const version = doc.groupVersion.slice(doc.groupVersion.lastIndexOf('/') + 1);
    const group = visibleGroup(upstreamGroup, tenant);
    if (group === null) return null;
    const resources = [];
    for (const resource of doc.resources ?? []) {
      const row = kindOf(group, String(resource.name).split('/')[0]!, resource.namespaced ? 'Namespaced' : 'Cluster', resource.kind);
      if (row === undefined || row.tenancy === 'hidden') continue;
      const verbs = row.tenancy === 'shared-read-only' ? (resource.verbs ?? []).filter((v: string) => READ_VERBS.includes(v)) : resource.verbs;
      resources.push({ ...resource, verbs, ...(resource.group === undefined ? {} : { group: apiGroupToTenant(resource.group, tenant) ?? resource.group }) });
    }
    return { ...doc, groupVersion: group === '' ? version : `${group}/${version}`, resources };
  }
  return body;
}

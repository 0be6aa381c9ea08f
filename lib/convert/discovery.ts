// The tenant's view of legacy discovery (APIGroupList, APIGroup, APIResourceList): other tenants' CRD groups,
// custom groups of nobody, hidden groups and kinds removed; shared kinds with their read verbs only; the tenant's own
// CRD groups shown without the prefix; versions left with nothing to show dropped.
import { StatusError } from '../server/status.ts';
import { kindOf, tenantMay, type Scope } from './kinds.ts';
import type { TenantId } from './prefix.ts';
import { groupOfApiVersion } from './rules/api-groups.ts';
import { isObject } from './rules/json.ts';
import type { Json } from './rules/rule.ts';
import { groupVersionKindToTenant, visibleGroup } from './visibility.ts';

/**
 * The verbs of a discovered resource (or subresource) the tenant may use, or null when it may not see the entry:
 * hidden or unknown kinds, and subresources of shared kinds that tenants cannot read (nodes/proxy).
 */
function tenantVerbs(group: string, resource: string, subresource: string, scope: Scope, verbs: unknown): string[] | null {
  const row = kindOf(group, resource, scope);
  const upstreamVerbs = Array.isArray(verbs) ? verbs.filter((verb): verb is string => typeof verb === 'string') : [];
  const allowed = upstreamVerbs.filter((verb) => tenantMay(row, verb, subresource));
  if (allowed.length > 0) return allowed;
  // An entry listed without verbs stays when the kind is the tenant's: nothing was taken from it.
  return upstreamVerbs.length === 0 && row?.tenancy === 'tenant' ? allowed : null;
}

function arrayOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function malformed(what: string): StatusError {
  return new StatusError(502, 'InternalError', `the upstream ${what} is malformed`);
}

interface GroupVersion {
  groupVersion: string;
  version: string;
}

function groupVersionToTenant(gv: GroupVersion, group: string): GroupVersion {
  return { ...gv, groupVersion: `${group}/${gv.version}` };
}

function isGroupVersion(value: unknown): value is GroupVersion {
  return isObject(value) && typeof value.version === 'string';
}

/** One APIGroup (in an APIGroupList, or alone) as the tenant sees it; null when hidden or left with no versions. */
function apiGroupToTenantView(doc: Json, tenant: TenantId, servesVisibleResources: (group: string, version: string) => boolean): Json | null {
  if (typeof doc.name !== 'string') return null;
  const upstreamGroup = doc.name;
  const name = visibleGroup(upstreamGroup, tenant);
  if (name === null) return null;
  const versions = arrayOf(doc.versions).filter(isGroupVersion).filter((gv) => servesVisibleResources(upstreamGroup, gv.version));
  if (versions.length === 0) return null;
  const preferredVersion = isObject(doc.preferredVersion) ? doc.preferredVersion.version : undefined;
  const preferred = versions.find((gv) => gv.version === preferredVersion) ?? versions[0]!;
  return {
    ...doc,
    name,
    versions: versions.map((gv) => groupVersionToTenant(gv, name)),
    preferredVersion: groupVersionToTenant(preferred, name),
  };
}

/** An APIResourceList entry (`pods`, `pods/exec`) as the tenant sees it, or null. */
function apiResourceToTenant(resource: unknown, group: string, tenant: TenantId): Json | null {
  if (!isObject(resource) || typeof resource.name !== 'string') return null;
  const [name, subresource = ''] = resource.name.split('/');
  const verbs = tenantVerbs(group, name!, subresource, resource.namespaced === true ? 'Namespaced' : 'Cluster', resource.verbs);
  if (verbs === null) return null;
  // `group` is set on subresources answering with another group's kind (deployments/scale: autoscaling).
  const view = groupVersionKindToTenant(resource, tenant);
  return view === null ? null : { ...(view as Json), verbs };
}

/**
 * `servesVisibleResources(upstreamGroup, version)` says whether a version has anything the tenant may see; versions
 * without (e.g. certificates.k8s.io/v1, only CSRs) are left out, since clients treat an empty version as an error.
 */
export function discoveryToTenant(body: unknown, tenant: TenantId, servesVisibleResources: (group: string, version: string) => boolean = () => true): unknown {
  if (!isObject(body)) return body;
  if (body.kind === 'APIGroupList') {
    if (!Array.isArray(body.groups)) throw malformed('APIGroupList');
    const groups = body.groups.filter(isObject).map((group) => apiGroupToTenantView(group, tenant, servesVisibleResources));
    return { ...body, groups: groups.filter((group) => group !== null) };
  }
  if (body.kind === 'APIGroup') return apiGroupToTenantView(body, tenant, servesVisibleResources);
  if (body.kind === 'APIResourceList' && typeof body.groupVersion === 'string') {
    const upstreamGroup = groupOfApiVersion(body.groupVersion);
    const version = body.groupVersion.slice(body.groupVersion.lastIndexOf('/') + 1);
    const group = visibleGroup(upstreamGroup, tenant);
    if (group === null) return null;
    const resources = arrayOf(body.resources).map((resource) => apiResourceToTenant(resource, group, tenant));
    return { ...body, groupVersion: group === '' ? version : `${group}/${version}`, resources: resources.filter((resource) => resource !== null) };
  }
  return body;
}

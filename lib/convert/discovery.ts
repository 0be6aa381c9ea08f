// The tenant's view of discovery, legacy (APIGroupList, APIGroup, APIResourceList) and aggregated
// (apidiscovery.k8s.io/v2 APIGroupDiscoveryList), by the same rules: other tenants' CRD groups, custom groups of
// nobody, hidden groups and kinds removed; shared kinds with their read verbs only; the tenant's own CRD groups
// shown without the prefix; versions left with nothing to show dropped.
import { createHash } from 'node:crypto';
import { badGateway, StatusError } from '../errors/status-error.ts';
import { kindOf, tenantMay, type Scope } from './kinds.ts';
import type { TenantId } from './prefix.ts';
import { groupOfApiVersion } from './rules/api-groups.ts';
import { isObject } from './rules/json.ts';
import type { Json } from './rules/rule.ts';
import { groupVersionKindToTenant, visibleGroup } from './visibility.ts';

/** What clients (client-go, kubectl) ask for aggregated discovery; the upstream answers with it as Content-Type. */
export const AGGREGATED_DISCOVERY_MEDIA_TYPE = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

/**
 * True for a media range of an Accept header that asks aggregated discovery v2 as JSON. Parameters may come in any
 * order; others (`q`, client-go's `profile=nopeer`) do not change the document's shape.
 */
export function isAggregatedDiscoveryJson(mediaRange: string): boolean {
  const [type, ...parameters] = mediaRange.split(';');
  if (type?.trim().toLowerCase() !== 'application/json') return false;
  const values = new Map<string, string>();
  for (const parameter of parameters) {
    const eq = parameter.indexOf('=');
    if (eq > 0)
      values.set(
        parameter.slice(0, eq).trim().toLowerCase(),
        parameter
          .slice(eq + 1)
          .trim()
          .replace(/^"(.*)"$/, '$1'),
      );
  }
  return values.get('g') === 'apidiscovery.k8s.io' && values.get('v') === 'v2' && values.get('as') === 'APIGroupDiscoveryList';
}

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
  return badGateway(`the upstream ${what} is malformed`);
}

// ---- legacy discovery ----

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
/**
 * Where the tenant reaches its API server: tenantgate's address as the client named it, never the upstream's.
 * Without one the field is left out (clients fall back to the address they used).
 */
function serverAddressesToTenant(doc: Json, serverAddress: string | null): Json {
  if (!('serverAddressByClientCIDRs' in doc)) return doc;
  const { serverAddressByClientCIDRs: _upstream, ...rest } = doc;
  return serverAddress === null ? rest : { ...rest, serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }] };
}

function apiGroupToTenantView(
  doc: Json,
  tenant: TenantId,
  servesVisibleResources: (group: string, version: string) => boolean,
  serverAddress: string | null,
): Json | null {
  if (typeof doc.name !== 'string') return null;
  const upstreamGroup = doc.name;
  const name = visibleGroup(upstreamGroup, tenant);
  if (name === null) return null;
  const versions = arrayOf(doc.versions)
    .filter(isGroupVersion)
    .filter((gv) => servesVisibleResources(upstreamGroup, gv.version));
  if (versions.length === 0) return null;
  const preferredVersion = isObject(doc.preferredVersion) ? doc.preferredVersion.version : undefined;
  const preferred = versions.find((gv) => gv.version === preferredVersion) ?? versions[0]!;
  return {
    ...serverAddressesToTenant(doc, serverAddress),
    name,
    versions: versions.map((gv) => groupVersionToTenant(gv, name)),
    preferredVersion: groupVersionToTenant(preferred, name),
  };
}

/** A resource's storageVersionHash as the apiserver computes it: sha256 of `<group>/<version>/<kind>`, 8 bytes, base64. */
export function storageVersionHash(group: string, version: string, kind: string): string {
  return createHash('sha256').update(`${group}/${version}/${kind}`).digest().subarray(0, 8).toString('base64');
}

/**
 * The hash of a tenant's custom resource, which the upstream computed from its prefixed group: the storage version
 * is the candidate whose upstream hash matches, and the tenant's hash is made from it. Undefined when none does.
 */
function storageVersionHashToTenant(hash: string, upstreamGroup: string, group: string, kind: string, versions: readonly string[]): string | undefined {
  const storageVersion = versions.find((version) => storageVersionHash(upstreamGroup, version, kind) === hash);
  return storageVersion === undefined ? undefined : storageVersionHash(group, storageVersion, kind);
}

/** Where an APIResourceList comes from: its group upstream and as the tenant names it, and the group's versions. */
interface ResourceListOrigin {
  readonly upstreamGroup: string;
  readonly group: string;
  readonly versions: readonly string[];
}

/** An APIResourceList entry (`pods`, `pods/exec`) as the tenant sees it, or null. */
function apiResourceToTenant(resource: unknown, origin: ResourceListOrigin, tenant: TenantId): Json | null {
  if (!isObject(resource) || typeof resource.name !== 'string') return null;
  const [name, subresource = ''] = resource.name.split('/');
  const verbs = tenantVerbs(origin.group, name!, subresource, resource.namespaced === true ? 'Namespaced' : 'Cluster', resource.verbs);
  if (verbs === null) return null;
  // `group` is set on subresources answering with another group's kind (deployments/scale: autoscaling).
  const view = groupVersionKindToTenant(resource, tenant);
  if (view === null) return null;
  const entry: Json = { ...(view as Json), verbs };
  if (origin.group !== origin.upstreamGroup && typeof entry.storageVersionHash === 'string' && typeof entry.kind === 'string') {
    const hash = storageVersionHashToTenant(entry.storageVersionHash, origin.upstreamGroup, origin.group, entry.kind, origin.versions);
    if (hash === undefined) delete entry.storageVersionHash;
    else entry.storageVersionHash = hash;
  }
  return entry;
}

/**
 * `servesVisibleResources(upstreamGroup, version)` says whether a version has anything the tenant may see; versions
 * without (e.g. certificates.k8s.io/v1, only CSRs) are left out, since clients treat an empty version as an error.
 * `versionsOf(upstreamGroup)`: the versions discovery knows of a group, where a custom resource's storage version is.
 */
export function discoveryToTenant(
  body: unknown,
  tenant: TenantId,
  servesVisibleResources: (group: string, version: string) => boolean = () => true,
  serverAddress: string | null = null,
  versionsOf: (upstreamGroup: string) => readonly string[] = () => [],
): unknown {
  if (!isObject(body)) return body;
  if (body.kind === 'APIVersions') return serverAddressesToTenant(body, serverAddress);
  if (body.kind === 'APIGroupList') {
    if (!Array.isArray(body.groups)) throw malformed('APIGroupList');
    const groups = body.groups.filter(isObject).map((group) => apiGroupToTenantView(group, tenant, servesVisibleResources, serverAddress));
    return { ...body, groups: groups.filter((group) => group !== null) };
  }
  if (body.kind === 'APIGroup') return apiGroupToTenantView(body, tenant, servesVisibleResources, serverAddress);
  if (body.kind === 'APIResourceList' && typeof body.groupVersion === 'string') {
    const upstreamGroup = groupOfApiVersion(body.groupVersion);
    const version = body.groupVersion.slice(body.groupVersion.lastIndexOf('/') + 1);
    const group = visibleGroup(upstreamGroup, tenant);
    if (group === null) return null;
    const origin: ResourceListOrigin = { upstreamGroup, group, versions: [version, ...versionsOf(upstreamGroup).filter((other) => other !== version)] };
    const resources = arrayOf(body.resources).map((resource) => apiResourceToTenant(resource, origin, tenant));
    return { ...body, groupVersion: group === '' ? version : `${group}/${version}`, resources: resources.filter((resource) => resource !== null) };
  }
  return body;
}

// ---- aggregated discovery (apidiscovery.k8s.io/v2) ----

/** An APISubresourceDiscovery as the tenant sees it, or null. */
function subresourceDiscoveryToTenant(entry: unknown, group: string, resource: string, scope: Scope, tenant: TenantId): Json | null {
  if (!isObject(entry) || typeof entry.subresource !== 'string') return null;
  const verbs = tenantVerbs(group, resource, entry.subresource, scope, entry.verbs);
  if (verbs === null) return null;
  const responseKind = groupVersionKindToTenant(entry.responseKind, tenant);
  if (responseKind === null) return null;
  const view: Json = { ...entry, verbs };
  if (responseKind !== undefined) view.responseKind = responseKind;
  if (Array.isArray(entry.acceptedTypes))
    view.acceptedTypes = entry.acceptedTypes.map((type) => groupVersionKindToTenant(type, tenant)).filter((type) => type !== null);
  return view;
}

/** An APIResourceDiscovery as the tenant sees it, or null. */
function resourceDiscoveryToTenant(entry: unknown, group: string, tenant: TenantId): Json | null {
  if (!isObject(entry) || typeof entry.resource !== 'string') return null;
  const scope: Scope = entry.scope === 'Cluster' ? 'Cluster' : 'Namespaced';
  const verbs = tenantVerbs(group, entry.resource, '', scope, entry.verbs);
  if (verbs === null) return null;
  const responseKind = groupVersionKindToTenant(entry.responseKind, tenant);
  if (responseKind === null) return null;
  const view: Json = { ...entry, verbs };
  if (responseKind !== undefined) view.responseKind = responseKind;
  if (Array.isArray(entry.subresources)) {
    view.subresources = entry.subresources
      .map((subresource) => subresourceDiscoveryToTenant(subresource, group, entry.resource as string, scope, tenant))
      .filter((subresource) => subresource !== null);
  }
  return view;
}

/** An APIGroupDiscovery as the tenant sees it; null when hidden or left with no versions. Versions keep their order: the first is the preferred one. */
function groupDiscoveryToTenant(entry: unknown, tenant: TenantId): Json | null {
  if (!isObject(entry)) return null;
  const metadata = isObject(entry.metadata) ? entry.metadata : {};
  if (metadata.name !== undefined && typeof metadata.name !== 'string') return null;
  const upstreamGroup = metadata.name ?? ''; // the core group has no name
  const group = visibleGroup(upstreamGroup, tenant);
  if (group === null) return null;
  const versions: Json[] = [];
  for (const version of arrayOf(entry.versions)) {
    if (!isObject(version)) continue;
    const resources = arrayOf(version.resources).map((resource) => resourceDiscoveryToTenant(resource, group, tenant));
    const visible = resources.filter((resource) => resource !== null);
    if (visible.length > 0) versions.push({ ...version, resources: visible });
  }
  if (versions.length === 0) return null;
  return { ...entry, metadata: group === upstreamGroup ? metadata : { ...metadata, name: group }, versions };
}

/** The tenant's view of an APIGroupDiscoveryList, what `/api` and `/apis` answer to clients asking aggregated discovery. */
export function aggregatedDiscoveryToTenant(body: unknown, tenant: TenantId): Json {
  if (!isObject(body) || !Array.isArray(body.items)) throw malformed('APIGroupDiscoveryList');
  const items = body.items.map((item) => groupDiscoveryToTenant(item, tenant));
  return { ...body, items: items.filter((item) => item !== null) };
}

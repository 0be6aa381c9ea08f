// The tenant's view of OpenAPI (what kubectl validates and explains with). v3: the index lists only groups the
// tenant may see, its own CRD groups without the prefix, and a tenant CRD group's document is rewritten to its names.
// v2, one document for the whole API: paths the tenant cannot use removed, its own CRD groups' paths and schemas
// renamed, and only the schemas the remaining paths lead to kept.
import { badGateway } from '../errors/status-error.ts';
import { kindOf, tenantMay } from './kinds.ts';
import { toUpstreamName, type TenantId } from './prefix.ts';
import { parseRequestInfo, type RequestInfo } from './request-info.ts';
import { isObject } from './rules/json.ts';
import type { Json } from './rules/rule.ts';
import { groupVersionKindToTenant, visibleGroup } from './visibility.ts';

/** `apis/<group>` and `apis/<group>/<version>` entries of the v3 index. */
const GROUP_PATH = /^apis\/([^/]+)(?:\/([^/]+))?$/;

interface OpenApiIndex {
  paths?: Record<string, { serverRelativeURL?: string }>;
}

/**
 * The v3 index with only the group versions the tenant may see, under its names. `servesVisibleResources(upstreamGroup,
 * version)` says whether a version has anything the tenant may see (certificates.k8s.io/v1 has only CSRs); a group's
 * own entry goes with its last version. `urlPrefix`: the tenant's path the index was asked under (`/tenants/<id>`),
 * put before each document's URL so that clients fetch (and cache) the documents under it too.
 */
export function openapiIndexToTenant(
  index: OpenApiIndex,
  tenant: TenantId,
  servesVisibleResources: (group: string, version: string) => boolean = () => true,
  urlPrefix = '',
): OpenApiIndex {
  const entries = Object.entries(isObject(index.paths) ? index.paths : {});
  const groupsWithVersions = new Set<string>();
  for (const [path] of entries) {
    const match = GROUP_PATH.exec(path);
    if (match?.[2] !== undefined && servesVisibleResources(match[1]!, match[2])) groupsWithVersions.add(match[1]!);
  }
  const paths: Record<string, { serverRelativeURL?: string }> = {};
  for (const [path, entry] of entries) {
    const match = GROUP_PATH.exec(path);
    if (match === null) {
      paths[path] = entry; // api, api/v1, version, .well-known...
      continue;
    }
    const [, upstreamGroup, version] = match as unknown as [string, string, string | undefined];
    const group = visibleGroup(upstreamGroup, tenant);
    if (group === null || !groupsWithVersions.has(upstreamGroup) || (version !== undefined && !servesVisibleResources(upstreamGroup, version))) continue;
    if (group === upstreamGroup) {
      paths[path] = entry;
      continue;
    }
    const tenantPath = `apis/${group}${version === undefined ? '' : '/' + version}`;
    paths[tenantPath] = { ...entry, serverRelativeURL: entry.serverRelativeURL?.replace(`/${path}`, `/${tenantPath}`) };
  }
  if (urlPrefix !== '') {
    for (const [path, entry] of Object.entries(paths)) {
      if (entry.serverRelativeURL?.startsWith('/') === true) paths[path] = { ...entry, serverRelativeURL: urlPrefix + entry.serverRelativeURL };
    }
  }
  return { ...index, paths };
}

/** `example.com` → `com.example`: how OpenAPI names a group in schema names. */
function reversedDomain(group: string): string {
  return group.split('.').reverse().join('.');
}

/** A tenant CRD group's OpenAPI document with the upstream group (and its reversed form in schema names) replaced. */
export function openapiGroupDocToTenant(text: string, tenant: TenantId, group: string): string {
  const upstreamGroup = toUpstreamName(group, tenant);
  return text.replaceAll(upstreamGroup, group).replaceAll(reversedDomain(upstreamGroup), reversedDomain(group));
}

// ---- OpenAPI v2 ----

const OPERATION_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch'];
const GROUP_VERSION_KIND = 'x-kubernetes-group-version-kind';
/** The sections of a v2 document that `$ref`s point into. */
type Section = 'definitions' | 'parameters' | 'responses';
const REFERENCE = /^#\/(definitions|parameters|responses)\/(.+)$/;

/** kube-openapi's ToValidOperationID: how a group is spelled inside operation ids (capitalized) and tags. */
function operationIdWord(text: string, capitalizeFirst: boolean): string {
  let word = '';
  let capitalize = capitalizeFirst;
  let first = true;
  for (const char of text) {
    if (/\p{L}/u.test(char) || char === '_' || (!first && /\p{Nd}/u.test(char))) {
      word += capitalize ? char.toUpperCase() : char;
      capitalize = false;
    } else {
      capitalize = true;
    }
    first = false;
  }
  return word;
}

/** The request a path and method make, as the pipeline classifies it; null for a path it would refuse. */
function requestOf(method: string, path: string): RequestInfo | null {
  try {
    return parseRequestInfo(method.toUpperCase(), path, new URLSearchParams());
  } catch {
    return null;
  }
}

/** `{group, version, kind}` or a list of them, with the tenant's groups; undefined when none is left to show. */
function groupVersionKindsToTenant(value: unknown, tenant: TenantId): unknown {
  if (!Array.isArray(value)) return groupVersionKindToTenant(value, tenant) ?? undefined;
  const visible = value.map((ref) => groupVersionKindToTenant(ref, tenant)).filter((ref) => ref !== null);
  return visible.length === 0 ? undefined : visible;
}

/** The tenant's names of its own CRD groups' schemas: `com.abc123-example.v1.Widget` → `com.example.v1.Widget`. */
function tenantSchemaNames(definitions: Json, tenant: TenantId): Map<string, string> {
  const names = new Map<string, string>();
  for (const [name, schema] of Object.entries(definitions)) {
    if (!isObject(schema)) continue;
    const refs = schema[GROUP_VERSION_KIND];
    for (const ref of Array.isArray(refs) ? refs : [refs]) {
      if (!isObject(ref) || typeof ref.group !== 'string') continue;
      const group = visibleGroup(ref.group, tenant);
      if (group === null || group === ref.group) continue;
      const upstreamStem = reversedDomain(ref.group) + '.';
      if (name.startsWith(upstreamStem)) names.set(name, reversedDomain(group) + '.' + name.slice(upstreamStem.length));
      break;
    }
  }
  return names;
}

/** True for a schema that belongs only to groups the tenant must not see (another tenant's kinds). */
function belongsToHiddenGroups(schema: Json, tenant: TenantId): boolean {
  const refs = schema[GROUP_VERSION_KIND];
  return refs !== undefined && (!Array.isArray(refs) || refs.length > 0) && groupVersionKindsToTenant(refs, tenant) === undefined;
}

/**
 * A path item as the tenant sees it (under its own name), or null when it leads nowhere the tenant may go: hidden
 * groups, other tenants' and nobody's custom groups, hidden kinds; shared kinds keep their read operations only.
 */
function pathItemToTenant(path: string, item: Json, tenant: TenantId): { path: string; item: Json; resource: boolean } | null {
  const upstreamGroup = /^\/apis\/([^/]+)(\/|$)/.exec(path)?.[1] ?? '';
  const group = upstreamGroup === '' ? '' : visibleGroup(upstreamGroup, tenant);
  if (group === null) return null;
  const own = group !== upstreamGroup;
  const view: Json = {};
  let operations = 0;
  let resource = false;
  for (const [key, value] of Object.entries(item)) {
    if (!OPERATION_METHODS.includes(key)) {
      view[key] = value; // path-level parameters, extensions
      continue;
    }
    operations++;
    const request = requestOf(key, path);
    if (request === null) continue;
    if (request.isResourceRequest) {
      resource = true;
      const row = kindOf(group, request.resource, request.namespace === '' ? 'Cluster' : 'Namespaced');
      if (!tenantMay(row, request.verb, request.subresource)) continue;
    }
    if (own && isObject(value)) {
      if (typeof value.operationId === 'string')
        value.operationId = value.operationId.replace(operationIdWord(upstreamGroup, true), operationIdWord(group, true));
      if (Array.isArray(value.tags)) {
        value.tags = value.tags.map((tag) =>
          typeof tag === 'string' ? tag.replace(operationIdWord(upstreamGroup, false), operationIdWord(group, false)) : tag,
        );
      }
    }
    view[key] = value;
  }
  if (operations > 0 && !OPERATION_METHODS.some((method) => method in view)) return null;
  return { path: own ? `/apis/${group}${path.slice('/apis/'.length + upstreamGroup.length)}` : path, item: view, resource };
}

/**
 * The tenant's view of the OpenAPI v2 document (`/openapi/v2`). Converts in place: the upstream document is not read
 * afterwards. Schemas and shared parameters are kept when a kept path leads to them, so those of removed paths go
 * with them (the upstream document has no schema that no path reaches).
 */
export function openapiV2ToTenant(body: unknown, tenant: TenantId): Json {
  if (!isObject(body) || !isObject(body.paths)) throw badGateway('the upstream OpenAPI v2 document is malformed');
  const upstream: Record<Section, Json> = {
    definitions: isObject(body.definitions) ? body.definitions : {},
    parameters: isObject(body.parameters) ? body.parameters : {},
    responses: isObject(body.responses) ? body.responses : {},
  };
  const schemaNames = tenantSchemaNames(upstream.definitions, tenant);

  const views = Object.entries(body.paths)
    .map(([path, item]) => (isObject(item) ? pathItemToTenant(path, item, tenant) : null))
    .filter((view) => view !== null);
  // A group's and a version's discovery paths stay only while a resource path under them does, as in discovery.
  const served = new Set<string>();
  for (const view of views) {
    const match = view.resource ? /^(\/apis\/[^/]+\/)([^/]+\/)/.exec(view.path) : null;
    if (match !== null) served.add(match[1]!).add(match[1]! + match[2]!);
  }
  const paths = Object.fromEntries(
    views.filter((view) => view.resource || !/^\/apis\/[^/]+\/([^/]+\/)?$/.test(view.path) || served.has(view.path)).map((view) => [view.path, view.item]),
  );

  // Walk from the kept paths: every reference reached keeps its target (renamed when it is the tenant's own schema),
  // every group-version-kind names the tenant's groups.
  const reached: Record<Section, Set<string>> = { definitions: new Set(), parameters: new Set(), responses: new Set() };
  const pending: Json[] = [];
  const follow = (ref: string): string => {
    const match = REFERENCE.exec(ref);
    if (match === null) return ref;
    const section = match[1] as Section;
    const name = match[2]!;
    if (!reached[section].has(name)) {
      const target = Object.hasOwn(upstream[section], name) ? upstream[section][name] : undefined;
      // Another tenant's schema stays out even if something pointed at it: a dangling reference leaks nothing.
      if (isObject(target) && !(section === 'definitions' && belongsToHiddenGroups(target, tenant))) {
        reached[section].add(name);
        pending.push(target);
      }
    }
    return section === 'definitions' && schemaNames.has(name) ? `#/definitions/${schemaNames.get(name)}` : ref;
  };
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const element of node) visit(element);
      return;
    }
    if (!isObject(node)) return;
    for (const key of Object.keys(node)) {
      const value = node[key];
      if (key === '$ref' && typeof value === 'string') {
        node[key] = follow(value);
      } else if (key === GROUP_VERSION_KIND) {
        const refs = groupVersionKindsToTenant(value, tenant);
        if (refs === undefined) delete node[key];
        else node[key] = refs;
      } else {
        visit(value);
      }
    }
  };
  visit(paths);
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) visit(next);

  // In the upstream's order (sorted by name), under the tenant's names.
  const kept = (section: Section): Json =>
    Object.fromEntries(
      Object.entries(upstream[section])
        .filter(([name]) => reached[section].has(name))
        .map(([name, value]) => [section === 'definitions' ? (schemaNames.get(name) ?? name) : name, value]),
    );
  const view: Json = { ...body, paths, definitions: kept('definitions'), parameters: kept('parameters') };
  if (isObject(body.responses)) view.responses = kept('responses');
  if (!isObject(body.parameters)) delete view.parameters;
  return view;
}

// The tenant's view of OpenAPI v3 (what kubectl validates and explains with): the index lists only groups the
// tenant may see, its own CRD groups without the prefix; a tenant CRD group's document is rewritten to its names.
import { toUpstreamName, type TenantId } from './prefix.ts';
import { visibleGroup } from './visibility.ts';

const GROUP_PATH = /^apis\/([^/]+)\/([^/]+)$/;

interface OpenApiIndex {
  paths?: Record<string, { serverRelativeURL?: string }>;
}

export function openapiIndexToTenant(index: OpenApiIndex, tenant: TenantId): OpenApiIndex {
  const paths: Record<string, { serverRelativeURL?: string }> = {};
  for (const [path, entry] of Object.entries(index.paths ?? {})) {
    const match = GROUP_PATH.exec(path);
    if (match === null) {
      paths[path] = entry; // api/v1, version, .well-known...
      continue;
    }
    const upstreamGroup = match[1]!;
    const group = visibleGroup(upstreamGroup, tenant);
    if (group === null) continue;
    if (group === upstreamGroup) {
      paths[path] = entry;
      continue;
    }
    const tenantPath = `apis/${group}/${match[2]}`;
    paths[tenantPath] = { ...entry, serverRelativeURL: entry.serverRelativeURL?.replace(`/${path}`, `/${tenantPath}`) };
  }
  return { ...index, paths };
}

function reversedDomain(group: string): string {
  return group.split('.').reverse().join('.');
}

/** A tenant CRD group's OpenAPI document with the upstream group (and its reversed form in schema names) replaced. */
export function openapiGroupDocToTenant(text: string, tenant: TenantId, group: string): string {
  const upstreamGroup = toUpstreamName(group, tenant);
  return text.replaceAll(upstreamGroup, group).replaceAll(reversedDomain(upstreamGroup), reversedDomain(group));
}

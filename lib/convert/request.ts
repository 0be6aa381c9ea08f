// The upstream request target for a tenant's request: path segments and query selectors under the tenant's prefix.
// Never produces a path or selector that could name an object outside the tenant's prefix (shared kinds excepted).
import type { KindRow } from './kinds.ts';
import type { TenantId } from './prefix.ts';
import type { RequestInfo } from './request-info.ts';
import { apiGroupToUpstream, nameMappingOfRow, nameToUpstream, namespaceToUpstream } from './rules/index.ts';
import { mergeLabelSelector, rewriteFieldSelector } from './selectors.ts';

const enc = encodeURIComponent;

const DNS_SUBDOMAIN = '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*';
/** The exact upstream paths of discovery and OpenAPI documents: characters that could end or redirect a path never match. */
const DISCOVERY_DOCUMENT = new RegExp(`^/(api(/v1)?|apis(/${DNS_SUBDOMAIN}(/[a-z0-9]+)?)?|openapi/v2|openapi/v3(/api/v1|/apis/${DNS_SUBDOMAIN}/[a-z0-9]+)?)$`);

/**
 * True for an upstream path (without query) that names a discovery or OpenAPI document and nothing else: the only
 * requests tenantgate makes for a tenant with its own identity, since the answer is converted to the tenant's view.
 */
export function isDiscoveryDocumentPath(upstreamPath: string): boolean {
  return DISCOVERY_DOCUMENT.test(upstreamPath);
}

/** True when a list or watch of this kind spans more than one of the tenant's namespaces (or is cluster-scoped). */
function spansNamespaces(info: RequestInfo, row: KindRow): boolean {
  return row.scope === 'Cluster' || info.namespace === '';
}

/** The upstream path and query of a tenant's resource request (`row` from the table of kinds). */
export function upstreamResourceTarget(info: RequestInfo, row: KindRow, query: URLSearchParams, tenant: TenantId): string {
  let path = info.apiPrefix === 'api' ? `/api/${enc(info.apiVersion)}` : `/apis/${enc(apiGroupToUpstream(info.apiGroup, tenant))}/${enc(info.apiVersion)}`;
  const [resource, name, ...rest] = info.parts;
  if (info.resource === 'namespaces') {
    path += '/namespaces';
    if (name !== undefined) path += '/' + enc(namespaceToUpstream(name, tenant));
  } else {
    if (info.namespace !== '' && row.scope === 'Namespaced') path += '/namespaces/' + enc(namespaceToUpstream(info.namespace, tenant));
    path += '/' + enc(resource!);
    if (name !== undefined) path += '/' + enc(nameToUpstream(nameMappingOfRow(row), name, tenant));
  }
  for (const part of rest) path += '/' + enc(part);

  const upstreamQuery = new URLSearchParams(query);
  // The legacy /watch/ path form becomes ?watch=true: one form to convert and to forward.
  if (info.verb === 'watch') upstreamQuery.set('watch', 'true');
  const fieldSelector = query.get('fieldSelector');
  if (fieldSelector !== null && fieldSelector !== '') {
    const mapping = nameMappingOfRow(row);
    upstreamQuery.set(
      'fieldSelector',
      rewriteFieldSelector(fieldSelector, tenant, {
        clusterScoped: mapping !== 'plain', // shared kinds (nodes) keep their names
        resource: info.resource,
        nameToUpstream: (name) => nameToUpstream(mapping, name, tenant),
      }),
    );
  }
  if ((info.verb === 'list' || info.verb === 'watch' || info.verb === 'deletecollection') && row.tenancy === 'tenant') {
    const labelSelector = query.get('labelSelector');
    // Server-side filtering where the tenant label finds every object of the kind; elsewhere the prefix check of
    // the response stream is the filter (and still validates the client's selector against the reserved label).
    if (row.listPath === 'label-filter' && spansNamespaces(info, row)) upstreamQuery.set('labelSelector', mergeLabelSelector(labelSelector, tenant));
    else if (labelSelector !== null) mergeLabelSelector(labelSelector, tenant);
  }
  const search = upstreamQuery.toString();
  return search === '' ? path : `${path}?${search}`;
}

/** Discovery and OpenAPI v3 paths name groups: a tenant's CRD group maps to its upstream group, other paths stay. */
export function upstreamDiscoveryPath(path: string, tenant: TenantId): string {
  const match = /^(\/openapi\/v3)?\/apis\/([^/]+)(\/[^/]+)?\/?$/.exec(path);
  return match === null ? path : `${match[1] ?? ''}/apis/${apiGroupToUpstream(match[2]!, tenant)}${match[3] ?? ''}`;
}

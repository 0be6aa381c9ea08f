// The upstream request target for a tenant's request: path segments and query selectors under the tenant's prefix.
// Never produces a path or selector that could name an object outside the tenant's prefix (shared kinds excepted).
import type { KindRow } from './kinds.ts';
import type { TenantId } from './prefix.ts';
import type { RequestInfo } from './request-info.ts';
import { apiGroupToUpstream, documentGroupToUpstream, nameMappingOfRow, nameToUpstream, namespaceToUpstream } from './rules/index.ts';
import { mergeLabelSelector, rewriteFieldSelector } from './selectors.ts';
import { signerNameSelectorValue } from './rules/signers.ts';
import { platformPriorityClassOf, priorityClassNameToUpstream, type PriorityClassNames } from './rules/priority-classes.ts';
import { forbidden, notFound } from '../errors/status-error.ts';

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

/**
 * The upstream name of an object of the request's kind that the tenant calls `name`. `names`: which PriorityClasses
 * are the platform's to the tenant (without it, all are).
 */
export function upstreamObjectName(info: RequestInfo, row: KindRow, name: string, tenant: TenantId, names?: PriorityClassNames): string {
  if (row.rule === 'priorityclass') return priorityClassNameToUpstream(name, names ?? { tenant });
  return info.resource === 'namespaces' ? namespaceToUpstream(name, tenant) : nameToUpstream(nameMappingOfRow(row), name, tenant);
}

const WRITE_VERBS: ReadonlySet<string> = new Set(['create', 'update', 'patch', 'delete']);

/**
 * The upstream path and query of a tenant's resource request (`row` from the table of kinds). `names`: as for
 * upstreamObjectName. Throws 403 for a write to one of the platform's PriorityClasses (read-only to tenants).
 */
export function upstreamResourceTarget(info: RequestInfo, row: KindRow, query: URLSearchParams, tenant: TenantId, names?: PriorityClassNames): string {
  let path =
    info.apiPrefix === 'api'
      ? `/api/${enc(info.apiVersion)}`
      : `/apis/${enc(apiGroupToUpstream(info.apiGroup, tenant, info.resource))}/${enc(info.apiVersion)}`;
  const [resource, name, ...rest] = info.parts;
  if (info.resource === 'namespaces') {
    path += '/namespaces';
  } else {
    if (info.namespace !== '' && row.scope === 'Namespaced') path += '/namespaces/' + enc(namespaceToUpstream(info.namespace, tenant));
    path += '/' + enc(resource!);
  }
  if (name !== undefined) {
    const platformClass = row.rule === 'priorityclass' && WRITE_VERBS.has(info.verb) ? platformPriorityClassOf(name, names ?? { tenant }) : undefined;
    if (platformClass === 'hidden')
      throw notFound(`priorityclasses.scheduling.k8s.io ${JSON.stringify(name)} not found`, { name, group: 'scheduling.k8s.io', kind: 'priorityclasses' });
    if (platformClass === 'usable') {
      throw forbidden(
        `priorityclasses.scheduling.k8s.io ${JSON.stringify(name)} is forbidden: it is one of the platform's priority classes, shared by all tenants of this cluster and read-only`,
        {
          name,
          group: 'scheduling.k8s.io',
          kind: 'priorityclasses',
        },
      );
    }
    path += '/' + enc(upstreamObjectName(info, row, name, tenant, names));
  }
  for (const part of rest) path += '/' + enc(part);

  // A get or write without a query (the most common request): nothing to copy or convert. (Lists and watches may
  // gain a label selector below even without one.)
  if (query.size === 0 && info.verb !== 'watch' && info.verb !== 'list' && info.verb !== 'deletecollection') return path;
  const upstreamQuery = new URLSearchParams(query);
  // The alpha sharded list and watch (1.36): shards and the answer's shardInfo would be computed over upstream names,
  // which tenants never see. Answered as with the feature off (the rig's apiserver ignores the parameter): never asked.
  upstreamQuery.delete('shardSelector');
  // The legacy /watch/ path form becomes ?watch=true: one form to convert and to forward.
  if (info.verb === 'watch') upstreamQuery.set('watch', 'true');
  const fieldSelector = query.get('fieldSelector');
  if (fieldSelector !== null && fieldSelector !== '') {
    const mapping = nameMappingOfRow(row);
    const priorityClasses = row.rule === 'priorityclass';
    upstreamQuery.set(
      'fieldSelector',
      rewriteFieldSelector(fieldSelector, tenant, {
        clusterScoped: mapping !== 'plain' || priorityClasses, // shared kinds (nodes) keep their names
        resource: info.resource,
        nameToUpstream: (name) => (priorityClasses ? priorityClassNameToUpstream(name, names ?? { tenant }) : nameToUpstream(mapping, name, tenant)),
        mappedFields: row.rule === 'certificatesigningrequest' ? { 'spec.signerName': (name) => signerNameSelectorValue(name, tenant) } : undefined,
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
  // The tenant deletes only its own PriorityClasses, never the platform's (which the confinement policy would refuse
  // upstream, one by one, part way through).
  if (info.verb === 'deletecollection' && row.rule === 'priorityclass')
    upstreamQuery.set('labelSelector', mergeLabelSelector(query.get('labelSelector'), tenant));
  const search = upstreamQuery.toString();
  return search === '' ? path : `${path}?${search}`;
}

/**
 * The non-resource paths a tenant may read, as decoded segments: discovery (`/api`, `/apis` and their groups and
 * versions), `/version` and OpenAPI (v2, the v3 index and its group-version documents). Anything else is not found.
 */
function nonResourceForm(segments: readonly string[]): 'plain' | 'group' | 'openapi-group' | null {
  const [first, second, third] = segments;
  switch (first) {
    case 'version':
      return segments.length === 1 ? 'plain' : null;
    case 'api':
      return segments.length <= 2 ? 'plain' : null;
    case 'apis':
      return segments.length === 1 ? 'plain' : segments.length <= 3 ? 'group' : null;
    case 'openapi':
      if (second === 'v2') return segments.length === 2 ? 'plain' : null;
      if (second !== 'v3') return null;
      if (segments.length === 2 || (third === 'api' && segments.length === 4)) return 'plain';
      return third === 'apis' && segments.length === 5 ? 'openapi-group' : null;
    default:
      return null;
  }
}

/**
 * The upstream path of a tenant's discovery or OpenAPI request, from its decoded path: re-encoded segment by segment
 * (so nothing the tenant encoded can end or change the path upstream), a tenant CRD group under the tenant's prefix.
 * Null for any other path: it does not exist for tenants.
 */
export function upstreamNonResourcePath(decodedPath: string, tenant: TenantId): string | null {
  // A trailing slash names the same document (the apiserver answers both).
  const trimmed = decodedPath.length > 1 && decodedPath.endsWith('/') ? decodedPath.slice(0, -1) : decodedPath;
  const segments = trimmed.split('/').slice(1);
  if (segments.some((segment) => segment === '')) return null;
  const form = nonResourceForm(segments);
  if (form === null) return null;
  const groupAt = form === 'group' ? 1 : form === 'openapi-group' ? 3 : -1;
  let path = '';
  for (let i = 0; i < segments.length; i++) path += '/' + enc(i === groupAt ? documentGroupToUpstream(segments[i]!, tenant) : segments[i]!);
  return path;
}

// Forwards a tenant's classified request upstream under the tenant's prefix and converts the answer back:
// lists and watches item by item as bytes arrive, single objects, Tables, Status errors and discovery whole.
// Never sends the client a byte of an upstream object before it has been converted to the tenant's view.
import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { OutgoingHttpHeaders } from 'node:http2';
import { pipeline } from 'node:stream';
import { shadowReviewStatus, type AccessReviews } from '../auth/access-review.ts';
import { upstreamIdentityOf } from '../auth/impersonation.ts';
import { openUpstreamStream } from './forward.ts';
import { upstreamJson } from './client.ts';
import { applyJsonPatch, parseJsonPatch } from '../convert/json-patch.ts';
import { parseBody, parseJsonOrYamlBody } from '../convert/tenant-body.ts';
import { stringifyWithDuplicates } from '../convert/duplicate-fields.ts';
import type { RequestInfo } from '../convert/request-info.ts';
import { aggregatedDiscoveryToTenant, discoveryToTenant, isAggregatedDiscoveryJson } from '../convert/discovery.ts';
import { isTenantCrdGroup, isWholeObjectSubresource, type KindRow } from '../convert/kinds.ts';
import { HIDDEN_GROUPS } from '../convert/visibility.ts';
import { openapiGroupDocToTenant, openapiIndexToTenant } from '../convert/openapi.ts';
import { prefersOpenApiV2Protobuf } from '../convert/openapi-v2-protobuf.ts';
import { isProtobuf, PROTOBUF_MEDIA_TYPE, protobufBodyToUpstream } from '../convert/protobuf.ts';
import { partialObjectMetadataListToProtobuf, partialObjectMetadataToProtobuf, PARTIAL_METADATA_GROUP_VERSION, preferredPartialMetadataProtobuf } from '../convert/partial-metadata-protobuf.ts';
import { protobufObjectToJson } from '../convert/protobuf-decode.ts';
import { strategicToMergePatch, touchesMergeLists } from '../convert/strategic-merge.ts';
import { isObject } from '../convert/rules/json.ts';
import { validatedByRealKind } from './stored-kind-validation.ts';
import { TENANT_LABEL, type TenantId } from '../convert/prefix.ts';
import { upstreamNonResourcePath, upstreamResourceTarget } from '../convert/request.ts';
import { apiGroupToUpstream, nameMappingOfRow, nameToUpstream, namespaceToUpstream, objectToTenant, objectToUpstream, type ConvertContext } from '../convert/rules/index.ts';
import { apiVersionToTenant, groupOfApiVersion } from '../convert/rules/api-groups.ts';
import { statusToTenant } from '../convert/status.ts';
import { isTable, rowObjectsFor, tableToTenant, type RowObjects } from '../convert/table.ts';
import type { RequestContext } from '../server/context.ts';
import { sendStatus } from '../server/status.ts';
import { badGateway, badRequest, internalError, invalid, notFound, requestEntityTooLarge, StatusError } from '../errors/status-error.ts';
import { ListRewriter, WatchRewriter } from '../stream/tenant-view.ts';
import { tenantViewSpecOf } from '../stream/view-spec.ts';
import { listAcrossNamespaces } from './merged-list.ts';
import { readBody, tenantStatusError } from './read-body.ts';
import { grantTenantNamespace } from '../tenants/bootstrap.ts';
import { log } from '../log.ts';
import type { TenantgateMetrics } from '../metrics/metrics.ts';
import type { DiscoveryCache } from './discovery.ts';
import { dropImpersonation, tenantResponseHeaders, upstreamRequestHeaders } from './headers.ts';
import type { UpstreamPool } from './pool.ts';
import { answerOpenApiV2, type OpenApiV2Revalidation, type TenantOpenApiV2Cache } from './openapi-v2-cache.ts';

/** The apiserver's own limit for a request body. */
const MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024;
const MAX_RESPONSE_BODY_BYTES = 64 * 1024 * 1024;

export interface TenantForwardDeps {
  pool: UpstreamPool;
  discovery: DiscoveryCache;
  /** The tenant's RBAC at the cluster scope (its ClusterRoleBindings), asked upstream about shadow identities. */
  access: AccessReviews;
  /** Where upstream latency, watches and rewrites are counted; null: not counted. */
  metrics?: TenantgateMetrics | null;
  /** Hosts tenants' admission webhooks may call by URL; none when omitted. */
  webhookUrlHosts?: ReadonlySet<string> | undefined;
  /**
   * Called with a tenant's CRD as the upstream stored it, before its create or update is answered: whatever the tenant
   * needs to use the CRD's resources is in place by then. Absent: nothing waits.
   */
  customResourceDefinitionWritten?: ((tenant: TenantId, crd: unknown) => Promise<void>) | undefined;
  /** Tenants' views of OpenAPI v2, kept while the upstream's ETag holds; converted on every request when omitted. */
  openapiV2?: TenantOpenApiV2Cache | undefined;
}

function conversionContext(tenant: TenantId, deps: TenantForwardDeps): ConvertContext {
  const { discovery } = deps;
  return {
    tenant,
    webhookUrlHosts: deps.webhookUrlHosts,
    scopeOf: (group, resource) => discovery.scopeOf(group, resource),
    kindScope: (apiVersion, kind) => discovery.scopeOfKind(groupOfApiVersion(apiVersion), kind),
    servesTenantResources: (group, version) => discovery.servesTenantResources(group, version),
  };
}

/**
 * Accept for the upstream: JSON only (protobuf is not converted yet), keeping Table negotiation; for discovery and
 * OpenAPI, plain JSON or aggregated discovery (v2) as JSON, the only forms their converters read.
 */
export function jsonAccept(accept: string | undefined, discovery: boolean): string {
  if (accept === undefined) return 'application/json';
  const isPlainJson = (part: string) => part.split(';')[0]!.trim() === 'application/json' && !/;\s*(g|v|as)\s*=/.test(part);
  const isJson = discovery ? (part: string) => isAggregatedDiscoveryJson(part) || isPlainJson(part) : (part: string) => part.trim().startsWith('application/json');
  const kept = accept.split(',').filter(isJson);
  return kept.length === 0 ? 'application/json' : kept.join(',');
}

/** A JSON-patch may not touch what makes an object the tenant's. */
const PROTECTED_PATCH_PATHS = ['/metadata/namespace', '/metadata/name', '/metadata/labels/' + TENANT_LABEL.replace('/', '~1')];

/** A merge or strategic merge patch may not delete what tenantgate forces (the tenant label, a webhook's selectors). */
function refuseDeletingDirectives(value: unknown, inList: boolean, path: string): void {
  if (typeof value !== 'object' || value === null) return;
  if (Array.isArray(value)) {
    value.forEach((item, i) => refuseDeletingDirectives(item, true, `${path}[${i}]`));
    return;
  }
  for (const [key, child] of Object.entries(value)) {
    // In a list, {"$patch": "delete"} removes one element; in an object it removes the whole object.
    if (key === '$patch' && child === 'delete' && !inList) throw invalid(`the patch may not delete ${path || 'the object'} with $patch: tenantgate keeps fields there`);
    refuseDeletingDirectives(child, false, path === '' ? key : `${path}.${key}`);
  }
}

/** Patches of the object itself (not of a subresource such as scale) go through the kind's rules. */
function patchesTheObject(info: RequestInfo, row: KindRow): boolean {
  return info.verb === 'patch' && isWholeObjectSubresource(row, info.subresource);
}

/**
 * The body the upstream gets for a create, update or patch. Members the client wrote twice are written twice again
 * (`findDuplicates`: its fieldValidation is not Ignore), so the apiserver reports them as it would have.
 */
function requestBodyToUpstream(text: string, contentType: string, ctx: RequestContext, convert: ConvertContext, findDuplicates: boolean): string {
  const info = ctx.info!;
  const row = ctx.row!;
  if (contentType.includes('json-patch')) {
    // Subresources (scale, ...) only: JSON patches of the object are applied by tenantgate (jsonPatchToUpdate).
    for (const op of parseJsonPatch(text) as { path?: unknown; from?: unknown }[]) {
      for (const path of [op.path, op.from]) {
        if (typeof path === 'string' && (path === '/metadata/labels' || path === '/metadata' || PROTECTED_PATCH_PATHS.some((p) => path === p || path.startsWith(p + '/')))) {
          throw invalid(`the JSON patch may not change ${path}: tenantgate manages it`);
        }
      }
    }
    return text;
  }
  const { value, duplicates } = parseBody(text, contentType, findDuplicates);
  const body: any = value;
  const wholeObject = info.verb !== 'patch' || contentType.includes('apply-patch');
  if (isWholeObjectSubresource(row, info.subresource) && wholeObject) return stringifyWithDuplicates(objectToUpstream(body, convert, row, info.verb === 'create' ? 'create' : 'update'), duplicates);
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw badRequest('the request body must be a JSON object');
  const metadata = body.metadata;
  if (metadata === null || (typeof metadata === 'object' && metadata.labels === null)) {
    throw invalid(`the patch may not remove every label: tenantgate keeps ${TENANT_LABEL}; remove labels one by one`);
  }
  if (typeof metadata === 'object' && metadata !== undefined && typeof metadata.labels === 'object' && TENANT_LABEL in metadata.labels) {
    throw invalid(`the label ${TENANT_LABEL} is managed by tenantgate`);
  }
  if (patchesTheObject(info, row)) {
    // A partial object: the kind's rules convert (and force) what it carries, as for a whole one.
    refuseDeletingDirectives(body, false, '');
    return stringifyWithDuplicates(objectToUpstream(body, convert, row, 'patch'), duplicates);
  }
  // Subresource bodies (scale, eviction, binding...): only the names they carry change.
  if (typeof metadata === 'object' && metadata !== null) {
    if (typeof metadata.namespace === 'string') metadata.namespace = namespaceToUpstream(metadata.namespace, convert.tenant);
    if (typeof metadata.name === 'string') metadata.name = nameToUpstream(nameMappingOfRow(row), metadata.name, convert.tenant);
  }
  return stringifyWithDuplicates(body, duplicates);
}

/**
 * A JSON patch of the object names paths in the tenant's view, which the rules may rewrite upstream: tenantgate
 * reads the object, applies the patch to the tenant's view, converts the result and writes it back (an update at
 * the resourceVersion read, so a concurrent write answers 409 rather than being lost).
 */
async function jsonPatchToUpdate(text: string, target: string, headers: OutgoingHttpHeaders, ctx: RequestContext, pool: UpstreamPool, convert: ConvertContext): Promise<string> {
  const ops = parseJsonPatch(text);
  const view = await currentTenantView(target, headers, ctx, pool, convert);
  return JSON.stringify(objectToUpstream(applyJsonPatch(view, ops), convert, ctx.row!, 'update'));
}

/** The object a request names, read upstream as the caller and converted to the tenant's view (404 when not the tenant's). */
async function currentTenantView(target: string, headers: OutgoingHttpHeaders, ctx: RequestContext, pool: UpstreamPool, convert: ConvertContext): Promise<Record<string, unknown>> {
  const current = await upstreamJson(pool, 'GET', target.split('?')[0]!, undefined, impersonationOf(headers));
  if (current.status !== 200) throw tenantStatusError(current.status, current.body, convert.tenant);
  const view = objectToTenant(current.body, convert, ctx.row!);
  if (view === null) throw notFound(`${ctx.row!.resource} "${ctx.info!.name}" not found`);
  return view;
}

/**
 * A kind kept upstream as tenantgate's custom resources (the table's upstreamGroup) takes JSON bodies and JSON merge
 * patches only: a protobuf object (typed clients) is decoded to JSON, a strategic merge patch (kubectl patch, apply)
 * becomes the merge patch that does the same. Any other body is left as it is.
 */
async function storedKindBody(buffer: Buffer, contentType: string, target: string, headers: OutgoingHttpHeaders, ctx: RequestContext, pool: UpstreamPool, convert: ConvertContext): Promise<{ text: string; contentType: string } | null> {
  const info = ctx.info!;
  const row = ctx.row!;
  const wholeObject = isWholeObjectSubresource(row, info.subresource);
  if (isProtobuf(contentType) && wholeObject && (info.verb === 'create' || info.verb === 'update')) {
    return { text: JSON.stringify(protobufObjectToJson(buffer, row, info.apiVersion)), contentType: 'application/json' };
  }
  if (contentType.includes('strategic-merge-patch') && patchesTheObject(info, row)) {
    const patch = parseJsonOrYamlBody(buffer.toString('utf8'), contentType);
    const current = touchesMergeLists(row, patch) ? await currentTenantView(target, headers, ctx, pool, convert) : undefined;
    return { text: JSON.stringify(strategicToMergePatch(row, patch, current)), contentType: 'application/merge-patch+json' };
  }
  return null;
}

/** The impersonation (and credentials) headers of an upstream request, for tenantgate's own calls on its behalf. */
function impersonationOf(headers: OutgoingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const name in headers) if (name.startsWith('impersonate-') || name === 'authorization') out[name] = headers[name];
  return out;
}

function isOpenApiV2(path: string): boolean {
  return path === '/openapi/v2' || path === '/openapi/v2/';
}

/** tenantgate's host and port as the client reached them (HTTP/2 :authority, HTTP/1.1 Host), when well-formed. */
function addressReached(ctx: RequestContext): string | null {
  const authority = ctx.req.headers[':authority'] ?? ctx.req.headers.host;
  return typeof authority === 'string' && /^[A-Za-z0-9.\-[\]:]{1,300}$/.test(authority) ? authority : null;
}

/** The tenant's view of one whole answer: an object, a Table, a Status or a discovery document. */
function wholeBodyToTenant(
  body: any,
  status: number,
  ctx: RequestContext,
  convert: ConvertContext,
  visibleVersion: (group: string, version: string) => boolean,
  versionsOf: (upstreamGroup: string) => readonly string[],
  rowObjects: RowObjects,
): unknown {
  const tenant = convert.tenant;
  if (body?.kind === 'Status' || status >= 400) return statusToTenant(body, tenant);
  const row = ctx.row;
  if (row === null) {
    const path = ctx.info!.path;
    // (OpenAPI v2 is answered by answerOpenApiV2.)
    if (path === '/openapi/v3' || path === '/openapi/v3/') return openapiIndexToTenant(body, tenant, visibleVersion);
    const group = /^\/openapi\/v3\/apis\/([^/]+)\//.exec(path)?.[1];
    if (group !== undefined && HIDDEN_GROUPS.has(group)) return null; // not found, as in the index
    if (group !== undefined && isTenantCrdGroup(group)) return JSON.parse(openapiGroupDocToTenant(JSON.stringify(body), tenant, group));
    if (body?.kind === 'APIGroupDiscoveryList') return aggregatedDiscoveryToTenant(body, tenant);
    return discoveryToTenant(body, tenant, visibleVersion, addressReached(ctx), versionsOf);
  }
  if (isTable(body)) return tableToTenant(body, convert, row, rowObjects);
  if (Array.isArray(body?.items)) {
    // A list answered whole (e.g. deletecollection): the same per-item view as a streamed list.
    const items = body.items.map((item: unknown) => objectToTenant(item, convert, row)).filter((item: unknown) => item !== null);
    // A stored kind's list is in its upstream group (typed clients decode a list by its apiVersion).
    const apiVersion = typeof body.apiVersion === 'string' ? (apiVersionToTenant(body.apiVersion, tenant) ?? body.apiVersion) : body.apiVersion;
    return { ...body, apiVersion, items };
  }
  const view = objectToTenant(body, convert, row);
  if (view === null) throw notFound(`${row.resource} "${ctx.info!.name}" not found`);
  return view;
}

/** A discovery or OpenAPI request's upstream target; classification let through only paths that have one. */
function nonResourceTarget(decodedPath: string, query: URLSearchParams, tenant: TenantId): string {
  const path = upstreamNonResourcePath(decodedPath, tenant);
  if (path === null) throw notFound();
  const search = query.toString();
  return search === '' ? path : `${path}?${search}`;
}

/**
 * Upstream, a tenant identity holds rights only in namespaces that exist (RoleBindings in each), so a request in a
 * missing namespace is refused (403) where the apiserver would answer a tenant whose ClusterRoleBindings allow it
 * with "not found" (an empty list for a list). That answer, or null when the namespace exists or the tenant's RBAC
 * does not allow the request cluster-wide (the 403 stands).
 */
async function missingNamespaceAnswer(ctx: RequestContext, deps: TenantForwardDeps, upstreamNamespace: string): Promise<StatusError | object | null> {
  const info = ctx.info!;
  const identity = ctx.identity!;
  const tenant = identity.tenant!;
  const namespace = await upstreamJson(deps.pool, 'GET', `/api/v1/namespaces/${encodeURIComponent(upstreamNamespace)}`);
  if (namespace.status !== 404) return null;
  if (!(await deps.access.allowed(tenant, upstreamIdentityOf(identity), info.verb, apiGroupToUpstream(info.apiGroup, tenant), info.resource))) return null;
  const row = ctx.row!;
  if (info.verb === 'list') {
    return { kind: `${row.kind}List`, apiVersion: info.apiGroup === '' ? info.apiVersion : `${info.apiGroup}/${info.apiVersion}`, metadata: { resourceVersion: '' }, items: [] };
  }
  if (info.verb === 'create' || info.name === '') return notFound(`namespaces ${JSON.stringify(info.namespace)} not found`, { name: info.namespace, kind: 'namespaces' });
  return notFound(`${info.resource}${info.apiGroup === '' ? '' : '.' + info.apiGroup} ${JSON.stringify(info.name)} not found`, {
    name: info.name,
    ...(info.apiGroup === '' ? {} : { group: info.apiGroup }),
    kind: info.resource,
  });
}

/**
 * A denied access review at the cluster scope (no namespace) is asked again about the shadow identity, which holds
 * what the tenant's ClusterRoleBindings grant (`kubectl auth can-i list pods -A`): allowed when either is. In place.
 */
async function clusterReviewWithShadow(body: any, ctx: RequestContext, deps: TenantForwardDeps): Promise<void> {
  const spec = body?.spec;
  if (spec === undefined || body.status?.allowed === true) return;
  const namespace = spec.resourceAttributes?.namespace;
  if (typeof namespace === 'string' && namespace !== '') return;
  // A SubjectAccessReview asks about the user it names (upstream names already); a self review about the caller.
  const identity = ctx.row!.rule === 'subjectaccessreview' ? { user: String(spec.user ?? ''), groups: Array.isArray(spec.groups) ? spec.groups.map(String) : [] } : upstreamIdentityOf(ctx.identity!);
  const status = await shadowReviewStatus(deps.pool, identity, spec);
  if (status !== null) body.status = status;
}

export function forwardTenantRequest(ctx: RequestContext, deps: TenantForwardDeps): void {
  const { req, res } = ctx;
  const identity = ctx.identity!;
  const tenant = identity.tenant!;
  const info = ctx.info!;
  const row = ctx.row;
  const convert = conversionContext(tenant, deps);
  const queryStart = ctx.path.indexOf('?');
  const query = new URLSearchParams(queryStart === -1 ? '' : ctx.path.slice(queryStart + 1));
  // kubectl get asks for Tables; kinds whose rule reads more than metadata need whole objects in the rows.
  const rowObjects = row !== null && String(req.headers.accept ?? '').includes('as=Table') ? rowObjectsFor(query, row) : 'Object';
  const target = row === null ? nonResourceTarget(info.path, query, tenant) : upstreamResourceTarget(info, row, query, tenant);

  const headers: OutgoingHttpHeaders = upstreamRequestHeaders(req.headers, upstreamIdentityOf(identity), deps.pool);
  // A read at the cluster scope its RBAC allowed, or a discovery document (stages "classify" and "authorize reads at
  // the cluster scope"): made as tenantgate, converted to the tenant's view below.
  if (ctx.asTenantgate) dropImpersonation(headers);
  headers.accept = jsonAccept(req.headers.accept, row === null);
  // kubectl reads OpenAPI v2 as protobuf only. The upstream is still asked for JSON (its protobuf holds every
  // tenant's schemas); the tenant's view of it is encoded.
  const openapiV2AsProtobuf = row === null && isOpenApiV2(info.path) && prefersOpenApiV2Protobuf(req.headers.accept);
  // Metadata clients prefer PartialObjectMetadata(List) as protobuf, and client-go decodes a list's items differently
  // from JSON (without kind and apiVersion): the tenant's view, read as JSON, is answered in protobuf.
  const partialMetadataAs = row !== null && (info.verb === 'list' || info.verb === 'get') ? preferredPartialMetadataProtobuf(req.headers.accept) : null;
  if (partialMetadataAs !== null) headers.accept = `application/json;as=${partialMetadataAs};g=meta.k8s.io;v=v1`;
  delete headers['accept-encoding']; // bodies are rewritten: they must arrive uncompressed
  delete headers['content-length'];
  // OpenAPI v2: tenantgate's own conditional request for the view it keeps (the client's went with the headers above).
  let openapiV2: OpenApiV2Revalidation | null = null;
  if (row === null && isOpenApiV2(info.path) && deps.openapiV2 !== undefined) {
    const cache = deps.openapiV2;
    const upstreamEtag = cache.upstreamEtagOf(tenant, openapiV2AsProtobuf);
    openapiV2 = { cache, kept: upstreamEtag === undefined ? undefined : cache.get(tenant, openapiV2AsProtobuf, upstreamEtag) };
    if (openapiV2.kept !== undefined) headers['if-none-match'] = openapiV2.kept.upstreamEtag;
  }

  if (row !== null && row.listPath === 'per-namespace' && info.verb === 'list' && info.namespace === '') {
    // Objects upstream controllers made without the tenant label: one list per tenant namespace, merged.
    void listAcrossNamespaces({ res: res as ServerResponse, pool: deps.pool, info, row, query, convert, headers, rowObjects });
    return;
  }

  const deletes = info.verb === 'delete' || info.verb === 'deletecollection';
  const hasBody = deletes || info.verb === 'create' || info.verb === 'update' || info.verb === 'patch';
  const metrics = deps.metrics ?? null;
  const send = (body: string | Buffer | null, method = req.method ?? 'GET') => {
    const sentAt = performance.now();
    const upstream = openUpstreamStream(res, deps.pool, method, target, headers, body === null, (upstreamHeaders) => {
      metrics?.upstreamResponded(info.verb, (performance.now() - sentAt) / 1000);
      const status = Number(upstreamHeaders[':status'] ?? 502);
      const responseHeaders = tenantResponseHeaders(upstreamHeaders, tenant);
      delete responseHeaders['content-length'];
      const contentType = String(upstreamHeaders['content-type'] ?? '');
      // Tables (what kubectl get asks for) are answered whole, even when a watch of Tables is streamed event by event.
      const table = contentType.includes('as=Table') || String(headers.accept).includes('as=Table');
      const streamed = status < 300 && row !== null && partialMetadataAs === null && contentType.startsWith('application/json') && (info.verb === 'watch' || (info.verb === 'list' && !table));
      if (streamed) {
        (res as ServerResponse).writeHead(status, responseHeaders);
        if ('flushHeaders' in res) res.flushHeaders();
        const rewriter = info.verb === 'watch' ? new WatchRewriter(tenantViewSpecOf(row, convert, table ? rowObjects : null)) : new ListRewriter(tenantViewSpecOf(row, convert));
        ctx.rewrite = rewriter;
        const rewriteEnded = metrics?.rewriteStarted(tenant, info.verb === 'watch' ? 'watch' : 'list', rewriter);
        pipeline(upstream!, rewriter, res, (error) => {
          rewriteEnded?.();
          if (!error || res.destroyed) return;
          // A watch ends this way whenever its client or the upstream closes it: routine, not worth a warning each.
          const routine = (error as NodeJS.ErrnoException).code === 'ERR_STREAM_PREMATURE_CLOSE';
          (routine ? log.debug : log.warn)('a list or watch could not be converted', { tenant, path: info.path, error: error.message });
        });
        return;
      }
      void readBody(upstream!, MAX_RESPONSE_BODY_BYTES, () => internalError('the upstream answer is too large to convert'))
        .then(async (buffer) => {
          if (status === 403 && row !== null && row.scope === 'Namespaced' && info.namespace !== '' && info.verb !== 'watch') {
            const missing = await missingNamespaceAnswer(ctx, deps, namespaceToUpstream(info.namespace, tenant));
            if (missing instanceof StatusError) throw missing;
            if (missing !== null) {
              const text = JSON.stringify(missing);
              (res as ServerResponse).writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
              res.end(text);
              return;
            }
          }
          if (row === null && isOpenApiV2(info.path) && status < 400) {
            await answerOpenApiV2(ctx, tenant, openapiV2AsProtobuf, { status, etag: upstreamHeaders.etag, body: buffer }, openapiV2, responseHeaders);
            return;
          }
          // An error without a body (OpenAPI v3's 404 for a group it does not serve) is still a Status to the tenant.
          if (buffer.length === 0 && status >= 400) throw tenantStatusError(status, {}, tenant);
          if (buffer.length === 0) {
            // Nothing to convert (304 Not Modified to a cached discovery or OpenAPI document, 204).
            (res as ServerResponse).writeHead(status, responseHeaders);
            res.end();
            return;
          }
          let body: unknown;
          try {
            body = JSON.parse(buffer.toString('utf8'));
          } catch {
            // An error in plain text keeps its code; only a success that is not JSON is the upstream's fault.
            if (status >= 400) throw tenantStatusError(status, buffer, tenant);
            throw badGateway('the upstream answer is not JSON');
          }
          if (status === 201 && (row?.rule === 'selfsubjectaccessreview' || row?.rule === 'subjectaccessreview')) await clusterReviewWithShadow(body, ctx, deps);
          if (row !== null && status === 201 && info.verb === 'create' && info.resource === 'namespaces') {
            // The tenant's admin gets its rights in a namespace before anyone learns the namespace exists.
            await grantTenantNamespace(deps.pool, tenant, (body as { metadata: { name: string } }).metadata.name);
          }
          if (row?.rule === 'crd' && status < 300 && info.subresource === '' && (info.verb === 'create' || info.verb === 'update' || info.verb === 'patch')) {
            // As on a real cluster, the tenant may use the kind once it is Established, however soon it asks.
            await deps.customResourceDefinitionWritten?.(tenant, body).catch((error: Error) => log.warn('custom resource rights not in place yet', { tenant, error: error.message }));
          }
          // (The rules convert in place: nothing reads the upstream body after this.)
          const discovery = deps.discovery;
          const view = wholeBodyToTenant(body, status, ctx, convert, (group, version) => discovery.servesTenantResources(group, version), (group) => discovery.versionsOf(group), rowObjects);
          if (view === null) throw notFound();
          if (row?.rule === 'crd' && info.verb !== 'get' && info.verb !== 'list' && info.verb !== 'watch') deps.discovery.invalidate();
          if (partialMetadataAs !== null && status < 300 && (view as { apiVersion?: unknown }).apiVersion === PARTIAL_METADATA_GROUP_VERSION) {
            const bytes = partialMetadataAs === 'PartialObjectMetadataList' ? partialObjectMetadataListToProtobuf(view as Record<string, unknown>) : partialObjectMetadataToProtobuf(view as Record<string, unknown>);
            responseHeaders['content-type'] = PROTOBUF_MEDIA_TYPE;
            responseHeaders['content-length'] = bytes.length;
            (res as ServerResponse).writeHead(status, responseHeaders);
            res.end(bytes);
            return;
          }
          const text = JSON.stringify(view);
          responseHeaders['content-length'] = Buffer.byteLength(text);
          (res as ServerResponse).writeHead(status, responseHeaders);
          res.end(text);
        })
        .catch((error: unknown) => sendStatus(res, error));
    });
    if (upstream !== null && body !== null) upstream.end(body);
  };

  if (!hasBody) {
    send(null);
    return;
  }
  readBody(req, MAX_REQUEST_BODY_BYTES, () => requestEntityTooLarge(`the request body is larger than ${MAX_REQUEST_BODY_BYTES} bytes`))
    .then(async (buffer) => {
      let contentType = req.headers['content-type'] ?? 'application/json';
      headers['content-type'] = contentType;
      const stored = ctx.row?.upstreamGroup !== undefined && !deletes ? await storedKindBody(buffer, contentType, target, headers, ctx, deps.pool, convert) : null;
      if (stored !== null) {
        buffer = Buffer.from(stored.text);
        headers['content-type'] = contentType = stored.contentType;
      }
      if (ctx.row?.upstreamGroup !== undefined && (info.verb === 'create' || info.verb === 'update') && info.subresource === '') {
        // The custom resource's schema checks nothing of the spec: the real kind validates and defaults it.
        const view = parseJsonOrYamlBody(buffer.toString('utf8'), contentType);
        if (isObject(view)) {
          buffer = Buffer.from(JSON.stringify(await validatedByRealKind(view, ctx.row, info.apiVersion, query.get('fieldValidation'), deps.pool, tenant)));
          headers['content-type'] = contentType = 'application/json';
        }
      }
      if (deletes) {
        // DeleteOptions (dryRun, propagationPolicy, preconditions, gracePeriodSeconds) name nothing of the tenant's:
        // checked to be a well-formed body, then sent as they are. Dropping them would delete for real on --dry-run.
        if (buffer.length === 0) delete headers['content-type'];
        else if (!isProtobuf(contentType)) parseJsonOrYamlBody(buffer.toString('utf8'), contentType, 'the DeleteOptions body');
        send(buffer.length === 0 ? null : buffer);
        return;
      }
      if (isProtobuf(contentType)) {
        // Typed clients (kubectl create, client-go) send built-in kinds as protobuf: converted at the wire level.
        send(
          protobufBodyToUpstream(buffer, ctx.row!, tenant, {
            verb: info.verb,
            subresource: info.subresource,
            version: info.apiVersion,
            kindScope: convert.kindScope,
            scopeOf: convert.scopeOf,
            webhookUrlHosts: convert.webhookUrlHosts,
          }),
        );
        return;
      }
      if (contentType.includes('json-patch') && patchesTheObject(info, ctx.row!)) {
        return jsonPatchToUpdate(buffer.toString('utf8'), target, headers, ctx, deps.pool, convert).then((body) => {
          headers['content-type'] = 'application/json';
          send(body, 'PUT');
        });
      }
      send(requestBodyToUpstream(buffer.toString('utf8'), contentType, ctx, convert, query.get('fieldValidation') !== 'Ignore'));
    })
    .catch((error: unknown) => sendStatus(res, error));
}

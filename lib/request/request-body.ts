// The stage "convert request body": a tenant's create, update, patch or delete body read whole (bounded) and converted
// to the upstream's names, so the upstream request carries it at once. Never sends a byte the kind's rules did not see.
import type { OutgoingHttpHeaders } from 'node:http2';
import { stringifyWithDuplicates } from '../convert/duplicate-fields.ts';
import { applyJsonPatch, parseJsonPatch } from '../convert/json-patch.ts';
import { isWholeObjectSubresource, type KindRow } from '../convert/kinds.ts';
import { TENANT_LABEL } from '../convert/prefix.ts';
import { protobufBodyToUpstream } from '../convert/protobuf/to-upstream.ts';
import { protobufObjectToJson } from '../convert/protobuf/decode.ts';
import type { RequestInfo } from '../convert/request-info.ts';
import { isObject } from '../convert/rules/json.ts';
import { nameMappingOfRow, nameToUpstream, namespaceToUpstream, objectToTenant, objectToUpstream, type ConvertContext } from '../convert/rules/index.ts';
import { strategicToMergePatch, touchesMergeLists } from '../convert/strategic-merge.ts';
import { parseBody, parseJsonOrYamlBody } from '../convert/tenant-body.ts';
import { badRequest, invalid, notFound, requestEntityTooLarge } from '../errors/status-error.ts';
import { upstreamJson } from '../upstream/client.ts';
import type { UpstreamPool } from '../upstream/pool.ts';
import { isKindRequest, upstreamHeadersOf, type KindRequest } from './context.ts';
import type { Stage } from './stage.ts';
import { readBody, tenantStatusError } from './read-body.ts';
import { validatedByRealKind } from './stored-kind-validation.ts';
import type { TenantConversions } from './tenant-conversions.ts';
import { isProtobuf } from '../convert/protobuf/envelope.ts';

/** The apiserver's own limit for a request body. */
export const MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024;

const BODY_VERBS: ReadonlySet<string> = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

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
    if (key === '$patch' && child === 'delete' && !inList)
      throw invalid(`the patch may not delete ${path || 'the object'} with $patch: tenantgate keeps fields there`);
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
function requestBodyToUpstream(text: string, contentType: string, ctx: KindRequest, convert: ConvertContext, findDuplicates: boolean): string {
  const info = ctx.info;
  const row = ctx.row;
  if (contentType.includes('json-patch')) {
    // Subresources (scale, ...) only: JSON patches of the object are applied by tenantgate (jsonPatchToUpdate).
    for (const op of parseJsonPatch(text) as { path?: unknown; from?: unknown }[]) {
      for (const path of [op.path, op.from]) {
        if (
          typeof path === 'string' &&
          (path === '/metadata/labels' || path === '/metadata' || PROTECTED_PATCH_PATHS.some((p) => path === p || path.startsWith(p + '/')))
        ) {
          throw invalid(`the JSON patch may not change ${path}: tenantgate manages it`);
        }
      }
    }
    return text;
  }
  const { value, duplicates } = parseBody(text, contentType, findDuplicates);
  const body: any = value;
  const wholeObject = info.verb !== 'patch' || contentType.includes('apply-patch');
  if (isWholeObjectSubresource(row, info.subresource) && wholeObject)
    return stringifyWithDuplicates(objectToUpstream(body, convert, row, info.verb === 'create' ? 'create' : 'update'), duplicates);
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
async function jsonPatchToUpdate(
  text: string,
  target: string,
  headers: OutgoingHttpHeaders,
  ctx: KindRequest,
  pool: UpstreamPool,
  convert: ConvertContext,
): Promise<string> {
  const ops = parseJsonPatch(text);
  const view = await currentTenantView(target, headers, ctx, pool, convert);
  return JSON.stringify(objectToUpstream(applyJsonPatch(view, ops), convert, ctx.row, 'update'));
}

/** The object a request names, read upstream as the caller and converted to the tenant's view (404 when not the tenant's). */
async function currentTenantView(
  target: string,
  headers: OutgoingHttpHeaders,
  ctx: KindRequest,
  pool: UpstreamPool,
  convert: ConvertContext,
): Promise<Record<string, unknown>> {
  // A cluster-scoped object is read with tenantgate's own identity: upstream a tenant identity may not read every
  // cluster-scoped kind (its custom resources there it may only write), and the apiserver reads the object a patch
  // applies to without asking for `get`. Still only the tenant's: its path, then objectToTenant; the write goes as the caller.
  const readAs = ctx.row.scope === 'Cluster' ? {} : impersonationOf(headers);
  const current = await upstreamJson(pool, 'GET', target.split('?')[0]!, undefined, readAs);
  if (current.status !== 200) throw tenantStatusError(current.status, current.body, convert.tenant);
  const view = objectToTenant(current.body, convert, ctx.row);
  if (view === null) throw notFound(`${ctx.row.resource} "${ctx.info.name}" not found`);
  return view;
}

/**
 * A kind kept upstream as tenantgate's custom resources (the table's upstreamGroup) takes JSON bodies and JSON merge
 * patches only: a protobuf object (typed clients) is decoded to JSON, a strategic merge patch (kubectl patch, apply)
 * becomes the merge patch that does the same. Any other body is left as it is.
 */
async function storedKindBody(
  buffer: Buffer,
  contentType: string,
  target: string,
  headers: OutgoingHttpHeaders,
  ctx: KindRequest,
  pool: UpstreamPool,
  convert: ConvertContext,
): Promise<{ text: string; contentType: string } | null> {
  const info = ctx.info;
  const row = ctx.row;
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

/** The converted body and how it goes: `method` PUT when a JSON patch of the object became an update. */
async function convertedBody(ctx: KindRequest, buffer: Buffer, conversions: TenantConversions): Promise<void> {
  const info = ctx.info;
  const row = ctx.row;
  const tenant = ctx.identity.tenant;
  const convert = conversions.of(tenant);
  const pool = conversions.pool;
  const headers = upstreamHeadersOf(ctx);
  const target = ctx.upstreamTarget;
  const deletes = info.verb === 'delete' || info.verb === 'deletecollection';
  let contentType = ctx.headers['content-type'] ?? 'application/json';
  headers['content-type'] = contentType;
  const stored = row.upstreamGroup !== undefined && !deletes ? await storedKindBody(buffer, contentType, target, headers, ctx, pool, convert) : null;
  if (stored !== null) {
    buffer = Buffer.from(stored.text);
    headers['content-type'] = contentType = stored.contentType;
  }
  if (row.upstreamGroup !== undefined && (info.verb === 'create' || info.verb === 'update') && info.subresource === '') {
    // The custom resource's schema checks nothing of the spec: the real kind validates and defaults it.
    const view = parseJsonOrYamlBody(buffer.toString('utf8'), contentType);
    if (isObject(view)) {
      buffer = Buffer.from(JSON.stringify(await validatedByRealKind(view, row, info.apiVersion, ctx.query.get('fieldValidation'), pool, tenant)));
      headers['content-type'] = contentType = 'application/json';
    }
  }
  if (deletes) {
    // DeleteOptions (dryRun, propagationPolicy, preconditions, gracePeriodSeconds) name nothing of the tenant's:
    // checked to be a well-formed body, then sent as they are. Dropping them would delete for real on --dry-run.
    if (buffer.length === 0) delete headers['content-type'];
    else if (!isProtobuf(contentType)) parseJsonOrYamlBody(buffer.toString('utf8'), contentType, 'the DeleteOptions body');
    ctx.upstreamBody = buffer.length === 0 ? null : buffer;
    return;
  }
  if (isProtobuf(contentType)) {
    // Typed clients (kubectl create, client-go) send built-in kinds as protobuf: converted at the wire level.
    ctx.upstreamBody = protobufBodyToUpstream(buffer, row, tenant, {
      verb: info.verb,
      subresource: info.subresource,
      version: info.apiVersion,
      kindScope: convert.kindScope,
      scopeOf: convert.scopeOf,
      webhookUrlHosts: convert.webhookUrlHosts,
      allowsPlatformClass: convert.allowsPlatformClass,
      defaultPlatformClass: convert.defaultPlatformClass,
      priorityClasses: convert.priorityClasses,
    });
    return;
  }
  if (contentType.includes('json-patch') && patchesTheObject(info, row)) {
    ctx.upstreamBody = await jsonPatchToUpdate(buffer.toString('utf8'), target, headers, ctx, pool, convert);
    headers['content-type'] = 'application/json';
    ctx.upstreamMethod = 'PUT';
    return;
  }
  ctx.upstreamBody = requestBodyToUpstream(buffer.toString('utf8'), contentType, ctx, convert, ctx.query.get('fieldValidation') !== 'Ignore');
}

const bodyTooLarge = () => requestEntityTooLarge(`the request body is larger than ${MAX_REQUEST_BODY_BYTES} bytes`);

/** The stage: reads and converts the body of a tenant's write; requests without one pass on at once. */
export function convertRequestBodyStage(conversions: TenantConversions): Stage['run'] {
  return (ctx) => {
    if (!isKindRequest(ctx) || !BODY_VERBS.has(ctx.info.verb)) return false;
    return readBody(ctx.body, MAX_REQUEST_BODY_BYTES, bodyTooLarge)
      .then((buffer) => convertedBody(ctx, buffer, conversions))
      .then(() => false);
  };
}

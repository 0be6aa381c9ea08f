// The stage "answer": when the upstream's head arrives, the answer is picked from a table of response converters, in
// order, the first that takes it answers. Never sends the client a byte of an upstream object before it has been
// converted to the tenant's view (only administrators' and --passthrough answers go as they are).
import type { ClientHttp2Stream, IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http2';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { pipeline, type Transform } from 'node:stream';
import { upstreamIdentityOf } from '../auth/impersonation.ts';
import { aggregatedDiscoveryToTenant, discoveryToTenant } from '../convert/discovery.ts';
import { isTenantCrdGroup, isWholeObjectSubresource } from '../convert/kinds.ts';
import { openapiGroupDocToTenant, openapiIndexToTenant } from '../convert/openapi.ts';
import { partialObjectMetadataListToProtobuf, partialObjectMetadataToProtobuf, PARTIAL_METADATA_GROUP_VERSION } from '../convert/protobuf/partial-metadata.ts';
import { protobufEmptyList, type ListMetaJson } from '../convert/protobuf/made.ts';
import { protobufBodyToTenant, protobufStatusToTenant } from '../convert/protobuf/to-tenant.ts';
import { upstreamResourceTarget } from '../convert/request.ts';
import { apiVersionToTenant } from '../convert/rules/api-groups.ts';
import { apiGroupToUpstream, namespaceToUpstream, objectToTenant, type ConvertContext } from '../convert/rules/index.ts';
import { statusToTenant } from '../convert/status.ts';
import { isTable, tableToTenant } from '../convert/table.ts';
import { HIDDEN_GROUPS } from '../convert/visibility.ts';
import { TENANT_PATH_PREFIX } from './tenant-path.ts';
import { badGateway, internalError, notFound, StatusError } from '../errors/status-error.ts';
import { releaseStartSeat } from '../flowcontrol/stage.ts';
import type { RewriteCounters } from '../metrics/metrics.ts';
import { log } from '../log.ts';
import { sendStatus } from './status.ts';
import { WatchRewriter } from '../stream/tenant-view.ts';
import { ProtobufWatchRewriter } from '../stream/protobuf-view.ts';
import { metadataOnly, tenantViewSpecOf } from '../stream/view-spec.ts';
import { objectToTenantBytes, PARSED_PATH } from '../stream/object-view.ts';
import { grantTenantNamespace } from '../tenants/bootstrap.ts';
import { parseQuantity } from '../tenants/quantity.ts';
import { TENANT_QUOTA_NAME } from '../tenants/tenant-quota.ts';
import { upstreamJson } from '../upstream/client.ts';
import { clientResponseHeaders, tenantResponseHeaders } from '../upstream/headers.ts';
import { isConverted, isKindRequest, type ConvertedRequest, type KindRequest, type RequestContext } from './context.ts';
import { asksForTable, isOpenApiV2, openApiV2AsProtobuf, partialMetadataProtobufOf, protobufAnswerOf, requestApiVersion } from './negotiation.ts';
import { listRewriter, protobufListRewriter } from './offload.ts';
import { contextOf, openUpstream } from './open-upstream.ts';
import { answerOpenApiV2 } from './openapi-v2-cache.ts';
import type { Stage } from './stage.ts';
import { readBody, tenantStatusError } from './read-body.ts';
import type { TenantConversions } from './tenant-conversions.ts';
import { isProtobuf, protobufEnvelope, PROTOBUF_MEDIA_TYPE } from '../convert/protobuf/envelope.ts';
import { MessageEdit } from '../convert/protobuf/message-edit.ts';
import { fromUpstream } from '../convert/protobuf/conversion.ts';
import { OBJECT_META } from '../convert/protobuf/field-numbers.ts';

/** Whole answers are converted in memory: past this, the upstream's answer is refused rather than held. */
const MAX_RESPONSE_BODY_BYTES = 64 * 1024 * 1024;

/** The upstream's answer as a converter sees it: its status, head, and the stream of its body. */
export interface UpstreamAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  contentType: string;
  body: ClientHttp2Stream;
}

export interface ResponseConverter {
  name: string;
  /** True when this converter answers `answer` (the table is read in order: the first that takes it answers). */
  takes(ctx: RequestContext, answer: UpstreamAnswer): boolean;
  /** Answers the client; a rejection or throw before anything was sent becomes a Status. */
  answer(ctx: RequestContext, answer: UpstreamAnswer, conversions: TenantConversions): void | Promise<void>;
}

// ---- streamed answers

/** The answer as the upstream sent it: administrators and --passthrough. */
function passThrough(ctx: RequestContext, answer: UpstreamAnswer): void {
  ctx.respond(answer.status, clientResponseHeaders(answer.headers));
  // A 204 or 304 ended with its head: the upstream's (empty) body is only drained.
  if (ctx.out.writableEnded) answer.body.resume();
  // (Errors are the upstream stream's listeners' and the exchange's to handle.)
  else answer.body.pipe(ctx.out);
}

/** The answer is a Table: the upstream says so, or the client asked for one (kubectl get). */
function isTableAnswer(ctx: RequestContext, answer: UpstreamAnswer): boolean {
  return answer.contentType.includes('as=Table') || asksForTable(ctx);
}

/** A list or watch converted item by item as bytes arrive (JSON; Tables of a watch event by event). */
function isStreamed(ctx: KindRequest, answer: UpstreamAnswer, verb: 'list' | 'watch'): boolean {
  if (answer.status >= 300 || ctx.info.verb !== verb || !answer.contentType.startsWith('application/json')) return false;
  if (partialMetadataProtobufOf(ctx) !== null) return false;
  // Tables (what kubectl get asks for) are answered whole, even when a watch of Tables is streamed event by event.
  return verb === 'watch' || !isTableAnswer(ctx, answer);
}

/** The upstream's Content-Length, when it sent one. */
function declaredLengthOf(answer: UpstreamAnswer): number | null {
  const length = Number(answer.headers['content-length'] ?? Number.NaN);
  return Number.isSafeInteger(length) && length >= 0 ? length : null;
}

function streamRewritten(ctx: KindRequest, answer: UpstreamAnswer, conversions: TenantConversions, verb: 'list' | 'watch'): void {
  const tenant = ctx.identity.tenant;
  const convert = conversions.of(tenant);
  const row = ctx.row;
  const table = isTableAnswer(ctx, answer);
  ctx.respond(answer.status, tenantResponseHeaders(answer.headers, tenant));
  const spec = verb === 'watch' && table ? tenantViewSpecOf(row, convert, ctx.rowObjects) : conversions.viewSpecOf(tenant, row);
  const rewriter =
    verb === 'watch'
      ? new WatchRewriter(spec)
      : listRewriter({ row, convert, discovery: conversions.discovery, spec, declaredLength: declaredLengthOf(answer) });
  pipeRewritten(ctx, answer, conversions, verb, rewriter);
}

/** The upstream's body through `rewriter` to the client, observed by the metrics and the request log. */
function pipeRewritten(
  ctx: ConvertedRequest,
  answer: UpstreamAnswer,
  conversions: TenantConversions,
  verb: 'list' | 'watch',
  rewriter: Transform & RewriteCounters,
): void {
  const tenant = ctx.identity.tenant;
  ctx.rewrite = rewriter;
  const rewriteEnded = conversions.metrics?.rewriteStarted(tenant, verb, rewriter);
  pipeline(answer.body, rewriter, ctx.out, (error) => {
    rewriteEnded?.();
    if (!error || ctx.out.destroyed) return;
    // A watch ends this way whenever its client or the upstream closes it: routine, not worth a warning each.
    const routine = (error as NodeJS.ErrnoException).code === 'ERR_STREAM_PREMATURE_CLOSE';
    (routine ? log.debug : log.warn)('a list or watch could not be converted', { tenant, path: ctx.info.path, error: error.message });
  });
}

/** A protobuf list or watch the client asked for in protobuf (negotiation.ts), converted on the wire as bytes arrive. */
function isProtobufStreamed(ctx: KindRequest, answer: UpstreamAnswer, verb: 'list' | 'watch'): boolean {
  return answer.status < 300 && ctx.info.verb === verb && isProtobuf(answer.contentType) && protobufAnswerOf(ctx);
}

function protobufStreamRewritten(ctx: KindRequest, answer: UpstreamAnswer, conversions: TenantConversions, verb: 'list' | 'watch'): void {
  const tenant = ctx.identity.tenant;
  const convert = conversions.of(tenant);
  // Made before the head goes out: a kind the engine cannot convert is refused while a Status can still be sent.
  const apiVersion = requestApiVersion(ctx.info);
  const rewriter =
    verb === 'watch'
      ? new ProtobufWatchRewriter(ctx.row, convert, apiVersion)
      : protobufListRewriter({ row: ctx.row, convert, discovery: conversions.discovery, apiVersion, declaredLength: declaredLengthOf(answer) });
  ctx.respond(answer.status, tenantResponseHeaders(answer.headers, tenant));
  pipeRewritten(ctx, answer, conversions, verb, rewriter);
}

// ---- whole answers

/** An answer read whole: its status, the tenant's response headers, and the body's bytes. */
interface WholeAnswer {
  status: number;
  headers: OutgoingHttpHeaders;
  upstreamHeaders: IncomingHttpHeaders;
  bytes: Buffer;
}

const answerTooLarge = () => internalError('the upstream answer is too large to convert');

/** A converter of answers read whole first (bounded). */
function whole<C extends ConvertedRequest>(
  convert: (ctx: C, answer: WholeAnswer, conversions: TenantConversions) => void | Promise<void>,
): (ctx: C, answer: UpstreamAnswer, conversions: TenantConversions) => Promise<void> {
  return async (ctx, answer, conversions) => {
    const bytes = await readBody(answer.body, MAX_RESPONSE_BODY_BYTES, answerTooLarge);
    const headers = tenantResponseHeaders(answer.headers, ctx.identity.tenant);
    await convert(ctx, { status: answer.status, headers, upstreamHeaders: answer.headers, bytes }, conversions);
  };
}

/**
 * The upstream's JSON, or null when the answer was empty and has been answered as it is (a 304 to a cached discovery
 * document, a 204). An error without a body (OpenAPI v3's 404 for a group it does not serve) is still a Status.
 */
function parsedOrAnswered(ctx: ConvertedRequest, answer: WholeAnswer): any {
  const tenant = ctx.identity.tenant;
  if (answer.bytes.length === 0) {
    if (answer.status >= 400) throw tenantStatusError(answer.status, {}, tenant);
    ctx.answer(answer.status, answer.headers);
    return null;
  }
  try {
    return JSON.parse(answer.bytes.toString('utf8'));
  } catch {
    // An error in plain text keeps its code; only a success that is not JSON is the upstream's fault.
    if (answer.status >= 400) throw tenantStatusError(answer.status, answer.bytes, tenant);
    throw badGateway('the upstream answer is not JSON');
  }
}

function sendJson(ctx: RequestContext, answer: WholeAnswer, view: unknown): void {
  ctx.answer(answer.status, answer.headers, JSON.stringify(view));
}

/**
 * Upstream, a tenant identity holds rights only in namespaces that exist (RoleBindings in each), so a request in a
 * missing namespace is refused (403) where the apiserver would answer a tenant whose ClusterRoleBindings allow it
 * with "not found" (an empty list for a list). That answer, or null when the namespace exists or the tenant's RBAC
 * does not allow the request cluster-wide (the 403 stands).
 */
async function missingNamespaceAnswer(ctx: KindRequest, conversions: TenantConversions): Promise<StatusError | object | null> {
  const info = ctx.info;
  const identity = ctx.identity;
  const tenant = identity.tenant;
  const upstreamNamespace = namespaceToUpstream(info.namespace, tenant);
  const namespace = await upstreamJson(conversions.pool, 'GET', `/api/v1/namespaces/${encodeURIComponent(upstreamNamespace)}`);
  if (namespace.status !== 404) return null;
  if (
    !(await conversions.access.allowed(
      tenant,
      upstreamIdentityOf(identity),
      info.verb,
      apiGroupToUpstream(info.apiGroup, tenant, info.resource),
      info.resource,
    ))
  )
    return null;
  const row = ctx.row;
  if (info.verb === 'list') {
    return {
      kind: `${row.kind}List`,
      apiVersion: requestApiVersion(info),
      metadata: { resourceVersion: await currentResourceVersion(ctx, conversions) },
      items: [],
    };
  }
  if (info.verb === 'create' || info.name === '')
    return notFound(`namespaces ${JSON.stringify(info.namespace)} not found`, { name: info.namespace, kind: 'namespaces' });
  return notFound(`${info.resource}${info.apiGroup === '' ? '' : '.' + info.apiGroup} ${JSON.stringify(info.name)} not found`, {
    name: info.name,
    ...(info.apiGroup === '' ? {} : { group: info.apiGroup }),
    kind: info.resource,
  });
}

/**
 * The resourceVersion the apiserver's own empty list would carry (the newest), read from a list of one item of the
 * same kind in the same (missing) namespace, made as tenantgate; '' when the upstream does not say.
 */
async function currentResourceVersion(ctx: KindRequest, conversions: TenantConversions): Promise<string> {
  const target = upstreamResourceTarget(ctx.info, ctx.row, new URLSearchParams({ limit: '1' }), ctx.identity.tenant);
  const list = await upstreamJson(conversions.pool, 'GET', target);
  const resourceVersion = (list.body as { metadata?: { resourceVersion?: unknown } } | null)?.metadata?.resourceVersion;
  return list.status === 200 && typeof resourceVersion === 'string' ? resourceVersion : '';
}

/** Times a write refused for the tenant-wide quota is sent again (each after free capacity moved to its namespace). */
const QUOTA_RETRIES = 5;
const quotaRetries = new WeakMap<RequestContext, number>();
const QUOTA_REFUSAL = Buffer.from(`exceeded quota: ${TENANT_QUOTA_NAME}, requested: `);

/**
 * A write the upstream refused because its namespace's share of the tenant's quota was used up while the tenant has
 * capacity elsewhere: the capacity is moved and the same converted request sent again (true). The refusal stands
 * (false) when the tenant is at its limit, or after QUOTA_RETRIES. (The marker is plain text in JSON and protobuf.)
 */
async function retriedForQuota(ctx: ConvertedRequest, answer: WholeAnswer, conversions: TenantConversions): Promise<boolean> {
  const refused = conversions.tenantQuotaRefused;
  const info = ctx.info;
  if (refused === undefined || answer.status !== 403 || ctx.upstreamBody === null || info.namespace === '') return false;
  const at = answer.bytes.indexOf(QUOTA_REFUSAL);
  const retries = quotaRetries.get(ctx) ?? 0;
  if (at < 0 || retries >= QUOTA_RETRIES) return false;
  const tail = answer.bytes.subarray(at + QUOTA_REFUSAL.length, at + QUOTA_REFUSAL.length + 2000).toString('latin1');
  const requested = new Map<string, bigint>();
  for (const pair of tail.slice(0, tail.indexOf(', used: ') >>> 0).split(',')) {
    const [key, quantity] = pair.split('=');
    const amount = quantity === undefined ? null : parseQuantity(quantity);
    if (key !== undefined && amount !== null) requested.set(key, amount);
  }
  const tenant = ctx.identity.tenant;
  if (!(await refused(tenant, namespaceToUpstream(info.namespace, tenant), requested))) return false;
  quotaRetries.set(ctx, retries + 1);
  const previous = ctx.upstream;
  if (previous !== null && !previous.closed) await once(previous, 'close');
  if (ctx.out.destroyed) return true; // the client went away meanwhile: nothing to send again
  openUpstream(ctx, conversions.pool).once('response', function (this: ClientHttp2Stream, headers: IncomingHttpHeaders) {
    answerWith(
      contextOf(this),
      { status: Number(headers[':status'] ?? 502), headers, contentType: String(headers['content-type'] ?? ''), body: this },
      conversions,
    );
  });
  return true;
}

/** An error answer: the upstream's Status in the tenant's names (or, in a missing namespace, what a cluster would say). */
async function statusAnswer(ctx: ConvertedRequest, answer: WholeAnswer, conversions: TenantConversions): Promise<void> {
  if (await retriedForQuota(ctx, answer, conversions)) return;
  const info = ctx.info;
  if (answer.status === 403 && isKindRequest(ctx) && ctx.row.scope === 'Namespaced' && info.namespace !== '' && info.verb !== 'watch') {
    const missing = await missingNamespaceAnswer(ctx, conversions);
    if (missing instanceof StatusError) throw missing;
    if (missing !== null) {
      if (protobufAnswerOf(ctx)) {
        const list = missing as { kind: string; apiVersion: string; metadata: ListMetaJson };
        ctx.answer(200, { 'content-type': PROTOBUF_MEDIA_TYPE }, protobufEmptyList(list.apiVersion, list.kind, list.metadata));
      } else ctx.answer(200, { 'content-type': 'application/json' }, JSON.stringify(missing));
      return;
    }
  }
  if (isProtobuf(String(answer.upstreamHeaders['content-type'] ?? '')) && answer.bytes.length > 0) {
    ctx.answer(answer.status, answer.headers, protobufStatusToTenant(answer.bytes, ctx.identity.tenant));
    return;
  }
  const body = parsedOrAnswered(ctx, answer);
  if (body !== null) sendJson(ctx, answer, statusToTenant(body, ctx.identity.tenant));
}

/** tenantgate's host and port as the client reached them (HTTP/2 :authority, HTTP/1.1 Host), when well-formed. */
function addressReached(ctx: RequestContext): string | null {
  const authority = ctx.headers[':authority'] ?? ctx.headers.host;
  return typeof authority === 'string' && /^[A-Za-z0-9.\-[\]:]{1,300}$/.test(authority) ? authority : null;
}

/** Discovery documents and OpenAPI v3, in the tenant's view: its groups only, hidden groups not found. */
function discoveryAnswer(ctx: ConvertedRequest, answer: WholeAnswer, conversions: TenantConversions): void {
  const body = parsedOrAnswered(ctx, answer);
  if (body === null) return;
  const tenant = ctx.identity.tenant;
  const discovery = conversions.discovery;
  const visibleVersion = (group: string, version: string) => discovery.servesTenantResources(group, version);
  const path = ctx.info.path;
  let view: unknown;
  if (body?.kind === 'Status') view = statusToTenant(body, tenant);
  else if (path === '/openapi/v3' || path === '/openapi/v3/')
    view = openapiIndexToTenant(body, tenant, visibleVersion, ctx.pathTenant === null ? '' : `${TENANT_PATH_PREFIX}${ctx.pathTenant}`);
  else {
    const group = /^\/openapi\/v3\/apis\/([^/]+)\//.exec(path)?.[1];
    if (group !== undefined && HIDDEN_GROUPS.has(group)) throw notFound(); // not found, as in the index
    if (group !== undefined && isTenantCrdGroup(group)) view = JSON.parse(openapiGroupDocToTenant(JSON.stringify(body), tenant, group));
    else if (body?.kind === 'APIGroupDiscoveryList') view = aggregatedDiscoveryToTenant(body, tenant);
    else view = discoveryToTenant(body, tenant, visibleVersion, addressReached(ctx), (upstreamGroup) => discovery.versionsOf(upstreamGroup));
  }
  sendJson(ctx, answer, view);
}

function tableAnswer(ctx: KindRequest, answer: WholeAnswer, conversions: TenantConversions): void {
  const body = parsedOrAnswered(ctx, answer);
  if (body === null) return;
  const convert = conversions.of(ctx.identity.tenant);
  // (A Table asked for may come back as something else, a Status or an object: those are converted as such.)
  if (!isTable(body)) return sendJson(ctx, answer, objectView(ctx, body, convert));
  const view = tableToTenant(body, convert, ctx.row, ctx.rowObjects);
  // A get of one object whose only row the tenant may not see (a platform class its Tenant does not allow): not found.
  const info = ctx.info;
  if (info.verb === 'get' && info.name !== '' && Array.isArray(body.rows) && body.rows.length > 0 && (view.rows ?? []).length === 0)
    throw notFound(`${ctx.row.resource} "${info.name}" not found`);
  sendJson(ctx, answer, view);
}

/**
 * A denied access review at the cluster scope (no namespace) is decided again by the tenant's own ClusterRoleBindings,
 * which only tenantgate evaluates (`kubectl auth can-i list pods -A`): allowed when either allows, with RBAC's reason
 * naming the binding. In place.
 */
async function clusterReviewWithTenantRbac(body: any, ctx: KindRequest, conversions: TenantConversions): Promise<void> {
  const spec = body?.spec;
  if (spec === undefined || body.status?.allowed === true) return;
  const namespace = spec.resourceAttributes?.namespace;
  if (typeof namespace === 'string' && namespace !== '') return;
  // A SubjectAccessReview asks about the user it names (upstream names already); a self review about the caller.
  const identity =
    ctx.row.rule === 'subjectaccessreview'
      ? { user: String(spec.user ?? ''), groups: Array.isArray(spec.groups) ? spec.groups.map(String) : [] }
      : upstreamIdentityOf(ctx.identity);
  const decision = await conversions.access.clusterScopeReview(ctx.identity.tenant, {
    ...identity,
    resourceAttributes: spec.resourceAttributes,
    nonResourceAttributes: spec.nonResourceAttributes,
  });
  if (decision.allowed) body.status = decision.reason === '' ? { allowed: true } : { allowed: true, reason: decision.reason };
}

/** What must be in place before a write is answered: the caller may act on what it was told exists. */
async function afterWrite(ctx: KindRequest, status: number, body: any, conversions: TenantConversions): Promise<void> {
  const info = ctx.info;
  const row = ctx.row;
  const tenant = ctx.identity.tenant;
  if (status === 201 && (row.rule === 'selfsubjectaccessreview' || row.rule === 'subjectaccessreview'))
    await clusterReviewWithTenantRbac(body, ctx, conversions);
  if (status === 201 && info.verb === 'create' && info.resource === 'namespaces') {
    // The tenant's admin gets its rights in a namespace before anyone learns the namespace exists.
    const upstreamNamespace = (body as { metadata: { name: string } }).metadata.name;
    await grantTenantNamespace(conversions.pool, tenant, upstreamNamespace);
    // ... and the namespace its share of the tenant's quota and its classes, before anything can be created in it.
    await conversions
      .tenantNamespaceCreated?.(tenant, upstreamNamespace)
      .catch((error: Error) => log.warn('namespace quota or classes not in place yet', { tenant, error: error.message }));
  }
  if (row.rule === 'crd' && status < 300 && info.subresource === '' && (info.verb === 'create' || info.verb === 'update' || info.verb === 'patch')) {
    // As on a real cluster, the tenant may use the kind once it is Established, however soon it asks.
    await conversions
      .customResourceDefinitionWritten?.(tenant, body)
      .catch((error: Error) => log.warn('custom resource rights not in place yet', { tenant, error: error.message }));
  }
  if (row.rule === 'certificatesigningrequest' && status === 201 && info.verb === 'create' && info.subresource === '') {
    await conversions
      .certificateSigningRequestWritten?.(tenant)
      .catch((error: Error) => log.warn('signer rights not in place yet', { tenant, error: error.message }));
  }
}

/** The tenant's view of one object, or of a list answered whole (deletecollection, a metadata list), or a 2xx Status. */
function objectView(ctx: KindRequest, body: any, convert: ConvertContext): unknown {
  const row = ctx.row;
  if (body?.kind === 'Status') return statusToTenant(body, convert.tenant);
  if (Array.isArray(body?.items)) {
    // A list answered whole: the same per-item view as a streamed list.
    const items = body.items.map((item: unknown) => objectToTenant(item, convert, row)).filter((item: unknown) => item !== null);
    // A stored kind's list is in its upstream group (typed clients decode a list by its apiVersion).
    const apiVersion = typeof body.apiVersion === 'string' ? (apiVersionToTenant(body.apiVersion, convert.tenant) ?? body.apiVersion) : body.apiVersion;
    return { ...body, apiVersion, items };
  }
  const view = objectToTenant(body, convert, row);
  if (view === null) throw notFound(`${row.resource} "${ctx.info.name}" not found`);
  return view;
}

/**
 * Objects of kinds whose rule reads only metadata are converted as bytes, by the list rewriter's scanner: no
 * JSON.parse and JSON.stringify. False when the bytes cannot tell (a Status, a list, a missing name): parsed then.
 */
function objectAnsweredAsBytes(ctx: KindRequest, answer: WholeAnswer, conversions: TenantConversions): boolean {
  const row = ctx.row;
  const info = ctx.info;
  if (answer.status >= 300 || answer.bytes.length === 0 || !metadataOnly(row) || !isWholeObjectSubresource(row, info.subresource)) return false;
  if (!String(answer.upstreamHeaders['content-type'] ?? '').startsWith('application/json') || partialMetadataProtobufOf(ctx) !== null) return false;
  const view = objectToTenantBytes(answer.bytes, conversions.viewSpecOf(ctx.identity.tenant, row));
  if (view === PARSED_PATH) return false;
  if (view === null) throw notFound(`${row.resource} "${info.name}" not found`);
  ctx.answer(answer.status, answer.headers, view);
  return true;
}

/** The upstream name of the object in a protobuf answer (`k8s\0` + runtime.Unknown; ObjectMeta is the object's field 1). */
function protobufObjectName(body: Buffer): string {
  const { raw } = fromUpstream(() => protobufEnvelope(body));
  return fromUpstream(() => {
    const object = new MessageEdit(raw, 'object');
    const meta = object.single(1, 'metadata');
    return meta === undefined ? '' : new MessageEdit(object.payload(meta), 'metadata').stringOf(OBJECT_META.name, 'name');
  });
}

/**
 * A protobuf object (or a Status, or a list answered whole) converted on the wire; false when the answer is not
 * protobuf. A write's answer waits for what afterWrite puts in place (negotiation.ts asks protobuf only of writes
 * whose after-work needs no more than the object's name: a namespace's).
 */
async function objectAnsweredAsProtobuf(ctx: KindRequest, answer: WholeAnswer, conversions: TenantConversions): Promise<boolean> {
  if (answer.bytes.length === 0 || !isProtobuf(String(answer.upstreamHeaders['content-type'] ?? '')) || !protobufAnswerOf(ctx)) return false;
  const row = ctx.row;
  const info = ctx.info;
  const view = protobufBodyToTenant(answer.bytes, row, conversions.of(ctx.identity.tenant));
  if (view === null) throw notFound(`${row.resource} "${info.name}" not found`);
  if (isWrite(info.verb)) {
    // (Only a namespace's create reads the written object: its name.)
    const name = info.verb === 'create' && info.resource === 'namespaces' ? protobufObjectName(answer.bytes) : '';
    await afterWrite(ctx, answer.status, { metadata: { name } }, conversions);
  }
  ctx.answer(answer.status, answer.headers, view);
  return true;
}

function isWrite(verb: string): boolean {
  return verb !== 'get' && verb !== 'list' && verb !== 'watch';
}

async function objectAnswer(ctx: KindRequest, answer: WholeAnswer, conversions: TenantConversions): Promise<void> {
  if (await objectAnsweredAsProtobuf(ctx, answer, conversions)) return;
  if (objectAnsweredAsBytes(ctx, answer, conversions)) return;
  const body = parsedOrAnswered(ctx, answer);
  if (body === null) return;
  const info = ctx.info;
  if (isWrite(info.verb)) await afterWrite(ctx, answer.status, body, conversions);
  // (The rules convert in place: nothing reads the upstream body after this.)
  const view = objectView(ctx, body, conversions.of(ctx.identity.tenant));
  if (ctx.row.rule === 'crd' && isWrite(info.verb)) conversions.discovery.invalidate();
  const partialMetadata = partialMetadataProtobufOf(ctx);
  if (partialMetadata !== null && answer.status < 300 && (view as { apiVersion?: unknown }).apiVersion === PARTIAL_METADATA_GROUP_VERSION) {
    const record = view as Record<string, unknown>;
    answer.headers['content-type'] = PROTOBUF_MEDIA_TYPE;
    ctx.answer(
      answer.status,
      answer.headers,
      partialMetadata === 'PartialObjectMetadataList' ? partialObjectMetadataListToProtobuf(record) : partialObjectMetadataToProtobuf(record),
    );
    return;
  }
  sendJson(ctx, answer, view);
}

function openApiV2Answer(ctx: ConvertedRequest, answer: WholeAnswer): Promise<void> {
  const upstream = { status: answer.status, etag: answer.upstreamHeaders.etag, body: answer.bytes };
  return answerOpenApiV2(ctx, ctx.identity.tenant, openApiV2AsProtobuf(ctx), upstream, ctx.openapiV2, answer.headers);
}

/**
 * A converter of tenants' answers: it sees the request as `is` narrows it (converted, or converted with a kind), so it
 * reads what earlier stages set without asserting; the table asks it only of such requests.
 */
function tenantConverter<C extends ConvertedRequest>(
  name: string,
  is: (ctx: RequestContext) => ctx is C,
  takes: (ctx: C, answer: UpstreamAnswer) => boolean,
  answer: (ctx: C, answer: UpstreamAnswer, conversions: TenantConversions) => void | Promise<void>,
): ResponseConverter {
  return {
    name,
    takes: (ctx, upstream) => is(ctx) && takes(ctx, upstream),
    answer: (ctx, upstream, conversions) => {
      if (!is(ctx)) throw internalError(`the converter "${name}" was given a request it does not take`);
      return answer(ctx, upstream, conversions);
    },
  };
}

/** The response converters, in the order they are asked. */
export const RESPONSE_CONVERTERS: readonly ResponseConverter[] = [
  { name: 'pass-through', takes: (ctx) => !ctx.converts, answer: passThrough },
  tenantConverter(
    'protobuf watch stream',
    isKindRequest,
    (ctx, answer) => isProtobufStreamed(ctx, answer, 'watch'),
    (ctx, answer, conversions) => protobufStreamRewritten(ctx, answer, conversions, 'watch'),
  ),
  tenantConverter(
    'protobuf list stream',
    isKindRequest,
    (ctx, answer) => isProtobufStreamed(ctx, answer, 'list'),
    (ctx, answer, conversions) => protobufStreamRewritten(ctx, answer, conversions, 'list'),
  ),
  tenantConverter(
    'watch stream',
    isKindRequest,
    (ctx, answer) => isStreamed(ctx, answer, 'watch'),
    (ctx, answer, conversions) => streamRewritten(ctx, answer, conversions, 'watch'),
  ),
  tenantConverter(
    'list stream',
    isKindRequest,
    (ctx, answer) => isStreamed(ctx, answer, 'list'),
    (ctx, answer, conversions) => streamRewritten(ctx, answer, conversions, 'list'),
  ),
  // Before the empty answers: a 304 to tenantgate's own conditional request answers with the view it keeps.
  tenantConverter(
    'OpenAPI v2 (offloaded when large)',
    isConverted,
    (ctx, answer) => ctx.row === null && isOpenApiV2(ctx.info.path) && answer.status < 400,
    whole(openApiV2Answer),
  ),
  tenantConverter('Status', isConverted, (_ctx, answer) => answer.status >= 400, whole(statusAnswer)),
  tenantConverter('discovery and OpenAPI', isConverted, (ctx) => ctx.row === null, whole(discoveryAnswer)),
  tenantConverter('Table', isKindRequest, isTableAnswer, whole(tableAnswer)),
  tenantConverter('object', isKindRequest, () => true, whole(objectAnswer)),
];

/** The converter that answers: the first in the table that takes the answer. */
export function responseConverterFor(ctx: RequestContext, answer: UpstreamAnswer): ResponseConverter {
  for (const converter of RESPONSE_CONVERTERS) if (converter.takes(ctx, answer)) return converter;
  throw new Error('no response converter took the answer'); // unreachable: the last takes every answer
}

function answerWith(ctx: RequestContext, answer: UpstreamAnswer, conversions: TenantConversions): void {
  ctx.upstreamStatus = answer.status;
  // Observed when the request ends (request-end.ts), off the answer's way to the client.
  ctx.upstreamAnsweredAt = performance.now();
  releaseStartSeat(ctx); // a watch holds its flow-control seat only while it starts
  // The client went away while the upstream answered: nothing to answer, and piping to it would throw.
  if (ctx.out.destroyed) return;
  try {
    const done = responseConverterFor(ctx, answer).answer(ctx, answer, conversions);
    if (done !== undefined) done.catch((error: unknown) => sendStatus(ctx, error));
  } catch (error) {
    sendStatus(ctx, error);
  }
}

/** The stage: answers once the upstream's head arrives (one listener for every request, no closure per request). */
export function answerStage(conversions: TenantConversions): Stage['run'] {
  function onResponse(this: ClientHttp2Stream, headers: IncomingHttpHeaders): void {
    answerWith(
      contextOf(this),
      { status: Number(headers[':status'] ?? 502), headers, contentType: String(headers['content-type'] ?? ''), body: this },
      conversions,
    );
  }
  return (ctx) => {
    if (ctx.upstream === null) throw internalError('the answer was awaited before the upstream request was opened');
    ctx.upstream.once('response', onResponse);
    return true;
  };
}

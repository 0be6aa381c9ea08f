// The Tenant API (tenant.kubezoo.io/v1alpha1 tenants) served by tenantgate itself, to administrators only, and the
// group added to what administrators discover upstream. Never answers a tenant's credentials with anything but 403.
//
// Deletion contract: DELETE marks a Tenant (metadata.deletionTimestamp, finalizer tenant.kubezoo.io/cleanup) and answers
// 200 with it, as for a Namespace. The tenant lifecycle controller sees the change through TenantStore.onChange, removes
// the tenant's upstream objects, reports progress in status.conditions and, last, calls store.remove(). A client that
// removes every finalizer of a terminating Tenant itself removes it at once, as the apiserver would.
import type { OutgoingHttpHeaders } from 'node:http2';
import { parseJsonOrYamlBody } from '../convert/tenant-body.ts';
import { upstreamIdentityOf } from '../auth/impersonation.ts';
import { applyJsonPatch, parseJsonPatch } from '../convert/json-patch.ts';
import { applyMergePatch } from '../convert/merge-patch.ts';
import { parseRequestInfo, type RequestInfo } from '../convert/request-info.ts';
import { labelsMatch, parseFieldSelector, parseLabelSelector, type LabelRequirement } from '../convert/selectors.ts';
import type { RowObjects } from '../convert/table.ts';
import { requestUpstreamFor } from './open-upstream.ts';
import { clientResponseHeaders, upstreamRequestHeaders } from '../upstream/headers.ts';
import type { UpstreamPool } from '../upstream/pool.ts';
import { readBody } from './read-body.ts';
import { jsonAccept, PATCH_MEDIA_TYPES } from './negotiation.ts';
import {
  aggregatedDiscoveryGroup,
  apiGroup,
  apiResourceList,
  OPENAPI_V3_DOCUMENT,
  OPENAPI_V3_HASH,
  OPENAPI_V3_PATH,
  TENANT_RESOURCE,
  tenantTable,
} from '../tenants/api-documents.ts';
import {
  TENANT_API_VERSION,
  TENANT_CLEANUP_FINALIZER,
  TENANT_GROUP,
  TENANT_VERSION,
  TenantConflict,
  TenantExists,
  TenantMissing,
  TenantStoreUnavailable,
  TenantWatchExpired,
  type Tenant,
  type TenantEvent,
  type TenantStore,
} from '../tenants/tenant.ts';
import { validateTenant } from '../tenants/validation.ts';
import { markCreated } from '../tenants/conditions.ts';
import type { RecordTenantOperation, TenantOperation } from '../metrics/metrics.ts';
import { identityOf, type RequestContext } from './context.ts';
import { sendStatus } from './status.ts';
import {
  alreadyExists,
  badGateway,
  conflict,
  expired,
  forbidden,
  invalid,
  methodNotAllowed,
  badRequest,
  notFound,
  requestEntityTooLarge,
  serviceUnavailable,
  StatusError,
  unsupportedMediaType,
} from '../errors/status-error.ts';

/**
 * Issues a tenant admin's kubeconfig (certificate CN=<id>-admin, OU=<id>, with its private key) for tenantgate at
 * `serverUrl` (absent: the address it listens on).
 */
export type IssueKubeconfig = (tenant: Tenant, serverUrl?: string) => Promise<string>;

/** A request's authority that is a host and an optional port, nothing else (no user info, path or spaces). */
const PLAIN_AUTHORITY = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/**
 * Where the administrator reached tenantgate (its external name behind a load balancer or Service), which its
 * tenants will reach it at too; undefined when the request names no plain host.
 */
function reachedAt(ctx: RequestContext): string | undefined {
  const authority = ctx.headers[':authority'] ?? ctx.headers.host;
  return typeof authority === 'string' && PLAIN_AUTHORITY.test(authority) ? `https://${authority}` : undefined;
}

export interface TenantApiDeps {
  pool: UpstreamPool;
  tenants: TenantStore;
  /** null: this tenantgate has no credentials issuer, and .../kubeconfig answers 503. */
  issueKubeconfig: IssueKubeconfig | null;
  /** Counts creates and deletes (metrics); absent: not counted. */
  recordOperation?: RecordTenantOperation | undefined;
}

/** `work`, counted as one Tenant operation that succeeded or failed. */
function counted(deps: TenantApiDeps, operation: TenantOperation, work: Promise<void>): Promise<void> {
  const record = deps.recordOperation;
  return record === undefined
    ? work
    : work.then(
        () => record(operation, true),
        (error: unknown) => (record(operation, false), Promise.reject(error)),
      );
}

const MAX_BODY_BYTES = 3 * 1024 * 1024;
const MAX_DISCOVERY_BYTES = 16 * 1024 * 1024;
/** A watch without timeoutSeconds ends after this, as the apiserver's do (clients re-watch). */
const DEFAULT_WATCH_SECONDS = 1800;
/** Patches without a resourceVersion retry a lost race this many times, as the apiserver's GuaranteedUpdate does. */
const PATCH_ATTEMPTS = 5;
const GROUP_PATH = /^\/(?:apis|openapi\/v3\/apis)\/tenant\.kubezoo\.io(?:\/|$)/;
const ADMIN_DISCOVERY_PATH = /^\/(?:apis|openapi\/v3)\/?$/;
const TABLE_CONTENT_TYPE = 'application/json;as=Table;v=v1;g=meta.k8s.io';
const QUALIFIED = `${TENANT_RESOURCE}.${TENANT_GROUP}`;

// ---- Status errors in the apiserver's words ----

const details = (name: string) => ({ name, group: TENANT_GROUP, kind: TENANT_RESOURCE });
const tenantNotFound = (name: string) => notFound(`${QUALIFIED} "${name}" not found`, details(name));
const tenantConflict = (name: string, why: string) => conflict(`Operation cannot be fulfilled on ${QUALIFIED} "${name}": ${why}`, details(name));

/** The Status a TenantStore failure answers with; anything else is left as it is (a StatusError, or a bug → 500). */
export function tenantStoreStatus(error: unknown, name = ''): unknown {
  if (error instanceof TenantStoreUnavailable) {
    return serviceUnavailable(`the tenant store is unavailable, try again: ${error.message}`, { ...details(name), retryAfterSeconds: 1 });
  }
  if (error instanceof TenantConflict)
    return tenantConflict(name, 'the object has been modified; please apply your changes to the latest version and try again');
  if (error instanceof TenantExists) return alreadyExists(`${QUALIFIED} "${name}" already exists`, details(name));
  if (error instanceof TenantMissing) return tenantNotFound(name);
  if (error instanceof TenantWatchExpired) return expired(error.message);
  return error;
}

function forbiddenForTenants(info: RequestInfo): StatusError {
  const resource = info.resource === '' ? TENANT_GROUP : info.subresource === '' ? QUALIFIED : `${info.resource}/${info.subresource}.${TENANT_GROUP}`;
  return forbidden(`${resource} is forbidden: the Tenant API is for tenantgate's administrators only`, {
    group: TENANT_GROUP,
    kind: info.resource || TENANT_RESOURCE,
  });
}

// ---- answering ----

function sendJson(ctx: RequestContext, code: number, body: unknown, contentType = 'application/json'): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  ctx.answer(code, { 'content-type': contentType, 'cache-control': 'no-cache, private' }, text);
}

function wantsTable(accept: string | undefined): boolean {
  return accept !== undefined && /as=Table/.test(accept) && /g=meta\.k8s\.io/.test(accept);
}

function rowObjectsOf(query: URLSearchParams): RowObjects {
  const asked = query.get('includeObject');
  return asked === 'Object' || asked === 'None' ? asked : 'Metadata';
}

/** One tenant, or a one-row Table when kubectl asks for one. */
function sendTenant(ctx: RequestContext, code: number, tenant: Tenant, query: URLSearchParams): void {
  if (wantsTable(ctx.headers.accept)) sendJson(ctx, code, tenantTable([tenant], tenant.metadata.resourceVersion, rowObjectsOf(query)), TABLE_CONTENT_TYPE);
  else sendJson(ctx, code, tenant);
}

// ---- reading requests ----

async function readJsonOrYaml(ctx: RequestContext): Promise<{ body: unknown; contentType: string }> {
  const contentType = String(ctx.headers['content-type'] ?? 'application/json').toLowerCase();
  const buffer = await readBody(ctx.body, MAX_BODY_BYTES, () => requestEntityTooLarge(`the request body is larger than ${MAX_BODY_BYTES} bytes`));
  const text = buffer.toString('utf8');
  if (contentType.includes('json-patch')) return { body: parseJsonPatch(text), contentType };
  return { body: parseJsonOrYamlBody(text, contentType), contentType };
}

interface Filter {
  labels: LabelRequirement[];
  name: string | null;
}

/** labelSelector, and fieldSelector on metadata.name (the only field a Tenant can be selected by, as for CRs). */
function filterOf(query: URLSearchParams): Filter {
  const labels = parseLabelSelector(query.get('labelSelector') ?? '');
  let name: string | null = null;
  for (const term of parseFieldSelector(query.get('fieldSelector') ?? '')) {
    if (term.field !== 'metadata.name' || term.operator === '!=') throw badRequest(`field label not supported: ${term.field}`);
    name = term.value;
  }
  return { labels, name };
}

function matches(filter: Filter, tenant: Tenant): boolean {
  return (filter.name === null || tenant.metadata.name === filter.name) && labelsMatch(filter.labels, tenant.metadata.labels);
}

const isDryRun = (query: URLSearchParams) => query.getAll('dryRun').includes('All');
const now = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

// ---- verbs ----

function list(ctx: RequestContext, store: TenantStore, query: URLSearchParams): void {
  const filter = filterOf(query);
  const resourceVersion = store.resourceVersion;
  const items = store.list().filter((tenant) => matches(filter, tenant));
  if (wantsTable(ctx.headers.accept)) {
    sendJson(ctx, 200, tenantTable(items, resourceVersion, rowObjectsOf(query)), TABLE_CONTENT_TYPE);
    return;
  }
  sendJson(ctx, 200, { kind: 'TenantList', apiVersion: TENANT_API_VERSION, metadata: { resourceVersion }, items });
}

/**
 * JSON watch events, one a line, from `resourceVersion` (everything current as ADDED without one). With
 * sendInitialEvents=true the current tenants come first, then a bookmark marked k8s.io/initial-events-end.
 */
function watch(ctx: RequestContext, store: TenantStore, query: URLSearchParams): void {
  const res = ctx.out;
  const filter = filterOf(query);
  const table = wantsTable(ctx.headers.accept);
  const rowObjects = rowObjectsOf(query);
  let columnsSent = false;
  let headSent = false;
  const writeHead = () => {
    if (headSent) return;
    headSent = true;
    ctx.respond(200, { 'content-type': table ? TABLE_CONTENT_TYPE : 'application/json', 'cache-control': 'no-cache, private' });
  };
  const send = (type: string, object: unknown) => {
    writeHead();
    res.write(JSON.stringify({ type, object }) + '\n');
  };
  const onEvent = ({ type, tenant }: TenantEvent) => {
    if (!matches(filter, tenant)) return;
    if (!table) return send(type, tenant);
    send(type, tenantTable([tenant], tenant.metadata.resourceVersion, rowObjects, !columnsSent));
    columnsSent = true;
  };
  let from = query.get('resourceVersion') ?? undefined;
  if (query.get('sendInitialEvents') === 'true') {
    for (const tenant of store.list()) onEvent({ type: 'ADDED', tenant });
    from = store.resourceVersion;
    if (query.get('allowWatchBookmarks') === 'true') {
      send('BOOKMARK', {
        kind: 'Tenant',
        apiVersion: TENANT_API_VERSION,
        metadata: { resourceVersion: from, annotations: { 'k8s.io/initial-events-end': 'true' } },
      });
    }
  }
  // store.watch throws (410) before it emits anything: nothing has been written then, so the Status still fits.
  const stop = store.watch(onEvent, from);
  writeHead();
  const seconds = Number(query.get('timeoutSeconds') ?? DEFAULT_WATCH_SECONDS);
  const timer = setTimeout(() => res.end(), (Number.isFinite(seconds) && seconds > 0 ? seconds : DEFAULT_WATCH_SECONDS) * 1000);
  res.once('close', () => {
    clearTimeout(timer);
    stop();
  });
}

/** Server-owned fields: the writer's values are dropped, the store fills them. */
function forCreate(tenant: Tenant): Parameters<TenantStore['create']>[0] {
  const { uid: _uid, resourceVersion, creationTimestamp: _created, deletionTimestamp: _deleted, generation: _generation, ...metadata } = tenant.metadata;
  if (resourceVersion !== undefined && resourceVersion !== '') {
    throw invalid(
      `${QUALIFIED} "${tenant.metadata.name}" is invalid: metadata.resourceVersion: Invalid value: "${resourceVersion}": must not be set on create`,
      details(tenant.metadata.name),
    );
  }
  // The status is tenantgate's to write (status subresource), never the creator's: a new Tenant is Ready once stored,
  // as a namespace is Active (its birth state is written upstream on its first request: lifecycle.ts whenBorn).
  const { status: _status, ...rest } = tenant;
  const created = { ...rest, metadata } as Tenant;
  markCreated(created);
  return created;
}

async function create(ctx: RequestContext, store: TenantStore, body: unknown, query: URLSearchParams): Promise<void> {
  const tenant = forCreate(validateTenant(body, null));
  const name = tenant.metadata.name;
  if (isDryRun(query)) {
    if (store.get(name) !== undefined) throw tenantStoreStatus(new TenantExists(), name);
    sendTenant(ctx, 201, { ...tenant, metadata: { ...tenant.metadata, uid: '', resourceVersion: '', creationTimestamp: now() } } as Tenant, query);
    return;
  }
  const created = await store.create(tenant).catch((error: unknown) => Promise.reject(tenantStoreStatus(error, name)));
  sendTenant(ctx, 201, created, query);
}

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a ?? {}) === JSON.stringify(b ?? {});

/**
 * The stored Tenant that `written` asks for: through the object, its spec and metadata change and its status stays;
 * through /status, only its status changes. Identity and deletion stay the store's.
 */
function merged(current: Tenant, written: Tenant, subresource: string): Tenant {
  if (subresource === 'status')
    return { ...current, status: written.status, metadata: { ...current.metadata, resourceVersion: written.metadata.resourceVersion } };
  const metadata: Tenant['metadata'] = {
    ...written.metadata,
    uid: current.metadata.uid,
    creationTimestamp: current.metadata.creationTimestamp,
    generation: (current.metadata.generation ?? 1) + (sameJson(current.spec, written.spec) ? 0 : 1),
  };
  if (current.metadata.deletionTimestamp === undefined) delete metadata.deletionTimestamp;
  else metadata.deletionTimestamp = current.metadata.deletionTimestamp;
  const next: Tenant = { ...written, metadata };
  if (current.status === undefined) delete next.status;
  else next.status = current.status;
  return next;
}

/** Stores an update; a terminating Tenant left without finalizers is removed, as the apiserver does. */
async function store(store: TenantStore, next: Tenant, query: URLSearchParams): Promise<Tenant> {
  const name = next.metadata.name;
  if (isDryRun(query)) return next;
  try {
    if (next.metadata.deletionTimestamp !== undefined && (next.metadata.finalizers ?? []).length === 0) {
      await store.remove(name, next.metadata.resourceVersion);
      return next;
    }
    return await store.update(next);
  } catch (error) {
    throw tenantStoreStatus(error, name);
  }
}

function current(tenants: TenantStore, name: string): Tenant {
  const tenant = tenants.get(name);
  if (tenant === undefined) throw tenantNotFound(name);
  return structuredClone(tenant);
}

async function update(ctx: RequestContext, tenants: TenantStore, info: RequestInfo, body: unknown, query: URLSearchParams): Promise<void> {
  const written = validateTenant(body, info.name);
  const resourceVersion = written.metadata.resourceVersion;
  // As for custom resources: an update must say which version it replaces.
  if (resourceVersion === undefined || resourceVersion === '') {
    throw invalid(`${QUALIFIED} "${info.name}" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update`, details(info.name));
  }
  const updated = await store(tenants, merged(current(tenants, info.name), written, info.subresource), query);
  sendTenant(ctx, 200, updated, query);
}

/** The patched Tenant: merge and strategic merge patches merge (a Tenant has no lists to merge by key), JSON patches apply. */
function patched(target: Tenant, patch: unknown, contentType: string): unknown {
  if (contentType.includes('json-patch')) return applyJsonPatch(structuredClone(target), patch as Record<string, unknown>[]);
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) throw badRequest('a merge patch must be a JSON object');
  return applyMergePatch(target, patch);
}

/**
 * PATCH, including server-side apply (application/apply-patch+yaml), taken as a merge of the applied configuration
 * that creates the Tenant when it does not exist: no field ownership, which is enough for `kubectl apply --server-side`.
 */
async function patch(ctx: RequestContext, tenants: TenantStore, info: RequestInfo, body: unknown, contentType: string, query: URLSearchParams): Promise<void> {
  if (!PATCH_MEDIA_TYPES.some((type) => contentType.startsWith(type))) {
    throw unsupportedMediaType(`the body of the request was in an unknown format - accepted media types include: ${PATCH_MEDIA_TYPES.join(', ')}`);
  }
  const apply = contentType.startsWith('application/apply-patch');
  if (apply && tenants.get(info.name) === undefined && info.subresource === '') {
    await create(ctx, tenants, body, query);
    return;
  }
  for (let attempt = 1; ; attempt++) {
    const target = current(tenants, info.name);
    const result = patched(target, body, contentType) as Tenant;
    const written = validateTenant(result, info.name);
    // A patch that names a resourceVersion is a precondition; one that does not applies to whatever is current.
    const pinned = written.metadata.resourceVersion !== target.metadata.resourceVersion;
    try {
      sendTenant(ctx, 200, await store(tenants, merged(target, written, info.subresource), query), query);
      return;
    } catch (error) {
      const isRace = error instanceof StatusError && error.reason === 'Conflict';
      if (!isRace || pinned || attempt >= PATCH_ATTEMPTS) throw error;
    }
  }
}

/** Marks the Tenant for deletion (see the contract at the top); the lifecycle controller finishes it. */
async function remove(ctx: RequestContext, tenants: TenantStore, info: RequestInfo, body: unknown, query: URLSearchParams): Promise<void> {
  const preconditions = (body as { preconditions?: { uid?: string; resourceVersion?: string } } | undefined)?.preconditions ?? {};
  for (let attempt = 1; ; attempt++) {
    const tenant = current(tenants, info.name);
    if (preconditions.uid !== undefined && preconditions.uid !== tenant.metadata.uid) {
      throw tenantConflict(info.name, `Precondition failed: UID in precondition: ${preconditions.uid}, UID in object meta: ${tenant.metadata.uid}`);
    }
    if (preconditions.resourceVersion !== undefined && preconditions.resourceVersion !== tenant.metadata.resourceVersion) {
      throw tenantConflict(
        info.name,
        `Precondition failed: ResourceVersion in precondition: ${preconditions.resourceVersion}, ResourceVersion in object meta: ${tenant.metadata.resourceVersion}`,
      );
    }
    if (tenant.metadata.deletionTimestamp !== undefined) {
      sendTenant(ctx, 200, tenant, query);
      return;
    }
    tenant.metadata.deletionTimestamp = now();
    const finalizers = tenant.metadata.finalizers ?? [];
    if (!finalizers.includes(TENANT_CLEANUP_FINALIZER)) tenant.metadata.finalizers = [...finalizers, TENANT_CLEANUP_FINALIZER];
    try {
      sendTenant(ctx, 200, isDryRun(query) ? tenant : await tenants.update(tenant), query);
      return;
    } catch (error) {
      if (!(error instanceof TenantConflict) || attempt >= PATCH_ATTEMPTS) throw tenantStoreStatus(error, info.name);
    }
  }
}

async function kubeconfig(ctx: RequestContext, deps: TenantApiDeps, name: string): Promise<void> {
  const tenant = deps.tenants.get(name);
  if (tenant === undefined || tenant.metadata.deletionTimestamp !== undefined) throw tenantNotFound(name);
  if (deps.issueKubeconfig === null) throw serviceUnavailable('this tenantgate issues no tenant credentials (no tenant CA is configured)');
  const text = await deps.issueKubeconfig(tenant, reachedAt(ctx));
  sendJson(ctx, 200, text, 'application/yaml');
}

/** One request under /apis/tenant.kubezoo.io/... from an administrator. */
async function serveResource(ctx: RequestContext, deps: TenantApiDeps, info: RequestInfo, query: URLSearchParams): Promise<void> {
  const { tenants } = deps;
  if (info.apiVersion !== TENANT_VERSION || info.resource !== TENANT_RESOURCE || info.namespace !== '' || info.parts.length > 3) throw notFound();
  const method = ctx.method;
  const subresource = info.subresource;
  if (subresource === 'kubeconfig' && info.verb === 'get') return kubeconfig(ctx, deps, info.name);
  if (subresource !== '' && subresource !== 'status') throw notFound();
  switch (info.verb) {
    case 'list':
      return list(ctx, tenants, query);
    case 'watch':
      return watch(ctx, tenants, query);
    case 'get':
      return sendTenant(ctx, 200, current(tenants, info.name), query);
    case 'create':
      if (info.name !== '') break;
      return counted(
        deps,
        'create',
        readJsonOrYaml(ctx).then(({ body }) => create(ctx, tenants, body, query)),
      );
    case 'update': {
      return update(ctx, tenants, info, (await readJsonOrYaml(ctx)).body, query);
    }
    case 'patch': {
      const { body, contentType } = await readJsonOrYaml(ctx);
      return patch(ctx, tenants, info, body, contentType, query);
    }
    case 'delete': {
      if (subresource !== '') break;
      const hasBody = ctx.headers['content-length'] !== undefined && ctx.headers['content-length'] !== '0';
      return counted(
        deps,
        'delete',
        (hasBody ? readJsonOrYaml(ctx).then(({ body }) => body) : Promise.resolve(undefined)).then((body) => remove(ctx, tenants, info, body, query)),
      );
    }
  }
  throw methodNotAllowed(`the server does not allow this method on the requested resource (${method} ${QUALIFIED})`);
}

// ---- discovery for administrators: the upstream's answer with the group added ----

/** An administrator's discovery request, forwarded as they asked it, answered with `add` applied to a 200's document. */
function addToUpstreamDocument(ctx: RequestContext, pool: UpstreamPool, add: (doc: any) => void): void {
  const headers: OutgoingHttpHeaders = upstreamRequestHeaders(ctx.headers, upstreamIdentityOf(identityOf(ctx)), pool);
  headers.accept = jsonAccept(ctx.headers.accept, true);
  // The answer changes: it must arrive whole and uncompressed, and the upstream's ETag no longer describes it.
  delete headers['accept-encoding'];
  delete headers['if-none-match'];
  requestUpstreamFor(ctx, pool, ctx.path, headers, (upstream, upstreamHeaders) => {
    const status = Number(upstreamHeaders[':status'] ?? 502);
    const responseHeaders = clientResponseHeaders(upstreamHeaders);
    delete responseHeaders['content-length'];
    delete responseHeaders.etag;
    void readBody(upstream, MAX_DISCOVERY_BYTES, () => badGateway('the upstream discovery document is too large'))
      .then((buffer) => {
        let body: Buffer | string = buffer;
        if (status === 200) {
          const doc = JSON.parse(buffer.toString('utf8'));
          add(doc);
          body = JSON.stringify(doc);
        }
        ctx.answer(status, responseHeaders, body);
      })
      .catch((error: unknown) => sendStatus(ctx, error instanceof SyntaxError ? badGateway('the upstream discovery document is not JSON') : error));
  });
}

function addGroup(doc: any): void {
  if (doc?.kind === 'APIGroupDiscoveryList' && Array.isArray(doc.items)) doc.items.push(aggregatedDiscoveryGroup());
  else if (doc?.kind === 'APIGroupList' && Array.isArray(doc.groups)) doc.groups.push(apiGroup());
}

function addOpenApiPath(doc: any): void {
  if (typeof doc?.paths !== 'object' || doc.paths === null) return;
  doc.paths[OPENAPI_V3_PATH] = { serverRelativeURL: `/openapi/v3/${OPENAPI_V3_PATH}?hash=${OPENAPI_V3_HASH}` };
}

/**
 * The pipeline stage: answers every request for the group (403 to tenants), and administrators' discovery of /apis
 * and /openapi/v3 with the group added; passes everything else on.
 */
export function tenantApi(deps: TenantApiDeps): (ctx: RequestContext) => boolean | Promise<boolean> {
  return (ctx) => {
    const rawPath = ctx.pathname;
    const isAdmin = identityOf(ctx).tenant === null;
    // Most requests are neither for the group nor an administrator's discovery: they leave before any parsing.
    // (A percent-encoded path is decoded first: `tenant%2Ekubezoo.io` is the group too.)
    if (!rawPath.includes('%') && !GROUP_PATH.test(rawPath) && !(isAdmin && ADMIN_DISCOVERY_PATH.test(rawPath))) return false;
    const query = ctx.query;
    const info = parseRequestInfo(ctx.method, rawPath, query);
    if (GROUP_PATH.test(info.path)) {
      if (!isAdmin) throw forbiddenForTenants(info);
      const path = info.path.replace(/\/+$/, '');
      if (path === `/apis/${TENANT_GROUP}`) sendJson(ctx, 200, apiGroup());
      else if (path === `/apis/${TENANT_API_VERSION}`) sendJson(ctx, 200, apiResourceList());
      else if (path === `/openapi/v3/${OPENAPI_V3_PATH}`) sendJson(ctx, 200, OPENAPI_V3_DOCUMENT);
      else if (path.startsWith('/openapi/')) throw notFound();
      else
        return serveResource(ctx, deps, info, query).then(
          () => true,
          (error: unknown) => Promise.reject(tenantStoreStatus(error, info.name)),
        );
      return true;
    }
    if (!isAdmin || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return false;
    if (info.path === '/apis' || info.path === '/apis/') {
      addToUpstreamDocument(ctx, deps.pool, addGroup);
      return true;
    }
    if (info.path === '/openapi/v3' || info.path === '/openapi/v3/') {
      addToUpstreamDocument(ctx, deps.pool, addOpenApiPath);
      return true;
    }
    return false;
  };
}

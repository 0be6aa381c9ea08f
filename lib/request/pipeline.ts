// The whole path of a request, one named stage after another in the order they run, the same list for every protocol
// (HTTP/2 streams, HTTP/1.1, Upgrade). A stage answers the request (returns true), passes it on (false), or finishes
// later (a promise of either). Stages that only concern a converted tenant request pass the others on.
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { ServerHttp2Stream } from 'node:http2';
import { ServerResponse as Http1Response } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { readForbidden, type AccessReviews } from '../auth/access-review.ts';
import { authenticateCaller } from '../auth/authenticate.ts';
import { upstreamIdentityOf } from '../auth/impersonation.ts';
import { authorizeClusterScopeWrites, confirmNoEscalationStage } from './cluster-scope-writes.ts';
import { authorizeImpersonation, requestedImpersonation } from '../auth/requested-impersonation.ts';
import type { Identity } from '../auth/identity.ts';
import type { ServiceAccountTokens } from '../auth/service-account-tokens.ts';
import { resolveTenant } from '../auth/tenant-resolution.ts';
import type { FlowController } from '../flowcontrol/dispatcher.ts';
import { flowControl, releaseSeat } from '../flowcontrol/stage.ts';
import { accessRefusal, isBuiltinGroup, kindOf, type KindRow } from '../convert/kinds.ts';
import { parseRequestInfo, type RequestInfo } from '../convert/request-info.ts';
import { isDiscoveryDocumentPath, upstreamNonResourcePath, upstreamObjectName } from '../convert/request.ts';
import { apiGroupToUpstream } from '../convert/rules/index.ts';
import { forbidden, notFound, unauthorized } from '../errors/status-error.ts';
import type { DiscoveryCache } from '../upstream/discovery.ts';
import type { ClusterCredentials } from '../upstream/kubeconfig.ts';
import type { UpstreamPool } from '../upstream/pool.ts';
import type { TenantStore } from '../tenants/tenant.ts';
import type { TenantId } from '../convert/prefix.ts';
import type { RecordTenantOperation, TenantgateMetrics } from '../metrics/metrics.ts';
import type { HealthChecks } from './health.ts';
import type { RequestObserver } from './request-end.ts';
import { malformedRequestTarget } from './request-target.ts';
import { sendStatus } from './status.ts';
import { tenantApi, type IssueKubeconfig } from './tenant-api.ts';
import { answerStage } from './answers.ts';
import { Http1RequestContext, Http2RequestContext, identityOf, isConverted, isKindRequest, type KindRequest, type RequestContext } from './context.ts';
import { listAcrossNamespacesStage } from './merged-list.ts';
import { cancelUpstream, openUpstreamStage, prepareUpstreamRequestStage } from './open-upstream.ts';
import { negotiateMediaTypes } from './negotiation.ts';
import { convertRequestBodyStage } from './request-body.ts';
import { TenantConversions, type TenantConversionDeps } from './tenant-conversions.ts';
import type { Stage } from './stage.ts';
import { upgradeStage } from './upgrade.ts';
import { startsCheaply, watchCacheStage } from '../watchcache/stage.ts';
import type { WatchCache } from '../watchcache/watch-cache.ts';

export interface PipelineDeps {
  pool: UpstreamPool;
  health: HealthChecks;
  discovery: DiscoveryCache;
  /** Conversion off for everyone: tenants' requests pass through like an administrator's (bench baseline). */
  passthrough: boolean;
  /** The tenants' in-memory index: a tenant identity counts only while its tenant is there. */
  tenants: TenantStore;
  /** Bearer tokens of tenants' service accounts, reviewed upstream and cached. */
  tokens: ServiceAccountTokens;
  /** Issues a tenant admin's kubeconfig for the Tenant API; null when this tenantgate has no tenant CA. */
  issueKubeconfig: IssueKubeconfig | null;
  /** Where upstream latency and list/watch rewrites are counted; null: not counted. */
  metrics?: TenantgateMetrics | null;
  /** Counts the Tenant API's creates and deletes. */
  recordOperation?: RecordTenantOperation | undefined;
  /** Per-tenant seats and fair queuing (administrators are exempt). */
  flow: FlowController;
  /** tenantgate's upstream credentials, for the HTTP/1.1 connections an upgrade opens (HTTP/2 cannot carry one). */
  upstream: ClusterCredentials;
  /** Hosts tenants' admission webhooks may call by URL (--tenant-webhook-url-hosts); none when omitted. */
  webhookUrlHosts?: ReadonlySet<string>;
  /** Callers' RBAC for reads at the cluster scope and for impersonation: upstream, and the tenant's ClusterRoleBindings by tenantgate; cached. */
  access: AccessReviews;
  /** Before a tenant's CRD write is answered (the lifecycle's write-through); absent: nothing waits. */
  customResourceDefinitionWritten?: TenantConversionDeps['customResourceDefinitionWritten'];
  /** The tenants' conversion contexts, when the caller shares them (with the watch cache); absent: made here. */
  conversions?: TenantConversions;
  /** The shared watch cache (--watch-cache); null or absent: every list and watch goes upstream. */
  watchCache?: WatchCache | null;
  /** Writes a tenant's birth state upstream before its first request that reads or writes objects; absent: nothing waits. */
  births?: TenantBirths | undefined;
}

/** Where a tenant's birth state comes from (the lifecycle): null once it is upstream, else a promise of it. */
export interface TenantBirths {
  whenBorn(tenant: TenantId): Promise<void> | null;
}

function validateTarget(ctx: RequestContext): boolean {
  const problem = malformedRequestTarget(ctx.path);
  if (problem !== null) throw problem;
  return false;
}

function authenticate(tokens: ServiceAccountTokens): Stage['run'] {
  const accept = (ctx: RequestContext, identity: Identity | null) => {
    if (identity === null) throw unauthorized();
    ctx.identity = identity;
    return false;
  };
  return (ctx) => {
    const authorization = ctx.headers.authorization;
    const identity = authenticateCaller(ctx.socket, authorization, tokens);
    // A certificate or a cached token answers at once; only a token's first review waits.
    return identity instanceof Promise ? identity.then((reviewed) => accept(ctx, reviewed)) : accept(ctx, identity);
  };
}

/**
 * Impersonate-* headers, honoured as the apiserver honours them: each attribute asked for is authorized for the
 * caller upstream (403 otherwise), then the request runs as the target (`ctx.identity`), the caller kept for the log.
 * Runs for one kind of caller, at its place in the order: administrators before the Tenant API, tenants once their
 * tenant is resolved and they hold a seat (the reviews it may cost count against their share).
 */
function impersonate(access: AccessReviews, callers: 'administrators' | 'tenants'): Stage['run'] {
  return (ctx) => {
    const caller = identityOf(ctx);
    if ((caller.tenant === null) !== (callers === 'administrators')) return false;
    const requested = requestedImpersonation(ctx.rawHeaders);
    if (requested === null) return false;
    return authorizeImpersonation(access, caller, requested).then((target) => {
      ctx.caller = caller;
      ctx.identity = target;
      return false;
    });
  };
}

/**
 * A target sent under a tenant's path is served only to that tenant's identities: another tenant's, an
 * administrator's (who has no tenant) and one naming no tenant at all get the same 403, which tells nothing of which
 * tenants exist. Runs once the identity is final for the Tenant API (after administrators' impersonation).
 */
export function confirmPathTenant(ctx: RequestContext): boolean {
  const named = ctx.pathTenant;
  if (named === null) return false;
  const identity = identityOf(ctx);
  if (identity.tenant !== named) {
    throw forbidden(`User "${identity.user}" may not use the server URL of tenant "${named}": it serves only that tenant's credentials`);
  }
  return false;
}

/** A tenant identity counts only while its tenant exists; its requests are converted unless conversion is off. */
export function resolve(tenants: TenantStore, passthrough: boolean): Stage['run'] {
  return (ctx) => {
    const identity = identityOf(ctx);
    resolveTenant(identity, tenants);
    ctx.converts = identity.tenant !== null && !passthrough;
    return false;
  };
}

/**
 * Classify like the apiserver's RequestInfo and find a built-in kind's row: once per request, before flow control (as
 * the apiserver classifies before its priority and fairness), so flow control reads what the request is.
 */
export function classify(ctx: RequestContext): boolean {
  const tenant = identityOf(ctx).tenant;
  if (!ctx.converts || tenant === null) return false;
  const info = parseRequestInfo(ctx.method, ctx.pathname, ctx.query);
  ctx.info = info;
  if (!info.isResourceRequest) {
    // Discovery, version and OpenAPI only, in the forms the apiserver serves them.
    const upstreamPath = upstreamNonResourcePath(info.path, tenant);
    if (upstreamPath === null) throw notFound();
    // Discovery documents are read with tenantgate's own identity: tenant identities need no upstream discovery,
    // which lists every tenant's groups (--confine-upstream-discovery takes it from them); the answer is converted.
    if (ctx.method === 'GET' && isDiscoveryDocumentPath(upstreamPath)) ctx.asTenantgate = true;
    return false;
  }
  if (isBuiltinGroup(info.apiGroup)) ctx.row = kindOf(info.apiGroup, info.resource) ?? null;
  return false;
}

/**
 * What classification leaves to upstream discovery, after flow control (it may ask the upstream): a custom resource's
 * kind and scope (refreshed when unknown: a CRD may be new), and recent discovery for the discovery answers it filters.
 */
export function discoverKind(discovery: DiscoveryCache): Stage['run'] {
  return (ctx) => {
    if (!isConverted(ctx)) return false;
    const info = ctx.info;
    if (!info.isResourceRequest) return info.path.startsWith('/apis') ? discovery.refreshIfStale().then(() => false) : false;
    if (isBuiltinGroup(info.apiGroup)) return false;
    return discovery.resolveScope(apiGroupToUpstream(info.apiGroup, ctx.identity.tenant, info.resource), info.apiVersion, info.resource).then((scope) => {
      ctx.row = kindOf(info.apiGroup, info.resource, scope) ?? null;
      return false;
    });
  };
}

/**
 * A tenant's first request for objects waits until its built-in namespaces, roles and Service are upstream (written
 * now; a tenant nobody uses has none). Discovery, version and OpenAPI need none of them.
 */
export function awaitBirth(births: TenantBirths): Stage['run'] {
  return (ctx) => {
    if (!isConverted(ctx) || !ctx.info.isResourceRequest) return false;
    const birth = births.whenBorn(ctx.identity.tenant);
    return birth === null ? false : birth.then(() => false);
  };
}

/** Hidden and unknown kinds do not exist for tenants; shared kinds are read-only. */
export function admit(ctx: RequestContext): boolean {
  const info = ctx.info;
  if (info === null || !info.isResourceRequest) return false;
  const refusal = accessRefusal(ctx.row ?? undefined, info.verb, info.subresource);
  if (refusal !== null) throw refusal;
  return false;
}

const CROSS_NAMESPACE_VERBS: ReadonlySet<string> = new Set(['list', 'watch']);
const CLUSTER_READ_VERBS: ReadonlySet<string> = new Set(['get', 'list', 'watch']);

/**
 * Reads that no tenant identity may make upstream, whatever the tenant's RBAC says: a list or watch of a namespaced
 * kind across all namespaces, and any read of a cluster-scoped kind by a user whose rights come from the tenant's
 * ClusterRoleBindings (upstream those are tenantgate's custom resources, which grant nothing).
 */
function readsAtClusterScope(info: RequestInfo, row: KindRow): boolean {
  // Upstream a tenant admin holds only writes on cluster-scoped custom resources (the shared role names every tenant's),
  // so a read of one's status or scale is made by tenantgate too.
  if (info.subresource !== '') return row.rule === 'custom-resource' && row.scope === 'Cluster' && info.verb === 'get';
  return row.scope === 'Namespaced' ? info.namespace === '' && CROSS_NAMESPACE_VERBS.has(info.verb) : CLUSTER_READ_VERBS.has(info.verb);
}

/**
 * A read at the cluster scope: tenantgate makes it with its own identity (still narrowed to the tenant's objects, by
 * name or label and the per-item check of the answer) once the tenant's own RBAC allowed it, as the apiserver would
 * have: the same 403 otherwise.
 */
export function authorizeClusterScopeReads(access: AccessReviews): Stage['run'] {
  const decide = (ctx: KindRequest, allowed: boolean) => {
    const info = ctx.info;
    if (!allowed) throw readForbidden(ctx.identity.user, info.verb, info.apiGroup, info.resource, info.verb === 'get' ? info.name : '');
    ctx.asTenantgate = true;
    return false;
  };
  return (ctx) => {
    if (!isKindRequest(ctx) || !readsAtClusterScope(ctx.info, ctx.row)) return false;
    const { info, row, identity } = ctx;
    const tenant = identity.tenant;
    // RBAC's resourceNames match a get of one object by its upstream name.
    const name = info.verb === 'get' && info.name !== '' ? upstreamObjectName(info, row, info.name, tenant) : '';
    // (RBAC names a subresource as `<resource>/<subresource>`.)
    const resource = info.subresource === '' ? info.resource : `${info.resource}/${info.subresource}`;
    const allowed = access.allowed(tenant, upstreamIdentityOf(identity), info.verb, apiGroupToUpstream(info.apiGroup, tenant, info.resource), resource, name);
    return typeof allowed === 'boolean' ? decide(ctx, allowed) : allowed.then((answer) => decide(ctx, answer));
  };
}

/** The stages of `tenantgate serve`, in order. */
export function buildPipeline(deps: PipelineDeps): Stage[] {
  const { pool, health, discovery, passthrough, tenants, tokens, issueKubeconfig, flow, upstream, access, metrics = null, recordOperation } = deps;
  const watchCache = deps.watchCache ?? null;
  const conversions =
    deps.conversions ??
    new TenantConversions({
      pool,
      discovery,
      access,
      metrics,
      webhookUrlHosts: deps.webhookUrlHosts,
      customResourceDefinitionWritten: deps.customResourceDefinitionWritten,
    });
  return [
    { name: 'validate request target', run: validateTarget },
    { name: 'health checks', run: (ctx) => health.serve(ctx) },
    { name: 'authenticate', run: authenticate(tokens) },
    // Before the Tenant API: an administrator's discovery with --as is the target's too.
    { name: 'impersonate (administrators)', run: impersonate(access, 'administrators') },
    // Before the Tenant API too: an administrator has no tenant, and so no tenant's URL.
    { name: 'confirm the tenant of the URL', run: confirmPathTenant },
    // Before tenant resolution: any tenant identity, valid or not, is refused the group alike (403).
    { name: 'Tenant API (administrators)', run: tenantApi({ pool, tenants, issueKubeconfig, recordOperation }) },
    { name: 'resolve tenant', run: resolve(tenants, passthrough) },
    // From here on, stages of conversion pass on requests that are not converted (administrators, --passthrough).
    // Before flow control, which reads it (a watch the cache serves costs no seat); it asks nothing of anyone.
    { name: 'classify', run: classify },
    // Before any work for the request: a tenant over its share waits or gets 429 here, cheaply. Upgrades (exec,
    // attach, port-forward) hold a seat like any other long-running request.
    { name: 'flow control', run: watchCache === null ? flowControl(flow) : flowControl(flow, startsCheaply(watchCache)) },
    // After flow control (the apiserver classifies the target, but a tenant's share is the tenant's whoever it acts
    // as): a flood of impersonated requests waits for seats before it costs any access review.
    { name: 'impersonate (tenants)', run: impersonate(access, 'tenants') },
    { name: 'discover the kind', run: discoverKind(discovery) },
    { name: 'admit', run: admit },
    // After admit (an unknown kind is 404 whatever it accepts); before any work: a 406 or 415 costs nothing.
    { name: 'negotiate media types', run: negotiateMediaTypes },
    // After admit: a request refused anyway costs no birth.
    ...(deps.births === undefined ? [] : [{ name: 'await the birth state', run: awaitBirth(deps.births) }]),
    // After admit: hidden and shared kinds are answered before any question reaches the upstream.
    { name: 'authorize reads at the cluster scope', run: authorizeClusterScopeReads(access) },
    // A tenant user's write there that its tenant's ClusterRoleBindings allow (upstream RBAC never sees those).
    { name: 'authorize writes at the cluster scope', run: authorizeClusterScopeWrites(access) },
    // After admission: an upgrade is converted and checked exactly as the same request without Upgrade would be.
    { name: 'upgrade exec, attach, port-forward and proxy', run: upgradeStage(upstream) },
    // After every check a request would pass on its way upstream; it answers from tenantgate's own copy instead.
    ...(watchCache === null ? [] : [{ name: 'serve from the watch cache', run: watchCacheStage(watchCache, access) }]),
    { name: 'prepare upstream request', run: prepareUpstreamRequestStage(conversions) },
    // Objects upstream controllers made without the tenant label: one list per tenant namespace, merged.
    { name: 'list across namespaces', run: listAcrossNamespacesStage(conversions) },
    { name: 'convert request body', run: convertRequestBodyStage(conversions) },
    // A ClusterRole or ClusterRoleBinding such a write grants: only what the user holds (RBAC's escalation check).
    { name: 'confirm no escalation', run: confirmNoEscalationStage(conversions) },
    { name: 'open upstream', run: openUpstreamStage(conversions) },
    // Last: the answer is picked from a table of response converters when the upstream's head arrives.
    { name: 'answer', run: answerStage(conversions) },
  ];
}

function runStages(stages: Stage[], ctx: RequestContext, from: number): void {
  try {
    for (let i = from; i < stages.length; i++) {
      const outcome = stages[i]!.run(ctx);
      if (outcome === true) return;
      if (outcome !== false) {
        outcome.then(
          (answered) => answered || runStages(stages, ctx, i + 1),
          (error: unknown) => sendStatus(ctx, error),
        );
        return;
      }
    }
    sendStatus(ctx, notFound());
  } catch (error) {
    sendStatus(ctx, error);
  }
}

function ignoreStreamError(): void {}

/** Where the exchange keeps its context for the one shared 'close' listener (no closure per request). */
const CONTEXT = Symbol('tenantgate.requestContext');
type Closable = { [CONTEXT]?: RequestContext; on(event: 'close', listener: () => void): unknown };

/**
 * Runs every request's pipeline, and ends what a request holds once its exchange closes, however it ended: its
 * flow-control seat, its upstream stream, and its metrics and log line.
 */
export class RequestRunner {
  readonly #stages: Stage[];
  readonly #observer: RequestObserver | undefined;
  readonly #onClose: (this: Closable) => void;
  /** Exchanges not closed yet: a shutdown ends the watches among them. */
  readonly #open = new Set<RequestContext>();

  constructor(stages: Stage[], observer?: RequestObserver) {
    this.#stages = stages;
    this.#observer = observer;
    const observed = observer;
    const open = this.#open;
    this.#onClose = function (this: Closable) {
      const ctx = this[CONTEXT]!;
      open.delete(ctx);
      releaseSeat(ctx);
      cancelUpstream(ctx);
      ctx.cacheWatcher?.closed();
      observed?.ended(ctx);
    };
  }

  /** Requests whose exchange is still open (watches included), in arrival order. */
  get open(): ReadonlySet<RequestContext> {
    return this.#open;
  }

  #run(ctx: RequestContext, out: Closable): void {
    out[CONTEXT] = ctx;
    this.#open.add(ctx);
    // (on, not once: 'close' comes once, and once() would wrap the shared listener in a closure per request.)
    out.on('close', this.#onClose);
    this.#observer?.begin(ctx);
    runStages(this.#stages, ctx, 0);
  }

  /** An HTTP/2 request: served from its stream. */
  stream(stream: ServerHttp2Stream, headers: IncomingHttpHeaders, rawHeaders: readonly string[]): void {
    // A stream's errors (a client's reset, a write after the peer went away) end the exchange, which 'close' handles;
    // unheard, one would end the process.
    stream.on('error', ignoreStreamError);
    this.#run(new Http2RequestContext(stream, headers, rawHeaders), stream as unknown as Closable);
  }

  /** An HTTP/1.1 request. */
  request(req: IncomingMessage, res: ServerResponse): void {
    this.#run(new Http1RequestContext(req, res), res as unknown as Closable);
  }

  /**
   * An HTTP/1.1 request that carries `Upgrade` (the server hands it over as a socket): it gets a response object over
   * that socket and passes every stage like any other request. Only exec, attach, port-forward and proxy are upgraded
   * (the stage "upgrade"); any other request is answered plainly, converted, over the same socket.
   */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on('error', () => socket.destroy());
    const res = new Http1Response(req);
    res.assignSocket(socket as Socket);
    // One request per upgraded connection: a plain answer closes it once written.
    res.shouldKeepAlive = false;
    res.once('finish', () => socket.end());
    // The server let go of the socket, its 'drain' listener too: without this, an answer larger than the socket's
    // buffer (a big list) would wait for a 'drain' of the response that never comes.
    socket.on('drain', () => {
      if (res.writableNeedDrain) res.emit('drain');
    });
    this.#run(new Http1RequestContext(req, res, { socket, head }), res as unknown as Closable);
  }
}

// The whole path of a request, one named stage after another in the order they run.
// A stage answers the request (returns true), passes it on (false), or finishes later (a promise of either).
import { ServerResponse, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { clusterScopeForbidden, type AccessReviews } from '../auth/access-review.ts';
import { authenticateCaller } from '../auth/authenticate.ts';
import { upstreamIdentityOf } from '../auth/impersonation.ts';
import { authorizeImpersonation, requestedImpersonation } from '../auth/requested-impersonation.ts';
import type { Identity } from '../auth/identity.ts';
import type { ServiceAccountTokens } from '../auth/service-account-tokens.ts';
import { resolveTenant } from '../auth/tenant-resolution.ts';
import type { FlowController } from '../flowcontrol/dispatcher.ts';
import { flowControl } from '../flowcontrol/stage.ts';
import { accessRefusal, isBuiltinGroup, kindOf, type KindRow } from '../convert/kinds.ts';
import { parseRequestInfo, type RequestInfo } from '../convert/request-info.ts';
import { isDiscoveryDocumentPath, upstreamNonResourcePath, upstreamObjectName, upstreamResourceTarget } from '../convert/request.ts';
import { apiGroupToUpstream } from '../convert/rules/index.ts';
import type { DiscoveryCache } from '../upstream/discovery.ts';
import { forwardToUpstream } from '../upstream/forward.ts';
import type { ClusterCredentials } from '../upstream/kubeconfig.ts';
import type { UpstreamPool } from '../upstream/pool.ts';
import type { TenantStore } from '../tenants/tenant.ts';
import type { RecordTenantOperation, TenantgateMetrics } from '../metrics/metrics.ts';
import { forwardTenantRequest, type TenantForwardDeps } from '../upstream/tenant-forward.ts';
import { TenantOpenApiV2Cache } from '../upstream/openapi-v2-cache.ts';
import { forwardUpgrade, isUpgradableRequest } from '../upstream/upgrade.ts';
import { newRequestContext, type RequestContext } from './context.ts';
import type { HealthChecks } from './health.ts';
import type { RequestObserver } from './request-end.ts';
import { malformedRequestTarget } from './request-target.ts';
import { sendStatus } from './status.ts';
import { badRequest, notFound, unauthorized } from '../errors/status-error.ts';
import { tenantApi, type IssueKubeconfig } from './tenant-api.ts';

export interface Stage {
  name: string;
  run(ctx: RequestContext): boolean | Promise<boolean>;
}

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
  /** Callers' RBAC for reads at the cluster scope and for impersonation, asked upstream (shadow identities too), cached. */
  access: AccessReviews;
  /** Before a tenant's CRD write is answered (the lifecycle's write-through); absent: nothing waits. */
  customResourceDefinitionWritten?: TenantForwardDeps['customResourceDefinitionWritten'];
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
    const identity = authenticateCaller(ctx.req.socket as TLSSocket, ctx.req.headers.authorization, tokens);
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
    const caller = ctx.identity!;
    if ((caller.tenant === null) !== (callers === 'administrators')) return false;
    const requested = requestedImpersonation(ctx.req.rawHeaders);
    if (requested === null) return false;
    return authorizeImpersonation(access, caller, requested).then((target) => {
      ctx.caller = caller;
      ctx.identity = target;
      return false;
    });
  };
}

/** Classify like the apiserver's RequestInfo, then find the kind (scope from discovery for custom resources). */
function classify(discovery: DiscoveryCache): Stage['run'] {
  return (ctx) => {
    const queryStart = ctx.path.indexOf('?');
    const path = queryStart === -1 ? ctx.path : ctx.path.slice(0, queryStart);
    const info = parseRequestInfo(ctx.req.method ?? 'GET', path, new URLSearchParams(queryStart === -1 ? '' : ctx.path.slice(queryStart + 1)));
    ctx.info = info;
    if (!info.isResourceRequest) {
      // Discovery, version and OpenAPI only, in the forms the apiserver serves them.
      const upstreamPath = upstreamNonResourcePath(info.path, ctx.identity!.tenant!);
      if (upstreamPath === null) throw notFound();
      // Discovery documents are read with tenantgate's own identity: tenant identities need no upstream discovery,
      // which lists every tenant's groups (--confine-upstream-discovery takes it from them); the answer is converted.
      if (ctx.req.method === 'GET' && isDiscoveryDocumentPath(upstreamPath)) ctx.asTenantgate = true;
      // Discovery answers are filtered with what discovery knows: make sure it knows something recent.
      return info.path.startsWith('/apis') ? discovery.refreshIfStale().then(() => false) : false;
    }
    if (isBuiltinGroup(info.apiGroup)) {
      ctx.row = kindOf(info.apiGroup, info.resource) ?? null;
      return false;
    }
    // A custom resource: its scope comes from upstream discovery (refreshed when unknown: a CRD may be new).
    return discovery.resolveScope(apiGroupToUpstream(info.apiGroup, ctx.identity!.tenant!), info.apiVersion, info.resource).then((scope) => {
      ctx.row = kindOf(info.apiGroup, info.resource, scope) ?? null;
      return false;
    });
  };
}

/** Hidden and unknown kinds do not exist for tenants; shared kinds are read-only. */
function admit(ctx: RequestContext): boolean {
  const info = ctx.info!;
  if (!info.isResourceRequest) return false;
  const refusal = accessRefusal(ctx.row ?? undefined, info.verb, info.subresource);
  if (refusal !== null) throw refusal;
  return false;
}

/** Administrators' requests reach the upstream as they are; an upgrade of theirs is relayed whatever it names. */
function passThrough(ctx: RequestContext, pool: UpstreamPool, upstream: ClusterCredentials, metrics: TenantgateMetrics | null): true {
  if (ctx.upgrade !== null) forwardUpgrade(ctx, ctx.path, upstream);
  else forwardToUpstream(ctx, pool, metrics);
  return true;
}

/**
 * A tenant's request that carries Upgrade: exec, attach, port-forward and proxy are upgraded under the tenant's names;
 * any other GET goes on as a plain request (converted by the next stage); any other method is refused, since its body
 * was not read as a request body.
 */
function upgradeTenantRequest(ctx: RequestContext, upstream: ClusterCredentials): boolean {
  if (ctx.upgrade === null) return false;
  const info = ctx.info!;
  if (isUpgradableRequest(info)) {
    const queryStart = ctx.path.indexOf('?');
    const query = new URLSearchParams(queryStart === -1 ? '' : ctx.path.slice(queryStart + 1));
    forwardUpgrade(ctx, upstreamResourceTarget(info, ctx.row!, query, ctx.identity!.tenant!), upstream);
    return true;
  }
  const method = ctx.req.method;
  if (method === 'GET' || method === 'HEAD') return false;
  throw badRequest('Upgrade is served only for exec, attach, port-forward and proxy; send this request without it');
}

const CROSS_NAMESPACE_VERBS: ReadonlySet<string> = new Set(['list', 'watch']);
const CLUSTER_READ_VERBS: ReadonlySet<string> = new Set(['get', 'list', 'watch']);

/**
 * Reads that no tenant identity may make upstream, whatever the tenant's RBAC says: a list or watch of a namespaced
 * kind across all namespaces, and any read of a cluster-scoped kind by a user whose rights come from the tenant's
 * ClusterRoleBindings (upstream those bind shadow subjects only).
 */
function readsAtClusterScope(info: RequestInfo, row: KindRow | null): boolean {
  if (row === null || info.subresource !== '') return false;
  return row.scope === 'Namespaced' ? info.namespace === '' && CROSS_NAMESPACE_VERBS.has(info.verb) : CLUSTER_READ_VERBS.has(info.verb);
}

/**
 * A read at the cluster scope: tenantgate makes it with its own identity (still narrowed to the tenant's objects, by
 * name or label and the per-item check of the answer) once the tenant's own RBAC allowed it, as the apiserver would
 * have: the same 403 otherwise.
 */
function authorizeClusterScopeReads(access: AccessReviews): Stage['run'] {
  const decide = (ctx: RequestContext, allowed: boolean) => {
    const info = ctx.info!;
    if (!allowed) throw clusterScopeForbidden(ctx.identity!.user, info.verb, info.apiGroup, info.resource, info.verb === 'get' ? info.name : '');
    ctx.asTenantgate = true;
    return false;
  };
  return (ctx) => {
    const info = ctx.info!;
    const row = ctx.row;
    if (!readsAtClusterScope(info, row)) return false;
    const identity = ctx.identity!;
    const tenant = identity.tenant!;
    // RBAC's resourceNames match a get of one object by its upstream name.
    const name = info.verb === 'get' && info.name !== '' ? upstreamObjectName(info, row!, info.name, tenant) : '';
    const allowed = access.allowed(tenant, upstreamIdentityOf(identity), info.verb, apiGroupToUpstream(info.apiGroup, tenant), info.resource, name);
    return typeof allowed === 'boolean' ? decide(ctx, allowed) : allowed.then((answer) => decide(ctx, answer));
  };
}

/** The stages of `tenantgate serve`, in order. */
export function buildPipeline({ pool, health, discovery, passthrough, tenants, tokens, issueKubeconfig, flow, upstream, access, metrics = null, recordOperation, webhookUrlHosts, customResourceDefinitionWritten }: PipelineDeps): Stage[] {
  const forwardDeps = { pool, discovery, access, metrics, webhookUrlHosts, customResourceDefinitionWritten, openapiV2: new TenantOpenApiV2Cache() };
  return [
    { name: 'validate request target', run: validateTarget },
    { name: 'health checks', run: (ctx) => health.serve(ctx) },
    { name: 'authenticate', run: authenticate(tokens) },
    // Before the Tenant API: an administrator's discovery with --as is the target's too.
    { name: 'impersonate (administrators)', run: impersonate(access, 'administrators') },
    // Before tenant resolution: any tenant identity, valid or not, is refused the group alike (403).
    { name: 'Tenant API (administrators)', run: tenantApi({ pool, tenants, issueKubeconfig, recordOperation }) },
    { name: 'resolve tenant', run: (ctx) => (resolveTenant(ctx.identity!, tenants), false) },
    // Before any work for the request: a tenant over its share waits or gets 429 here, cheaply.
    { name: 'flow control', run: flowControl(flow) },
    // After flow control (the apiserver classifies the target, but a tenant's share is the tenant's whoever it acts
    // as): a flood of impersonated requests waits for seats before it costs any access review.
    { name: 'impersonate (tenants)', run: impersonate(access, 'tenants') },
    {
      name: 'administrators pass through',
      run: (ctx) => (ctx.identity!.tenant === null || passthrough ? passThrough(ctx, pool, upstream, metrics) : false),
    },
    { name: 'classify', run: classify(discovery) },
    { name: 'admit', run: admit },
    // After admit: hidden and shared kinds are answered before any question reaches the upstream.
    { name: 'authorize reads at the cluster scope', run: authorizeClusterScopeReads(access) },
    // After admission: an upgrade is converted and checked exactly as the same request without Upgrade would be.
    { name: 'upgrade exec, attach, port-forward and proxy', run: (ctx) => upgradeTenantRequest(ctx, upstream) },
    { name: 'convert and forward', run: (ctx) => (forwardTenantRequest(ctx, forwardDeps), true) },
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
          (error: unknown) => sendStatus(ctx.res, error),
        );
        return;
      }
    }
    sendStatus(ctx.res, notFound());
  } catch (error) {
    sendStatus(ctx.res, error);
  }
}

export function handleRequest(
  stages: Stage[],
  req: Http2ServerRequest | IncomingMessage,
  res: Http2ServerResponse | ServerResponse,
  observer?: RequestObserver,
): void {
  const ctx = newRequestContext(req, res);
  // Metrics and the request log line, once the response ends.
  observer?.begin(ctx);
  runStages(stages, ctx, 0);
}

/**
 * An HTTP/1.1 request that carries `Upgrade` (the server hands it over as a socket): it gets a response object over
 * that socket and passes every stage like any other request. Only exec, attach, port-forward and proxy are upgraded
 * (the stage "upgrade"); any other request is answered plainly, converted, over the same socket.
 */
export function handleUpgrade(stages: Stage[], req: IncomingMessage, socket: Duplex, head: Buffer, observer?: RequestObserver): void {
  socket.on('error', () => socket.destroy());
  const res = new ServerResponse(req);
  res.assignSocket(socket as Socket);
  // One request per upgraded connection: a plain answer closes it once written.
  res.shouldKeepAlive = false;
  res.once('finish', () => socket.end());
  const ctx = newRequestContext(req, res, { socket, head });
  observer?.begin(ctx);
  runStages(stages, ctx, 0);
}

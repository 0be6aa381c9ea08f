// The stage "serve from the watch cache", and flow control's test for a watch start the cache makes cheap.
// A request served here never reaches the upstream, so nothing upstream authorizes it: the tenant's own RBAC is asked
// first (a SubjectAccessReview, cached briefly), and the same 403 as the apiserver's is answered when it refuses.
import { performance } from 'node:perf_hooks';
import { readForbidden, type AccessReviews } from '../auth/access-review.ts';
import { upstreamIdentityOf } from '../auth/impersonation.ts';
import { isBuiltinGroup } from '../convert/kinds.ts';
import { namespaceToUpstream } from '../convert/rules/index.ts';
import { isConverted, type ConvertedRequest, type RequestContext } from '../request/context.ts';
import type { Stage } from '../request/stage.ts';
import { selects } from './selection.ts';
import { protobufListParts, writeList, writeParts } from './cached-list.ts';
import { PROTOBUF_CONTENT_TYPE, PROTOBUF_WATCH_CONTENT_TYPE } from './encodings.ts';
import { log } from '../log.ts';
import type { CachePlan, InitialState, WatchCache } from './watch-cache.ts';
import type { CachedObject } from './cached-object.ts';
import { TENANT_LABEL, type TenantId } from '../convert/prefix.ts';
import { releaseStartSeat } from '../flowcontrol/stage.ts';

/** How long a request for a resourceVersion the cache has not seen yet waits for it before going upstream. */
const FRESHNESS_WAIT_MS = 3_000;

const RESPONSE_HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-cache, private' } as const;
const PROTOBUF_LIST_HEADERS = { 'content-type': PROTOBUF_CONTENT_TYPE, 'cache-control': 'no-cache, private' } as const;
const PROTOBUF_WATCH_HEADERS = { 'content-type': PROTOBUF_WATCH_CONTENT_TYPE, 'cache-control': 'no-cache, private' } as const;

export function watchCacheStage(watchCache: WatchCache, access: AccessReviews): Stage['run'] {
  return (ctx) => {
    // (GET only: a HEAD list has no body to stream.)
    if (!isConverted(ctx) || ctx.upgrade !== null || ctx.method !== 'GET') return false;
    const info = ctx.info;
    const plan = watchCache.planOf(info, ctx.row, ctx.identity.tenant, ctx.query, ctx.headers.accept);
    if (plan === null) return false;
    // Reads across namespaces and of cluster-scoped kinds were authorized by the stage before (the tenant's
    // ClusterRoleBindings); a read in one namespace is asked about here, as impersonation would have had it asked.
    if (ctx.asTenantgate) return serve(ctx, plan, watchCache);
    const identity = ctx.identity;
    const tenant = identity.tenant;
    const decide = (allowed: boolean) => {
      if (!allowed) throw readForbidden(identity.user, info.verb, info.apiGroup, info.resource, info.name, info.namespace);
      return serve(ctx, plan, watchCache);
    };
    // (info.name: what a metadata.name field selector names, as the apiserver's RequestInfo has it.)
    const allowed = access.allowedInNamespace(
      tenant,
      upstreamIdentityOf(identity),
      info.verb,
      plan.cache.id.group,
      info.resource,
      namespaceToUpstream(info.namespace, tenant),
      info.name,
    );
    return typeof allowed === 'boolean' ? decide(allowed) : allowed.then(decide);
  };
}

function serve(ctx: ConvertedRequest, plan: CachePlan, watchCache: WatchCache): boolean | Promise<boolean> {
  const cache = plan.cache;
  // A resourceVersion the cache has not reached: the state it asks for must include it (lists, initial events).
  const needs = plan.resourceVersion === '' ? 0 : Number(plan.resourceVersion);
  const needsState = !plan.watch || plan.sendInitialEvents === true;
  if (needsState && needs > cache.resourceVersion) {
    return cache.waitUntilFresh(needs, FRESHNESS_WAIT_MS).then((fresh) => fresh && serve(ctx, plan, watchCache));
  }
  const tenant = ctx.identity.tenant;
  if (plan.consistentInitialState) {
    const objects: CachedObject[] = [];
    const namespace = plan.selection.namespace === null ? null : namespaceToUpstream(plan.selection.namespace, tenant);
    // A built-in cluster-scoped kind (namespaces) is narrowed by the tenant label tenantgate forces on it; a tenant's
    // custom resource is its tenant's whole; one namespace is its tenant's whole. The per-object check stays.
    const narrowed =
      namespace === null && plan.cache.id.row.rule !== 'custom-resource' ? `labelSelector=${encodeURIComponent(`${TENANT_LABEL}=${tenant}`)}` : '';
    // (Should the upstream not answer, the request goes its way upstream, where it gets the upstream's answer.)
    return cache
      .listConsistently(cache.collectionPath(namespace), (object) => object.tenant === tenant && objects.push(object), narrowed)
      .then(
        (resourceVersion) => startWatch(ctx, plan, watchCache, tenant, { objects, resourceVersion }),
        () => false,
      );
  }
  if (plan.watch) return startWatch(ctx, plan, watchCache, tenant, null);
  const page =
    plan.continueToken !== ''
      ? watchCache.snapshots.nextPage(tenant, cache, plan.continueToken, plan.limit, plan.selection.key)
      : watchCache.snapshots.firstPage(
          tenant,
          cache,
          cache.objectsOf(tenant, plan.selection.namespace).filter((object) => selects(plan.selection, object)),
          cache.resourceVersion,
          plan.selection.everything,
          plan.limit,
          plan.selection.key,
        );
  if (plan.encoding === 'protobuf') {
    let parts: Buffer[];
    try {
      parts = protobufListParts(cache.kind, cache.tenantApiVersion, page);
    } catch (error) {
      // An object the protobuf encoder cannot write: the list goes upstream, which answers it in protobuf itself.
      log.warn('the watch cache could not encode a list in protobuf: it goes upstream', { resource: cache.kind, error: (error as Error).message });
      return false;
    }
    ctx.respond(200, { ...PROTOBUF_LIST_HEADERS });
    return writeParts(ctx.out, parts).then(() => true);
  }
  ctx.respond(200, { ...RESPONSE_HEADERS });
  return writeList(ctx.out, cache.kind, cache.tenantApiVersion, page).then(() => true);
}

function startWatch(ctx: RequestContext, plan: CachePlan, watchCache: WatchCache, tenant: TenantId, initialState: InitialState | null): boolean {
  ctx.respond(200, plan.encoding === 'protobuf' ? { ...PROTOBUF_WATCH_HEADERS } : { ...RESPONSE_HEADERS });
  // A watch that took a seat to start (it cost the upstream a list, or was not known cheap) gives it back now.
  releaseStartSeat(ctx);
  const watcher = watchCache.watch(plan, tenant, ctx.out, performance.now(), initialState);
  if (watcher !== null) {
    ctx.cacheWatcher = watcher;
    ctx.rewrite = watcher;
    ctx.releaseRequest();
    // The client may have gone while the watch started: the exchange's close has passed then.
    if (ctx.out.destroyed) watcher.closed();
  }
  return true;
}

/**
 * Whether a tenant's request is a watch the cache will serve: flow control then counts it against the tenant's open
 * watches only, not its seats (it costs the upstream nothing, and a controller starts hundreds at once).
 */
export function startsCheaply(watchCache: WatchCache): (ctx: RequestContext) => boolean {
  return (ctx) => {
    // (Classified before flow control: a request the stage "classify" refused never gets here.)
    if (!isConverted(ctx) || ctx.method !== 'GET' || ctx.upgrade !== null) return false;
    const info = ctx.info;
    if (info.verb !== 'watch' || !isBuiltinGroup(info.apiGroup)) return false;
    const plan = watchCache.planOf(info, ctx.row, ctx.identity.tenant, ctx.query, ctx.headers.accept);
    // A start that costs the upstream a list, or waits for the cache, takes a seat like any other start.
    return plan !== null && !plan.consistentInitialState && !(plan.sendInitialEvents === true && Number(plan.resourceVersion) > plan.cache.resourceVersion);
  };
}

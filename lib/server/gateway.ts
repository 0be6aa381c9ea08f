// Assembles a running tenantgate: the TLS listener (HTTP/2, HTTP/1.1 allowed), the pipeline, the upstream pool, the
// tenant store and the lifecycle controller that keeps tenants' upstream objects.
// Limits on streams, headers and resets are set here, at the edge, before any request reaches a stage.
import http2, { type Http2SecureServer, type IncomingHttpHeaders, type ServerHttp2Stream } from 'node:http2';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import type { ServeConfig } from '../config.ts';
import { DiscoveryCache } from '../upstream/discovery.ts';
import { UpstreamPool } from '../upstream/pool.ts';
import { HealthChecks } from '../request/health.ts';
import { closeWithinBound, Connections, drainGracefully, type ShutdownTimes } from './shutdown.ts';
import { limitStreamResets } from './rapid-reset.ts';
import { buildPipeline, RequestRunner, type TenantBirths } from '../request/pipeline.ts';
import { isBorn } from '../tenants/conditions.ts';
import { writeRawStatus } from '../request/status.ts';
import { badRequest, headersTooLarge } from '../errors/status-error.ts';
import {
  closeOffload,
  LIST_OFFLOAD_MEASURED_BYTES,
  offloadQueueSize,
  PROTOBUF_LIST_OFFLOAD_MEASURED_BYTES,
  setListOffloadThreshold,
} from '../request/offload.ts';
import { startMetricsListener, type MetricsListener } from '../metrics/listener.ts';
import { TenantgateMetrics } from '../metrics/metrics.ts';
import { RequestObserver } from '../request/request-end.ts';
import { ServiceAccountTokens, upstreamTokenReviewer } from '../auth/service-account-tokens.ts';
import { RsaKeyPool } from '../auth/key-pool.ts';
import { issueTenantKubeconfig } from '../tenants/credentials.ts';
import { CsrSigner } from '../tenants/csr-signer.ts';
import { inClusterAddress } from '../tenants/cluster-service.ts';
import { inClusterAccessObjects } from '../tenants/in-cluster-access.ts';
import { TenantClasses } from '../tenants/tenant-classes.ts';
import { TenantQuotas } from '../tenants/tenant-quota.ts';
import { TenantLifecycle } from '../tenants/lifecycle.ts';
import { ensureTenantSigners, syncTenantCustomResources, type CustomResourceDefinition } from '../tenants/bootstrap.ts';
import type { TenantId } from '../convert/prefix.ts';
import { ObjectKeeper, type KeptObject } from '../tenants/kept-objects.ts';
import { TENANT_CONFINEMENT_OBJECTS } from '../tenants/confinement-policy.ts';
import { TENANT_PRIORITY_OBJECTS } from '../tenants/priority-policy.ts';
import { TENANT_CLASSES_OBJECTS } from '../tenants/class-policy.ts';
import { STORED_KIND_CRDS, storedKindsEstablished } from '../tenants/stored-kinds.ts';
import { migrateTenantsClusterBindings } from '../tenants/cluster-bindings.ts';
import { log } from '../log.ts';
import { confinedDiscoveryBinding, ownUpstreamUsers } from '../tenants/discovery-confinement.ts';
import { createTenantStore, DEFAULT_TENANT_STORE_OPTIONS } from '../tenants/store.ts';
import type { TenantStore } from '../tenants/tenant.ts';
import type { IssueKubeconfig } from '../request/tenant-api.ts';
import { FlowController } from '../flowcontrol/dispatcher.ts';
import { AccessReviews, tenantRbacReviewer, tenantRbacRules, upstreamAccessReviewer } from '../auth/access-review.ts';
import type { FlowControlEvents } from '../flowcontrol/events.ts';
import { DEFAULT_FLOW_CONTROL } from '../flowcontrol/limits.ts';
import { TenantConversions } from '../request/tenant-conversions.ts';
import { cachedResourcesOf, DEFAULT_CACHED_RESOURCES, WatchCache } from '../watchcache/watch-cache.ts';

export interface Gateway {
  server: Http2SecureServer;
  pool: UpstreamPool;
  host: string;
  port: number;
  url: string;
  tenants: TenantStore;
  /** Service-account tokens seen (its counters show what reached the upstream). */
  tokens: ServiceAccountTokens;
  /** The Prometheus metrics (null when the config asks for none), and where they are served (null: nowhere). */
  metrics: TenantgateMetrics | null;
  metricsUrl: string | null;
  /** The shared watch cache; null when off. */
  watchCache: WatchCache | null;
  /** Closes at once: connections cut, watches with them. */
  close(): Promise<void>;
  /** Graceful (lib/server/shutdown.ts): not ready, then after `delayMs` a drain of at most `drainMs`; then close(), briefly waited for. */
  shutdown(times: ShutdownTimes): Promise<void>;
}

/** Marks a socket already answered for a client error: node reports one per chunk it cannot parse. */
const ANSWERED = Symbol('tenantgate.clientError.answered');

/** The keeper of the in-cluster access policy, or null (with a warning) when the address is none a pod can reach. */
function inClusterAccessKeeper(pool: UpstreamPool, address: { host: string; port: number }, caPem: string): ObjectKeeper | null {
  if (address.host === '0.0.0.0' || address.host === '::') {
    log.warn("tenants' pods keep talking to the upstream: tenantgate listens on every address, so set --in-cluster-address to the one they reach it at");
    return null;
  }
  return new ObjectKeeper(pool, inClusterAccessObjects({ address, caPem }));
}

function onClientError(error: NodeJS.ErrnoException, socket: Duplex & { [ANSWERED]?: true }): void {
  // Malformed HTTP/1.1 (oversized or broken headers): answer with a Status where the socket still takes it.
  // The client may still be sending: closing with unread input resets the connection (TCP RST) and the client
  // would never see the Status. So answer, discard what still comes, and close once the client is done or 1 s on.
  if (socket[ANSWERED]) return;
  socket[ANSWERED] = true;
  writeRawStatus(socket, error.code === 'HPE_HEADER_OVERFLOW' ? headersTooLarge() : badRequest('malformed HTTP request'), false);
  socket.resume();
  socket.once('end', () => socket.end());
  setTimeout(() => socket.destroy(), 1000).unref();
}

export interface GatewayParts {
  /** A store the caller started and will close; without one the gateway makes the configured store. */
  tenants?: TenantStore;
  /** Run the tenant lifecycle controller (bootstrap, reconcile, deletion). Default true. */
  lifecycle?: boolean;
  /** Who hears of flow control's admissions and rejections (metrics); default: nobody. */
  flowEvents?: FlowControlEvents;
  /** Keep the tenant confinement policy upstream (with the lifecycle). Default true; false only to measure its cost. */
  confinementPolicy?: boolean;
}

export async function startGateway(config: ServeConfig, parts: GatewayParts = {}): Promise<Gateway> {
  // (A setting of the process: the worker pool is shared by every gateway in it.)
  setListOffloadThreshold(
    config.listOffloadThresholdBytes ?? LIST_OFFLOAD_MEASURED_BYTES,
    config.protobufListOffloadThresholdBytes ?? PROTOBUF_LIST_OFFLOAD_MEASURED_BYTES,
  );
  const pool = new UpstreamPool(config.upstream);
  const tenants = parts.tenants ?? createTenantStore(config.tenantStore ?? DEFAULT_TENANT_STORE_OPTIONS);
  // Loaded before it listens: no request is judged against an empty index.
  if (parts.tenants === undefined) await tenants.start();
  const discovery = new DiscoveryCache(pool);
  const metrics =
    config.metrics === undefined ? null : new TenantgateMetrics({ tenantSeries: config.metrics.tenantSeries, tenants, workerPoolQueue: offloadQueueSize });
  const recordOperation = metrics?.recordTenantOperation;
  const runLifecycle = parts.lifecycle !== false;
  // The second wall's upstream objects, kept with the tenants' ones: before the first tenant request is served.
  const kept: KeptObject[] = parts.confinementPolicy === false ? [] : [...TENANT_CONFINEMENT_OBJECTS, ...TENANT_PRIORITY_OBJECTS, ...TENANT_CLASSES_OBJECTS];
  if (runLifecycle && config.confineUpstreamDiscovery === true) kept.push(confinedDiscoveryBinding(await ownUpstreamUsers(pool)));
  // Where tenants' FlowSchemas and priority levels are kept: served before the first tenant request.
  kept.push(...STORED_KIND_CRDS);
  const keeper = runLifecycle ? new ObjectKeeper(pool, kept) : null;
  await keeper?.start();
  if (keeper !== null && !(await storedKindsEstablished(pool)))
    log.warn("the CRDs of tenants' stored kinds (FlowSchemas, priority levels, ClusterRoleBindings) are not established yet");
  // An older tenantgate's real ClusterRoleBindings of tenants, stored before any tenant request is judged by them.
  if (keeper !== null) {
    const moved = await migrateTenantsClusterBindings(pool).catch((error: Error) => {
      log.warn('tenant clusterrolebindings not moved to the stored form yet (the lifecycle tries again)', { error: error.message });
      return 0;
    });
    if (moved > 0) log.info('tenant clusterrolebindings moved to the stored form', { count: moved });
  }
  // Keys made ahead of need keep tenant creation in milliseconds (RSA-2048 generation is ~50 ms).
  const keyPool = config.tenantCa === undefined ? null : new RsaKeyPool();
  let url = '';
  // What tenants verify tenantgate's serving certificate with: the CA given for in-cluster clients
  // (--in-cluster-ca-file; a chart-made serving certificate has a CA of its own), else the tenant CA that signed it.
  const servingCaPem = config.inCluster != null && config.inCluster.caPem !== config.tls.certPem ? config.inCluster.caPem : undefined;
  const issueKubeconfig: IssueKubeconfig | null =
    config.tenantCa === undefined
      ? null
      : (tenant, serverUrl) =>
          issueTenantKubeconfig(config.tenantCa!, serverUrl ?? url, tenant, { keyPool: keyPool!, validityDays: config.tenantCertificateDays, servingCaPem });
  const tokens = new ServiceAccountTokens(upstreamTokenReviewer(pool), (id) => tenants.get(id)?.metadata.uid);
  const flow = new FlowController(config.flowControl ?? DEFAULT_FLOW_CONTROL, (id) => tenants.get(id), parts.flowEvents ?? metrics?.flowControlEvents);
  const stopFollowingTenants = flow.follow(tenants);
  const webhookUrlHosts = new Set(config.tenantWebhookUrlHosts ?? []);
  // The admin's rights on a new cluster-scoped custom resource, written through before its CRD's create is answered
  // (the lifecycle's reconcile keeps them too, but later); never for a tenant being deleted.
  const customResourceDefinitionWritten = runLifecycle
    ? async (id: TenantId, crd: unknown) => {
        const tenant = tenants.get(id);
        if (tenant !== undefined && tenant.metadata.deletionTimestamp === undefined) await syncTenantCustomResources(pool, id, crd as CustomResourceDefinition);
      }
    : undefined;
  // The admin's rights on the tenant's signers, made with its first certificate signing request; likewise.
  const certificateSigningRequestWritten = runLifecycle
    ? async (id: TenantId) => {
        const tenant = tenants.get(id);
        if (tenant !== undefined && tenant.metadata.deletionTimestamp === undefined) await ensureTenantSigners(pool, id);
      }
    : undefined;
  // Tenants' spec.quota over all their namespaces: shares kept upstream, capacity moved to where a write was refused.
  const tenantQuotas = runLifecycle ? new TenantQuotas({ store: tenants, pool }) : null;
  const tenantQuotaRefused =
    tenantQuotas === null ? undefined : (id: TenantId, namespace: string, requested: Map<string, bigint>) => tenantQuotas.demand(id, namespace, requested);
  // The platform classes each tenant may use: its views of them, its pods' classes, and the annotations the upstream's policy reads.
  const tenantClasses = runLifecycle ? new TenantClasses({ store: tenants, pool }) : null;
  const tenantNamespaceCreated =
    tenantQuotas === null || tenantClasses === null
      ? undefined
      : async (id: TenantId, namespace: string) => {
          await Promise.all([tenantQuotas.namespaceCreated(id, namespace), tenantClasses.namespaceCreated(id, namespace)]);
        };
  const access = new AccessReviews(upstreamAccessReviewer(pool), tenantRbacReviewer(pool), {}, tenantRbacRules(pool));
  const conversions = new TenantConversions({
    pool,
    discovery,
    access,
    metrics,
    webhookUrlHosts,
    customResourceDefinitionWritten,
    certificateSigningRequestWritten,
    tenantQuotaRefused,
    tenantNamespaceCreated,
    platformClasses: tenantClasses ?? undefined,
  });
  // On unless switched off; never with --passthrough (nothing is converted, nothing to keep in tenants' views).
  const cachedResources = config.watchCache === undefined ? cachedResourcesOf(DEFAULT_CACHED_RESOURCES) : (config.watchCache?.resources ?? null);
  const watchCache =
    cachedResources === null || cachedResources.length === 0 || config.passthrough
      ? null
      : new WatchCache(cachedResources, pool, (tenant) => conversions.of(tenant), {
          bookmarkIntervalMs: config.watchCache?.bookmarkIntervalMs,
          upstreamIdleMs: config.watchCache?.upstreamIdleMs,
          observe: metrics === null ? undefined : (tenant, watcher) => metrics.rewriteStarted(tenant, 'watch', watcher),
        });
  watchCache?.start();
  if (watchCache !== null) metrics?.observeWatchCache(watchCache);
  const health = new HealthChecks(pool);
  // The lifecycle starts once tenantgate listens (Service default/kubernetes needs its port): a birth asked before waits for it.
  let lifecycle: TenantLifecycle | null = null;
  let lifecycleStarted!: (started: TenantLifecycle) => void;
  const started = new Promise<TenantLifecycle>((resolve) => (lifecycleStarted = resolve));
  const births: TenantBirths | undefined = runLifecycle
    ? {
        whenBorn: (id) => {
          if (lifecycle !== null) return lifecycle.whenBorn(id);
          const tenant = tenants.get(id);
          if (tenant === undefined || isBorn(tenant)) return null;
          return started.then((running) => running.whenBorn(id) ?? undefined);
        },
      }
    : undefined;
  const stages = buildPipeline({
    births,
    pool,
    health,
    discovery,
    passthrough: config.passthrough,
    tenants,
    tokens,
    issueKubeconfig,
    flow,
    upstream: config.upstream,
    access,
    metrics,
    recordOperation,
    webhookUrlHosts,
    customResourceDefinitionWritten,
    conversions,
    watchCache,
  });
  const requestLogLevel = config.requestLogLevel ?? 'off';
  const observer = metrics === null && requestLogLevel === 'off' ? undefined : new RequestObserver(metrics, requestLogLevel);
  const server = http2.createSecureServer({
    cert: config.tls.certPem,
    key: config.tls.keyPem,
    ca: config.clientCaPem,
    requestCert: true,
    rejectUnauthorized: false, // unauthenticated callers still reach /healthz; other paths answer 401
    allowHTTP1: true,
    maxHeaderSize: config.http2.maxHeaderListBytes,
    settings: {
      maxConcurrentStreams: config.http2.maxConcurrentStreams,
      maxHeaderListSize: config.http2.maxHeaderListBytes,
    },
    // Rapid reset (CVE-2023-44487): nghttp2's own limit, and limitStreamResets() below for cancelled requests.
    streamResetBurst: 1000,
    streamResetRate: 100,
    maxSessionRejectedStreams: 100,
    maxSessionInvalidFrames: 1000,
  } as http2.SecureServerOptions);
  const runner = new RequestRunner(stages, observer);
  // HTTP/1.1 requests arrive as 'request' (and 'upgrade'). Listening to 'request' makes node serve HTTP/2 streams
  // through its compatibility objects too; tenantgate serves them from the raw 'stream' event instead, so the
  // compatibility listener node added is taken off (and checked to be the only other one).
  server.on('request', (req: IncomingMessage, res: ServerResponse) => runner.request(req, res));
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => runner.upgrade(req, socket, head));
  server.removeAllListeners('stream');
  server.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders, _flags: number, rawHeaders: string[]) =>
    runner.stream(stream, headers, rawHeaders),
  );
  if (server.listenerCount('stream') !== 1 || server.listenerCount('request') !== 1)
    throw new Error('tenantgate: HTTP/2 streams must be served by one listener');
  server.on('clientError', onClientError);
  server.on('sessionError', () => {}); // the session is torn down by node; nothing else to do
  server.on('session', (session) => {
    session.on('error', () => {});
    limitStreamResets(session);
  });
  // Watches would hold close() open forever: connections are followed so that a shutdown drains them and close() cuts them.
  const connections = new Connections(server);
  server.on('secureConnection', (socket: TLSSocket) => {
    // Responses go out as several writes (headers, then body chunks); with Nagle's algorithm a small second write
    // waits for the client's delayed ACK (~40 ms over HTTP/1.1).
    socket.setNoDelay(true);
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // Its own listener: scrapers need no client certificate, and tenants' connections never reach it.
  const metricsListener: MetricsListener | null =
    metrics === null || config.metrics?.listen == null ? null : await startMetricsListener(metrics, config.metrics.listen.host, config.metrics.listen.port);
  const { port } = server.address() as AddressInfo;
  // Started once it listens: each tenant's Service default/kubernetes points at the port it listens on.
  const clusterAddress = inClusterAddress({ host: config.host, port }, config.inCluster?.address);
  lifecycle = runLifecycle
    ? new TenantLifecycle({ store: tenants, pool, discovery, recordOperation, clusterAddress, namespaceCreated: tenantNamespaceCreated })
    : null;
  await lifecycle?.start();
  if (lifecycle !== null) lifecycleStarted(lifecycle);
  tenantQuotas?.start();
  tenantClasses?.start();
  // Tenants' pods pointed at that address too (not with --passthrough: its tenants' requests are the upstream's).
  const podAccess =
    runLifecycle && !config.passthrough && config.inCluster !== null
      ? inClusterAccessKeeper(pool, clusterAddress, config.inCluster?.caPem ?? config.tls.certPem)
      : null;
  await podAccess?.start();
  // Tenants' kube-apiserver-client CSRs, signed with the tenant CA (without its key, nobody signs them: as a cluster without a signer).
  const csrSigner =
    runLifecycle && config.tenantCa !== undefined ? new CsrSigner({ pool, ca: config.tenantCa, tenants, maxValidityDays: config.tenantCertificateDays }) : null;
  await csrSigner?.start();
  const hostInUrl = config.host.includes(':') ? `[${config.host}]` : config.host;
  url = `https://${hostInUrl}:${port}`;
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      watchCache?.stop();
      await metricsListener?.close();
      metrics?.close();
      csrSigner?.stop();
      await lifecycle?.stop();
      await tenantQuotas?.stop();
      await tenantClasses?.stop();
      await keeper?.stop();
      await podAccess?.stop();
      stopFollowingTenants();
      keyPool?.close();
      if (parts.tenants === undefined) await tenants.close();
      await new Promise<void>((resolve) => {
        pool.close();
        server.close(() => void closeOffload().then(resolve));
        connections.destroyAll();
      });
    })());
  return {
    server,
    pool,
    host: config.host,
    port,
    url,
    tenants,
    tokens,
    metrics,
    metricsUrl: metricsListener?.url ?? null,
    watchCache,
    close,
    shutdown: async (times) => {
      await drainGracefully({ server, connections, health, open: runner.open, flow }, times);
      await closeWithinBound(close());
    },
  };
}

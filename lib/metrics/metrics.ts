// tenantgate's Prometheus registry (DESIGN §7): every metric with its labels and buckets, and the cheap calls the
// request path makes to update them. Never gives tenants more label values than the bound; never throws at a caller.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { TenantId } from '../convert/prefix.ts';
import type { FlowControlEvents, RejectionReason, SeatKind } from '../flowcontrol/events.ts';
import { conditionOf } from '../tenants/conditions.ts';
import type { TenantEvent, TenantStore } from '../tenants/tenant.ts';
import { OTHER_TENANTS, TenantSeriesBound } from './tenant-series-bound.ts';

/** Buckets that fit apiserver latencies: 5 ms to 60 s (the apiserver's request timeout). */
export const REQUEST_DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Time in the list and watch rewriter per response: 100 µs to 10 s. */
export const REWRITE_DURATION_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
export const DEFAULT_TENANT_SERIES = 100;
/** How often the event-loop delay metrics sample the loop. */
const EVENT_LOOP_SAMPLE_MS = 100;

/** The tenant label of requests by tenantgate's administrators, and of requests no identity was proven for. */
export const ADMIN_LABEL = '_admin';
export const ANONYMOUS_LABEL = '_anonymous';

export type RewriteKind = 'list' | 'watch';
export type TenantOperation = 'create' | 'delete' | 'bootstrap' | 'cleanup';
/** Counts one Tenant API write or lifecycle step (the Tenant API and the lifecycle controller call it). */
export type RecordTenantOperation = (operation: TenantOperation, ok: boolean) => void;

/** What a list or watch rewriter has done so far (read at scrape time and when the response ends). */
export interface RewriteCounters {
  /** Upstream bytes the rewriter has taken in. */
  readonly bytesIn: number;
  /** Bytes sent to the client. */
  readonly bytesOut: number;
  /** Watch events sent to the client. */
  readonly eventsOut: number;
  /** Time spent inside the scanner (not waiting for bytes). */
  readonly scanSeconds: number;
}

/** A list or watch being rewritten; what of its counters has reached the metrics already. */
interface ObservedStream {
  tenant: TenantId;
  kind: RewriteKind;
  counters: RewriteCounters;
  reportedBytes: number;
  reportedEvents: number;
}

/** One `tenant` label value's children, bound once so the request path does not build label objects. */
interface LabelSeries {
  tenant: string;
  /** requests_total by verb, resource, code. */
  requests: Map<string, Map<string, Map<number, Counter.Internal>>>;
  durations: Map<string, Histogram.Internal<string>>;
  rejected: Map<RejectionReason, Counter.Internal>;
  rewriteBytes: Map<RewriteKind, Counter.Internal>;
  queueWait: Histogram.Internal<string> | null;
  /** Admissions without a wait not yet observed in queueWait (observed off the request's path: release or scrape). */
  admittedAtOnce: number;
  watchEvents: Counter.Internal | null;
}

/** Seats and watches a tenant holds now (gauges, summed per label value at scrape time). */
interface LiveCounts {
  readonly: number;
  mutating: number;
  watches: number;
}

/** What the shared watch cache tells the metrics, read at scrape time. */
export interface WatchCacheSource {
  readonly resources: Iterable<{
    /** `resource` or `resource.group`. */
    readonly label: string;
    readonly stats: {
      readonly objects: number;
      readonly bytes: number;
      readonly eventsIn: number;
      readonly deliveries: number;
      readonly slowWatchersClosed: number;
      readonly relists: number;
    };
    watchersPerTenant(): Iterable<readonly [TenantId, number]>;
  }>;
}

export interface MetricsOptions {
  /** Tenants keeping a label value of their own (first by name); the rest are `_other`. */
  tenantSeries?: number;
  /** The tenants' index: the bound follows it, and tenantgate_tenants is counted from it. */
  tenants?: TenantStore;
  /** Tasks waiting for a worker thread, read at scrape time. */
  workerPoolQueue?: () => number;
}

function newSeries(tenant: string): LabelSeries {
  return {
    tenant,
    requests: new Map(),
    durations: new Map(),
    rejected: new Map(),
    rewriteBytes: new Map(),
    queueWait: null,
    admittedAtOnce: 0,
    watchEvents: null,
  };
}

function tenantPhase(tenant: TenantEvent['tenant']): 'ready' | 'pending' | 'terminating' {
  if (tenant.metadata.deletionTimestamp !== undefined) return 'terminating';
  return conditionOf(tenant, 'Ready')?.status === 'True' ? 'ready' : 'pending';
}

/**
 * Counts of a tenant that moves between a series of its own and `_other` (a tenant sorting before it was created
 * or deleted) are not carried over: its own series are removed (Prometheus sees them end) and `_other` counts it
 * from then on; a tenant given its own series starts them at zero while `_other` keeps what it counted. Counters
 * thus never go down, and rate() over `_other` shows no jump. Gauges (inflight, watches) are summed per label at
 * scrape time, so they are always right.
 */
export class TenantgateMetrics {
  readonly registry = new Registry();
  readonly bound: TenantSeriesBound;
  readonly #store: TenantStore | undefined;
  readonly #stopFollowing: () => void;

  readonly #requests: Counter<'tenant' | 'verb' | 'resource' | 'code'>;
  readonly #requestDuration: Histogram<'tenant' | 'verb'>;
  readonly #inflight: Gauge<'tenant' | 'kind'>;
  readonly #rejected: Counter<'tenant' | 'reason'>;
  readonly #queueWait: Histogram<'tenant'>;
  readonly #watchesActive: Gauge<'tenant'>;
  readonly #watchEvents: Counter<'tenant'>;
  readonly #rewriteBytes: Counter<'tenant' | 'kind'>;
  readonly #rewriteDuration: Histogram<'kind'>;
  readonly #upstreamDuration: Histogram<'verb'>;
  readonly #tenantOperations: Counter<'operation' | 'result'>;

  /** Series by label value: one per tenant with its own, one `_other`, `_admin`, `_anonymous`. */
  readonly #series = new Map<string, LabelSeries>();
  readonly #live = new Map<TenantId, LiveCounts>();
  readonly #streams = new Set<ObservedStream>();
  readonly #upstreamByVerb = new Map<string, Histogram.Internal<'verb'>>();
  readonly #rewriteDurationByKind: Record<RewriteKind, Histogram.Internal<'kind'>>;

  constructor(options: MetricsOptions = {}) {
    const registers = [this.registry];
    this.bound = new TenantSeriesBound(options.tenantSeries ?? DEFAULT_TENANT_SERIES);
    this.#store = options.tenants;
    // The event-loop delay is sampled every 100 ms, not prom-client's 10: its timer woke an idle tenantgate 100 times a
    // second, about 7 of the 8 ms of CPU it spent per second at rest (issue 31). A stall of 100 ms or more still shows.
    collectDefaultMetrics({ register: this.registry, prefix: 'tenantgate_', eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
    this.#requests = new Counter({
      name: 'tenantgate_requests_total',
      help: 'Requests answered, by tenant, verb, resource and HTTP code.',
      labelNames: ['tenant', 'verb', 'resource', 'code'],
      registers,
    });
    this.#requestDuration = new Histogram({
      name: 'tenantgate_request_duration_seconds',
      help: 'Time from a request arriving to its response ending.',
      labelNames: ['tenant', 'verb'],
      buckets: REQUEST_DURATION_BUCKETS,
      registers,
    });
    this.#inflight = new Gauge({
      name: 'tenantgate_inflight_requests',
      help: 'Requests holding a flow-control seat now.',
      labelNames: ['tenant', 'kind'],
      registers,
      collect: () => this.#collectLive(),
    });
    this.#rejected = new Counter({
      name: 'tenantgate_rejected_requests_total',
      help: 'Requests refused by flow control (429), by reason: inflight-limit, queue-full, queue-timeout, watch-limit; 503 for shutting-down.',
      labelNames: ['tenant', 'reason'],
      registers,
    });
    this.#queueWait = new Histogram({
      name: 'tenantgate_queue_wait_seconds',
      help: 'Time admitted requests waited in a flow-control queue.',
      labelNames: ['tenant'],
      buckets: REQUEST_DURATION_BUCKETS,
      registers,
      collect: () => {
        for (const series of this.#series.values()) this.#observeAdmittedAtOnce(series, series.admittedAtOnce);
      },
    });
    this.#watchesActive = new Gauge({ name: 'tenantgate_watches_active', help: 'Watches being streamed to tenants now.', labelNames: ['tenant'], registers });
    this.#watchEvents = new Counter({
      name: 'tenantgate_watch_events_total',
      help: 'Watch events sent to tenants.',
      labelNames: ['tenant'],
      registers,
      collect: () => this.#harvestStreams(),
    });
    this.#rewriteBytes = new Counter({
      name: 'tenantgate_rewrite_bytes_total',
      help: 'Upstream list and watch bytes rewritten into tenant views.',
      labelNames: ['tenant', 'kind'],
      registers,
      collect: () => this.#harvestStreams(),
    });
    this.#rewriteDuration = new Histogram({
      name: 'tenantgate_rewrite_duration_seconds',
      help: 'Time spent in the list and watch rewriter per response (scanning only, not waiting for bytes).',
      labelNames: ['kind'],
      buckets: REWRITE_DURATION_BUCKETS,
      registers,
    });
    this.#upstreamDuration = new Histogram({
      name: 'tenantgate_upstream_request_duration_seconds',
      help: 'Time from sending a request upstream to its response headers.',
      labelNames: ['verb'],
      buckets: REQUEST_DURATION_BUCKETS,
      registers,
    });
    const store = options.tenants;
    new Gauge({
      name: 'tenantgate_tenants',
      help: 'Tenants in the store, by phase.',
      labelNames: ['phase'],
      registers,
      collect() {
        const counts = { ready: 0, pending: 0, terminating: 0 };
        for (const tenant of store?.list() ?? []) counts[tenantPhase(tenant)]++;
        for (const phase of ['ready', 'pending', 'terminating'] as const) this.set({ phase }, counts[phase]);
      },
    });
    this.#tenantOperations = new Counter({
      name: 'tenantgate_tenant_operations_total',
      help: 'Tenant API writes and lifecycle steps, by result.',
      labelNames: ['operation', 'result'],
      registers,
    });
    const workerPoolQueue = options.workerPoolQueue ?? (() => 0);
    new Gauge({
      name: 'tenantgate_worker_pool_queue',
      help: 'Conversions waiting for a worker thread.',
      registers,
      collect() {
        this.set(workerPoolQueue());
      },
    });
    this.#rewriteDurationByKind = { list: this.#rewriteDuration.labels({ kind: 'list' }), watch: this.#rewriteDuration.labels({ kind: 'watch' }) };
    // Known series are there from the start (0), so rate() and absent() behave before the first event.
    for (const operation of ['create', 'delete', 'bootstrap', 'cleanup'] as const)
      for (const result of ['ok', 'error']) this.#tenantOperations.inc({ operation, result }, 0);

    this.#followBound();
    this.#stopFollowing = store === undefined ? () => {} : store.onChange((event) => this.#onTenantChange(event));
  }

  /**
   * The watch cache's series: objects and bytes kept, events in, events delivered, slow watchers closed and relists per
   * resource, and watchers per tenant (bounded label), all read from the cache when scraped.
   */
  observeWatchCache(source: WatchCacheSource): void {
    const registers = [this.registry];
    // (Several caches may share a label: tenants' custom resources all count as `_custom`.)
    const byLabel = (read: (stats: any) => number) => {
      const sums = new Map<string, number>();
      for (const r of source.resources) sums.set(r.label, (sums.get(r.label) ?? 0) + read(r.stats));
      return sums;
    };
    const gauge = (name: string, help: string, read: (stats: any) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['resource'],
        registers,
        collect() {
          this.reset();
          for (const [resource, value] of byLabel(read)) this.set({ resource }, value);
        },
      });
    gauge('tenantgate_watch_cache_objects', 'Objects the watch cache keeps, per resource.', (s) => s.objects);
    gauge(
      'tenantgate_watch_cache_bytes',
      "Bytes of the tenants' views the watch cache keeps (JSON, and protobuf made for protobuf clients), per resource.",
      (s) => s.bytes,
    );
    // Counters kept by the cache, reported as the increase since the last scrape.
    const counter = (name: string, help: string, read: (stats: any) => number) => {
      const reported = new Map<string, number>();
      return new Counter({
        name,
        help,
        labelNames: ['resource'],
        registers,
        collect() {
          for (const [resource, now] of byLabel(read)) {
            const before = reported.get(resource) ?? 0;
            // (A custom resource's cache that went takes its counts with it: the sum may go down, the counter never.)
            // An increase of 0 still makes the series: from its first scrape, so increase() sees its first rise.
            this.inc({ resource }, Math.max(0, now - before));
            reported.set(resource, Math.max(now, before));
          }
        },
      });
    };
    counter('tenantgate_watch_cache_events_total', 'Upstream watch events the watch cache took in, per resource.', (s) => s.eventsIn);
    counter('tenantgate_watch_cache_deliveries_total', 'Watch events the watch cache delivered to tenant watchers, per resource.', (s) => s.deliveries);
    counter(
      'tenantgate_watch_cache_slow_watchers_closed_total',
      'Tenant watchers closed because their clients left too much unread.',
      (s) => s.slowWatchersClosed,
    );
    counter('tenantgate_watch_cache_relists_total', 'Relists of the upstream after its watch could not resume (watchers ended).', (s) => s.relists);
    const bound = this.bound;
    new Gauge({
      name: 'tenantgate_watch_cache_watchers',
      help: 'Tenant watches served from the watch cache now.',
      labelNames: ['tenant'],
      registers,
      collect() {
        this.reset();
        const byLabel = new Map<string, number>();
        for (const r of source.resources)
          for (const [tenant, count] of r.watchersPerTenant()) byLabel.set(bound.labelOf(tenant), (byLabel.get(bound.labelOf(tenant)) ?? 0) + count);
        for (const [tenant, count] of byLabel) this.set({ tenant }, count);
      },
    });
  }

  /** Stops following the tenant store. */
  close(): void {
    this.#stopFollowing();
  }

  /** The `tenant` label value of a caller: its tenant's (bounded), `_admin`, or `_anonymous`. */
  tenantLabel(tenant: TenantId | null, authenticated: boolean): string {
    if (!authenticated) return ANONYMOUS_LABEL;
    return tenant === null ? ADMIN_LABEL : this.bound.labelOf(tenant);
  }

  /** One request has ended (answered, failed or abandoned by its client). */
  requestEnded(tenantLabel: string, verb: string, resource: string, code: number, seconds: number): void {
    const series = this.#seriesOf(tenantLabel);
    let byResource = series.requests.get(verb);
    if (byResource === undefined) series.requests.set(verb, (byResource = new Map()));
    let byCode = byResource.get(resource);
    if (byCode === undefined) byResource.set(resource, (byCode = new Map()));
    let counter = byCode.get(code);
    if (counter === undefined) byCode.set(code, (counter = this.#requests.labels({ tenant: series.tenant, verb, resource, code: String(code) })));
    counter.inc();
    let duration = series.durations.get(verb);
    if (duration === undefined) series.durations.set(verb, (duration = this.#requestDuration.labels({ tenant: series.tenant, verb })));
    duration.observe(seconds);
  }

  /** The upstream answered with headers `seconds` after the request was sent. */
  upstreamResponded(verb: string, seconds: number): void {
    let histogram = this.#upstreamByVerb.get(verb);
    if (histogram === undefined) this.#upstreamByVerb.set(verb, (histogram = this.#upstreamDuration.labels({ verb })));
    histogram.observe(seconds);
  }

  /** A list or watch response starts streaming through a rewriter; call the returned function when it ends. */
  rewriteStarted(tenant: TenantId, kind: RewriteKind, counters: RewriteCounters): () => void {
    const stream: ObservedStream = { tenant, kind, counters, reportedBytes: 0, reportedEvents: 0 };
    this.#streams.add(stream);
    if (kind === 'watch') this.#liveOf(tenant).watches++;
    return () => {
      if (!this.#streams.delete(stream)) return;
      this.#harvest(stream);
      this.#rewriteDurationByKind[kind].observe(counters.scanSeconds);
      if (kind === 'watch') this.#liveOf(tenant).watches--;
    };
  }

  readonly recordTenantOperation: RecordTenantOperation = (operation, ok) => {
    this.#tenantOperations.inc({ operation, result: ok ? 'ok' : 'error' });
  };

  /** `count` of the series' admissions without a wait, observed as waits of 0. */
  #observeAdmittedAtOnce(series: LabelSeries, count: number): void {
    if (count === 0) return;
    series.admittedAtOnce -= count;
    const histogram = (series.queueWait ??= this.#queueWait.labels({ tenant: series.tenant }));
    for (let i = 0; i < count; i++) histogram.observe(0);
  }

  /** The metrics' side of flow control (lib/flowcontrol/events.ts), for the gateway to hand to it. */
  readonly flowControlEvents: FlowControlEvents = {
    admitted: (tenant: TenantId, kind: SeatKind, queuedSeconds: number) => {
      this.#liveOf(tenant)[kind]++;
      const series = this.#seriesOf(this.bound.labelOf(tenant));
      // Nearly every admission is at once, on the request's way upstream, where a histogram's observe costs
      // 10-20 us on a CPU at rest (issue 31): its 0 is observed when a seat is released, or at the next scrape.
      if (queuedSeconds === 0) series.admittedAtOnce++;
      else (series.queueWait ??= this.#queueWait.labels({ tenant: series.tenant })).observe(queuedSeconds);
    },
    released: (tenant: TenantId, kind: SeatKind) => {
      this.#liveOf(tenant)[kind]--;
      const series = this.#seriesOf(this.bound.labelOf(tenant));
      if (series.admittedAtOnce > 0) this.#observeAdmittedAtOnce(series, 1);
    },
    rejected: (tenant: TenantId, _kind: SeatKind, reason: RejectionReason) => {
      const series = this.#seriesOf(this.bound.labelOf(tenant));
      let counter = series.rejected.get(reason);
      if (counter === undefined) series.rejected.set(reason, (counter = this.#rejected.labels({ tenant: series.tenant, reason })));
      counter.inc();
    },
  };

  /** The text a scrape answers (Prometheus text format). */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  #seriesOf(label: string): LabelSeries {
    let series = this.#series.get(label);
    if (series === undefined) this.#series.set(label, (series = newSeries(label)));
    return series;
  }

  #liveOf(tenant: TenantId): LiveCounts {
    let live = this.#live.get(tenant);
    if (live === undefined) this.#live.set(tenant, (live = { readonly: 0, mutating: 0, watches: 0 }));
    return live;
  }

  /** Moves what streams under way have counted since the last look into the counters. */
  #harvestStreams(): void {
    for (const stream of this.#streams) this.#harvest(stream);
  }

  #harvest(stream: ObservedStream): void {
    const { bytesIn, eventsOut } = stream.counters;
    const series = this.#seriesOf(this.bound.labelOf(stream.tenant));
    if (bytesIn > stream.reportedBytes) {
      let counter = series.rewriteBytes.get(stream.kind);
      if (counter === undefined) series.rewriteBytes.set(stream.kind, (counter = this.#rewriteBytes.labels({ tenant: series.tenant, kind: stream.kind })));
      counter.inc(bytesIn - stream.reportedBytes);
      stream.reportedBytes = bytesIn;
    }
    if (eventsOut > stream.reportedEvents) {
      (series.watchEvents ??= this.#watchEvents.labels({ tenant: series.tenant })).inc(eventsOut - stream.reportedEvents);
      stream.reportedEvents = eventsOut;
    }
  }

  /** Inflight seats and active watches, summed per label value (a tenant may have changed label since). */
  #collectLive(): void {
    this.#inflight.reset();
    this.#watchesActive.reset();
    for (const [tenant, live] of this.#live) {
      const label = this.bound.labelOf(tenant);
      if (live.readonly === 0 && live.mutating === 0 && live.watches === 0 && label === OTHER_TENANTS) {
        this.#live.delete(tenant);
        continue;
      }
      this.#inflight.inc({ tenant: label, kind: 'readonly' }, live.readonly);
      this.#inflight.inc({ tenant: label, kind: 'mutating' }, live.mutating);
      this.#watchesActive.inc({ tenant: label }, live.watches);
    }
  }

  #onTenantChange(event: TenantEvent): void {
    if (event.type === 'MODIFIED') return; // the bound depends on names only
    if (event.type === 'ADDED') {
      // Most creations past the bound change nothing: no sort of every tenant.
      if (!this.bound.wouldTake(event.tenant.metadata.name)) return;
      this.#harvestStreams();
      for (const id of this.bound.add(event.tenant.metadata.name)) this.#removeSeries(id);
      return;
    }
    const live = this.#live.get(event.tenant.metadata.name);
    // Its watches and seats end as their connections close; until then they are counted (under `_other`).
    if (live !== undefined && live.readonly === 0 && live.mutating === 0 && live.watches === 0) this.#live.delete(event.tenant.metadata.name);
    // A deleted tenant leaves the bound, which removes its series.
    this.#followBound();
  }

  #followBound(): void {
    if (this.#store === undefined) return;
    // Streams keep their counts under the label they had when these were made.
    this.#harvestStreams();
    const dropped = this.bound.update(this.#store.list().map((tenant) => tenant.metadata.name));
    for (const id of dropped) this.#removeSeries(id);
  }

  /** Removes every series of one tenant label value. */
  #removeSeries(label: string): void {
    const series = this.#series.get(label);
    this.#series.delete(label);
    if (series === undefined) return;
    const tenant = series.tenant;
    for (const [verb, byResource] of series.requests) {
      for (const [resource, byCode] of byResource) for (const code of byCode.keys()) this.#requests.remove({ tenant, verb, resource, code: String(code) });
    }
    for (const verb of series.durations.keys()) this.#requestDuration.remove({ tenant, verb });
    for (const reason of series.rejected.keys()) this.#rejected.remove({ tenant, reason });
    for (const kind of series.rewriteBytes.keys()) this.#rewriteBytes.remove({ tenant, kind });
    if (series.queueWait !== null) this.#queueWait.remove({ tenant });
    if (series.watchEvents !== null) this.#watchEvents.remove({ tenant });
  }
}

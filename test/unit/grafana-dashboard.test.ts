import t from 'tap';
import type { TenantId } from '../../lib/convert/prefix.ts';
import { TenantgateMetrics } from '../../lib/metrics/metrics.ts';
import { dashboardQueries, dataPanels, expandVariables, readDashboard } from '../helpers/grafana-dashboard.ts';

/** The metrics of issue 5's contract (DESIGN §7), and of the watch cache (issue 16), and their labels. */
const CONTRACT_METRICS: Record<string, { type: 'counter' | 'gauge' | 'histogram'; labels: string[] }> = {
  tenantgate_requests_total: { type: 'counter', labels: ['tenant', 'verb', 'resource', 'code'] },
  tenantgate_request_duration_seconds: { type: 'histogram', labels: ['tenant', 'verb'] },
  tenantgate_inflight_requests: { type: 'gauge', labels: ['tenant', 'kind'] },
  tenantgate_rejected_requests_total: { type: 'counter', labels: ['tenant', 'reason'] },
  tenantgate_queue_wait_seconds: { type: 'histogram', labels: ['tenant'] },
  tenantgate_watches_active: { type: 'gauge', labels: ['tenant'] },
  tenantgate_watch_events_total: { type: 'counter', labels: ['tenant'] },
  tenantgate_rewrite_bytes_total: { type: 'counter', labels: ['tenant', 'kind'] },
  tenantgate_rewrite_duration_seconds: { type: 'histogram', labels: ['kind'] },
  tenantgate_upstream_request_duration_seconds: { type: 'histogram', labels: ['verb'] },
  tenantgate_tenants: { type: 'gauge', labels: ['phase'] },
  tenantgate_tenant_operations_total: { type: 'counter', labels: ['operation', 'result'] },
  tenantgate_worker_pool_queue: { type: 'gauge', labels: [] },
  // Registered only with the watch cache on (the default); `resource` is `configmaps`, `deployments.apps`, ... or `_custom`.
  tenantgate_watch_cache_objects: { type: 'gauge', labels: ['resource'] },
  tenantgate_watch_cache_bytes: { type: 'gauge', labels: ['resource'] },
  tenantgate_watch_cache_events_total: { type: 'counter', labels: ['resource'] },
  tenantgate_watch_cache_deliveries_total: { type: 'counter', labels: ['resource'] },
  tenantgate_watch_cache_slow_watchers_closed_total: { type: 'counter', labels: ['resource'] },
  tenantgate_watch_cache_relists_total: { type: 'counter', labels: ['resource'] },
  tenantgate_watch_cache_watchers: { type: 'gauge', labels: ['tenant'] },
};

/** prom-client 15's collectDefaultMetrics() names, with tenantgate's prefix. */
const DEFAULT_NODE_METRICS = new Set(
  [
    'process_cpu_user_seconds_total',
    'process_cpu_system_seconds_total',
    'process_cpu_seconds_total',
    'process_start_time_seconds',
    'process_resident_memory_bytes',
    'process_virtual_memory_bytes',
    'process_heap_bytes',
    'process_open_fds',
    'process_max_fds',
    'nodejs_eventloop_lag_seconds',
    'nodejs_eventloop_lag_min_seconds',
    'nodejs_eventloop_lag_max_seconds',
    'nodejs_eventloop_lag_mean_seconds',
    'nodejs_eventloop_lag_stddev_seconds',
    'nodejs_eventloop_lag_p50_seconds',
    'nodejs_eventloop_lag_p90_seconds',
    'nodejs_eventloop_lag_p99_seconds',
    'nodejs_active_resources',
    'nodejs_active_resources_total',
    'nodejs_active_handles',
    'nodejs_active_handles_total',
    'nodejs_active_requests',
    'nodejs_active_requests_total',
    'nodejs_heap_size_total_bytes',
    'nodejs_heap_size_used_bytes',
    'nodejs_external_memory_bytes',
    'nodejs_heap_space_size_total_bytes',
    'nodejs_heap_space_size_used_bytes',
    'nodejs_heap_space_size_available_bytes',
    'nodejs_version_info',
    'nodejs_gc_duration_seconds',
  ].map((name) => `tenantgate_${name}`),
);

const HISTOGRAM_SERIES = /_(bucket|sum|count)$/;

/** Every `metric{matchers}` or bare `metric` in an expression, with its label matchers as written. */
function selectors(expr: string): { series: string; metric: string; matchers: string }[] {
  return [...expr.matchAll(/\b(tenantgate_[a-z0-9_]+)(\{[^}]*\})?/g)].map((m) => {
    const series = m[1]!;
    const base = series.replace(HISTOGRAM_SERIES, '');
    const metric = CONTRACT_METRICS[base]?.type === 'histogram' ? base : series;
    return { series, metric, matchers: m[2] ?? '' };
  });
}

const labelNames = (matchers: string) => [...matchers.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)/g)].map((m) => m[1]!);
const groupingLabels = (expr: string) =>
  [...expr.matchAll(/\b(?:by|without)\s*\(([^)]*)\)/g)].flatMap((m) =>
    m[1]!
      .split(',')
      .map((label) => label.trim())
      .filter(Boolean),
  );

const dashboard = readDashboard();
const queries = dashboardQueries(dashboard);

t.test('the contract is what tenantgate registers: each metric with its type, and its series with exactly its labels', async (t) => {
  const metrics = new TenantgateMetrics();
  t.teardown(() => metrics.close());
  // One cached resource that has seen a bit of everything, so every watch cache series exists.
  const stats = { objects: 3, bytes: 900, eventsIn: 5, deliveries: 10, slowWatchersClosed: 1, relists: 1 };
  metrics.observeWatchCache({ resources: [{ label: 'configmaps', stats, watchersPerTenant: () => new Map([['aaa111' as TenantId, 2]]) }] });
  metrics.requestEnded(metrics.tenantLabel('aaa111' as TenantId, true), 'get', 'configmaps', 200, 0.003);
  const registered = new Map((await metrics.registry.getMetricsAsJSON()).map((metric) => [metric.name, metric]));
  for (const [name, contract] of Object.entries(CONTRACT_METRICS)) {
    const metric = registered.get(name);
    t.equal(metric?.type, contract.type, `${name} is registered as a ${contract.type}`);
    for (const { labels } of metric?.values ?? []) {
      t.same(
        Object.keys(labels)
          .filter((label) => label !== 'le')
          .sort(),
        [...contract.labels].sort(),
        `${name} series labelled ${contract.labels.join(', ') || 'with nothing'}`,
      );
    }
  }
  for (const name of Object.keys(CONTRACT_METRICS).filter((name) => name.startsWith('tenantgate_watch_cache_')))
    t.ok((registered.get(name)?.values.length ?? 0) > 0, `${name} has a series to check`);
});

t.test('the dashboard is a Grafana dashboard of this era with a datasource and a multi-select tenant variable', async (t) => {
  t.equal(dashboard.uid, 'tenantgate');
  t.ok(dashboard.schemaVersion >= 36 && dashboard.schemaVersion <= 41, `schemaVersion ${dashboard.schemaVersion}`);
  const variables = new Map(dashboard.templating.list.map((v) => [v.name, v]));
  t.equal(variables.get('datasource')?.type, 'datasource');
  const tenant = variables.get('tenant');
  t.equal(tenant?.type, 'query');
  t.equal(tenant?.definition, 'label_values(tenantgate_requests_total, tenant)');
  t.ok(tenant?.multi && tenant.includeAll, 'several tenants at once, and All');
  const ids = dataPanels(dashboard).map((panel) => panel.id);
  t.equal(new Set(ids).size, ids.length, 'panel ids are unique');
});

t.test('panels sit side by side without overlapping, inside the 24 columns, each with a description and the datasource variable', async (t) => {
  const placed = dashboard.panels.map((panel) => ({ title: panel.title, ...panel.gridPos }));
  for (const [i, a] of placed.entries()) {
    t.ok(a.x >= 0 && a.w > 0 && a.h > 0 && a.x + a.w <= 24, `${a.title} fits the grid`);
    for (const b of placed.slice(i + 1)) {
      const overlap = a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
      t.notOk(overlap, `${a.title} and ${b.title} do not overlap`);
    }
  }
  for (const panel of dataPanels(dashboard)) {
    t.match(panel.description, /\S/, `${panel.title} has a description`);
    t.equal(panel.datasource?.uid, '${datasource}', `${panel.title} reads the chosen datasource`);
    for (const target of panel.targets ?? []) t.equal(target.datasource?.uid, '${datasource}', `${panel.title} ${target.refId} reads the chosen datasource`);
  }
});

t.test('every panel has a query, and every query has an expression', async (t) => {
  for (const panel of dataPanels(dashboard)) {
    t.ok((panel.targets ?? []).length > 0, `${panel.title} has a target`);
    for (const target of panel.targets ?? []) t.match(target.expr, /\S/, `${panel.title} ${target.refId}`);
  }
});

t.test('the dashboard shows what issue 5 asks for', async (t) => {
  const used = new Set(queries.flatMap((q) => selectors(q.expr).map((s) => s.metric)));
  for (const metric of [
    'tenantgate_requests_total',
    'tenantgate_request_duration_seconds',
    'tenantgate_inflight_requests',
    'tenantgate_rejected_requests_total',
    'tenantgate_watches_active',
    'tenantgate_watch_events_total',
    'tenantgate_rewrite_bytes_total',
    'tenantgate_upstream_request_duration_seconds',
    'tenantgate_worker_pool_queue',
    'tenantgate_process_cpu_seconds_total',
    'tenantgate_process_resident_memory_bytes',
  ])
    t.ok(used.has(metric), `a panel shows ${metric}`);
  const all = queries.map((q) => q.expr).join('\n');
  t.match(all, /code=~"5\.\."/, '5xx apart');
  t.match(all, /code="429"/, '429 apart');
  t.match(all, /histogram_quantile\(0\.5, [^\n]*tenantgate_request_duration_seconds_bucket/, 'p50 latency');
  t.match(all, /histogram_quantile\(0\.99, [^\n]*tenantgate_request_duration_seconds_bucket/, 'p99 latency');
});

t.test('the dashboard shows the watch cache of issue 16', async (t) => {
  const panelsOf = (metric: string) => new Set(queries.filter((q) => selectors(q.expr).some((s) => s.metric === metric)).map((q) => q.panel));
  for (const metric of Object.keys(CONTRACT_METRICS).filter((name) => name.startsWith('tenantgate_watch_cache_')))
    t.ok(panelsOf(metric).size > 0, `a panel shows ${metric}`);
  const fanOut = [...panelsOf('tenantgate_watch_cache_events_total')].filter((panel) => panelsOf('tenantgate_watch_cache_deliveries_total').has(panel));
  t.ok(fanOut.length > 0, 'events in and events delivered side by side on one panel (the fan-out)');
  for (const metric of ['tenantgate_watch_cache_events_total', 'tenantgate_watch_cache_deliveries_total']) {
    for (const { expr } of queries.filter((q) => q.expr.includes(metric)))
      t.match(expr, /sum by \(resource\) \(rate\([^\n]*\[\$__rate_interval\]\)\)/, `${metric} per second, per resource`);
  }
  // Rare events: how many over the time range on screen, per resource.
  for (const metric of ['tenantgate_watch_cache_slow_watchers_closed_total', 'tenantgate_watch_cache_relists_total']) {
    for (const { expr } of queries.filter((q) => q.expr.includes(metric)))
      t.match(expr, /sum by \(resource\) \(increase\([^\n]*\[\$__range\]\)\)/, `${metric} increase over the range, per resource`);
  }
  for (const { expr } of queries.filter((q) => q.expr.includes('tenantgate_watch_cache_watchers')))
    t.match(expr, /sum by \(tenant\)/, 'cached watchers by tenant');
});

t.test("every metric is the contract's or a default Node metric, with labels it has", async (t) => {
  for (const { panel, refId, expr } of queries) {
    const found = selectors(expr);
    t.ok(found.length > 0, `${panel} ${refId} reads a tenantgate metric`);
    for (const { series, metric, matchers } of found) {
      const contract = CONTRACT_METRICS[metric];
      t.ok(contract !== undefined || DEFAULT_NODE_METRICS.has(metric), `${panel} ${refId}: ${series} is a known metric`);
      if (contract === undefined) continue;
      if (contract.type === 'histogram') t.not(series, metric, `${panel} ${refId}: histogram ${metric} is read through its _bucket, _sum or _count series`);
      const allowed = new Set([...contract.labels, ...(series.endsWith('_bucket') ? ['le'] : [])]);
      for (const label of labelNames(matchers)) t.ok(allowed.has(label), `${panel} ${refId}: ${metric} has label ${label}`);
    }
    const available = new Set(['le', 'instance', 'job', ...found.flatMap((s) => CONTRACT_METRICS[s.metric]?.labels ?? [])]);
    for (const label of groupingLabels(expr)) t.ok(available.has(label), `${panel} ${refId}: grouping by ${label}, a label of its metrics`);
  }
});

t.test('every per-tenant metric is filtered by the tenant variable', async (t) => {
  for (const { panel, refId, expr } of queries) {
    for (const { metric, matchers } of selectors(expr)) {
      if (!CONTRACT_METRICS[metric]?.labels.includes('tenant')) continue;
      t.match(matchers, /tenant=~"\$tenant"/, `${panel} ${refId}: ${metric} filtered by $tenant`);
    }
  }
});

t.test('variables are filled in the way Grafana fills them', async (t) => {
  t.equal(
    expandVariables('sum(rate(tenantgate_requests_total{tenant=~"$tenant"}[$__rate_interval]))', {
      tenants: ['aaa111', 'bbb222'],
      rateInterval: '30s',
      range: '1h',
    }),
    'sum(rate(tenantgate_requests_total{tenant=~"(aaa111|bbb222)"}[30s]))',
  );
  t.equal(
    expandVariables('sum by (resource) (increase(tenantgate_watch_cache_relists_total[$__range]))', { tenants: ['aaa111'], rateInterval: '30s', range: '1h' }),
    'sum by (resource) (increase(tenantgate_watch_cache_relists_total[1h]))',
  );
  for (const { expr } of queries) t.notMatch(expandVariables(expr, { tenants: ['aaa111'], rateInterval: '30s', range: '1h' }), /\$/, 'no variable left');
});

// Metrics and request logs of a running tenantgate after known traffic from two tenants (issue 5).
import type { ClientHttp2Session } from 'node:http2';
import t from 'tap';
import { connectH2, credentialsOf, h2Request } from '../helpers/http.ts';
import { parsePrometheusText, sampleSum, type Sample } from '../helpers/prometheus-text.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';

let stack: Stack;
let alpha: TestTenant;
let bravo: TestTenant;
let alphaSession: ClientHttp2Session;
let bravoSession: ClientHttp2Session;

const CONFIGMAPS = '/api/v1/namespaces/default/configmaps';
const SECRET_TOKEN = 'tg-metrics-test-secret-token-7f3a9c';
/** In Impersonate-Group, -Uid and -Extra-* values: none is ever logged (the user honoured is, as `as`). */
const IMPERSONATION_SECRET = 'tg-metrics-test-impersonation-5e02b1';

async function scrape(): Promise<Sample[]> {
  const response = await fetch(stack.metricsUrl);
  if (response.status !== 200) throw new Error(`GET ${stack.metricsUrl}: ${response.status}`);
  return parsePrometheusText(await response.text());
}

/** Scrapes until `check` holds (a response's metrics are counted when it closes, just after the client has it). */
async function eventually(check: (samples: Sample[]) => boolean, what: string): Promise<Sample[]> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const samples = await scrape();
    if (check(samples)) return samples;
    if (Date.now() > deadline) throw new Error(`not within 5 s: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function requestLines(tenant: string): Record<string, unknown>[] {
  return stack.gatewayLogs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((entry) => entry.msg === 'request' && entry.tenant === tenant);
}

t.before(async () => {
  stack = await startStack({ controllers: false });
  // Never used before the known traffic below (its first request writes the birth state): only that is counted.
  alpha = await createTestTenant(stack, 'metra1', undefined, { used: false });
  bravo = await createTestTenant(stack, 'metrb2', undefined, { used: false });
  alphaSession = connectH2(credentialsOf(alpha.kubeconfig));
  bravoSession = connectH2(credentialsOf(bravo.kubeconfig));
  // The known traffic: 3 creates and 7 GETs by alpha; 2 GETs and one 404 by bravo.
  for (let i = 1; i <= 3; i++) {
    const created = await h2Request(alphaSession, 'POST', CONFIGMAPS, {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}` }, data: { n: String(i) } }),
    });
    if (created.status !== 201) throw new Error(`create cm-${i}: ${created.status} ${created.body}`);
  }
  for (let i = 0; i < 7; i++) if ((await h2Request(alphaSession, 'GET', `${CONFIGMAPS}/cm-1`)).status !== 200) throw new Error('alpha GET');
  for (let i = 0; i < 2; i++) if ((await h2Request(bravoSession, 'GET', '/api/v1/namespaces/default')).status !== 200) throw new Error('bravo GET');
  const foreign = await h2Request(bravoSession, 'GET', `${CONFIGMAPS}/cm-1`);
  if (foreign.status !== 404) throw new Error(`bravo reading alpha's configmap: ${foreign.status}`);
});
t.teardown(async () => {
  alphaSession?.close();
  bravoSession?.close();
  await stack?.stop();
});

t.test('requests are counted per tenant, verb, resource and code, and their durations with them', async (t) => {
  const samples = await eventually((s) => sampleSum(s, 'tenantgate_requests_total', { tenant: 'metrb2' }) >= 3, 'bravo counted');
  t.equal(sampleSum(samples, 'tenantgate_requests_total', { tenant: 'metra1', verb: 'create', resource: 'configmaps', code: '201' }), 3);
  t.equal(sampleSum(samples, 'tenantgate_requests_total', { tenant: 'metra1', verb: 'get', resource: 'configmaps', code: '200' }), 7);
  t.equal(sampleSum(samples, 'tenantgate_requests_total', { tenant: 'metra1' }), 10, 'nothing else is counted as alpha');
  t.equal(sampleSum(samples, 'tenantgate_requests_total', { tenant: 'metrb2', verb: 'get', resource: 'namespaces', code: '200' }), 2);
  t.equal(
    sampleSum(samples, 'tenantgate_requests_total', { tenant: 'metrb2', verb: 'get', resource: 'configmaps', code: '404' }),
    1,
    "bravo's 404 on alpha's configmap",
  );
  t.equal(sampleSum(samples, 'tenantgate_request_duration_seconds_count', { tenant: 'metra1', verb: 'get' }), 7);
  t.equal(sampleSum(samples, 'tenantgate_request_duration_seconds_count', { tenant: 'metra1', verb: 'create' }), 3);
  t.equal(sampleSum(samples, 'tenantgate_request_duration_seconds_count', { tenant: 'metrb2', verb: 'get' }), 3);
  t.equal(sampleSum(samples, 'tenantgate_request_duration_seconds_bucket', { tenant: 'metra1', verb: 'get', le: '+Inf' }), 7);
  t.ok(sampleSum(samples, 'tenantgate_request_duration_seconds_sum', { tenant: 'metra1', verb: 'get' }) > 0);
  t.ok(sampleSum(samples, 'tenantgate_upstream_request_duration_seconds_count', { verb: 'create' }) >= 3, 'upstream latency of the creates');
  t.ok(sampleSum(samples, 'tenantgate_requests_total', { tenant: '_admin' }) > 0, "the administrator's Tenant API calls count as _admin");
  t.equal(sampleSum(samples, 'tenantgate_tenants', { phase: 'ready' }), 2);
  t.equal(sampleSum(samples, 'tenantgate_tenant_operations_total', { operation: 'create', result: 'ok' }), 2);
  t.ok(sampleSum(samples, 'tenantgate_tenant_operations_total', { operation: 'bootstrap', result: 'ok' }) >= 2);
  t.ok(sampleSum(samples, 'tenantgate_process_resident_memory_bytes') > 0, "Node's default metrics, prefixed");
});

t.test("one log line per request, with tenant and user, in the tenant's terms", async (t) => {
  const alphaLines = requestLines('metra1');
  t.equal(alphaLines.length, 10, 'ten requests by alpha, ten lines');
  const creates = alphaLines.filter((line) => line.verb === 'create');
  t.equal(creates.length, 3);
  t.match(creates[0], { tenant: 'metra1', user: 'admin', resource: 'configmaps', namespace: 'default', code: 201, durationMs: Number });
  t.equal(requestLines('metrb2').filter((line) => line.code === 404).length, 1);
});

t.test('a bearer token, Impersonate-* headers and a query never appear in the logs', async (t) => {
  const before = stack.gatewayLogs.length;
  const withToken = await h2Request(alphaSession, 'GET', `${CONFIGMAPS}/cm-1?token=${SECRET_TOKEN}`, {
    headers: {
      authorization: `Bearer ${SECRET_TOKEN}`,
      'impersonate-user': 'metrics-test-impersonated',
      'impersonate-group': `group-${IMPERSONATION_SECRET}`,
      'impersonate-uid': `uid-${IMPERSONATION_SECRET}`,
      'impersonate-extra-scopes': `extra-${IMPERSONATION_SECRET}`,
    },
  });
  t.ok(withToken.status > 0);
  await eventually(() => stack.gatewayLogs.length > before, 'the request logged');
  const logs = stack.gatewayLogs.join('\n');
  t.notMatch(logs, SECRET_TOKEN);
  t.notMatch(logs, IMPERSONATION_SECRET);
  t.notMatch(logs, /Bearer|impersonate-/i);
});

t.test('a watch is active while its client holds it; its events and rewritten bytes are counted', async (t) => {
  const stream = alphaSession.request({ ':method': 'GET', ':path': `${CONFIGMAPS}?watch=true` });
  let events = 0;
  stream.on(
    'data',
    (chunk: Buffer) =>
      (events += chunk
        .toString()
        .split('\n')
        .filter((line) => line.startsWith('{')).length),
  );
  stream.on('error', () => {});
  let samples = await eventually((s) => sampleSum(s, 'tenantgate_watches_active', { tenant: 'metra1' }) === 1, 'the watch active');
  t.equal(sampleSum(samples, 'tenantgate_watches_active', { tenant: 'metrb2' }), 0, "bravo's gauge does not count alpha's watch");
  samples = await eventually((s) => sampleSum(s, 'tenantgate_watch_events_total', { tenant: 'metra1' }) >= 3, 'the initial events counted');
  t.ok(events >= 3, `the client saw its ${events} events`);
  t.ok(sampleSum(samples, 'tenantgate_rewrite_bytes_total', { tenant: 'metra1', kind: 'watch' }) > 0);
  const created = await h2Request(alphaSession, 'POST', CONFIGMAPS, {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm-4' } }),
  });
  t.equal(created.status, 201);
  await eventually((s) => sampleSum(s, 'tenantgate_watch_events_total', { tenant: 'metra1' }) >= 4, 'the new event counted while the watch runs');
  stream.close();
  samples = await eventually((s) => sampleSum(s, 'tenantgate_watches_active', { tenant: 'metra1' }) === 0, 'the watch ended');
  t.equal(sampleSum(samples, 'tenantgate_watch_events_total', { tenant: 'metrb2' }), 0, 'bravo sent no watch events');
  t.equal(sampleSum(samples, 'tenantgate_rewrite_duration_seconds_count', { kind: 'watch' }), 1);
  t.ok(
    sampleSum(samples, 'tenantgate_requests_total', { tenant: 'metra1', verb: 'watch', resource: 'configmaps' }) === 1,
    'the watch is one request once it ends',
  );
});

t.test('the metrics listener serves only /metrics', async (t) => {
  const other = await fetch(stack.metricsUrl.replace('/metrics', '/api/v1/namespaces'));
  t.equal(other.status, 404);
});

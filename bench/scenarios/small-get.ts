// Scenario 1: GET of one ConfigMap through the upstream directly, tenantgate --passthrough and tenantgate as a
// tenant, over HTTP/1.1 (autocannon) and HTTP/2 (h2load): requests/s, p50/p99; and at rest (issue 31): paced at 50,
// 100 and 200 requests/s, open loop, directly, through a bare node:http2 proxy and through tenantgate. Bounded
// rounds; loopback only.
import { identityFromTokenReview } from '../../lib/auth/service-account-tokens.ts';
import { upstreamIdentityOf } from '../../lib/auth/impersonation.ts';
import { upstreamRequestHeaders } from '../../lib/upstream/headers.ts';
import { connectH2, h2Request } from '../../test/helpers/http.ts';
import { spawnBare } from '../load/bare-server.ts';
import { pacedLoad, type PacedProtocol } from '../load/paced.ts';
import { spawnGateway, stopChild } from '../../test/helpers/stack.ts';
import { http1Load } from '../load/http1.ts';
import { H2LOAD_INSTALL, h2loadAvailable, http2Load } from '../load/http2.ts';
import { startThreeTargets, type BenchTarget, type TargetName, type ThreeTargets } from '../load/targets.ts';
import type { Chart, Scenario, ScenarioOptions, ScenarioResult, TargetCheck } from '../scenario.ts';
import { median, percentile, rounded } from '../stats.ts';

const TENANT = 'bget01';
export const CONFIGMAP = 'probe';
/** Throughput: enough concurrency to keep every target busy; latency: one request at a time, nothing queued. */
const CONNECTIONS_HTTP1 = 8;
const CONNECTIONS_HTTP2 = 2;
const STREAMS_HTTP2 = 8;
const TARGET_RATIO = 0.9;
/** Issue 15's floor, checked beside issue 6's: a gateway that costs the apiserver's machine little keeps 0.8x. */
const TARGET_RATIO_FLOOR = 0.8;
const TARGET_P50_ADDED_MS = 0.3;
const RBAC_SETTLES_WITHIN_MS = 15_000;
/** Issue 31: the rates of a cluster at rest (kubectl, reconciles, health checks), and what may be added there. */
const REST_RATES = [50, 100, 200] as const;
const TARGET_REST_P50_ADDED_MS = 0.45;
const TARGET_REST_OVER_BARE_MS = 0.1;
const REST_TARGETS = ['direct', 'bare proxy', 'tenantgate', 'tenantgate before'] as const;
type RestTarget = (typeof REST_TARGETS)[number];
/** Another build's `dist/lib/cli.js`, measured at rest beside this one in the same rounds (a change's before). */
const BEFORE_CLI = process.env.BENCH_BEFORE_CLI;

interface Measured {
  requestsPerSecond: number[];
  p50Ms: number[];
  p99Ms: number[];
  non2xx: number;
}

type Protocol = 'http1' | 'http2';

/**
 * A service account of the tenant allowed to GET configmaps, and its token. The same token serves all three
 * targets: it is an upstream token of `system:serviceaccount:<id>-default:bench`, so every target authorizes the
 * same identity upstream (h2load cannot present a client certificate).
 */
export async function tenantToken(tenantCredentials: BenchTarget['credentials']): Promise<string> {
  const session = connectH2(tenantCredentials);
  try {
    const post = async (path: string, body: object) => {
      const answer = await h2Request(session, 'POST', path, { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      if (answer.status !== 201) throw new Error(`POST ${path}: ${answer.status} ${answer.body.slice(0, 300)}`);
      return answer.json();
    };
    const ns = '/api/v1/namespaces/default';
    await post(`${ns}/configmaps`, { metadata: { name: CONFIGMAP }, data: { greeting: 'hello' } });
    await post(`${ns}/serviceaccounts`, { metadata: { name: 'bench' } });
    const rbac = '/apis/rbac.authorization.k8s.io/v1/namespaces/default';
    await post(`${rbac}/roles`, { metadata: { name: 'bench-get' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }] });
    await post(`${rbac}/rolebindings`, {
      metadata: { name: 'bench-get' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'bench-get' },
      subjects: [{ kind: 'ServiceAccount', name: 'bench', namespace: 'default' }],
    });
    const request = await post(`${ns}/serviceaccounts/bench/token`, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: { expirationSeconds: 3600 },
    });
    return request.status.token as string;
  } finally {
    session.close();
  }
}

export function urlOf(target: BenchTarget): string {
  return `${target.credentials.server}${target.namespacePath}/configmaps/${CONFIGMAP}`;
}

/** Waits until the token reads the ConfigMap through `target` (RBAC caches take a moment). */
export async function waitUntilServed(target: BenchTarget, headers: Record<string, string>): Promise<void> {
  const deadline = Date.now() + RBAC_SETTLES_WITHIN_MS;
  for (;;) {
    const run = await http1Load({ url: urlOf(target), headers, connections: 1, seconds: 0.2 });
    if (run.non2xx === 0 && run.latenciesMs.length > 0) return;
    if (Date.now() > deadline) throw new Error(`${target.name}: the token's GET was not answered 200 within ${RBAC_SETTLES_WITHIN_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

interface RestLeg {
  url: string;
  caPem: string | Buffer;
  headers: Record<string, string>;
}

/**
 * The small GET at rest (issue 31): paced open loop at each rate, over HTTP/2 and HTTP/1.1, directly, through the
 * bare node:http2 proxy of bench/get-breakdown.ts (proxy-stream for HTTP/2, proxy-compat for HTTP/1.1; it sends the
 * Impersonate-* headers tenantgate sends for this service account, so the upstream does the same work) and through
 * tenantgate, interleaved in rounds. p50/p99 added over direct and over the bare proxy, at each rate.
 */
async function atRest(
  three: ThreeTargets,
  token: string,
  quick: boolean,
  log: (line: string) => void,
): Promise<{ figures: Record<string, unknown>; targets: TargetCheck[]; charts: Chart[] }> {
  const rounds = quick ? 1 : 3;
  const requests = quick ? 150 : 600;
  const account = `system:serviceaccount:${three.upstreamNamespace}:bench`;
  const identity = identityFromTokenReview(
    {
      authenticated: true,
      user: { username: account, groups: ['system:serviceaccounts', `system:serviceaccounts:${three.upstreamNamespace}`, 'system:authenticated'] },
    },
    () => undefined,
  );
  if (identity === null) throw new Error(`${account}: not a tenant service account`);
  const impersonation = upstreamRequestHeaders(
    {},
    upstreamIdentityOf(identity, { verb: 'get', subresource: '', namespace: 'default', resource: 'configmaps' }),
    {},
  ) as Record<string, string>;
  const files = three.stack.files;
  const bareArgs = [files.tlsCertFile, files.tlsKeyFile, files.upstreamKubeconfigPath, JSON.stringify(impersonation)];
  const bare: Record<PacedProtocol, Awaited<ReturnType<typeof spawnBare>>> = {
    http2: await spawnBare('proxy-stream', bareArgs),
    http1: await spawnBare('proxy-compat', bareArgs),
  };
  // The same rig, tenant and token, served by the other build too. Its kept objects must agree with this one's, or
  // the two rewrite the in-cluster access policy many times a second: the same in-cluster address (by default, each
  // one's own).
  const before = BEFORE_CLI === undefined ? null : await spawnGateway(files, ['--in-cluster-address', new URL(three.stack.gatewayUrl).host], [], BEFORE_CLI);
  try {
    const headers = { authorization: `Bearer ${token}`, accept: 'application/json' };
    const [direct, , tenantgate] = three.targets as [BenchTarget, BenchTarget, BenchTarget];
    const upstreamPath = `/api/v1/namespaces/${three.upstreamNamespace}/configmaps/${CONFIGMAP}`;
    const tenantUrl = new URL(urlOf(tenantgate));
    const legOf = (target: RestTarget, protocol: PacedProtocol): RestLeg =>
      target === 'direct'
        ? { url: urlOf(direct), caPem: direct.credentials.caPem!, headers }
        : target === 'tenantgate'
          ? { url: tenantUrl.href, caPem: tenantgate.credentials.caPem!, headers }
          : target === 'tenantgate before'
            ? { url: `${before!.url}${tenantUrl.pathname}`, caPem: tenantgate.credentials.caPem!, headers }
            : { url: `${bare[protocol].url}${upstreamPath}`, caPem: files.ca.certPem, headers };
    const measured = REST_TARGETS.filter((target) => target !== 'tenantgate before' || before !== null);
    const protocols: PacedProtocol[] = ['http2', 'http1'];
    const p50s = new Map<string, number[]>();
    const p99s = new Map<string, number[]>();
    for (let round = 0; round < rounds; round++)
      for (const rate of REST_RATES)
        for (const protocol of protocols)
          for (const target of measured) {
            const run = await pacedLoad({ ...legOf(target, protocol), protocol, ratePerSecond: rate, requests });
            if (run.non2xx > 0) throw new Error(`at rest, ${target} ${protocol} ${rate}/s: ${run.non2xx} of ${requests} not answered 2xx`);
            const key = `${protocol} ${rate} ${target}`;
            p50s.set(key, [...(p50s.get(key) ?? []), percentile(run.latenciesMs, 50)]);
            p99s.set(key, [...(p99s.get(key) ?? []), percentile(run.latenciesMs, 99)]);
            log(
              `at rest ${protocol} ${rate}/s ${target.padEnd(17)} p50 ${rounded(percentile(run.latenciesMs, 50), 3)} ms, p99 ${rounded(percentile(run.latenciesMs, 99), 3)} ms (client send lag p99 ${rounded(run.sendLagP99Ms, 2)} ms)`,
            );
          }
    const figures: Record<string, unknown> = {
      client: 'bench/load/paced.ts: open loop, one HTTP/2 session or keep-alive HTTP/1.1 connections, bearer token',
      requestsPerLeg: requests,
      rounds,
      bareProxy: 'bench/bare-http2.ts proxy-stream (HTTP/2) and proxy-compat (HTTP/1.1), impersonating as tenantgate does',
      ...(BEFORE_CLI === undefined ? {} : { tenantgateBefore: BEFORE_CLI }),
    };
    const targets: TargetCheck[] = [];
    const charts: Chart[] = [];
    for (const protocol of protocols) {
      const label = protocol === 'http1' ? 'HTTP/1.1' : 'HTTP/2';
      const addedBars: Record<string, number> = {};
      for (const rate of REST_RATES) {
        const p50 = (target: RestTarget) => median(p50s.get(`${protocol} ${rate} ${target}`)!);
        const p99 = (target: RestTarget) => median(p99s.get(`${protocol} ${rate} ${target}`)!);
        const added = p50('tenantgate') - p50('direct');
        const bareAdded = p50('bare proxy') - p50('direct');
        figures[`${protocol}.${rate}PerSecond`] = Object.fromEntries(
          measured.map((target) => [
            target,
            {
              p50Ms: rounded(p50(target), 3),
              p99Ms: rounded(p99(target), 3),
              p50AddedOverDirectMs: rounded(p50(target) - p50('direct'), 3),
              p99AddedOverDirectMs: rounded(p99(target) - p99('direct'), 3),
              p50AddedOverBareMs: rounded(p50(target) - p50('bare proxy'), 3),
              p99AddedOverBareMs: rounded(p99(target) - p99('bare proxy'), 3),
            },
          ]),
        );
        targets.push(
          {
            target: `small GET at ${rate}/s, ${label}: p50 added <= ${TARGET_REST_P50_ADDED_MS} ms`,
            value: rounded(added, 3),
            unit: 'ms',
            met: added <= TARGET_REST_P50_ADDED_MS,
          },
          {
            target: `small GET at ${rate}/s, ${label}: p50 added <= the bare proxy's + ${TARGET_REST_OVER_BARE_MS} ms`,
            value: rounded(added - bareAdded, 3),
            unit: 'ms over the bare proxy',
            met: added - bareAdded <= TARGET_REST_OVER_BARE_MS,
          },
        );
        addedBars[`bare proxy ${rate}/s`] = rounded(bareAdded, 3);
        addedBars[`tenantgate ${rate}/s`] = rounded(added, 3);
        if (before !== null) addedBars[`tenantgate before ${rate}/s`] = rounded(p50('tenantgate before') - p50('direct'), 3);
      }
      charts.push({ title: `Small GET at rest, ${label}, p50 added over direct`, unit: 'ms', bars: addedBars });
    }
    return { figures, targets, charts };
  } finally {
    await stopChild(bare.http2.child);
    await stopChild(bare.http1.child);
    if (before !== null) await stopChild(before.child);
  }
}

async function run({ quick, log }: ScenarioOptions): Promise<ScenarioResult> {
  const rounds = quick ? 1 : 3;
  const loadSeconds = quick ? 1 : 5;
  const latencySeconds = quick ? 1 : 3;
  const withHttp2 = h2loadAvailable();
  if (!withHttp2) log(`HTTP/2 part skipped: /usr/bin/h2load is missing; install it with: ${H2LOAD_INSTALL}`);
  const three = await startThreeTargets(TENANT);
  try {
    const token = await tenantToken(three.targets[2]!.credentials);
    const headers = { authorization: `Bearer ${token}`, accept: 'application/json' };
    for (const target of three.targets) await waitUntilServed(target, headers);
    const protocols: Protocol[] = withHttp2 ? ['http1', 'http2'] : ['http1'];
    const measured = new Map<string, Measured>();
    for (const protocol of protocols)
      for (const target of three.targets) measured.set(`${protocol} ${target.name}`, { requestsPerSecond: [], p50Ms: [], p99Ms: [], non2xx: 0 });
    const once = async (protocol: Protocol, target: BenchTarget, concurrent: boolean, seconds: number) =>
      protocol === 'http1'
        ? http1Load({ url: urlOf(target), headers, connections: concurrent ? CONNECTIONS_HTTP1 : 1, seconds })
        : http2Load({ url: urlOf(target), headers, connections: concurrent ? CONNECTIONS_HTTP2 : 1, streams: concurrent ? STREAMS_HTTP2 : 1, seconds });
    // Warm-up (JIT, TLS sessions, token caches), then rounds interleaved across targets so drift hits all alike.
    for (const protocol of protocols) for (const target of three.targets) await once(protocol, target, true, 1);
    for (let round = 0; round < rounds; round++) {
      for (const protocol of protocols) {
        for (const target of three.targets) {
          const entry = measured.get(`${protocol} ${target.name}`)!;
          const load = await once(protocol, target, true, loadSeconds);
          const latency = await once(protocol, target, false, latencySeconds);
          entry.requestsPerSecond.push(load.requestsPerSecond);
          entry.p50Ms.push(percentile(latency.latenciesMs, 50));
          entry.p99Ms.push(percentile(latency.latenciesMs, 99));
          entry.non2xx += load.non2xx + latency.non2xx;
          log(
            `${protocol} ${target.name.padEnd(11)} ${Math.round(load.requestsPerSecond)} requests/s; one at a time p50 ${rounded(percentile(latency.latenciesMs, 50), 3)} ms, p99 ${rounded(percentile(latency.latenciesMs, 99), 3)} ms`,
          );
        }
      }
    }
    const figures: Record<string, unknown> = {
      configmap: `${three.upstreamNamespace}/${CONFIGMAP}`,
      credentials: 'bearer token of a tenant service account (the same upstream token for all three targets)',
      rounds,
      loadSeconds,
      latencySeconds,
      http1: { client: 'autocannon', connections: CONNECTIONS_HTTP1 },
      http2: withHttp2
        ? { client: 'h2load', connections: CONNECTIONS_HTTP2, streamsPerConnection: STREAMS_HTTP2 }
        : { skipped: `no ${'/usr/bin/h2load'}: ${H2LOAD_INSTALL}` },
    };
    const targets: TargetCheck[] = [];
    const charts: Chart[] = [];
    for (const protocol of protocols) {
      const of = (name: TargetName) => {
        const entry = measured.get(`${protocol} ${name}`)!;
        return { requestsPerSecond: median(entry.requestsPerSecond), p50Ms: median(entry.p50Ms), p99Ms: median(entry.p99Ms), non2xx: entry.non2xx };
      };
      const direct = of('direct');
      const gateway = of('tenantgate');
      const label = protocol === 'http1' ? 'HTTP/1.1' : 'HTTP/2';
      for (const name of ['direct', 'passthrough', 'tenantgate'] as const) {
        const row = of(name);
        figures[`${protocol}.${name}`] = {
          requestsPerSecond: Math.round(row.requestsPerSecond),
          requestsPerSecondVsDirect: rounded(row.requestsPerSecond / direct.requestsPerSecond, 3),
          p50Ms: rounded(row.p50Ms, 3),
          p99Ms: rounded(row.p99Ms, 3),
          p50AddedMs: rounded(row.p50Ms - direct.p50Ms, 3),
          non2xx: row.non2xx,
        };
      }
      const ratio = gateway.requestsPerSecond / direct.requestsPerSecond;
      const added = gateway.p50Ms - direct.p50Ms;
      targets.push(
        { target: `small GET, ${label}: >= ${TARGET_RATIO}x direct requests/s`, value: rounded(ratio, 3), unit: 'x direct', met: ratio >= TARGET_RATIO },
        {
          target: `small GET, ${label}: >= ${TARGET_RATIO_FLOOR}x direct requests/s at saturation`,
          value: rounded(ratio, 3),
          unit: 'x direct',
          met: ratio >= TARGET_RATIO_FLOOR,
        },
        { target: `small GET, ${label}: p50 added <= ${TARGET_P50_ADDED_MS} ms`, value: rounded(added, 3), unit: 'ms', met: added <= TARGET_P50_ADDED_MS },
      );
      const bars = (pick: (row: ReturnType<typeof of>) => number) => ({
        direct: pick(of('direct')),
        passthrough: pick(of('passthrough')),
        tenantgate: pick(of('tenantgate')),
      });
      charts.push(
        { title: `Small GET, ${label}, requests per second`, unit: 'requests/s', bars: bars((r) => Math.round(r.requestsPerSecond)) },
        { title: `Small GET, ${label}, p50 latency one at a time`, unit: 'ms', bars: bars((r) => rounded(r.p50Ms, 3)) },
      );
    }
    const rest = await atRest(three, token, quick, log);
    figures.atRest = rest.figures;
    targets.push(...rest.targets);
    charts.push(...rest.charts);
    return { scenario: 'small-get', figures, targets, charts };
  } finally {
    await three.stop();
  }
}

export const smallGetScenario: Scenario = {
  name: 'small-get',
  description:
    'Small GET of one ConfigMap: requests/s and p50/p99 over HTTP/1.1 (autocannon) and HTTP/2 (h2load), direct vs passthrough vs tenantgate; at rest (50, 100, 200/s open loop) direct vs a bare node:http2 proxy vs tenantgate',
  run,
};

// What the second wall costs a tenant's list across all its namespaces: p50/p99 of sequential LISTs of a few
// ConfigMaps (merged per namespace) and Secrets (label-filtered) as the tenant admin, and a user's first request
// (access review asked upstream) against its second (cached). Bounded: 200 requests per measure, loopback only.
// Run after `npm run build`: node bench/cross-namespace-reads.ts
import { performance } from 'node:perf_hooks';
import { connectH2, credentialsOf, h2Request } from '../test/helpers/http.ts';
import { startStack } from '../test/helpers/stack.ts';
import { createTestTenant } from '../test/helpers/tenants.ts';
import { median, percentile } from './stats.ts';

const REQUESTS = 200;
const USERS = 20;

async function timed(run: () => Promise<{ status: number }>): Promise<number> {
  const start = performance.now();
  const answer = await run();
  if (answer.status !== 200) throw new Error(`answered ${answer.status}`);
  return performance.now() - start;
}

const stack = await startStack({ controllers: false });
try {
  const tenant = await createTestTenant(stack, 'bench1');
  for (const ns of ['a', 'b', 'c']) {
    await tenant.kubectl(['create', 'namespace', ns]);
    for (const name of ['one', 'two']) await tenant.kubectl(['-n', ns, 'create', 'configmap', name, '--from-literal=k=v']);
    await tenant.kubectl(['-n', ns, 'create', 'secret', 'generic', 's', '--from-literal=k=v']);
  }
  await tenant.kubectl(['create', 'clusterrole', 'cm-reader', '--verb=list', '--resource=configmaps,secrets']);
  await tenant.kubectl(['create', 'clusterrolebinding', 'readers', '--clusterrole=cm-reader', '--group=readers']);
  const session = connectH2(credentialsOf(tenant.kubeconfig));
  const results: Record<string, number> = {};
  for (const [what, path] of [
    ['configmaps (per namespace)', '/api/v1/configmaps'],
    ['secrets (label filter)', '/api/v1/secrets'],
  ] as const) {
    for (let i = 0; i < 10; i++) await timed(() => h2Request(session, 'GET', path)); // warm-up
    const times: number[] = [];
    for (let i = 0; i < REQUESTS; i++) times.push(await timed(() => h2Request(session, 'GET', path)));
    results[`admin ${what} p50 ms`] = median(times);
    results[`admin ${what} p99 ms`] = percentile(times, 99);
  }
  session.close();
  // A user's first request asks the upstream (its identity is in the cache key); its second is answered from the cache.
  const first: number[] = [];
  const second: number[] = [];
  for (let i = 0; i < USERS; i++) {
    const user = connectH2(credentialsOf(stack.kubeconfigFor({ user: `u${i}`, groups: ['readers'], tenant: 'bench1' })));
    await timed(() => h2Request(user, 'GET', '/api/v1/namespaces/a/configmaps/none').then(() => ({ status: 200 }))); // TLS and session set up
    first.push(await timed(() => h2Request(user, 'GET', '/api/v1/secrets')));
    second.push(await timed(() => h2Request(user, 'GET', '/api/v1/secrets')));
    user.close();
  }
  results['user secrets first request p50 ms'] = median(first);
  results['user secrets second request p50 ms'] = median(second);
  for (const [name, value] of Object.entries(results)) console.log(`${name}: ${value.toFixed(2)}`);
} finally {
  await stack.stop();
}

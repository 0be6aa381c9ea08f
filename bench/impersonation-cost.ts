// `npx node bench/impersonation-cost.ts [--requests N] [--rounds N]` (after `npm run build`): what the apiserver spends
// per GET on the impersonation attributes tenantgate sends, measured directly against the rig's kube-apiserver with
// tenantgate's own credentials: none (tenantgate as itself), a tenant read's (user and groups), and every attribute
// (the tenant extra too, as writes carry). CPU from /proc, rounds interleaved; loopback only, bounded in count.
import { parseArgs } from 'node:util';
import { upstreamIdentityOf } from '../lib/auth/impersonation.ts';
import { upstreamRequestHeaders } from '../lib/upstream/headers.ts';
import { connectH2, credentialsOf } from '../test/helpers/http.ts';
import { startStack } from '../test/helpers/stack.ts';
import { createTestTenant } from '../test/helpers/tenants.ts';
import { cpuMeter, idleCpuRate } from './load/cpu.ts';
import { countedRequests } from './load/counted.ts';
import { median, rounded } from './stats.ts';

const TENANT = 'bimp01';
const CONCURRENCY = 4;

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { requests: { type: 'string', default: '5000' }, rounds: { type: 'string', default: '3' } } });
  const requests = Number(values.requests);
  const rounds = Number(values.rounds);
  const stack = await startStack({ controllers: false });
  try {
    await createTestTenant(stack, TENANT);
    const session = connectH2(credentialsOf(stack.upstreamKubeconfig));
    const namespace = `${TENANT}-default`;
    const created = await countedRequests(session, 1, 1, () => ({
      method: 'POST',
      path: `/api/v1/namespaces/${namespace}/configmaps`,
      body: JSON.stringify({ metadata: { name: 'probe', labels: { 'tenant.kubezoo.io/tenant': TENANT } }, data: { a: 'b' } }),
      expect: 201,
    })).catch((error: Error) => error);
    if (created instanceof Error && !/409/.test(created.message)) throw created;
    // The tenant's admin, as its client certificate names it (CN=<id>-admin, OU=<id>, no groups).
    const admin = { user: 'admin', groups: [], tenant: TENANT };
    const impersonationOf = (identity: ReturnType<typeof upstreamIdentityOf>) => {
      const headers = upstreamRequestHeaders({}, identity, {});
      const out: Record<string, string | string[]> = {};
      for (const [name, value] of Object.entries(headers)) if (name.startsWith('impersonate-')) out[name] = value as string | string[];
      return out;
    };
    const variants: { name: string; headers: Record<string, string | string[]> }[] = [
      { name: 'no impersonation (tenantgate itself)', headers: {} },
      { name: 'a tenant read: user and groups', headers: impersonationOf(upstreamIdentityOf(admin, { verb: 'get', subresource: '' })) },
      { name: 'every attribute: user, groups, tenant extra', headers: impersonationOf(upstreamIdentityOf(admin)) },
    ];
    const apiserver = stack.rig.processes.find((p) => p.name === 'kube-apiserver')!.pid;
    const path = `/api/v1/namespaces/${namespace}/configmaps/probe`;
    for (const variant of variants) await countedRequests(session, 500, CONCURRENCY, () => ({ method: 'GET', path, expect: 200, headers: variant.headers }));
    const idle = await idleCpuRate({ apiserver }, 3);
    const spentBy = new Map<string, number[]>();
    for (let round = 0; round < rounds; round++) {
      for (const variant of variants) {
        const spent = cpuMeter({ apiserver }, idle);
        await countedRequests(session, requests, CONCURRENCY, () => ({ method: 'GET', path, expect: 200, headers: variant.headers }));
        const perRequest = spent().ms.apiserver! / requests;
        spentBy.set(variant.name, [...(spentBy.get(variant.name) ?? []), perRequest]);
        console.error(`round ${round + 1} ${variant.name}: ${rounded(perRequest, 4)} ms`);
      }
    }
    session.close();
    const base = median(spentBy.get(variants[0]!.name)!);
    console.log(`kube-apiserver CPU per GET of one ConfigMap, ${requests} GETs per cell, median of ${rounds} rounds, ${CONCURRENCY} in flight:`);
    for (const variant of variants) {
      const ms = median(spentBy.get(variant.name)!);
      console.log(`- ${variant.name} (${Object.keys(variant.headers).length} headers): ${rounded(ms, 4)} ms (${rounded(ms / base, 2)}x)`);
    }
  } finally {
    await stack.stop();
  }
}

await main();

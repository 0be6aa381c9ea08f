// Tenant creation as a user sees it: from `POST tenants` to the first kubectl call that succeeds with the issued
// kubeconfig, p50/p99 over many tenants; and what resolving a tenant costs on the request path (index lookup and
// certificate binding check), against a plain Map lookup.
// Run after `npm run build`: node bench/tenants.ts [--quick]   (loopback only; bounded in count and time)
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { tenantRefusal } from '../lib/auth/tenant-resolution.ts';
import { tenantCertificateSerial } from '../lib/tenants/credentials.ts';
import { MemoryTenantStore } from '../lib/tenants/memory-store.ts';
import { fetchKubeconfig } from '../lib/tenants/tenant-command.ts';
import { TENANT_API_VERSION, type Tenant } from '../lib/tenants/tenant.ts';
import { upstreamJson } from '../lib/upstream/client.ts';
import { loadKubeconfig } from '../lib/upstream/kubeconfig.ts';
import { UpstreamPool } from '../lib/upstream/pool.ts';
import { startStack } from '../test/helpers/stack.ts';

const quick = process.argv.includes('--quick');
const TENANTS = quick ? 20 : 200;
/** A kubectl that fails is tried again until this long after the create (bootstrap still running). */
const FIRST_CALL_LIMIT_MS = 30_000;
const LOOKUP_TENANTS = 1000;
const LOOKUPS = quick ? 200_000 : 2_000_000;
const PATH = `/apis/${TENANT_API_VERSION}/tenants`;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
}

const round = (ms: number) => Math.round(ms * 10) / 10;

async function createToFirstCall(): Promise<Record<string, unknown>> {
  const stack = await startStack({ controllers: true });
  const pool = new UpstreamPool(loadKubeconfig(stack.adminKubeconfig));
  const created: number[] = [];
  const issued: number[] = [];
  const firstCall: number[] = [];
  const kubectlAttempts: number[] = [];
  try {
    // kubectl's own cost (process start, TLS, discovery-free request), so the tenant's share can be told apart.
    const baseline: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      const result = await stack.kubectl(['get', 'namespaces', '-o', 'name']);
      if (result.code !== 0) throw new Error(result.stderr);
      baseline.push(performance.now() - t0);
    }
    for (let i = 0; i < TENANTS; i++) {
      const id = `bt${String(i).padStart(4, '0')}`;
      const t0 = performance.now();
      const answer = await upstreamJson(pool, 'POST', PATH, { apiVersion: TENANT_API_VERSION, kind: 'Tenant', metadata: { name: id }, spec: {} });
      if (answer.status !== 201) throw new Error(`create ${id}: ${answer.status} ${JSON.stringify(answer.body)}`);
      const t1 = performance.now();
      const file = join(stack.dir, `${id}.kubeconfig`);
      writeFileSync(file, await fetchKubeconfig(pool, id), { mode: 0o600 });
      const t2 = performance.now();
      let attempts = 0;
      for (;;) {
        attempts++;
        const result = await stack.kubectl(['get', 'configmaps', '-n', 'default', '-o', 'name'], { kubeconfig: file });
        if (result.code === 0) break;
        if (performance.now() - t0 > FIRST_CALL_LIMIT_MS) throw new Error(`tenant ${id}: no successful kubectl call within ${FIRST_CALL_LIMIT_MS} ms: ${result.stderr}`);
      }
      const t3 = performance.now();
      created.push(t1 - t0);
      issued.push(t2 - t1);
      firstCall.push(t3 - t0);
      kubectlAttempts.push(attempts);
    }
    const summary = (values: number[]) => ({ p50: round(percentile(values, 50)), p99: round(percentile(values, 99)) });
    return {
      tenants: TENANTS,
      createMs: summary(created),
      kubeconfigMs: summary(issued),
      createToFirstKubectlMs: summary(firstCall),
      kubectlAloneMs: summary(baseline),
      kubectlAttempts: { max: Math.max(...kubectlAttempts), total: kubectlAttempts.reduce((a, b) => a + b, 0) },
    };
  } finally {
    pool.close();
    await stack.stop();
  }
}

async function lookupCost(): Promise<Record<string, unknown>> {
  const store = new MemoryTenantStore();
  const tenants: Tenant[] = [];
  for (let i = 0; i < LOOKUP_TENANTS; i++) {
    tenants.push(await store.create({ apiVersion: TENANT_API_VERSION, kind: 'Tenant', metadata: { name: `lk${String(i).padStart(4, '0')}` }, spec: {} }));
  }
  const identities = tenants.map((tenant) => ({
    user: 'admin',
    groups: [],
    tenant: tenant.metadata.name,
    proof: { kind: 'certificate' as const, serial: tenantCertificateSerial(tenant).toUpperCase() },
  }));
  const plain = new Map(tenants.map((tenant) => [tenant.metadata.name, tenant]));
  const time = (body: (i: number) => unknown) => {
    for (let i = 0; i < 100_000; i++) body(i); // warm up
    const t0 = process.hrtime.bigint();
    let refused = 0;
    for (let i = 0; i < LOOKUPS; i++) if (body(i) !== null) refused++;
    const ns = Number(process.hrtime.bigint() - t0) / LOOKUPS;
    if (refused !== 0 && refused !== LOOKUPS) throw new Error(`${refused} of ${LOOKUPS} lookups refused`);
    return Math.round(ns * 10) / 10;
  };
  const resolveNs = time((i) => tenantRefusal(identities[i % LOOKUP_TENANTS]!, store));
  const mapNs = time((i) => (plain.get(identities[i % LOOKUP_TENANTS]!.tenant) === undefined ? 'missing' : null));
  return { tenantsInIndex: LOOKUP_TENANTS, lookups: LOOKUPS, resolveTenantNs: resolveNs, plainMapGetNs: mapNs };
}

async function main(): Promise<void> {
  const lookup = await lookupCost();
  process.stdout.write(`tenant lookup on the request path: ${lookup.resolveTenantNs} ns (a plain Map.get: ${lookup.plainMapGetNs} ns), ${LOOKUP_TENANTS} tenants in the index\n`);
  const creation = await createToFirstCall();
  process.stdout.write(`${JSON.stringify(creation, null, 2)}\n`);
  const result = {
    scenario: 'tenants',
    when: new Date().toISOString(),
    machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version, loadavg: os.loadavg() },
    lookup,
    creation,
  };
  if (!quick) {
    mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
    writeFileSync(new URL('./results/tenants.json', import.meta.url), JSON.stringify(result, null, 2) + '\n');
  }
}

await main();

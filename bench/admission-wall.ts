// What the confinement policy (the second wall's admission half) costs a tenant's write: p50 of 200 sequential
// ConfigMap creates through tenantgate without the policy, with it, and without it again (to see the drift).
// Run: node bench/admission-wall.ts   (starts its own rig and an in-process tenantgate; loopback only; 3 x 200 creates)
import { TENANT_CLUSTER_SCOPE_GROUP } from '../lib/auth/impersonation.ts';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { serveConfigOf, writeGatewayFiles } from '../lib/dev.ts';
import { startRig } from '../lib/rig/harness.ts';
import { startGateway } from '../lib/server/gateway.ts';
import { whenReady } from '../lib/tenants/conditions.ts';
import { TENANT_CONFINEMENT_OBJECTS } from '../lib/tenants/confinement-policy.ts';
import { issueTenantKubeconfig } from '../lib/tenants/credentials.ts';
import { ensureKeptObject } from '../lib/tenants/kept-objects.ts';
import { TENANT_API_VERSION } from '../lib/tenants/tenant.ts';
import { upstreamJson } from '../lib/upstream/client.ts';
import { loadKubeconfig } from '../lib/upstream/kubeconfig.ts';
import { UpstreamPool } from '../lib/upstream/pool.ts';
import { cpuSecondsOf } from './scenarios/watch-fanout.ts';
import { percentile, rounded } from './stats.ts';

const CREATES = 200;
const WARMUP = 20;
const TENANT = 'wallbn';

interface Phase {
  ms: number[];
  /** kube-apiserver's CPU time over the phase, per create. */
  apiserverCpuMs: number;
}

async function creates(pool: UpstreamPool, phase: string, count: number, apiserverPid: number): Promise<Phase> {
  const ms: number[] = [];
  const cpuBefore = cpuSecondsOf(apiserverPid);
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const answer = await upstreamJson(pool, 'POST', '/api/v1/namespaces/default/configmaps', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `${phase}-${i}` },
      data: { k: 'v' },
    });
    ms.push(performance.now() - started);
    if (answer.status !== 201) throw new Error(`${phase} create ${i}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`);
  }
  return { ms, apiserverCpuMs: ((cpuSecondsOf(apiserverPid) - cpuBefore) * 1000) / count };
}

/** Waits until the apiserver enforces (or no longer enforces) the policy: a dry-run Namespace outside the prefix as the tenant. */
async function untilEnforced(admin: UpstreamPool, enforced: boolean): Promise<void> {
  // (A namespace is created at the cluster scope, where a tenant admin carries tenantgate's group.)
  const asTenant = {
    'impersonate-user': `${TENANT}-admin`,
    'impersonate-group': [`${TENANT}:system:authenticated`, TENANT_CLUSTER_SCOPE_GROUP],
    'impersonate-extra-tenant': TENANT,
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    const probe = await upstreamJson(
      admin,
      'POST',
      '/api/v1/namespaces?dryRun=All',
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'wall-probe' } },
      asTenant,
    );
    const refused = probe.status === 403 && String(probe.body?.message).includes('ValidatingAdmissionPolicy');
    if (refused === enforced) return;
    if (Date.now() > deadline) throw new Error(`the policy is ${enforced ? 'not' : 'still'} enforced after 30 s (${probe.status})`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function figures({ ms, apiserverCpuMs }: Phase) {
  return {
    p50Ms: rounded(percentile(ms, 50)),
    p90Ms: rounded(percentile(ms, 90)),
    p99Ms: rounded(percentile(ms, 99)),
    apiserverCpuMsPerCreate: rounded(apiserverCpuMs),
  };
}

async function main(): Promise<void> {
  const rig = await startRig({ controllers: false });
  const dir = mkdtempSync(join(tmpdir(), 'admission-wall-'));
  const files = writeGatewayFiles(dir, rig);
  const gateway = await startGateway(serveConfigOf(files), { confinementPolicy: false });
  let tenantPool: UpstreamPool | undefined;
  try {
    const tenant = await gateway.tenants.create({ apiVersion: TENANT_API_VERSION, kind: 'Tenant', metadata: { name: TENANT }, spec: {} });
    await whenReady(gateway.tenants, TENANT);
    const kubeconfig = join(dir, 'tenant.kubeconfig');
    writeFileSync(kubeconfig, await issueTenantKubeconfig(files.ca, gateway.url, tenant));
    tenantPool = new UpstreamPool(loadKubeconfig(kubeconfig));
    const apiserverPid = rig.processes.find((p) => p.name === 'kube-apiserver')!.pid;
    await creates(tenantPool, 'warmup', WARMUP, apiserverPid);
    await untilEnforced(gateway.pool, false);
    const without = await creates(tenantPool, 'without', CREATES, apiserverPid);
    for (const kept of TENANT_CONFINEMENT_OBJECTS) await ensureKeptObject(gateway.pool, kept);
    await untilEnforced(gateway.pool, true);
    const withPolicy = await creates(tenantPool, 'with', CREATES, apiserverPid);
    for (const { collection, object } of TENANT_CONFINEMENT_OBJECTS) await upstreamJson(gateway.pool, 'DELETE', `${collection}/${object.metadata.name}`);
    await untilEnforced(gateway.pool, false);
    const withoutAgain = await creates(tenantPool, 'again', CREATES, apiserverPid);
    const result = {
      scenario: `${CREATES} sequential ConfigMap creates as a tenant through tenantgate (HTTP/2, one at a time), kube-apiserver without and with the confinement policy`,
      withoutPolicy: figures(without),
      withPolicy: figures(withPolicy),
      withoutPolicyAgain: figures(withoutAgain),
    };
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
  } finally {
    tenantPool?.close();
    await gateway.close();
    await rig.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();

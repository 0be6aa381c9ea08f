// Tenants for tests, made the way an administrator makes them: a Tenant created through tenantgate's Tenant API,
// Ready, with the admin kubeconfig the API issues, and used once (its first request writes its birth state upstream,
// which tests that write upstream directly rely on; test/integration/tenant-birth.test.ts covers a tenant never used).
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { upstreamJson } from '../../lib/upstream/client.ts';
import { loadKubeconfig } from '../../lib/upstream/kubeconfig.ts';
import { UpstreamPool } from '../../lib/upstream/pool.ts';
import { fetchKubeconfig } from '../../lib/tenants/tenant-command.ts';
import { isReady } from '../../lib/tenants/conditions.ts';
import { BUILTIN_CLUSTER_ROLES } from '../../lib/tenants/builtin-roles.ts';
import { TENANT_API_VERSION, TENANTS_PATH, type Tenant } from '../../lib/tenants/tenant.ts';
import { claimTenantIds } from './shared-rigs.ts';
import type { KubectlResult, Stack } from './stack.ts';

export interface TestTenant {
  id: string;
  kubeconfig: string;
  tenant: Tenant;
  kubectl(args: string[], options?: { input?: string }): Promise<KubectlResult>;
}

const READY_WITHIN_MS = 30_000;

/** An HTTP/2 client with this kubeconfig's credentials (e.g. an administrator's, for the Tenant API), closed after `use`. */
export async function withClient<T>(kubeconfig: string, use: (pool: UpstreamPool) => Promise<T>): Promise<T> {
  const pool = new UpstreamPool(loadKubeconfig(kubeconfig));
  try {
    return await use(pool);
  } finally {
    pool.close();
  }
}

/** Waits until the tenant's Ready condition is True; returns the tenant as stored then. */
export async function waitUntilReady(pool: UpstreamPool, id: string): Promise<Tenant> {
  const deadline = Date.now() + READY_WITHIN_MS;
  for (;;) {
    const got = await upstreamJson(pool, 'GET', `${TENANTS_PATH}/${id}`);
    if (got.status === 200 && isReady(got.body as Tenant)) return got.body as Tenant;
    if (Date.now() > deadline) throw new Error(`tenant ${id} not Ready within ${READY_WITHIN_MS} ms: ${got.status} ${JSON.stringify(got.body).slice(0, 400)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A Tenant created through the Tenant API, Ready, with its admin kubeconfig; `annotations` set its limits. */
export async function createTestTenant(stack: Stack, id: string, annotations?: Record<string, string>, options: { used?: boolean } = {}): Promise<TestTenant> {
  // On a shared rig an id another file used would find that file's objects upstream as its own.
  if (stack.sharedRig) await claimTenantIds([id]);
  return withClient(stack.adminKubeconfig, async (pool) => {
    const created = await upstreamJson(pool, 'POST', TENANTS_PATH, {
      apiVersion: TENANT_API_VERSION,
      kind: 'Tenant',
      metadata: { name: id, annotations },
      spec: {},
    });
    if (created.status !== 201) throw new Error(`creating tenant ${id}: ${created.status} ${JSON.stringify(created.body).slice(0, 400)}`);
    const tenant = await waitUntilReady(pool, id);
    const kubeconfig = join(stack.dir, `tenant-${id}.kubeconfig`);
    writeFileSync(kubeconfig, await fetchKubeconfig(pool, id), { mode: 0o600 });
    if (options.used !== false) await withClient(kubeconfig, (asTenant) => firstRequest(asTenant, id));
    stack.tenants.set(id, tenant);
    return { id, kubeconfig, tenant, kubectl: (args, options = {}) => stack.kubectl(args, { kubeconfig, input: options.input }) };
  });
}

/** The tenant's first request (its birth state is written upstream before it is answered). */
export async function firstRequest(asTenant: UpstreamPool, id: string): Promise<void> {
  const answer = await upstreamJson(asTenant, 'GET', '/api/v1/namespaces/default');
  if (answer.status !== 200) throw new Error(`tenant ${id}'s first request: ${answer.status} ${JSON.stringify(answer.body).slice(0, 400)}`);
}

/** `kubectl get clusterroles -o name` lines without the built-in roles every tenant has: the tenant's own. */
export function withoutBuiltinRoles(names: readonly string[]): string[] {
  return names.filter((name) => !BUILTIN_CLUSTER_ROLES.includes(name.slice(name.indexOf('/') + 1)));
}

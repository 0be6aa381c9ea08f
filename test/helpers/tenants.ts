// Tenants for tests until the Tenant API exists: an admin certificate from tenantgate's CA
// (CN=<id>-admin, OU=<id>) and the tenant's upstream bootstrap (built-in namespaces, RBAC).
import { bootstrapTenant } from '../../lib/tenants/bootstrap.ts';
import { loadKubeconfig } from '../../lib/upstream/kubeconfig.ts';
import { UpstreamPool } from '../../lib/upstream/pool.ts';
import type { KubectlResult, Stack } from './stack.ts';

export interface TestTenant {
  id: string;
  kubeconfig: string;
  kubectl(args: string[], options?: { input?: string }): Promise<KubectlResult>;
}

export async function createTestTenant(stack: Stack, id: string): Promise<TestTenant> {
  const pool = new UpstreamPool(loadKubeconfig(stack.upstreamKubeconfig));
  try {
    await bootstrapTenant(pool, id);
  } finally {
    pool.close();
  }
  const kubeconfig = stack.kubeconfigFor({ user: 'admin', groups: [], tenant: id });
  return { id, kubeconfig, kubectl: (args, options = {}) => stack.kubectl(args, { kubeconfig, input: options.input }) };
}

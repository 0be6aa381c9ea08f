// The three things every ratio compares, on one rig: the upstream directly, tenantgate as a pass-through
// (--passthrough, conversion off) and tenantgate converting for a tenant. Loopback only; stop() ends all of it.
import type { ChildProcess } from 'node:child_process';
import type { ClusterCredentials } from '../../lib/upstream/kubeconfig.ts';
import { credentialsOf } from '../../test/helpers/http.ts';
import { spawnGateway, startStack, stopChild, type Stack } from '../../test/helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../../test/helpers/tenants.ts';
import { gatewayProfileFlags } from '../profile.ts';

export type TargetName = 'direct' | 'passthrough' | 'tenantgate';

export interface BenchTarget {
  name: TargetName;
  /** Client certificate credentials for this target (server included). */
  credentials: ClusterCredentials;
  /** The tenant's `default` namespace as this target names it: `/api/v1/namespaces/<id>-default` or `.../default`. */
  namespacePath: string;
}

export interface ThreeTargets {
  stack: Stack;
  tenant: TestTenant;
  passthrough: { child: ChildProcess; url: string };
  /** In the order of every chart: direct, passthrough, tenantgate. */
  targets: BenchTarget[];
  /** The upstream namespace that holds the tenant's `default` namespace. */
  upstreamNamespace: string;
  stop(): Promise<void>;
}

/**
 * Starts the rig, the converting tenantgate (under --cpu-prof when the runner asks), a --passthrough tenantgate and
 * one tenant made through the Tenant API.
 */
export async function startThreeTargets(tenantId: string): Promise<ThreeTargets> {
  const stack = await startStack({ controllers: false, gatewayNodeFlags: gatewayProfileFlags() });
  let passthrough: { child: ChildProcess; url: string } | undefined;
  try {
    passthrough = await spawnGateway(stack.files, ['--passthrough']);
    const tenant = await createTestTenant(stack, tenantId);
    const upstreamNamespace = `${tenantId}-default`;
    const upstreamPath = `/api/v1/namespaces/${upstreamNamespace}`;
    const targets: BenchTarget[] = [
      { name: 'direct', credentials: credentialsOf(stack.upstreamKubeconfig), namespacePath: upstreamPath },
      { name: 'passthrough', credentials: { ...credentialsOf(stack.adminKubeconfig), server: passthrough.url }, namespacePath: upstreamPath },
      { name: 'tenantgate', credentials: credentialsOf(tenant.kubeconfig), namespacePath: '/api/v1/namespaces/default' },
    ];
    const started = passthrough;
    return {
      stack,
      tenant,
      passthrough: started,
      targets,
      upstreamNamespace,
      async stop() {
        await stopChild(started.child);
        await stack.stop();
      },
    };
  } catch (error) {
    if (passthrough !== undefined) await stopChild(passthrough.child);
    await stack.stop();
    throw error;
  }
}

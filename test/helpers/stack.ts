// The test stack: a real rig (etcd, kube-apiserver, kube-controller-manager) with tenantgate in front,
// tenantgate running as its own process (so its memory can be measured) from the compiled dist/.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { createInterface } from 'node:readline';
import { DEV_ADMIN, writeClientKubeconfig, writeGatewayFiles, type GatewayFiles } from '../../lib/dev.ts';
import type { Identity } from '../../lib/auth/identity.ts';
import { startRig, type Rig } from '../../lib/rig/harness.ts';
import { borrowRig, sharedRigsOffered } from './shared-rigs.ts';
import { TENANTGATE_NODE_FLAGS } from '../../lib/runtime.ts';
import { tenantCertificateSerial } from '../../lib/tenants/credentials.ts';
import type { Tenant } from '../../lib/tenants/tenant.ts';

const CLI = new URL('../../dist/lib/cli.js', import.meta.url).pathname;

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface Stack {
  rig: Rig;
  /** True when the rig is borrowed from the shared rigs of the run (test/helpers/shared-rigs.ts). */
  sharedRig: boolean;
  /** Scratch directory for this stack's files (removed by stop()). */
  dir: string;
  /** Tenants created through the Tenant API (test/helpers/tenants.ts), by id. */
  tenants: Map<string, Tenant>;
  files: GatewayFiles;
  gatewayUrl: string;
  /** tenantgate's /metrics URL (its metrics listener, on a free port) */
  metricsUrl: string;
  gateway: ChildProcess;
  /** tenantgate's log lines so far (JSON) */
  gatewayLogs: string[];
  /** kubeconfig with admin rights through tenantgate */
  adminKubeconfig: string;
  /** kubeconfig with admin rights straight to the upstream */
  upstreamKubeconfig: string;
  /** kubectl through tenantgate (admin, unless another kubeconfig is given) */
  kubectl(args: string[], options?: { kubeconfig?: string; input?: string }): Promise<KubectlResult>;
  /** kubectl straight to the upstream */
  kubectlDirect(args: string[], options?: { input?: string }): Promise<KubectlResult>;
  /** a kubeconfig for `identity` through tenantgate; a tenant's is bound to the tenant when it was created here */
  kubeconfigFor(identity: Identity): string;
  /** tenantgate's resident memory now and at its peak (bytes), from /proc */
  gatewayMemory(): { rss: number; peak: number };
  /**
   * On a shared rig, empties these upstream collections (a DELETE of each collection path): bulk that every later
   * file's tenantgate would otherwise load into its watch cache. Nothing on a rig of the file's own.
   */
  emptyOnSharedRig(collections: string[]): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The environment for a tenantgate child process: without tap's NODE_OPTIONS loaders and process tracking,
 * which would otherwise run inside tenantgate and distort its memory and speed.
 */
export function productionEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (key === 'NODE_OPTIONS' || key.startsWith('TAP') || key.startsWith('_TAPJS_') || key.startsWith('TS_NODE_')) continue;
    env[key] = value;
  }
  return env;
}

/** How long `tenantgate serve` may take to serve before a test gives up on it. */
const START_LIMIT_MS = 45_000;

/**
 * Starts `tenantgate serve` as its own process with these files; resolves once it serves. `nodeFlags` go to Node
 * before tenantgate's own (the bench's `--cpu-prof`); `cli` is another build's (a bench's before and after).
 */
export async function spawnGateway(
  files: GatewayFiles,
  extraArgs: string[],
  nodeFlags: string[] = [],
  cli: string = CLI,
): Promise<{ child: ChildProcess; url: string; metricsUrl: string; logs: string[] }> {
  const child = spawn(process.execPath, [...TENANTGATE_NODE_FLAGS, ...nodeFlags, cli, 'serve', '--listen', '127.0.0.1:0', ...files.serveArgs, ...extraArgs], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: productionEnv(),
  });
  const lines = createInterface({ input: child.stderr! });
  const logs: string[] = [];
  lines.on('line', (line) => logs.length < 10_000 && logs.push(line));
  let metricsUrl = '';
  const url = await new Promise<string>((resolve, reject) => {
    // A hang guard, not a target: a replica restarted while others carry traffic on the 2-core machine has taken 9-16 s
    // (replicas-etcd-cluster reports it), and a kubelet's startup probe waits longer still.
    const timer = setTimeout(() => reject(new Error(`tenantgate did not start within ${START_LIMIT_MS / 1000} s`)), START_LIMIT_MS);
    // (After the lines already read: the reason is usually the last of them.)
    child.once('exit', (code) =>
      setImmediate(() => reject(new Error(`tenantgate exited with ${code} before serving; its last lines:\n${logs.slice(-5).join('\n')}`))),
    );
    lines.on('line', (line) => {
      try {
        const entry = JSON.parse(line) as { msg?: string; url?: string };
        if (entry.msg === 'tenantgate metrics' && entry.url !== undefined) metricsUrl = entry.url;
        if (entry.msg === 'tenantgate serving' && entry.url !== undefined) {
          clearTimeout(timer);
          resolve(entry.url);
        }
      } catch {
        // not a log line of ours
      }
    });
  });
  return { child, url, metricsUrl, logs };
}

export interface StackOptions {
  /**
   * 'shared' (the default): a rig borrowed for this file when the run shares rigs (npm test), else one of its own.
   * 'private': one of its own always, for a file that restarts the upstream or needs the cluster to itself; such a
   * file says why at its top.
   */
  rig?: 'shared' | 'private';
  /** kube-apiserver feature gates of a private rig (a shared rig has the defaults). */
  apiserverFeatureGates?: string[];
  passthrough?: boolean;
  controllers?: boolean;
  /** More `tenantgate serve` flags (e.g. flow-control bounds). */
  gatewayArgs?: string[];
  /** Node flags for the stack's tenantgate process (e.g. `--cpu-prof`). */
  gatewayNodeFlags?: string[];
}

export async function startStack(options: StackOptions = {}): Promise<Stack> {
  const controllers = options.controllers ?? true;
  const sharedRig = options.rig !== 'private' && options.apiserverFeatureGates === undefined && sharedRigsOffered();
  const rig = sharedRig ? await borrowRig(controllers) : await startRig({ controllers, apiserverFeatureGates: options.apiserverFeatureGates });
  const dir = mkdtempSync(join(tmpdir(), 'tenantgate-test-'));
  // A store of its own on a shared rig: the tenants of the files before it are not this tenantgate's.
  const files = writeGatewayFiles(dir, rig, sharedRig ? `/tenantgate-test/${basename(dir)}/tenants/` : undefined);
  // Confined as a deployment should be: tenant identities get no upstream discovery (tenantgate reads it itself).
  // (Not with --passthrough: its tenants' requests reach the upstream as they are, discovery included.)
  const extraArgs = [...(options.passthrough === true ? ['--passthrough'] : ['--confine-upstream-discovery']), ...(options.gatewayArgs ?? [])];
  const { child, url, metricsUrl, logs } = await spawnGateway(files, extraArgs, options.gatewayNodeFlags);
  const adminKubeconfig = writeClientKubeconfig(join(dir, 'admin.kubeconfig'), url, files.ca, DEV_ADMIN);
  let counter = 0;
  const tenants = new Map<string, Tenant>();
  const stack: Stack = {
    rig,
    sharedRig,
    dir,
    tenants,
    files,
    gatewayUrl: url,
    metricsUrl,
    gateway: child,
    gatewayLogs: logs,
    adminKubeconfig,
    upstreamKubeconfig: files.upstreamKubeconfigPath,
    kubectl: (args, o = {}) => rig.kubectl(args, { kubeconfig: o.kubeconfig ?? adminKubeconfig, input: o.input }),
    kubectlDirect: (args, o = {}) => rig.kubectl(args, { kubeconfig: files.upstreamKubeconfigPath, input: o.input }),
    kubeconfigFor: (identity) => {
      const tenant = identity.tenant === null ? undefined : tenants.get(identity.tenant);
      const serial = tenant === undefined ? undefined : tenantCertificateSerial(tenant);
      return writeClientKubeconfig(join(dir, `client-${++counter}.kubeconfig`), url, files.ca, identity, serial);
    },
    gatewayMemory() {
      const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
      return { rss: kb('VmRSS'), peak: kb('VmHWM') };
    },
    async emptyOnSharedRig(collections) {
      if (!sharedRig) return;
      for (const collection of collections) {
        const emptied = await stack.kubectlDirect(['delete', '--raw', collection]);
        if (emptied.code !== 0) throw new Error(`emptying ${collection}: ${emptied.stderr}`);
      }
    },
    async stop() {
      await stopChild(child);
      await rig.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return stack;
}

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

// Provides the helm binary and the prometheus-operator ServiceMonitor CRD the chart's tests need: helm is built once
// from its published Go module, the CRD copied once from the operator's module, both cached beside the rig's binaries.
// Never builds inside a module of ours: helm is compiled in its own downloaded module with its own go.sum, untouched.
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { rigCacheDir } from './build.ts';
import { runCommand, startSupervised, tailFile } from './process.ts';

/** The one place helm's and the CRD's versions are pinned; each is part of its cache path. */
export const HELM_VERSION = 'v3.22.0';
const HELM_MODULE = 'helm.sh/helm/v3';
/** The newest release of the operator's root module the Go proxy serves (v0.95.x is refused with 403). */
export const PROMETHEUS_OPERATOR_VERSION = 'v0.94.0';
const PROMETHEUS_OPERATOR_MODULE = 'github.com/prometheus-operator/prometheus-operator';
const SERVICE_MONITOR_CRD_PATH = 'example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml';

const DOWNLOAD_TIMEOUT_MS = 15 * 60_000;
const BUILD_HEARTBEAT_MS = 60_000;

export interface EnsureHelmOptions {
  log?: (line: string) => void;
}

function helmCacheDir(): string {
  return join(rigCacheDir(), `helm-${HELM_VERSION}`);
}

/** Builds in the module's own directory: -mod=readonly keeps go from editing a module-cache directory (it cannot anyway). */
function moduleBuildEnvironment(): NodeJS.ProcessEnv {
  return { ...process.env, GOFLAGS: '-mod=readonly', GO111MODULE: 'on', GOWORK: 'off' };
}

interface DownloadedModule {
  Dir: string;
  GoMod: string;
}

async function downloadModule(module: string, version: string): Promise<DownloadedModule> {
  const result = await runCommand('go', ['mod', 'download', '-json', `${module}@${version}`], {
    env: moduleBuildEnvironment(),
    timeoutMs: DOWNLOAD_TIMEOUT_MS,
  }).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT')
      throw new Error(`helm: cannot download ${module}@${version}: \`go\` is not on PATH; install Go or set TENANTGATE_HELM to a helm ${HELM_VERSION}`);
    throw error;
  });
  const parsed = JSON.parse(result.stdout || '{}') as Partial<DownloadedModule> & { Error?: string };
  if (result.code !== 0 || parsed.Dir === undefined || parsed.GoMod === undefined) {
    throw new Error(`helm: go mod download ${module}@${version} failed: ${parsed.Error ?? result.stderr.slice(-2000)}`);
  }
  return { Dir: parsed.Dir, GoMod: parsed.GoMod };
}

/** helm's Makefile stamps its version and the Kubernetes version `helm template` and `helm lint` assume (from client-go). */
function helmLdflags(helmGoMod: string): string {
  const clientGo = /^\s*k8s\.io\/client-go\s+v0\.(\d+)\.\d+/m.exec(helmGoMod);
  const flags = ['-s', '-w', `-X ${HELM_MODULE}/internal/version.version=${HELM_VERSION}`, `-X ${HELM_MODULE}/internal/version.gitTreeState=clean`];
  if (clientGo !== null) {
    for (const pkg of ['pkg/lint/rules', 'pkg/chartutil'])
      flags.push(`-X ${HELM_MODULE}/${pkg}.k8sVersionMajor=1`, `-X ${HELM_MODULE}/${pkg}.k8sVersionMinor=${clientGo[1]}`);
  }
  return flags.join(' ');
}

async function reportsPinnedVersion(path: string): Promise<boolean> {
  if (!existsSync(path)) return false;
  const result = await runCommand(path, ['version', '--short'], { timeoutMs: 20_000 }).catch(() => undefined);
  return result?.code === 0 && result.stdout.trim().startsWith(HELM_VERSION);
}

/**
 * Returns the path of a helm HELM_VERSION binary: TENANTGATE_HELM if set, else the cached build, else a fresh build
 * (cold: a few minutes on two cores). Concurrent first callers each build and the last rename wins: Go's build cache
 * makes the second build cheap, and the binary appears only whole.
 */
export async function ensureHelm(options: EnsureHelmOptions = {}): Promise<string> {
  const log = options.log ?? (() => {});
  const override = process.env.TENANTGATE_HELM;
  if (override !== undefined && override !== '') {
    if (!(await reportsPinnedVersion(override))) throw new Error(`TENANTGATE_HELM=${override}: not a runnable helm ${HELM_VERSION}`);
    return override;
  }
  const dir = helmCacheDir();
  const binary = join(dir, 'helm');
  if (await reportsPinnedVersion(binary)) return binary;
  await mkdir(dir, { recursive: true });
  const started = Date.now();
  log(`helm: building ${HELM_MODULE}/cmd/helm ${HELM_VERSION} into ${dir}`);
  const module = await downloadModule(HELM_MODULE, HELM_VERSION);
  const logPath = join(dir, 'build.log');
  await writeFile(logPath, '');
  const partial = join(dir, `.partial-helm-${process.pid}`);
  const heartbeat = setInterval(() => log(`helm: still building (${Math.round((Date.now() - started) / 60_000)} min)`), BUILD_HEARTBEAT_MS);
  try {
    // Under the rig's watchdog, so a killed Node does not leave a compiler running.
    const build = await startSupervised(
      'go-build-helm',
      'go',
      ['build', '-trimpath', '-ldflags', helmLdflags(await readFile(module.GoMod, 'utf8')), '-o', partial, './cmd/helm'],
      {
        cwd: module.Dir,
        env: moduleBuildEnvironment(),
        logPath,
      },
    );
    const status = await build.exited;
    if (status.code !== 0) throw new Error(`helm: go build failed (${status.code ?? status.signal}); last lines of ${logPath}:\n${tailFile(logPath)}`);
    await rename(partial, binary);
  } finally {
    clearInterval(heartbeat);
    await rm(partial, { force: true });
  }
  if (!(await reportsPinnedVersion(binary))) throw new Error(`helm: built ${binary} but it does not report ${HELM_VERSION}; see ${logPath}`);
  log(`helm: built ${HELM_VERSION} in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  return binary;
}

/** The real ServiceMonitor CRD of prometheus-operator PROMETHEUS_OPERATOR_VERSION, copied once from its Go module. */
export async function ensureServiceMonitorCrd(options: EnsureHelmOptions = {}): Promise<string> {
  const log = options.log ?? (() => {});
  const cached = join(rigCacheDir(), `prometheus-operator-${PROMETHEUS_OPERATOR_VERSION}`, 'servicemonitors-crd.yaml');
  if (existsSync(cached)) return cached;
  log(`helm: fetching the ServiceMonitor CRD from ${PROMETHEUS_OPERATOR_MODULE}@${PROMETHEUS_OPERATOR_VERSION}`);
  const module = await downloadModule(PROMETHEUS_OPERATOR_MODULE, PROMETHEUS_OPERATOR_VERSION);
  await mkdir(join(cached, '..'), { recursive: true });
  const partial = `${cached}.partial-${process.pid}`;
  await copyFile(join(module.Dir, SERVICE_MONITOR_CRD_PATH), partial);
  await rename(partial, cached);
  return cached;
}

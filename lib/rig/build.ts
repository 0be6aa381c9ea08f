// Provides the real etcd, kube-apiserver, kube-controller-manager and kubectl the test rig runs, and the e2e.test binary
// of the same Kubernetes: built once from the published Go modules at the versions pinned below, cached per version.
import { existsSync, rmSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { isProcessAlive, runCommand, startSupervised, tailFile } from './process.ts';

/** The one place the rig's versions are pinned. */
export const RIG_VERSIONS = {
  kubernetes: 'v1.36.3',
  etcd: 'v3.6.8',
} as const;

export interface RigBinaries {
  etcd: string;
  kubeApiserver: string;
  kubeControllerManager: string;
  kubectl: string;
  kubernetesVersion: string;
  etcdVersion: string;
}

export interface EnsureRigBinariesOptions {
  log?: (line: string) => void;
}

type BinaryKey = 'etcd' | 'kubeApiserver' | 'kubeControllerManager' | 'kubectl';

interface BinarySpec {
  key: BinaryKey;
  fileName: string;
  goPackage: string;
  envVar: string;
  versionArgs: string[];
  expectedVersion: string;
}

const BINARIES: readonly BinarySpec[] = [
  {
    key: 'kubeApiserver',
    fileName: 'kube-apiserver',
    goPackage: 'k8s.io/kubernetes/cmd/kube-apiserver',
    envVar: 'TENANTGATE_KUBE_APISERVER',
    versionArgs: ['--version'],
    expectedVersion: RIG_VERSIONS.kubernetes,
  },
  {
    key: 'kubeControllerManager',
    fileName: 'kube-controller-manager',
    goPackage: 'k8s.io/kubernetes/cmd/kube-controller-manager',
    envVar: 'TENANTGATE_KUBE_CONTROLLER_MANAGER',
    versionArgs: ['--version'],
    expectedVersion: RIG_VERSIONS.kubernetes,
  },
  {
    key: 'kubectl',
    fileName: 'kubectl',
    goPackage: 'k8s.io/kubernetes/cmd/kubectl',
    envVar: 'TENANTGATE_KUBECTL',
    versionArgs: ['version', '--client'],
    expectedVersion: RIG_VERSIONS.kubernetes,
  },
  {
    key: 'etcd',
    fileName: 'etcd',
    goPackage: 'go.etcd.io/etcd/server/v3',
    envVar: 'TENANTGATE_ETCD',
    versionArgs: ['--version'],
    expectedVersion: RIG_VERSIONS.etcd,
  },
];

const KUBERNETES_MODULE = 'k8s.io/kubernetes';
const ETCD_SERVER_MODULE = 'go.etcd.io/etcd/server/v3';
const LOCK_WAIT_LIMIT_MS = 90 * 60_000; // a cold build on two cores takes tens of minutes
const LOCK_POLL_MS = 2_000;
const BUILD_HEARTBEAT_MS = 60_000;

export function rigCacheDir(): string {
  const base = process.env.TENANTGATE_CACHE_DIR ?? join(homedir(), '.cache', 'tenantgate');
  return join(base, 'rig', `k8s-${RIG_VERSIONS.kubernetes}-etcd-${RIG_VERSIONS.etcd}`);
}

/** The staging modules (k8s.io/api, client-go, …) are published as v0.<minor>.<patch> for Kubernetes v1.<minor>.<patch>. */
function stagingVersion(kubernetesVersion: string): string {
  return kubernetesVersion.replace(/^v1\./, 'v0.');
}

function versionLdflags(): string {
  const [major, minor] = RIG_VERSIONS.kubernetes.replace(/^v/, '').split('.');
  const flags = ['-s', '-w'];
  // Kubernetes' own build (hack/lib/version.sh) stamps both packages: servers report one, kubectl the other.
  for (const pkg of ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version']) {
    flags.push(`-X ${pkg}.gitVersion=${RIG_VERSIONS.kubernetes}`, `-X ${pkg}.gitMajor=${major}`, `-X ${pkg}.gitMinor=${minor}`, `-X ${pkg}.gitTreeState=clean`);
  }
  return flags.join(' ');
}

/** Runs `binary <versionArgs>` and returns the first version number it prints, as vX.Y.Z; undefined if it won't run. */
async function probeVersion(path: string, spec: BinarySpec): Promise<string | undefined> {
  if (!existsSync(path)) return undefined;
  try {
    const result = await runCommand(path, spec.versionArgs, { timeoutMs: 20_000 });
    if (result.code !== 0) return undefined;
    const match = /\bv?(\d+\.\d+\.\d+\S*)/.exec(result.stdout);
    return match === null ? undefined : `v${match[1]}`;
  } catch {
    return undefined;
  }
}

interface Resolved {
  path: string;
  version: string;
}

/** Env-var overrides must run; cached builds must also report the pinned version (else they are rebuilt). */
async function resolveExisting(binDir: string): Promise<Map<BinaryKey, Resolved>> {
  const found = new Map<BinaryKey, Resolved>();
  await Promise.all(
    BINARIES.map(async (spec) => {
      const override = process.env[spec.envVar];
      if (override !== undefined && override !== '') {
        const version = await probeVersion(override, spec);
        if (version === undefined)
          throw new Error(`${spec.envVar}=${override}: not a runnable ${spec.fileName} (\`${spec.fileName} ${spec.versionArgs.join(' ')}\` failed)`);
        found.set(spec.key, { path: override, version });
        return;
      }
      const path = join(binDir, spec.fileName);
      const version = await probeVersion(path, spec);
      if (version === spec.expectedVersion) found.set(spec.key, { path, version });
    }),
  );
  return found;
}

function toRigBinaries(found: Map<BinaryKey, Resolved>): RigBinaries {
  const get = (key: BinaryKey) => found.get(key)!;
  return {
    etcd: get('etcd').path,
    kubeApiserver: get('kubeApiserver').path,
    kubeControllerManager: get('kubeControllerManager').path,
    kubectl: get('kubectl').path,
    kubernetesVersion: get('kubeApiserver').version,
    etcdVersion: get('etcd').version,
  };
}

/** An exclusive lock file holding our pid; a lock whose pid is dead is stale and taken over. */
async function acquireBuildLock(lockPath: string, log: (line: string) => void): Promise<() => Promise<void>> {
  const started = Date.now();
  let announced = false;
  for (;;) {
    try {
      const handle = await open(lockPath, 'wx');
      await handle.writeFile(`${process.pid}\n`);
      await handle.close();
      // Node can exit mid-build (Ctrl+C): leave no lock naming a dead pid behind if we can help it.
      const removeOnExit = () => {
        try {
          rmSync(lockPath, { force: true });
        } catch {
          // best effort
        }
      };
      process.once('exit', removeOnExit);
      return async () => {
        process.off('exit', removeOnExit);
        await rm(lockPath, { force: true });
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = Number((await readFile(lockPath, 'utf8').catch(() => '')).trim());
    if (!Number.isInteger(holder) || holder <= 0 || !isProcessAlive(holder)) {
      log(`rig: removing stale build lock ${lockPath}`);
      await rm(lockPath, { force: true });
      continue;
    }
    if (!announced) {
      log(`rig: waiting for the build running in pid ${holder} (lock ${lockPath})`);
      announced = true;
    }
    if (Date.now() - started > LOCK_WAIT_LIMIT_MS)
      throw new Error(`rig: gave up waiting ${LOCK_WAIT_LIMIT_MS / 60_000} min for the build lock ${lockPath} held by pid ${holder}`);
    await new Promise((resolve) => setTimeout(resolve, LOCK_POLL_MS));
  }
}

async function requireGo(): Promise<string> {
  try {
    const result = await runCommand('go', ['version'], { timeoutMs: 30_000 });
    if (result.code !== 0) throw new Error(result.stderr.trim());
    return result.stdout.trim();
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? '`go` is not on PATH' : `\`go version\` failed: ${(error as Error).message}`;
    throw new Error(
      `rig: cannot build Kubernetes ${RIG_VERSIONS.kubernetes} and etcd ${RIG_VERSIONS.etcd}: ${reason}. ` +
        `Install Go (https://go.dev/dl/), or point ${BINARIES.map((b) => b.envVar).join(', ')} at existing binaries.`,
      { cause: error },
    );
  }
}

function goEnvironment(): NodeJS.ProcessEnv {
  // -mod=mod lets go fill in go.sum and indirect requirements of the generated module by itself.
  return { ...process.env, GOFLAGS: '-mod=mod', GO111MODULE: 'on', GOWORK: 'off' };
}

/** Writes a module requiring k8s.io/kubernetes and etcd server, with every staging module replaced by its published version. */
async function writeWrapperModule(moduleDir: string, log: (line: string) => void): Promise<void> {
  await mkdir(moduleDir, { recursive: true });
  log(`rig: go mod download ${KUBERNETES_MODULE}@${RIG_VERSIONS.kubernetes} (reads its go.mod for the staging modules)`);
  const download = await runCommand('go', ['mod', 'download', '-json', `${KUBERNETES_MODULE}@${RIG_VERSIONS.kubernetes}`], {
    cwd: moduleDir,
    env: goEnvironment(),
    timeoutMs: 30 * 60_000,
  });
  if (download.code !== 0)
    throw new Error(
      `rig: go mod download ${KUBERNETES_MODULE}@${RIG_VERSIONS.kubernetes} failed:\n${download.stderr.slice(-4000)}${download.stdout.slice(-2000)}`,
    );
  const { GoMod: goModPath } = JSON.parse(download.stdout) as { GoMod: string };
  const kubernetesGoMod = await readFile(goModPath, 'utf8');
  // Kubernetes requires its staging modules at the placeholder v0.0.0 and points them at ./staging/src in its own replaces.
  const staging = [...kubernetesGoMod.matchAll(/^\s*(?:require\s+)?(k8s\.io\/\S+)\s+v0\.0\.0\s*(?:\/\/.*)?$/gm)].map((m) => m[1]!);
  if (staging.length === 0) throw new Error(`rig: found no k8s.io/* v0.0.0 requirements in ${goModPath}`);
  const goDirective = /^go\s+(\S+)\s*$/m.exec(kubernetesGoMod)?.[1] ?? '1.26.0';
  const published = stagingVersion(RIG_VERSIONS.kubernetes);
  const goMod = [
    `// Generated by tenantgate's lib/rig/build.ts to build Kubernetes ${RIG_VERSIONS.kubernetes} and etcd ${RIG_VERSIONS.etcd}; rewritten on each build.`,
    'module tenantgate.local/rig',
    '',
    `go ${goDirective}`,
    '',
    'require (',
    `\t${KUBERNETES_MODULE} ${RIG_VERSIONS.kubernetes}`,
    `\t${ETCD_SERVER_MODULE} ${RIG_VERSIONS.etcd}`,
    ')',
    '',
    'replace (',
    ...staging.map((module) => `\t${module} => ${module} ${published}`),
    ')',
    '',
  ].join('\n');
  await writeFile(join(moduleDir, 'go.mod'), goMod);
  log(`rig: wrote ${join(moduleDir, 'go.mod')} (${staging.length} staging modules replaced with ${published})`);
}

async function buildBinaries(specs: BinarySpec[], cacheDir: string, log: (line: string) => void): Promise<void> {
  const goVersion = await requireGo();
  const binDir = join(cacheDir, 'bin');
  const moduleDir = join(cacheDir, 'module');
  await mkdir(binDir, { recursive: true });
  // We hold the lock, so any partial output is from a build that was interrupted.
  for (const name of await readdir(binDir)) if (name.startsWith('.partial-')) await rm(join(binDir, name), { force: true });
  log(`rig: building ${specs.map((s) => s.fileName).join(', ')} with ${goVersion} (cold: tens of minutes on two cores; later builds reuse Go's caches)`);
  const buildStarted = Date.now();
  await writeWrapperModule(moduleDir, log);
  const logPath = join(cacheDir, 'build.log');
  await writeFile(logPath, '');
  for (const spec of specs) {
    const started = Date.now();
    const partial = join(binDir, `.partial-${spec.fileName}-${process.pid}`);
    log(`rig: go build ${spec.goPackage} (output in ${logPath})`);
    const heartbeat = setInterval(() => log(`rig: still building ${spec.fileName} (${Math.round((Date.now() - started) / 60_000)} min)`), BUILD_HEARTBEAT_MS);
    try {
      // Under the watchdog, so a killed Node does not leave a compiler running.
      const build = await startSupervised(`go-build-${spec.fileName}`, 'go', ['build', '-ldflags', versionLdflags(), '-o', partial, spec.goPackage], {
        cwd: moduleDir,
        env: goEnvironment(),
        logPath,
      });
      const status = await build.exited;
      if (status.code !== 0)
        throw new Error(`rig: go build ${spec.goPackage} failed (${status.code ?? status.signal}); last lines of ${logPath}:\n${tailFile(logPath)}`);
    } finally {
      clearInterval(heartbeat);
    }
    await rename(partial, join(binDir, spec.fileName));
    log(`rig: built ${spec.fileName} in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  }
  log(`rig: build finished in ${((Date.now() - buildStarted) / 1000).toFixed(1)}s`);
}

/**
 * The Kubernetes e2e suite (`go test -c k8s.io/kubernetes/test/e2e`) of RIG_VERSIONS.kubernetes, built in the rig's own
 * module and cache directory (so both use one Kubernetes), once; `TENANTGATE_E2E_TEST` points at an existing build.
 */
export async function ensureE2eTestBinary(options: EnsureRigBinariesOptions = {}): Promise<string> {
  const log = options.log ?? (() => {});
  const override = process.env.TENANTGATE_E2E_TEST;
  if (override !== undefined && override !== '') return override;
  const cacheDir = rigCacheDir();
  const binDir = join(cacheDir, 'bin');
  const binary = join(binDir, 'e2e.test');
  // The directory is per version and the binary appears only by rename, so its presence means a finished build.
  if (existsSync(binary)) return binary;
  await mkdir(binDir, { recursive: true });
  const release = await acquireBuildLock(join(cacheDir, 'build.lock'), log);
  try {
    if (existsSync(binary)) return binary;
    const goVersion = await requireGo();
    const moduleDir = join(cacheDir, 'module');
    await writeWrapperModule(moduleDir, log);
    const logPath = join(cacheDir, 'e2e-build.log');
    await writeFile(logPath, '');
    const partial = join(binDir, `.partial-e2e.test-${process.pid}`);
    const started = Date.now();
    log(`rig: go test -c k8s.io/kubernetes/test/e2e with ${goVersion} (cold: about 10 minutes on two cores; output in ${logPath})`);
    const heartbeat = setInterval(() => log(`rig: still building e2e.test (${Math.round((Date.now() - started) / 60_000)} min)`), BUILD_HEARTBEAT_MS);
    try {
      const build = await startSupervised(
        'go-test-e2e',
        'go',
        ['test', '-c', '-vet=off', '-ldflags', versionLdflags(), '-o', partial, 'k8s.io/kubernetes/test/e2e'],
        {
          cwd: moduleDir,
          env: goEnvironment(),
          logPath,
        },
      );
      const status = await build.exited;
      if (status.code !== 0)
        throw new Error(`rig: go test -c k8s.io/kubernetes/test/e2e failed (${status.code ?? status.signal}); last lines of ${logPath}:\n${tailFile(logPath)}`);
    } finally {
      clearInterval(heartbeat);
    }
    await rename(partial, binary);
    log(`rig: built e2e.test in ${((Date.now() - started) / 1000).toFixed(1)}s`);
    return binary;
  } finally {
    await release();
  }
}

/** Returns runnable binaries, building (and caching) whichever are missing; concurrent callers wait for one build. */
export async function ensureRigBinaries(options: EnsureRigBinariesOptions = {}): Promise<RigBinaries> {
  const log = options.log ?? (() => {});
  const cacheDir = rigCacheDir();
  const binDir = join(cacheDir, 'bin');
  const started = Date.now();
  let found = await resolveExisting(binDir);
  if (found.size === BINARIES.length) {
    log(`rig: using cached binaries in ${binDir} (checked in ${Date.now() - started} ms)`);
    return toRigBinaries(found);
  }
  await mkdir(cacheDir, { recursive: true });
  const release = await acquireBuildLock(join(cacheDir, 'build.lock'), log);
  try {
    found = await resolveExisting(binDir); // another process may have built them while we waited
    const missing = BINARIES.filter((spec) => !found.has(spec.key));
    if (missing.length > 0) {
      await buildBinaries(missing, cacheDir, log);
      found = await resolveExisting(binDir);
      const broken = BINARIES.filter((spec) => !found.has(spec.key));
      if (broken.length > 0) {
        throw new Error(
          `rig: built ${broken.map((b) => b.fileName).join(', ')} but they do not report ${broken.map((b) => b.expectedVersion).join(', ')}; see ${join(cacheDir, 'build.log')}`,
        );
      }
    }
  } finally {
    await release();
  }
  return toRigBinaries(found);
}

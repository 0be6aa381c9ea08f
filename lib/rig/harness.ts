// Starts a throwaway Kubernetes control plane on loopback (etcd, kube-apiserver, optionally kube-controller-manager)
// with fresh certificates, for tests and `tenantgate dev`; stops every process it started, however Node ends.
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createCertificateAuthority, issueCertificate } from '../auth/pki.ts';
import { renderKubeconfig, type ClusterCredentials } from '../upstream/kubeconfig.ts';
import { ensureRigBinaries, type RigBinaries } from './build.ts';
import { runCommand, startSupervised, tailFile, type CommandResult, type SupervisedProcess } from './process.ts';

export interface StartRigOptions {
  /** Run kube-controller-manager too (namespace deletion, garbage collection, default ServiceAccounts). Default true. */
  controllers?: boolean;
  log?: (line: string) => void;
  /** Directory for certificates, etcd data (emptied at start) and logs; kept after stop(). Default: a temp dir that stop() removes. */
  dir?: string;
  /** kube-apiserver feature gates besides its defaults, e.g. `CBORServingAndStorage=true`. */
  apiserverFeatureGates?: string[];
}

export interface KubectlOptions {
  /** Default: the rig's admin kubeconfig. */
  kubeconfig?: string;
  input?: string;
  timeoutMs?: number;
}

export interface RigProcess {
  name: string;
  pid: number;
  logPath: string;
}

export interface Rig {
  dir: string;
  binaries: RigBinaries;
  /** http://127.0.0.1:port */
  etcdEndpoint: string;
  /** https://127.0.0.1:port of kube-apiserver */
  server: string;
  /** CA that signed the apiserver's serving certificate and that the apiserver trusts for client certificates. */
  caPem: string;
  /** CN=rig-admin, O=system:masters. */
  admin: ClusterCredentials;
  adminKubeconfigPath: string;
  processes: RigProcess[];
  kubectl(args: string[], options?: KubectlOptions): Promise<CommandResult>;
  /** Stops kube-apiserver: 'graceful' (SIGTERM: it sends GOAWAY and drains) or 'crash' (SIGKILL). */
  stopApiserver(how: 'graceful' | 'crash'): Promise<void>;
  /** Starts kube-apiserver again on the same address and waits until it is ready. */
  startApiserver(): Promise<void>;
  stop(): Promise<void>;
}

const ETCD_READY_TIMEOUT_MS = 30_000;
const APISERVER_READY_TIMEOUT_MS = 120_000;
const CONTROLLERS_READY_TIMEOUT_MS = 120_000;
const POLL_INTERVAL_MS = 200;
const SERVICE_CLUSTER_IP_RANGE = '10.0.0.0/16'; // room for a default/kubernetes Service per tenant: the bench makes 1,000 tenants
const SERVICE_ACCOUNT_ISSUER = 'https://kubernetes.default.svc.cluster.local';
const APISERVER_DNS_NAMES = ['localhost', 'kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local'];
const APISERVER_IPS = ['127.0.0.1', '10.0.0.1']; // 10.0.0.1: first address of the service range, the `kubernetes` Service

/** A free loopback port: listen on port 0 and give it back. (Another process could take it before we use it; unlikely.) */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolvePort(address.port) : reject(new Error('no port'))));
    });
  });
}

interface HttpResult {
  status: number;
  body: string;
}

function httpGet(url: string, credentials?: ClusterCredentials): Promise<HttpResult> {
  return new Promise((resolveResult, reject) => {
    const tls = credentials === undefined ? {} : { ca: credentials.caPem, cert: credentials.certPem, key: credentials.keyPem };
    const send = url.startsWith('https:') ? httpsRequest : httpRequest;
    const req = send(url, { method: 'GET', timeout: 5_000, ...tls }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolveResult({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('request timed out')));
    req.on('error', reject);
    req.end();
  });
}

/** Polls `check` until it returns true; fails early if the process exits, and with its log's tail on timeout. */
async function waitUntil(what: string, target: SupervisedProcess, timeoutMs: number, check: () => Promise<boolean | string>): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'not checked yet';
  for (;;) {
    if (target.hasExited()) {
      const status = await target.exited;
      throw new Error(
        `rig: ${target.name} exited (${status.code ?? status.signal}) while waiting for ${what}. Last lines of ${target.logPath}:\n${tailFile(target.logPath)}`,
      );
    }
    try {
      const outcome = await check();
      if (outcome === true) return;
      if (typeof outcome === 'string') last = outcome;
    } catch (error) {
      last = (error as Error).message;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `rig: timed out after ${timeoutMs / 1000}s waiting for ${what} (last: ${last}). Last lines of ${target.logPath}:\n${tailFile(target.logPath)}`,
      );
    }
    await new Promise((r) => setTimeout(r, POLL_INTERVAL_MS));
  }
}

const liveRigs = new Set<Rig>();
const ownedTempDirs = new Set<string>();
let signalHooksInstalled = false;
let exitHookInstalled = false;

/**
 * On SIGINT/SIGTERM stop every rig. Listening to a signal cancels Node's default exit, so afterwards re-raise it,
 * unless another listener (say, a CLI's own shutdown) was still registered when it arrived.
 */
function installShutdownHooks(): void {
  if (!signalHooksInstalled) {
    signalHooksInstalled = true;
    const onSignal = (signal: NodeJS.Signals) => {
      const othersListening = process.listeners(signal).some((listener) => listener !== onSignal);
      void Promise.allSettled([...liveRigs].map((rig) => rig.stop())).then(() => {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        signalHooksInstalled = false;
        // setImmediate: a handler that awaited the same stop() (to exit 0, say) gets to run first.
        if (!othersListening) setImmediate(() => process.listenerCount(signal) === 0 && process.kill(process.pid, signal));
      });
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  }
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    // The processes get SIGTERM from process.ts's exit hook; 'exit' cannot wait for them, so remove what we can.
    process.on('exit', () => {
      for (const dir of ownedTempDirs) {
        try {
          rmSync(dir, { recursive: true, force: true, maxRetries: 2 });
        } catch {
          // a process still writing there; the OS's temp cleaning gets it
        }
      }
    });
  }
}

function writePrivate(path: string, text: string): string {
  writeFileSync(path, text, { mode: 0o600 });
  return path;
}

interface RigFiles {
  caCert: string;
  caKey: string;
  apiserverCert: string;
  apiserverKey: string;
  serviceAccountKey: string;
  serviceAccountPublicKey: string;
  caPem: string;
  admin: { certPem: string; keyPem: string };
  controllerManager: { certPem: string; keyPem: string };
}

function writeCertificates(dir: string): RigFiles {
  const ca = createCertificateAuthority('tenantgate-rig-ca');
  const apiserver = issueCertificate(ca, { commonName: 'kube-apiserver', dnsNames: APISERVER_DNS_NAMES, ipAddresses: APISERVER_IPS, usage: 'server' });
  const admin = issueCertificate(ca, { commonName: 'rig-admin', organizations: ['system:masters'], usage: 'client' });
  const controllerManager = issueCertificate(ca, { commonName: 'system:kube-controller-manager', usage: 'client' });
  const serviceAccount = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return {
    caCert: writePrivate(join(dir, 'ca.crt'), ca.certPem),
    caKey: writePrivate(join(dir, 'ca.key'), ca.keyPem),
    apiserverCert: writePrivate(join(dir, 'apiserver.crt'), apiserver.certPem),
    apiserverKey: writePrivate(join(dir, 'apiserver.key'), apiserver.keyPem),
    serviceAccountKey: writePrivate(join(dir, 'service-account.key'), serviceAccount.privateKey),
    serviceAccountPublicKey: writePrivate(join(dir, 'service-account.pub'), serviceAccount.publicKey),
    caPem: ca.certPem,
    admin,
    controllerManager,
  };
}

function etcdArgs(dataDir: string, clientUrl: string, peerUrl: string): string[] {
  return [
    '--name=rig',
    `--data-dir=${dataDir}`,
    `--listen-client-urls=${clientUrl}`,
    `--advertise-client-urls=${clientUrl}`,
    `--listen-peer-urls=${peerUrl}`,
    `--initial-advertise-peer-urls=${peerUrl}`,
    `--initial-cluster=rig=${peerUrl}`,
    '--initial-cluster-state=new',
    '--unsafe-no-fsync', // throwaway data: skip fsync for speed
    // A single member elects itself after one election timeout: 0.5 s instead of the default 1 s. Every heartbeat
    // tick costs CPU at rest: an idle etcd used 22-27 millicores at 10 ms ticks, 8.5 at 50 ms (ready in 0.3-0.5 s).
    '--heartbeat-interval=50',
    '--election-timeout=500',
  ];
}

function apiserverArgs(files: RigFiles, etcdEndpoint: string, port: number, featureGates: readonly string[]): string[] {
  return [
    ...(featureGates.length === 0 ? [] : [`--feature-gates=${featureGates.join(',')}`]),
    `--etcd-servers=${etcdEndpoint}`,
    '--bind-address=127.0.0.1',
    '--advertise-address=127.0.0.1',
    `--secure-port=${port}`,
    `--tls-cert-file=${files.apiserverCert}`,
    `--tls-private-key-file=${files.apiserverKey}`,
    `--client-ca-file=${files.caCert}`,
    '--authorization-mode=RBAC',
    `--service-account-issuer=${SERVICE_ACCOUNT_ISSUER}`,
    `--service-account-key-file=${files.serviceAccountPublicKey}`,
    `--service-account-signing-key-file=${files.serviceAccountKey}`,
    `--service-cluster-ip-range=${SERVICE_CLUSTER_IP_RANGE}`,
    '--endpoint-reconciler-type=none', // no endpoints for the `kubernetes` Service: a loopback address is not allowed there
    '--shutdown-delay-duration=0s',
    '--allow-privileged=true',
  ];
}

function controllerManagerArgs(files: RigFiles, kubeconfigPath: string): string[] {
  return [
    `--kubeconfig=${kubeconfigPath}`,
    `--service-account-private-key-file=${files.serviceAccountKey}`,
    `--root-ca-file=${files.caCert}`,
    '--use-service-account-credentials=true',
    `--cluster-signing-cert-file=${files.caCert}`,
    `--cluster-signing-key-file=${files.caKey}`,
    '--leader-elect=false',
    '--secure-port=0', // no serving endpoint: readiness is judged through the apiserver
  ];
}

function waitForEtcd(etcd: SupervisedProcess, endpoint: string): Promise<void> {
  return waitUntil('etcd /health', etcd, ETCD_READY_TIMEOUT_MS, async () => {
    const { status, body } = await httpGet(`${endpoint}/health`);
    return status === 200 && body.includes('"true"') ? true : `${status} ${body}`;
  });
}

export interface StandaloneEtcd {
  /** http://127.0.0.1:port, the same across restarts. */
  endpoint: string;
  /** Stops etcd ('crash': SIGKILL); its data stays. */
  stop(how?: 'graceful' | 'crash'): Promise<void>;
  /** Starts it again on the same data and port, and waits until it is healthy. */
  start(): Promise<void>;
}

/** etcd alone (for the tenant store's tests), with its data in `dir`/etcd-data, which it empties first. */
export async function startEtcd(dir: string): Promise<StandaloneEtcd> {
  const binaries = await ensureRigBinaries();
  installShutdownHooks();
  const dataDir = join(dir, 'etcd-data');
  rmSync(dataDir, { recursive: true, force: true });
  const [clientPort, peerPort] = await Promise.all([freePort(), freePort()]);
  const endpoint = `http://127.0.0.1:${clientPort}`;
  const args = etcdArgs(dataDir, endpoint, `http://127.0.0.1:${peerPort}`);
  let etcd: SupervisedProcess | undefined;
  const start = async () => {
    etcd = await startSupervised('etcd', binaries.etcd, args, { logPath: join(dir, 'etcd.log') });
    await waitForEtcd(etcd, endpoint);
  };
  const stop = async (how: 'graceful' | 'crash' = 'graceful') => {
    const running = etcd;
    etcd = undefined;
    if (running === undefined) return;
    if (how === 'crash') process.kill(running.pid, 'SIGKILL');
    await running.stop();
  };
  await start();
  return { endpoint, start, stop };
}

export interface EtcdMember {
  /** m0, m1, ... */
  name: string;
  /** http://127.0.0.1:port, the same across restarts. */
  endpoint: string;
  readonly running: boolean;
  /** Stops the member ('crash': SIGKILL); its data stays. */
  stop(how?: 'graceful' | 'crash'): Promise<void>;
  /** Starts it again on its data and ports (it rejoins the cluster), and waits until it is healthy. */
  start(): Promise<void>;
}

export interface EtcdCluster {
  members: EtcdMember[];
  /** Every member's client URL, for --etcd-endpoints. */
  endpoints: string[];
  /** The member that leads now, as the running members report it; undefined while none does. */
  leader(): Promise<EtcdMember | undefined>;
  stop(): Promise<void>;
}

/** What a member says of itself and of the leader (etcd's JSON gateway; ids are uint64s in decimal). */
async function etcdStatus(endpoint: string): Promise<{ memberId: string; leader: string }> {
  const body = await new Promise<string>((resolveBody, reject) => {
    const req = httpRequest(`${endpoint}/v3/maintenance/status`, { method: 'POST', timeout: 2_000, headers: { 'content-type': 'application/json' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => (res.statusCode === 200 ? resolveBody(text) : reject(new Error(`status ${res.statusCode}: ${text}`))));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end('{}');
  });
  const status = JSON.parse(body) as { header?: { member_id?: string }; leader?: string };
  return { memberId: status.header?.member_id ?? '', leader: status.leader ?? '0' };
}

/**
 * A cluster of `size` etcd members on loopback, from the rig's binary, its data in `dir`/<member> (emptied first).
 * Each member can be killed and started again; the cluster elects a leader among those running, as a real one does.
 */
export async function startEtcdCluster(dir: string, size = 3): Promise<EtcdCluster> {
  const binaries = await ensureRigBinaries();
  installShutdownHooks();
  const ports = await Promise.all(Array.from({ length: size * 2 }, () => freePort()));
  const names = Array.from({ length: size }, (_, i) => `m${i}`);
  const peerUrl = (i: number) => `http://127.0.0.1:${ports[size + i]}`;
  const initialCluster = names.map((name, i) => `${name}=${peerUrl(i)}`).join(',');
  const token = `tenantgate-${process.pid}-${Date.now()}`;
  const members = names.map((name, i) => {
    const endpoint = `http://127.0.0.1:${ports[i]}`;
    const dataDir = join(dir, name);
    rmSync(dataDir, { recursive: true, force: true });
    const args = [
      `--name=${name}`,
      `--data-dir=${dataDir}`,
      `--listen-client-urls=${endpoint}`,
      `--advertise-client-urls=${endpoint}`,
      `--listen-peer-urls=${peerUrl(i)}`,
      `--initial-advertise-peer-urls=${peerUrl(i)}`,
      `--initial-cluster=${initialCluster}`,
      '--initial-cluster-state=new', // ignored once the member has data: a restart rejoins
      `--initial-cluster-token=${token}`,
      '--unsafe-no-fsync', // throwaway data: skip fsync for speed
      // Shorter than etcd's defaults (100 ms, 1 s) but long enough not to elect by mistake on two busy cores.
      '--heartbeat-interval=50',
      '--election-timeout=500',
    ];
    let supervised: SupervisedProcess | undefined;
    const member: EtcdMember = {
      name,
      endpoint,
      get running() {
        return supervised !== undefined && !supervised.hasExited();
      },
      async start() {
        supervised = await startSupervised(`etcd-${name}`, binaries.etcd, args, { logPath: join(dir, `etcd-${name}.log`) });
        await waitForEtcd(supervised, endpoint);
      },
      async stop(how = 'graceful') {
        const running = supervised;
        supervised = undefined;
        if (running === undefined) return;
        if (how === 'crash') process.kill(running.pid, 'SIGKILL');
        await running.stop();
      },
    };
    return member;
  });
  // Started together: none is healthy before a quorum is up to elect a leader.
  await Promise.all(members.map((member) => member.start()));
  const ids = new Map<string, EtcdMember>();
  for (const member of members) ids.set((await etcdStatus(member.endpoint)).memberId, member);
  return {
    members,
    endpoints: members.map((member) => member.endpoint),
    async leader() {
      for (const member of members) {
        if (!member.running) continue;
        try {
          const { leader } = await etcdStatus(member.endpoint);
          const found = ids.get(leader);
          if (found !== undefined && found.running) return found;
        } catch {
          // this member cannot say: ask the next
        }
      }
      return undefined;
    },
    async stop() {
      await Promise.all(members.map((member) => member.stop()));
    },
  };
}

/** Starts etcd, kube-apiserver and (unless `controllers: false`) kube-controller-manager, and waits until they serve. */
export async function startRig(options: StartRigOptions = {}): Promise<Rig> {
  const log = options.log ?? (() => {});
  const withControllers = options.controllers ?? true;
  const binaries = await ensureRigBinaries({ log });
  const started = Date.now();
  installShutdownHooks();

  const ownsDir = options.dir === undefined;
  const dir = ownsDir ? mkdtempSync(join(tmpdir(), 'tenantgate-rig-')) : resolve(options.dir!);
  if (ownsDir) ownedTempDirs.add(dir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const etcdDataDir = join(dir, 'etcd-data');
  rmSync(etcdDataDir, { recursive: true, force: true }); // every rig starts from an empty cluster

  const processes: SupervisedProcess[] = [];
  let stopping: Promise<void> | undefined;
  const stopAll = () => {
    stopping ??= (async () => {
      // Reverse start order: controllers, then the apiserver, then its storage.
      for (const p of [...processes].reverse()) await p.stop();
      if (ownsDir) {
        rmSync(dir, { recursive: true, force: true, maxRetries: 2 });
        ownedTempDirs.delete(dir);
      }
    })();
    return stopping;
  };

  try {
    const [etcdClientPort, etcdPeerPort] = await Promise.all([freePort(), freePort()]);
    const etcdEndpoint = `http://127.0.0.1:${etcdClientPort}`;
    const etcd = await startSupervised('etcd', binaries.etcd, etcdArgs(etcdDataDir, etcdEndpoint, `http://127.0.0.1:${etcdPeerPort}`), {
      logPath: join(dir, 'etcd.log'),
    });
    processes.push(etcd);
    const files = writeCertificates(dir); // etcd needs none of them: make them (~0.7 s of RSA) while it starts
    await waitForEtcd(etcd, etcdEndpoint);
    log(`rig: etcd ${binaries.etcdVersion} ready at ${etcdEndpoint} (${Date.now() - started} ms)`);

    const apiserverPort = await freePort();
    const server = `https://127.0.0.1:${apiserverPort}`;
    const admin: ClusterCredentials = { server, caPem: files.caPem, certPem: files.admin.certPem, keyPem: files.admin.keyPem };
    const adminKubeconfigPath = writePrivate(join(dir, 'admin.kubeconfig'), renderKubeconfig(admin, 'rig'));
    // Started by a function of its own so tests can restart it on the same port (upstream restarts, GOAWAY).
    let apiserver: SupervisedProcess | undefined;
    const startApiserver = async () => {
      apiserver = await startSupervised(
        'kube-apiserver',
        binaries.kubeApiserver,
        apiserverArgs(files, etcdEndpoint, apiserverPort, options.apiserverFeatureGates ?? []),
        {
          logPath: join(dir, 'kube-apiserver.log'),
        },
      );
      processes.splice(1, 0, apiserver); // after etcd, before the controllers: stop order stays right
      await waitUntil('kube-apiserver /readyz', apiserver, APISERVER_READY_TIMEOUT_MS, async () => {
        const { status, body } = await httpGet(`${server}/readyz`, admin);
        return status === 200 ? true : `${status} ${body.slice(-500)}`;
      });
    };
    const stopApiserver = async (how: 'graceful' | 'crash') => {
      const running = apiserver;
      if (running === undefined) return;
      apiserver = undefined;
      if (how === 'crash') process.kill(running.pid, 'SIGKILL');
      await running.stop();
      processes.splice(processes.indexOf(running), 1);
    };
    await startApiserver();
    log(`rig: kube-apiserver ${binaries.kubernetesVersion} ready at ${server} (${Date.now() - started} ms)`);

    if (withControllers) {
      const kubeconfigPath = writePrivate(
        join(dir, 'kube-controller-manager.kubeconfig'),
        renderKubeconfig({ server, caPem: files.caPem, ...files.controllerManager }, 'rig'),
      );
      const controllerManager = await startSupervised('kube-controller-manager', binaries.kubeControllerManager, controllerManagerArgs(files, kubeconfigPath), {
        logPath: join(dir, 'kube-controller-manager.log'),
      });
      processes.push(controllerManager);
      // The serviceaccount controller creating `default` in `default` shows the controllers run and can write.
      await waitUntil('the default ServiceAccount from kube-controller-manager', controllerManager, CONTROLLERS_READY_TIMEOUT_MS, async () => {
        const { status } = await httpGet(`${server}/api/v1/namespaces/default/serviceaccounts/default`, admin);
        return status === 200 ? true : `GET serviceaccounts/default → ${status}`;
      });
      log(`rig: kube-controller-manager running (${Date.now() - started} ms)`);
    }

    const rig: Rig = {
      dir,
      binaries,
      etcdEndpoint,
      server,
      caPem: files.caPem,
      admin,
      adminKubeconfigPath,
      get processes() {
        return processes.map((p) => ({ name: p.name, pid: p.pid, logPath: p.logPath }));
      },
      kubectl: rigKubectl(binaries, adminKubeconfigPath, join(dir, 'kubectl-cache')),
      stopApiserver,
      startApiserver,
      async stop() {
        liveRigs.delete(rig);
        await stopAll();
      },
    };
    liveRigs.add(rig);
    log(`rig: ready in ${((Date.now() - started) / 1000).toFixed(1)}s (${dir})`);
    return rig;
  } catch (error) {
    await stopAll();
    throw error;
  }
}

/** kubectl against a rig: its admin kubeconfig unless another is given, discovery caches in `cacheDir` (never ~/.kube). */
export function rigKubectl(binaries: RigBinaries, adminKubeconfigPath: string, cacheDir: string): Rig['kubectl'] {
  return (args, options = {}) =>
    runCommand(binaries.kubectl, [`--kubeconfig=${options.kubeconfig ?? adminKubeconfigPath}`, ...args], {
      input: options.input,
      timeoutMs: options.timeoutMs ?? 60_000,
      env: { ...process.env, KUBECACHEDIR: cacheDir },
    });
}

/** A few lines telling a person where the rig is and how to reach it. */
export function rigSummary(rig: Rig): string {
  return [
    `kube-apiserver ${rig.binaries.kubernetesVersion}: ${rig.server}`,
    `etcd ${rig.binaries.etcdVersion}: ${rig.etcdEndpoint}`,
    `admin kubeconfig: ${rig.adminKubeconfigPath}`,
    `kubectl: ${rig.binaries.kubectl} --kubeconfig=${rig.adminKubeconfigPath} get namespaces`,
    `logs: ${rig.processes.map((p) => p.logPath).join(', ')}`,
  ].join('\n');
}

// `tenantgate dev`: a real kube-apiserver, etcd and kube-controller-manager on loopback with tenantgate in front,
// and the files a person (or a test) needs to talk to either. Stops everything it started.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createCertificateAuthority, issueCertificate, type CertificateAuthority, type IssuedCertificate } from './auth/pki.ts';
import type { Identity } from './auth/identity.ts';
import { startRig, type Rig } from './rig/harness.ts';
import type { ServeConfig } from './config.ts';
import { startGateway, type Gateway } from './server/gateway.ts';
import { loadKubeconfig, renderKubeconfig } from './upstream/kubeconfig.ts';
import { log } from './log.ts';
import { DEFAULT_TENANT_SERIES } from './metrics/metrics.ts';
import { toUpstreamName } from './convert/prefix.ts';
import { whenReady } from './tenants/conditions.ts';
import { issueTenantKubeconfig } from './tenants/credentials.ts';
import { DEFAULT_TENANT_STORE_OPTIONS } from './tenants/store.ts';
import { TENANT_API_VERSION } from './tenants/tenant.ts';

/** The identity `admin.kubeconfig` carries: full rights upstream through impersonation. */
export const DEV_ADMIN: Identity = { user: 'tenantgate-admin', groups: ['system:masters'], tenant: null };
/** The demo tenant `tenantgate dev` sets up. */
export const DEV_TENANT = 'demo01';

export interface GatewayFiles {
  dir: string;
  /** Signs tenantgate's serving certificate and the client certificates it accepts. */
  ca: CertificateAuthority;
  serving: IssuedCertificate;
  caFile: string;
  /** The CA's key: tenantgate issues tenant admin kubeconfigs with it. */
  caKeyFile: string;
  tlsCertFile: string;
  tlsKeyFile: string;
  upstreamKubeconfigPath: string;
  /** The rig's etcd, where tenants are kept too (under their own prefix). */
  etcdEndpoint: string;
  /** The key prefix tenants are kept under. */
  etcdPrefix: string;
  /** Flags for `tenantgate serve` that use these files. */
  serveArgs: string[];
}

/**
 * Writes tenantgate's CA, serving certificate and the upstream kubeconfig into `dir`. `etcdPrefix` keeps tenants
 * apart from those of other tenantgates on the same rig (tests sharing a rig); default: the usual prefix.
 */
export function writeGatewayFiles(dir: string, rig: Rig, etcdPrefix = DEFAULT_TENANT_STORE_OPTIONS.etcdPrefix): GatewayFiles {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const ca = createCertificateAuthority('tenantgate-ca');
  const serving = issueCertificate(ca, {
    commonName: 'tenantgate',
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1', '::1'],
    usage: 'server',
  });
  const file = (name: string, text: string) => {
    const path = join(dir, name);
    writeFileSync(path, text, { mode: 0o600 });
    return path;
  };
  const files = {
    dir,
    ca,
    serving,
    caFile: file('ca.crt', ca.certPem),
    caKeyFile: file('ca.key', ca.keyPem),
    tlsCertFile: file('tls.crt', serving.certPem),
    tlsKeyFile: file('tls.key', serving.keyPem),
    upstreamKubeconfigPath: file('upstream.kubeconfig', renderKubeconfig(rig.admin, 'upstream')),
    etcdEndpoint: rig.etcdEndpoint,
    etcdPrefix,
  };
  return {
    ...files,
    serveArgs: [
      '--tls-cert-file',
      files.tlsCertFile,
      '--tls-key-file',
      files.tlsKeyFile,
      '--client-ca-file',
      files.caFile,
      '--client-ca-key-file',
      files.caKeyFile,
      // Tenants' pods verify tenantgate's serving certificate with the CA that signed it.
      '--in-cluster-ca-file',
      files.caFile,
      '--upstream-kubeconfig',
      files.upstreamKubeconfigPath,
      '--etcd-endpoints',
      files.etcdEndpoint,
      '--etcd-prefix',
      files.etcdPrefix,
      // A free port: several tenantgates (tests, replicas) run side by side on one machine.
      '--metrics-listen',
      '127.0.0.1:0',
    ],
  };
}

/** What `tenantgate serve ...serveArgs` would run with, for a tenantgate started in this process. */
export function serveConfigOf(files: GatewayFiles, overrides: Partial<ServeConfig> = {}): ServeConfig {
  return {
    host: '127.0.0.1',
    port: 0,
    tls: files.serving,
    clientCaPem: files.ca.certPem,
    tenantCa: files.ca,
    upstream: loadKubeconfig(files.upstreamKubeconfigPath),
    passthrough: false,
    http2: { maxConcurrentStreams: 1000, maxHeaderListBytes: 65536 },
    tenantStore: { etcdEndpoints: [files.etcdEndpoint], etcdPrefix: files.etcdPrefix },
    inCluster: { caPem: files.ca.certPem },
    ...overrides,
  };
}

/** A kubeconfig for `identity`, pointing at tenantgate, signed by its CA (a tenant's binds it by `serialNumberHex`). */
export function writeClientKubeconfig(path: string, gatewayUrl: string, ca: CertificateAuthority, identity: Identity, serialNumberHex?: string): string {
  const client = issueCertificate(ca, {
    serialNumberHex,
    // A tenant's certificate carries its tenant in OU and its prefix in CN (KubeZoo's shape: CN=<id>-admin, OU=<id>).
    commonName: identity.tenant === null ? identity.user : toUpstreamName(identity.user, identity.tenant),
    organizations: identity.groups,
    organizationalUnits: identity.tenant === null ? [] : [identity.tenant],
    usage: 'client',
  });
  writeFileSync(path, renderKubeconfig({ server: gatewayUrl, caPem: ca.certPem, certPem: client.certPem, keyPem: client.keyPem }, 'tenantgate'), {
    mode: 0o600,
  });
  return path;
}

export interface DevOptions {
  dir: string;
  port: number;
  /** Port of the Prometheus /metrics listener on 127.0.0.1 (0: any free port). */
  metricsPort: number;
  passthrough: boolean;
}

export async function runDev(options: DevOptions): Promise<void> {
  const dir = resolve(options.dir);
  log.info('starting the rig: etcd, kube-apiserver, kube-controller-manager (builds them on first use)');
  const rig = await startRig({ log: (line) => log.info(line) });
  let gateway: Gateway | undefined;
  const stop = async (signal: string) => {
    log.info('stopping', { signal });
    await gateway?.close();
    await rig.stop();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));
  try {
    const files = writeGatewayFiles(dir, rig);
    gateway = await startGateway(
      serveConfigOf(files, {
        port: options.port,
        passthrough: options.passthrough,
        confineUpstreamDiscovery: true,
        metrics: { listen: { host: '127.0.0.1', port: options.metricsPort }, tenantSeries: DEFAULT_TENANT_SERIES },
      }),
    );
    const adminKubeconfig = writeClientKubeconfig(join(dir, 'admin.kubeconfig'), gateway.url, files.ca, DEV_ADMIN);
    // The demo tenant, kept in the rig's etcd like any other; the lifecycle controller sets it up upstream.
    const demo = await gateway.tenants.create({ apiVersion: TENANT_API_VERSION, kind: 'Tenant', metadata: { name: DEV_TENANT }, spec: {} });
    mkdirSync(join(dir, 'tenants'), { recursive: true, mode: 0o700 });
    const tenantKubeconfig = join(dir, 'tenants', `${DEV_TENANT}.kubeconfig`);
    writeFileSync(tenantKubeconfig, await issueTenantKubeconfig(files.ca, gateway.url, demo), { mode: 0o600 });
    await whenReady(gateway.tenants, DEV_TENANT);
    log.info('tenantgate dev is ready', {
      url: gateway.url,
      metricsUrl: gateway.metricsUrl,
      adminKubeconfig,
      upstreamKubeconfig: files.upstreamKubeconfigPath,
      tenantKubeconfig,
      next: `kubectl --kubeconfig ${adminKubeconfig} get namespaces`,
    });
    process.stdout.write(
      `\ntenantgate dev is ready at ${gateway.url}\n` +
        `  as tenant ${DEV_TENANT}:     kubectl --kubeconfig ${tenantKubeconfig} get namespaces\n` +
        `  through tenantgate:  kubectl --kubeconfig ${adminKubeconfig} get namespaces\n` +
        `  upstream directly:   kubectl --kubeconfig ${files.upstreamKubeconfigPath} get namespaces\n` +
        `  metrics (Prometheus): curl ${gateway.metricsUrl}\n` +
        `  (kubectl built for the rig: ${rig.binaries.kubectl})\n` +
        'Ctrl-C stops tenantgate, kube-apiserver, kube-controller-manager and etcd.\n',
    );
  } catch (error) {
    await gateway?.close();
    await rig.stop();
    throw error;
  }
}

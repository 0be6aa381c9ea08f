// An in-process tenantgate whose upstream address points nowhere, for unit tests of what it answers or logs by itself
// (the Tenant API, refusals, the request log). Never reaches a kube-apiserver: requests that need one fail with 503.
import { createCertificateAuthority, issueCertificate, type CertificateAuthority } from '../../lib/auth/pki.ts';
import type { ServeConfig } from '../../lib/config.ts';
import { startGateway, type Gateway } from '../../lib/server/gateway.ts';
import type { TenantStore } from '../../lib/tenants/tenant.ts';

/** Starts it on a free loopback port with a fresh CA (serving and client certificates), its tenants in `store`. */
export async function startGatewayWithoutUpstream(
  store: TenantStore,
  overrides: Partial<ServeConfig> = {},
): Promise<{ gateway: Gateway; ca: CertificateAuthority }> {
  const ca = createCertificateAuthority('test-ca');
  const serving = issueCertificate(ca, { commonName: 'tenantgate', ipAddresses: ['127.0.0.1'], usage: 'server' });
  const gateway = await startGateway(
    {
      host: '127.0.0.1',
      port: 0,
      tls: serving,
      clientCaPem: ca.certPem,
      upstream: { server: 'https://127.0.0.1:1', caPem: ca.certPem },
      passthrough: false,
      http2: { maxConcurrentStreams: 100, maxHeaderListBytes: 65536 },
      ...overrides,
    },
    { tenants: store, lifecycle: false }, // no upstream here
  );
  return { gateway, ca };
}

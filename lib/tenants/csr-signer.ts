// The tenants' `kubernetes.io/kube-apiserver-client` signer: signs an approved CSR of a tenant with the tenant CA, as
// the upstream's signer would, into a client certificate of that tenant's user bound to the tenant's incarnation.
// Never signs a CSR outside a tenant's prefix and signer domain, nor one of a tenant that is gone or being deleted.
import { parseCertificateRequest, signRequestedCertificate, type CertificateAuthority, type ParsedCertificateRequest } from '../auth/pki.ts';
import { isTenantId, TENANT_LABEL, toTenantName, toUpstreamName, type TenantId } from '../convert/prefix.ts';
import { KUBE_APISERVER_CLIENT_SIGNER, signerNameToUpstream } from '../convert/rules/signers.ts';
import { log } from '../log.ts';
import { upstreamJson } from '../upstream/client.ts';
import { listUpstream, watchUpstream, type UpstreamItem } from '../upstream/own-watch.ts';
import type { UpstreamPool } from '../upstream/pool.ts';
import { tenantCertificateSerial } from './credentials.ts';
import type { Tenant } from './tenant.ts';

const CSRS = '/apis/certificates.k8s.io/v1/certificatesigningrequests';
/** The upstream signer's backdating, and the shortest certificate it gives (twice that). */
const BACKDATE_MS = 5 * 60_000;
const MIN_TTL_MS = 10 * 60_000;
/** Below this the end is not backdated (the upstream signer's "short" certificates). */
const SHORT_TTL_MS = 8 * 3_600_000;
/** The group the apiserver's CertificateSubjectRestriction admission refuses for this signer. */
const MASTERS = 'system:masters';

interface Condition {
  type?: string;
  status?: string;
}

interface CsrObject {
  metadata: UpstreamItem['metadata'];
  spec?: { signerName?: string; request?: string; usages?: string[]; expirationSeconds?: number };
  status?: { certificate?: string; conditions?: Condition[] };
}

export interface CsrSignerOptions {
  pool: UpstreamPool;
  /** The tenant CA: what tenantgate trusts for tenants' client certificates. */
  ca: CertificateAuthority;
  tenants: { get(id: TenantId): Tenant | undefined };
  /** The longest certificate it gives (the upstream's --cluster-signing-duration); default 365 days. */
  maxValidityDays?: number;
}

const hasTrue = (csr: CsrObject, type: string) => (csr.status?.conditions ?? []).some((condition) => condition.type === type && condition.status === 'True');

/** Why the upstream's kube-apiserver-client signer refuses these usages (its words), or null. */
export function clientUsagesProblem(usages: readonly string[]): string | null {
  for (const usage of usages) {
    if (usage !== 'digital signature' && usage !== 'key encipherment' && usage !== 'client auth') return `invalid usage for client certificate: ${usage}`;
  }
  return usages.includes('client auth') ? null : 'missing required usage for client certificate: client auth';
}

/** How long the certificate lasts: what the request asks, between ten minutes and the signer's maximum. */
export function certificateTtlMs(expirationSeconds: number | undefined, maxMs: number): number {
  if (expirationSeconds === undefined) return maxMs;
  return Math.min(maxMs, Math.max(MIN_TTL_MS, expirationSeconds * 1000));
}

export class CsrSigner {
  readonly #options: CsrSignerOptions;
  readonly #maxMs: number;
  /** CSRs being signed now: a watch event and a resync may bring the same one twice. */
  readonly #inFlight = new Set<string>();
  #stopWatch: (() => void) | undefined;
  #stopped = false;

  constructor(options: CsrSignerOptions) {
    this.#options = options;
    this.#maxMs = (options.maxValidityDays ?? 365) * 86_400_000;
  }

  /** Signs what is waiting, then follows changes. */
  async start(): Promise<void> {
    const path = `${CSRS}?labelSelector=${encodeURIComponent(TENANT_LABEL)}`;
    this.#stopWatch = watchUpstream(this.#options.pool, path, {
      onEvent: (event) => {
        if (event.type !== 'DELETED') void this.#handle(event.object as unknown as CsrObject);
      },
      onResync: () => void this.#signWaiting(path),
      onError: (error) => log.debug('csr signer watch', { error: error.message }),
    });
    await this.#signWaiting(path);
  }

  stop(): void {
    this.#stopped = true;
    this.#stopWatch?.();
  }

  async #signWaiting(path: string): Promise<void> {
    try {
      for (const item of await listUpstream(this.#options.pool, path)) await this.#handle(item as unknown as CsrObject);
    } catch (error) {
      log.warn('csr signer could not list requests', { error: (error as Error).message });
    }
  }

  async #handle(csr: CsrObject): Promise<void> {
    const name = csr.metadata.name;
    const tenant = csr.metadata.labels?.[TENANT_LABEL];
    if (this.#stopped || tenant === undefined || !isTenantId(tenant) || toTenantName(name, tenant) === null) return;
    if (csr.spec?.signerName !== signerNameToUpstream(KUBE_APISERVER_CLIENT_SIGNER, tenant)) return;
    if (csr.status?.certificate || !hasTrue(csr, 'Approved') || hasTrue(csr, 'Denied') || hasTrue(csr, 'Failed')) return;
    const owner = this.#options.tenants.get(tenant);
    if (owner === undefined || owner.metadata.deletionTimestamp !== undefined || this.#inFlight.has(name)) return;
    this.#inFlight.add(name);
    try {
      const status = csr.status ?? {};
      const outcome = this.#sign(csr, tenant, owner);
      if (typeof outcome === 'string') status.certificate = Buffer.from(outcome).toString('base64');
      else status.conditions = [...(status.conditions ?? []), outcome];
      const answer = await upstreamJson(this.#options.pool, 'PUT', `${CSRS}/${encodeURIComponent(name)}/status`, { ...csr, status });
      // 409: changed meanwhile (its watch event brings it back); 404: deleted meanwhile.
      if (answer.status !== 200 && answer.status !== 409 && answer.status !== 404) {
        log.warn('csr signer could not write the status', { tenant, csr: name, status: answer.status });
      } else if (answer.status === 200) {
        log.info('csr signer', { tenant, csr: name, outcome: typeof outcome === 'string' ? 'signed' : 'failed' });
      }
    } catch (error) {
      log.warn('csr signer failed', { tenant, csr: name, error: (error as Error).message });
    } finally {
      this.#inFlight.delete(name);
    }
  }

  /** The certificate (PEM), or the Failed condition the upstream's signer would set. */
  #sign(csr: CsrObject, tenant: TenantId, owner: Tenant): string | Record<string, string> {
    const failed = (message: string) => ({
      type: 'Failed',
      status: 'True',
      reason: 'SignerValidationFailure',
      message,
      lastUpdateTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    });
    let request: ParsedCertificateRequest;
    try {
      request = parseCertificateRequest(Buffer.from(csr.spec?.request ?? '', 'base64').toString('latin1'));
    } catch (error) {
      return failed(`unable to parse csr: ${(error as Error).message}`);
    }
    // The apiserver's authenticator refuses a certificate without a user name; the tenant's would be its bare prefix.
    if (request.commonName === '') return failed('the request names no user: its subject has no common name');
    const usages = csr.spec?.usages ?? [];
    const problem = clientUsagesProblem(usages);
    if (problem !== null) return failed(problem);
    if (request.organizations.includes(MASTERS)) return failed(`use of ${KUBE_APISERVER_CLIENT_SIGNER} signer with ${MASTERS} group is not allowed`);
    const now = Date.now();
    const ttl = certificateTtlMs(csr.spec?.expirationSeconds, this.#maxMs);
    return signRequestedCertificate(this.#options.ca, {
      publicKeyInfo: request.publicKeyInfo,
      // The tenant's certificate form (auth/identity.ts): CN=<id>-<user>, OU=<id>, O=<the tenant's groups>.
      commonName: toUpstreamName(request.commonName, tenant),
      organizations: request.organizations,
      organizationalUnits: [tenant],
      notBefore: new Date(now - BACKDATE_MS),
      notAfter: new Date(now + (ttl < SHORT_TTL_MS ? ttl : ttl - BACKDATE_MS)),
      serialNumberHex: tenantCertificateSerial(owner),
      digitalSignature: usages.includes('digital signature'),
      keyEncipherment: usages.includes('key encipherment'),
      clientAuth: true,
    });
  }
}

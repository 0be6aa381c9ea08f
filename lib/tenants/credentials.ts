// A tenant admin's certificate and kubeconfig (CN=<id>-admin, OU=<id>), bound to one incarnation of the tenant
// through the serial number. Never keeps a private key: it goes to the caller and is forgotten.
import { createHash, randomBytes } from 'node:crypto';
import type { RsaKeyPool } from '../auth/key-pool.ts';
import { issueCertificate, type CertificateAuthority, type IssuedCertificate } from '../auth/pki.ts';
import { renderKubeconfig } from '../upstream/kubeconfig.ts';
import { tenantServerUrl } from '../request/tenant-path.ts';
import { tenantAdminUser } from '../auth/impersonation.ts';
import type { Tenant } from './tenant.ts';

/**
 * Serial = 0x01 ‖ first 8 bytes of sha256(uid) ‖ 7 random bytes. The leading 0x01 keeps it positive (DER) and
 * marks this layout; the uid bytes bind it to the incarnation (a re-created tenant has a new uid: 2^-64 of a clash);
 * the random bytes keep two certificates of one incarnation apart.
 */
const SERIAL_MARKER = '01';
const UID_FINGERPRINT_BYTES = 8;
const RANDOM_BYTES = 7;
/** Hex digits of the serial once the marker's leading zero is dropped (tools differ on leading zeros). */
const SERIAL_DIGITS_WITHOUT_LEADING_ZERO = (1 + UID_FINGERPRINT_BYTES + RANDOM_BYTES) * 2 - 1;

// Checked on every tenant request: hash each stored tenant object once, not per request.
const fingerprints = new WeakMap<Tenant, string>();

function uidFingerprint(tenant: Tenant): string {
  let fingerprint = fingerprints.get(tenant);
  if (fingerprint === undefined) {
    fingerprint = createHash('sha256')
      .update(tenant.metadata.uid)
      .digest('hex')
      .slice(0, UID_FINGERPRINT_BYTES * 2);
    fingerprints.set(tenant, fingerprint);
  }
  return fingerprint;
}

/** A fresh serial (hex) for a certificate of this incarnation of the tenant. */
export function tenantCertificateSerial(tenant: Tenant): string {
  return SERIAL_MARKER + uidFingerprint(tenant) + randomBytes(RANDOM_BYTES).toString('hex');
}

/** Whether a client certificate's serial (hex, any case, leading zeros or not) was issued for this incarnation. */
export function certificateBelongsTo(serialHex: string, tenant: Tenant): boolean {
  let start = 0;
  while (serialHex.charCodeAt(start) === 48 /* '0' */) start++;
  const serial = serialHex.slice(start).toLowerCase();
  return serial.length === SERIAL_DIGITS_WITHOUT_LEADING_ZERO && serial.charCodeAt(0) === 49 /* '1' */ && serial.startsWith(uidFingerprint(tenant), 1);
}

export interface TenantCredentialOptions {
  /** Default 365. */
  validityDays?: number;
  /** Pre-generated keys (creation stays in milliseconds); a key is generated on the spot without one. */
  keyPool?: RsaKeyPool;
}

/** The tenant admin's client certificate and its private key, bound to `tenant.metadata.uid`. */
export async function issueTenantAdminCertificate(ca: CertificateAuthority, tenant: Tenant, options: TenantCredentialOptions = {}): Promise<IssuedCertificate> {
  const id = tenant.metadata.name;
  return issueCertificate(ca, {
    commonName: tenantAdminUser(id),
    organizationalUnits: [id],
    usage: 'client',
    validityDays: options.validityDays,
    serialNumberHex: tenantCertificateSerial(tenant),
    keys: options.keyPool === undefined ? undefined : await options.keyPool.take(),
  });
}

export interface TenantKubeconfigOptions extends TenantCredentialOptions {
  /** CA of tenantgate's serving certificate, when another CA than the client CA signed it. */
  servingCaPem?: string;
}

/** A self-contained kubeconfig (YAML) for the tenant's admin, pointing at the tenant's own URL on tenantgate (`serverUrl` is tenantgate's). */
export async function issueTenantKubeconfig(
  ca: CertificateAuthority,
  serverUrl: string,
  tenant: Tenant,
  options: TenantKubeconfigOptions = {},
): Promise<string> {
  const certificate = await issueTenantAdminCertificate(ca, tenant, options);
  return renderKubeconfig(
    {
      server: tenantServerUrl(serverUrl, tenant.metadata.name),
      caPem: options.servingCaPem ?? ca.certPem,
      certPem: certificate.certPem,
      keyPem: certificate.keyPem,
    },
    `tenantgate-${tenant.metadata.name}`,
  );
}

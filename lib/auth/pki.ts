// Certificates for tenantgate's listeners and clients: a CA, and certificates it signs.
// Keys come from node:crypto (forge's JavaScript key generation is far slower); node-forge only builds and signs X.509.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import forge from 'node-forge';

export interface CertificateAuthority {
  certPem: string;
  keyPem: string;
}

export interface IssuedCertificate {
  certPem: string;
  keyPem: string;
}

export interface CertificateRequest {
  commonName: string;
  /** Subject O= entries; Kubernetes reads them as groups. */
  organizations?: string[];
  /** Subject OU= entries. */
  organizationalUnits?: string[];
  dnsNames?: string[];
  ipAddresses?: string[];
  usage: 'server' | 'client' | 'server-and-client';
  validityDays?: number;
}

const DEFAULT_VALIDITY_DAYS = 365;

function newRsaKeyPair(): { publicKey: forge.pki.rsa.PublicKey; privateKey: forge.pki.rsa.PrivateKey; keyPem: string } {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });
  return {
    publicKey: forge.pki.publicKeyFromPem(publicKey) as forge.pki.rsa.PublicKey,
    privateKey: forge.pki.privateKeyFromPem(privateKey) as forge.pki.rsa.PrivateKey,
    keyPem: privateKey,
  };
}

function newCertificate(publicKey: forge.pki.PublicKey, validityDays: number): forge.pki.Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = publicKey;
  // Positive, random serial: a re-issued certificate never repeats an old one.
  cert.serialNumber = '01' + randomBytes(15).toString('hex');
  const now = Date.now();
  cert.validity.notBefore = new Date(now - 60_000); // tolerate small clock skew between processes
  cert.validity.notAfter = new Date(now + validityDays * 86_400_000);
  return cert;
}

export function createCertificateAuthority(commonName: string, validityDays = DEFAULT_VALIDITY_DAYS * 10): CertificateAuthority {
  const keys = newRsaKeyPair();
  const cert = newCertificate(keys.publicKey, validityDays);
  const subject = [{ name: 'commonName', value: commonName }];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(keys.privateKey, forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem: keys.keyPem };
}

export function issueCertificate(ca: CertificateAuthority, request: CertificateRequest): IssuedCertificate {
  const caCert = forge.pki.certificateFromPem(ca.certPem);
  const caKey = forge.pki.privateKeyFromPem(ca.keyPem);
  const keys = newRsaKeyPair();
  const cert = newCertificate(keys.publicKey, request.validityDays ?? DEFAULT_VALIDITY_DAYS);
  const subject: forge.pki.CertificateField[] = [];
  for (const o of request.organizations ?? []) subject.push({ name: 'organizationName', value: o });
  for (const ou of request.organizationalUnits ?? []) subject.push({ shortName: 'OU', value: ou });
  subject.push({ name: 'commonName', value: request.commonName });
  cert.setSubject(subject);
  cert.setIssuer(caCert.subject.attributes);
  const altNames = [
    ...(request.dnsNames ?? []).map((value) => ({ type: 2, value })),
    ...(request.ipAddresses ?? []).map((ip) => ({ type: 7, ip })),
  ];
  const extensions: object[] = [
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    {
      name: 'extKeyUsage',
      serverAuth: request.usage !== 'client',
      clientAuth: request.usage !== 'server',
    },
    { name: 'authorityKeyIdentifier', keyIdentifier: caCert.generateSubjectKeyIdentifier().getBytes() },
  ];
  if (altNames.length > 0) extensions.push({ name: 'subjectAltName', altNames });
  cert.setExtensions(extensions);
  cert.sign(caKey, forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem: keys.keyPem };
}

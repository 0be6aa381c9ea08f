// Certificates for tenantgate's listeners and clients: a CA, and certificates it signs.
// Keys come from node:crypto and so do signatures (forge's JavaScript RSA is far slower); node-forge only builds X.509.
import { constants, createPrivateKey, createSign, generateKeyPair, generateKeyPairSync, privateEncrypt, randomBytes, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';
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
  /** Serial number in hex, positive (first byte below 0x80); random when omitted. */
  serialNumberHex?: string;
  /** A key pair generated beforehand (a key pool); a new one is generated when omitted. */
  keys?: RsaKeyPair;
}

/** An RSA key pair in PEM: the public key as SPKI, the private key as PKCS#1 (what kubeconfigs usually carry). */
export interface RsaKeyPair {
  publicKeyPem: string;
  privateKeyPem: string;
}

const DEFAULT_VALIDITY_DAYS = 365;

const RSA_KEY_OPTIONS = {
  modulusLength: 2048,
  publicKeyEncoding: { type: 'spki', format: 'pem' },
  privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
} as const;

export function newRsaKeyPair(): RsaKeyPair {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', RSA_KEY_OPTIONS);
  return { publicKeyPem: publicKey, privateKeyPem: privateKey };
}

const generateKeyPairAsync = promisify(generateKeyPair);

/** The same on libuv's thread pool: tens of milliseconds that the event loop does not wait for. */
export async function generateRsaKeyPair(): Promise<RsaKeyPair> {
  const { publicKey, privateKey } = await generateKeyPairAsync('rsa', RSA_KEY_OPTIONS);
  return { publicKeyPem: publicKey, privateKeyPem: privateKey };
}

/** DER prefix of a PKCS#1 v1.5 DigestInfo for SHA-256 (RFC 8017 §9.2, note 1). */
const SHA256_DIGEST_INFO = Buffer.from('3031300d060960864801650304020105000420', 'hex');

/** A signer forge's `cert.sign` accepts, signing with node:crypto: about 1 ms where forge's own RSA takes 50. */
function nodeSigner(key: KeyObject): forge.pki.rsa.PrivateKey {
  return {
    sign: (md: forge.md.MessageDigest) =>
      privateEncrypt(
        { key, padding: constants.RSA_PKCS1_PADDING },
        Buffer.concat([SHA256_DIGEST_INFO, Buffer.from(md.digest().getBytes(), 'binary')]),
      ).toString('binary'),
  } as unknown as forge.pki.rsa.PrivateKey;
}

function newCertificate(publicKeyPem: string, validityDays: number, serialNumberHex?: string): forge.pki.Certificate {
  const cert = forge.pki.createCertificate();
  cert.publicKey = forge.pki.publicKeyFromPem(publicKeyPem);
  // Positive, random serial: a re-issued certificate never repeats an old one.
  cert.serialNumber = serialNumberHex ?? '01' + randomBytes(15).toString('hex');
  const now = Date.now();
  cert.validity.notBefore = new Date(now - 60_000); // tolerate small clock skew between processes
  cert.validity.notAfter = new Date(now + validityDays * 86_400_000);
  return cert;
}

/** A CA parsed once: issuing is on the tenant-creation path. */
interface ParsedAuthority {
  cert: forge.pki.Certificate;
  signer: forge.pki.rsa.PrivateKey;
  subjectKeyIdentifier: string;
}
const parsedAuthorities = new WeakMap<CertificateAuthority, ParsedAuthority>();

function parsedAuthority(ca: CertificateAuthority): ParsedAuthority {
  let parsed = parsedAuthorities.get(ca);
  if (parsed === undefined) {
    const cert = forge.pki.certificateFromPem(ca.certPem);
    parsed = { cert, signer: nodeSigner(createPrivateKey(ca.keyPem)), subjectKeyIdentifier: cert.generateSubjectKeyIdentifier().getBytes() };
    parsedAuthorities.set(ca, parsed);
  }
  return parsed;
}

export function createCertificateAuthority(commonName: string, validityDays = DEFAULT_VALIDITY_DAYS * 10): CertificateAuthority {
  const keys = newRsaKeyPair();
  const cert = newCertificate(keys.publicKeyPem, validityDays);
  const subject = [{ name: 'commonName', value: commonName }];
  cert.setSubject(subject);
  cert.setIssuer(subject);
  cert.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  cert.sign(nodeSigner(createPrivateKey(keys.privateKeyPem)), forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem: keys.privateKeyPem };
}

export function issueCertificate(ca: CertificateAuthority, request: CertificateRequest): IssuedCertificate {
  const authority = parsedAuthority(ca);
  const keys = request.keys ?? newRsaKeyPair();
  const cert = newCertificate(keys.publicKeyPem, request.validityDays ?? DEFAULT_VALIDITY_DAYS, request.serialNumberHex);
  const subject: forge.pki.CertificateField[] = [];
  for (const o of request.organizations ?? []) subject.push({ name: 'organizationName', value: o });
  for (const ou of request.organizationalUnits ?? []) subject.push({ shortName: 'OU', value: ou });
  subject.push({ name: 'commonName', value: request.commonName });
  cert.setSubject(subject);
  cert.setIssuer(authority.cert.subject.attributes);
  const altNames = [...(request.dnsNames ?? []).map((value) => ({ type: 2, value })), ...(request.ipAddresses ?? []).map((ip) => ({ type: 7, ip }))];
  const extensions: object[] = [
    { name: 'basicConstraints', cA: false, critical: true },
    { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
    {
      name: 'extKeyUsage',
      serverAuth: request.usage !== 'client',
      clientAuth: request.usage !== 'server',
    },
    { name: 'authorityKeyIdentifier', keyIdentifier: authority.subjectKeyIdentifier },
  ];
  if (altNames.length > 0) extensions.push({ name: 'subjectAltName', altNames });
  cert.setExtensions(extensions);
  cert.sign(authority.signer, forge.md.sha256.create());
  return { certPem: forge.pki.certificateToPem(cert), keyPem: keys.privateKeyPem };
}

// ---- certificate signing requests (PKCS#10), any key type: the request's own public key goes into the certificate ----

/** Functions node-forge has and its type definitions leave out. */
const forgePki = forge.pki as unknown as {
  getTBSCertificate(cert: forge.pki.Certificate): forge.asn1.Asn1;
};

// (Parsing a request is pure, and conversion reads a CSR's organizations: it lives with conversion.)
export { parseCertificateRequest, type ParsedCertificateRequest } from '../convert/certificate-request.ts';

export interface RequestedCertificate {
  publicKeyInfo: forge.asn1.Asn1;
  commonName: string;
  organizations: string[];
  organizationalUnits: string[];
  notBefore: Date;
  notAfter: Date;
  serialNumberHex: string;
  digitalSignature: boolean;
  keyEncipherment: boolean;
  clientAuth: boolean;
}

/**
 * A client certificate (PEM) for a request's public key, signed by the CA. forge builds the to-be-signed part with the
 * CA's own key as a stand-in, the request's key info replaces it, and node:crypto signs: forge knows RSA keys only.
 */
export function signRequestedCertificate(ca: CertificateAuthority, request: RequestedCertificate): string {
  const authority = parsedAuthority(ca);
  const cert = forge.pki.createCertificate();
  cert.publicKey = authority.cert.publicKey;
  cert.serialNumber = request.serialNumberHex;
  cert.validity.notBefore = request.notBefore;
  cert.validity.notAfter = request.notAfter < authority.cert.validity.notAfter ? request.notAfter : authority.cert.validity.notAfter;
  const subject: forge.pki.CertificateField[] = [];
  for (const o of request.organizations) subject.push({ name: 'organizationName', value: o });
  for (const ou of request.organizationalUnits) subject.push({ shortName: 'OU', value: ou });
  subject.push({ name: 'commonName', value: request.commonName });
  cert.setSubject(subject);
  cert.setIssuer(authority.cert.subject.attributes);
  const extensions: object[] = [{ name: 'basicConstraints', cA: false, critical: true }];
  if (request.digitalSignature || request.keyEncipherment) {
    extensions.push({ name: 'keyUsage', digitalSignature: request.digitalSignature, keyEncipherment: request.keyEncipherment, critical: true });
  }
  if (request.clientAuth) extensions.push({ name: 'extKeyUsage', clientAuth: true });
  extensions.push({ name: 'authorityKeyIdentifier', keyIdentifier: authority.subjectKeyIdentifier });
  cert.setExtensions(extensions);
  const algorithm = forge.pki.oids.sha256WithRSAEncryption!;
  cert.siginfo.algorithmOid = algorithm;
  cert.signatureOid = algorithm;
  const tbs = forgePki.getTBSCertificate(cert);
  (tbs.value as forge.asn1.Asn1[])[6] = request.publicKeyInfo; // version, serial, signature, issuer, validity, subject, key
  const tbsDer = Buffer.from(forge.asn1.toDer(tbs).getBytes(), 'binary');
  const signature = createSign('sha256').update(tbsDer).sign(ca.keyPem);
  const { asn1 } = forge;
  const certificate = asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [
    tbs,
    asn1.create(asn1.Class.UNIVERSAL, asn1.Type.SEQUENCE, true, [
      asn1.create(asn1.Class.UNIVERSAL, asn1.Type.OID, false, asn1.oidToDer(algorithm).getBytes()),
      asn1.create(asn1.Class.UNIVERSAL, asn1.Type.NULL, false, ''),
    ]),
    asn1.create(asn1.Class.UNIVERSAL, asn1.Type.BITSTRING, false, '\u0000' + signature.toString('binary')),
  ]);
  return forge.pem.encode({ type: 'CERTIFICATE', body: asn1.toDer(certificate).getBytes() });
}

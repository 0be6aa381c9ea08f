// A PEM PKCS#10 certification request read for its subject and public key (any key type). Pure parsing: the
// signature is the apiserver's to check; tenantgate's signer (tenants/csr-signer.ts) and the CSR rule read it.
import forge from 'node-forge';

/** A function node-forge has and its type definitions leave out. */
const forgePki = forge.pki as unknown as {
  RDNAttributesAsArray(name: forge.asn1.Asn1): { type: string; value: string }[];
};

const OID_COMMON_NAME = '2.5.4.3';
const OID_ORGANIZATION = '2.5.4.10';

export interface ParsedCertificateRequest {
  commonName: string;
  organizations: string[];
  /** The request's SubjectPublicKeyInfo, as it came (RSA, ECDSA or Ed25519 alike). */
  publicKeyInfo: forge.asn1.Asn1;
}

/** Subject and public key of a PEM `CERTIFICATE REQUEST`; throws when it is not one. Signatures are the apiserver's to check. */
export function parseCertificateRequest(pem: string): ParsedCertificateRequest {
  const block = forge.pem.decode(pem).find((message) => message.type === 'CERTIFICATE REQUEST' || message.type === 'NEW CERTIFICATE REQUEST');
  if (block === undefined) throw new Error('no CERTIFICATE REQUEST block');
  const request = forge.asn1.fromDer(block.body);
  const info = (request.value as forge.asn1.Asn1[])[0];
  const parts = info?.value;
  if (!Array.isArray(parts) || parts.length < 3) throw new Error('not a PKCS#10 certification request');
  const attributes = forgePki.RDNAttributesAsArray(parts[1]!);
  return {
    commonName: attributes.find((attribute) => attribute.type === OID_COMMON_NAME)?.value ?? '',
    organizations: attributes.filter((attribute) => attribute.type === OID_ORGANIZATION).map((attribute) => attribute.value),
    publicKeyInfo: parts[2]!,
  };
}

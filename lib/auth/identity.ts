// Who is calling: the identity tenantgate proves from a client certificate (tokens: service-account-tokens.ts).
// A connection that presents no certificate signed by the client CA never gets an identity from it.
import type { TLSSocket } from 'node:tls';
import { isTenantId, toTenantName, type TenantId } from '../convert/prefix.ts';

export interface Identity {
  /** The user as the caller knows itself (for a tenant: without the tenant prefix). */
  user: string;
  groups: string[];
  /** The uid an Impersonate-Uid header asked for (certificates and tokens carry none here). */
  uid?: string;
  /** Impersonate-Extra-* values, by key. */
  extra?: Record<string, string[]>;
  /** The caller's tenant, or null for tenantgate's own administrators (who see the upstream as it is). */
  tenant: TenantId | null;
  /** How the identity was proven; the resolve stage checks a tenant's proof against the tenant it names. */
  proof?: IdentityProof;
}

export type IdentityProof =
  /** A client certificate, by serial number (hex as Node reports it). */
  | { kind: 'certificate'; serial: string }
  /** A service-account token the upstream reviewed, and the uid the tenant had then (undefined: no such tenant). */
  | { kind: 'token'; tenantUid: string | undefined };

// One TLS connection carries many HTTP/2 streams: prove its identity once per connection.
const identityBySocket = new WeakMap<TLSSocket, Identity | null>();

function asList(value: string | string[] | undefined): string[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}

/**
 * The identity of a verified client certificate on this connection, or null when there is none.
 * A tenant's certificate names its tenant in OU (`CN=<id>-admin, OU=<id>`, KubeZoo's shape); a certificate
 * with any other OU is an administrator's.
 */
export function identityFromClientCertificate(socket: TLSSocket): Identity | null {
  const known = identityBySocket.get(socket);
  if (known !== undefined) return known;
  let identity: Identity | null = null;
  if (socket.authorized === true) {
    const certificate = socket.getPeerCertificate();
    const subject = certificate.subject as Record<string, string | string[] | undefined> | undefined;
    const commonName = subject?.CN;
    if (typeof commonName === 'string' && commonName !== '') {
      const units = asList(subject?.OU);
      const tenant = units.length === 1 && isTenantId(units[0]!) ? units[0]! : null;
      identity = {
        user: tenant === null ? commonName : (toTenantName(commonName, tenant) ?? commonName),
        groups: asList(subject?.O),
        tenant,
        proof: { kind: 'certificate', serial: certificate.serialNumber },
      };
    }
  }
  identityBySocket.set(socket, identity);
  return identity;
}

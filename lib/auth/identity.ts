// Who is calling: the identity tenantgate proves from a client certificate.
// A connection that presents no certificate signed by the client CA never gets an identity.
import type { TLSSocket } from 'node:tls';
import { isTenantId, toTenantName, type TenantId } from '../convert/prefix.ts';

export interface Identity {
  /** The user as the caller knows itself (for a tenant: without the tenant prefix). */
  user: string;
  groups: string[];
  /** Impersonate-Extra-* values, by key. */
  extra?: Record<string, string[]>;
  /** The caller's tenant, or null for tenantgate's own administrators (who see the upstream as it is). */
  tenant: TenantId | null;
}

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
    const subject = socket.getPeerCertificate().subject as Record<string, string | string[] | undefined> | undefined;
    const commonName = subject?.CN;
    if (typeof commonName === 'string' && commonName !== '') {
      const units = asList(subject?.OU);
      const tenant = units.length === 1 && isTenantId(units[0]!) ? units[0]! : null;
      identity = {
        user: tenant === null ? commonName : (toTenantName(commonName, tenant) ?? commonName),
        groups: asList(subject?.O),
        tenant,
      };
    }
  }
  identityBySocket.set(socket, identity);
  return identity;
}

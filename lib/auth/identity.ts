// Who is calling: the identity tenantgate proves from a client certificate and then impersonates upstream.
// A connection that presents no certificate signed by the client CA never gets an identity.
import type { TLSSocket } from 'node:tls';

export interface Identity {
  user: string;
  groups: string[];
  /** Impersonate-Extra-* values, by key. */
  extra?: Record<string, string[]>;
}

// One TLS connection carries many HTTP/2 streams: prove its identity once per connection.
const identityBySocket = new WeakMap<TLSSocket, Identity | null>();

/** The identity of a verified client certificate on this connection, or null when there is none. */
export function identityFromClientCertificate(socket: TLSSocket): Identity | null {
  const known = identityBySocket.get(socket);
  if (known !== undefined) return known;
  let identity: Identity | null = null;
  if (socket.authorized === true) {
    const subject = socket.getPeerCertificate().subject as Record<string, string | string[] | undefined> | undefined;
    const commonName = subject?.CN;
    if (typeof commonName === 'string' && commonName !== '') {
      const organizations = subject?.O;
      identity = {
        user: commonName,
        groups: organizations === undefined ? [] : Array.isArray(organizations) ? organizations : [organizations],
      };
    }
  }
  identityBySocket.set(socket, identity);
  return identity;
}

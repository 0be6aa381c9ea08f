// Who is calling (DESIGN §2 step 2): the client certificate if there is one, else a service-account bearer token.
// A certificate always wins over a token sent beside it; neither proves anything → no identity (401).
import type { TLSSocket } from 'node:tls';
import { identityFromClientCertificate, type Identity } from './identity.ts';
import { bearerToken, type ServiceAccountTokens } from './service-account-tokens.ts';

export function authenticateCaller(
  socket: TLSSocket,
  authorization: string | undefined,
  tokens: ServiceAccountTokens,
): Identity | null | Promise<Identity | null> {
  const fromCertificate = identityFromClientCertificate(socket);
  if (fromCertificate !== null) return fromCertificate;
  const token = bearerToken(authorization);
  return token === null ? null : tokens.authenticate(token, socket);
}

// CertificateSigningRequests: the signer name is mapped into the tenant's own signer domain (rules/signers.ts), and the
// requester the apiserver records (spec.username, spec.groups) is shown as the tenant's identity.
// Never shows a CSR whose signer is outside the tenant's signer domain.
import { authenticatedGroupsToTenant, groupToUpstream, TENANT_EXTRA_KEY, userToTenant, userToUpstream } from './identity.ts';
import { isObject, mapStringAt, mapStringsAt, objectAt, stringAt } from './json.ts';
import type { Json, KindRule } from './rule.ts';
import { csrSignerNameToUpstream, KUBE_APISERVER_CLIENT_SIGNER, signerNameToTenant } from './signers.ts';
import { parseCertificateRequest } from '../certificate-request.ts';
import { forbidden } from '../../errors/status-error.ts';

/**
 * The apiserver's CertificateSubjectRestriction admission, which judges only its own signer name: a client certificate
 * with group system:masters is refused (403, its words). A request that does not parse is the apiserver's to refuse.
 */
function refuseMasters(spec: Json, name: string): void {
  const request = stringAt(spec, 'request');
  if (request === undefined) return;
  let organizations: string[];
  try {
    organizations = parseCertificateRequest(Buffer.from(request, 'base64').toString('latin1')).organizations;
  } catch {
    return;
  }
  if (organizations.includes('system:masters')) {
    throw forbidden(
      `certificatesigningrequests.certificates.k8s.io ${JSON.stringify(name)} is forbidden: use of ${KUBE_APISERVER_CLIENT_SIGNER} signer with system:masters group is not allowed`,
      { name, group: 'certificates.k8s.io', kind: 'certificatesigningrequests' },
    );
  }
}

export const certificateSigningRequest: KindRule = {
  toUpstream(obj, ctx) {
    const spec = objectAt(obj, 'spec');
    if (spec === undefined) return obj;
    const name = stringAt(objectAt(obj, 'metadata') ?? {}, 'name') ?? '';
    const signerName = stringAt(spec, 'signerName');
    if (signerName === KUBE_APISERVER_CLIENT_SIGNER) refuseMasters(spec, name);
    if (signerName !== undefined) spec.signerName = csrSignerNameToUpstream(signerName, name, ctx.tenant);
    // The apiserver records the requester itself (and keeps the stored spec on updates): these only keep a round trip whole.
    mapStringAt(spec, ['username'], (user) => userToUpstream(user, ctx.tenant));
    mapStringsAt(spec, ['groups'], (group) => (group === 'system:authenticated' ? group : groupToUpstream(group, ctx.tenant)));
    return obj;
  },
  toTenant(obj, ctx) {
    const spec = objectAt(obj, 'spec');
    if (spec === undefined) return obj;
    const signerName = stringAt(spec, 'signerName');
    if (signerName !== undefined) {
      const mine = signerNameToTenant(signerName, ctx.tenant);
      if (mine === null) return null;
      spec.signerName = mine;
    }
    const username = stringAt(spec, 'username');
    if (username) spec.username = userToTenant(username, ctx.tenant) ?? username;
    if (Array.isArray(spec.groups)) spec.groups = authenticatedGroupsToTenant(spec.groups, ctx.tenant);
    if (isObject(spec.extra)) delete spec.extra[TENANT_EXTRA_KEY];
    return obj;
  },
};

// Certificate signer names (`<domain>/<path>`) of a tenant, mapped into a signer domain that is the tenant's alone:
// `kubernetes.io/kube-apiserver-client` → `<id>.tenants.tenantgate.kubezoo.io/d2.kubernetes.io.kube-apiserver-client`.
// Never maps a tenant's signer name outside its own domain, so no upstream signer (kube-controller-manager's
// `kubernetes.io/*` ones) ever acts on a tenant's CSR; never returns a tenant name for an upstream name outside it.
import type { TenantId } from '../prefix.ts';
import { invalid } from '../../errors/status-error.ts';

/** The signer whose approved requests become client certificates of the cluster (here: of the tenant, by tenantgate). */
export const KUBE_APISERVER_CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client';

/** A tenant's signer domain is `<id>` and this. */
export const TENANT_SIGNER_DOMAIN_SUFFIX = '.tenants.tenantgate.kubezoo.io';

/** The signer domain that is the tenant's alone (upstream), e.g. `abc123.tenants.tenantgate.kubezoo.io`. */
export function tenantSignerDomain(tenant: TenantId): string {
  return tenant + TENANT_SIGNER_DOMAIN_SUFFIX;
}

/** What upstream RBAC names as every signer of the tenant (the `<domain>/*` the apiserver's admission asks about). */
export function tenantSignersWildcard(tenant: TenantId): string {
  return tenantSignerDomain(tenant) + '/*';
}

/** The apiserver's limits (k8s.io/kubernetes pkg/apis/core/validation ValidateSignerName). */
const MAX_DOMAIN = 253;
const MAX_PATH = 253 + 63 + 1;
const MAX_SIGNER_NAME = MAX_DOMAIN + MAX_PATH + 1;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const LEGACY_UNKNOWN = 'kubernetes.io/legacy-unknown';

/**
 * The upstream form: the path is `d<n>.` (n = how many labels the tenant's domain has), the domain's labels, then
 * the path's. Injective and reversible for any name with exactly one `/`: the count says where the domain ends.
 * Null for a name without exactly one `/` (what the apiserver refuses whatever its domain).
 */
export function signerNameToUpstream(name: string, tenant: TenantId): string | null {
  const slash = name.indexOf('/');
  if (slash < 0 || name.indexOf('/', slash + 1) >= 0) return null;
  const domain = name.slice(0, slash);
  const labels = domain.split('.').length;
  return `${tenantSignerDomain(tenant)}/d${labels}.${domain}.${name.slice(slash + 1)}`;
}

/**
 * A field selector's `spec.signerName` value upstream: the mapped name, or for a value no signer can have, a name in
 * the tenant's domain that none has either (never one outside it, so the selector still matches only the tenant's).
 */
export function signerNameSelectorValue(name: string, tenant: TenantId): string {
  return signerNameToUpstream(name, tenant) ?? tenantSignerDomain(tenant) + '/-';
}

const COUNT = /^d([1-9][0-9]*)$/;

/** The tenant's signer name for an upstream one, or null when it is not in the tenant's signer domain. */
export function signerNameToTenant(upstreamName: string, tenant: TenantId): string | null {
  const domain = tenantSignerDomain(tenant);
  if (upstreamName.length <= domain.length + 1 || !upstreamName.startsWith(domain) || upstreamName.charCodeAt(domain.length) !== 47 /* '/' */) return null;
  const labels = upstreamName.slice(domain.length + 1).split('.');
  const count = COUNT.exec(labels[0]!);
  if (count === null) return null;
  const n = Number(count[1]);
  if (labels.length < n + 2) return null;
  const rest = labels.slice(n + 1).join('.');
  if (rest.includes('/')) return null;
  return labels.slice(1, n + 1).join('.') + '/' + rest;
}

/** Marks a `signers` resourceName in an RBAC rule that is no signer name (no single `/`): kept, inside the domain. */
const RAW = 'raw:';

/**
 * A `signers` resourceName of a tenant's RBAC rule upstream: always inside the tenant's signer domain, so it grants
 * nothing on another tenant's signers or the upstream's. `example.com/*` maps to a name no signer has (the admission
 * asks about `<upstream domain>/*`, here every signer of the tenant): a domain wildcard of the tenant grants less
 * upstream, never more.
 */
export function signerResourceNameToUpstream(name: string, tenant: TenantId): string {
  return signerNameToUpstream(name, tenant) ?? tenantSignerDomain(tenant) + '/' + RAW + name;
}

/** The tenant's `signers` resourceName for an upstream one, or null when it is outside the tenant's signer domain. */
export function signerResourceNameToTenant(upstreamName: string, tenant: TenantId): string | null {
  const domain = tenantSignerDomain(tenant);
  if (upstreamName.startsWith(domain + '/' + RAW)) return upstreamName.slice(domain.length + 1 + RAW.length);
  return signerNameToTenant(upstreamName, tenant);
}

/**
 * Why the apiserver would refuse this signer name from the tenant (its own rules, said in the tenant's terms), or
 * null when it is valid. The upstream sees only the mapped name, so these are checked here.
 */
export function signerNameProblem(name: string): string | null {
  if (name === '') return 'Required value';
  const parts = name.split('/');
  if (parts.length !== 2) return `Invalid value: ${JSON.stringify(name)}: must be a fully qualified domain and path of the form 'example.com/signer-name'`;
  const [domain, path] = parts as [string, string];
  if (domain.length > MAX_DOMAIN) return `Too long: may not be more than ${MAX_DOMAIN} bytes`;
  const domainLabels = domain.split('.');
  for (const label of domainLabels) {
    if (label.length > 63 || !DNS_LABEL.test(label)) {
      return `Invalid value: ${JSON.stringify(domain)}: validating label ${JSON.stringify(label)}: a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character`;
    }
  }
  if (domainLabels.length < 2) return `Invalid value: ${JSON.stringify(domain)}: should be a domain with at least two segments separated by dots`;
  for (const label of path.split('.')) {
    if (label.length > 253 || !DNS_LABEL.test(label)) {
      return `Invalid value: ${JSON.stringify(path)}: validating label ${JSON.stringify(label)}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character`;
    }
  }
  if (name.length > MAX_SIGNER_NAME) return `Too long: may not be more than ${MAX_SIGNER_NAME} bytes`;
  return null;
}

/**
 * The upstream signer name of a CSR the tenant sends, or a 422 in the tenant's terms: invalid as the apiserver
 * judges it, the legacy signer (refused by certificates.k8s.io/v1), or too long once mapped into the tenant's domain.
 */
export function csrSignerNameToUpstream(name: string, csrName: string, tenant: TenantId): string {
  const field = 'spec.signerName';
  const refuse = (detail: string) =>
    invalid(`CertificateSigningRequest.certificates.k8s.io ${JSON.stringify(csrName)} is invalid: ${field}: ${detail}`, {
      name: csrName,
      group: 'certificates.k8s.io',
      kind: 'CertificateSigningRequest',
      causes: [{ reason: 'FieldValueInvalid', message: detail, field }],
    });
  const problem = signerNameProblem(name);
  if (problem !== null) throw refuse(problem);
  if (name === LEGACY_UNKNOWN) throw refuse(`Invalid value: ${JSON.stringify(name)}: the legacy signerName is not allowed via this API version`);
  const upstream = signerNameToUpstream(name, tenant)!;
  const upstreamPath = upstream.slice(upstream.indexOf('/') + 1);
  if (upstream.length > MAX_SIGNER_NAME || upstreamPath.length > MAX_PATH) {
    const room = MAX_PATH - (upstreamPath.length - name.length);
    throw refuse(`Too long: may not be more than ${room} bytes here (signer names are mapped into the tenant's own signer domain)`);
  }
  return upstream;
}

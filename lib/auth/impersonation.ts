// Whom tenantgate impersonates upstream for a caller (DESIGN §2 step 7): administrators as themselves,
// tenants' users and groups under the tenant's prefix, so no tenant identity can equal another's or a system one.
import type { TenantId } from '../convert/prefix.ts';
import { identityToUpstream } from '../convert/rules/index.ts';
import type { Identity } from './identity.ts';

export interface UpstreamIdentity {
  user: string;
  groups: string[];
  uid?: string;
  extra?: Record<string, string[]>;
  /** The tenant the identity is one of (null: an administrator's own). Never sent: extra carries it where it matters. */
  tenant?: TenantId | null;
}

/** Extra key that marks every tenant request upstream. */
export const TENANT_EXTRA_KEY = 'tenant';

/** A request as far as impersonation cares: reads of objects reach no admission. */
export interface ImpersonatedRequest {
  verb: string;
  subresource: string;
}

const READ_VERBS: ReadonlySet<string> = new Set(['get', 'list', 'watch']);
/** Subresources the apiserver admits as CONNECT even when the verb is a read. */
const CONNECT_SUBRESOURCES: ReadonlySet<string> = new Set(['proxy', 'exec', 'attach', 'portforward']);

interface UpstreamForms {
  /** Every attribute: user, groups, uid and the tenant extra that the confinement policy reads. */
  full: UpstreamIdentity;
  /** What RBAC needs for a read: user and groups (each impersonated attribute costs the apiserver one authorization). */
  read: UpstreamIdentity | undefined;
}

/** Identities live as long as their connection or token cache entry: their upstream forms are made once. */
const formsOf = new WeakMap<Identity, UpstreamForms>();

function fullUpstreamIdentity(identity: Identity): UpstreamIdentity {
  const { tenant } = identity;
  if (tenant === null) return identity;
  // The tenant's own "authenticated" group, so a tenant's bindings to system:authenticated grant within the tenant only.
  // (Service-account identities already carry it from their token review, and an impersonated one may carry
  // system:unauthenticated instead, as the apiserver decides: never twice, never both.)
  const alreadyClassed = identity.groups.includes('system:authenticated') || identity.groups.includes('system:unauthenticated');
  const tenantGroups = alreadyClassed ? identity.groups : [...identity.groups, 'system:authenticated'];
  const { user, groups } = identityToUpstream(identity.user, tenantGroups, tenant);
  const upstream: UpstreamIdentity = { user, groups, extra: { ...identity.extra, [TENANT_EXTRA_KEY]: [tenant] }, tenant };
  // An impersonated uid is opaque to RBAC and names nothing of another tenant's: it goes as the tenant gave it.
  if (identity.uid !== undefined) upstream.uid = identity.uid;
  return upstream;
}

/**
 * The identity tenantgate impersonates upstream. For a tenant's read of objects (`request` a get, list or watch that
 * is no CONNECT) only the user and groups go: RBAC reads nothing else, and admission, where the confinement policy
 * reads the tenant extra, never sees a read. Everything else carries every attribute.
 */
export function upstreamIdentityOf(identity: Identity, request?: ImpersonatedRequest | null): UpstreamIdentity {
  if (identity.tenant === null) return identity;
  let forms = formsOf.get(identity);
  if (forms === undefined) {
    forms = { full: fullUpstreamIdentity(identity), read: undefined };
    formsOf.set(identity, forms);
  }
  if (request == null || !READ_VERBS.has(request.verb) || CONNECT_SUBRESOURCES.has(request.subresource)) return forms.full;
  forms.read ??= { user: forms.full.user, groups: forms.full.groups, tenant: identity.tenant };
  return forms.read;
}

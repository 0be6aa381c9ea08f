// A caller's Impersonate-* headers, read and authorized as the apiserver's impersonation filter does
// (k8s.io/apiserver/pkg/endpoints/filters/impersonation.go), and the identity the request then runs as.
// Never lets a tenant name an identity outside its own names, nor set, change or drop the tenant extra.
import type { TenantId } from '../convert/prefix.ts';
import { toUpstreamName } from '../convert/prefix.ts';
import { groupToUpstream, parseServiceAccountUser, userToUpstream } from '../convert/rules/identity.ts';
import { badRequest, forbidden, StatusError } from '../errors/status-error.ts';
import type { AccessReviews, ResourceAttributes } from './access-review.ts';
import type { Identity } from './identity.ts';
import { TENANT_EXTRA_KEY, upstreamIdentityOf } from './impersonation.ts';

const USER_HEADER = 'impersonate-user';
const GROUP_HEADER = 'impersonate-group';
const UID_HEADER = 'impersonate-uid';
const EXTRA_HEADER_PREFIX = 'impersonate-extra-';

/** What the headers ask for, in the caller's names. */
export interface RequestedImpersonation {
  user: string;
  /** Each Impersonate-Group header, in order (a header's value is one group: commas are not separators). */
  groups: string[];
  uid: string | undefined;
  /** Impersonate-Extra-<key> values by key (the key lowercased and percent-decoded, as the apiserver reads it). */
  extra: Record<string, string[]>;
}

/** The apiserver's unescapeExtraKey: percent-decoded, or as sent when that fails. */
function extraKeyOf(encoded: string): string {
  try {
    return decodeURIComponent(encoded);
  } catch {
    return encoded;
  }
}

function asksToImpersonate(rawHeaders: readonly string[]): boolean {
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    const c = name.charCodeAt(0);
    if ((c === 105 /* i */ || c === 73) /* I */ && name.length > 12 && name.slice(0, 12).toLowerCase() === 'impersonate-') return true;
  }
  return false;
}

/**
 * The impersonation a request asks for, from its raw headers (every header line a value of its own, as Go reads
 * them); null when it asks for none. 400 for groups, extras or a uid without a user (the apiserver answers 500).
 */
export function requestedImpersonation(rawHeaders: readonly string[]): RequestedImpersonation | null {
  // Almost no request impersonates: tell at no cost (HTTP/2 names arrive in lower case; HTTP/1.1's as sent).
  if (!asksToImpersonate(rawHeaders)) return null;
  let user: string | undefined;
  let uid: string | undefined;
  const groups: string[] = [];
  const extra: Record<string, string[]> = Object.create(null) as Record<string, string[]>;
  let asksForMore = false;
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!.toLowerCase();
    if (!name.startsWith('impersonate-')) continue;
    const value = rawHeaders[i + 1]!;
    if (name === USER_HEADER) user ??= value;
    else if (name === UID_HEADER) uid ??= value;
    else if (name === GROUP_HEADER) {
      groups.push(value);
      asksForMore = true;
    } else if (name.startsWith(EXTRA_HEADER_PREFIX)) {
      const key = extraKeyOf(name.slice(EXTRA_HEADER_PREFIX.length));
      (extra[key] ??= []).push(value);
      asksForMore = true;
    }
  }
  // The apiserver's Header.Get: the first value; an empty one asks for nothing.
  if (uid === '') uid = undefined;
  if (uid !== undefined) asksForMore = true;
  if (user === undefined || user === '') {
    if (asksForMore) throw badRequest('requested impersonation of groups, user extras or a uid without impersonating a user: send Impersonate-User too');
    return null;
  }
  return { user, groups, uid, extra: { ...extra } };
}

/** One thing asked for, as the apiserver's authorizer is asked about it: in the caller's names and the upstream's. */
export interface ImpersonationCheck {
  /** For the refusal: the caller's names. */
  attributes: Required<ResourceAttributes>;
  /** For the upstream's SubjectAccessReview. */
  upstream: Required<ResourceAttributes>;
}

const AUTHENTICATION_GROUP = 'authentication.k8s.io';

function attributes(group: string, resource: string, namespace: string, name: string, subresource = ''): Required<ResourceAttributes> {
  return { verb: 'impersonate', group, resource, namespace, name, subresource };
}

/**
 * Each attribute the caller must be allowed to impersonate, in the apiserver's order (user or service account,
 * groups, extras, uid). A tenant's names map into its own names upstream (`alice` → `<id>-alice`, service account
 * `ns:sa` → `<id>-ns:sa`, group `devs` → `<id>:devs`); administrators' go as they are.
 */
export function impersonationChecks(requested: RequestedImpersonation, tenant: TenantId | null): ImpersonationCheck[] {
  const mine = <T>(value: T, toUpstream: (value: T, tenant: TenantId) => T): T => (tenant === null ? value : toUpstream(value, tenant));
  const checks: ImpersonationCheck[] = [];
  const account = parseServiceAccountUser(requested.user);
  if (account !== null) {
    checks.push({
      attributes: attributes('', 'serviceaccounts', account.namespace, account.name),
      upstream: attributes('', 'serviceaccounts', mine(account.namespace, toUpstreamName), account.name),
    });
  } else {
    checks.push({ attributes: attributes('', 'users', '', requested.user), upstream: attributes('', 'users', '', mine(requested.user, userToUpstream)) });
  }
  for (const group of requested.groups) {
    checks.push({ attributes: attributes('', 'groups', '', group), upstream: attributes('', 'groups', '', mine(group, groupToUpstream)) });
  }
  for (const key in requested.extra) {
    for (const value of requested.extra[key]!) {
      const check = attributes(AUTHENTICATION_GROUP, 'userextras', '', value, key);
      checks.push({ attributes: check, upstream: check });
    }
  }
  if (requested.uid !== undefined) {
    const check = attributes(AUTHENTICATION_GROUP, 'uids', '', requested.uid);
    checks.push({ attributes: check, upstream: check });
  }
  return checks;
}

/** The apiserver's 403 for an impersonation its authorizer refused (responsewriters.Forbidden), in the caller's names. */
export function impersonationForbidden(caller: string, attributes: Required<ResourceAttributes>, reason = ''): StatusError {
  const { group, resource, subresource, namespace, name } = attributes;
  const qualified = group === '' ? resource : `${resource}.${group}`;
  const what = subresource === '' ? resource : `${resource}/${subresource}`;
  const scope = namespace === '' ? 'at the cluster scope' : `in the namespace ${JSON.stringify(namespace)}`;
  const message = `User ${JSON.stringify(caller)} cannot impersonate resource ${JSON.stringify(what)} in API group ${JSON.stringify(group)} ${scope}`;
  return forbidden(`${qualified}${name === '' ? '' : ` ${JSON.stringify(name)}`} is forbidden: ${message}${reason === '' ? '' : `: ${reason}`}`, {
    ...(name === '' ? {} : { name }),
    ...(group === '' ? {} : { group }),
    kind: resource,
  });
}

/** The identity the apiserver builds from what was asked: service accounts get their groups, everyone is (un)authenticated. */
export function impersonatedIdentity(requested: RequestedImpersonation, caller: Identity): Identity {
  const account = parseServiceAccountUser(requested.user);
  const groups =
    account !== null && requested.groups.length === 0 ? ['system:serviceaccounts', `system:serviceaccounts:${account.namespace}`] : [...requested.groups];
  if (requested.user === 'system:anonymous') {
    if (!groups.includes('system:unauthenticated')) groups.push('system:unauthenticated');
  } else if (!groups.includes('system:authenticated') && !groups.includes('system:unauthenticated')) {
    groups.push('system:authenticated');
  }
  const identity: Identity = { user: requested.user, groups, tenant: caller.tenant };
  if (Object.keys(requested.extra).length > 0) identity.extra = requested.extra;
  if (requested.uid !== undefined) identity.uid = requested.uid;
  // Proven by the caller's credentials: the tenant stays the caller's, whoever the request now runs as.
  if (caller.proof !== undefined) identity.proof = caller.proof;
  return identity;
}

/**
 * The identity a request runs as once every attribute it asks for is allowed to the caller (asked upstream, in
 * order; the first refusal answers 403). A tenant's `tenant` extra is tenantgate's mark, never the tenant's to set.
 */
export async function authorizeImpersonation(access: AccessReviews, caller: Identity, requested: RequestedImpersonation): Promise<Identity> {
  const tenant = caller.tenant;
  const checks = impersonationChecks(requested, tenant);
  if (tenant !== null) {
    // (Any case: `Tenant` is another key upstream, but nothing a tenant needs and too close to tenantgate's own.)
    const tenantExtra = checks.find((check) => check.attributes.resource === 'userextras' && check.attributes.subresource.toLowerCase() === TENANT_EXTRA_KEY);
    if (tenantExtra !== undefined)
      throw impersonationForbidden(
        caller.user,
        tenantExtra.attributes,
        `the ${JSON.stringify(TENANT_EXTRA_KEY)} extra is set by tenantgate and cannot be impersonated`,
      );
  }
  const callerUpstream = upstreamIdentityOf(caller);
  for (const check of checks) {
    if (!(await access.mayImpersonate(tenant, callerUpstream, check.upstream))) throw impersonationForbidden(caller.user, check.attributes);
  }
  return impersonatedIdentity(requested, caller);
}

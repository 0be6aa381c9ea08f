// Access and token reviews ask the upstream about identities, namespaces and objects: the question is asked in
// upstream names, the answer read back in the tenant's. A review about another tenant's user is not the tenant's;
// an answer that tenantgate itself would refuse (hidden kinds, writes to shared ones) reads as denied.
import { accessRefusal, isBuiltinGroup, kindOf } from '../kinds.ts';
import { apiGroupToTenant, apiGroupToUpstream } from './api-groups.ts';
import { clusterBindingsTextToTenant } from './cluster-subjects.ts';
import { authenticatedGroupsToTenant, groupToTenant, groupToUpstream, TENANT_EXTRA_KEY, userToTenant, userToUpstream } from './identity.ts';
import { eachObjectAt, everyObjectAt, mapStringAt, mapStringsAt, objectAt, stringAt } from './json.ts';
import { namespaceToTenant, namespaceToUpstream, nameToTenant, nameToUpstream, type NameMapping } from './names.ts';
import { policyRuleToTenant } from './rbac.ts';
import { nameMappingOfResource } from './referents.ts';
import type { ConvertContext, Json, KindRule } from './rule.ts';
import { stripTenantPrefixes } from '../status.ts';

const RESOURCE_ATTRIBUTES = ['spec', 'resourceAttributes'];

/** A name in a review of an unknown or absent resource is asked about as it is. */
function mappingOr(mapping: NameMapping | 'none' | undefined): NameMapping {
  return mapping === undefined || mapping === 'none' ? 'plain' : mapping;
}

function resourceAttributesToUpstream(attributes: Json, ctx: ConvertContext): void {
  const { tenant } = ctx;
  const group = stringAt(attributes, 'group') ?? '';
  const mapping = mappingOr(nameMappingOfResource(group, stringAt(attributes, 'resource') ?? '', ctx));
  mapStringAt(attributes, ['name'], (name) => nameToUpstream(mapping, name, tenant));
  mapStringAt(attributes, ['namespace'], (namespace) => namespaceToUpstream(namespace, tenant));
  const resource = stringAt(attributes, 'resource') ?? '';
  mapStringAt(attributes, ['group'], (value) => apiGroupToUpstream(value, tenant, resource));
}

function resourceAttributesToTenant(attributes: Json, ctx: ConvertContext): boolean {
  const { tenant } = ctx;
  if (!mapStringAt(attributes, ['group'], (value) => apiGroupToTenant(value, tenant))) return false;
  if (!mapStringAt(attributes, ['namespace'], (namespace) => namespaceToTenant(namespace, tenant))) return false;
  const mapping = mappingOr(nameMappingOfResource(stringAt(attributes, 'group') ?? '', stringAt(attributes, 'resource') ?? '', ctx));
  return mapStringAt(attributes, ['name'], (name) => nameToTenant(mapping, name, tenant));
}

/** Denies in the status what tenantgate refuses whatever upstream RBAC says. */
function denyWhatTenantgateRefuses(obj: Json): void {
  const status = objectAt(obj, 'status');
  const attributes = objectAt(objectAt(obj, 'spec') ?? {}, 'resourceAttributes');
  if (status === undefined || attributes === undefined || status.allowed !== true) return;
  const group = stringAt(attributes, 'group') ?? '';
  if (!isBuiltinGroup(group)) return;
  const row = kindOf(group, stringAt(attributes, 'resource') ?? '');
  if (row === undefined) return; // wildcards and unknown resources: upstream's answer stands
  const refusal = accessRefusal(row, stringAt(attributes, 'verb') ?? '', stringAt(attributes, 'subresource') ?? '');
  if (refusal === null) return;
  status.allowed = false;
  status.denied = true;
  status.reason = refusal.message;
}

function reviewStatusTextToTenant(obj: Json, ctx: ConvertContext): void {
  const status = objectAt(obj, 'status');
  if (status === undefined) return;
  for (const field of ['reason', 'evaluationError', 'error']) {
    const text = stringAt(status, field);
    if (text) status[field] = stripTenantPrefixes(clusterBindingsTextToTenant(text), ctx.tenant);
  }
}

/** SelfSubjectAccessReview: only attributes, no identity. */
export const selfSubjectAccessReview: KindRule = {
  toUpstream(obj, ctx) {
    eachObjectAt(obj, RESOURCE_ATTRIBUTES, (attributes) => resourceAttributesToUpstream(attributes, ctx));
    return obj;
  },
  toTenant(obj, ctx) {
    if (!everyObjectAt(obj, RESOURCE_ATTRIBUTES, (attributes) => resourceAttributesToTenant(attributes, ctx))) return null;
    denyWhatTenantgateRefuses(obj);
    reviewStatusTextToTenant(obj, ctx);
    return obj;
  },
};

/** SubjectAccessReview and LocalSubjectAccessReview: attributes and the identity asked about. */
export const subjectAccessReview: KindRule = {
  toUpstream(obj, ctx) {
    selfSubjectAccessReview.toUpstream(obj, ctx);
    mapStringAt(obj, ['spec', 'user'], (user) => userToUpstream(user, ctx.tenant));
    mapStringsAt(obj, ['spec', 'groups'], (group) => groupToUpstream(group, ctx.tenant));
    return obj;
  },
  toTenant(obj, ctx) {
    const mine =
      mapStringAt(obj, ['spec', 'user'], (user) => userToTenant(user, ctx.tenant)) &&
      mapStringsAt(obj, ['spec', 'groups'], (group) => groupToTenant(group, ctx.tenant));
    return mine ? selfSubjectAccessReview.toTenant(obj, ctx) : null;
  },
};

export const selfSubjectRulesReview: KindRule = {
  toUpstream(obj, ctx) {
    mapStringAt(obj, ['spec', 'namespace'], (namespace) => namespaceToUpstream(namespace, ctx.tenant));
    return obj;
  },
  toTenant(obj, ctx) {
    if (!mapStringAt(obj, ['spec', 'namespace'], (namespace) => namespaceToTenant(namespace, ctx.tenant))) return null;
    eachObjectAt(obj, ['status', 'resourceRules', '*'], (rule) => policyRuleToTenant(rule, ctx));
    reviewStatusTextToTenant(obj, ctx);
    return obj;
  },
};

const NOT_THIS_CLUSTER = 'the token does not belong to a user of this cluster';

/** The token goes up as it is; the user it names comes back as the tenant's, or unauthenticated. */
export const tokenReview: KindRule = {
  toUpstream(obj) {
    return obj;
  },
  toTenant(obj, ctx) {
    const status = objectAt(obj, 'status');
    const user = status === undefined ? undefined : objectAt(status, 'user');
    if (status === undefined) return obj;
    if (user !== undefined && stringAt(user, 'username')) {
      const username = userToTenant(stringAt(user, 'username') as string, ctx.tenant);
      if (username === null) {
        obj.status = { authenticated: false, user: {}, error: NOT_THIS_CLUSTER };
        return obj;
      }
      user.username = username;
      if (Array.isArray(user.groups)) user.groups = authenticatedGroupsToTenant(user.groups, ctx.tenant);
    }
    reviewStatusTextToTenant(obj, ctx);
    return obj;
  },
};

/** `kubectl auth whoami`: the caller is always the tenant's own user. */
export const selfSubjectReview: KindRule = {
  toUpstream(obj) {
    return obj;
  },
  toTenant(obj, ctx) {
    const userInfo = objectAt(objectAt(obj, 'status') ?? {}, 'userInfo');
    if (userInfo === undefined) return obj;
    if (!mapStringAt(userInfo, ['username'], (username) => userToTenant(username, ctx.tenant))) return null;
    if (Array.isArray(userInfo.groups)) userInfo.groups = authenticatedGroupsToTenant(userInfo.groups, ctx.tenant);
    // The tenant extra is tenantgate's, added to the caller's own: whoami shows what the caller is, as anywhere.
    const extra = objectAt(userInfo, 'extra');
    if (extra !== undefined) {
      delete extra[TENANT_EXTRA_KEY];
      if (Object.keys(extra).length === 0) delete userInfo.extra;
    }
    return obj;
  },
};

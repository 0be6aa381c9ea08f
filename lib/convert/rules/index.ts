// The conversion rules by name (the table of kinds points here) and the two entry points every object goes through:
// generic rule plus the kind's own, to upstream and back. objectToTenant never returns an object not the tenant's.
import { classDefaultsToUpstream } from './class-defaults.ts';
import { markTenantDefault, platformClassHidden } from './platform-classes.ts';
import { accessRefusal, type KindRow, type RuleName } from '../kinds.ts';
import { badRequest } from '../../errors/status-error.ts';
import { admissionPolicy, admissionPolicyBinding, webhookConfiguration } from './admission.ts';
import { certificateSigningRequest } from './certificates.ts';
import { crd, customResource } from './crd.ts';
import { endpoints, endpointSlice } from './endpoints.ts';
import { event } from './events.ts';
import { genericToTenant, genericToUpstream } from './generic.ts';
import { isObject } from './json.ts';
import { namespace } from './namespace.ts';
import { networkPolicy } from './network-policy.ts';
import { resourceQuota } from './quota.ts';
import { binding, clusterBinding, role } from './rbac.ts';
import { selfSubjectAccessReview, selfSubjectReview, selfSubjectRulesReview, subjectAccessReview, tokenReview } from './reviews.ts';
import type { ConvertContext, Json, KindRule } from './rule.ts';
import { apiService, hidden, node, shared } from './shared.ts';
import { priorityClass } from './priority-classes.ts';
import { persistentVolume, persistentVolumeClaim } from './storage.ts';
import { claimTemplate, cronJob, pod, podTemplate, statefulSet, workload } from './workloads.ts';

const generic: KindRule = {
  toUpstream: (obj) => obj,
  toTenant: (obj) => obj,
};

/** Every rule the table may name; the type makes a missing or extra one a compile error. */
export const RULES: { readonly [name in RuleName]: KindRule } = {
  generic,
  pod,
  workload,
  statefulset: statefulSet,
  cronjob: cronJob,
  podtemplate: podTemplate,
  claimtemplate: claimTemplate,
  namespace,
  event,
  endpoints,
  endpointslice: endpointSlice,
  role,
  binding,
  clusterrolebinding: clusterBinding,
  crd,
  'custom-resource': customResource,
  persistentvolume: persistentVolume,
  persistentvolumeclaim: persistentVolumeClaim,
  networkpolicy: networkPolicy,
  resourcequota: resourceQuota,
  'webhook-configuration': webhookConfiguration,
  'admission-policy': admissionPolicy,
  'admission-policy-binding': admissionPolicyBinding,
  subjectaccessreview: subjectAccessReview,
  selfsubjectaccessreview: selfSubjectAccessReview,
  selfsubjectrulesreview: selfSubjectRulesReview,
  tokenreview: tokenReview,
  selfsubjectreview: selfSubjectReview,
  certificatesigningrequest: certificateSigningRequest,
  node,
  apiservice: apiService,
  shared,
  priorityclass: priorityClass,
  hidden,
};

/**
 * Rules whose whole tenant view the list and watch rewriter applies at byte level (lib/stream/item-edits.ts,
 * tenantMetadata) because they touch nothing but the object's own metadata and status messages; for each, by
 * member of `spec`, the keys that send an item holding them there to the rule itself.
 */
export const BYTE_LEVEL_RULES: { readonly [name in RuleName]?: { readonly [specMember: string]: readonly string[] } } = {
  generic: {},
  pod: { affinity: ['"podAffinity"', '"podAntiAffinity"'], volumes: ['"ephemeral"'] },
};

/**
 * The upstream form of an object a tenant sends (create, update, apply), its default classes filled in where it names
 * none (not in a patch). Mutates and returns `obj`.
 * Throws a StatusError: 404 for hidden kinds, 403 for shared ones, 422 for names too long once prefixed or
 * fields the tenant may not set, 400 for a body that is not an object.
 */
export function objectToUpstream(obj: unknown, ctx: ConvertContext, row: KindRow, verb: 'create' | 'update' | 'patch' = 'create'): Json {
  const refusal = accessRefusal(row, verb);
  if (refusal !== null) throw refusal;
  if (!isObject(obj)) throw badRequest('the request body must be a JSON object');
  if (verb !== 'patch' && ctx.defaultPlatformClass !== undefined) classDefaultsToUpstream(obj, row, ctx.defaultPlatformClass);
  RULES[row.rule].toUpstream(obj, ctx);
  return genericToUpstream(obj, ctx, row);
}

/**
 * The tenant's view of an upstream object, or null when it is not the tenant's (outside its prefix, labelled for
 * another tenant, referring outside the tenant, or of a hidden kind). Mutates `obj`; after null, discard it.
 */
export function objectToTenant(obj: unknown, ctx: ConvertContext, row: KindRow): Json | null {
  if (!isObject(obj) || row.tenancy === 'hidden') return null;
  if (row.tenancy === 'tenant' && !genericToTenant(obj, ctx, row)) return null;
  // (PriorityClasses hold the tenant's own beside the platform's: their rule tells them apart.)
  if (row.tenancy === 'shared-read-only' && row.rule !== 'priorityclass') {
    if (platformClassHidden(row.resource, obj, ctx.allowsPlatformClass)) return null;
    markTenantDefault(row.resource, obj, ctx.defaultPlatformClass);
  }
  return RULES[row.rule].toTenant(obj, ctx);
}

export type { ConvertContext, Json, KindRule, TenantPriorityClasses } from './rule.ts';
export {
  RESERVED_TENANT_IDS,
  authenticatedGroupsToTenant,
  groupToTenant,
  groupToUpstream,
  identityToUpstream,
  parseServiceAccountUser,
  serviceAccountUser,
  userToTenant,
  userToUpstream,
} from './identity.ts';
export {
  MAX_TENANT_NAME,
  MAX_TENANT_NAMESPACE,
  checkNameFits,
  crdNameToTenant,
  crdNameToUpstream,
  nameMappingOfRow,
  nameToTenant,
  nameToUpstream,
  namespaceToTenant,
  namespaceToUpstream,
  type NameMapping,
} from './names.ts';
export { apiGroupToTenant, apiGroupToUpstream, documentGroupToUpstream, apiVersionToTenant, apiVersionToUpstream } from './api-groups.ts';
export { NAMESPACE_NAME_LABEL, namespaceSelectorToUpstream, namespaceSelectorToTenant } from './label-selectors.ts';
export { stripTenantPrefixes } from '../status.ts';

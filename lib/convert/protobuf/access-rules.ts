// Roles, bindings and access reviews in protobuf request bodies (k8s.io/api rbac/v1, authorization/v1,
// authentication/v1 generated.proto): each value read into JSON, mapped by the JSON rule (rules/rbac.ts,
// rules/reviews.ts) and written back where it changed. Never maps a value itself.
import { aggregationKeyToUpstream, policyRuleToUpstream } from '../rules/rbac.ts';
import { selfSubjectAccessReview, selfSubjectRulesReview, subjectAccessReview } from '../rules/reviews.ts';
import type { ConvertContext, Json, KindRule } from '../rules/rule.ts';
import { MessageEdit, readStrings, writeStrings, rewriteAt, type Step, writeRepeatedStrings } from './message-edit.ts';
import { ruleContext, type Conversion } from './conversion.ts';
import { forceTenantEntry } from './object-meta.ts';
import { SELECTOR, SELECTOR_REQUIREMENT } from './field-numbers.ts';

// ---- roles and bindings (k8s.io/api rbac/v1 generated.proto), every value mapped by the JSON rule (rules/rbac.ts) ----

/** Role, ClusterRole: rules = 2 (repeated PolicyRule); ClusterRole only: aggregationRule = 3 → clusterRoleSelectors = 1 (repeated LabelSelector). */
const ROLE_RULES: readonly Step[] = [2, '*'];
const AGGREGATION_SELECTORS: readonly Step[] = [3, 1, '*'];
/** PolicyRule: apiGroups = 2, resources = 3, resourceNames = 4 (verbs = 1 and nonResourceURLs = 5 are copied). */
const POLICY_RULE = { apiGroups: 2, resources: 3, resourceNames: 4 } as const;
/** RoleBinding, ClusterRoleBinding: subjects = 2 (repeated Subject), roleRef = 3. */
const BINDING = { subjects: 2, roleRef: 3 } as const;
/** Subject: kind = 1, apiGroup = 2, name = 3, namespace = 4. RoleRef: kind = 2, name = 3 (apiGroup = 1 is copied). */
const SUBJECT = { kind: 1, apiGroup: 2, name: 3, namespace: 4 } as const;
const ROLE_REF = { kind: 2, name: 3 } as const;

function policyRuleToUpstreamWire(rule: Buffer, ctx: ConvertContext): Buffer {
  const edit = new MessageEdit(rule, 'rules');
  const fields = {
    apiGroups: edit.all(POLICY_RULE.apiGroups, 'apiGroups'),
    resources: edit.all(POLICY_RULE.resources, 'resources'),
    resourceNames: edit.all(POLICY_RULE.resourceNames, 'resourceNames'),
  };
  const json: Json = {};
  for (const key of ['apiGroups', 'resources', 'resourceNames'] as const) json[key] = fields[key].map((field) => edit.string(field, key));
  policyRuleToUpstream(json, ctx);
  for (const key of ['apiGroups', 'resourceNames'] as const) writeRepeatedStrings(edit, POLICY_RULE[key], fields[key], json[key] as string[]);
  return edit.finish();
}

/** Role and ClusterRole: rules' groups and resource names, aggregation selectors ANDed with the tenant label. */
export function roleToUpstreamWire(object: Buffer, conversion: Conversion): Buffer {
  const ctx = ruleContext(conversion);
  const result = rewriteAt(object, ROLE_RULES, 'object', (rule) => policyRuleToUpstreamWire(rule, ctx));
  // A Role has no field 3: the apiserver skips it as unknown, so it is copied as it is.
  if (conversion.row.kind !== 'ClusterRole') return result;
  const renameKey = (key: string) => aggregationKeyToUpstream(key, conversion.tenant);
  return rewriteAt(result, AGGREGATION_SELECTORS, 'object', (selector) => {
    const edit = new MessageEdit(selector, 'clusterRoleSelectors');
    forceTenantEntry(edit, SELECTOR.matchLabels, 'matchLabels', conversion.tenant, undefined, renameKey);
    for (const field of edit.all(SELECTOR.matchExpressions, 'matchExpressions')) {
      edit.rewrite(field, (payload) => {
        const requirement = new MessageEdit(payload, 'matchExpressions');
        const keyField = requirement.single(SELECTOR_REQUIREMENT.key, 'key');
        const key = requirement.string(keyField, 'key');
        if (keyField !== undefined && renameKey(key) !== key) requirement.replaceString(keyField, renameKey(key));
        return requirement.finish();
      });
    }
    return edit.finish();
  });
}

/** RoleBinding and ClusterRoleBinding: subjects and roleRef read into JSON, mapped by the JSON rule, written back. */
export const bindingToUpstreamWire =
  (rule: KindRule) =>
  (object: Buffer, conversion: Conversion): Buffer => {
    const edit = new MessageEdit(object, 'object');
    const subjects = edit.all(BINDING.subjects, 'subjects').map((field) => {
      const message = new MessageEdit(edit.payload(field), 'subjects');
      return { field, message, before: readStrings(message, SUBJECT) };
    });
    const roleRefField = edit.single(BINDING.roleRef, 'roleRef');
    const roleRefMessage = roleRefField === undefined ? undefined : new MessageEdit(edit.payload(roleRefField), 'roleRef');
    const roleRef = roleRefField && roleRefMessage && { field: roleRefField, message: roleRefMessage, before: readStrings(roleRefMessage, ROLE_REF) };
    const after: Json = { subjects: subjects.map(({ before }) => ({ ...before })) };
    if (roleRef !== undefined) after.roleRef = { ...roleRef.before };
    rule.toUpstream(after, ruleContext(conversion));
    subjects.forEach(({ field, message, before }, i) => {
      const subject = (after.subjects as Json[])[i]!;
      writeStrings(message, SUBJECT, before, subject);
      // A ClusterRoleBinding's service account becomes a (shadow) user upstream: no namespace any more.
      const namespace = message.single(SUBJECT.namespace, 'namespace');
      if (namespace !== undefined && typeof subject.namespace !== 'string') message.remove(namespace);
      edit.replaceMessage(field, message);
    });
    if (roleRef !== undefined) {
      writeStrings(roleRef.message, ROLE_REF, roleRef.before, after.roleRef as Json);
      edit.replaceMessage(roleRef.field, roleRef.message);
    }
    return edit.finish();
  };

// ---- access and token reviews (k8s.io/api authorization/v1, authentication/v1 generated.proto), mapped by rules/reviews.ts ----

/**
 * SelfSubjectAccessReview, SubjectAccessReview, LocalSubjectAccessReview: spec = 2. Their specs: resourceAttributes = 1
 * (nonResourceAttributes = 2 is copied); SubjectAccessReviewSpec only: user = 3, groups = 4 (extra = 5 and uid = 6 are copied).
 */
const ACCESS_REVIEW_SPEC: readonly Step[] = [2];
const ACCESS_REVIEW = { resourceAttributes: 1, user: 3, groups: 4 } as const;
/**
 * ResourceAttributes: the fields the JSON rule reads or maps (verb = 2, version = 4, subresource = 6, fieldSelector = 8
 * and labelSelector = 9 are copied).
 */
const RESOURCE_ATTRIBUTES = { namespace: 1, group: 3, resource: 5, name: 7 } as const;
/** SelfSubjectRulesReview: spec = 2 → SelfSubjectRulesReviewSpec.namespace = 1. */
const RULES_REVIEW_SPEC: readonly Step[] = [2];
const RULES_REVIEW = { namespace: 1 } as const;

/**
 * The JSON rule's context for resource attributes: a custom resource's scope decides how a name is asked about, so
 * without discovery a named custom resource is refused (415); unnamed, its scope does not matter.
 */
function reviewContext(conversion: Conversion, name: string): ConvertContext {
  if (conversion.scopeOf !== undefined || name !== '') return ruleContext(conversion);
  return { ...ruleContext(conversion), scopeOf: () => undefined };
}

/** The spec of an access review read into JSON, mapped by the JSON rule, the changed fields written back. */
function accessReviewSpecToUpstreamWire(spec: Buffer, conversion: Conversion, identity: boolean): Buffer {
  const edit = new MessageEdit(spec, 'spec');
  const attributesField = edit.single(ACCESS_REVIEW.resourceAttributes, 'resourceAttributes');
  const attributes = attributesField && new MessageEdit(edit.payload(attributesField), 'spec.resourceAttributes');
  const attributesBefore = attributes && readStrings(attributes, RESOURCE_ATTRIBUTES);
  const json: Json = {};
  if (attributesBefore !== undefined) json.resourceAttributes = { ...attributesBefore };
  const user = identity ? readStrings(edit, { user: ACCESS_REVIEW.user }) : undefined;
  const groupFields = identity ? edit.all(ACCESS_REVIEW.groups, 'groups') : [];
  if (user !== undefined) {
    json.user = user.user;
    json.groups = groupFields.map((field) => edit.string(field, 'groups'));
  }
  const ctx = reviewContext(conversion, attributesBefore?.name ?? '');
  (identity ? subjectAccessReview : selfSubjectAccessReview).toUpstream({ spec: json }, ctx);
  if (attributes !== undefined && attributesField !== undefined && attributesBefore !== undefined) {
    writeStrings(attributes, RESOURCE_ATTRIBUTES, attributesBefore, json.resourceAttributes as Json);
    edit.replaceMessage(attributesField, attributes);
  }
  if (user !== undefined) {
    writeStrings(edit, { user: ACCESS_REVIEW.user }, user, json);
    writeRepeatedStrings(edit, ACCESS_REVIEW.groups, groupFields, json.groups as string[]);
  }
  return edit.finish();
}

export function accessReviewToUpstreamWire(identity: boolean): (object: Buffer, conversion: Conversion) => Buffer {
  return (object, conversion) => rewriteAt(object, ACCESS_REVIEW_SPEC, 'object', (spec) => accessReviewSpecToUpstreamWire(spec, conversion, identity));
}

/** SelfSubjectRulesReview: the namespace asked about. */
export function rulesReviewToUpstreamWire(object: Buffer, conversion: Conversion): Buffer {
  return rewriteAt(object, RULES_REVIEW_SPEC, 'object', (spec) => {
    const edit = new MessageEdit(spec, 'spec');
    const before = readStrings(edit, RULES_REVIEW);
    const json: Json = { ...before };
    selfSubjectRulesReview.toUpstream({ spec: json }, ruleContext(conversion));
    writeStrings(edit, RULES_REVIEW, before, json);
    return edit.finish();
  });
}

/** TokenReview (spec = 2: token = 1, audiences = 2) and SelfSubjectReview (no spec): the JSON rules map nothing but metadata. */
export const metadataOnly = (object: Buffer): Buffer => object;

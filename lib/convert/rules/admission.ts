// Admission webhooks and policies run inside the upstream apiserver for every tenant's requests. Upstream their
// namespace and object selectors are ANDed with the tenant label, so a tenant's webhook or policy only ever sees and
// judges the tenant's own objects (object selectors matter for cluster-scoped objects, which namespace selectors
// never skip). Their rules' custom groups, services, policies and params are the tenant's.
import { builtinKindOf } from '../kinds.ts';
import { apiGroupToTenant, apiGroupToUpstream, apiVersionToTenant, apiVersionToUpstream } from './api-groups.ts';
import { eachObjectAt, ensureObject, everyObjectAt, mapStringAt, mapStringsAt, objectAt } from './json.ts';
import { namespaceSelectorToTenant, namespaceSelectorToUpstream, objectSelectorToTenant, objectSelectorToUpstream } from './label-selectors.ts';
import { nameMappingOfRow, namespaceToTenant, namespaceToUpstream, nameToTenant, nameToUpstream } from './names.ts';
import type { ConvertContext, Json, KindRule } from './rule.ts';

/** Forces both selectors (creating them: an absent selector matches everything) and maps rule groups. */
function matchToUpstream(match: Json, rulePaths: readonly (readonly string[])[], ctx: ConvertContext): void {
  namespaceSelectorToUpstream(ensureObject(match, 'namespaceSelector'), ctx.tenant);
  objectSelectorToUpstream(ensureObject(match, 'objectSelector'), ctx.tenant);
  for (const path of rulePaths) mapStringsAt(match, path, (group) => apiGroupToUpstream(group, ctx.tenant));
}

function matchToTenant(match: Json, rulePaths: readonly (readonly string[])[], ctx: ConvertContext): boolean {
  const namespaceSelector = objectAt(match, 'namespaceSelector');
  const objectSelector = objectAt(match, 'objectSelector');
  if (namespaceSelector !== undefined && !namespaceSelectorToTenant(namespaceSelector, ctx.tenant)) return false;
  if (objectSelector !== undefined && !objectSelectorToTenant(objectSelector, ctx.tenant)) return false;
  for (const path of rulePaths) mapStringsAt(match, path, (group) => apiGroupToTenant(group, ctx.tenant) ?? group);
  return true;
}

const WEBHOOKS = ['webhooks', '*'];
const WEBHOOK_RULE_GROUPS = [['rules', '*', 'apiGroups']];
const SERVICE_NAMESPACE = ['clientConfig', 'service', 'namespace'];

/** ValidatingWebhookConfiguration and MutatingWebhookConfiguration. */
export const webhookConfiguration: KindRule = {
  toUpstream(obj, ctx) {
    eachObjectAt(obj, WEBHOOKS, (webhook) => {
      mapStringAt(webhook, SERVICE_NAMESPACE, (namespace) => namespaceToUpstream(namespace, ctx.tenant));
      matchToUpstream(webhook, WEBHOOK_RULE_GROUPS, ctx);
    });
    return obj;
  },
  toTenant(obj, ctx) {
    const mine = everyObjectAt(
      obj,
      WEBHOOKS,
      (webhook) =>
        mapStringAt(webhook, SERVICE_NAMESPACE, (namespace) => namespaceToTenant(namespace, ctx.tenant)) && matchToTenant(webhook, WEBHOOK_RULE_GROUPS, ctx),
    );
    return mine ? obj : null;
  },
};

const POLICY_RULE_GROUPS = [
  ['resourceRules', '*', 'apiGroups'],
  ['excludeResourceRules', '*', 'apiGroups'],
];
const PARAM_KIND_API_VERSION = ['spec', 'paramKind', 'apiVersion'];

/** ValidatingAdmissionPolicy and MutatingAdmissionPolicy. */
export const admissionPolicy: KindRule = {
  toUpstream(obj, ctx) {
    mapStringAt(obj, PARAM_KIND_API_VERSION, (apiVersion) => apiVersionToUpstream(apiVersion, ctx.tenant));
    eachObjectAt(obj, ['spec', 'matchConstraints'], (match) => matchToUpstream(match, POLICY_RULE_GROUPS, ctx));
    return obj;
  },
  toTenant(obj, ctx) {
    const mine =
      mapStringAt(obj, PARAM_KIND_API_VERSION, (apiVersion) => apiVersionToTenant(apiVersion, ctx.tenant)) &&
      everyObjectAt(obj, ['spec', 'matchConstraints'], (match) => matchToTenant(match, POLICY_RULE_GROUPS, ctx));
    return mine ? obj : null;
  },
};

const POLICY_NAMES = nameMappingOfRow(builtinKindOf('admissionregistration.k8s.io', 'ValidatingAdmissionPolicy')!);
const POLICY_NAME = ['spec', 'policyName'];
const PARAM_NAMESPACE = ['spec', 'paramRef', 'namespace'];

/** ValidatingAdmissionPolicyBinding and MutatingAdmissionPolicyBinding. */
export const admissionPolicyBinding: KindRule = {
  toUpstream(obj, ctx) {
    mapStringAt(obj, POLICY_NAME, (name) => nameToUpstream(POLICY_NAMES, name, ctx.tenant));
    mapStringAt(obj, PARAM_NAMESPACE, (namespace) => namespaceToUpstream(namespace, ctx.tenant));
    eachObjectAt(obj, ['spec', 'matchResources'], (match) => matchToUpstream(match, POLICY_RULE_GROUPS, ctx));
    return obj;
  },
  toTenant(obj, ctx) {
    const mine =
      mapStringAt(obj, POLICY_NAME, (name) => nameToTenant(POLICY_NAMES, name, ctx.tenant)) &&
      mapStringAt(obj, PARAM_NAMESPACE, (namespace) => namespaceToTenant(namespace, ctx.tenant)) &&
      everyObjectAt(obj, ['spec', 'matchResources'], (match) => matchToTenant(match, POLICY_RULE_GROUPS, ctx));
    return mine ? obj : null;
  },
};

// Admission webhooks and policies run inside the upstream apiserver for every tenant's requests. Upstream their
// namespace and object selectors are ANDed with the tenant label, so a tenant's webhook or policy only ever sees and
// judges the tenant's own objects (object selectors matter for cluster-scoped objects, which namespace selectors
// never skip). Their rules' custom groups, services, policies and params are the tenant's. A webhook calls a service
// of the tenant's, or a URL only on a host an administrator allowed: the apiserver would connect anywhere it is told.
import { builtinKindOf } from '../kinds.ts';
import { invalid } from '../../errors/status-error.ts';
import { apiGroupsToTenant, apiGroupsToUpstream, apiVersionToTenant, apiVersionToUpstream } from './api-groups.ts';
import { celNamespacesToTenant, celNamespacesToUpstream } from './cel-namespaces.ts';
import { eachObjectAt, ensureObject, everyObjectAt, mapStringArrayAt, mapStringAt, objectAt, stringAt, stringsOf } from './json.ts';
import { namespaceSelectorToTenant, namespaceSelectorToUpstream, objectSelectorToTenant, objectSelectorToUpstream } from './label-selectors.ts';
import { nameMappingOfRow, namespaceToTenant, namespaceToUpstream, nameToTenant, nameToUpstream } from './names.ts';
import type { ConvertContext, Json, KindRule } from './rule.ts';

/** Forces both selectors (creating them: an absent selector matches everything) and maps rule groups. */
function matchToUpstream(match: Json, rulePaths: readonly (readonly string[])[], ctx: ConvertContext): void {
  namespaceSelectorToUpstream(ensureObject(match, 'namespaceSelector'), ctx.tenant);
  objectSelectorToUpstream(ensureObject(match, 'objectSelector'), ctx.tenant);
  for (const path of rulePaths) mapStringArrayAt(match, path, (groups, rule) => apiGroupsToUpstream(groups, stringsOf(rule.resources), ctx.tenant));
}

function matchToTenant(match: Json, rulePaths: readonly (readonly string[])[], ctx: ConvertContext): boolean {
  const namespaceSelector = objectAt(match, 'namespaceSelector');
  const objectSelector = objectAt(match, 'objectSelector');
  if (namespaceSelector !== undefined && !namespaceSelectorToTenant(namespaceSelector, ctx.tenant)) return false;
  if (objectSelector !== undefined && !objectSelectorToTenant(objectSelector, ctx.tenant)) return false;
  for (const path of rulePaths) mapStringArrayAt(match, path, (groups) => apiGroupsToTenant(groups, ctx.tenant));
  return true;
}

/** The host of a webhook URL as an allow-list names it: lower case, an IPv6 address without brackets; null if no URL. */
function webhookUrlHost(url: string): string | null {
  try {
    return new URL(url).hostname.replace(/^\[|\]$/g, '').toLowerCase();
  } catch {
    return null;
  }
}

/**
 * Refuses (422) a webhook clientConfig whose `url` names a host the administrator did not allow. `field` is where
 * the clientConfig is, for the Status cause; `group` the refused object's API group.
 */
export function checkWebhookUrl(clientConfig: unknown, field: string, group: string, ctx: ConvertContext): void {
  if (typeof clientConfig !== 'object' || clientConfig === null) return;
  const url = (clientConfig as Json).url;
  if (url === undefined || url === null) return;
  const host = typeof url === 'string' ? webhookUrlHost(url) : null;
  if (host !== null && ctx.webhookUrlHosts?.has(host) === true) return;
  const where = `${field}.url`;
  const detail =
    host === null
      ? 'Forbidden: a webhook URL must be a valid URL on a host the administrator allowed; name a service in your namespaces instead'
      : `Forbidden: webhooks may call ${JSON.stringify(host)} only if the administrator allows it (--tenant-webhook-url-hosts); name a service in your namespaces instead`;
  throw invalid(`${where}: ${detail}`, { group, causes: [{ reason: 'FieldValueForbidden', message: detail, field: where }] });
}

const WEBHOOKS = ['webhooks', '*'];
const WEBHOOK_RULE_GROUPS = [['rules', '*', 'apiGroups']];
const SERVICE_NAMESPACE = ['clientConfig', 'service', 'namespace'];
const WEBHOOK_EXPRESSIONS = [['matchConditions', '*', 'expression']];

/** A tenant's CEL expressions at `paths` under `obj`, with namespace references reading the tenant's names upstream. */
function expressionsToUpstream(obj: Json, paths: readonly (readonly string[])[]): void {
  for (const path of paths) mapStringAt(obj, path, celNamespacesToUpstream);
}

function expressionsToTenant(obj: Json, paths: readonly (readonly string[])[]): void {
  for (const path of paths) mapStringAt(obj, path, celNamespacesToTenant);
}

/** ValidatingWebhookConfiguration and MutatingWebhookConfiguration. */
export const webhookConfiguration: KindRule = {
  toUpstream(obj, ctx) {
    if (Array.isArray(obj.webhooks)) {
      obj.webhooks.forEach((webhook, i) =>
        checkWebhookUrl((webhook as Json | null)?.clientConfig, `webhooks[${i}].clientConfig`, 'admissionregistration.k8s.io', ctx),
      );
    }
    eachObjectAt(obj, WEBHOOKS, (webhook) => {
      mapStringAt(webhook, SERVICE_NAMESPACE, (namespace) => namespaceToUpstream(namespace, ctx.tenant));
      matchToUpstream(webhook, WEBHOOK_RULE_GROUPS, ctx);
      expressionsToUpstream(webhook, WEBHOOK_EXPRESSIONS);
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
    if (mine) eachObjectAt(obj, WEBHOOKS, (webhook) => expressionsToTenant(webhook, WEBHOOK_EXPRESSIONS));
    return mine ? obj : null;
  },
};

const POLICY_RULE_GROUPS = [
  ['resourceRules', '*', 'apiGroups'],
  ['excludeResourceRules', '*', 'apiGroups'],
];
const PARAM_KIND_API_VERSION = ['spec', 'paramKind', 'apiVersion'];
/** Every CEL expression of a Validating or MutatingAdmissionPolicy (the fields of the other kind are simply absent). */
const POLICY_EXPRESSIONS = [
  ['spec', 'validations', '*', 'expression'],
  ['spec', 'validations', '*', 'messageExpression'],
  ['spec', 'auditAnnotations', '*', 'valueExpression'],
  ['spec', 'matchConditions', '*', 'expression'],
  ['spec', 'variables', '*', 'expression'],
  ['spec', 'mutations', '*', 'applyConfiguration', 'expression'],
  ['spec', 'mutations', '*', 'jsonPatch', 'expression'],
];

/** ValidatingAdmissionPolicy and MutatingAdmissionPolicy. */
export const admissionPolicy: KindRule = {
  toUpstream(obj, ctx) {
    mapStringAt(obj, PARAM_KIND_API_VERSION, (apiVersion) =>
      apiVersionToUpstream(apiVersion, ctx.tenant, stringAt(objectAt(objectAt(obj, 'spec') ?? {}, 'paramKind') ?? {}, 'kind') ?? ''),
    );
    eachObjectAt(obj, ['spec', 'matchConstraints'], (match) => matchToUpstream(match, POLICY_RULE_GROUPS, ctx));
    expressionsToUpstream(obj, POLICY_EXPRESSIONS);
    return obj;
  },
  toTenant(obj, ctx) {
    const mine =
      mapStringAt(obj, PARAM_KIND_API_VERSION, (apiVersion) => apiVersionToTenant(apiVersion, ctx.tenant)) &&
      everyObjectAt(obj, ['spec', 'matchConstraints'], (match) => matchToTenant(match, POLICY_RULE_GROUPS, ctx));
    if (mine) expressionsToTenant(obj, POLICY_EXPRESSIONS);
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

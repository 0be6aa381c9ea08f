// Protobuf request bodies (`application/vnd.kubernetes.protobuf`: what kubectl and client-go typed clients send for
// built-in kinds since Kubernetes 1.31), converted for a tenant at the wire level, without .proto schemas. Every object
// message has `ObjectMeta metadata = 1`; the metadata, pod templates and pod specs are rewritten at field paths, and
// every other field a kind's JSON rule maps (role rules, binding subjects, reviews, references, selectors, webhooks,
// CRD groups...) is read at its field numbers into a JSON skeleton, mapped by that very rule and written back. Field
// numbers are checked against k8s.io/api, apimachinery and apiextensions-apiserver generated.proto (v0.36) by the unit
// test; every other byte is copied as it came. A kind or version without known field numbers is refused (415: send JSON).
// Never lets a field it interprets through in a form the apiserver could read differently: duplicated singular fields,
// unexpected wire types, groups and out-of-range field numbers on the way are refused (400).
import { accessRefusal, carriesTenantLabel, isTenantCrdGroup, isWholeObjectSubresource, type KindRow, type RuleName, type Scope } from '../kinds.ts';
import { TENANT_LABEL, toUpstreamName, type TenantId } from '../prefix.ts';
import { apiVersionToUpstream, groupOfApiVersion } from '../rules/api-groups.ts';
import { admissionPolicy, admissionPolicyBinding, webhookConfiguration } from '../rules/admission.ts';
import { certificateSigningRequest } from '../rules/certificates.ts';
import { INGRESS_CLASS_ANNOTATION, type DefaultClass } from '../rules/class-defaults.ts';
import { crd } from '../rules/crd.ts';
import { endpoints, endpointSlice } from '../rules/endpoints.ts';
import { event } from '../rules/events.ts';
import { NAMESPACE_NAME_LABEL } from '../rules/label-selectors.ts';
import { checkNameFits, checkNamespaceFits, nameMappingOfRow, nameToUpstream, namespaceToUpstream } from '../rules/names.ts';
import { aggregationKeyToUpstream, binding, clusterBinding, policyRuleToUpstream } from '../rules/rbac.ts';
import { networkPolicy } from '../rules/network-policy.ts';
import { resourceQuota } from '../rules/quota.ts';
import { ownerReferencesToUpstream } from '../rules/references.ts';
import { selfSubjectAccessReview, selfSubjectRulesReview, subjectAccessReview } from '../rules/reviews.ts';
import { priorityClassNameToUpstream, refusePodPriorityClass } from '../rules/priority-classes.ts';
import { persistentVolume, persistentVolumeClaim } from '../rules/storage.ts';
import type { ConvertContext, Json, KindRule } from '../rules/rule.ts';
import { badRequest } from '../../errors/status-error.ts';
import { MAGIC, unsupported } from './wire.ts';
import { MessageEdit, EMPTY, stringEntry, readStrings, writeStrings, rewriteAt, type Step, writeRepeatedStrings } from './message-edit.ts';
import {
  type WireSchema,
  readSkeleton,
  writeSkeleton,
  wireString,
  wireMap,
  wireMessages,
  wireStrings,
  wireMessage,
  wireInline,
  wireBytes,
  wireKeyed,
} from './skeleton.ts';
import { parseEnvelope, type Envelope } from './envelope.ts';

export interface ProtobufBodyOptions {
  /** The request's verb (create, update; delete and deletecollection carry DeleteOptions, passed on unchanged). */
  readonly verb: string;
  /** '', 'status' or another subresource carrying the object (isWholeObjectSubresource) for a whole object; any other subresource body has only its metadata names converted. */
  readonly subresource: string;
  /**
   * Scope of an upstream custom kind (as ConvertContext.kindScope), for owner references to custom resources;
   * without it such a reference is refused (415).
   */
  readonly kindScope?: (apiVersion: string, kind: string) => Scope | undefined;
  /**
   * Scope of an upstream custom resource (as ConvertContext.scopeOf), for role rules naming resources of a custom
   * group; without it such a rule with resourceNames is refused (415).
   */
  readonly scopeOf?: (group: string, resource: string) => Scope | undefined;
  /** Hosts tenants' webhooks may call by URL (as ConvertContext.webhookUrlHosts); none when omitted. */
  readonly webhookUrlHosts?: ReadonlySet<string> | undefined;
  /** The version the request's path names: field numbers are known for one version of each kind only. */
  readonly version?: string;
  /** Which platform classes the tenant may use (as ConvertContext.allowsPlatformClass). */
  readonly allowsPlatformClass?: ConvertContext['allowsPlatformClass'];
  /** The tenant's default classes, filled into a created or updated object naming none (as ConvertContext.defaultPlatformClass). */
  readonly defaultPlatformClass?: ConvertContext['defaultPlatformClass'];
  /** The tenant's own PriorityClasses beside the platform's (as ConvertContext.priorityClasses). */
  readonly priorityClasses?: ConvertContext['priorityClasses'];
}

// ---- labels and ObjectMeta ----

export const TENANT_LABEL_BYTES = Buffer.from(TENANT_LABEL);
export const NAMESPACE_NAME_LABEL_BYTES = Buffer.from(NAMESPACE_NAME_LABEL);

/** ObjectMeta (k8s.io/apimachinery pkg/apis/meta/v1/generated.proto). */
export const META = { name: 1, generateName: 2, namespace: 3, labels: 11, ownerReferences: 13, managedFields: 17 } as const;
/** OwnerReference: kind = 1, name = 3, apiVersion = 5. ManagedFieldsEntry: apiVersion = 3. */
export const OWNER = { kind: 1, name: 3, apiVersion: 5 } as const;
export const MANAGED_FIELDS_API_VERSION = 3;

/**
 * Forces `kubezoo.io/tenant=<id>` into a map<string, string> field (labels, matchLabels): every entry with that key is
 * dropped and the right one added. `renamed` maps the value of one other key (the namespace name label).
 */
function forceTenantEntry(
  edit: MessageEdit,
  number: number,
  name: string,
  tenant: TenantId,
  renamed?: (value: string) => string,
  renameKey?: (key: string) => string,
): void {
  for (const field of edit.all(number, name)) {
    const entry = new MessageEdit(edit.payload(field), `${edit.what}.${name}`);
    const keyField = entry.single(1, 'key');
    const valueField = entry.single(2, 'value');
    const key = keyField === undefined ? EMPTY : entry.payload(keyField);
    if (key.equals(TENANT_LABEL_BYTES)) edit.remove(field);
    else if (renamed !== undefined && key.equals(NAMESPACE_NAME_LABEL_BYTES)) {
      const value = entry.string(valueField, NAMESPACE_NAME_LABEL);
      const mapped = renamed(value);
      if (mapped !== value) edit.replace(field, stringEntry(NAMESPACE_NAME_LABEL, mapped));
    } else if (renameKey !== undefined) {
      const keyText = entry.string(keyField, 'key');
      const mapped = renameKey(keyText);
      if (mapped !== keyText) edit.replace(field, stringEntry(mapped, entry.string(valueField, keyText)));
    }
  }
  edit.add(number, stringEntry(TENANT_LABEL, tenant));
}

/** Labels only: the metadata of a pod or claim template. */
function labelMeta(meta: Buffer, tenant: TenantId, what: string): Buffer {
  const edit = new MessageEdit(meta, what);
  forceTenantEntry(edit, META.labels, 'labels', tenant);
  return edit.finish();
}

/** A template (metadata = 1): the tenant label forced into its metadata, created when absent. */
function labelTemplate(template: Buffer, tenant: TenantId, what: string): Buffer {
  const edit = new MessageEdit(template, what);
  const meta = edit.single(1, 'metadata');
  if (meta === undefined) edit.add(1, labelMeta(EMPTY, tenant, `${what}.metadata`));
  else edit.rewrite(meta, (payload) => labelMeta(payload, tenant, `${what}.metadata`));
  return edit.finish();
}

interface Conversion {
  readonly row: KindRow;
  readonly tenant: TenantId;
  readonly kindScope: ((apiVersion: string, kind: string) => Scope | undefined) | undefined;
  readonly scopeOf: ((group: string, resource: string) => Scope | undefined) | undefined;
  readonly webhookUrlHosts: ReadonlySet<string> | undefined;
  readonly allowsPlatformClass: ConvertContext['allowsPlatformClass'];
  readonly priorityClasses: ConvertContext['priorityClasses'];
}

/** Owner references, converted by the very rule JSON bodies take (same mapping, same 422 for unknown owner kinds). */
function ownerReferencesToUpstreamWire(edit: MessageEdit, conversion: Conversion): void {
  const fields = edit.all(META.ownerReferences, 'ownerReferences');
  if (fields.length === 0) return;
  const what = `${edit.what}.ownerReferences`;
  const entries = fields.map((field) => new MessageEdit(edit.payload(field), what));
  const before = entries.map((entry) => readStrings(entry, OWNER));
  const { tenant, kindScope } = conversion;
  if (kindScope === undefined && before.some((owner) => isTenantCrdGroup(groupOfApiVersion(owner.apiVersion)))) {
    throw unsupported('an owner reference to a custom resource');
  }
  const after: Json[] = before.map((owner) => ({ ...owner }));
  const ctx: ConvertContext = { tenant, scopeOf: () => undefined, kindScope: kindScope ?? (() => undefined) };
  ownerReferencesToUpstream({ ownerReferences: after }, ctx);
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]!;
    writeStrings(entry, OWNER, before[i]!, after[i]!);
    edit.replaceMessage(fields[i]!, entry);
  }
}

function managedFieldsToUpstreamWire(edit: MessageEdit, tenant: TenantId, kind: string): void {
  for (const field of edit.all(META.managedFields, 'managedFields')) {
    const entry = new MessageEdit(edit.payload(field), `${edit.what}.managedFields`);
    const apiVersionField = entry.single(MANAGED_FIELDS_API_VERSION, 'apiVersion');
    const apiVersion = entry.string(apiVersionField, 'apiVersion');
    const upstream = apiVersionToUpstream(apiVersion, tenant, kind);
    if (apiVersionField === undefined || upstream === apiVersion) continue;
    entry.replaceString(apiVersionField, upstream);
    edit.replace(field, entry.finish());
  }
}

/**
 * The names of an object's metadata, as the JSON generic rule maps them: namespace (namespaced kinds), name and
 * generateName (the tenant's cluster-scoped kinds); too long once prefixed → 422.
 */
function metaNamesToUpstream(edit: MessageEdit, conversion: Conversion, generateName: boolean): void {
  const { row, tenant } = conversion;
  const nameField = edit.single(META.name, 'name');
  const name = edit.string(nameField, 'name');
  if (row.scope === 'Namespaced') {
    const namespaceField = edit.single(META.namespace, 'namespace');
    const namespace = edit.string(namespaceField, 'namespace');
    if (namespaceField !== undefined && namespace !== '') {
      checkNamespaceFits(row, name, namespace);
      edit.replaceString(namespaceField, namespaceToUpstream(namespace, tenant));
    }
    return;
  }
  const mapping = nameMappingOfRow(row);
  if (nameField !== undefined && name !== '') {
    checkNameFits(row, name);
    edit.replaceString(nameField, nameToUpstream(mapping, name, tenant));
  }
  if (!generateName || mapping !== 'prefix') return;
  const generateNameField = edit.single(META.generateName, 'generateName');
  const prefix = edit.string(generateNameField, 'generateName');
  // The apiserver truncates a long generateName itself, keeping the prefix at its start.
  if (generateNameField !== undefined && prefix !== '') edit.replaceString(generateNameField, toUpstreamName(prefix, tenant));
}

/** A whole object's metadata: names, owner references, managed fields' apiVersions, the tenant label. */
function objectMetaToUpstream(meta: Buffer, conversion: Conversion): Buffer {
  const { row, tenant } = conversion;
  const edit = new MessageEdit(meta, 'metadata');
  metaNamesToUpstream(edit, conversion, true);
  ownerReferencesToUpstreamWire(edit, conversion);
  // A Namespace's `kubernetes.io/metadata.name` label follows its name (the namespace rule).
  const renamed = row.rule === 'namespace' ? (value: string) => (value === '' ? value : namespaceToUpstream(value, tenant)) : undefined;
  // A ClusterRole's aggregate-to-* labels take the tenant's key (the role rule).
  const renameKey = row.rule === 'role' ? (key: string) => aggregationKeyToUpstream(key, tenant) : undefined;
  if (carriesTenantLabel(row)) forceTenantEntry(edit, META.labels, 'labels', tenant, renamed, renameKey);
  managedFieldsToUpstreamWire(edit, tenant, row.kind);
  return edit.finish();
}

// ---- pod specs and templates (k8s.io/api core/v1, apps/v1, batch/v1 generated.proto) ----

/**
 * PodSpec.affinity = 18 → Affinity.podAffinity = 2 | podAntiAffinity = 3 → requiredDuringScheduling… = 1 (repeated
 * PodAffinityTerm) | preferredDuringScheduling… = 2 (repeated WeightedPodAffinityTerm → podAffinityTerm = 2).
 */
export const AFFINITY_TERMS: readonly (readonly Step[])[] = [2, 3].flatMap((affinity) => [
  [18, affinity, 1, '*'],
  [18, affinity, 2, '*', 2],
]);
/** PodAffinityTerm: namespaces = 2 (repeated string), namespaceSelector = 4 (LabelSelector). */
export const TERM = { namespaces: 2, namespaceSelector: 4 } as const;
/** LabelSelector: matchLabels = 1 (map), matchExpressions = 2 (LabelSelectorRequirement: key = 1, values = 3). */
export const SELECTOR = { matchLabels: 1, matchExpressions: 2, key: 1, values: 3 } as const;
/**
 * PodSpec.volumes = 1 (repeated Volume) → volumeSource = 2 → VolumeSource.ephemeral = 29 →
 * EphemeralVolumeSource.volumeClaimTemplate = 1 (PersistentVolumeClaimTemplate: metadata = 1).
 */
export const EPHEMERAL_CLAIM_TEMPLATES: readonly Step[] = [1, '*', 2, 29, 1];

/** A namespace selector only ever selects the tenant's namespaces; names on `kubernetes.io/metadata.name` take the prefix. */
function namespaceSelectorToUpstreamWire(selector: Buffer, tenant: TenantId): Buffer {
  const edit = new MessageEdit(selector, 'namespaceSelector');
  const toUpstream = (namespace: string) => namespaceToUpstream(namespace, tenant);
  for (const field of edit.all(SELECTOR.matchExpressions, 'matchExpressions')) {
    edit.rewrite(field, (payload) => {
      const expression = new MessageEdit(payload, 'namespaceSelector.matchExpressions');
      const keyField = expression.single(SELECTOR.key, 'key');
      if (keyField === undefined || !expression.payload(keyField).equals(NAMESPACE_NAME_LABEL_BYTES)) return payload;
      for (const value of expression.all(SELECTOR.values, 'values')) expression.replaceString(value, toUpstream(expression.string(value, 'values')));
      return expression.finish();
    });
  }
  forceTenantEntry(edit, SELECTOR.matchLabels, 'matchLabels', tenant, toUpstream);
  return edit.finish();
}

function affinityTermToUpstream(term: Buffer, tenant: TenantId): Buffer {
  const edit = new MessageEdit(term, 'pod affinity term');
  for (const field of edit.all(TERM.namespaces, 'namespaces')) edit.replaceString(field, namespaceToUpstream(edit.string(field, 'namespaces'), tenant));
  const selector = edit.single(TERM.namespaceSelector, 'namespaceSelector');
  if (selector !== undefined) edit.rewrite(selector, (payload) => namespaceSelectorToUpstreamWire(payload, tenant));
  return edit.finish();
}

/**
 * What the JSON rules do to a pod spec: affinity terms' namespaces, ephemeral volume claim templates labelled, the
 * priority class the platform's or the tenant's own (rules/priority-classes.ts).
 */
function podSpecToUpstream(spec: Buffer, conversion: Conversion): Buffer {
  const { tenant } = conversion;
  let result = spec;
  for (const path of AFFINITY_TERMS) result = rewriteAt(result, path, 'pod spec', (term) => affinityTermToUpstream(term, tenant));
  result = rewriteAt(result, EPHEMERAL_CLAIM_TEMPLATES, 'pod spec', (template) => labelTemplate(template, tenant, 'volumeClaimTemplate'));
  const edit = new MessageEdit(result, 'pod spec');
  const priorityClass = edit.single(PRIORITY_CLASS_NAME, 'priorityClassName');
  if (priorityClass === undefined) return result;
  const name = edit.string(priorityClass, 'priorityClassName');
  const upstream = priorityClassNameToUpstream(name, conversion);
  if (upstream === name) return result;
  edit.replaceString(priorityClass, upstream);
  return edit.finish();
}

export interface ProtobufTemplates {
  readonly apiVersion: string;
  /** Paths (from the object) to each template (metadata = 1) whose children must carry the tenant label. */
  readonly labelled: readonly (readonly Step[])[];
  /** Paths to each PodSpec. */
  readonly podSpecs: readonly (readonly Step[])[];
  /** A Pod: its spec names no platform-critical priority class (rules/workloads.ts pod). */
  readonly refusesPlatformPriority?: true;
}

/** The pod template of a workload at spec = 2 → template = n; a PodTemplateSpec is metadata = 1, spec = 2. */
const workloadTemplate = (apiVersion: string, template: number): ProtobufTemplates => ({
  apiVersion,
  labelled: [[2, template]],
  podSpecs: [[2, template, 2]],
});

/** By `<group>/<kind>`: the protobuf field paths of the JSON paths in rules/workloads.ts. */
export const TEMPLATES: ReadonlyMap<string, ProtobufTemplates> = new Map([
  ['/Pod', { apiVersion: 'v1', labelled: [], podSpecs: [[2]], refusesPlatformPriority: true }],
  ['/ReplicationController', workloadTemplate('v1', 3)],
  ['/PodTemplate', { apiVersion: 'v1', labelled: [[2]], podSpecs: [[2, 2]] }],
  ['apps/Deployment', workloadTemplate('apps/v1', 3)],
  ['apps/ReplicaSet', workloadTemplate('apps/v1', 3)],
  ['apps/DaemonSet', workloadTemplate('apps/v1', 2)],
  // StatefulSetSpec.volumeClaimTemplates = 4: repeated PersistentVolumeClaim (metadata = 1).
  [
    'apps/StatefulSet',
    {
      apiVersion: 'apps/v1',
      labelled: [
        [2, 3],
        [2, 4, '*'],
      ],
      podSpecs: [[2, 3, 2]],
    },
  ],
  ['batch/Job', workloadTemplate('batch/v1', 6)],
  // CronJobSpec.jobTemplate = 5: JobTemplateSpec (metadata = 1, spec = 2 → JobSpec.template = 6).
  [
    'batch/CronJob',
    {
      apiVersion: 'batch/v1',
      labelled: [
        [2, 5],
        [2, 5, 2, 6],
      ],
      podSpecs: [[2, 5, 2, 6, 2]],
    },
  ],
  // ResourceClaimTemplate spec = 2: ResourceClaimTemplateSpec (metadata = 1, spec = 2 ResourceClaimSpec).
  ['resource.k8s.io/ResourceClaimTemplate', { apiVersion: 'resource.k8s.io/v1', labelled: [[2]], podSpecs: [] }],
]);

/** Pod.spec = 2 → PodSpec.priorityClassName = 24. */
const POD_SPEC = 2;
const PRIORITY_CLASS_NAME = 24;

function refusePlatformPriorityWire(pod: Buffer, conversion: Conversion): void {
  const object = new MessageEdit(pod, 'pod');
  const specField = object.single(POD_SPEC, 'spec');
  if (specField === undefined) return;
  const spec = new MessageEdit(object.payload(specField), 'pod spec');
  const name = spec.single(PRIORITY_CLASS_NAME, 'priorityClassName');
  if (name !== undefined) refusePodPriorityClass(spec.string(name, 'priorityClassName'), conversion);
}

function templatesToUpstream(object: Buffer, templates: ProtobufTemplates, conversion: Conversion): Buffer {
  const { tenant } = conversion;
  if (templates.refusesPlatformPriority === true) refusePlatformPriorityWire(object, conversion);
  let result = object;
  for (const path of templates.labelled) result = rewriteAt(result, path, 'object', (template) => labelTemplate(template, tenant, 'template'));
  for (const path of templates.podSpecs) result = rewriteAt(result, path, 'object', (spec) => podSpecToUpstream(spec, conversion));
  return result;
}

// ---- the tenant's default classes, as rules/class-defaults.ts fills them ----

/** PodSpec: priorityClassName = 24 (a plain string: empty is unset), runtimeClassName = 29 (optional: absent is unset). */
const POD_SPEC_CLASS = { priorityClassName: 24, runtimeClassName: 29 } as const;
/** PersistentVolumeClaimSpec.storageClassName = 5 (optional); a claim and a claim template hold their spec at 2. */
const CLAIM_STORAGE_CLASS = 5;
/** Claim specs by `<group>/<kind>` besides pod specs' ephemeral volumes: a PVC's own, a StatefulSet's volumeClaimTemplates = 4. */
const CLAIM_SPECS: ReadonlyMap<string, readonly (readonly Step[])[]> = new Map([
  ['/PersistentVolumeClaim', [[2]]],
  ['apps/StatefulSet', [[2, 4, '*', 2]]],
]);
/** Ingress: metadata = 1 → annotations = 12; spec = 2 → IngressSpec.ingressClassName = 4 (optional). */
const INGRESS = { annotations: 12, spec: 2, ingressClassName: 4 } as const;
const INGRESS_CLASS_ANNOTATION_BYTES = Buffer.from(INGRESS_CLASS_ANNOTATION);

/** Sets a string field to `value` when unset (absent; `orEmpty`: empty too). */
function fillString(edit: MessageEdit, number: number, name: string, value: string | undefined, orEmpty: boolean): void {
  if (value === undefined) return;
  const field = edit.single(number, name);
  if (field === undefined) edit.add(number, Buffer.from(value));
  else if (orEmpty && field.end === field.valueStart) edit.replaceString(field, value);
}

function claimSpecDefaultsWire(spec: Buffer, defaultClass: DefaultClass): Buffer {
  const edit = new MessageEdit(spec, 'claim spec');
  fillString(edit, CLAIM_STORAGE_CLASS, 'storageClassName', defaultClass('storageclasses'), false);
  return edit.finish();
}

function podSpecDefaultsWire(spec: Buffer, defaultClass: DefaultClass): Buffer {
  const edit = new MessageEdit(spec, 'pod spec');
  fillString(edit, POD_SPEC_CLASS.priorityClassName, 'priorityClassName', defaultClass('priorityclasses'), true);
  fillString(edit, POD_SPEC_CLASS.runtimeClassName, 'runtimeClassName', defaultClass('runtimeclasses'), false);
  return rewriteAt(edit.finish(), [...EPHEMERAL_CLAIM_TEMPLATES, 2], 'pod spec', (claim) => claimSpecDefaultsWire(claim, defaultClass));
}

/** Whether an Ingress's metadata names its class by the older annotation. */
function namesIngressClassByAnnotation(object: Buffer): boolean {
  const meta = new MessageEdit(object, 'ingress').single(1, 'metadata');
  if (meta === undefined) return false;
  const edit = new MessageEdit(object.subarray(meta.valueStart, meta.end), 'metadata');
  return edit.all(INGRESS.annotations, 'annotations').some((entry) => {
    const key = new MessageEdit(edit.payload(entry), 'metadata.annotations').single(1, 'key');
    return key !== undefined && edit.payload(entry).subarray(key.valueStart, key.end).equals(INGRESS_CLASS_ANNOTATION_BYTES);
  });
}

/** The whole object with the tenant's default classes filled in where it names none (rules/class-defaults.ts). */
function classDefaultsToUpstreamWire(object: Buffer, row: KindRow, defaultClass: DefaultClass): Buffer {
  const key = `${row.group}/${row.kind}`;
  let result = object;
  const templates = TEMPLATE_RULES.has(row.rule) ? TEMPLATES.get(key) : undefined;
  for (const path of templates?.podSpecs ?? []) result = rewriteAt(result, path, 'object', (spec) => podSpecDefaultsWire(spec, defaultClass));
  for (const path of CLAIM_SPECS.get(key) ?? []) result = rewriteAt(result, path, 'object', (spec) => claimSpecDefaultsWire(spec, defaultClass));
  if (key === 'networking.k8s.io/Ingress' && !namesIngressClassByAnnotation(result)) {
    const ingressClass = defaultClass('ingressclasses');
    result = rewriteAt(result, [INGRESS.spec], 'object', (spec) => {
      const edit = new MessageEdit(spec, 'ingress spec');
      fillString(edit, INGRESS.ingressClassName, 'ingressClassName', ingressClass, false);
      return edit.finish();
    });
  }
  return result;
}

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

function noScopeOf(): never {
  throw unsupported('a role rule with resourceNames of a custom resource');
}

function noKindScope(): never {
  throw unsupported('a reference to a custom resource');
}

/** The context the JSON rules ask; a custom resource's scope without discovery is refused (415) rather than guessed. */
function ruleContext(conversion: Conversion): ConvertContext {
  const { tenant, kindScope, scopeOf, webhookUrlHosts } = conversion;
  return { tenant, scopeOf: scopeOf ?? noScopeOf, kindScope: kindScope ?? noKindScope, webhookUrlHosts };
}

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
function roleToUpstreamWire(object: Buffer, conversion: Conversion): Buffer {
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
        const keyField = requirement.single(SELECTOR.key, 'key');
        const key = requirement.string(keyField, 'key');
        if (keyField !== undefined && renameKey(key) !== key) requirement.replaceString(keyField, renameKey(key));
        return requirement.finish();
      });
    }
    return edit.finish();
  });
}

/** RoleBinding and ClusterRoleBinding: subjects and roleRef read into JSON, mapped by the JSON rule, written back. */
const bindingToUpstreamWire =
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

function accessReviewToUpstreamWire(identity: boolean): (object: Buffer, conversion: Conversion) => Buffer {
  return (object, conversion) => rewriteAt(object, ACCESS_REVIEW_SPEC, 'object', (spec) => accessReviewSpecToUpstreamWire(spec, conversion, identity));
}

/** SelfSubjectRulesReview: the namespace asked about. */
function rulesReviewToUpstreamWire(object: Buffer, conversion: Conversion): Buffer {
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
const metadataOnly = (object: Buffer): Buffer => object;

/** A kind whose JSON rule maps the fields of `schema` (from the object's own message): read, mapped, written back. */
const skeletonToUpstreamWire =
  (rule: KindRule, schema: WireSchema) =>
  (object: Buffer, conversion: Conversion): Buffer => {
    const json = readSkeleton(object, schema, 'object');
    rule.toUpstream(json, ruleContext(conversion));
    return writeSkeleton(object, schema, json, 'object');
  };

// Field numbers of k8s.io/api core/v1, discovery/v1, events/v1, networking/v1, admissionregistration/v1 and
// apiextensions-apiserver apiextensions/v1 generated.proto (v0.36), for exactly the JSON paths the rules map.

/** core/v1 ObjectReference: kind = 1, namespace = 2, name = 3, apiVersion = 5 (uid, resourceVersion, fieldPath copied). */
export const OBJECT_REFERENCE: WireSchema = { kind: wireString(1), namespace: wireString(2), name: wireString(3), apiVersion: wireString(5) };
/** meta/v1 LabelSelector: matchLabels = 1, matchExpressions = 2 → LabelSelectorRequirement key = 1, values = 3 (operator = 2 copied). */
export const LABEL_SELECTOR: WireSchema = { matchLabels: wireMap(1), matchExpressions: wireMessages(2, { key: wireString(1), values: wireStrings(3) }) };
/** core/v1 SecretReference and ObjectReference: namespace = 2. */
const SECRET_NAMESPACE: WireSchema = { namespace: wireString(2) };
/** admissionregistration/v1 WebhookClientConfig and apiextensions/v1's: service = 1 → ServiceReference namespace = 1; url = 3. */
const CLIENT_CONFIG: WireSchema = { service: wireMessage(1, { namespace: wireString(1) }), url: wireString(3) };
/** admissionregistration/v1 RuleWithOperations: rule = 2 (inline) → Rule apiGroups = 1. */
const RULE_WITH_OPERATIONS: WireSchema = { rule: wireInline(2, { apiGroups: wireStrings(1) }) };
/** admissionregistration/v1 MatchResources: namespaceSelector = 1, objectSelector = 2, resourceRules = 3, excludeResourceRules = 4 → NamedRuleWithOperations ruleWithOperations = 2 (inline). */
const MATCH_RESOURCES: WireSchema = {
  namespaceSelector: wireMessage(1, LABEL_SELECTOR),
  objectSelector: wireMessage(2, LABEL_SELECTOR),
  resourceRules: wireMessages(3, { ruleWithOperations: wireInline(2, RULE_WITH_OPERATIONS) }),
  excludeResourceRules: wireMessages(4, { ruleWithOperations: wireInline(2, RULE_WITH_OPERATIONS) }),
};
/** admissionregistration/v1 MatchCondition and Variable: expression = 2. */
const EXPRESSION_2: WireSchema = { expression: wireString(2) };
/** ValidatingWebhook and MutatingWebhook: clientConfig = 2, rules = 3, namespaceSelector = 5; objectSelector 10 or 11; matchConditions 11 or 12. */
const webhooks = (objectSelector: number, matchConditions: number): WireSchema => ({
  webhooks: wireMessages(2, {
    clientConfig: wireMessage(2, CLIENT_CONFIG),
    rules: wireMessages(3, RULE_WITH_OPERATIONS),
    namespaceSelector: wireMessage(5, LABEL_SELECTOR),
    objectSelector: wireMessage(objectSelector, LABEL_SELECTOR),
    matchConditions: wireMessages(matchConditions, EXPRESSION_2),
  }),
});
/** Validating/MutatingAdmissionPolicy spec = 2 → paramKind = 1 (apiVersion = 1), matchConstraints = 2, matchConditions = 6. */
const POLICY_SPEC: WireSchema = {
  paramKind: wireMessage(1, { apiVersion: wireString(1) }),
  matchConstraints: wireMessage(2, MATCH_RESOURCES),
  matchConditions: wireMessages(6, EXPRESSION_2),
};
/**
 * ValidatingAdmissionPolicy spec → validations = 3 (expression = 1, messageExpression = 4), auditAnnotations = 5
 * (valueExpression = 2), variables = 7.
 */
const VALIDATING_ADMISSION_POLICY: WireSchema = {
  spec: wireMessage(2, {
    ...POLICY_SPEC,
    validations: wireMessages(3, { expression: wireString(1), messageExpression: wireString(4) }),
    auditAnnotations: wireMessages(5, { valueExpression: wireString(2) }),
    variables: wireMessages(7, EXPRESSION_2),
  }),
};
/** MutatingAdmissionPolicy spec → variables = 3, mutations = 4 → applyConfiguration = 3, jsonPatch = 4 (expression = 1). */
const MUTATING_ADMISSION_POLICY: WireSchema = {
  spec: wireMessage(2, {
    ...POLICY_SPEC,
    variables: wireMessages(3, EXPRESSION_2),
    mutations: wireMessages(4, { applyConfiguration: wireMessage(3, { expression: wireString(1) }), jsonPatch: wireMessage(4, { expression: wireString(1) }) }),
  }),
};
/** Validating/MutatingAdmissionPolicyBinding spec = 2 → policyName = 1, paramRef = 2 (namespace = 2), matchResources = 3. */
const ADMISSION_POLICY_BINDING: WireSchema = {
  spec: wireMessage(2, { policyName: wireString(1), paramRef: wireMessage(2, { namespace: wireString(2) }), matchResources: wireMessage(3, MATCH_RESOURCES) }),
};
/**
 * CustomResourceDefinition metadata = 1 (name = 1), spec = 2 → group = 1, names = 3 (plural = 1), conversion = 9 →
 * webhook = 2 → clientConfig = 2.
 */
const CUSTOM_RESOURCE_DEFINITION: WireSchema = {
  metadata: wireMessage(1, { name: wireString(META.name) }),
  spec: wireMessage(2, {
    group: wireString(1),
    names: wireMessage(3, { plural: wireString(1) }),
    conversion: wireMessage(9, { webhook: wireMessage(2, { clientConfig: wireMessage(2, CLIENT_CONFIG) }) }),
  }),
};
/** core/v1 Event: involvedObject = 2, related = 13. */
const CORE_EVENT: WireSchema = { involvedObject: wireMessage(2, OBJECT_REFERENCE), related: wireMessage(13, OBJECT_REFERENCE) };
/** events/v1 Event: regarding = 8, related = 9. */
const EVENTS_EVENT: WireSchema = { regarding: wireMessage(8, OBJECT_REFERENCE), related: wireMessage(9, OBJECT_REFERENCE) };
/** Endpoints subsets = 2 → addresses = 1, notReadyAddresses = 2 → EndpointAddress targetRef = 2. */
const ENDPOINTS: WireSchema = {
  subsets: wireMessages(2, {
    addresses: wireMessages(1, { targetRef: wireMessage(2, OBJECT_REFERENCE) }),
    notReadyAddresses: wireMessages(2, { targetRef: wireMessage(2, OBJECT_REFERENCE) }),
  }),
};
/** discovery/v1 EndpointSlice endpoints = 2 → Endpoint targetRef = 4. */
const ENDPOINT_SLICE: WireSchema = { endpoints: wireMessages(2, { targetRef: wireMessage(4, OBJECT_REFERENCE) }) };
/** CSIPersistentVolumeSource's secret references, by field number. */
const CSI_SECRET_REFS = {
  controllerPublishSecretRef: 6,
  nodeStageSecretRef: 7,
  nodePublishSecretRef: 8,
  controllerExpandSecretRef: 9,
  nodeExpandSecretRef: 10,
} as const;
/**
 * PersistentVolume spec = 2 → claimRef = 4, persistentVolumeSource = 2 (inline) → glusterfs = 4 (endpointsNamespace = 4),
 * rbd = 6 (secretRef = 7), iscsi = 7 (secretRef = 10), cephfs = 9 (secretRef = 5), flexVolume = 12 (secretRef = 3),
 * azureFile = 13 (secretNamespace = 4), scaleIO = 19 (secretRef = 3), storageos = 21 (secretRef = 5), csi = 22.
 */
const PERSISTENT_VOLUME: WireSchema = {
  spec: wireMessage(2, {
    claimRef: wireMessage(4, OBJECT_REFERENCE),
    persistentVolumeSource: wireInline(2, {
      glusterfs: wireMessage(4, { endpointsNamespace: wireString(4) }),
      rbd: wireMessage(6, { secretRef: wireMessage(7, SECRET_NAMESPACE) }),
      iscsi: wireMessage(7, { secretRef: wireMessage(10, SECRET_NAMESPACE) }),
      cephfs: wireMessage(9, { secretRef: wireMessage(5, SECRET_NAMESPACE) }),
      flexVolume: wireMessage(12, { secretRef: wireMessage(3, SECRET_NAMESPACE) }),
      azureFile: wireMessage(13, { secretNamespace: wireString(4) }),
      scaleIO: wireMessage(19, { secretRef: wireMessage(3, SECRET_NAMESPACE) }),
      storageos: wireMessage(21, { secretRef: wireMessage(5, SECRET_NAMESPACE) }),
      csi: wireMessage(22, Object.fromEntries(Object.entries(CSI_SECRET_REFS).map(([name, number]) => [name, wireMessage(number, SECRET_NAMESPACE)]))),
    }),
  }),
};
/** PersistentVolumeClaim spec = 2 → volumeName = 3, dataSourceRef = 8 (TypedObjectReference namespace = 4). */
const PERSISTENT_VOLUME_CLAIM: WireSchema = {
  spec: wireMessage(2, { volumeName: wireString(3), dataSourceRef: wireMessage(8, { namespace: wireString(4) }) }),
};
/**
 * certificates/v1 CertificateSigningRequest metadata = 1 (name = 1, for messages), spec = 2 → request = 1 (read: the
 * groups it asks for), username = 2, groups = 4, signerName = 7.
 */
const CERTIFICATE_SIGNING_REQUEST: WireSchema = {
  metadata: wireMessage(1, { name: wireString(META.name) }),
  spec: wireMessage(2, { request: wireBytes(1), username: wireString(2), groups: wireStrings(4), signerName: wireString(7) }),
};
/** NetworkPolicy spec = 2 → ingress = 2 (from = 2), egress = 3 (to = 2) → NetworkPolicyPeer namespaceSelector = 2. */
const NETWORK_POLICY: WireSchema = {
  spec: wireMessage(2, {
    ingress: wireMessages(2, { from: wireMessages(2, { namespaceSelector: wireMessage(2, LABEL_SELECTOR) }) }),
    egress: wireMessages(3, { to: wireMessages(2, { namespaceSelector: wireMessage(2, LABEL_SELECTOR) }) }),
  }),
};
/**
 * ResourceQuota metadata = 1 (name = 1, for messages), spec = 2 → hard = 1; status = 3 → hard = 1, used = 2
 * (map<string, Quantity>: key = 1, value = 2).
 */
const RESOURCE_QUOTA: WireSchema = {
  metadata: wireMessage(1, { name: wireString(META.name) }),
  spec: wireMessage(2, { hard: wireKeyed(1) }),
  status: wireMessage(3, { hard: wireKeyed(1), used: wireKeyed(2) }),
};

// ---- which kinds are converted from protobuf ----

/** What a kind's JSON rule does beyond the metadata, at the wire level. */
interface ProtobufKind {
  /** The only apiVersion whose field numbers these are (the one the apiserver serves). */
  readonly apiVersion: string;
  readonly toUpstream: (object: Buffer, conversion: Conversion) => Buffer;
}

/** Rules that touch nothing but metadata. */
const METADATA_RULES: ReadonlySet<RuleName> = new Set(['generic', 'namespace', 'shared']);
const TEMPLATE_RULES: ReadonlySet<RuleName> = new Set(['pod', 'workload', 'statefulset', 'cronjob', 'podtemplate', 'claimtemplate']);
/** Kinds whose JSON rule maps fields the wire-level code reads into JSON and writes back. */
const FIELD_RULES: ReadonlyMap<RuleName, ProtobufKind> = new Map([
  ['role', { apiVersion: 'rbac.authorization.k8s.io/v1', toUpstream: roleToUpstreamWire }],
  ['binding', { apiVersion: 'rbac.authorization.k8s.io/v1', toUpstream: bindingToUpstreamWire(binding) }],
  ['clusterrolebinding', { apiVersion: 'rbac.authorization.k8s.io/v1', toUpstream: bindingToUpstreamWire(clusterBinding) }],
  ['selfsubjectaccessreview', { apiVersion: 'authorization.k8s.io/v1', toUpstream: accessReviewToUpstreamWire(false) }],
  ['subjectaccessreview', { apiVersion: 'authorization.k8s.io/v1', toUpstream: accessReviewToUpstreamWire(true) }],
  ['selfsubjectrulesreview', { apiVersion: 'authorization.k8s.io/v1', toUpstream: rulesReviewToUpstreamWire }],
  ['tokenreview', { apiVersion: 'authentication.k8s.io/v1', toUpstream: metadataOnly }],
  ['selfsubjectreview', { apiVersion: 'authentication.k8s.io/v1', toUpstream: metadataOnly }],
]);
const ADMISSION_V1 = 'admissionregistration.k8s.io/v1';
/** `<group>/<kind>` (one rule may serve kinds of different messages), the one apiVersion, the rule, its fields. */
export const SKELETON_ROWS: readonly (readonly [string, string, KindRule, WireSchema])[] = [
  ['/Event', 'v1', event, CORE_EVENT],
  ['events.k8s.io/Event', 'events.k8s.io/v1', event, EVENTS_EVENT],
  ['/Endpoints', 'v1', endpoints, ENDPOINTS],
  ['discovery.k8s.io/EndpointSlice', 'discovery.k8s.io/v1', endpointSlice, ENDPOINT_SLICE],
  ['/PersistentVolume', 'v1', persistentVolume, PERSISTENT_VOLUME],
  ['/PersistentVolumeClaim', 'v1', persistentVolumeClaim, PERSISTENT_VOLUME_CLAIM],
  ['networking.k8s.io/NetworkPolicy', 'networking.k8s.io/v1', networkPolicy, NETWORK_POLICY],
  ['/ResourceQuota', 'v1', resourceQuota, RESOURCE_QUOTA],
  ['admissionregistration.k8s.io/ValidatingWebhookConfiguration', ADMISSION_V1, webhookConfiguration, webhooks(10, 11)],
  ['admissionregistration.k8s.io/MutatingWebhookConfiguration', ADMISSION_V1, webhookConfiguration, webhooks(11, 12)],
  ['admissionregistration.k8s.io/ValidatingAdmissionPolicy', ADMISSION_V1, admissionPolicy, VALIDATING_ADMISSION_POLICY],
  ['admissionregistration.k8s.io/MutatingAdmissionPolicy', ADMISSION_V1, admissionPolicy, MUTATING_ADMISSION_POLICY],
  ['admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding', ADMISSION_V1, admissionPolicyBinding, ADMISSION_POLICY_BINDING],
  ['admissionregistration.k8s.io/MutatingAdmissionPolicyBinding', ADMISSION_V1, admissionPolicyBinding, ADMISSION_POLICY_BINDING],
  ['apiextensions.k8s.io/CustomResourceDefinition', 'apiextensions.k8s.io/v1', crd, CUSTOM_RESOURCE_DEFINITION],
  ['certificates.k8s.io/CertificateSigningRequest', 'certificates.k8s.io/v1', certificateSigningRequest, CERTIFICATE_SIGNING_REQUEST],
];
const SKELETON_KINDS: ReadonlyMap<string, ProtobufKind> = new Map(
  SKELETON_ROWS.map(([key, apiVersion, rule, schema]) => [key, { apiVersion, toUpstream: skeletonToUpstreamWire(rule, schema) }]),
);

/** The fields read at their numbers for a kind, by `<group>/<kind>`: what the unit test checks against generated.proto. */
export const WIRE_SCHEMAS: ReadonlyMap<string, { readonly apiVersion: string; readonly schema: WireSchema }> = new Map(
  SKELETON_ROWS.map(([key, apiVersion, , schema]) => [key, { apiVersion, schema }]),
);

const kindName = (row: KindRow) => `${row.kind || row.resource}${row.group === '' ? '' : '.' + row.group}`;

/** How a whole object of this kind is converted besides its metadata; throws 415 for a kind whose rule protobuf cannot follow. */
function protobufKindOf(row: KindRow): ProtobufKind | undefined {
  if (METADATA_RULES.has(row.rule)) return undefined;
  const fieldRule = FIELD_RULES.get(row.rule) ?? SKELETON_KINDS.get(`${row.group}/${row.kind}`);
  if (fieldRule !== undefined) return fieldRule;
  const templates = TEMPLATE_RULES.has(row.rule) ? TEMPLATES.get(`${row.group}/${row.kind}`) : undefined;
  if (templates === undefined) throw unsupported(`${kindName(row)} objects`);
  return { apiVersion: templates.apiVersion, toUpstream: (object, conversion) => templatesToUpstream(object, templates, conversion) };
}

/** The apiserver decodes the object as the kind its envelope names: it must be the kind of the resource. */
function checkKind(envelope: Envelope, row: KindRow, protobufKind: ProtobufKind | undefined, version: string | undefined): void {
  const { apiVersion, kind } = envelope;
  if (kind !== '' && row.kind !== '' && kind !== row.kind) {
    throw badRequest(`the protobuf request body is a ${kind}, but ${row.resource} are ${row.kind}`);
  }
  if (apiVersion !== '' && groupOfApiVersion(apiVersion) !== row.group) {
    throw badRequest(`the protobuf request body's apiVersion ${apiVersion} is not of the group of ${row.resource} (${row.group || 'core'})`);
  }
  if (protobufKind === undefined) return;
  if (apiVersion !== '' && apiVersion !== protobufKind.apiVersion) throw unsupported(`${kindName(row)} ${apiVersion} objects`);
  // Without an apiVersion in the envelope, the apiserver decodes the body as the version of the path.
  const pathApiVersion = version === undefined ? undefined : row.group === '' ? version : `${row.group}/${version}`;
  if (pathApiVersion !== undefined && pathApiVersion !== protobufKind.apiVersion) throw unsupported(`${kindName(row)} ${pathApiVersion} objects`);
}

/** The kind's own rule first, then the metadata: the order of objectToUpstream (a CRD's rule reads its tenant name). */
function wholeObjectToUpstream(raw: Buffer, conversion: Conversion, protobufKind: ProtobufKind | undefined): Buffer {
  const edit = new MessageEdit(protobufKind === undefined ? raw : protobufKind.toUpstream(raw, conversion), 'object');
  const meta = edit.single(1, 'metadata');
  if (meta === undefined) edit.add(1, objectMetaToUpstream(EMPTY, conversion));
  else edit.rewrite(meta, (payload) => objectMetaToUpstream(payload, conversion));
  return edit.finish();
}

/** A subresource's own object (Scale, Eviction, Binding...): only the names in its metadata. */
function subresourceObjectToUpstream(raw: Buffer, conversion: Conversion): Buffer {
  return rewriteAt(raw, [1], 'object', (meta) => {
    const edit = new MessageEdit(meta, 'metadata');
    metaNamesToUpstream(edit, conversion, false);
    return edit.finish();
  });
}

/**
 * The upstream form of a tenant's protobuf request body for `row` (from the table of kinds): namespace and cluster-scoped
 * names prefixed, the tenant label forced on the object and its templates; every other field the kind's JSON rule
 * maps, as that rule maps it. Throws a StatusError: 404/403 for hidden and shared kinds, 415 for kinds (and verbs) only converted as JSON,
 * 422 for names too long once prefixed, 400 for a malformed body.
 */
export function protobufBodyToUpstream(body: Buffer, row: KindRow, tenant: TenantId, options: ProtobufBodyOptions): Buffer {
  const { verb, subresource } = options;
  const refusal = accessRefusal(row, verb, subresource);
  if (refusal !== null) throw refusal;
  if (verb === 'delete' || verb === 'deletecollection') {
    parseEnvelope(body); // DeleteOptions: preconditions and policies, no names
    return body;
  }
  if (verb !== 'create' && verb !== 'update') throw unsupported(`${verb} request bodies`);
  const wholeObject = isWholeObjectSubresource(row, subresource);
  const protobufKind = wholeObject ? protobufKindOf(row) : undefined;
  const envelope = parseEnvelope(body);
  if (wholeObject) checkKind(envelope, row, protobufKind, options.version);
  const { edit, rawField } = envelope;
  const conversion: Conversion = {
    row,
    tenant,
    kindScope: options.kindScope,
    scopeOf: options.scopeOf,
    webhookUrlHosts: options.webhookUrlHosts,
    allowsPlatformClass: options.allowsPlatformClass,
    priorityClasses: options.priorityClasses,
  };
  const raw = rawField === undefined ? EMPTY : edit.payload(rawField);
  const defaults = wholeObject && subresource === '' ? options.defaultPlatformClass : undefined;
  const object = defaults === undefined ? raw : classDefaultsToUpstreamWire(raw, row, defaults);
  const converted = wholeObject ? wholeObjectToUpstream(object, conversion, protobufKind) : subresourceObjectToUpstream(raw, conversion);
  if (converted === raw) return body;
  if (rawField === undefined) edit.add(2, converted);
  else edit.replace(rawField, converted);
  return Buffer.concat([MAGIC, edit.finish()]);
}

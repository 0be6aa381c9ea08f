// The fields each kind's JSON rule maps, at their numbers in generated.proto (checked by the unit tests): the skeletons
// both directions read and write. Data only: never converts a byte itself.
import type { KindRule } from '../rules/rule.ts';
import type { RuleName } from '../kinds.ts';
import { wireKeyed, wireMap, wireMessage, wireMessages, wireString, wireStrings, type WireSchema, wireInline, wireBytes } from './skeleton.ts';

import { admissionPolicy, admissionPolicyBinding, webhookConfiguration } from '../rules/admission.ts';
import { certificateSigningRequest } from '../rules/certificates.ts';
import { crd } from '../rules/crd.ts';
import { endpoints, endpointSlice } from '../rules/endpoints.ts';
import { event } from '../rules/events.ts';
import { networkPolicy } from '../rules/network-policy.ts';
import { resourceQuota } from '../rules/quota.ts';
import { persistentVolume, persistentVolumeClaim } from '../rules/storage.ts';
import { OBJECT_META } from './field-numbers.ts';

/**
 * Rules that map nothing but metadata (and, in answers, status condition messages): no skeleton. A shared kind's is
 * among them for the request side, which refuses its writes before; answers read shared kinds as they are before.
 */
export const METADATA_RULES: ReadonlySet<RuleName> = new Set(['generic', 'namespace', 'shared']);

// Field numbers of k8s.io/api core/v1, discovery/v1, events/v1, networking/v1, admissionregistration/v1 and
// apiextensions-apiserver apiextensions/v1 generated.proto (v0.36), for exactly the JSON paths the rules map.

/** core/v1 ObjectReference: kind = 1, namespace = 2, name = 3, apiVersion = 5 (uid, resourceVersion, fieldPath copied). */
const OBJECT_REFERENCE: WireSchema = { kind: wireString(1), namespace: wireString(2), name: wireString(3), apiVersion: wireString(5) };
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
export const webhooks = (objectSelector: number, matchConditions: number): WireSchema => ({
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
  metadata: wireMessage(1, { name: wireString(OBJECT_META.name) }),
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
export const ENDPOINTS: WireSchema = {
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
  metadata: wireMessage(1, { name: wireString(OBJECT_META.name) }),
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
  metadata: wireMessage(1, { name: wireString(OBJECT_META.name) }),
  spec: wireMessage(2, { hard: wireKeyed(1) }),
  status: wireMessage(3, { hard: wireKeyed(1), used: wireKeyed(2) }),
};

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

/** The fields read at their numbers for a kind, by `<group>/<kind>`: what the unit test checks against generated.proto. */
export const WIRE_SCHEMAS: ReadonlyMap<string, { readonly apiVersion: string; readonly schema: WireSchema }> = new Map(
  SKELETON_ROWS.map(([key, apiVersion, , schema]) => [key, { apiVersion, schema }]),
);

// ---- what toTenant reads beyond toUpstream: the skeletons of answers ----

/** rbac/v1 PolicyRule apiGroups = 2, resources = 3, resourceNames = 4; ClusterRole aggregationRule = 3 → clusterRoleSelectors = 1. */
export const ROLE: WireSchema = {
  metadata: wireMessage(1, { labels: wireMap(OBJECT_META.labels) }),
  rules: wireMessages(2, { apiGroups: wireStrings(2), resources: wireStrings(3), resourceNames: wireStrings(4) }),
};
export const CLUSTER_ROLE: WireSchema = { ...ROLE, aggregationRule: wireMessage(3, { clusterRoleSelectors: wireMessages(1, LABEL_SELECTOR) }) };
/** RoleBinding: subjects = 2 (kind = 1, apiGroup = 2, name = 3, namespace = 4), roleRef = 3 (apiGroup = 1, kind = 2, name = 3). */
export const BINDING: WireSchema = {
  metadata: wireMessage(1, { name: wireString(OBJECT_META.name) }),
  subjects: wireMessages(2, { kind: wireString(1), apiGroup: wireString(2), name: wireString(3), namespace: wireString(4) }),
  roleRef: wireMessage(3, { apiGroup: wireString(1), kind: wireString(2), name: wireString(3) }),
};
/** What toTenant reads beyond what toUpstream maps: event texts (core message = 4, events.k8s.io note = 10), a CSR's extra (spec = 2 → extra = 6). */
export const TENANT_ONLY_FIELDS: ReadonlyMap<string, (schema: WireSchema) => WireSchema> = new Map<string, (schema: WireSchema) => WireSchema>([
  ['/Event', (schema: WireSchema) => ({ ...schema, message: wireString(4) })],
  ['events.k8s.io/Event', (schema: WireSchema) => ({ ...schema, note: wireString(10) })],
  [
    'certificates.k8s.io/CertificateSigningRequest',
    (schema: WireSchema) => {
      const spec = schema.spec!;
      if (spec.type !== 'message') throw new TypeError('a CSR spec is a message');
      return { ...schema, spec: wireMessage(spec.number, { ...spec.schema, extra: wireKeyed(6) }) };
    },
  ],
]);

/** meta/v1 Status: message = 3, details = 5 → name = 1, group = 2, kind = 3, causes = 4 (message = 2, field = 3). */
export const STATUS: WireSchema = {
  message: wireString(3),
  details: wireMessage(5, {
    name: wireString(1),
    group: wireString(2),
    kind: wireString(3),
    causes: wireMessages(4, { message: wireString(2), field: wireString(3) }),
  }),
};

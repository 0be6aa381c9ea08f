// The second wall's admission half (DESIGN §4b): an upstream ValidatingAdmissionPolicy, enforced by the apiserver
// itself, that refuses any write by a tenant identity (user extra `tenant=<id>`) outside that tenant's prefix.
// Never matches a request without that extra (administrators, controllers, tenantgate's own calls), nor reviews.
import { STORED_RBAC_GROUP } from '../convert/kinds.ts';
import { TENANT_LABEL } from '../convert/prefix.ts';
import { TENANT_EXTRA_KEY } from '../auth/impersonation.ts';
import { TENANT_SIGNER_DOMAIN_SUFFIX } from '../convert/rules/signers.ts';
import { TENANTGATE_NAMESPACE_ANNOTATIONS } from './tenant-classes.ts';
import { TENANT_QUOTA_NAME } from './tenant-quota.ts';

/**
 * Name of the policy and of its binding. Admission policies take DNS subdomain names (no `tenantgate:`); `tenant` +
 * `g` is no tenant's `<id>-` prefix, so no tenant can name either.
 */
export const TENANT_CONFINEMENT = 'tenantgate.tenant-confinement';

/**
 * Every subject of a ClusterRoleBinding a tenant writes starts with this, then one of the tenant's upstream identity
 * forms: `<id>-` (users), `<id>:` (groups), `system:serviceaccount:<id>-` (service accounts). Such "shadow" subjects
 * match no real identity: a tenant's cluster-wide grant never becomes an upstream grant over every namespace.
 */
export const CLUSTER_BINDING_SUBJECT_PREFIX = 'tenantgate:cluster:';

const AGGREGATION_LABEL = 'rbac.authorization.k8s.io/aggregate-to-';

/** A CEL string literal (single-quoted) of a constant; line breaks escaped (a PEM has them). */
export function cel(value: string): string {
  return `'${value.replaceAll('\\', '\\\\').replaceAll("'", "\\'").replaceAll('\n', '\\n').replaceAll('\r', '\\r')}'`;
}

const ADMISSION = 'admissionregistration.k8s.io/v1';

export const TENANT_CONFINEMENT_POLICY = {
  apiVersion: ADMISSION,
  kind: 'ValidatingAdmissionPolicy',
  metadata: { name: TENANT_CONFINEMENT },
  spec: {
    failurePolicy: 'Fail',
    matchConstraints: {
      matchPolicy: 'Equivalent',
      namespaceSelector: {},
      objectSelector: {},
      resourceRules: [{ apiGroups: ['*'], apiVersions: ['*'], operations: ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'], resources: ['*/*'], scope: '*' }],
      // Reviews write nothing: they ask about identities (and tenantgate converts what they ask).
      excludeResourceRules: [
        { apiGroups: ['authentication.k8s.io', 'authorization.k8s.io'], apiVersions: ['*'], operations: ['*'], resources: ['*/*'], scope: '*' },
      ],
    },
    // (No extra at all is no tenant: `has` first, so an administrator's request never fails the condition.)
    matchConditions: [{ name: 'tenant-identity', expression: `has(request.userInfo.extra) && ${cel(TENANT_EXTRA_KEY)} in request.userInfo.extra` }],
    variables: [
      { name: 'tenants', expression: `request.userInfo.extra[${cel(TENANT_EXTRA_KEY)}]` },
      { name: 'tenant', expression: 'size(variables.tenants) == 1 ? variables.tenants[0] : ""' },
      { name: 'prefix', expression: "variables.tenant + '-'" },
      // (The request leaves out empty fields: a cluster-scoped request has no namespace, the core group no name.)
      { name: 'requestNamespace', expression: "has(request.namespace) ? request.namespace : ''" },
      { name: 'apiGroup', expression: "has(request.resource.group) ? request.resource.group : ''" },
      // A create may carry only generateName: its name is generated from it (and may be generated already). A
      // deletecollection names nothing: each object it deletes is judged with its old object.
      {
        name: 'name',
        expression:
          "has(request.name) && request.name != '' ? request.name : " +
          "(object != null && has(object.metadata) && has(object.metadata.name) && object.metadata.name != '' ? object.metadata.name : " +
          '(object != null && has(object.metadata) && has(object.metadata.generateName) ? object.metadata.generateName : ' +
          "(oldObject != null && has(oldObject.metadata) && has(oldObject.metadata.name) ? oldObject.metadata.name : '')))",
      },
      { name: 'isNamespace', expression: "variables.apiGroup == '' && request.resource.resource == 'namespaces'" },
      { name: 'isCrd', expression: "variables.apiGroup == 'apiextensions.k8s.io' && request.resource.resource == 'customresourcedefinitions'" },
      { name: 'isClusterRole', expression: "variables.apiGroup == 'rbac.authorization.k8s.io' && request.resource.resource == 'clusterroles'" },
      // A tenant's are tenantgate's custom resources (stored); a real one no tenant identity is granted, checked alike.
      {
        name: 'isClusterBinding',
        expression: `(variables.apiGroup == 'rbac.authorization.k8s.io' || variables.apiGroup == ${cel(STORED_RBAC_GROUP)}) && request.resource.resource == 'clusterrolebindings'`,
      },
      { name: 'isCsr', expression: "variables.apiGroup == 'certificates.k8s.io' && request.resource.resource == 'certificatesigningrequests'" },
      { name: 'isPriorityClass', expression: "variables.apiGroup == 'scheduling.k8s.io' && request.resource.resource == 'priorityclasses'" },
      {
        name: 'subjectForms',
        expression: `[${cel(CLUSTER_BINDING_SUBJECT_PREFIX)} + variables.prefix, ${cel(CLUSTER_BINDING_SUBJECT_PREFIX)} + variables.tenant + ':', ${cel(CLUSTER_BINDING_SUBJECT_PREFIX + 'system:serviceaccount:')} + variables.prefix]`,
      },
    ],
    validations: [
      {
        // tenantgate always sends exactly one; anything else did not come from tenantgate. (A length, not a regex:
        // this runs on every tenant write.)
        expression: 'size(variables.tenant) == 6',
        message: `tenantgate: a tenant request carries exactly one tenant id in its user extra ${TENANT_EXTRA_KEY}`,
        reason: 'Forbidden',
      },
      {
        // Namespaced objects (and a Namespace's own requests) by namespace; cluster-scoped ones by name. A CRD is
        // named <plural>.<id>-<group>: its group part carries the prefix.
        expression:
          "variables.requestNamespace != '' ? variables.requestNamespace.startsWith(variables.prefix) : " +
          "(variables.isCrd ? variables.name.indexOf('.') > 0 && variables.name.substring(variables.name.indexOf('.') + 1).startsWith(variables.prefix) : variables.name.startsWith(variables.prefix))",
        messageExpression:
          "'tenantgate: tenant ' + variables.tenant + ' may write only in its own namespaces and names (prefix ' + variables.prefix + '), not ' + " +
          "(variables.requestNamespace != '' ? 'namespace ' + variables.requestNamespace : request.resource.resource + ' ' + variables.name)",
        message: 'tenantgate: a tenant may write only in its own namespaces and names',
        reason: 'Forbidden',
      },
      {
        // A tenant's custom resources live in its own CRD groups (`<id>-<group>`); the shared role that lets tenant
        // admins act on cluster-scoped ones names every tenant's groups (tenants/bootstrap.ts), so this keeps each in its
        // own. A group with a tenant-id-like head (6 characters, then '-') is some tenant's; no built-in group has one.
        expression: "size(variables.apiGroup) < 7 || variables.apiGroup.substring(6, 7) != '-' || variables.apiGroup.startsWith(variables.prefix)",
        messageExpression:
          "'tenantgate: tenant ' + variables.tenant + ' may write only in its own API groups (prefix ' + variables.prefix + '), not ' + variables.apiGroup",
        message: 'tenantgate: a tenant may write only in its own API groups',
        reason: 'Forbidden',
      },
      {
        expression: `!variables.isNamespace || object == null || (has(object.metadata.labels) && ${cel(TENANT_LABEL)} in object.metadata.labels && object.metadata.labels[${cel(TENANT_LABEL)}] == variables.tenant)`,
        messageExpression: `'tenantgate: a namespace of tenant ' + variables.tenant + ' carries the label ${TENANT_LABEL}=' + variables.tenant`,
        message: `tenantgate: a tenant's namespace carries the label ${TENANT_LABEL}`,
        reason: 'Forbidden',
      },
      {
        expression: '!variables.isCrd || object == null || (has(object.spec) && has(object.spec.group) && object.spec.group.startsWith(variables.prefix))',
        messageExpression: "'tenantgate: a custom resource definition of tenant ' + variables.tenant + ' has a group starting with ' + variables.prefix",
        message: "tenantgate: a tenant's custom resource definition has a group under its prefix",
        reason: 'Forbidden',
      },
      {
        expression:
          '!variables.isClusterBinding || object == null || !has(object.subjects) || object.subjects.all(s, variables.subjectForms.exists(form, s.name.startsWith(form)))',
        messageExpression: `'tenantgate: a cluster role binding of tenant ' + variables.tenant + ' names only its own identities as ${CLUSTER_BINDING_SUBJECT_PREFIX}' + variables.prefix + '..., ${CLUSTER_BINDING_SUBJECT_PREFIX}' + variables.tenant + ':... or ${CLUSTER_BINDING_SUBJECT_PREFIX}system:serviceaccount:' + variables.prefix + '...'`,
        message: "tenantgate: a tenant's cluster role binding names only its own identities",
        reason: 'Forbidden',
      },
      {
        // A tenant's own PriorityClass is told from the platform's by its label (rules/priority-classes.ts), and is
        // never the upstream's global default: that would be every tenant's pods' and the platform's.
        expression:
          `!variables.isPriorityClass || object == null || (has(object.metadata.labels) && ${cel(TENANT_LABEL)} in object.metadata.labels && object.metadata.labels[${cel(TENANT_LABEL)}] == variables.tenant ` +
          '&& !(has(object.globalDefault) && object.globalDefault))',
        messageExpression: `'tenantgate: a priority class of tenant ' + variables.tenant + ' carries the label ${TENANT_LABEL}=' + variables.tenant + ' and is not the global default'`,
        message: `tenantgate: a tenant's priority class carries the label ${TENANT_LABEL} and is not the global default`,
        reason: 'Forbidden',
      },
      {
        // An upstream signer (kube-controller-manager's kubernetes.io/* ones) would sign with the upstream's CA.
        expression: `!variables.isCsr || object == null || (has(object.spec) && has(object.spec.signerName) && object.spec.signerName.startsWith(variables.tenant + ${cel(TENANT_SIGNER_DOMAIN_SUFFIX + '/')}))`,
        messageExpression: `'tenantgate: a certificate signing request of tenant ' + variables.tenant + ' names a signer of its own signer domain ' + variables.tenant + ${cel(TENANT_SIGNER_DOMAIN_SUFFIX)}`,
        message: "tenantgate: a tenant's certificate signing request names a signer of its own signer domain",
        reason: 'Forbidden',
      },
      {
        // The platform classes a namespace's pods may use are its Tenant's (tenant-classes.ts): tenantgate writes them.
        expression:
          `!variables.isNamespace || object == null || [${TENANTGATE_NAMESPACE_ANNOTATIONS.map(cel).join(', ')}].all(key, ` +
          `(has(object.metadata.annotations) && key in object.metadata.annotations ? object.metadata.annotations[key] : '<none>') == ` +
          `(oldObject != null && has(oldObject.metadata.annotations) && key in oldObject.metadata.annotations ? oldObject.metadata.annotations[key] : '<none>'))`,
        message:
          "tenantgate: a namespace's tenantgate.kubezoo.io/allowed-* and priority-band annotations are its Tenant's (spec.priorityClasses, storageClasses, ...), which only the platform changes",
        reason: 'Forbidden',
      },
      {
        // A quota'd tenant's share in each namespace is tenantgate's (tenant-quota.ts): the tenant's limit is its Tenant's.
        expression: `!(variables.apiGroup == '' && request.resource.resource == 'resourcequotas' && variables.name == ${cel(TENANT_QUOTA_NAME)})`,
        message: `tenantgate: the resource quota ${TENANT_QUOTA_NAME} holds the tenant's limits (its Tenant's spec.quota), which only the platform changes`,
        reason: 'Forbidden',
      },
      {
        // The upstream's admin, edit and view roles aggregate every ClusterRole with these labels.
        expression: `!variables.isClusterRole || object == null || !has(object.metadata.labels) || !object.metadata.labels.exists(key, key.startsWith(${cel(AGGREGATION_LABEL)}))`,
        message: `tenantgate: a tenant's cluster role carries no ${AGGREGATION_LABEL}* label (it would aggregate into the upstream's own roles)`,
        reason: 'Forbidden',
      },
    ],
  },
};

/**
 * A policy of tenantgate's over the writes `resourceRules` name in every tenant namespace (the tenant label), whoever
 * makes them: a tenant, or a controller from its template. `checks`: its variables and validations.
 */
export function tenantNamespacesPolicy<Checks extends { variables?: object[]; validations: object[] }>(
  name: string,
  resourceRules: readonly object[],
  checks: Checks,
) {
  return {
    apiVersion: ADMISSION,
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        matchPolicy: 'Equivalent',
        namespaceSelector: { matchExpressions: [{ key: TENANT_LABEL, operator: 'Exists' }] },
        objectSelector: {},
        resourceRules,
      },
      ...checks,
    },
  };
}

/** The binding that puts a policy of tenantgate's in force (Deny), named as the policy. */
export function denyBindingOf(policyName: string) {
  return {
    apiVersion: ADMISSION,
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: policyName },
    spec: { policyName, validationActions: ['Deny'] },
  };
}

/** A policy and its binding, as the objects tenantgate keeps upstream (kept-objects.ts). */
export function keptPolicyObjects(policy: { metadata: { name: string } }, binding: { metadata: { name: string } }) {
  return [
    { collection: `/apis/${ADMISSION}/validatingadmissionpolicies`, object: policy },
    { collection: `/apis/${ADMISSION}/validatingadmissionpolicybindings`, object: binding },
  ];
}

export const TENANT_CONFINEMENT_BINDING = denyBindingOf(TENANT_CONFINEMENT);

export const TENANT_CONFINEMENT_OBJECTS = keptPolicyObjects(TENANT_CONFINEMENT_POLICY, TENANT_CONFINEMENT_BINDING);

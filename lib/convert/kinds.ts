// The one table of kinds: for every resource the kube-apiserver (1.36) serves, its scope, whether it is the
// tenant's own, shared read-only or hidden, which conversion rule applies, how lists find it and how it reads in
// protobuf. Adding a kind is one row.
// Never treats an unknown built-in resource as the tenant's: what the table does not know is not served.
import { forbidden, notFound, StatusError } from '../errors/status-error.ts';

export type Scope = 'Namespaced' | 'Cluster';

/**
 * tenant: each tenant has its own (prefixed upstream); shared-read-only: one upstream object every tenant reads
 * under its real name and none may write; hidden: not served to tenants at all (404, absent from discovery).
 */
export type Tenancy = 'tenant' | 'shared-read-only' | 'hidden';

/**
 * How a cross-namespace (or cluster-scoped) list or watch finds the tenant's objects.
 * label-filter: one upstream request with the tenant label selector merged in.
 * per-namespace: some objects are made by upstream controllers without the label, so merge per-namespace requests.
 * unfiltered: shared kinds, listed as they are. none: hidden kinds, never listed.
 */
export type ListPath = 'label-filter' | 'per-namespace' | 'unfiltered' | 'none';

/** Names of the conversion rules in lib/convert/rules (the map there must have exactly these keys). */
export type RuleName =
  | 'generic'
  | 'pod'
  | 'workload'
  | 'statefulset'
  | 'cronjob'
  | 'podtemplate'
  | 'claimtemplate'
  | 'namespace'
  | 'event'
  | 'endpoints'
  | 'endpointslice'
  | 'role'
  | 'binding'
  | 'clusterrolebinding'
  | 'crd'
  | 'custom-resource'
  | 'persistentvolume'
  | 'persistentvolumeclaim'
  | 'networkpolicy'
  | 'resourcequota'
  | 'webhook-configuration'
  | 'admission-policy'
  | 'admission-policy-binding'
  | 'subjectaccessreview'
  | 'selfsubjectaccessreview'
  | 'selfsubjectrulesreview'
  | 'tokenreview'
  | 'selfsubjectreview'
  | 'certificatesigningrequest'
  | 'node'
  | 'apiservice'
  | 'shared'
  | 'priorityclass'
  | 'hidden';

export interface KindRow {
  /** API group as the tenant names it ('' for core). */
  readonly group: string;
  /** Plural resource name, without subresource. */
  readonly resource: string;
  /** Kind; '' for a custom resource whose kind discovery did not tell. */
  readonly kind: string;
  readonly scope: Scope;
  readonly tenancy: Tenancy;
  readonly rule: RuleName;
  readonly listPath: ListPath;
  /**
   * The subresources the apiserver serves for the kind that carry the object (`status`, `finalize`...), not the
   * ones that reach elsewhere (exec, proxy): what upstream RBAC grants a tenant on its cluster-scoped kinds.
   */
  readonly subresources: readonly string[];
  /**
   * The group its objects are kept under upstream, when not `group`: a tenant kind the upstream must never act on (or
   * whose real objects would cost every request, ClusterRoleBindings) is kept as a custom resource of tenantgate's own
   * CRD there (tenants/stored-kinds.ts), same resource, kind and version. Paths, apiVersions, RBAC rules and reviews
   * map `group` ↔ `upstreamGroup` per resource and kind (rules/api-groups.ts); a group's other kinds may stay real.
   */
  readonly upstreamGroup?: string;
  /** How it is converted in protobuf, beyond what its rule names; absent: its answers are asked for as JSON. */
  readonly protobuf?: ProtobufColumn;
}

/** A step of a protobuf field path: a field number, or '*' after a repeated field's number (every element). */
export type ProtobufStep = number | '*';

/**
 * A kind in protobuf (lib/convert/protobuf/), in its group's v1: the one version whose field numbers tenantgate knows
 * (checked against generated.proto by the unit tests).
 */
export interface ProtobufColumn {
  /** status → conditions → a condition's message: the messages the generic rule strips of the tenant's prefixes; null: none. */
  readonly conditions: readonly [status: number, conditions: number, message: number] | null;
  /** Where its templates and pod specs are (rules/workloads.ts's paths, as field paths from the object). */
  readonly templates?: ProtobufTemplatePaths;
}

export interface ProtobufTemplatePaths {
  /** Paths to each template (metadata = 1) whose children must carry the tenant label. */
  readonly labelled: readonly (readonly ProtobufStep[])[];
  /** Paths to each PodSpec. */
  readonly podSpecs: readonly (readonly ProtobufStep[])[];
  /** A Pod: its spec names no platform-critical priority class (rules/workloads.ts pod). */
  readonly refusesPlatformPriority?: true;
}

const N: Scope = 'Namespaced';
const C: Scope = 'Cluster';

function tenant(
  group: string,
  resource: string,
  kind: string,
  scope: Scope,
  rule: RuleName = 'generic',
  listPath: 'label-filter' | 'per-namespace' = 'label-filter',
  subresources: readonly string[] = [],
): KindRow {
  return Object.freeze({ group, resource, kind, scope, tenancy: 'tenant', rule, listPath, subresources: Object.freeze(subresources) });
}
function shared(group: string, resource: string, kind: string, scope: Scope, rule: RuleName = 'shared', subresources: readonly string[] = []): KindRow {
  return Object.freeze({ group, resource, kind, scope, tenancy: 'shared-read-only', rule, listPath: 'unfiltered', subresources: Object.freeze(subresources) });
}
/**
 * A tenant kind kept upstream as tenantgate's custom resources in `upstreamGroup` (see KindRow.upstreamGroup). Its rule
 * maps the apiVersion (the custom resource's own does nothing else); `subresources`: the built-in kind's.
 */
function storedAs(
  upstreamGroup: string,
  group: string,
  resource: string,
  kind: string,
  scope: Scope,
  rule: RuleName = 'custom-resource',
  subresources: readonly string[] = ['status'],
): KindRow {
  return Object.freeze({
    group,
    resource,
    kind,
    scope,
    tenancy: 'tenant',
    rule,
    listPath: 'label-filter',
    subresources: Object.freeze(subresources),
    upstreamGroup,
  });
}
function hidden(group: string, resource: string, kind: string, scope: Scope): KindRow {
  return Object.freeze({ group, resource, kind, scope, tenancy: 'hidden', rule: 'hidden', listPath: 'none', subresources: [] });
}

/** `row`, converted in protobuf as `conditions` and `templates` say (KindRow.protobuf). */
function inProtobuf(row: KindRow, conditions: ProtobufColumn['conditions'], templates?: ProtobufTemplatePaths): KindRow {
  return Object.freeze({ ...row, protobuf: Object.freeze(templates === undefined ? { conditions } : { conditions, templates }) });
}

/** The pod template of a workload at spec = 2 → template = n; a PodTemplateSpec is metadata = 1, spec = 2. */
const workloadTemplate = (template: number): ProtobufTemplatePaths => ({ labelled: [[2, template]], podSpecs: [[2, template, 2]] });
/** A Pod's spec = 2. */
const POD_TEMPLATES: ProtobufTemplatePaths = { labelled: [], podSpecs: [[2]], refusesPlatformPriority: true };
/** A PodTemplate's template = 2. */
const POD_TEMPLATE_TEMPLATES: ProtobufTemplatePaths = { labelled: [[2]], podSpecs: [[2, 2]] };
/** StatefulSetSpec.template = 3, volumeClaimTemplates = 4: repeated PersistentVolumeClaim (metadata = 1). */
const STATEFUL_SET_TEMPLATES: ProtobufTemplatePaths = {
  labelled: [
    [2, 3],
    [2, 4, '*'],
  ],
  podSpecs: [[2, 3, 2]],
};
/** CronJobSpec.jobTemplate = 5: JobTemplateSpec (metadata = 1, spec = 2 → JobSpec.template = 6). */
const CRON_JOB_TEMPLATES: ProtobufTemplatePaths = {
  labelled: [
    [2, 5],
    [2, 5, 2, 6],
  ],
  podSpecs: [[2, 5, 2, 6, 2]],
};
/** ResourceClaimTemplate spec = 2: ResourceClaimTemplateSpec (metadata = 1, spec = 2 ResourceClaimSpec). */
const CLAIM_TEMPLATE_TEMPLATES: ProtobufTemplatePaths = { labelled: [[2]], podSpecs: [] };

/** Where tenants' FlowSchemas and PriorityLevelConfigurations are kept upstream: tenantgate's CRDs' group. */
export const STORED_FLOWCONTROL_GROUP = 'flowcontrol.tenantgate.kubezoo.io';
/** Where tenants' ClusterRoleBindings are kept upstream: tenantgate's CRD's group (Roles, RoleBindings, ClusterRoles stay real). */
export const STORED_RBAC_GROUP = 'rbac.tenantgate.kubezoo.io';

export const KINDS: readonly KindRow[] = Object.freeze([
  // core
  inProtobuf(tenant('', 'pods', 'Pod', N, 'pod'), [3, 2, 6], POD_TEMPLATES),
  inProtobuf(tenant('', 'services', 'Service', N), [3, 2, 6]),
  // Every namespace gets `kube-root-ca.crt` and the `default` ServiceAccount from upstream controllers, unlabelled.
  inProtobuf(tenant('', 'configmaps', 'ConfigMap', N, 'generic', 'per-namespace'), null),
  inProtobuf(tenant('', 'serviceaccounts', 'ServiceAccount', N, 'generic', 'per-namespace'), null),
  inProtobuf(tenant('', 'secrets', 'Secret', N), null),
  // The endpoints and endpointslice controllers copy the Service's labels, tenant label included.
  inProtobuf(tenant('', 'endpoints', 'Endpoints', N, 'endpoints'), null),
  // Events come from kubelets, schedulers and controllers upstream, none of which set the tenant label.
  inProtobuf(tenant('', 'events', 'Event', N, 'event', 'per-namespace'), null),
  inProtobuf(tenant('', 'namespaces', 'Namespace', C, 'namespace', 'label-filter', ['status', 'finalize']), [3, 2, 6]),
  // Nodes are the shared machines: readable so scheduling is understandable, never writable (cordon, taint, delete).
  shared('', 'nodes', 'Node', C, 'node', ['status']),
  inProtobuf(tenant('', 'persistentvolumes', 'PersistentVolume', C, 'persistentvolume', 'label-filter', ['status']), null),
  inProtobuf(tenant('', 'persistentvolumeclaims', 'PersistentVolumeClaim', N, 'persistentvolumeclaim'), [3, 4, 6]),
  inProtobuf(tenant('', 'replicationcontrollers', 'ReplicationController', N, 'workload'), [3, 6, 5], workloadTemplate(3)),
  inProtobuf(tenant('', 'resourcequotas', 'ResourceQuota', N, 'resourcequota'), null),
  inProtobuf(tenant('', 'limitranges', 'LimitRange', N), null),
  inProtobuf(tenant('', 'podtemplates', 'PodTemplate', N, 'podtemplate'), null, POD_TEMPLATE_TEMPLATES),
  // Deprecated, and it reports the health of the upstream control plane.
  hidden('', 'componentstatuses', 'ComponentStatus', C),
  tenant('', 'bindings', 'Binding', N),

  // apps: pod templates carry the tenant label so controller-made ReplicaSets, Pods and ControllerRevisions inherit it.
  inProtobuf(tenant('apps', 'deployments', 'Deployment', N, 'workload'), [3, 6, 5], workloadTemplate(3)),
  inProtobuf(tenant('apps', 'replicasets', 'ReplicaSet', N, 'workload'), [3, 6, 5], workloadTemplate(3)),
  inProtobuf(tenant('apps', 'statefulsets', 'StatefulSet', N, 'statefulset'), [3, 10, 5], STATEFUL_SET_TEMPLATES),
  inProtobuf(tenant('apps', 'daemonsets', 'DaemonSet', N, 'workload'), [3, 10, 5], workloadTemplate(2)),
  inProtobuf(tenant('apps', 'controllerrevisions', 'ControllerRevision', N), null),

  inProtobuf(tenant('batch', 'jobs', 'Job', N, 'workload'), [3, 1, 6], workloadTemplate(6)),
  inProtobuf(tenant('batch', 'cronjobs', 'CronJob', N, 'cronjob'), null, CRON_JOB_TEMPLATES),
  tenant('autoscaling', 'horizontalpodautoscalers', 'HorizontalPodAutoscaler', N),
  inProtobuf(tenant('policy', 'poddisruptionbudgets', 'PodDisruptionBudget', N), [3, 7, 6]),

  inProtobuf(tenant('rbac.authorization.k8s.io', 'roles', 'Role', N, 'role'), null),
  inProtobuf(tenant('rbac.authorization.k8s.io', 'clusterroles', 'ClusterRole', C, 'role'), null),
  inProtobuf(tenant('rbac.authorization.k8s.io', 'rolebindings', 'RoleBinding', N, 'binding'), null),
  // A real ClusterRoleBinding costs every authorization of every user (the RBAC authorizer scans them all): a tenant's
  // are tenantgate's custom resources upstream, their subjects in the shadow form (rules/cluster-subjects.ts). The
  // lifecycle controller expands each into RoleBindings in the tenant's namespaces (tenants/cluster-bindings.ts);
  // tenantgate evaluates their cluster-scoped rules itself (auth/tenant-rbac.ts).
  storedAs(STORED_RBAC_GROUP, 'rbac.authorization.k8s.io', 'clusterrolebindings', 'ClusterRoleBinding', C, 'clusterrolebinding', []),

  inProtobuf(tenant('networking.k8s.io', 'ingresses', 'Ingress', N), null),
  // An IngressClass names an ingress controller the platform runs; tenants pick one by its real name.
  shared('networking.k8s.io', 'ingressclasses', 'IngressClass', C),
  inProtobuf(tenant('networking.k8s.io', 'networkpolicies', 'NetworkPolicy', N, 'networkpolicy'), null),
  // Cluster network plumbing: every Service's ClusterIP of every tenant, with parent references into their namespaces.
  hidden('networking.k8s.io', 'ipaddresses', 'IPAddress', C),
  hidden('networking.k8s.io', 'servicecidrs', 'ServiceCIDR', C),

  inProtobuf(tenant('discovery.k8s.io', 'endpointslices', 'EndpointSlice', N, 'endpointslice'), null),
  inProtobuf(tenant('events.k8s.io', 'events', 'Event', N, 'event', 'per-namespace'), null),

  // StorageClasses name real provisioners and their parameters (including secret namespaces): defining them is the
  // platform's job, so every tenant reads the same classes and PVCs name them unchanged. Same for attribute classes.
  shared('storage.k8s.io', 'storageclasses', 'StorageClass', C),
  shared('storage.k8s.io', 'volumeattributesclasses', 'VolumeAttributesClass', C),
  shared('storage.k8s.io', 'csidrivers', 'CSIDriver', C),
  shared('storage.k8s.io', 'csinodes', 'CSINode', C),
  // Published by CSI drivers in their own (upstream) namespace; meaningless inside a tenant's namespaces.
  hidden('storage.k8s.io', 'csistoragecapacities', 'CSIStorageCapacity', N),
  // Made by the attach/detach controller for every tenant's volumes, naming nodes and PVs across tenants.
  hidden('storage.k8s.io', 'volumeattachments', 'VolumeAttachment', C),

  // Priority orders all tenants' pods against each other. Tenants read the platform's classes their Tenant allows, by
  // their real names, and may write classes of their own (`<id>-<name>` upstream, labelled) within their Tenant's
  // band of values: the one shared kind a tenant also writes (rules/priority-classes.ts).
  shared('scheduling.k8s.io', 'priorityclasses', 'PriorityClass', C, 'priorityclass'),
  tenant('scheduling.k8s.io', 'workloads', 'Workload', N),
  tenant('scheduling.k8s.io', 'podgroups', 'PodGroup', N),
  // A RuntimeClass names a handler configured on the nodes by the platform; a tenant cannot install one.
  // Tenants use them by real name (pod.spec.runtimeClassName passes through).
  shared('node.k8s.io', 'runtimeclasses', 'RuntimeClass', C),

  inProtobuf(tenant('coordination.k8s.io', 'leases', 'Lease', N), null),
  tenant('coordination.k8s.io', 'leasecandidates', 'LeaseCandidate', N),

  // Signer names are mapped into the tenant's own signer domain, so no upstream signer acts on them; tenantgate signs
  // the tenant's kubernetes.io/kube-apiserver-client requests with the tenant's CA (tenants/csr-signer.ts).
  inProtobuf(
    tenant('certificates.k8s.io', 'certificatesigningrequests', 'CertificateSigningRequest', C, 'certificatesigningrequest', 'label-filter', [
      'status',
      'approval',
    ]),
    [3, 1, 3],
  ),
  // Public CA bundles by signer: harmless to read, the platform's to write.
  shared('certificates.k8s.io', 'clustertrustbundles', 'ClusterTrustBundle', C),
  // Made by kubelets for the tenant's pods, without the tenant label.
  tenant('certificates.k8s.io', 'podcertificaterequests', 'PodCertificateRequest', N, 'generic', 'per-namespace'),

  inProtobuf(tenant('admissionregistration.k8s.io', 'validatingwebhookconfigurations', 'ValidatingWebhookConfiguration', C, 'webhook-configuration'), null),
  inProtobuf(tenant('admissionregistration.k8s.io', 'mutatingwebhookconfigurations', 'MutatingWebhookConfiguration', C, 'webhook-configuration'), null),
  inProtobuf(
    tenant('admissionregistration.k8s.io', 'validatingadmissionpolicies', 'ValidatingAdmissionPolicy', C, 'admission-policy', 'label-filter', ['status']),
    [3, 3, 6],
  ),
  inProtobuf(
    tenant('admissionregistration.k8s.io', 'validatingadmissionpolicybindings', 'ValidatingAdmissionPolicyBinding', C, 'admission-policy-binding'),
    null,
  ),
  inProtobuf(tenant('admissionregistration.k8s.io', 'mutatingadmissionpolicies', 'MutatingAdmissionPolicy', C, 'admission-policy'), null),
  inProtobuf(tenant('admissionregistration.k8s.io', 'mutatingadmissionpolicybindings', 'MutatingAdmissionPolicyBinding', C, 'admission-policy-binding'), null),

  inProtobuf(tenant('apiextensions.k8s.io', 'customresourcedefinitions', 'CustomResourceDefinition', C, 'crd', 'label-filter', ['status']), [3, 1, 5]),
  // One per group version the apiserver serves, local or aggregated: read-only, and each tenant sees those of the
  // groups its discovery shows (its own CRD groups under its names), so `kubectl get apiservices` agrees with discovery.
  shared('apiregistration.k8s.io', 'apiservices', 'APIService', C, 'apiservice', ['status']),
  // A real FlowSchema or priority level would steer or take the upstream's concurrency from everyone: a tenant's are
  // custom resources upstream, which the upstream's API Priority and Fairness never reads, so their rule is a custom
  // resource's (apiVersion only). What they name (priority levels, subjects) stays in the tenant's words: nothing
  // enforces a tenant's flow control, so those names reach nothing and need no prefix.
  storedAs(STORED_FLOWCONTROL_GROUP, 'flowcontrol.apiserver.k8s.io', 'flowschemas', 'FlowSchema', C),
  storedAs(STORED_FLOWCONTROL_GROUP, 'flowcontrol.apiserver.k8s.io', 'prioritylevelconfigurations', 'PriorityLevelConfiguration', C),

  tenant('authentication.k8s.io', 'tokenreviews', 'TokenReview', C, 'tokenreview'),
  tenant('authentication.k8s.io', 'selfsubjectreviews', 'SelfSubjectReview', C, 'selfsubjectreview'),
  tenant('authorization.k8s.io', 'subjectaccessreviews', 'SubjectAccessReview', C, 'subjectaccessreview'),
  tenant('authorization.k8s.io', 'localsubjectaccessreviews', 'LocalSubjectAccessReview', N, 'subjectaccessreview'),
  tenant('authorization.k8s.io', 'selfsubjectaccessreviews', 'SelfSubjectAccessReview', C, 'selfsubjectaccessreview'),
  tenant('authorization.k8s.io', 'selfsubjectrulesreviews', 'SelfSubjectRulesReview', C, 'selfsubjectrulesreview'),

  // Dynamic resource allocation: claims are the tenant's; device classes and slices describe the shared hardware.
  inProtobuf(tenant('resource.k8s.io', 'resourceclaims', 'ResourceClaim', N), null),
  inProtobuf(tenant('resource.k8s.io', 'resourceclaimtemplates', 'ResourceClaimTemplate', N, 'claimtemplate'), null, CLAIM_TEMPLATE_TEMPLATES),
  shared('resource.k8s.io', 'deviceclasses', 'DeviceClass', C),
  shared('resource.k8s.io', 'resourceslices', 'ResourceSlice', C),
  hidden('resource.k8s.io', 'devicetaintrules', 'DeviceTaintRule', C),
  hidden('resource.k8s.io', 'resourcepoolstatusrequests', 'ResourcePoolStatusRequest', C),

  hidden('storagemigration.k8s.io', 'storageversionmigrations', 'StorageVersionMigration', C),
  hidden('internal.apiserver.k8s.io', 'storageversions', 'StorageVersion', C),

  // Aggregated by metrics-server when installed (kubectl top); PodMetrics carry the pod's labels.
  tenant('metrics.k8s.io', 'pods', 'PodMetrics', N),
  shared('metrics.k8s.io', 'nodes', 'NodeMetrics', C),

  // Tenants are served to admins by tenantgate itself, never to tenants (KubeZoo's served private keys).
  hidden('tenant.kubezoo.io', 'tenants', 'Tenant', C),
]);

// group → name → row: lookups on every reference allocate no key strings.
const byResource = new Map<string, Map<string, KindRow>>();
const byKind = new Map<string, Map<string, KindRow>>();
for (const row of KINDS) {
  if (!byResource.has(row.group)) {
    byResource.set(row.group, new Map());
    byKind.set(row.group, new Map());
  }
  byResource.get(row.group)!.set(row.resource, row);
  byKind.get(row.group)!.set(row.kind, row);
}

/** Tenant group → the upstream groups some of its kinds are stored under; and each such upstream group → its tenant group. */
const STORED_GROUPS_OF = new Map<string, string[]>();
const TENANT_GROUP_OF_STORED = new Map<string, string>();
for (const row of KINDS) {
  if (row.upstreamGroup === undefined) continue;
  // One tenant group per stored group: an upstream group read back names one group of the tenant's.
  const tenantGroup = TENANT_GROUP_OF_STORED.get(row.upstreamGroup);
  if (tenantGroup !== undefined && tenantGroup !== row.group) throw new Error(`kinds: ${row.upstreamGroup} stores kinds of ${tenantGroup} and ${row.group}`);
  TENANT_GROUP_OF_STORED.set(row.upstreamGroup, row.group);
  const stored = STORED_GROUPS_OF.get(row.group) ?? [];
  if (!stored.includes(row.upstreamGroup)) stored.push(row.upstreamGroup);
  STORED_GROUPS_OF.set(row.group, stored);
}
/** Groups whose every kind is stored (flowcontrol): an RBAC rule or webhook rule naming one names only the stored group upstream. */
const WHOLLY_STORED_GROUPS: ReadonlySet<string> = new Set(
  [...STORED_GROUPS_OF.keys()].filter(
    (group) => KINDS.every((row) => row.group !== group || row.upstreamGroup !== undefined) && STORED_GROUPS_OF.get(group)!.length === 1,
  ),
);

/** The upstream group of `resource` of a built-in `group`: its own unless the kind is stored as tenantgate's custom resources. */
export function storedGroupOf(group: string, resource: string): string {
  if (!STORED_GROUPS_OF.has(group)) return group;
  return byResource.get(group)?.get(resource)?.upstreamGroup ?? group;
}

/** The upstream group of `kind` of a built-in `group` (apiVersions of objects and references). */
export function storedGroupOfKind(group: string, kind: string): string {
  if (!STORED_GROUPS_OF.has(group)) return group;
  return byKind.get(group)?.get(kind)?.upstreamGroup ?? group;
}

/**
 * The upstream groups a rule naming `group` (of RBAC, of a webhook) names there, whatever its resources: the group
 * itself and those storing some of its kinds (`rbac.authorization.k8s.io` → it and `rbac.tenantgate.kubezoo.io`); a
 * wholly stored group only its stored group (`flowcontrol.apiserver.k8s.io` → `flowcontrol.tenantgate.kubezoo.io`).
 */
export function upstreamGroupsOfRule(group: string): readonly string[] {
  const stored = STORED_GROUPS_OF.get(group);
  if (stored === undefined) return [group];
  return WHOLLY_STORED_GROUPS.has(group) ? stored : [group, ...stored];
}

/** The tenant's group for the upstream group of stored kinds (`flowcontrol.tenantgate.kubezoo.io` → `flowcontrol.apiserver.k8s.io`); undefined for any other. */
export function tenantGroupOfStored(upstreamGroup: string): string | undefined {
  return TENANT_GROUP_OF_STORED.get(upstreamGroup);
}

/** Upstream groups only tenantgate uses, to keep tenants' stored kinds: never shown to a tenant under their own name. */
export const STORED_UPSTREAM_GROUPS: ReadonlySet<string> = new Set(TENANT_GROUP_OF_STORED.keys());

/**
 * Built-in groups without resources in the table: Table/PartialObjectMetadata, discovery, admission and audit
 * payloads, and `extensions`, removed but still named by old owner references. None may be a tenant's CRD group.
 */
const RESOURCELESS_BUILTIN_GROUPS = ['meta.k8s.io', 'apidiscovery.k8s.io', 'admission.k8s.io', 'audit.k8s.io', 'imagepolicy.k8s.io', 'extensions'];
const BUILTIN_GROUPS: ReadonlySet<string> = new Set([...KINDS.map((row) => row.group), ...STORED_UPSTREAM_GROUPS, ...RESOURCELESS_BUILTIN_GROUPS]);

/** True for the groups Kubernetes (and tenantgate's Tenant API) define; every other group is a tenant's CRD group. */
export function isBuiltinGroup(group: string): boolean {
  return BUILTIN_GROUPS.has(group);
}

/** True for a group a tenant's CRD may define: not built in, not core, not a wildcard. Upstream it is `<id>-<group>`. */
export function isTenantCrdGroup(group: string): boolean {
  return group !== '' && group !== '*' && !BUILTIN_GROUPS.has(group);
}

/** The subresources a CRD may give its custom resources (spec.versions[].subresources). */
export const CUSTOM_RESOURCE_SUBRESOURCES: readonly string[] = Object.freeze(['status', 'scale']);

/** The one version of a kind converted in protobuf (KindRow.protobuf): its group's v1. */
export function protobufApiVersion(row: KindRow): string {
  return row.group === '' ? 'v1' : `${row.group}/v1`;
}

/**
 * The row for a resource as the tenant names it (group unprefixed, resource without subresource).
 * Custom resources are tenant objects whose scope (and kind, when known) comes from discovery; without a discovered
 * scope they do not exist (undefined). A built-in group's unknown resource is undefined too: not served.
 */
export function kindOf(group: string, resource: string, discoveredScope?: Scope, discoveredKind?: string): KindRow | undefined {
  if (BUILTIN_GROUPS.has(group)) return byResource.get(group)?.get(resource);
  if (group === '*' || discoveredScope === undefined) return undefined;
  return {
    group,
    resource,
    kind: discoveredKind ?? '',
    scope: discoveredScope,
    tenancy: 'tenant',
    rule: 'custom-resource',
    listPath: 'label-filter',
    subresources: CUSTOM_RESOURCE_SUBRESOURCES,
  };
}

/**
 * The row of the tenant kind whose objects an upstream built-in resource holds: `kindOf` for most, the stored kind for
 * tenantgate's custom resources (`flowschemas.flowcontrol.tenantgate.kubezoo.io`), and undefined for a built-in resource
 * whose tenant kind is stored elsewhere (the real FlowSchemas hold no tenant's objects).
 */
export function kindOfUpstream(upstreamGroup: string, resource: string): KindRow | undefined {
  const row = kindOf(tenantGroupOfStored(upstreamGroup) ?? upstreamGroup, resource);
  return row === undefined || (row.upstreamGroup ?? row.group) !== upstreamGroup ? undefined : row;
}

/** The row of a built-in kind by group and kind (for owner and object references); undefined for custom or unknown kinds. */
export function builtinKindOf(group: string, kind: string): KindRow | undefined {
  return byKind.get(group)?.get(kind);
}

/** Reviews are answered and forgotten, never stored; the apiserver refuses any metadata (a label) on them. */
const REVIEW_RULES: ReadonlySet<RuleName> = new Set([
  'subjectaccessreview',
  'selfsubjectaccessreview',
  'selfsubjectrulesreview',
  'tokenreview',
  'selfsubjectreview',
]);

/** True for kinds whose objects are stored and so carry the tenant label (every tenant kind but the reviews). */
export function carriesTenantLabel(row: KindRow): boolean {
  return row.tenancy === 'tenant' && !REVIEW_RULES.has(row.rule);
}

/**
 * Whether a write to this subresource carries the kind's object itself (`status` of any kind, and the row's own such as
 * `namespaces/finalize` or a CSR's `approval`), which the kind's rules then convert whole (names, forced labels), as for
 * the object: the apiserver keeps the metadata such a body carries, so one converted as a bare subresource would drop
 * the tenant label.
 */
export function isWholeObjectSubresource(row: KindRow, subresource: string): boolean {
  return subresource === '' || subresource === 'status' || row.subresources.includes(subresource);
}

const READ_VERBS: ReadonlySet<string> = new Set(['get', 'list', 'watch']);
/** Subresources of a shared kind a tenant may read: `nodes/proxy` would reach every tenant's pods through the kubelet. */
const SHARED_READABLE_SUBRESOURCES: ReadonlySet<string> = new Set(['', 'status']);

/**
 * Whether tenantgate lets a tenant do `verb` on this kind (what discovery and OpenAPI show, too).
 * Hidden and unknown kinds do not exist for tenants; shared kinds are read-only. Tenant kinds are left to upstream RBAC.
 */
export function tenantMay(row: KindRow | undefined, verb: string, subresource = ''): boolean {
  if (row === undefined || row.tenancy === 'hidden') return false;
  // A tenant's own PriorityClasses: any verb (the platform's stay read-only: rules/priority-classes.ts).
  if (row.rule === 'priorityclass') return subresource === '';
  return row.tenancy === 'tenant' || (READ_VERBS.has(verb) && SHARED_READABLE_SUBRESOURCES.has(subresource));
}

/** Why a tenant may not do `verb` on this kind (a Status to answer with: 404 hidden or unknown, 403 shared), or null when it may. */
export function accessRefusal(row: KindRow | undefined, verb: string, subresource = ''): StatusError | null {
  if (tenantMay(row, verb, subresource)) return null;
  if (row === undefined || row.tenancy === 'hidden') return notFound('the server could not find the requested resource');
  const resource = subresource === '' ? row.resource : row.resource + '/' + subresource;
  return forbidden(
    `${resource}${row.group === '' ? '' : '.' + row.group} is forbidden: ${row.resource} are shared by all tenants of this cluster and read-only`,
    { group: row.group, kind: row.resource },
  );
}

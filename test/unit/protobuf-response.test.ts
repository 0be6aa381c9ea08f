// Protobuf answers of the upstream as the tenant reads them: objects of every kind converted on the wire decode to what
// objectToTenant makes of the same object (null for another tenant's), lists and watch streams give the same bytes
// however they are cut, Status errors read as statusToTenant reads them, and bad bytes are a Status, never a crash.
import t from 'tap';
import { kindOf, type KindRow } from '../../lib/convert/kinds.ts';
import { TENANT_LABEL } from '../../lib/convert/prefix.ts';
import {
  RESPONSE_SCHEMAS,
  STATUS_CONDITIONS,
  objectPartsToTenant,
  protobufBodyToTenant,
  protobufResponseSupported,
  protobufStatusToTenant,
} from '../../lib/convert/protobuf/to-tenant.ts';
import { Output, Splices } from '../../lib/convert/protobuf/splice.ts';
import { ProtobufListToTenant, ProtobufWatchToTenant, protobufListToTenant, protobufWatchEventToTenant } from '../../lib/convert/protobuf/streams.ts';
import { objectToTenant, objectToUpstream, type ConvertContext } from '../../lib/convert/rules/index.ts';
import { statusToTenant } from '../../lib/convert/status.ts';
import { StatusError } from '../../lib/errors/status-error.ts';
import { mutate, seededRandom } from '../helpers/fuzz.ts';
import { thrownStatus } from '../helpers/status-error.ts';
import {
  checkWireSchema,
  decodeBody,
  decodeMessage,
  encodeBody,
  encodeMessage,
  goModuleCache,
  loadProtoMessages,
  protoField,
  protoFields,
  type ProtoMessages,
} from '../helpers/k8s-proto.ts';
import { feedInPieces } from '../helpers/scan-in-pieces.ts';
import { TEMPLATES } from '../../lib/convert/protobuf/pod-spec.ts';
import { WIRE_SCHEMAS } from '../../lib/convert/protobuf/kind-schemas.ts';
import { CAREFUL_PATH, NOT_THE_TENANTS_OBJECT, fastViewOf, objectSplices } from '../../lib/convert/protobuf/fast-view.ts';

const TENANT = 'abc123';
const OTHER = 'zzz999';
type Json = Record<string, unknown>;

const moduleCache = goModuleCache();
const NEEDS_PROTO = {
  skip: moduleCache === undefined ? 'the Go module cache with k8s.io/api v0.36.3 is not on this machine: build the rig first (npm run rig)' : false,
};
const messages: ProtoMessages = moduleCache === undefined ? new Map() : loadProtoMessages(moduleCache);

const WIDGET_KIND_SCOPE = (apiVersion: string, kind: string) => (apiVersion.endsWith('-example.com/v1') && kind === 'Widget' ? 'Cluster' : undefined);
const contextOf = (tenant: string): ConvertContext => ({
  tenant,
  scopeOf: () => undefined,
  kindScope: WIDGET_KIND_SCOPE,
  webhookUrlHosts: new Set(['hooks.example.net']),
});
const CTX = contextOf(TENANT);

/** The .proto package of each group's one converted version. */
const PACKAGE_OF: Record<string, string> = {
  '': 'k8s.io.api.core.v1',
  apps: 'k8s.io.api.apps.v1',
  batch: 'k8s.io.api.batch.v1',
  'rbac.authorization.k8s.io': 'k8s.io.api.rbac.v1',
  'networking.k8s.io': 'k8s.io.api.networking.v1',
  'discovery.k8s.io': 'k8s.io.api.discovery.v1',
  'events.k8s.io': 'k8s.io.api.events.v1',
  'admissionregistration.k8s.io': 'k8s.io.api.admissionregistration.v1',
  'resource.k8s.io': 'k8s.io.api.resource.v1',
  'certificates.k8s.io': 'k8s.io.api.certificates.v1',
  policy: 'k8s.io.api.policy.v1',
  'coordination.k8s.io': 'k8s.io.api.coordination.v1',
  'apiextensions.k8s.io': 'k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1',
};
const messageOf = (key: string) => {
  const [group, kind] = key.split('/') as [string, string];
  return `${PACKAGE_OF[group]}.${kind}`;
};
const META_V1 = 'k8s.io.apimachinery.pkg.apis.meta.v1';

const RESOURCE_OF: Record<string, string> = { Endpoints: 'endpoints', NetworkPolicy: 'networkpolicies', Ingress: 'ingresses' };
function rowOf(group: string, kind: string): KindRow {
  const lower = kind.toLowerCase();
  const resource = RESOURCE_OF[kind] ?? (lower.endsWith('y') ? lower.slice(0, -1) + 'ies' : lower.endsWith('s') ? lower + 'es' : lower + 's');
  const row = kindOf(group, resource);
  if (row === undefined || row.kind !== kind) throw new Error(`no row for ${group}/${kind}`);
  return row;
}

// ---- field numbers ----

t.test('every field number the response engine reads is the one of generated.proto (v0.36.3)', NEEDS_PROTO, async (t) => {
  let checked = 0;
  for (const [key, schema] of RESPONSE_SCHEMAS) checked += checkWireSchema(t, messages, schema, key === 'Status' ? `${META_V1}.Status` : messageOf(key), key);
  for (const [key, path] of STATUS_CONDITIONS) {
    const status = messages.get(messageOf(key))?.get('status');
    const conditions = status === undefined ? undefined : messages.get(status.type)?.get('conditions');
    if (path === null) {
      t.equal(conditions, undefined, `${key} has no status conditions`);
      continue;
    }
    t.same(
      [status?.number, conditions?.number, messages.get(conditions?.type ?? '')?.get('message')?.number],
      path,
      `${key}: status.conditions[].message at ${path.join('.')}`,
    );
    checked += 3;
  }
  const event = messages.get(`${META_V1}.WatchEvent`)!;
  t.same([event.get('type')?.number, event.get('object')?.number], [1, 2], 'WatchEvent type = 1, object = 2');
  t.same(
    [messages.get(`${META_V1}.ListMeta`)?.get('continue')?.number, messages.get('k8s.io.api.core.v1.PodList')?.get('items')?.number],
    [3, 2],
    "ListMeta continue = 3, a list's items = 2",
  );
  for (const [key, { apiVersion }] of [...TEMPLATES, ...WIRE_SCHEMAS]) {
    const group = key.split('/')[0]!;
    t.equal(apiVersion, group === '' ? 'v1' : `${group}/v1`, `${key}: converted in its group's v1, the version answers are checked against`);
  }
  t.ok(checked > 80, `${checked} field numbers checked`);
});

// ---- objects: the differential test ----

const selector = (labels: Json) => ({ matchLabels: labels });
const byName = (...names: string[]) => ({ matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: names }] });
const condition = (type: string, message: string) => ({ type, status: 'False', reason: 'Because', message });
const podSpec = {
  containers: [{ name: 'app', image: 'nginx', ports: [{ containerPort: 80 }] }],
  affinity: {
    podAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: selector({ app: 'db' }), namespaces: ['default', 'team-a'], topologyKey: 'zone' }],
      preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 5, podAffinityTerm: { namespaceSelector: byName('team-b'), topologyKey: 'host' } }],
    },
    podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ namespaceSelector: {}, topologyKey: 'host' }] },
  },
  volumes: [
    {
      name: 'scratch',
      ephemeral: {
        volumeClaimTemplate: { metadata: { labels: { a: 'b' } }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } },
      },
    },
    { name: 'cfg', secret: { secretName: 'cfg' } },
    { name: 'bare', ephemeral: { volumeClaimTemplate: { spec: { accessModes: ['ReadWriteOnce'] } } } },
  ],
};
const template = { metadata: { labels: { app: 'web' }, annotations: { note: 'x' } }, spec: podSpec };
const bareTemplate = { spec: { containers: [{ name: 'c', image: 'busybox' }] } };
const service = { namespace: 'default', name: 'hooks', path: '/validate', port: 8443 };
const resourceRules = [
  { apiGroups: ['apps', 'example.com'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['deployments', 'widgets'], resourceNames: ['web'] },
];
const owners = [
  { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-1', uid: 'u1', controller: true },
  { apiVersion: 'example.com/v1', kind: 'Widget', name: 'w1', uid: 'u2' },
];

/** Objects as the tenant writes them (and the upstream then holds them), with status the upstream adds. */
const CASES: [string, Json][] = [
  [
    '/Pod',
    {
      metadata: { name: 'web', namespace: 'default', labels: { app: 'web' }, ownerReferences: owners },
      spec: podSpec,
      status: { phase: 'Pending', conditions: [condition('PodScheduled', 'pod default/web: 0/3 nodes in "abc123-default" fit'), condition('Ready', '')] },
    },
  ],
  ['/Pod', { metadata: { name: 'plain', namespace: 'default' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } }],
  [
    '/ConfigMap',
    {
      metadata: {
        name: 'cfg',
        namespace: 'default',
        labels: { a: 'b' },
        annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{"metadata":{"namespace":"abc123-default"}}' },
        ownerReferences: owners,
      },
      data: { k: 'abc123-default' },
    },
  ],
  ['/Secret', { metadata: { name: 's', namespace: 'default' }, type: 'Opaque', data: { k: Buffer.from('v').toString('base64') } }],
  ['/ServiceAccount', { metadata: { name: 'sa', namespace: 'team-a' }, secrets: [{ name: 'tok' }] }],
  [
    '/Service',
    {
      metadata: { name: 'web', namespace: 'default' },
      spec: { ports: [{ port: 80 }], selector: { app: 'web' } },
      status: { conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2026-11-25T15:00:00Z', reason: 'R', message: 'in abc123-default' }] },
    },
  ],
  [
    '/Namespace',
    {
      metadata: { name: 'team-a', labels: { 'kubernetes.io/metadata.name': 'team-a', env: 'prod' } },
      status: { phase: 'Active', conditions: [{ type: 'NamespaceDeletionContentFailure', status: 'False', message: 'namespace abc123-team-a is fine' }] },
    },
  ],
  ['/LimitRange', { metadata: { name: 'lr', namespace: 'default' }, spec: { limits: [{ type: 'Container', max: { cpu: '1' } }] } }],
  ['/PodTemplate', { metadata: { name: 'pt', namespace: 'default' }, template }],
  [
    '/ReplicationController',
    {
      metadata: { name: 'rc', namespace: 'default' },
      spec: { replicas: 1, template },
      status: { replicas: 1, conditions: [{ type: 'ReplicaFailure', status: 'True', message: 'quota in abc123-default' }] },
    },
  ],
  [
    'apps/Deployment',
    {
      metadata: { name: 'web', namespace: 'default' },
      spec: { replicas: 2, selector: selector({ app: 'web' }), template },
      status: { conditions: [{ type: 'Progressing', status: 'True', message: 'ReplicaSet "web-1" has progressed in abc123-default' }] },
    },
  ],
  ['apps/ReplicaSet', { metadata: { name: 'web-1', namespace: 'default' }, spec: { selector: selector({ app: 'web' }), template: bareTemplate } }],
  [
    'apps/DaemonSet',
    {
      metadata: { name: 'agent', namespace: 'default' },
      spec: { selector: selector({ app: 'agent' }), template },
      status: { conditions: [{ type: 'X', status: 'True', message: 'abc123-default' }] },
    },
  ],
  [
    'apps/StatefulSet',
    {
      metadata: { name: 'db', namespace: 'default' },
      spec: {
        serviceName: 'db',
        selector: selector({ app: 'db' }),
        template,
        volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'] } }],
      },
      status: { conditions: [{ type: 'X', status: 'True', message: 'abc123-default/db' }] },
    },
  ],
  [
    'apps/ControllerRevision',
    { metadata: { name: 'db-1', namespace: 'default', ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'db', uid: 'u3' }] }, revision: 1 },
  ],
  [
    'batch/Job',
    {
      metadata: { name: 'once', namespace: 'default' },
      spec: { template: bareTemplate },
      status: { conditions: [{ type: 'Failed', status: 'True', message: 'BackoffLimitExceeded in abc123-default' }] },
    },
  ],
  ['batch/CronJob', { metadata: { name: 'tick', namespace: 'default' }, spec: { schedule: '*/5 * * * *', jobTemplate: { spec: { template: bareTemplate } } } }],
  ['resource.k8s.io/ResourceClaimTemplate', { metadata: { name: 'gpu', namespace: 'default' }, spec: { metadata: { labels: { a: 'b' } }, spec: {} } }],
  [
    'coordination.k8s.io/Lease',
    {
      metadata: { name: 'kube-controller-manager', namespace: 'kube-system' },
      spec: { holderIdentity: 'node-1_abc123-x', leaseDurationSeconds: 15, acquireTime: '2026-11-25T15:00:00.000000Z', leaseTransitions: 2 },
    },
  ],
  [
    'policy/PodDisruptionBudget',
    {
      metadata: { name: 'web', namespace: 'default' },
      spec: { minAvailable: 1, selector: selector({ app: 'web' }) },
      status: {
        currentHealthy: 1,
        desiredHealthy: 1,
        expectedPods: 2,
        disruptionsAllowed: 0,
        conditions: [
          {
            type: 'DisruptionAllowed',
            status: 'False',
            lastTransitionTime: '2026-11-25T15:00:00Z',
            reason: 'InsufficientPods',
            message: 'pods in abc123-default',
          },
        ],
      },
    },
  ],
  [
    'resource.k8s.io/ResourceClaim',
    {
      metadata: { name: 'gpu-1', namespace: 'default', ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'web', uid: 'u9' }] },
      spec: { devices: { requests: [{ name: 'gpu', exactly: { deviceClassName: 'gpu.example.com' } }] } },
    },
  ],
  ['networking.k8s.io/Ingress', { metadata: { name: 'ing', namespace: 'default' }, spec: { ingressClassName: 'nginx', rules: [{ host: 'a.example.com' }] } }],
  [
    '/Event',
    {
      metadata: { name: 'web.1', namespace: 'default' },
      involvedObject: { apiVersion: 'v1', kind: 'Pod', namespace: 'default', name: 'web', uid: 'u1' },
      related: { apiVersion: 'v1', kind: 'PersistentVolume', name: 'pv1' },
      reason: 'Started',
      message: 'Started pod abc123-default/web',
      type: 'Normal',
      count: 1,
    },
  ],
  [
    'events.k8s.io/Event',
    {
      metadata: { name: 'cfg.1', namespace: 'team-a' },
      eventTime: '2026-11-25T15:00:00.123456Z',
      reportingController: 'c',
      reportingInstance: 'c-1',
      action: 'A',
      reason: 'R',
      regarding: { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'team-a', name: 'cfg' },
      related: { apiVersion: 'example.com/v1', kind: 'Widget', name: 'w1' },
      note: 'synced abc123-team-a/cfg',
      type: 'Normal',
    },
  ],
  [
    '/Endpoints',
    {
      metadata: { name: 'web', namespace: 'default' },
      subsets: [{ addresses: [{ ip: '10.0.0.1', targetRef: { kind: 'Pod', namespace: 'default', name: 'web-1' } }], ports: [{ port: 80 }] }],
    },
  ],
  [
    'discovery.k8s.io/EndpointSlice',
    {
      metadata: { name: 'web-a', namespace: 'default' },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['10.0.0.1'], targetRef: { kind: 'Pod', namespace: 'default', name: 'web-1' } }],
    },
  ],
  [
    '/PersistentVolume',
    {
      metadata: { name: 'pv1' },
      spec: {
        capacity: { storage: '1Gi' },
        claimRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: 'default', name: 'data' },
        csi: { driver: 'd', volumeHandle: 'h', nodeStageSecretRef: { name: 's', namespace: 'default' } },
      },
    },
  ],
  [
    '/PersistentVolumeClaim',
    {
      metadata: { name: 'data', namespace: 'default' },
      spec: { volumeName: 'pv1', dataSourceRef: { kind: 'VolumeSnapshot', name: 'snap', namespace: 'backups' } },
      status: { conditions: [{ type: 'Resizing', status: 'True', message: 'pv abc123-pv1' }] },
    },
  ],
  [
    'networking.k8s.io/NetworkPolicy',
    {
      metadata: { name: 'allow', namespace: 'default' },
      spec: {
        podSelector: selector({ app: 'web' }),
        ingress: [{ from: [{ namespaceSelector: selector({ 'kubernetes.io/metadata.name': 'team-a' }) }, { namespaceSelector: {} }] }],
        egress: [{ to: [{ namespaceSelector: byName('team-b') }] }],
      },
    },
  ],
  [
    '/ResourceQuota',
    {
      metadata: { name: 'q', namespace: 'default' },
      spec: { hard: { 'count/widgets.example.com': '2', pods: '5' } },
      status: { hard: { 'count/widgets.example.com': '2' }, used: { 'count/widgets.example.com': '1' } },
    },
  ],
  [
    'admissionregistration.k8s.io/ValidatingWebhookConfiguration',
    {
      metadata: { name: 'checks' },
      webhooks: [
        {
          name: 'a.example.com',
          clientConfig: { service },
          rules: [{ operations: ['CREATE'], apiGroups: ['', 'example.com'], apiVersions: ['v1'], resources: ['pods'] }],
          namespaceSelector: byName('default'),
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
          matchConditions: [{ name: 'm', expression: "request.namespace != 'x'" }],
        },
      ],
    },
  ],
  [
    'admissionregistration.k8s.io/MutatingWebhookConfiguration',
    {
      metadata: { name: 'defaults' },
      webhooks: [
        {
          name: 'd.example.com',
          clientConfig: { url: 'https://hooks.example.net/x' },
          objectSelector: selector({ inject: 'true' }),
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
        },
      ],
    },
  ],
  [
    'admissionregistration.k8s.io/ValidatingAdmissionPolicy',
    {
      metadata: { name: 'replicas' },
      spec: {
        paramKind: { apiVersion: 'example.com/v1', kind: 'Limits' },
        matchConstraints: { resourceRules, namespaceSelector: byName('default') },
        validations: [{ expression: "object.metadata.namespace == 'big'" }],
        variables: [{ name: 'r', expression: 'request.namespace' }],
      },
      status: {
        observedGeneration: 1,
        conditions: [{ type: 'TypeChecked', status: 'True', lastTransitionTime: '2026-11-25T15:00:00Z', reason: 'R', message: 'checked in abc123-default' }],
      },
    },
  ],
  [
    'admissionregistration.k8s.io/MutatingAdmissionPolicy',
    {
      metadata: { name: 'label' },
      spec: {
        matchConstraints: { resourceRules },
        mutations: [{ patchType: 'JSONPatch', jsonPatch: { expression: "[JSONPatch{op: 'add', path: '/x', value: request.namespace}]" } }],
      },
    },
  ],
  [
    'admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding',
    {
      metadata: { name: 'rb' },
      spec: {
        policyName: 'replicas',
        paramRef: { name: 'limits', namespace: 'default' },
        matchResources: { namespaceSelector: selector({ env: 'prod' }) },
        validationActions: ['Deny'],
      },
    },
  ],
  ['admissionregistration.k8s.io/MutatingAdmissionPolicyBinding', { metadata: { name: 'lb' }, spec: { policyName: 'label' } }],
  [
    'apiextensions.k8s.io/CustomResourceDefinition',
    {
      metadata: { name: 'widgets.example.com' },
      spec: { group: 'example.com', names: { plural: 'widgets', kind: 'Widget' }, scope: 'Cluster', versions: [{ name: 'v1', served: true, storage: true }] },
      status: { conditions: [{ type: 'Established', status: 'True', message: 'widgets.abc123-example.com is established' }] },
    },
  ],
  [
    'certificates.k8s.io/CertificateSigningRequest',
    {
      metadata: { name: 'alice' },
      spec: {
        request: Buffer.from('not a real CSR').toString('base64'),
        signerName: 'example.com/signer',
        usages: ['client auth'],
        username: 'alice',
        groups: ['team', 'system:authenticated'],
      },
      status: { conditions: [{ type: 'Approved', status: 'True', message: 'approved by abc123-admin' }] },
    },
  ],
  [
    'rbac.authorization.k8s.io/Role',
    {
      metadata: { name: 'reader', namespace: 'default' },
      rules: [{ apiGroups: ['', 'example.com'], resources: ['pods', 'widgets'], verbs: ['get'], resourceNames: ['a'] }],
    },
  ],
  [
    'rbac.authorization.k8s.io/ClusterRole',
    {
      metadata: { name: 'agg', labels: { 'rbac.authorization.k8s.io/aggregate-to-view': 'true' } },
      rules: [{ apiGroups: ['apps'], resources: ['deployments'], verbs: ['get'], resourceNames: ['web'] }],
      aggregationRule: { clusterRoleSelectors: [selector({ 'rbac.authorization.k8s.io/aggregate-to-view': 'true' })] },
    },
  ],
  [
    'rbac.authorization.k8s.io/RoleBinding',
    {
      metadata: { name: 'rb', namespace: 'default' },
      subjects: [
        { kind: 'User', name: 'alice', apiGroup: 'rbac.authorization.k8s.io' },
        { kind: 'ServiceAccount', name: 'sa', namespace: 'team-a' },
      ],
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'agg' },
    },
  ],
  // (ClusterRoleBindings are tenantgate's custom resources upstream, which answers them in JSON only: no protobuf to convert.)
  // A pod spec with only one of the two things podSpecToTenant rewrites: each found on its own.
  ['/Pod', { metadata: { name: 'near', namespace: 'default' }, spec: { containers: podSpec.containers, affinity: podSpec.affinity } }],
  ['/Pod', { metadata: { name: 'scratch', namespace: 'default' }, spec: { containers: podSpec.containers, volumes: podSpec.volumes } }],
];

/** What the upstream holds of a tenant's object, as JSON: the rule's upstream form, plus the managedFields the apiserver keeps. */
function upstreamOf(key: string, object: Json, tenant = TENANT): Json {
  const [group, kind] = key.split('/') as [string, string];
  const apiVersion = group === '' ? 'v1' : `${group}/${PACKAGE_OF[group]!.split('.').at(-1)}`;
  const upstream = objectToUpstream(structuredClone({ apiVersion, kind, ...object }), contextOf(tenant), rowOf(group, kind));
  const metadata = upstream.metadata as Json;
  metadata.resourceVersion = '42';
  metadata.managedFields = [
    {
      manager: 'kubectl',
      operation: 'Apply',
      apiVersion: 'example.com/v1'.replace('example.com', `${tenant}-example.com`),
      fieldsType: 'FieldsV1',
      fieldsV1: { 'f:metadata': { 'f:labels': { [`f:${TENANT_LABEL}`]: {}, 'f:app': {} } } },
    },
    {
      manager: 'kube-controller-manager',
      operation: 'Update',
      apiVersion,
      time: '2026-11-25T15:00:00Z',
      fieldsType: 'FieldsV1',
      fieldsV1: { 'f:status': { '.': {} } },
    },
  ];
  return upstream;
}

function convertBody(key: string, body: Buffer): Json | null {
  const [group, kind] = key.split('/') as [string, string];
  const converted = protobufBodyToTenant(body, rowOf(group, kind), CTX);
  return converted === null ? null : decodeBody(messages, messageOf(key), converted);
}

function expected(key: string, body: Buffer): Json | null {
  const [group, kind] = key.split('/') as [string, string];
  return objectToTenant(decodeBody(messages, messageOf(key), body), CTX, rowOf(group, kind));
}

t.test('each kind: the protobuf answer converted decodes to what objectToTenant makes of the same object', NEEDS_PROTO, async (t) => {
  const kinds = new Set<string>();
  for (const [key, object] of CASES) {
    const [group, kind] = key.split('/') as [string, string];
    t.ok(protobufResponseSupported(rowOf(group, kind), group === '' ? 'v1' : `${group}/v1`), `${key} is answered in protobuf`);
    const body = encodeBody(messages, messageOf(key), upstreamOf(key, object));
    const want = expected(key, body);
    t.ok(want !== null, `${key}: the tenant's object is the tenant's`);
    t.strictSame(convertBody(key, body), want, `${key} ${(object.metadata as Json).name}`);
    kinds.add(key);
  }
  const supported = [...STATUS_CONDITIONS.keys()].filter((key) => !kinds.has(key));
  t.same(supported, [], 'every kind answered in protobuf has a case');
});

t.test('spot checks: what the tenant reads (the JSON rule is the reference; these keep it honest)', NEEDS_PROTO, async (t) => {
  const read = (index: number) => convertBody(CASES[index]![0], encodeBody(messages, messageOf(CASES[index]![0]), upstreamOf(...CASES[index]!))) as any;
  const pod = read(0);
  t.equal(pod.metadata.namespace, 'default');
  t.same(pod.metadata.labels, { app: 'web' }, 'the tenant label is gone');
  t.same(pod.metadata.ownerReferences[1].apiVersion, 'example.com/v1');
  t.same(pod.metadata.managedFields[0].fieldsV1, { 'f:metadata': { 'f:labels': { 'f:app': {} } } }, "the tenant label's managed field is gone");
  t.same(pod.spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaces, ['default', 'team-a']);
  t.same(pod.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaceSelector, {}, 'a forced selector reads back empty');
  t.same(pod.spec.volumes[0].ephemeral.volumeClaimTemplate.metadata, { labels: { a: 'b' } });
  t.equal(pod.status.conditions[0].message, 'pod default/web: 0/3 nodes in "default" fit');
  const namespace = read(6);
  t.same([namespace.metadata.name, namespace.metadata.labels], ['team-a', { 'kubernetes.io/metadata.name': 'team-a', env: 'prod' }]);
  const crd = read(CASES.findIndex(([key]) => key.endsWith('CustomResourceDefinition')));
  t.same([crd.metadata.name, crd.spec.group, crd.status.conditions[0].message], ['widgets.example.com', 'example.com', 'widgets.example.com is established']);
});

t.test("another tenant's objects, and objects referring outside the tenant, are not the tenant's (null), as in JSON", NEEDS_PROTO, async (t) => {
  for (const [key, object] of CASES) {
    const body = encodeBody(messages, messageOf(key), upstreamOf(key, object, OTHER));
    t.equal(expected(key, body), null, `${key}: JSON says not the tenant's`);
    t.equal(convertBody(key, body), null, `${key}: protobuf too`);
  }
  // The tenant's namespace, but labelled for another tenant, or owned from another tenant's group.
  const pod = upstreamOf('/Pod', CASES[1]![1]);
  const labelled = structuredClone(pod);
  (labelled.metadata as any).labels[TENANT_LABEL] = OTHER;
  t.equal(convertBody('/Pod', encodeBody(messages, messageOf('/Pod'), labelled)), null, 'labelled for another tenant');
  const owned = structuredClone(pod);
  (owned.metadata as any).ownerReferences = [{ apiVersion: `${OTHER}-example.com/v1`, kind: 'Widget', name: `${OTHER}-w`, uid: 'u' }];
  t.equal(convertBody('/Pod', encodeBody(messages, messageOf('/Pod'), owned)), null, "owned by another tenant's object");
  const affinity = upstreamOf('/Pod', CASES[0]![1]);
  (affinity.spec as any).affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaces = [`${OTHER}-default`];
  t.equal(convertBody('/Pod', encodeBody(messages, messageOf('/Pod'), affinity)), null, "an affinity term naming another tenant's namespace");
  const template = upstreamOf('apps/Deployment', CASES[10]![1]);
  (template.spec as any).template.metadata.labels[TENANT_LABEL] = OTHER;
  t.equal(convertBody('apps/Deployment', encodeBody(messages, messageOf('apps/Deployment'), template)), null, 'a template labelled for another tenant');
});

t.test('an unchanged object comes back as the very same bytes; kinds without field numbers stay JSON', NEEDS_PROTO, async (t) => {
  const shared = kindOf('storage.k8s.io', 'csidrivers')!;
  const body = encodeBody(messages, 'k8s.io.api.core.v1.ConfigMap', { apiVersion: 'storage.k8s.io/v1', kind: 'CSIDriver', metadata: { name: 'driver' } });
  if (shared.tenancy === 'shared-read-only' && shared.rule === 'shared') t.equal(protobufBodyToTenant(body, shared, CTX), body, 'a shared kind reads as it is');
  t.notOk(
    protobufResponseSupported(kindOf('scheduling.k8s.io', 'priorityclasses')!, 'scheduling.k8s.io/v1'),
    'platform classes stay JSON (each tenant sees the ones it may use)',
  );
  t.notOk(protobufResponseSupported(kindOf('authorization.k8s.io', 'selfsubjectaccessreviews')!, 'authorization.k8s.io/v1'), 'reviews stay JSON');
  t.notOk(protobufResponseSupported(kindOf('', 'nodes')!, 'v1'), 'nodes stay JSON');
  t.notOk(protobufResponseSupported(kindOf('example.com', 'widgets', 'Namespaced', 'Widget')!, 'example.com/v1'), 'custom resources stay JSON');
  t.notOk(
    protobufResponseSupported(kindOf('admissionregistration.k8s.io', 'validatingadmissionpolicies')!, 'admissionregistration.k8s.io/v1beta1'),
    'another version than the one whose field numbers are known stays JSON',
  );
  const beta = encodeBody(messages, messageOf('admissionregistration.k8s.io/ValidatingAdmissionPolicy'), {
    ...upstreamOf(...CASES.find(([key]) => key.endsWith('/ValidatingAdmissionPolicy'))!),
    apiVersion: 'admissionregistration.k8s.io/v1beta1',
  });
  t.equal(
    thrownStatus(() => protobufBodyToTenant(beta, rowOf('admissionregistration.k8s.io', 'ValidatingAdmissionPolicy'), CTX)).code,
    502,
    'an answer in another version is refused, never misread',
  );
  const v1beta1List = encodeBody(messages, POD_LIST, { apiVersion: 'v1beta1', kind: 'PodList', metadata: {} });
  t.equal(thrownStatus(() => protobufListToTenant(v1beta1List, rowOf('', 'Pod'), CTX, 'v1')).code, 502, 'so is a list of another version');
});

// ---- Status ----

t.test('a Status reads as statusToTenant reads the same Status', NEEDS_PROTO, async (t) => {
  const STATUS = `${META_V1}.Status`;
  const statuses: Json[] = [
    {
      apiVersion: 'v1',
      kind: 'Status',
      metadata: {},
      status: 'Failure',
      message: 'namespaces "abc123-team-a" not found',
      reason: 'NotFound',
      details: { name: 'abc123-team-a', kind: 'namespaces' },
      code: 404,
    },
    {
      apiVersion: 'v1',
      kind: 'Status',
      metadata: {},
      status: 'Failure',
      message: 'CustomResourceDefinition.apiextensions.k8s.io "widgets.abc123-example.com" is invalid',
      reason: 'Invalid',
      details: {
        name: 'widgets.abc123-example.com',
        group: 'apiextensions.k8s.io',
        kind: 'CustomResourceDefinition',
        causes: [{ reason: 'FieldValueInvalid', message: 'spec.group abc123-example.com', field: 'spec.group' }],
      },
      code: 422,
    },
    {
      apiVersion: 'v1',
      kind: 'Status',
      metadata: {},
      status: 'Failure',
      message: 'pods "abc123-x" is forbidden',
      reason: 'Forbidden',
      details: { name: 'abc123-x', kind: 'pods' },
      code: 403,
    },
    { apiVersion: 'v1', kind: 'Status', metadata: {}, status: 'Success', code: 200 },
  ];
  const scope = { isNamespaced: (kind: string) => kind === 'pods' };
  for (const status of statuses) {
    const body = encodeBody(messages, STATUS, status);
    const got = decodeBody(messages, STATUS, protobufStatusToTenant(body, TENANT, scope));
    t.strictSame(got, statusToTenant(decodeBody(messages, STATUS, body), TENANT, scope), String(status.message ?? status.status));
    t.strictSame(decodeBody(messages, STATUS, protobufBodyToTenant(body, rowOf('', 'Pod'), CTX, scope)!), got, 'the same through protobufBodyToTenant');
  }
});

// ---- lists ----

const POD_LIST = 'k8s.io.api.core.v1.PodList';

function podListBody(count: number, seed: number): { body: Buffer; items: Json[] } {
  const random = seededRandom(seed);
  const items: Json[] = [];
  for (let i = 0; i < count; i++) {
    const [, object] = random(3) === 0 ? CASES[0]! : CASES[1]!;
    const pod = upstreamOf('/Pod', { ...object, metadata: { ...(object.metadata as Json), name: `pod-${i}` } }, random(5) === 0 ? OTHER : TENANT);
    // A priority class: none, the platform's, or a tenant's own (rules/priority-classes.ts), which the fast path
    // must send to the careful one.
    const priorityClassName = ['', 'tg-low', `${TENANT}-mine`, `${OTHER}-theirs`][random(4)]!;
    if (priorityClassName !== '') (pod.spec as Json).priorityClassName = priorityClassName;
    delete pod.apiVersion;
    delete pod.kind;
    items.push(pod);
  }
  const metadata = {
    resourceVersion: '77',
    continue: 'eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NzcsInN0YXJ0IjoiYWJjMTIzLWRlZmF1bHQvcG9kLTkifQ',
    remainingItemCount: 12,
  };
  return { body: encodeBody(messages, POD_LIST, { apiVersion: 'v1', kind: 'PodList', metadata, items }), items };
}

/** A list answer decoded: the envelope's raw length, the list's fields but the padding, and the padding's size. */
function decodeList(body: Buffer): { list: Json; rawLength: number; padding: number } {
  t.equal(body.subarray(0, 4).toString('latin1'), 'k8s\0');
  const envelope = protoFields(body.subarray(4));
  const raw = envelope.find((field) => field.number === 2)!.value as Buffer;
  let padding = 0;
  const kept = protoFields(raw).filter((field) => {
    if (field.number !== 2 ** 29 - 1) return true;
    padding += 5 + (field.value as Buffer).length + ((field.value as Buffer).length <= 127 ? 1 : 5);
    return false;
  });
  const rebuilt = Buffer.concat(kept.map((field) => protoField(field.number, field.value as Buffer)));
  return { list: decodeMessage(messages, POD_LIST, rebuilt), rawLength: raw.length, padding };
}

function listInPieces(body: Buffer, cuts: readonly number[], holdListBytes?: number): Buffer {
  return feedInPieces(new ProtobufListToTenant(rowOf('', 'Pod'), CTX, 'v1', holdListBytes === undefined ? {} : { holdListBytes }), body, cuts);
}

function randomCuts(length: number, random: (n: number) => number, pieces: number): number[] {
  return Array.from({ length: pieces }, () => random(length + 1)).sort((a, b) => a - b);
}

t.test("a pod list: each item as objectToTenant makes it, another tenant's dropped, the ListMeta as the JSON path passes it", NEEDS_PROTO, async (t) => {
  const { body, items } = podListBody(40, 7);
  const want = items.map((item) =>
    objectToTenant(
      { apiVersion: 'v1', kind: 'Pod', ...decodeMessage(messages, 'k8s.io.api.core.v1.Pod', encodeMessage(messages, 'k8s.io.api.core.v1.Pod', item)) },
      CTX,
      rowOf('', 'Pod'),
    ),
  );
  const kept = want.filter((item) => item !== null).map(({ apiVersion, kind, ...item }: any) => item);
  t.ok(kept.length > 10 && kept.length < items.length, `${kept.length} of ${items.length} items are the tenant's`);
  const held = decodeList(protobufListToTenant(body, rowOf('', 'Pod'), CTX, 'v1'));
  t.strictSame(held.list.items, kept, 'held: the items');
  t.same(held.list.metadata, {
    resourceVersion: '77',
    continue: 'eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6NzcsInN0YXJ0IjoiYWJjMTIzLWRlZmF1bHQvcG9kLTkifQ',
    remainingItemCount: 12,
  });
  t.equal(held.padding, 0, 'a list held whole has its exact length, no padding');
  const streamed = decodeList(listInPieces(body, [], 0));
  t.strictSame(streamed.list, held.list, 'streamed: the same list');
  const upstreamRaw = protoFields(body.subarray(4)).find((field) => field.number === 2)!.value as Buffer;
  t.equal(streamed.rawLength, upstreamRaw.length + 6, "streamed: the upstream's length declared, plus the padding's least");
  t.ok(streamed.padding >= 6, `the tenant view's savings padded (${streamed.padding} bytes)`);
});

t.test('lists cut in random pieces give the same bytes as whole, held and streamed', NEEDS_PROTO, async (t) => {
  const random = seededRandom(20261126);
  for (let round = 0; round < 30; round++) {
    const { body } = podListBody(1 + random(12), round);
    for (const hold of [undefined, 0]) {
      const whole = listInPieces(body, [], hold);
      const cuts = randomCuts(body.length, random, round % 3 === 0 ? body.length : 1 + random(20));
      if (!whole.equals(listInPieces(body, cuts, hold)))
        t.fail(`round ${round} (${hold === 0 ? 'streamed' : 'held'}): bytes differ when cut at ${cuts.length} places`);
    }
  }
  t.pass('30 lists × 2 modes compared');
});

t.test('an empty list, and a list of only other tenants, are lists', NEEDS_PROTO, async (t) => {
  const empty = encodeBody(messages, POD_LIST, { apiVersion: 'v1', kind: 'PodList', metadata: { resourceVersion: '1' } });
  for (const hold of [undefined, 0]) t.same(decodeList(listInPieces(empty, [], hold)).list, { metadata: { resourceVersion: '1' } });
  const others = encodeBody(messages, POD_LIST, {
    apiVersion: 'v1',
    kind: 'PodList',
    metadata: {},
    items: [upstreamOf('/Pod', CASES[1]![1], OTHER)].map(({ apiVersion, kind, ...pod }) => pod),
  });
  for (const hold of [undefined, 0]) t.same(decodeList(listInPieces(others, [], hold)).list, { metadata: {} }, "none of another tenant's pods");
});

t.test('a streamed list sends the padding for what it drops along the items, never all at once at the end', NEEDS_PROTO, async (t) => {
  const pods = Array.from({ length: 60 }, (_, i) => upstreamOf('/Pod', { ...CASES[0]![1], metadata: { name: `p${i}`, namespace: 'default' } }, OTHER)).map(
    ({ apiVersion, kind, ...pod }) => pod,
  );
  const body = encodeBody(messages, POD_LIST, { apiVersion: 'v1', kind: 'PodList', metadata: {}, items: pods });
  const list = new ProtobufListToTenant(rowOf('', 'Pod'), CTX, 'v1', { holdListBytes: 0 });
  const outputs: number[] = [];
  for (let at = 0; at < body.length; at += 8192) outputs.push(list.write(body.subarray(at, at + 8192)).length);
  const end = list.finish();
  t.ok(end.length < 8192, `the end holds less than a flush of padding (${end.length} bytes)`);
  t.ok(Math.max(...outputs) < 8192 * 3, `no write returns much more than it was given (${Math.max(...outputs)} bytes at most)`);
  t.equal(list.dropped, 60);
  t.same(decodeList(Buffer.concat(outputsOf(body, 8192))).list, { metadata: {} }, 'and the list is empty');
});

/** The outputs of a fresh streamed list engine over `body` in pieces of `size`, its end included. */
function outputsOf(body: Buffer, size: number): Buffer[] {
  const list = new ProtobufListToTenant(rowOf('', 'Pod'), CTX, 'v1', { holdListBytes: 0 });
  const outputs: Buffer[] = [];
  for (let at = 0; at < body.length; at += size) outputs.push(list.write(body.subarray(at, at + size)));
  outputs.push(list.finish());
  return outputs;
}

// ---- watch streams ----

const frameOf = (event: Buffer) => {
  const head = Buffer.alloc(4);
  head.writeUInt32BE(event.length);
  return Buffer.concat([head, event]);
};
const watchEvent = (type: string, object: Buffer) => Buffer.concat([protoField(1, Buffer.from(type)), protoField(2, protoField(1, object))]);

function readFrames(stream: Buffer): { type: string; object: Buffer }[] {
  const events: { type: string; object: Buffer }[] = [];
  for (let at = 0; at < stream.length;) {
    const length = stream.readUInt32BE(at);
    const fields = protoFields(stream.subarray(at + 4, at + 4 + length));
    at += 4 + length;
    const object = protoFields(fields.find((field) => field.number === 2)!.value as Buffer).find((field) => field.number === 1)!.value as Buffer;
    events.push({ type: (fields.find((field) => field.number === 1)!.value as Buffer).toString(), object });
  }
  return events;
}

function watchInPieces(stream: Buffer, cuts: readonly number[]): Buffer {
  return feedInPieces(new ProtobufWatchToTenant(rowOf('', 'Pod'), CTX, 'v1'), stream, cuts);
}

t.test('a watch stream: events of the tenant converted, of others dropped, bookmarks passed, errors converted', NEEDS_PROTO, async (t) => {
  const pod = (object: Json, tenant = TENANT) => encodeBody(messages, 'k8s.io.api.core.v1.Pod', upstreamOf('/Pod', object, tenant));
  const bookmark = encodeBody(messages, 'k8s.io.api.core.v1.Pod', {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { resourceVersion: '99', annotations: { 'k8s.io/initial-events-end': 'true' } },
  });
  const error = encodeBody(messages, `${META_V1}.Status`, {
    apiVersion: 'v1',
    kind: 'Status',
    metadata: {},
    status: 'Failure',
    message: 'too old resource version: namespace abc123-default',
    reason: 'Expired',
    code: 410,
  });
  const events = [
    watchEvent('ADDED', pod(CASES[0]![1])),
    watchEvent('MODIFIED', pod(CASES[1]![1], OTHER)),
    watchEvent('DELETED', pod(CASES[1]![1])),
    watchEvent('BOOKMARK', bookmark),
    watchEvent('ERROR', error),
  ];
  const stream = Buffer.concat(events.map(frameOf));
  const got = readFrames(watchInPieces(stream, []));
  t.same(
    got.map((event) => event.type),
    ['ADDED', 'DELETED', 'BOOKMARK', 'ERROR'],
    "another tenant's event is dropped",
  );
  t.strictSame(decodeBody(messages, 'k8s.io.api.core.v1.Pod', got[0]!.object), expected('/Pod', pod(CASES[0]![1])));
  t.strictSame(decodeBody(messages, 'k8s.io.api.core.v1.Pod', got[1]!.object), expected('/Pod', pod(CASES[1]![1])));
  t.ok(got[2]!.object.equals(bookmark), 'the bookmark as it came');
  t.equal((decodeBody(messages, `${META_V1}.Status`, got[3]!.object) as any).message, 'too old resource version: namespace default');
  const random = seededRandom(11);
  const whole = watchInPieces(stream, []);
  for (let round = 0; round < 40; round++) {
    const cuts = randomCuts(stream.length, random, round % 4 === 0 ? stream.length : 1 + random(10));
    if (!whole.equals(watchInPieces(stream, cuts))) t.fail(`round ${round}: bytes differ when cut at ${cuts.length} places`);
  }
  const named = watchEvent('BOOKMARK', pod(CASES[1]![1], OTHER));
  t.same(readFrames(watchInPieces(frameOf(named), [])), [], "a bookmark naming another tenant's pod is judged like any event");
});

t.test('watches share one output: a write that fails part way hands none of its bytes to the next watch', NEEDS_PROTO, async (t) => {
  const pod = (object: Json, tenant = TENANT) => encodeBody(messages, 'k8s.io.api.core.v1.Pod', upstreamOf('/Pod', object, tenant));
  const good = frameOf(watchEvent('ADDED', pod(CASES[0]![1])));
  const alone = watchInPieces(good, []);
  const failing = new ProtobufWatchToTenant(rowOf('', 'Pod'), CTX, 'v1');
  const healthy = new ProtobufWatchToTenant(rowOf('', 'Pod'), CTX, 'v1');
  // A whole event the failing watch converts, then a frame whose event is not protobuf: the write throws after output.
  const broken = Buffer.concat([good, frameOf(Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]))]);
  t.throws(() => failing.write(broken), 'the broken write fails');
  const next = healthy.write(good);
  t.ok(next.equals(alone), 'the next watch writes its event alone, with nothing of the failed write');
  const kept = healthy.write(good);
  t.ok(next.equals(alone) && kept.equals(alone), 'a slice handed out is never written again');
});

// ---- bad bytes ----

t.test('bad bytes from the upstream are a Status (502), never a crash', NEEDS_PROTO, async (t) => {
  const random = seededRandom(5);
  const outcomes: Record<string, number> = {};
  const count = (outcome: string) => (outcomes[outcome] = (outcomes[outcome] ?? 0) + 1);
  const attempt = (convert: () => unknown) => {
    try {
      count(convert() === null ? 'null' : 'converted');
    } catch (error) {
      if (error instanceof StatusError && error.code === 502) count('502');
      else t.fail(`not a 502 Status: ${String(error)}`);
    }
  };
  for (let i = 0; i < 200 * CASES.length; i++) {
    const [key, object] = CASES[i % CASES.length]!;
    const [group, kind] = key.split('/') as [string, string];
    const body = mutate(encodeBody(messages, messageOf(key), upstreamOf(key, object)), random, 4);
    attempt(() => protobufBodyToTenant(body, rowOf(group, kind), CTX));
  }
  const { body: list } = podListBody(5, 3);
  const stream = Buffer.concat([watchEvent('ADDED', encodeBody(messages, 'k8s.io.api.core.v1.Pod', upstreamOf('/Pod', CASES[0]![1])))].map(frameOf));
  for (let i = 0; i < 300; i++) {
    const listMutant = mutate(list, random, 4);
    attempt(() => listInPieces(listMutant, randomCuts(listMutant.length, random, 3), i % 2 === 0 ? 0 : undefined));
    const watchMutant = mutate(stream, random, 4);
    attempt(() => watchInPieces(watchMutant, randomCuts(watchMutant.length, random, 3)));
  }
  t.ok((outcomes['502'] ?? 0) > 100 && (outcomes.converted ?? 0) > 100, `outcomes: ${JSON.stringify(outcomes)}`);
});

t.test('fuzz: mutated objects that still decode convert as objectToTenant converts what they decode to', NEEDS_PROTO, async (t) => {
  const random = seededRandom(20261126);
  let compared = 0;
  let disagreements = 0;
  for (let i = 0; i < 150 * CASES.length; i++) {
    const [key, object] = CASES[i % CASES.length]!;
    const [group, kind] = key.split('/') as [string, string];
    const body = mutate(encodeBody(messages, messageOf(key), upstreamOf(key, object)), random, 4);
    let input: Json;
    try {
      input = decodeBody(messages, messageOf(key), body);
      JSON.stringify(input);
    } catch {
      continue; // not a message of the kind any more: the conversion may refuse it or copy what it does not read
    }
    let got: Buffer | null;
    try {
      got = protobufBodyToTenant(body, rowOf(group, kind), CTX);
    } catch (error) {
      if (!(error instanceof StatusError) || error.code !== 502) t.fail(`${key}: ${String(error)}`);
      continue; // refused: a duplicated field, bytes that are not UTF-8... (the JSON path never sees such bytes)
    }
    let want: Json | null;
    try {
      want = objectToTenant(structuredClone(input), CTX, rowOf(group, kind));
    } catch {
      continue;
    }
    compared++;
    const gotJson = got === null ? null : decodeBody(messages, messageOf(key), got);
    if (JSON.stringify(normalize(gotJson)) !== JSON.stringify(normalize(want))) {
      disagreements++;
      if (disagreements <= 3) t.same(gotJson, want, `${key}: a mutated object converted unlike its JSON`);
    }
  }
  t.equal(disagreements, 0, `${compared} mutants compared with objectToTenant`);
  t.ok(compared > 300, `enough mutants still decode (${compared})`);
});

t.test('fast path: objects of every kind, and mutants, convert to the very bytes of the careful path, alone and in watch events', NEEDS_PROTO, async (t) => {
  const random = seededRandom(18);
  const outcomes: Record<string, number> = {};
  const count = (outcome: string) => (outcomes[outcome] = (outcomes[outcome] ?? 0) + 1);
  /** The careful path's answer: bytes, null (not the tenant's) or its error's code. */
  const careful = (convert: () => Buffer | null): Buffer | null | number => {
    try {
      return convert();
    } catch (error) {
      if (error instanceof StatusError) return error.code;
      throw error;
    }
  };
  const splices = new Splices();
  for (let i = 0; i < 120 * CASES.length; i++) {
    const [key, object] = CASES[i % CASES.length]!;
    const [group, kind] = key.split('/') as [string, string];
    const row = rowOf(group, kind);
    const apiVersion = group === '' ? 'v1' : `${group}/v1`;
    const view = fastViewOf(row, CTX);
    if (view === null || !protobufResponseSupported(row, apiVersion)) continue;
    // Each case in every variant below, whatever the number of cases.
    const round = Math.floor(i / CASES.length);
    const upstream = upstreamOf(key, object, round % 5 === 4 ? OTHER : TENANT);
    // Half with the managedFields most objects carry (the tenant label's field, a core apiVersion): the fast path's own,
    // the label's member first, between two others or last in its set (each cut with its own comma).
    if (round % 2 === 0) {
      const members = ['.', 'f:app'];
      members.splice(round % 3, 0, `f:${TENANT_LABEL}`);
      const labels = Object.fromEntries(members.map((member) => [member, {}]));
      (upstream.metadata as Json).managedFields = [
        { manager: 'kubectl', operation: 'Update', apiVersion, fieldsType: 'FieldsV1', fieldsV1: { 'f:metadata': { 'f:labels': labels } } },
      ];
    }
    const { apiVersion: _apiVersion, kind: _kind, ...message } = upstream;
    const valid = encodeMessage(messages, messageOf(key), message);
    const raw = round % 4 === 0 ? valid : mutate(valid, random);
    // Alone: objectSplices against objectPartsToTenant.
    splices.reset();
    const delta = objectSplices(raw, 0, raw.length, view, splices);
    const want = careful(() => {
      const parts = objectPartsToTenant(raw, row, CTX);
      return parts === null ? null : Buffer.concat(parts);
    });
    if (delta === CAREFUL_PATH) count('careful');
    else if (delta === NOT_THE_TENANTS_OBJECT) {
      count('dropped');
      if (want !== null) t.fail(`${key} #${i}: dropped by the fast path, ${typeof want === 'number' ? want : 'kept'} by the careful one`);
    } else {
      count('fast');
      const out = new Output(raw.length + 64);
      splices.writeTo(out, raw, 0, raw.length);
      const got = out.take();
      if (!(want instanceof Buffer) || !got.equals(want) || got.length !== raw.length + delta)
        t.fail(`${key} #${i}: the fast path's bytes differ from the careful path's`);
      // Unmutated: also what the JSON rule makes of it, the reference neither path shares code with.
      if (raw === valid) {
        const reference = objectToTenant({ apiVersion, kind, ...decodeMessage(messages, messageOf(key), raw) }, CTX, row);
        const { apiVersion: _a, kind: _k, ...tenantView } = reference ?? {};
        if (JSON.stringify(normalize(decodeMessage(messages, messageOf(key), got))) !== JSON.stringify(normalize(tenantView)))
          t.fail(`${key} #${i}: the fast path's object differs from objectToTenant's`);
      }
    }
    // In a watch event (its envelope mutated too, now and then): the stream against protobufWatchEventToTenant.
    const typeMeta = Buffer.concat([protoField(1, Buffer.from(apiVersion)), protoField(2, Buffer.from(kind))]);
    const body = Buffer.concat([Buffer.from('k8s\0', 'latin1'), protoField(1, typeMeta), protoField(2, raw)]);
    const event = watchEvent(['ADDED', 'MODIFIED', 'DELETED'][i % 3]!, i % 4 === 1 ? mutate(body, random) : body);
    const mutatedEvent = i % 7 === 3 ? mutate(event, random) : event;
    const wantEvent = careful(() => protobufWatchEventToTenant(mutatedEvent, row, CTX));
    const gotEvent = careful(() => {
      const watch = new ProtobufWatchToTenant(row, CTX, apiVersion);
      return Buffer.concat([watch.write(frameOf(mutatedEvent)), watch.finish()]);
    });
    const wantFrame = wantEvent === null ? Buffer.alloc(0) : wantEvent instanceof Buffer ? frameOf(wantEvent) : wantEvent;
    if (typeof wantFrame === 'number' ? gotEvent !== wantFrame : !(gotEvent instanceof Buffer) || !gotEvent.equals(wantFrame)) {
      t.fail(`${key} #${i}: a watch event converts unlike protobufWatchEventToTenant (${typeof gotEvent === 'number' ? gotEvent : 'bytes'})`);
    }
  }
  t.ok((outcomes.fast ?? 0) > 150 && (outcomes.dropped ?? 0) > 30 && (outcomes.careful ?? 0) > 100, `outcomes: ${JSON.stringify(outcomes)}`);
});

/** Protobuf has no empty map or list (none and empty are the same bytes): those a rule emptied are left out. */
const MAPS = new Set(['labels', 'annotations', 'matchLabels', 'hard', 'used', 'data', 'extra']);

/** Key order aside, and empty maps and lists. */
function normalize(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalize);
  if (value === null || typeof value !== 'object') return value;
  const empty = (k: string, v: unknown) =>
    Array.isArray(v) ? v.length === 0 : MAPS.has(k) && v !== null && typeof v === 'object' && Object.keys(v).length === 0;
  const entries = Object.entries(value).filter(([k, v]) => !empty(k, v));
  return Object.fromEntries(entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => [k, normalize(v)]));
}

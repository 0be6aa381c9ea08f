// Protobuf bodies of every kind whose JSON rule maps fields beyond the metadata: each kind's object is encoded from
// the rig's own generated.proto files, converted on the wire, decoded again and compared with what the JSON rule makes
// of the same object; every field number the module reads is checked against those files.
import forge from 'node-forge';
import t from 'tap';
import { kindOf, type KindRow } from '../../lib/convert/kinds.ts';
import { TENANT_LABEL } from '../../lib/convert/prefix.ts';
import { protobufBodyToUpstream, type ProtobufBodyOptions } from '../../lib/convert/protobuf/to-upstream.ts';
import { objectToTenant, objectToUpstream, type ConvertContext } from '../../lib/convert/rules/index.ts';
import { StatusError } from '../../lib/errors/status-error.ts';
import { mutate, seededRandom } from '../helpers/fuzz.ts';
import { thrownStatus } from '../helpers/status-error.ts';
import { checkWireSchema, decodeBody, encodeBody, goModuleCache, loadProtoMessages, type ProtoMessages } from '../helpers/k8s-proto.ts';
import { WIRE_SCHEMAS } from '../../lib/convert/protobuf/kind-schemas.ts';

const TENANT = 'abc123';
type Json = Record<string, unknown>;

const moduleCache = goModuleCache();
/** Skips every test, visibly, where the rig's Go modules are not. */
const NEEDS_PROTO = {
  skip: moduleCache === undefined ? 'the Go module cache with k8s.io/api v0.36.3 is not on this machine: build the rig first (npm run rig)' : false,
};
const messages: ProtoMessages = moduleCache === undefined ? new Map() : loadProtoMessages(moduleCache);

const API = 'k8s.io.api';
const EXTENSIONS = 'k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1';
/** The .proto message of each kind's one converted version. */
const MESSAGE_OF: Record<string, string> = {
  '/Event': `${API}.core.v1.Event`,
  'events.k8s.io/Event': `${API}.events.v1.Event`,
  '/Endpoints': `${API}.core.v1.Endpoints`,
  'discovery.k8s.io/EndpointSlice': `${API}.discovery.v1.EndpointSlice`,
  '/PersistentVolume': `${API}.core.v1.PersistentVolume`,
  '/PersistentVolumeClaim': `${API}.core.v1.PersistentVolumeClaim`,
  'networking.k8s.io/NetworkPolicy': `${API}.networking.v1.NetworkPolicy`,
  '/ResourceQuota': `${API}.core.v1.ResourceQuota`,
  'admissionregistration.k8s.io/ValidatingWebhookConfiguration': `${API}.admissionregistration.v1.ValidatingWebhookConfiguration`,
  'admissionregistration.k8s.io/MutatingWebhookConfiguration': `${API}.admissionregistration.v1.MutatingWebhookConfiguration`,
  'admissionregistration.k8s.io/ValidatingAdmissionPolicy': `${API}.admissionregistration.v1.ValidatingAdmissionPolicy`,
  'admissionregistration.k8s.io/MutatingAdmissionPolicy': `${API}.admissionregistration.v1.MutatingAdmissionPolicy`,
  'admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding': `${API}.admissionregistration.v1.ValidatingAdmissionPolicyBinding`,
  'admissionregistration.k8s.io/MutatingAdmissionPolicyBinding': `${API}.admissionregistration.v1.MutatingAdmissionPolicyBinding`,
  'apiextensions.k8s.io/CustomResourceDefinition': `${EXTENSIONS}.CustomResourceDefinition`,
  'certificates.k8s.io/CertificateSigningRequest': `${API}.certificates.v1.CertificateSigningRequest`,
  'apps/StatefulSet': `${API}.apps.v1.StatefulSet`,
  'batch/CronJob': `${API}.batch.v1.CronJob`,
  'resource.k8s.io/ResourceClaimTemplate': `${API}.resource.v1.ResourceClaimTemplate`,
};

t.test('every field number the module reads is the one of generated.proto (k8s.io/api v0.36.3)', NEEDS_PROTO, async (t) => {
  let checked = 0;
  for (const [key, { apiVersion, schema }] of WIRE_SCHEMAS) {
    const message = MESSAGE_OF[key];
    t.ok(message, `${key}: the test knows its message`);
    if (message === undefined) continue;
    t.match(message, new RegExp(`\\.${apiVersion.split('/').at(-1)}\\.`), `${key}: the .proto of ${apiVersion}`);
    checked += checkWireSchema(t, messages, schema, message, key);
  }
  t.ok(checked > 60, `${checked} field numbers checked`);
});

// ---- each kind: the protobuf conversion decodes to the JSON rule's output ----

const WIDGET_KIND_SCOPE = (apiVersion: string, kind: string) => (apiVersion === 'abc123-example.com/v1' && kind === 'Widget' ? 'Cluster' : undefined);
const ALLOWED_HOSTS: ReadonlySet<string> = new Set(['hooks.example.net']);
const CTX: ConvertContext = { tenant: TENANT, scopeOf: () => undefined, kindScope: WIDGET_KIND_SCOPE, webhookUrlHosts: ALLOWED_HOSTS };

/** The table's row of a kind: its plural is its lower-case kind plus "s" ("ies" for a "y"), but for Endpoints. */
function rowOf(group: string, kind: string): KindRow {
  const lower = kind.toLowerCase();
  const resource = kind === 'Endpoints' ? 'endpoints' : lower.endsWith('y') ? lower.slice(0, -1) + 'ies' : lower + 's';
  const row = kindOf(group, resource);
  if (row === undefined || row.kind !== kind) throw new Error(`no row for ${group}/${kind}`);
  return row;
}

function options(version: string): ProtobufBodyOptions {
  return { verb: 'create', subresource: '', version, kindScope: WIDGET_KIND_SCOPE, scopeOf: () => undefined, webhookUrlHosts: ALLOWED_HOSTS };
}

const selector = (labels: Json) => ({ matchLabels: labels });
const byName = (...names: string[]) => ({ matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: names }] });
const service = { namespace: 'default', name: 'hooks', path: '/validate', port: 8443 };
const CA = Buffer.from('not a real CA').toString('base64');
const pvcUid = 'pvc-0b5e7c5c-6d1f-4c1e-9a57-2f0a1b2c3d4e';
const secret = (name: string) => ({ name, namespace: 'default' });
const resourceRules = [
  { apiGroups: ['apps', 'example.com'], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['deployments', 'widgets'], resourceNames: ['web'] },
];

/** One object per kind (and a few second cases), as the tenant sends it: every field its rule maps, and some it does not. */
const CASES: [string, Json][] = [
  [
    '/Event',
    {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: 'web.1', namespace: 'default', labels: { [TENANT_LABEL]: 'evil00' } },
      involvedObject: { apiVersion: 'v1', kind: 'Pod', namespace: 'default', name: 'web', uid: 'u1', fieldPath: 'spec.containers{app}' },
      related: { apiVersion: 'v1', kind: 'PersistentVolume', name: 'pv1' },
      reason: 'Started',
      message: 'Started container app of pod default/web',
      source: { component: 'kubelet', host: 'node-1' },
      firstTimestamp: '2026-11-25T15:00:00Z',
      count: 3,
      type: 'Normal',
      reportingComponent: 'kubelet',
    },
  ],
  [
    'events.k8s.io/Event',
    {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name: 'cfg.1', namespace: 'team-a' },
      eventTime: '2026-11-25T15:00:00.123456Z',
      reportingController: 'example.com/controller',
      reportingInstance: 'controller-1',
      action: 'Reconcile',
      reason: 'Synced',
      regarding: { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'team-a', name: 'cfg' },
      related: { apiVersion: 'example.com/v1', kind: 'Widget', name: 'w1' },
      note: 'synced team-a/cfg',
      type: 'Normal',
    },
  ],
  [
    '/Endpoints',
    {
      apiVersion: 'v1',
      kind: 'Endpoints',
      metadata: { name: 'web', namespace: 'default' },
      subsets: [
        {
          addresses: [{ ip: '10.0.0.1', targetRef: { kind: 'Pod', namespace: 'default', name: 'web-1', uid: 'u1' } }, { ip: '10.0.0.9' }],
          notReadyAddresses: [{ ip: '10.0.0.2', nodeName: 'node-1', targetRef: { kind: 'Pod', namespace: 'default', name: 'web-2' } }],
          ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
        },
        { ports: [{ port: 443 }] },
      ],
    },
  ],
  [
    'discovery.k8s.io/EndpointSlice',
    {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'web-abc', namespace: 'default', labels: { 'kubernetes.io/service-name': 'web' } },
      addressType: 'IPv4',
      endpoints: [
        {
          addresses: ['10.0.0.1'],
          conditions: { ready: true },
          targetRef: { kind: 'Pod', namespace: 'default', name: 'web-1' },
          nodeName: 'node-1',
          zone: 'a',
        },
        { addresses: ['10.0.0.2'] },
      ],
      ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
    },
  ],
  [
    '/PersistentVolume',
    {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'pv1' },
      spec: {
        capacity: { storage: '1Gi' },
        accessModes: ['ReadWriteOnce'],
        claimRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: 'default', name: 'data', uid: 'u3' },
        persistentVolumeReclaimPolicy: 'Retain',
        storageClassName: 'fast',
        csi: {
          driver: 'csi.example.com',
          volumeHandle: 'vol-1',
          volumeAttributes: { a: 'b' },
          controllerPublishSecretRef: secret('s1'),
          nodeStageSecretRef: secret('s2'),
          nodePublishSecretRef: secret('s3'),
          controllerExpandSecretRef: secret('s4'),
          nodeExpandSecretRef: { name: 's5' },
        },
        cephfs: { monitors: ['m1'], secretRef: secret('c') },
        rbd: { monitors: ['m1'], image: 'img', secretRef: secret('r') },
        iscsi: { targetPortal: 'p:3260', iqn: 'iqn.x', lun: 0, secretRef: secret('i') },
        flexVolume: { driver: 'flex', secretRef: secret('f'), options: { o: 'p' } },
        scaleIO: { gateway: 'g', system: 's', secretRef: secret('sc') },
        storageos: { volumeName: 'v', secretRef: { kind: 'Secret', namespace: 'default', name: 'so' } },
        azureFile: { secretName: 'az', shareName: 'share', secretNamespace: 'default' },
        glusterfs: { endpoints: 'ep', path: '/p', endpointsNamespace: 'default' },
      },
    },
  ],
  [
    '/PersistentVolumeClaim',
    {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data', namespace: 'default' },
      spec: {
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: '1Gi' } },
        volumeName: 'pv1',
        storageClassName: 'fast',
        dataSourceRef: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'snap', namespace: 'backups' },
      },
    },
  ],
  [
    '/PersistentVolumeClaim',
    {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'dyn', namespace: 'default' },
      spec: { volumeName: pvcUid, dataSource: { kind: 'PersistentVolumeClaim', name: 'data' } },
    },
  ],
  [
    'networking.k8s.io/NetworkPolicy',
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'allow', namespace: 'default' },
      spec: {
        podSelector: selector({ app: 'web' }),
        ingress: [
          {
            from: [
              { namespaceSelector: selector({ 'kubernetes.io/metadata.name': 'team-a', [TENANT_LABEL]: 'evil00' }) },
              { ipBlock: { cidr: '10.0.0.0/8' } },
              { namespaceSelector: {} },
            ],
            ports: [{ port: 80 }],
          },
          { from: [{ podSelector: selector({ role: 'client' }) }] },
        ],
        egress: [{ to: [{ namespaceSelector: byName('team-b', 'team-c'), podSelector: selector({ app: 'db' }) }] }],
        policyTypes: ['Ingress', 'Egress'],
      },
    },
  ],
  [
    '/ResourceQuota',
    {
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: { name: 'quota', namespace: 'default' },
      spec: {
        hard: {
          'count/widgets.example.com': '2',
          'count/deployments.apps': '3',
          'count/configmaps': '4',
          pods: '5',
          'requests.cpu': '500m',
          'fast.storageclass.storage.k8s.io/requests.storage': '1Gi',
        },
        scopeSelector: { matchExpressions: [{ scopeName: 'PriorityClass', operator: 'In', values: ['high'] }] },
      },
      status: { hard: { 'count/widgets.example.com': '2', 'count/things.evil00-example.com': '1' }, used: { 'count/widgets.example.com': '1', pods: '0' } },
    },
  ],
  [
    'admissionregistration.k8s.io/ValidatingWebhookConfiguration',
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: 'checks' },
      webhooks: [
        {
          name: 'pods.example.com',
          clientConfig: { service, caBundle: CA },
          rules: [{ operations: ['CREATE'], apiGroups: ['', 'example.com'], apiVersions: ['v1'], resources: ['pods', 'widgets'], scope: '*' }],
          failurePolicy: 'Fail',
          namespaceSelector: byName('default'),
          sideEffects: 'None',
          timeoutSeconds: 5,
          admissionReviewVersions: ['v1'],
          matchPolicy: 'Equivalent',
          matchConditions: [{ name: 'not-system', expression: "request.namespace != 'kube-system'" }],
        },
        {
          name: 'url.example.com',
          clientConfig: { url: 'https://hooks.example.net/validate' },
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
          objectSelector: selector({ [TENANT_LABEL]: 'evil00', a: 'b' }),
        },
      ],
    },
  ],
  [
    'admissionregistration.k8s.io/MutatingWebhookConfiguration',
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: 'defaults' },
      webhooks: [
        {
          name: 'defaults.example.com',
          clientConfig: { service },
          rules: [{ operations: ['CREATE'], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] }],
          objectSelector: selector({ inject: 'true' }),
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
          reinvocationPolicy: 'IfNeeded',
        },
      ],
    },
  ],
  [
    'admissionregistration.k8s.io/ValidatingAdmissionPolicy',
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: 'replicas' },
      spec: {
        paramKind: { apiVersion: 'example.com/v1', kind: 'Limits' },
        matchConstraints: {
          resourceRules,
          excludeResourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['*'], resources: ['configmaps'] }],
          objectSelector: selector({ a: 'b' }),
          matchPolicy: 'Equivalent',
        },
        validations: [
          {
            expression: "object.spec.replicas <= 5 || object.metadata.namespace == 'big'",
            message: 'too many',
            messageExpression: "'too many in ' + request.namespace",
          },
        ],
        failurePolicy: 'Fail',
        auditAnnotations: [{ key: 'ns', valueExpression: 'oldObject.metadata.namespace' }],
        matchConditions: [{ name: 'mine', expression: "namespaceObject.metadata.name != 'kube-system'" }],
        variables: [{ name: 'r', expression: 'object.spec.replicas' }],
      },
    },
  ],
  [
    'admissionregistration.k8s.io/MutatingAdmissionPolicy',
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingAdmissionPolicy',
      metadata: { name: 'label' },
      spec: {
        matchConstraints: { resourceRules, namespaceSelector: byName('default') },
        variables: [{ name: 'ns', expression: 'namespaceObject.metadata.name' }],
        matchConditions: [{ name: 'mine', expression: "request.namespace != 'kube-system'" }],
        mutations: [
          {
            patchType: 'ApplyConfiguration',
            applyConfiguration: { expression: 'Object{metadata: Object.metadata{labels: {"ns": object.metadata.namespace}}}' },
          },
          { patchType: 'JSONPatch', jsonPatch: { expression: "[JSONPatch{op: 'add', path: '/metadata/labels/ns', value: request.namespace}]" } },
        ],
        failurePolicy: 'Fail',
        reinvocationPolicy: 'Never',
      },
    },
  ],
  [
    'admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding',
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: 'replicas-binding' },
      spec: {
        policyName: 'replicas',
        paramRef: { name: 'limits', namespace: 'default', parameterNotFoundAction: 'Deny' },
        matchResources: { namespaceSelector: selector({ env: 'prod' }), resourceRules },
        validationActions: ['Deny', 'Audit'],
      },
    },
  ],
  [
    'admissionregistration.k8s.io/MutatingAdmissionPolicyBinding',
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingAdmissionPolicyBinding',
      metadata: { name: 'label-binding' },
      spec: { policyName: 'label', paramRef: { selector: selector({ a: 'b' }) } },
    },
  ],
  [
    'apiextensions.k8s.io/CustomResourceDefinition',
    {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.example.com' },
      spec: {
        group: 'example.com',
        names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList', shortNames: ['wd'] },
        scope: 'Namespaced',
        versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
        conversion: {
          strategy: 'Webhook',
          webhook: { clientConfig: { service: { ...service, path: '/convert' }, caBundle: CA }, conversionReviewVersions: ['v1'] },
        },
      },
    },
  ],
  [
    'apps/StatefulSet',
    {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'db', namespace: 'default' },
      spec: {
        serviceName: 'db',
        selector: selector({ app: 'db' }),
        template: { metadata: { labels: { app: 'db' } }, spec: { containers: [{ name: 'db', image: 'postgres:17' }] } },
        volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }],
      },
    },
  ],
  [
    'batch/CronJob',
    {
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      metadata: { name: 'tick', namespace: 'default' },
      spec: {
        schedule: '*/5 * * * *',
        jobTemplate: { spec: { template: { spec: { containers: [{ name: 'tick', image: 'busybox' }], restartPolicy: 'Never' } } } },
      },
    },
  ],
  [
    'resource.k8s.io/ResourceClaimTemplate',
    {
      apiVersion: 'resource.k8s.io/v1',
      kind: 'ResourceClaimTemplate',
      metadata: { name: 'gpu', namespace: 'default' },
      spec: { metadata: { labels: { a: 'b' } }, spec: {} },
    },
  ],
  [
    'certificates.k8s.io/CertificateSigningRequest',
    {
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'CertificateSigningRequest',
      metadata: { name: 'alice' },
      spec: {
        request: Buffer.from('not a real CSR').toString('base64'),
        signerName: 'kubernetes.io/kube-apiserver-client',
        expirationSeconds: 3600,
        usages: ['client auth'],
        username: 'alice',
        uid: 'u-1',
        groups: ['team', 'system:authenticated'],
      },
    },
  ],
];

const versionOf = (apiVersion: unknown) => String(apiVersion).split('/').at(-1)!;

t.test('each kind: the protobuf body converted decodes to what the JSON rule makes of the same object', NEEDS_PROTO, async (t) => {
  for (const [key, object] of CASES) {
    const [group, kind] = key.split('/') as [string, string];
    const row = rowOf(group, kind);
    const body = encodeBody(messages, MESSAGE_OF[key]!, object);
    t.same(decodeBody(messages, MESSAGE_OF[key]!, body), object, `${key}: the test's encoder and decoder agree`);
    const converted = protobufBodyToUpstream(body, row, TENANT, options(versionOf(object.apiVersion)));
    const got = decodeBody(messages, MESSAGE_OF[key]!, converted);
    const want = objectToUpstream(structuredClone(object), CTX, row);
    t.strictSame(got, want, `${key} ${(object.metadata as Json).name}: the JSON rule's output`);
    // And back: the tenant reads the object it sent (the response side stays JSON, by the same rule).
    const back = objectToTenant(structuredClone(got), CTX, row);
    t.ok(back !== null, `${key}: the converted object is the tenant's`);
    t.strictSame(withoutForced(back), withoutForced(structuredClone(object)), `${key}: and reads back as sent, but for what the rule forces`);
  }
});

t.test('spot checks of what the rules make (the JSON rule is the reference; these keep it honest)', NEEDS_PROTO, async (t) => {
  const convertCase = (index: number) => {
    const [key, object] = CASES[index]!;
    const [group, kind] = key.split('/') as [string, string];
    return decodeBody(
      messages,
      MESSAGE_OF[key]!,
      protobufBodyToUpstream(encodeBody(messages, MESSAGE_OF[key]!, object), rowOf(group, kind), TENANT, options(versionOf(object.apiVersion))),
    ) as any;
  };
  const event = convertCase(0);
  t.match(event.involvedObject, { namespace: 'abc123-default', name: 'web', uid: 'u1' });
  t.match(event.related, { name: 'abc123-pv1' }, 'a cluster-scoped tenant kind takes the prefix');
  t.equal(event.message, 'Started container app of pod default/web', 'the message is left as sent');
  const newEvent = convertCase(1);
  t.same(newEvent.related, { apiVersion: 'abc123-example.com/v1', kind: 'Widget', name: 'abc123-w1' }, 'a cluster-scoped custom kind, by discovery');
  const pv = convertCase(4);
  t.equal(pv.metadata.name, 'abc123-pv1');
  t.match(pv.spec.claimRef, { namespace: 'abc123-default', name: 'data' });
  t.equal(pv.spec.csi.nodeExpandSecretRef.namespace, undefined, 'no namespace added where none was');
  t.equal(pv.spec.storageos.secretRef.namespace, 'abc123-default');
  t.same([convertCase(5).spec.volumeName, convertCase(6).spec.volumeName], ['abc123-pv1', pvcUid], 'provisioned volume names pass');
  const policy = convertCase(7);
  t.same(policy.spec.ingress[0].from[0].namespaceSelector.matchLabels, { 'kubernetes.io/metadata.name': 'abc123-team-a', [TENANT_LABEL]: TENANT });
  t.same(policy.spec.ingress[0].from[2].namespaceSelector, { matchLabels: { [TENANT_LABEL]: TENANT } }, '"every namespace" is every namespace of the tenant');
  const quota = convertCase(8);
  t.same(Object.keys(quota.spec.hard).sort(), [
    'count/configmaps',
    'count/deployments.apps',
    'count/widgets.abc123-example.com',
    'fast.storageclass.storage.k8s.io/requests.storage',
    'pods',
    'requests.cpu',
  ]);
  t.same(quota.spec.hard['count/widgets.abc123-example.com'], '2', 'the quantity travels with its renamed key');
  t.same(
    Object.keys(quota.status.hard).sort(),
    ['count/things.abc123-evil00-example.com', 'count/widgets.abc123-example.com'],
    "a key naming another tenant's group stays within this one's",
  );
  t.same(quota.status.used, { 'count/widgets.abc123-example.com': '1', pods: '0' });
  const hooks = convertCase(9);
  t.same(hooks.webhooks[0].clientConfig.service.namespace, 'abc123-default');
  t.same(hooks.webhooks[0].rules[0].apiGroups, ['', 'abc123-example.com']);
  t.same(hooks.webhooks[1].namespaceSelector, { matchLabels: { [TENANT_LABEL]: TENANT } }, 'a namespace selector is forced where none was sent');
  t.same(hooks.webhooks[1].objectSelector.matchLabels, { a: 'b', [TENANT_LABEL]: TENANT }, 'and an object selector, the spoofed label replaced');
  const crd = convertCase(15);
  t.same(
    [crd.metadata.name, crd.spec.group, crd.spec.conversion.webhook.clientConfig.service.namespace],
    ['widgets.abc123-example.com', 'abc123-example.com', 'abc123-default'],
  );
  const binding = convertCase(13);
  t.same([binding.spec.policyName, binding.spec.paramRef.namespace], ['abc123-replicas', 'abc123-default']);
});

const thrown = thrownStatus;

t.test('refusals: the same Status as the JSON rule, and 415 where the field numbers are not known', NEEDS_PROTO, async (t) => {
  const same = (key: string, object: Json, why: string) => {
    const [group, kind] = key.split('/') as [string, string];
    const row = rowOf(group, kind);
    const fromProtobuf = thrown(() =>
      protobufBodyToUpstream(encodeBody(messages, MESSAGE_OF[key]!, object), row, TENANT, options(versionOf(object.apiVersion))),
    );
    const fromJson = thrown(() => objectToUpstream(structuredClone(object), CTX, row));
    t.same([fromProtobuf.code, fromProtobuf.message], [fromJson.code, fromJson.message], `${why}: ${fromJson.code} ${fromJson.message}`);
  };
  const webhook = (url: string) => ({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: 'w' },
    webhooks: [{ name: 'a.b.c', clientConfig: { url }, sideEffects: 'None' }],
  });
  same(
    'admissionregistration.k8s.io/ValidatingWebhookConfiguration',
    webhook('https://10.0.0.1/steal'),
    'a webhook URL on a host the administrator did not allow',
  );
  same('admissionregistration.k8s.io/ValidatingWebhookConfiguration', webhook(''), 'an empty webhook URL');
  const crd = (group: string, name: string) => ({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name },
    spec: { group, names: { plural: 'things' } },
  });
  same('apiextensions.k8s.io/CustomResourceDefinition', crd('apps', 'things.apps'), 'a CRD of a built-in group');
  same('apiextensions.k8s.io/CustomResourceDefinition', crd('example.com', 'other.example.com'), 'a CRD named otherwise than plural.group');
  const conversionUrl = {
    ...crd('example.com', 'things.example.com'),
    spec: { group: 'example.com', names: { plural: 'things' }, conversion: { strategy: 'Webhook', webhook: { clientConfig: { url: 'https://x.example/' } } } },
  };
  same('apiextensions.k8s.io/CustomResourceDefinition', conversionUrl, 'a conversion webhook URL');
  const longCount = {
    apiVersion: 'v1',
    kind: 'ResourceQuota',
    metadata: { name: 'q', namespace: 'default' },
    spec: { hard: { 'count/e2e-test-resourcequota-5315-2830-crds.resourcequota.example.com': '1' } },
  };
  same('/ResourceQuota', longCount, 'a count whose name part is too long once its group is prefixed');

  const policy = CASES.find(([key]) => key.endsWith('/ValidatingAdmissionPolicy'))!;
  const policyBody = encodeBody(messages, MESSAGE_OF[policy[0]]!, policy[1]);
  const policyRow = rowOf('admissionregistration.k8s.io', 'ValidatingAdmissionPolicy');
  t.equal(
    thrown(() => protobufBodyToUpstream(policyBody, policyRow, TENANT, options('v1beta1'))).code,
    415,
    'a path of another version: its field numbers are not known',
  );
  const event = CASES[1]![1];
  const withoutKindScope = { verb: 'create', subresource: '', version: 'v1' };
  const eventBody = encodeBody(messages, MESSAGE_OF['events.k8s.io/Event']!, event);
  t.equal(
    thrown(() => protobufBodyToUpstream(eventBody, rowOf('events.k8s.io', 'Event'), TENANT, withoutKindScope)).code,
    415,
    'a reference to a custom kind without discovery is refused, not guessed',
  );
  const widget = kindOf('example.com', 'widgets', 'Namespaced', 'Widget')!;
  t.equal(
    thrown(() => protobufBodyToUpstream(Buffer.from('k8s\0\n\0\x12\0', 'latin1'), widget, TENANT, options('v1'))).code,
    415,
    'custom resources are JSON only',
  );
});

t.test(
  'fuzz: truncated, flipped and spliced bodies of every kind convert as the JSON rule converts what they decode to, or are refused',
  NEEDS_PROTO,
  async (t) => {
    const random = seededRandom(20261125);
    const outcomes: Record<string, number> = {};
    let compared = 0;
    let disagreements = 0;
    for (let i = 0; i < 300 * CASES.length; i++) {
      const [key, object] = CASES[i % CASES.length]!;
      const [group, kind] = key.split('/') as [string, string];
      const row = rowOf(group, kind);
      const body = mutate(encodeBody(messages, MESSAGE_OF[key]!, object), random, 4);
      let converted: Buffer;
      try {
        converted = protobufBodyToUpstream(body, row, TENANT, options(versionOf(object.apiVersion)));
      } catch (error) {
        if (!(error instanceof StatusError) || ![400, 415, 422].includes(error.code)) {
          t.fail(`${key}: ${String(error)}`);
          continue;
        }
        outcomes[error.code] = (outcomes[error.code] ?? 0) + 1;
        continue;
      }
      outcomes.converted = (outcomes.converted ?? 0) + 1;
      // Where the body still decodes as the kind's message, the converted one decodes to the JSON rule's output for it.
      let input: Json;
      try {
        input = decodeBody(messages, MESSAGE_OF[key]!, body);
        JSON.stringify(input);
      } catch {
        continue;
      }
      let want: Json;
      try {
        want = objectToUpstream(structuredClone(input), CTX, row);
      } catch {
        disagreements++; // the JSON rule refuses what the wire conversion let through
        continue;
      }
      compared++;
      let got: Json | undefined;
      try {
        got = decodeBody(messages, MESSAGE_OF[key]!, converted);
      } catch {
        got = undefined;
      }
      if (JSON.stringify(normalize(got)) !== JSON.stringify(normalize(want))) {
        disagreements++;
        if (disagreements <= 3) t.same(got, want, `${key}: a mutated body converted unlike its JSON`);
      }
    }
    t.equal(disagreements, 0, `${compared} converted mutants compared with the JSON rule`);
    t.ok(compared > 500 && (outcomes['400'] ?? 0) > 500, `both outcomes seen: ${JSON.stringify(outcomes)}`);
  },
);

/**
 * What the tenant sent or reads, without what the rules force: a spoofed tenant label is replaced (and so not read
 * back), and a forced selector reads back empty (`{}` selects what an absent one selects). Mutates `value`: pass a copy.
 */
function withoutForced(value: unknown): unknown {
  if (Array.isArray(value)) value.forEach(withoutForced);
  if (value === null || typeof value !== 'object') return value;
  const object = value as Json;
  delete object[TENANT_LABEL];
  for (const [key, member] of Object.entries(object)) {
    withoutForced(member);
    const empty = member !== null && typeof member === 'object' && !Array.isArray(member) && Object.keys(member).length === 0;
    if (empty && ['labels', 'matchLabels', 'namespaceSelector', 'objectSelector'].includes(key)) delete object[key];
  }
  return object;
}

/** Key order aside. */
function normalize(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalize);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([k, v]) => [k, normalize(v)]),
  );
}

t.test('a selector key "__proto__" is refused, never lost on the way', NEEDS_PROTO, async (t) => {
  const key = 'networking.k8s.io/NetworkPolicy';
  const object = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'p', namespace: 'default' },
    spec: { ingress: [{ from: [{ namespaceSelector: { matchLabels: JSON.parse('{"__proto__": "x"}') } }] }] },
  };
  const body = encodeBody(messages, MESSAGE_OF[key]!, object);
  t.equal(thrown(() => protobufBodyToUpstream(body, rowOf('networking.k8s.io', 'NetworkPolicy'), TENANT, options('v1'))).code, 400);
});

t.test(
  "a CSR for the client signer asking for system:masters is refused as the apiserver's admission refuses it, JSON and protobuf alike",
  NEEDS_PROTO,
  async (t) => {
    const keys = forge.pki.rsa.generateKeyPair(1024);
    const request = forge.pki.createCertificationRequest();
    request.publicKey = keys.publicKey;
    request.setSubject([
      { name: 'organizationName', value: 'system:masters' },
      { name: 'commonName', value: 'root' },
    ]);
    request.sign(keys.privateKey);
    const csr = {
      apiVersion: 'certificates.k8s.io/v1',
      kind: 'CertificateSigningRequest',
      metadata: { name: 'root' },
      spec: {
        request: Buffer.from(forge.pki.certificationRequestToPem(request)).toString('base64'),
        signerName: 'kubernetes.io/kube-apiserver-client',
        usages: ['client auth'],
      },
    };
    const key = 'certificates.k8s.io/CertificateSigningRequest';
    const row = rowOf('certificates.k8s.io', 'CertificateSigningRequest');
    const message = /use of kubernetes.io\/kube-apiserver-client signer with system:masters group is not allowed/;
    t.match(
      thrownStatus(() => objectToUpstream(structuredClone(csr), CTX, row)),
      { code: 403, message },
    );
    t.match(
      thrownStatus(() => protobufBodyToUpstream(encodeBody(messages, MESSAGE_OF[key]!, csr), row, TENANT, options('v1'))),
      { code: 403, message },
    );
    const otherSigner = { ...csr, spec: { ...csr.spec, signerName: 'example.com/any' } };
    t.ok(protobufBodyToUpstream(encodeBody(messages, MESSAGE_OF[key]!, otherSigner), row, TENANT, options('v1')), 'another signer judges its own requests');
  },
);

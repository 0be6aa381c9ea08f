// Protobuf request bodies of every family of built-in kinds, as client-go's typed clients send them (issue 14: each
// was a 415), created through a tenant: the upstream holds what the same object sent as JSON makes, the tenant reads
// back what it sent, and another tenant can neither see nor touch it.
import t, { type Test } from 'tap';
import type { ClientHttp2Session } from 'node:http2';
import { tenantAdminUser } from '../../lib/auth/impersonation.ts';
import { connectH2, credentialsOf, h2Request, type Answer } from '../helpers/http.ts';
import { encodeBody, goModuleCache, loadProtoMessages, type ProtoMessages } from '../helpers/k8s-proto.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';

type Json = Record<string, any>;

const PROTOBUF = 'application/vnd.kubernetes.protobuf';
const API = 'k8s.io.api';
const ADMISSION = 'admissionregistration.k8s.io';

let stack: Stack;
let alpha: TestTenant;
let bravo: TestTenant;
let alphaSession: ClientHttp2Session;
let bravoSession: ClientHttp2Session;
let messages: ProtoMessages;

t.before(async () => {
  const moduleCache = goModuleCache();
  if (moduleCache === undefined) throw new Error('the Go module cache of the rig is missing: npm run rig');
  messages = loadProtoMessages(moduleCache);
  stack = await startStack();
  alpha = await createTestTenant(stack, 'pbalfa');
  bravo = await createTestTenant(stack, 'pbbrav');
  alphaSession = connectH2(credentialsOf(alpha.kubeconfig));
  bravoSession = connectH2(credentialsOf(bravo.kubeconfig));
});
t.teardown(async () => {
  alphaSession?.close();
  bravoSession?.close();
  await stack?.stop();
});

interface Kind {
  /** The collection path as the tenant names it (namespace `default` for namespaced kinds). */
  readonly collection: string;
  readonly message: string;
  /** The upstream collection of the tenant's objects, for `kubectl get --raw`. */
  readonly upstream: (tenant: string) => string;
}
const namespaced = (prefix: string, resource: string, message: string): Kind => ({
  collection: `${prefix}/namespaces/default/${resource}`,
  message,
  upstream: (tenant) => `${prefix}/namespaces/${tenant}-default/${resource}`,
});
const clusterScoped = (prefix: string, resource: string, message: string): Kind => ({
  collection: `${prefix}/${resource}`,
  message,
  upstream: () => `${prefix}/${resource}`,
});

function send(session: ClientHttp2Session, kind: Kind, object: Json, contentType: 'protobuf' | 'json'): Promise<Answer> {
  const body = contentType === 'protobuf' ? encodeBody(messages, kind.message, object) : JSON.stringify(object);
  return h2Request(session, 'POST', kind.collection, {
    headers: { 'content-type': contentType === 'protobuf' ? PROTOBUF : 'application/json', accept: 'application/json' },
    body,
  });
}

async function upstreamGet(path: string): Promise<Json> {
  const r = await stack.kubectlDirect(['get', '--raw', path]);
  if (r.code !== 0) throw new Error(`upstream GET ${path}: ${r.stderr}`);
  return JSON.parse(r.stdout) as Json;
}

/** What a create made upstream, without what differs between any two objects: identity, times, controllers' status. */
function stored(object: Json): Json {
  const { metadata, status: _status, ...rest } = object;
  return { metadata: { namespace: metadata.namespace, labels: metadata.labels }, ...rest };
}

/**
 * Creates `object` through alpha as protobuf and, renamed, as JSON; the upstream objects agree; alpha reads back what
 * it sent; bravo gets 404 for it, by name, and cannot delete it. Returns the upstream object of the protobuf one.
 */
async function createBothWays(t: Test, kind: Kind, object: Json, sent: (got: Json) => void): Promise<Json> {
  const name = object.metadata.name as string;
  const asJson = { ...object, metadata: { ...object.metadata, name: `${name}-json` } };
  const created = await send(alphaSession, kind, object, 'protobuf');
  t.equal(created.status, 201, `${object.kind} sent as protobuf is created: ${created.body.slice(0, 300)}`);
  const createdJson = await send(alphaSession, kind, asJson, 'json');
  t.equal(createdJson.status, 201, `and as JSON: ${createdJson.body.slice(0, 300)}`);
  const upstreamName = kind.collection.includes('/namespaces/') ? name : `${alpha.id}-${name}`;
  const upstream = await upstreamGet(`${kind.upstream(alpha.id)}/${upstreamName}`);
  const upstreamJsonOne = await upstreamGet(`${kind.upstream(alpha.id)}/${upstreamName}-json`);
  t.same(stored(upstream), stored(upstreamJsonOne), `${object.kind}: upstream, the protobuf body made what the JSON body made`);
  const readBack = await h2Request(alphaSession, 'GET', `${kind.collection}/${name}`);
  t.equal(readBack.status, 200);
  sent(readBack.json());
  const seen = await h2Request(bravoSession, 'GET', `${kind.collection}/${name}`);
  t.equal(seen.status, 404, `${object.kind}: bravo cannot read alpha's`);
  const listed = await h2Request(bravoSession, 'GET', kind.collection);
  t.notMatch(listed.body, new RegExp(`"${name}"|${alpha.id}`), `${object.kind}: nor list it`);
  const deleted = await h2Request(bravoSession, 'DELETE', `${kind.collection}/${name}`);
  // 403 where bravo may not delete such objects at all (admission policies, until issue 14 item 4): no existence told.
  t.ok(deleted.status === 404 || deleted.status === 403, `${object.kind}: nor delete it (${deleted.status})`);
  t.equal((await h2Request(alphaSession, 'GET', `${kind.collection}/${name}`)).status, 200, 'still there');
  return upstream;
}

t.test("Events, core and events.k8s.io: the objects they are about are the tenant's", async (t) => {
  const core = await createBothWays(
    t,
    namespaced('/api/v1', 'events', `${API}.core.v1.Event`),
    {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: 'cfg.1', namespace: 'default' },
      involvedObject: { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: 'cfg' },
      related: { apiVersion: 'v1', kind: 'PersistentVolume', name: 'pv1' },
      reason: 'Synced',
      message: 'synced default/cfg',
      source: { component: 'example-controller' },
      firstTimestamp: '2026-11-25T15:00:00Z',
      lastTimestamp: '2026-11-25T15:00:00Z',
      count: 1,
      type: 'Normal',
    },
    (got) =>
      t.match(
        got,
        { involvedObject: { namespace: 'default', name: 'cfg' }, related: { name: 'pv1' }, message: 'synced default/cfg' },
        'alpha reads its own names',
      ),
  );
  t.match(core, {
    metadata: { namespace: `${alpha.id}-default` },
    involvedObject: { namespace: `${alpha.id}-default`, name: 'cfg' },
    related: { name: `${alpha.id}-pv1` },
  });
  const newer = await createBothWays(
    t,
    namespaced('/apis/events.k8s.io/v1', 'events', `${API}.events.v1.Event`),
    {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name: 'cfg.2', namespace: 'default' },
      eventTime: '2026-11-25T15:00:00.123456Z',
      reportingController: 'example.com/controller',
      reportingInstance: 'controller-1',
      action: 'Reconcile',
      reason: 'Synced',
      regarding: { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'default', name: 'cfg' },
      note: 'synced',
      type: 'Normal',
    },
    (got) => t.match(got, { regarding: { namespace: 'default', name: 'cfg' } }),
  );
  t.match(newer, { regarding: { namespace: `${alpha.id}-default` } });
});

t.test("Endpoints and EndpointSlices: their targets are the tenant's pods", async (t) => {
  const target = { kind: 'Pod', namespace: 'default', name: 'web-1' };
  const endpoints = await createBothWays(
    t,
    namespaced('/api/v1', 'endpoints', `${API}.core.v1.Endpoints`),
    {
      apiVersion: 'v1',
      kind: 'Endpoints',
      metadata: { name: 'web', namespace: 'default' },
      subsets: [{ addresses: [{ ip: '10.0.0.1', targetRef: target }], ports: [{ port: 80, protocol: 'TCP' }] }],
    },
    (got) => t.same(got.subsets[0].addresses[0].targetRef, target),
  );
  t.equal(endpoints.subsets[0].addresses[0].targetRef.namespace, `${alpha.id}-default`);
  const slice = await createBothWays(
    t,
    namespaced('/apis/discovery.k8s.io/v1', 'endpointslices', `${API}.discovery.v1.EndpointSlice`),
    {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'web-abc', namespace: 'default' },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['10.0.0.1'], targetRef: target }],
      ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
    },
    (got) => t.same(got.endpoints[0].targetRef, target),
  );
  t.equal(slice.endpoints[0].targetRef.namespace, `${alpha.id}-default`);
});

t.test('PersistentVolumes and claims: claimRef, secret namespaces and volumeName stay inside the tenant', async (t) => {
  const pv = await createBothWays(
    t,
    clusterScoped('/api/v1', 'persistentvolumes', `${API}.core.v1.PersistentVolume`),
    {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'pv1' },
      spec: {
        capacity: { storage: '1Gi' },
        accessModes: ['ReadWriteOnce'],
        persistentVolumeReclaimPolicy: 'Retain',
        claimRef: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', namespace: 'default', name: 'data' },
        csi: { driver: 'csi.example.com', volumeHandle: 'vol-1', nodePublishSecretRef: { name: 'creds', namespace: 'default' } },
      },
    },
    (got) => t.match(got.spec, { claimRef: { namespace: 'default', name: 'data' }, csi: { nodePublishSecretRef: { namespace: 'default' } } }),
  );
  t.match(pv.spec, { claimRef: { namespace: `${alpha.id}-default` }, csi: { nodePublishSecretRef: { namespace: `${alpha.id}-default` } } });
  const claim = await createBothWays(
    t,
    namespaced('/api/v1', 'persistentvolumeclaims', `${API}.core.v1.PersistentVolumeClaim`),
    {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data', namespace: 'default' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, volumeName: 'pv1', storageClassName: '' },
    },
    (got) => t.equal(got.spec.volumeName, 'pv1', 'alpha reads the name of its own volume'),
  );
  t.equal(claim.spec.volumeName, `${alpha.id}-pv1`);
});

t.test('StatefulSets, CronJobs and NetworkPolicies: templates labelled, peers confined', async (t) => {
  const statefulSet = await createBothWays(
    t,
    namespaced('/apis/apps/v1', 'statefulsets', `${API}.apps.v1.StatefulSet`),
    {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'db', namespace: 'default' },
      spec: {
        replicas: 0,
        serviceName: 'db',
        selector: { matchLabels: { app: 'db' } },
        template: { metadata: { labels: { app: 'db' } }, spec: { containers: [{ name: 'db', image: 'postgres:17' }] } },
        volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }],
      },
    },
    (got) => t.same(got.spec.volumeClaimTemplates[0].metadata.labels ?? {}, {}, 'alpha does not see the label it did not set'),
  );
  t.equal(statefulSet.spec.volumeClaimTemplates[0].metadata.labels['kubezoo.io/tenant'], alpha.id, "the claims it will make are the tenant's");
  t.equal(statefulSet.spec.template.metadata.labels['kubezoo.io/tenant'], alpha.id);
  const cronJob = await createBothWays(
    t,
    namespaced('/apis/batch/v1', 'cronjobs', `${API}.batch.v1.CronJob`),
    {
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      metadata: { name: 'tick', namespace: 'default' },
      spec: {
        schedule: '0 0 1 1 *',
        jobTemplate: { spec: { template: { spec: { containers: [{ name: 'tick', image: 'busybox' }], restartPolicy: 'Never' } } } },
      },
    },
    (got) => t.equal(got.spec.jobTemplate.metadata?.labels?.['kubezoo.io/tenant'], undefined),
  );
  t.equal(cronJob.spec.jobTemplate.metadata.labels['kubezoo.io/tenant'], alpha.id);
  t.equal(cronJob.spec.jobTemplate.spec.template.metadata.labels['kubezoo.io/tenant'], alpha.id);
  const typed = await alpha.kubectl(['create', 'cronjob', 'typed', '--image=busybox', '--schedule=0 0 1 1 *']);
  t.equal(typed.code, 0, `kubectl create cronjob (a typed command): ${typed.stderr}`);
  const typedUpstream = await upstreamGet(`/apis/batch/v1/namespaces/${alpha.id}-default/cronjobs/typed`);
  t.equal(typedUpstream.spec.jobTemplate.spec.template.metadata.labels['kubezoo.io/tenant'], alpha.id);
  const policy = await createBothWays(
    t,
    namespaced('/apis/networking.k8s.io/v1', 'networkpolicies', `${API}.networking.v1.NetworkPolicy`),
    {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: 'allow', namespace: 'default' },
      spec: {
        podSelector: {},
        ingress: [{ from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'default' } } }, { namespaceSelector: {} }] }],
        policyTypes: ['Ingress'],
      },
    },
    (got) =>
      t.same(got.spec.ingress[0].from, [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'default' } } }, { namespaceSelector: {} }]),
  );
  t.same(policy.spec.ingress[0].from[1].namespaceSelector, { matchLabels: { 'kubezoo.io/tenant': alpha.id } }, '"every namespace" is every namespace of alpha');
});

t.test("webhook configurations: services in the tenant's namespaces, selectors forced, URLs refused", async (t) => {
  const webhook = (extra: Json) => ({
    name: 'cm.example.com',
    clientConfig: { service: { namespace: 'default', name: 'hooks', path: '/check', port: 443 } },
    rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
    failurePolicy: 'Ignore',
    sideEffects: 'None',
    admissionReviewVersions: ['v1'],
    timeoutSeconds: 1,
    // Never matches anything the test makes: the hook is never called.
    objectSelector: { matchLabels: { hook: 'yes' } },
    ...extra,
  });
  for (const [kind, resource, message, extra] of [
    ['ValidatingWebhookConfiguration', 'validatingwebhookconfigurations', `${API}.admissionregistration.v1.ValidatingWebhookConfiguration`, {}],
    [
      'MutatingWebhookConfiguration',
      'mutatingwebhookconfigurations',
      `${API}.admissionregistration.v1.MutatingWebhookConfiguration`,
      { reinvocationPolicy: 'Never' },
    ],
  ] as const) {
    const family = clusterScoped(`/apis/${ADMISSION}/v1`, resource, message);
    const upstream = await createBothWays(
      t,
      family,
      { apiVersion: `${ADMISSION}/v1`, kind, metadata: { name: `hooks-${resource.slice(0, 3)}` }, webhooks: [webhook(extra)] },
      (got) => {
        t.equal(got.webhooks[0].clientConfig.service.namespace, 'default');
        t.same(got.webhooks[0].objectSelector, { matchLabels: { hook: 'yes' } }, 'alpha reads its own selector');
      },
    );
    t.equal(upstream.webhooks[0].clientConfig.service.namespace, `${alpha.id}-default`);
    t.same(upstream.webhooks[0].namespaceSelector, { matchLabels: { 'kubezoo.io/tenant': alpha.id } }, `${kind}: called for alpha's namespaces only`);
    t.same(upstream.webhooks[0].objectSelector, { matchLabels: { hook: 'yes', 'kubezoo.io/tenant': alpha.id } }, `${kind}: and alpha's objects only`);
    const byUrl = await send(
      alphaSession,
      family,
      { apiVersion: `${ADMISSION}/v1`, kind, metadata: { name: 'by-url' }, webhooks: [webhook({ clientConfig: { url: 'https://10.0.0.1/steal' } })] },
      'protobuf',
    );
    t.equal(byUrl.status, 422, `${kind}: a URL on a host the administrator did not allow is refused as from JSON`);
    t.match(byUrl.json(), { kind: 'Status', reason: 'Invalid', message: /webhooks\[0\]\.clientConfig\.url/ });
  }
});

t.test("admission policies and bindings: they judge only the tenant's objects", async (t) => {
  // Until the bootstrap role grants them (issue 14 item 4, on another branch), alpha's admin gets them here, upstream.
  const grant = await stack.kubectlDirect([
    'create',
    'clusterrole',
    'pb-admission-policies',
    '--verb=*',
    `--resource=validatingadmissionpolicies.${ADMISSION},validatingadmissionpolicybindings.${ADMISSION},mutatingadmissionpolicies.${ADMISSION},mutatingadmissionpolicybindings.${ADMISSION}`,
  ]);
  t.equal(grant.code, 0, grant.stderr);
  const bind = await stack.kubectlDirect([
    'create',
    'clusterrolebinding',
    'pb-admission-policies',
    '--clusterrole=pb-admission-policies',
    `--user=${tenantAdminUser(alpha.id)}`,
  ]);
  t.equal(bind.code, 0, bind.stderr);
  const configMapRule = { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] };
  const policy = await createBothWays(
    t,
    clusterScoped(`/apis/${ADMISSION}/v1`, 'validatingadmissionpolicies', `${API}.admissionregistration.v1.ValidatingAdmissionPolicy`),
    {
      apiVersion: `${ADMISSION}/v1`,
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: 'no-forbidden' },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: { resourceRules: [configMapRule] },
        validations: [{ expression: "!has(object.data) || !('forbidden' in object.data)", message: 'forbidden key' }],
      },
    },
    (got) => t.equal(got.spec.matchConstraints.namespaceSelector?.matchLabels?.['kubezoo.io/tenant'], undefined, 'alpha does not see the forced selector'),
  );
  t.same(policy.spec.matchConstraints.namespaceSelector, { matchLabels: { 'kubezoo.io/tenant': alpha.id } });
  const binding = await createBothWays(
    t,
    clusterScoped(`/apis/${ADMISSION}/v1`, 'validatingadmissionpolicybindings', `${API}.admissionregistration.v1.ValidatingAdmissionPolicyBinding`),
    {
      apiVersion: `${ADMISSION}/v1`,
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: 'no-forbidden-binding' },
      spec: { policyName: 'no-forbidden', validationActions: ['Deny'] },
    },
    (got) => t.equal(got.spec.policyName, 'no-forbidden'),
  );
  t.equal(binding.spec.policyName, `${alpha.id}-no-forbidden`);
  // The policy works, for alpha only: the apiserver reads policies in the background, so allow it a few seconds.
  const forbidden = (name: string) => JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { forbidden: 'x' } });
  let refused: Answer | undefined;
  for (let i = 0; i < 40; i++) {
    const answer = await h2Request(alphaSession, 'POST', '/api/v1/namespaces/default/configmaps', {
      headers: { 'content-type': 'application/json' },
      body: forbidden(`try-${i}`),
    });
    if (answer.status !== 201) {
      refused = answer;
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  t.equal(refused?.status, 422, `alpha's own policy refuses alpha's configmap: ${refused?.body.slice(0, 200)}`);
  const bravoCreate = await h2Request(bravoSession, 'POST', '/api/v1/namespaces/default/configmaps', {
    headers: { 'content-type': 'application/json' },
    body: forbidden('free'),
  });
  t.equal(bravoCreate.status, 201, "bravo's configmap is none of alpha's policy's business");

  const served = await stack.kubectlDirect(['get', '--raw', `/apis/${ADMISSION}/v1`]);
  if (!served.stdout.includes('"mutatingadmissionpolicies"')) {
    t.comment('MutatingAdmissionPolicy is not served in admissionregistration.k8s.io/v1 by this apiserver');
    return;
  }
  const mutating = await createBothWays(
    t,
    clusterScoped(`/apis/${ADMISSION}/v1`, 'mutatingadmissionpolicies', `${API}.admissionregistration.v1.MutatingAdmissionPolicy`),
    {
      apiVersion: `${ADMISSION}/v1`,
      kind: 'MutatingAdmissionPolicy',
      metadata: { name: 'stamp' },
      spec: {
        failurePolicy: 'Fail',
        reinvocationPolicy: 'Never',
        matchConstraints: { resourceRules: [configMapRule] },
        mutations: [
          { patchType: 'ApplyConfiguration', applyConfiguration: { expression: 'Object{metadata: Object.metadata{annotations: {"stamped": "yes"}}}' } },
        ],
      },
    },
    () => {},
  );
  t.same(mutating.spec.matchConstraints.objectSelector, { matchLabels: { 'kubezoo.io/tenant': alpha.id } });
  const mutatingBinding = await createBothWays(
    t,
    clusterScoped(`/apis/${ADMISSION}/v1`, 'mutatingadmissionpolicybindings', `${API}.admissionregistration.v1.MutatingAdmissionPolicyBinding`),
    { apiVersion: `${ADMISSION}/v1`, kind: 'MutatingAdmissionPolicyBinding', metadata: { name: 'stamp-binding' }, spec: { policyName: 'stamp' } },
    () => {},
  );
  t.equal(mutatingBinding.spec.policyName, `${alpha.id}-stamp`);
});

t.test("CustomResourceDefinitions: group, name and conversion service are the tenant's", async (t) => {
  const crdMessage = 'k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition';
  const family = clusterScoped('/apis/apiextensions.k8s.io/v1', 'customresourcedefinitions', crdMessage);
  const crd = (plural: string, conversion?: Json) => ({
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.example.com` },
    spec: {
      group: 'example.com',
      names: {
        plural,
        singular: plural.slice(0, -1),
        kind: plural[0]!.toUpperCase() + plural.slice(1, -1),
        listKind: `${plural[0]!.toUpperCase() + plural.slice(1, -1)}List`,
      },
      scope: 'Namespaced',
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
      ...(conversion === undefined ? {} : { conversion }),
    },
  });
  const created = await send(alphaSession, family, crd('widgets'), 'protobuf');
  t.equal(created.status, 201, `a CRD sent as protobuf (what apiextensions' typed client sends) is created: ${created.body.slice(0, 300)}`);
  t.match(created.json(), { metadata: { name: 'widgets.example.com' }, spec: { group: 'example.com' } }, "answered in alpha's names");
  const upstream = await upstreamGet(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.${alpha.id}-example.com`);
  t.equal(upstream.spec.group, `${alpha.id}-example.com`);
  const conversion = {
    strategy: 'Webhook',
    webhook: { clientConfig: { service: { namespace: 'default', name: 'convert', path: '/convert', port: 443 } }, conversionReviewVersions: ['v1'] },
  };
  const converting = await send(alphaSession, family, crd('gadgets', conversion), 'protobuf');
  t.equal(converting.status, 201, converting.body.slice(0, 300));
  t.equal(converting.json().spec.conversion.webhook.clientConfig.service.namespace, 'default');
  const converted = await upstreamGet(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets.${alpha.id}-example.com`);
  t.equal(converted.spec.conversion.webhook.clientConfig.service.namespace, `${alpha.id}-default`, "the conversion webhook is a service of alpha's");
  const builtin = await send(
    alphaSession,
    family,
    { ...crd('things'), metadata: { name: 'things.apps' }, spec: { ...crd('things').spec, group: 'apps' } },
    'protobuf',
  );
  t.equal(builtin.status, 422, 'a built-in group is refused as from JSON');
  t.equal(
    (await h2Request(bravoSession, 'GET', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com')).status,
    404,
    "bravo cannot read alpha's CRD",
  );
  t.equal(
    (await h2Request(bravoSession, 'DELETE', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com')).status,
    404,
    'nor delete it',
  );
  const bravoOwn = await send(bravoSession, family, crd('widgets'), 'protobuf');
  t.equal(bravoOwn.status, 201, 'bravo makes a CRD of the same name, its own');
  const crds = await stack.kubectlDirect(['get', 'crd', '-o', 'name']);
  t.match(crds.stdout, `widgets.${bravo.id}-example.com`);
  t.match(crds.stdout, `widgets.${alpha.id}-example.com`, 'side by side upstream');
});

t.test('namespaces/finalize: the Namespace round trip as JSON and protobuf keeps the tenant label; another tenant cannot finalize it', async (t) => {
  const FAKE = 'e2e.example.com/fake-finalizer';
  for (const contentType of ['json', 'protobuf'] as const) {
    const name = `finalize-${contentType}`;
    const path = `/api/v1/namespaces/${name}/finalize`;
    const created = await h2Request(alphaSession, 'POST', '/api/v1/namespaces', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ metadata: { name } }),
    });
    t.equal(created.status, 201, created.body.slice(0, 300));
    const finalize = (finalizers: string[]) => {
      // What client-go's Finalize sends: the Namespace as read (the tenant's view has no tenant label), finalizers changed.
      const namespace = { apiVersion: 'v1', kind: 'Namespace', metadata: { name }, spec: { finalizers } };
      const body = contentType === 'protobuf' ? encodeBody(messages, `${API}.core.v1.Namespace`, namespace) : JSON.stringify(namespace);
      return { headers: { 'content-type': contentType === 'protobuf' ? PROTOBUF : 'application/json', accept: 'application/json' }, body };
    };
    const added = await h2Request(alphaSession, 'PUT', path, finalize(['kubernetes', FAKE]));
    t.equal(added.status, 200, `${contentType}: the finalizer is added: ${added.body.slice(0, 300)}`);
    t.same(added.json().spec.finalizers, ['kubernetes', FAKE]);
    t.same(
      [added.json().metadata.name, added.json().metadata.labels?.['kubezoo.io/tenant']],
      [name, undefined],
      "the tenant's view: its name, no tenant label",
    );
    const upstream = await upstreamGet(`/api/v1/namespaces/pbalfa-${name}`);
    t.equal(upstream.metadata.labels['kubezoo.io/tenant'], 'pbalfa', `${contentType}: upstream the namespace keeps its tenant label`);
    t.same(upstream.spec.finalizers, ['kubernetes', FAKE]);

    const bravoTry = await h2Request(bravoSession, 'PUT', path, finalize(['kubernetes']));
    t.ok(bravoTry.status === 404 || bravoTry.status === 403, `${contentType}: bravo's finalize of the same name gets ${bravoTry.status}`);
    t.notMatch(bravoTry.body, /pbalfa/, 'and learns nothing of alpha');
    t.same((await upstreamGet(`/api/v1/namespaces/pbalfa-${name}`)).spec.finalizers, ['kubernetes', FAKE], "alpha's namespace untouched");

    const removed = await h2Request(alphaSession, 'PUT', path, finalize(['kubernetes']));
    t.equal(removed.status, 200, `${contentType}: the finalizer is removed`);
    t.same(removed.json().spec.finalizers, ['kubernetes']);
    const after = await upstreamGet(`/api/v1/namespaces/pbalfa-${name}`);
    t.same([after.metadata.labels['kubezoo.io/tenant'], after.spec.finalizers], ['pbalfa', ['kubernetes']]);
  }
});

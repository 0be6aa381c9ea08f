// The JSON → protobuf encoder (lib/convert/protobuf/encode.ts) against the apiserver's own protobuf: for objects of
// every kind the watch cache keeps, made on the real rig, the encoder's bytes of the apiserver's JSON decode to what
// the apiserver's protobuf answer for the same object decodes to (zero values aside: Go reads absent as zero).
import type { ClientHttp2Session } from 'node:http2';
import t from 'tap';
import { encodeObject, protobufMessageOf } from '../../lib/convert/protobuf/encode.ts';
import { connectH2, credentialsOf, h2Request } from '../helpers/http.ts';
import { decodeBody, goModuleCache, loadProtoMessages, withoutZeroValues } from '../helpers/k8s-proto.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { webDeployment } from '../helpers/fixtures.ts';

const moduleCache = goModuleCache();
if (moduleCache === undefined) throw new Error('the Go module cache of the rig is missing: npm run rig');
const messages = loadProtoMessages(moduleCache);
const NAMESPACE = 'encoder';

const POD_SPEC = {
  containers: [
    {
      name: 'web',
      image: 'registry.k8s.io/pause:3.10',
      command: ['/pause'],
      ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }],
      env: [
        { name: 'FROM_CM', valueFrom: { configMapKeyRef: { name: 'settings', key: 'mode', optional: true } } },
        { name: 'PLAIN', value: 'x' },
      ],
      envFrom: [{ secretRef: { name: 'creds', optional: true } }],
      resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '1', memory: '1Gi' } },
      livenessProbe: { httpGet: { path: '/healthz', port: 'http' }, periodSeconds: 10, failureThreshold: 3 },
      readinessProbe: { tcpSocket: { port: 8080 }, initialDelaySeconds: 2 },
      lifecycle: { preStop: { exec: { command: ['/bin/true'] } } },
      securityContext: { runAsNonRoot: true, runAsUser: 1000, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
      volumeMounts: [
        { name: 'settings', mountPath: '/etc/settings', readOnly: true },
        { name: 'scratch', mountPath: '/tmp' },
      ],
    },
  ],
  volumes: [
    { name: 'settings', configMap: { name: 'settings', defaultMode: 420, items: [{ key: 'mode', path: 'mode' }] } },
    { name: 'scratch', emptyDir: { sizeLimit: '1Gi' } },
    { name: 'projected', projected: { sources: [{ serviceAccountToken: { path: 'token', expirationSeconds: 3600 } }, { secret: { name: 'creds' } }] } },
  ],
  tolerations: [
    { key: 'dedicated', operator: 'Equal', value: 'web', effect: 'NoSchedule' },
    { operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
  ],
  affinity: {
    podAntiAffinity: {
      preferredDuringSchedulingIgnoredDuringExecution: [
        { weight: 50, podAffinityTerm: { topologyKey: 'zone', labelSelector: { matchExpressions: [{ key: 'app', operator: 'In', values: ['web'] }] } } },
      ],
    },
  },
  terminationGracePeriodSeconds: 5,
  securityContext: { fsGroup: 2000, supplementalGroups: [3000, 4000] },
};

/** Objects of each kind the cache keeps, as created (path of the collection, body). */
const OBJECTS: [string, Record<string, unknown>][] = [
  ['/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE, labels: { team: 'a' } } }],
  [
    `/api/v1/namespaces/${NAMESPACE}/configmaps`,
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'settings', annotations: { note: 'é€😀' } },
      data: { mode: 'fast', empty: '' },
      binaryData: { blob: Buffer.from([0, 1, 254, 255]).toString('base64') },
    },
  ],
  [
    `/api/v1/namespaces/${NAMESPACE}/secrets`,
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'creds' },
      type: 'Opaque',
      data: { password: Buffer.from('hunter2').toString('base64') },
      stringData: { user: 'admin' },
    },
  ],
  [
    `/api/v1/namespaces/${NAMESPACE}/serviceaccounts`,
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'runner' }, automountServiceAccountToken: false, imagePullSecrets: [{ name: 'pull' }] },
  ],
  [
    `/api/v1/namespaces/${NAMESPACE}/services`,
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web' },
      spec: {
        selector: { app: 'web' },
        ports: [
          { name: 'http', port: 80, targetPort: 'http' },
          { name: 'admin', port: 9000, targetPort: 9001, protocol: 'UDP' },
        ],
        sessionAffinity: 'ClientIP',
        sessionAffinityConfig: { clientIP: { timeoutSeconds: 600 } },
      },
    },
  ],
  [
    `/api/v1/namespaces/${NAMESPACE}/endpoints`,
    {
      apiVersion: 'v1',
      kind: 'Endpoints',
      metadata: { name: 'manual' },
      subsets: [{ addresses: [{ ip: '10.0.0.1', hostname: 'a' }], ports: [{ name: 'http', port: 80 }] }],
    },
  ],
  [
    `/api/v1/namespaces/${NAMESPACE}/persistentvolumeclaims`,
    {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'data' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, volumeMode: 'Filesystem' },
    },
  ],
  [`/api/v1/namespaces/${NAMESPACE}/pods`, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'rich', labels: { app: 'web' } }, spec: POD_SPEC }],
  [
    `/api/v1/namespaces/${NAMESPACE}/events`,
    {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: 'rich.1' },
      involvedObject: { kind: 'Pod', name: 'rich', namespace: NAMESPACE },
      reason: 'Tested',
      message: 'an event',
      type: 'Normal',
      count: 2,
      firstTimestamp: '2026-01-02T03:04:05Z',
      lastTimestamp: '2026-01-02T03:05:05Z',
      source: { component: 'test' },
    },
  ],
  [
    `/api/v1/namespaces/${NAMESPACE}/events`,
    {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: 'rich.2' },
      involvedObject: { kind: 'Pod', name: 'rich', namespace: NAMESPACE },
      reason: 'Tested',
      message: 'a new-style event',
      type: 'Normal',
      eventTime: '2026-01-02T03:04:05.123456Z',
      action: 'Test',
      reportingComponent: 'test',
      reportingInstance: 'test-1',
    },
  ],
  [
    `/apis/apps/v1/namespaces/${NAMESPACE}/deployments`,
    {
      ...webDeployment('web', NAMESPACE),
      spec: {
        ...webDeployment('web', NAMESPACE).spec,
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: 0 } },
        template: { metadata: { labels: { app: 'web' } }, spec: POD_SPEC },
      },
    },
  ],
  [
    `/apis/apps/v1/namespaces/${NAMESPACE}/statefulsets`,
    {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 'db' },
      spec: {
        serviceName: 'db',
        replicas: 0,
        selector: { matchLabels: { app: 'db' } },
        template: { metadata: { labels: { app: 'db' } }, spec: { containers: [{ name: 'db', image: 'registry.k8s.io/pause:3.10' }] } },
        volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }],
      },
    },
  ],
  [
    `/apis/apps/v1/namespaces/${NAMESPACE}/daemonsets`,
    {
      apiVersion: 'apps/v1',
      kind: 'DaemonSet',
      metadata: { name: 'agent' },
      spec: {
        selector: { matchLabels: { app: 'agent' } },
        template: { metadata: { labels: { app: 'agent' } }, spec: { containers: [{ name: 'agent', image: 'registry.k8s.io/pause:3.10' }] } },
        updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } },
      },
    },
  ],
  [
    `/apis/batch/v1/namespaces/${NAMESPACE}/jobs`,
    {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'once' },
      spec: {
        backoffLimit: 2,
        activeDeadlineSeconds: 600,
        suspend: true,
        template: { spec: { restartPolicy: 'Never', containers: [{ name: 'once', image: 'registry.k8s.io/pause:3.10' }] } },
        podFailurePolicy: { rules: [{ action: 'FailJob', onExitCodes: { operator: 'In', values: [42] } }] },
      },
    },
  ],
  [
    `/apis/rbac.authorization.k8s.io/v1/namespaces/${NAMESPACE}/roles`,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'reader' },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'], resourceNames: ['settings'] }],
    },
  ],
  [
    `/apis/rbac.authorization.k8s.io/v1/namespaces/${NAMESPACE}/rolebindings`,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'reader' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'reader' },
      subjects: [
        { kind: 'ServiceAccount', name: 'runner', namespace: NAMESPACE },
        { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice' },
      ],
    },
  ],
  [
    `/apis/discovery.k8s.io/v1/namespaces/${NAMESPACE}/endpointslices`,
    {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'manual-1', labels: { 'kubernetes.io/service-name': 'manual' } },
      addressType: 'IPv4',
      endpoints: [
        {
          addresses: ['10.0.0.1'],
          conditions: { ready: true, serving: true, terminating: false },
          hostname: 'a',
          zone: 'z1',
          hints: { forZones: [{ name: 'z1' }] },
        },
      ],
      ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
    },
  ],
];

let stack: Stack;
let up: ClientHttp2Session;

t.before(async () => {
  stack = await startStack({ controllers: true });
  up = connectH2(credentialsOf(stack.upstreamKubeconfig));
  for (const [path, body] of OBJECTS) {
    const answer = await h2Request(up, 'POST', path, { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (answer.status !== 201) throw new Error(`POST ${path}: ${answer.status} ${answer.body}`);
  }
});
t.teardown(async () => {
  up?.close();
  await stack?.stop();
});

/** The same GET in JSON and in protobuf, straight from the apiserver. */
async function both(path: string): Promise<{ json: any; protobuf: Buffer }> {
  const json = await h2Request(up, 'GET', path, { headers: { accept: 'application/json' } });
  const protobuf = await h2Request(up, 'GET', path, { headers: { accept: 'application/vnd.kubernetes.protobuf' } });
  if (json.status !== 200 || protobuf.status !== 200) throw new Error(`GET ${path}: ${json.status}, ${protobuf.status}`);
  if (protobuf.headers['content-type'] !== 'application/vnd.kubernetes.protobuf') throw new Error(`GET ${path}: answered ${protobuf.headers['content-type']}`);
  return { json: json.json(), protobuf: protobuf.bytes };
}

t.test("each object: the encoder's bytes of the apiserver's JSON decode to the apiserver's own protobuf", async (t) => {
  // Controllers fill in status (a deployment's conditions and times, its ReplicaSet): wait a moment for them.
  for (let i = 0; i < 50; i++) {
    const list = await both(`/apis/apps/v1/namespaces/${NAMESPACE}/replicasets`);
    if ((list.json.items ?? []).length > 0) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  for (const [path, body] of OBJECTS) {
    const name = (body.metadata as { name: string }).name;
    const { json, protobuf } = await both(`${path}/${name}`);
    const message = protobufMessageOf(json.apiVersion, json.kind)!;
    t.ok(message, `${json.kind}: a message of the schema`);
    const ours = decodeBody(messages, message, encodeObject(json.apiVersion, json.kind, json));
    const theirs = decodeBody(messages, message, protobuf);
    t.same(withoutZeroValues(ours), withoutZeroValues(theirs), `${json.apiVersion} ${json.kind} ${name}`);
  }
});

t.test("lists of every kind, controllers' objects (ReplicaSets, their status) included", async (t) => {
  const collections = [
    ...new Set([...OBJECTS.map(([path]) => path), `/apis/apps/v1/namespaces/${NAMESPACE}/replicasets`, `/api/v1/namespaces/${NAMESPACE}/serviceaccounts`]),
  ];
  for (const path of collections) {
    // A list is the cluster at one revision; a controller's write between the two reads moves it.
    // Read again until both answers are of the same revision (bounded), then compare.
    let json: any;
    let ours: any;
    let theirs: any;
    for (let attempt = 0; attempt < 10; attempt++) {
      const answers = await both(path);
      json = answers.json;
      const message = protobufMessageOf(json.apiVersion, json.kind)!;
      ours = decodeBody(messages, message, encodeObject(json.apiVersion, json.kind, json));
      theirs = decodeBody(messages, message, answers.protobuf);
      if (ours.metadata?.resourceVersion === theirs.metadata?.resourceVersion) break;
    }
    t.ok(json.items.length > 0, `${json.kind}: items to compare`);
    t.same(withoutZeroValues(ours), withoutZeroValues(theirs), `${json.apiVersion} ${json.kind}`);
  }
});

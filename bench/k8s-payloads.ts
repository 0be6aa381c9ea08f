// Realistic upstream payloads for the rewrite benchmarks: pod lists and pod watch streams, built in memory.
// Deterministic (seeded), so runs compare; shaped like what kube-apiserver sends (compact JSON, managedFields).

/** A small seeded PRNG (mulberry32), so every run builds the same bytes. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function hex(random: () => number, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += Math.floor(random() * 16).toString(16);
  return out;
}

function uid(random: () => number): string {
  return `${hex(random, 8)}-${hex(random, 4)}-${hex(random, 4)}-${hex(random, 4)}-${hex(random, 12)}`;
}

/**
 * One ConfigMap as kube-apiserver answers a GET of it (kind first, as Go writes a typed object): about 1 KB, the tenant
 * label and its managedFields entry, three data keys.
 */
export function realisticConfigMap(random: () => number, index: number, namespace: string, tenant: string): object {
  return {
    kind: 'ConfigMap',
    apiVersion: 'v1',
    metadata: {
      name: `app-${index % 97}-config`,
      namespace,
      uid: uid(random),
      resourceVersion: String(100000 + index),
      creationTimestamp: '2026-11-02T10:15:30Z',
      labels: { app: `app-${index % 97}`, 'kubezoo.io/tenant': tenant },
      managedFields: [
        {
          manager: 'kubectl-create',
          operation: 'Update',
          apiVersion: 'v1',
          time: '2026-11-02T10:15:30Z',
          fieldsType: 'FieldsV1',
          fieldsV1: {
            'f:data': { '.': {}, 'f:app.yaml': {}, 'f:LOG_LEVEL': {}, 'f:FEATURES': {} },
            'f:metadata': { 'f:labels': { '.': {}, 'f:app': {}, 'f:kubezoo.io/tenant': {} } },
          },
        },
      ],
    },
    data: {
      'app.yaml': `server:\n  port: 8080\n  token: ${hex(random, 32)}\nfeatures:\n  cache: true\n  ttl: 300\n`,
      LOG_LEVEL: 'info',
      FEATURES: `search,export,${hex(random, 8)}`,
    },
  };
}

/** One pod as kube-apiserver would store it: about 8 KB of JSON, 1 in 10 with a last-applied-configuration. */
export function realisticPod(random: () => number, index: number, namespace: string): object {
  const app = `app-${index % 97}`;
  const name = `${app}-${hex(random, 10)}-${hex(random, 5)}`;
  const time = '2026-11-02T10:15:30Z';
  const containers = [0, 1].map((c) => ({
    name: c === 0 ? app : 'sidecar',
    image: c === 0 ? `registry.example.com/team/${app}:v1.${index % 13}.${c}` : 'registry.example.com/infra/envoy:v1.31.2',
    args: ['--port=8080', `--log-level=${c === 0 ? 'info' : 'warn'}`, '--config=/etc/config/app.yaml'],
    ports: [{ name: 'http', containerPort: 8080 + c, protocol: 'TCP' }],
    env: Array.from({ length: 11 }, (_, e) => ({ name: `ENV_VAR_${e}`, value: `value-${hex(random, 12)}` })).concat([
      { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } } } as any,
    ]),
    resources: { limits: { cpu: '500m', memory: '512Mi' }, requests: { cpu: '100m', memory: '128Mi' } },
    volumeMounts: [
      { name: 'config', mountPath: '/etc/config', readOnly: true },
      { name: 'kube-api-access-' + hex(random, 5), readOnly: true, mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' },
    ],
    livenessProbe: {
      httpGet: { path: '/healthz', port: 8080 + c, scheme: 'HTTP' },
      initialDelaySeconds: 10,
      timeoutSeconds: 1,
      periodSeconds: 10,
      successThreshold: 1,
      failureThreshold: 3,
    },
    readinessProbe: {
      httpGet: { path: '/ready', port: 8080 + c, scheme: 'HTTP' },
      timeoutSeconds: 1,
      periodSeconds: 5,
      successThreshold: 1,
      failureThreshold: 3,
    },
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
    imagePullPolicy: 'IfNotPresent',
    securityContext: { runAsNonRoot: true, readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
  }));
  const spec = {
    volumes: [
      { name: 'config', configMap: { name: `${app}-config`, defaultMode: 420 } },
      {
        name: 'kube-api-access-x',
        projected: {
          sources: [
            { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
            { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
            { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
          ],
          defaultMode: 420,
        },
      },
    ],
    containers,
    restartPolicy: 'Always',
    terminationGracePeriodSeconds: 30,
    dnsPolicy: 'ClusterFirst',
    serviceAccountName: 'default',
    serviceAccount: 'default',
    nodeName: `node-${index % 50}`,
    securityContext: { fsGroup: 2000 },
    schedulerName: 'default-scheduler',
    tolerations: [
      { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
    ],
    priority: 0,
    enableServiceLinks: true,
    preemptionPolicy: 'PreemptLowerPriority',
  };
  const annotations: Record<string, string> = { 'prometheus.io/scrape': 'true', 'prometheus.io/port': '8080' };
  if (index % 10 === 0) {
    // What `kubectl apply` leaves: the applied object as escaped JSON, with its own "namespace" inside, as the
    // tenant wrote it (kubectl sets the annotation; tenantgate prefixes only the object's own namespace).
    annotations['kubectl.kubernetes.io/last-applied-configuration'] =
      JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: namespace.slice(7), labels: { app } }, spec: { containers } }) + '\n';
  }
  return {
    metadata: {
      name,
      generateName: `${app}-${hex(random, 10)}-`,
      namespace,
      uid: uid(random),
      resourceVersion: String(100000 + index),
      creationTimestamp: time,
      labels: { app, 'pod-template-hash': hex(random, 10), 'kubezoo.io/tenant': namespace.slice(0, 6) },
      annotations,
      ownerReferences: [
        { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `${app}-${hex(random, 10)}`, uid: uid(random), controller: true, blockOwnerDeletion: true },
      ],
      managedFields: [
        {
          manager: 'kube-controller-manager',
          operation: 'Update',
          apiVersion: 'v1',
          time,
          fieldsType: 'FieldsV1',
          fieldsV1: {
            'f:metadata': {
              'f:generateName': {},
              'f:labels': { '.': {}, 'f:app': {}, 'f:kubezoo.io/tenant': {}, 'f:pod-template-hash': {} },
              'f:ownerReferences': { '.': {}, [`k:{"uid":"${uid(random)}"}`]: {} },
            },
            'f:spec': {
              'f:containers': { [`k:{"name":"${app}"}`]: { '.': {}, 'f:args': {}, 'f:env': {}, 'f:image': {}, 'f:name': {} } },
              'f:dnsPolicy': {},
              'f:restartPolicy': {},
            },
          },
        },
        {
          manager: 'kubelet',
          operation: 'Update',
          apiVersion: 'v1',
          time,
          fieldsType: 'FieldsV1',
          fieldsV1: {
            'f:status': { 'f:conditions': { 'k:{"type":"Ready"}': { '.': {}, 'f:lastTransitionTime': {}, 'f:status': {}, 'f:type': {} } }, 'f:podIP': {} },
          },
          subresource: 'status',
        },
      ],
    },
    spec,
    status: {
      phase: 'Running',
      conditions: ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map((type) => ({
        type,
        status: 'True',
        lastProbeTime: null,
        lastTransitionTime: time,
      })),
      hostIP: `10.0.${index % 250}.${(index * 7) % 250}`,
      podIP: `10.244.${index % 250}.${(index * 3) % 250}`,
      podIPs: [{ ip: `10.244.${index % 250}.${(index * 3) % 250}` }],
      startTime: time,
      containerStatuses: containers.map((c) => ({
        name: c.name,
        state: { running: { startedAt: time } },
        lastState: {},
        ready: true,
        restartCount: 0,
        image: c.image,
        imageID: `${c.image.split(':')[0]}@sha256:${hex(random, 64)}`,
        containerID: `containerd://${hex(random, 64)}`,
        started: true,
      })),
      qosClass: 'Burstable',
    },
  };
}

export interface PayloadOptions {
  pods: number;
  tenant: string;
  /** Every `otherEvery`-th pod belongs to another tenant (0: none). */
  otherEvery: number;
  seed?: number;
}

function podNamespace(options: PayloadOptions, index: number): string {
  const tenant = options.otherEvery > 0 && index % options.otherEvery === options.otherEvery - 1 ? 'zzz999' : options.tenant;
  return `${tenant}-team-${index % 7}`;
}

/** A PodList response, compact JSON as kube-apiserver sends it. */
export function podListPayload(options: PayloadOptions): Buffer {
  const random = seededRandom(options.seed ?? 1);
  const parts: string[] = ['{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"987654","continue":"","remainingItemCount":0},"items":['];
  for (let i = 0; i < options.pods; i++) {
    if (i > 0) parts.push(',');
    parts.push(JSON.stringify(realisticPod(random, i, podNamespace(options, i))));
  }
  parts.push(']}');
  return Buffer.from(parts.join(''));
}

/** A pod watch stream: one event per line, mostly MODIFIED, with a bookmark every 500 events. */
export function podWatchPayload(options: PayloadOptions): Buffer {
  const random = seededRandom(options.seed ?? 2);
  const parts: string[] = [];
  for (let i = 0; i < options.pods; i++) {
    const type = i % 20 === 0 ? 'ADDED' : i % 97 === 0 ? 'DELETED' : 'MODIFIED';
    parts.push(`{"type":"${type}","object":${JSON.stringify({ kind: 'Pod', apiVersion: 'v1', ...realisticPod(random, i, podNamespace(options, i)) })}}\n`);
    if (i % 500 === 499) parts.push(`{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"${200000 + i}"}}}\n`);
  }
  return Buffer.from(parts.join(''));
}

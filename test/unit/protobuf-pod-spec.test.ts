// The pod-spec rule in protobuf (lib/convert/protobuf/pod-spec.ts) against the JSON rule it follows (rules/workloads.ts):
// a pod spec naming every field the rule maps (priority class, affinity terms' namespaces and namespace selectors of
// both affinities, required and preferred, an ephemeral volume's claim template), in every kind that holds one, is
// encoded from generated.proto, converted on the wire both ways (a request body to the upstream; an answer to the
// tenant, careful and fast path) and decoded again: each must be what the JSON rule makes of the same object.
import t from 'tap';
import { kindOf, type KindRow } from '../../lib/convert/kinds.ts';
import { protobufBodyToTenant } from '../../lib/convert/protobuf/to-tenant.ts';
import { protobufBodyToUpstream } from '../../lib/convert/protobuf/to-upstream.ts';
import { protobufListToTenant } from '../../lib/convert/protobuf/streams.ts';
import { objectToTenant, objectToUpstream, type ConvertContext } from '../../lib/convert/rules/index.ts';
import { decodeBody, encodeBody, goModuleCache, loadProtoMessages, type ProtoMessages } from '../helpers/k8s-proto.ts';

type Json = Record<string, any>;

const TENANT = 'abc123';
const moduleCache = goModuleCache();
const NEEDS_PROTO = {
  skip: moduleCache === undefined ? 'the Go module cache with k8s.io/api v0.36.3 is not on this machine: build the rig first (npm run rig)' : false,
};
const messages: ProtoMessages = moduleCache === undefined ? new Map() : loadProtoMessages(moduleCache);

const PLATFORM = new Set(['tg-low']);
const CTX: ConvertContext = {
  tenant: TENANT,
  scopeOf: () => undefined,
  kindScope: () => undefined,
  allowsPlatformClass: (resource, name) => resource !== 'priorityclasses' || PLATFORM.has(name),
  priorityClasses: { isPlatformClass: (name) => PLATFORM.has(name), band: () => ({ min: -100, max: 500 }) },
};

const byName = (...names: string[]) => ({ matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: names }] });
/** A pod spec with every field the pod-spec rule maps; `priorityClassName`: the tenant's own class or the platform's. */
const podSpec = (priorityClassName: string): Json => ({
  containers: [{ name: 'app', image: 'nginx', ports: [{ containerPort: 80 }] }],
  priorityClassName,
  affinity: {
    nodeAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] }] },
    },
    podAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: [
        { labelSelector: { matchLabels: { app: 'db' } }, namespaces: ['default', 'team-a'], topologyKey: 'zone' },
      ],
      preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 5, podAffinityTerm: { namespaceSelector: byName('team-b', 'team-c'), topologyKey: 'host' } }],
    },
    podAntiAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: [{ namespaceSelector: {}, topologyKey: 'host' }],
      preferredDuringSchedulingIgnoredDuringExecution: [
        { weight: 1, podAffinityTerm: { namespaces: ['x'], namespaceSelector: { matchLabels: { team: 'y' } }, topologyKey: 'host' } },
      ],
    },
  },
  volumes: [
    { name: 'scratch', emptyDir: {} },
    {
      name: 'claim',
      ephemeral: {
        volumeClaimTemplate: { metadata: { labels: { a: 'b' } }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } },
      },
    },
  ],
});
const template = (priorityClassName: string) => ({ metadata: { labels: { app: 'web' } }, spec: podSpec(priorityClassName) });
const selector = { matchLabels: { app: 'web' } };

/** Every kind holding a pod spec: its row, its .proto message and an object of it. */
const CASES: readonly (readonly [group: string, resource: string, message: string, object: Json])[] = [
  ['', 'pods', 'k8s.io.api.core.v1.Pod', { apiVersion: 'v1', kind: 'Pod', spec: podSpec('mine') }],
  ['', 'pods', 'k8s.io.api.core.v1.Pod', { apiVersion: 'v1', kind: 'Pod', spec: podSpec('tg-low') }],
  [
    '',
    'replicationcontrollers',
    'k8s.io.api.core.v1.ReplicationController',
    { apiVersion: 'v1', kind: 'ReplicationController', spec: { selector: { app: 'web' }, template: template('mine') } },
  ],
  ['', 'podtemplates', 'k8s.io.api.core.v1.PodTemplate', { apiVersion: 'v1', kind: 'PodTemplate', template: template('tg-low') }],
  ['apps', 'deployments', 'k8s.io.api.apps.v1.Deployment', { apiVersion: 'apps/v1', kind: 'Deployment', spec: { selector, template: template('mine') } }],
  ['apps', 'replicasets', 'k8s.io.api.apps.v1.ReplicaSet', { apiVersion: 'apps/v1', kind: 'ReplicaSet', spec: { selector, template: template('mine') } }],
  ['apps', 'daemonsets', 'k8s.io.api.apps.v1.DaemonSet', { apiVersion: 'apps/v1', kind: 'DaemonSet', spec: { selector, template: template('tg-low') } }],
  [
    'apps',
    'statefulsets',
    'k8s.io.api.apps.v1.StatefulSet',
    { apiVersion: 'apps/v1', kind: 'StatefulSet', spec: { selector, serviceName: 'web', template: template('mine') } },
  ],
  ['batch', 'jobs', 'k8s.io.api.batch.v1.Job', { apiVersion: 'batch/v1', kind: 'Job', spec: { template: template('mine') } }],
  [
    'batch',
    'cronjobs',
    'k8s.io.api.batch.v1.CronJob',
    { apiVersion: 'batch/v1', kind: 'CronJob', spec: { schedule: '*/5 * * * *', jobTemplate: { spec: { template: template('mine') } } } },
  ],
];

const rowOf = (group: string, resource: string) => kindOf(group, resource) as KindRow;
const withMetadata = (object: Json, name: string): Json => ({ ...object, metadata: { name, namespace: 'default' } });

t.test("every kind's pod spec, toward the upstream: the protobuf body converted is what the JSON rule makes of it", NEEDS_PROTO, async (t) => {
  for (const [group, resource, message, object] of CASES) {
    const tenantObject = withMetadata(object, 'w');
    const row = rowOf(group, resource);
    const body = encodeBody(messages, message, tenantObject);
    t.strictSame(decodeBody(messages, message, body), tenantObject, `${row.kind}: the test's encoder and decoder agree`);
    const version = String(tenantObject.apiVersion).split('/').at(-1)!;
    const converted = protobufBodyToUpstream(body, row, TENANT, { verb: 'create', subresource: '', version, ...CTX });
    const want = objectToUpstream(structuredClone(tenantObject), CTX, row);
    t.strictSame(decodeBody(messages, message, converted), want, `${row.kind} (${JSON.stringify(podSpecOf(tenantObject).priorityClassName)})`);
  }
});

t.test("every kind's pod spec, toward the tenant: the protobuf answer converted is what the JSON rule makes of it", NEEDS_PROTO, async (t) => {
  for (const [group, resource, message, object] of CASES) {
    const row = rowOf(group, resource);
    const upstream = objectToUpstream(structuredClone(withMetadata(object, 'w')), CTX, row);
    const converted = protobufBodyToTenant(encodeBody(messages, message, upstream), row, CTX);
    t.ok(converted !== null, `${row.kind}: the tenant's`);
    const want = objectToTenant(structuredClone(upstream), CTX, row);
    t.strictSame(decodeBody(messages, message, converted!), want, `${row.kind}: careful path`);
  }
});

t.test('a pod list, toward the tenant: the fast path reads pod specs as the JSON rule does', NEEDS_PROTO, async (t) => {
  const pods = CASES.filter(([, resource]) => resource === 'pods').map(([, , , object], i) =>
    objectToUpstream(withMetadata(object, `p${i}`), CTX, rowOf('', 'pods')),
  );
  // Pods whose spec has none of the rule's fields, or only the platform's class: the fast path's own ground.
  const plain = objectToUpstream(
    withMetadata({ apiVersion: 'v1', kind: 'Pod', spec: { containers: [{ name: 'c', image: 'x' }] } }, 'plain'),
    CTX,
    rowOf('', 'pods'),
  );
  const items = [...pods, plain].map(({ apiVersion, kind, ...item }) => item);
  const body = encodeBody(messages, 'k8s.io.api.core.v1.PodList', { apiVersion: 'v1', kind: 'PodList', metadata: {}, items });
  const view = decodeBody(messages, 'k8s.io.api.core.v1.PodList', protobufListToTenant(body, rowOf('', 'pods'), CTX, 'v1'));
  const want = items.map((item) => {
    const { apiVersion, kind, ...mine } = objectToTenant({ apiVersion: 'v1', kind: 'Pod', ...structuredClone(item) }, CTX, rowOf('', 'pods'))!;
    return mine;
  });
  t.strictSame(view.items, want);
});

function podSpecOf(object: Json): Json {
  return object.spec?.jobTemplate?.spec?.template?.spec ?? object.spec?.template?.spec ?? object.template?.spec ?? object.spec;
}

t.test("a chunk buffer used again for other bytes: the fast path reads the new pod's priority class", NEEDS_PROTO, async (t) => {
  const pods = rowOf('', 'pods');
  const listOf = (spec: Json) => {
    const { apiVersion, kind, ...item } = objectToUpstream(withMetadata({ apiVersion: 'v1', kind: 'Pod', spec }, 'p'), CTX, pods);
    return encodeBody(messages, 'k8s.io.api.core.v1.PodList', { apiVersion: 'v1', kind: 'PodList', metadata: {}, items: [item] });
  };
  // The tenant's own class, and nothing else of the rule's; then a pod without a class, padded to the same length.
  const withClass = listOf({ containers: [{ name: 'c', image: 'x' }], priorityClassName: 'mine' });
  const image = Array.from({ length: 40 }, (_, pad) => 'x'.repeat(pad + 1)).find(
    (name) => listOf({ containers: [{ name: 'c', image: name }] }).length === withClass.length,
  );
  t.ok(image !== undefined, 'a pod without a class encodes to the same length');
  const reused = Buffer.from(listOf({ containers: [{ name: 'c', image: image! }] }));
  protobufListToTenant(reused, pods, CTX, 'v1');
  withClass.copy(reused);
  const view = decodeBody(messages, 'k8s.io.api.core.v1.PodList', protobufListToTenant(reused, pods, CTX, 'v1'));
  t.equal((view.items as Json[])[0]?.spec?.priorityClassName, 'mine', 'the class without the upstream prefix');
});

import t from 'tap';
import { kindOf, type KindRow, type Scope } from '../../lib/convert/kinds.ts';
import { TENANT_LABEL } from '../../lib/convert/prefix.ts';
import {
  crdNameToTenant,
  crdNameToUpstream,
  groupToTenant,
  groupToUpstream,
  identityToUpstream,
  objectToTenant,
  objectToUpstream,
  serviceAccountUser,
  stripTenantPrefixes,
  userToTenant,
  userToUpstream,
  type ConvertContext,
  type Json,
} from '../../lib/convert/rules/index.ts';
import { StatusError } from '../../lib/errors/status-error.ts';

// Discovery as the upstream would answer it: every tenant below installed the same two CRDs in group example.com.
const TENANTS = ['abc123', 'xyz789', 'defaul', 'system'];
const RESOURCE_SCOPES = new Map<string, Scope>();
const KIND_SCOPES = new Map<string, Scope>();
for (const id of TENANTS) {
  RESOURCE_SCOPES.set(`${id}-example.com/widgets`, 'Namespaced');
  RESOURCE_SCOPES.set(`${id}-example.com/clusterwidgets`, 'Cluster');
  KIND_SCOPES.set(`${id}-example.com/Widget`, 'Namespaced');
  KIND_SCOPES.set(`${id}-example.com/ClusterWidget`, 'Cluster');
}

function contextFor(tenant: string): ConvertContext {
  return {
    tenant,
    scopeOf: (group, resource) => RESOURCE_SCOPES.get(`${group}/${resource}`),
    kindScope: (apiVersion, kind) => KIND_SCOPES.get(`${apiVersion.slice(0, apiVersion.lastIndexOf('/'))}/${kind}`),
  };
}
const ctx = contextFor('abc123');

function rowOf(group: string, resource: string): KindRow {
  const custom = RESOURCE_SCOPES.get(`abc123-${group}/${resource}`);
  const row = kindOf(group, resource, custom);
  if (row === undefined) throw new Error(`no row for ${group}/${resource}`);
  return row;
}

/** A fresh copy as parsed JSON would be: no object shared between two places (structuredClone would keep `L` shared). */
const copy = (obj: Json): Json => JSON.parse(JSON.stringify(obj)) as Json;
const up = (obj: Json, group: string, resource: string, context = ctx) => objectToUpstream(copy(obj), context, rowOf(group, resource));
const down = (obj: Json, group: string, resource: string, context = ctx) => objectToTenant(copy(obj), context, rowOf(group, resource));

function thrown(fn: () => unknown): StatusError | undefined {
  try {
    fn();
  } catch (error) {
    if (error instanceof StatusError) return error;
    throw error;
  }
  return undefined;
}

const L = { [TENANT_LABEL]: 'abc123' };

interface Case {
  behaviour: string;
  group: string;
  resource: string;
  tenant: Json;
  upstream: Json;
}

/** Each case holds both views of one object: the tenant writes the first and reads it back from the second. */
const cases: Case[] = [
  {
    behaviour: 'a configmap in namespace default lives in abc123-default, labelled',
    group: '',
    resource: 'configmaps',
    tenant: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: 'default', labels: { app: 'web' } }, data: { a: 'b' } },
    upstream: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'settings', namespace: 'abc123-default', labels: { app: 'web', ...L } },
      data: { a: 'b' },
    },
  },
  {
    behaviour: 'an object without labels gets only the tenant label, and reads back without labels',
    group: '',
    resource: 'secrets',
    tenant: { metadata: { name: 'token', namespace: 'kube-system' }, type: 'Opaque' },
    upstream: { metadata: { name: 'token', namespace: 'abc123-kube-system', labels: L }, type: 'Opaque' },
  },
  {
    behaviour: 'namespace default is abc123-default, with the tenant label and its own name label',
    group: '',
    resource: 'namespaces',
    tenant: {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'default', labels: { 'kubernetes.io/metadata.name': 'default' } },
      spec: { finalizers: ['kubernetes'] },
    },
    upstream: {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'abc123-default', labels: { 'kubernetes.io/metadata.name': 'abc123-default', ...L } },
      spec: { finalizers: ['kubernetes'] },
    },
  },
  {
    behaviour: 'owner references: namespaced owners unchanged, cluster-scoped owners and custom groups prefixed',
    group: '',
    resource: 'pods',
    tenant: {
      metadata: {
        name: 'web-1',
        namespace: 'default',
        ownerReferences: [
          { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-abc', uid: 'u1', controller: true },
          { apiVersion: 'v1', kind: 'Namespace', name: 'default', uid: 'u2' },
          { apiVersion: 'example.com/v1', kind: 'Widget', name: 'w', uid: 'u3' },
          { apiVersion: 'example.com/v1', kind: 'ClusterWidget', name: 'cw', uid: 'u4' },
          { apiVersion: 'v1', kind: 'Node', name: 'node-1', uid: 'u5' },
        ],
      },
      spec: {
        nodeName: 'node-1',
        serviceAccountName: 'builder',
        priorityClassName: 'high',
        runtimeClassName: 'gvisor',
        containers: [{ name: 'c', image: 'nginx' }],
      },
    },
    upstream: {
      metadata: {
        name: 'web-1',
        namespace: 'abc123-default',
        labels: L,
        ownerReferences: [
          { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-abc', uid: 'u1', controller: true },
          { apiVersion: 'v1', kind: 'Namespace', name: 'abc123-default', uid: 'u2' },
          { apiVersion: 'abc123-example.com/v1', kind: 'Widget', name: 'w', uid: 'u3' },
          { apiVersion: 'abc123-example.com/v1', kind: 'ClusterWidget', name: 'abc123-cw', uid: 'u4' },
          { apiVersion: 'v1', kind: 'Node', name: 'node-1', uid: 'u5' },
        ],
      },
      spec: {
        nodeName: 'node-1',
        serviceAccountName: 'builder',
        priorityClassName: 'high',
        runtimeClassName: 'gvisor',
        containers: [{ name: 'c', image: 'nginx' }],
      },
    },
  },
  {
    behaviour: 'pod affinity names and selects only the tenant’s namespaces; ephemeral claims inherit the label',
    group: '',
    resource: 'pods',
    tenant: {
      metadata: { name: 'p', namespace: 'default' },
      spec: {
        affinity: {
          podAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: { matchLabels: { app: 'db' } }, namespaces: ['data'], topologyKey: 'zone' }],
          },
          podAntiAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [
              { weight: 1, podAffinityTerm: { labelSelector: { matchLabels: { app: 'web' } }, namespaceSelector: {}, topologyKey: 'host' } },
            ],
          },
        },
        volumes: [{ name: 'scratch', ephemeral: { volumeClaimTemplate: { spec: { accessModes: ['ReadWriteOnce'] } } } }],
      },
    },
    upstream: {
      metadata: { name: 'p', namespace: 'abc123-default', labels: L },
      spec: {
        affinity: {
          podAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: [
              { labelSelector: { matchLabels: { app: 'db' } }, namespaces: ['abc123-data'], topologyKey: 'zone' },
            ],
          },
          podAntiAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [
              { weight: 1, podAffinityTerm: { labelSelector: { matchLabels: { app: 'web' } }, namespaceSelector: { matchLabels: L }, topologyKey: 'host' } },
            ],
          },
        },
        volumes: [{ name: 'scratch', ephemeral: { volumeClaimTemplate: { metadata: { labels: L }, spec: { accessModes: ['ReadWriteOnce'] } } } }],
      },
    },
  },
  {
    behaviour: 'a deployment’s pod template carries the tenant label, so its ReplicaSets and Pods do',
    group: 'apps',
    resource: 'deployments',
    tenant: {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'default', labels: { app: 'web' } },
      spec: {
        selector: { matchLabels: { app: 'web' } },
        template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } },
      },
    },
    upstream: {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'abc123-default', labels: { app: 'web', ...L } },
      spec: {
        selector: { matchLabels: { app: 'web' } },
        template: { metadata: { labels: { app: 'web', ...L } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } },
      },
    },
  },
  {
    behaviour: 'a job template without metadata still labels its pods',
    group: 'batch',
    resource: 'jobs',
    tenant: { metadata: { name: 'once', namespace: 'default' }, spec: { template: { spec: { restartPolicy: 'Never' } } } },
    upstream: {
      metadata: { name: 'once', namespace: 'abc123-default', labels: L },
      spec: { template: { metadata: { labels: L }, spec: { restartPolicy: 'Never' } } },
    },
  },
  {
    behaviour: 'a cronjob labels the jobs it makes and their pods',
    group: 'batch',
    resource: 'cronjobs',
    tenant: {
      metadata: { name: 'nightly', namespace: 'ops' },
      spec: { schedule: '0 0 * * *', jobTemplate: { spec: { template: { metadata: { labels: { job: 'n' } }, spec: { restartPolicy: 'Never' } } } } },
    },
    upstream: {
      metadata: { name: 'nightly', namespace: 'abc123-ops', labels: L },
      spec: {
        schedule: '0 0 * * *',
        jobTemplate: { metadata: { labels: L }, spec: { template: { metadata: { labels: { job: 'n', ...L } }, spec: { restartPolicy: 'Never' } } } },
      },
    },
  },
  {
    behaviour: 'a statefulset labels its pods and the PVCs of its claim templates',
    group: 'apps',
    resource: 'statefulsets',
    tenant: {
      metadata: { name: 'db', namespace: 'default' },
      spec: {
        template: { metadata: { labels: { app: 'db' } }, spec: {} },
        volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { storageClassName: 'fast' } }],
      },
    },
    upstream: {
      metadata: { name: 'db', namespace: 'abc123-default', labels: L },
      spec: {
        template: { metadata: { labels: { app: 'db', ...L } }, spec: {} },
        volumeClaimTemplates: [{ metadata: { name: 'data', labels: L }, spec: { storageClassName: 'fast' } }],
      },
    },
  },
  {
    behaviour: 'daemonsets, replicasets, replication controllers, pod templates and claim templates label their children',
    group: '',
    resource: 'podtemplates',
    tenant: { metadata: { name: 'pt', namespace: 'default' }, template: { metadata: { labels: { a: 'b' } }, spec: {} } },
    upstream: { metadata: { name: 'pt', namespace: 'abc123-default', labels: L }, template: { metadata: { labels: { a: 'b', ...L } }, spec: {} } },
  },
  {
    behaviour: 'a resource claim template labels the claims made from it',
    group: 'resource.k8s.io',
    resource: 'resourceclaimtemplates',
    tenant: { metadata: { name: 'gpu', namespace: 'default' }, spec: { spec: { devices: {} } } },
    upstream: { metadata: { name: 'gpu', namespace: 'abc123-default', labels: L }, spec: { metadata: { labels: L }, spec: { devices: {} } } },
  },
  {
    behaviour: 'a ClusterRole’s name, custom groups, cluster-scoped resourceNames and aggregation selectors are the tenant’s',
    group: 'rbac.authorization.k8s.io',
    resource: 'clusterroles',
    tenant: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'reader', labels: { 'rbac.authorization.k8s.io/aggregate-to-view': 'true' } },
      rules: [
        { apiGroups: [''], resources: ['pods', 'pods/log'], verbs: ['get'] },
        { apiGroups: ['example.com'], resources: ['widgets', 'clusterwidgets'], verbs: ['*'] },
        { apiGroups: [''], resources: ['namespaces'], resourceNames: ['default', 'ops'], verbs: ['get'] },
        { apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles'], resourceNames: ['reader'], verbs: ['bind'] },
        { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], resourceNames: ['widgets.example.com'], verbs: ['get'] },
        { apiGroups: [''], resources: ['configmaps'], resourceNames: ['settings'], verbs: ['get'] },
        { apiGroups: [''], resources: ['configmaps', 'namespaces'], resourceNames: ['x'], verbs: ['get'] },
        { apiGroups: ['*'], resources: ['*'], resourceNames: ['y'], verbs: ['get'] },
        { apiGroups: ['example.com'], resources: ['clusterwidgets'], resourceNames: ['cw'], verbs: ['get'] },
        { apiGroups: ['example.com'], resources: ['gadgets'], resourceNames: ['g'], verbs: ['get'] },
        { apiGroups: ['apiregistration.k8s.io'], resources: ['apiservices'], resourceNames: ['v1.example.com', 'v1.apps', 'v1.'], verbs: ['get'] },
        { nonResourceURLs: ['/healthz'], verbs: ['get'] },
      ],
    },
    upstream: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      // The upstream's own view role selects rbac.authorization.k8s.io/aggregate-to-view: the tenant's label may not match it.
      metadata: { name: 'abc123-reader', labels: { 'abc123.aggregation.kubezoo.io/aggregate-to-view': 'true', ...L } },
      rules: [
        { apiGroups: [''], resources: ['pods', 'pods/log'], verbs: ['get'] },
        { apiGroups: ['abc123-example.com'], resources: ['widgets', 'clusterwidgets'], verbs: ['*'] },
        { apiGroups: [''], resources: ['namespaces'], resourceNames: ['abc123-default', 'abc123-ops'], verbs: ['get'] },
        { apiGroups: ['rbac.authorization.k8s.io'], resources: ['clusterroles'], resourceNames: ['abc123-reader'], verbs: ['bind'] },
        { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], resourceNames: ['widgets.abc123-example.com'], verbs: ['get'] },
        { apiGroups: [''], resources: ['configmaps'], resourceNames: ['settings'], verbs: ['get'] },
        { apiGroups: [''], resources: ['configmaps', 'namespaces'], resourceNames: ['x', 'abc123-x'], verbs: ['get'] },
        { apiGroups: ['*'], resources: ['*'], resourceNames: ['y', 'abc123-y'], verbs: ['get'] },
        { apiGroups: ['abc123-example.com'], resources: ['clusterwidgets'], resourceNames: ['abc123-cw'], verbs: ['get'] },
        // a custom resource discovery does not know (yet): its names are granted in both forms
        { apiGroups: ['abc123-example.com'], resources: ['gadgets'], resourceNames: ['g', 'abc123-g'], verbs: ['get'] },
        // APIServices are named <version>.<group>: the tenant's CRD group takes its prefix, built-in groups do not
        { apiGroups: ['apiregistration.k8s.io'], resources: ['apiservices'], resourceNames: ['v1.abc123-example.com', 'v1.apps', 'v1.'], verbs: ['get'] },
        { nonResourceURLs: ['/healthz'], verbs: ['get'] },
      ],
    },
  },
  {
    behaviour: 'an impersonation role’s users and groups are the tenant’s identities, as impersonation asks about them upstream',
    group: 'rbac.authorization.k8s.io',
    resource: 'clusterroles',
    tenant: {
      metadata: { name: 'impersonator' },
      rules: [
        { apiGroups: [''], resources: ['users'], resourceNames: ['alice', 'system:admin'], verbs: ['impersonate'] },
        { apiGroups: [''], resources: ['groups'], resourceNames: ['devs', 'system:masters'], verbs: ['impersonate'] },
        { apiGroups: [''], resources: ['serviceaccounts'], resourceNames: ['robot'], verbs: ['impersonate'] },
        { apiGroups: ['authentication.k8s.io'], resources: ['userextras/scopes', 'uids'], resourceNames: ['view'], verbs: ['impersonate'] },
      ],
    },
    upstream: {
      metadata: { name: 'abc123-impersonator', labels: L },
      rules: [
        { apiGroups: [''], resources: ['users'], resourceNames: ['abc123-alice', 'abc123-system:admin'], verbs: ['impersonate'] },
        { apiGroups: [''], resources: ['groups'], resourceNames: ['abc123:devs', 'abc123:system:masters'], verbs: ['impersonate'] },
        { apiGroups: [''], resources: ['serviceaccounts'], resourceNames: ['robot'], verbs: ['impersonate'] },
        { apiGroups: ['authentication.k8s.io'], resources: ['userextras/scopes', 'uids'], resourceNames: ['view'], verbs: ['impersonate'] },
      ],
    },
  },
  {
    behaviour: 'an aggregated ClusterRole aggregates only the tenant’s own roles, by their renamed labels',
    group: 'rbac.authorization.k8s.io',
    resource: 'clusterroles',
    tenant: {
      metadata: { name: 'view' },
      aggregationRule: {
        clusterRoleSelectors: [
          { matchLabels: { 'rbac.authorization.k8s.io/aggregate-to-view': 'true' } },
          {},
          { matchExpressions: [{ key: 'rbac.authorization.k8s.io/aggregate-to-edit', operator: 'Exists' }] },
        ],
      },
    },
    upstream: {
      metadata: { name: 'abc123-view', labels: L },
      aggregationRule: {
        clusterRoleSelectors: [
          { matchLabels: { 'abc123.aggregation.kubezoo.io/aggregate-to-view': 'true', ...L } },
          { matchLabels: L },
          { matchExpressions: [{ key: 'abc123.aggregation.kubezoo.io/aggregate-to-edit', operator: 'Exists' }], matchLabels: L },
        ],
      },
    },
  },
  {
    behaviour: 'a Role’s names of namespaced objects stay as they are',
    group: 'rbac.authorization.k8s.io',
    resource: 'roles',
    tenant: {
      metadata: { name: 'r', namespace: 'default' },
      rules: [
        { apiGroups: ['', 'apps'], resources: ['pods', 'deployments'], resourceNames: ['a'], verbs: ['get'] },
        { apiGroups: ['example.com'], resources: ['widgets'], resourceNames: ['w'], verbs: ['get'] },
      ],
    },
    upstream: {
      metadata: { name: 'r', namespace: 'abc123-default', labels: L },
      rules: [
        { apiGroups: ['', 'apps'], resources: ['pods', 'deployments'], resourceNames: ['a'], verbs: ['get'] },
        { apiGroups: ['abc123-example.com'], resources: ['widgets'], resourceNames: ['w'], verbs: ['get'] },
      ],
    },
  },
  {
    behaviour: 'a RoleBinding binds upstream identities of the tenant and its ClusterRole',
    group: 'rbac.authorization.k8s.io',
    resource: 'rolebindings',
    tenant: {
      metadata: { name: 'devs', namespace: 'default' },
      subjects: [
        { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice' },
        { kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'devs' },
        { kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'system:authenticated' },
        { kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'system:serviceaccounts:ci' },
        { kind: 'ServiceAccount', name: 'builder', namespace: 'ci' },
        { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'system:serviceaccount:ci:deployer' },
      ],
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'edit' },
    },
    upstream: {
      metadata: { name: 'devs', namespace: 'abc123-default', labels: L },
      subjects: [
        { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'abc123-alice' },
        { kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'abc123:devs' },
        { kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'abc123:system:authenticated' },
        { kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'system:serviceaccounts:abc123-ci' },
        { kind: 'ServiceAccount', name: 'builder', namespace: 'abc123-ci' },
        { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'system:serviceaccount:abc123-ci:deployer' },
      ],
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'abc123-edit' },
    },
  },
  {
    behaviour: 'a RoleBinding to a Role names it unchanged',
    group: 'rbac.authorization.k8s.io',
    resource: 'rolebindings',
    tenant: { metadata: { name: 'b', namespace: 'default' }, subjects: [], roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'r' } },
    upstream: {
      metadata: { name: 'b', namespace: 'abc123-default', labels: L },
      subjects: [],
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'r' },
    },
  },
  {
    behaviour: 'a ClusterRoleBinding is the tenant’s, bound to its ClusterRole, its subjects shadow identities that nobody carries upstream',
    group: 'rbac.authorization.k8s.io',
    resource: 'clusterrolebindings',
    tenant: {
      metadata: { name: 'admins' },
      subjects: [
        { kind: 'Group', name: 'system:masters' },
        { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'alice' },
        { kind: 'ServiceAccount', name: 'builder', namespace: 'ci' },
      ],
      roleRef: { kind: 'ClusterRole', name: 'cluster-admin' },
    },
    upstream: {
      metadata: { name: 'abc123-admins', labels: L },
      subjects: [
        { kind: 'Group', name: 'tenantgate:cluster:abc123:system:masters' },
        { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'tenantgate:cluster:abc123-alice' },
        { kind: 'User', name: 'tenantgate:cluster:system:serviceaccount:abc123-ci:builder', apiGroup: 'rbac.authorization.k8s.io' },
      ],
      roleRef: { kind: 'ClusterRole', name: 'abc123-cluster-admin' },
    },
  },
  {
    behaviour: 'a core Event refers to objects in the tenant’s namespaces; shared nodes keep their names',
    group: '',
    resource: 'events',
    tenant: {
      metadata: { name: 'web.17a', namespace: 'default' },
      involvedObject: { apiVersion: 'v1', kind: 'Pod', namespace: 'default', name: 'web', uid: 'u', fieldPath: 'spec.containers{c}' },
      related: { apiVersion: 'v1', kind: 'Node', name: 'node-1' },
      reason: 'Scheduled',
      message: 'Successfully assigned default/web to node-1',
    },
    upstream: {
      metadata: { name: 'web.17a', namespace: 'abc123-default', labels: L },
      involvedObject: { apiVersion: 'v1', kind: 'Pod', namespace: 'abc123-default', name: 'web', uid: 'u', fieldPath: 'spec.containers{c}' },
      related: { apiVersion: 'v1', kind: 'Node', name: 'node-1' },
      reason: 'Scheduled',
      message: 'Successfully assigned default/web to node-1',
    },
  },
  {
    behaviour: 'an events.k8s.io Event about a namespace and a cluster-scoped custom resource',
    group: 'events.k8s.io',
    resource: 'events',
    tenant: {
      metadata: { name: 'ns.1', namespace: 'default' },
      regarding: { apiVersion: 'v1', kind: 'Namespace', name: 'ops' },
      related: { apiVersion: 'example.com/v1', kind: 'ClusterWidget', name: 'cw' },
      note: 'created',
    },
    upstream: {
      metadata: { name: 'ns.1', namespace: 'abc123-default', labels: L },
      regarding: { apiVersion: 'v1', kind: 'Namespace', name: 'abc123-ops' },
      related: { apiVersion: 'abc123-example.com/v1', kind: 'ClusterWidget', name: 'abc123-cw' },
      note: 'created',
    },
  },
  {
    behaviour: 'Endpoints point at pods in the tenant’s namespace',
    group: '',
    resource: 'endpoints',
    tenant: {
      metadata: { name: 'web', namespace: 'default' },
      subsets: [
        {
          addresses: [{ ip: '10.0.0.1', targetRef: { kind: 'Pod', namespace: 'default', name: 'web-1' } }],
          notReadyAddresses: [{ ip: '10.0.0.2', targetRef: { kind: 'Pod', namespace: 'default', name: 'web-2' } }],
        },
      ],
    },
    upstream: {
      metadata: { name: 'web', namespace: 'abc123-default', labels: L },
      subsets: [
        {
          addresses: [{ ip: '10.0.0.1', targetRef: { kind: 'Pod', namespace: 'abc123-default', name: 'web-1' } }],
          notReadyAddresses: [{ ip: '10.0.0.2', targetRef: { kind: 'Pod', namespace: 'abc123-default', name: 'web-2' } }],
        },
      ],
    },
  },
  {
    behaviour: 'an EndpointSlice points at pods in the tenant’s namespace',
    group: 'discovery.k8s.io',
    resource: 'endpointslices',
    tenant: {
      metadata: { name: 'web-x', namespace: 'default' },
      endpoints: [{ addresses: ['10.0.0.1'], nodeName: 'node-1', targetRef: { kind: 'Pod', namespace: 'default', name: 'web-1' } }],
    },
    upstream: {
      metadata: { name: 'web-x', namespace: 'abc123-default', labels: L },
      endpoints: [{ addresses: ['10.0.0.1'], nodeName: 'node-1', targetRef: { kind: 'Pod', namespace: 'abc123-default', name: 'web-1' } }],
    },
  },
  {
    behaviour: 'a PersistentVolume is the tenant’s: its claim and driver secrets live in the tenant’s namespaces',
    group: '',
    resource: 'persistentvolumes',
    tenant: {
      metadata: { name: 'data' },
      spec: {
        storageClassName: 'fast',
        claimRef: { kind: 'PersistentVolumeClaim', namespace: 'default', name: 'data', uid: 'u' },
        csi: { driver: 'x.csi', volumeHandle: 'h', nodePublishSecretRef: { name: 's', namespace: 'storage' } },
      },
    },
    upstream: {
      metadata: { name: 'abc123-data', labels: L },
      spec: {
        storageClassName: 'fast',
        claimRef: { kind: 'PersistentVolumeClaim', namespace: 'abc123-default', name: 'data', uid: 'u' },
        csi: { driver: 'x.csi', volumeHandle: 'h', nodePublishSecretRef: { name: 's', namespace: 'abc123-storage' } },
      },
    },
  },
  {
    behaviour: 'a PVC names the tenant’s PV',
    group: '',
    resource: 'persistentvolumeclaims',
    tenant: { metadata: { name: 'data', namespace: 'default' }, spec: { volumeName: 'data', storageClassName: 'fast' } },
    upstream: { metadata: { name: 'data', namespace: 'abc123-default', labels: L }, spec: { volumeName: 'abc123-data', storageClassName: 'fast' } },
  },
  {
    behaviour: 'a PVC bound by a dynamic provisioner keeps the provisioned volume’s name',
    group: '',
    resource: 'persistentvolumeclaims',
    tenant: { metadata: { name: 'cache', namespace: 'default' }, spec: { volumeName: 'pvc-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0' } },
    upstream: { metadata: { name: 'cache', namespace: 'abc123-default', labels: L }, spec: { volumeName: 'pvc-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0' } },
  },
  {
    behaviour: 'a CRD widgets.example.com is widgets.abc123-example.com upstream, with its conversion webhook in the tenant’s namespace',
    group: 'apiextensions.k8s.io',
    resource: 'customresourcedefinitions',
    tenant: {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.example.com' },
      spec: {
        group: 'example.com',
        names: { plural: 'widgets', kind: 'Widget' },
        scope: 'Namespaced',
        conversion: { strategy: 'Webhook', webhook: { clientConfig: { service: { namespace: 'hooks', name: 'convert' } }, conversionReviewVersions: ['v1'] } },
      },
    },
    upstream: {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.abc123-example.com', labels: L },
      spec: {
        group: 'abc123-example.com',
        names: { plural: 'widgets', kind: 'Widget' },
        scope: 'Namespaced',
        conversion: {
          strategy: 'Webhook',
          webhook: { clientConfig: { service: { namespace: 'abc123-hooks', name: 'convert' } }, conversionReviewVersions: ['v1'] },
        },
      },
    },
  },
  {
    behaviour: 'a custom resource’s apiVersion takes the tenant’s group',
    group: 'example.com',
    resource: 'widgets',
    tenant: { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w', namespace: 'default' }, spec: { size: 3 } },
    upstream: { apiVersion: 'abc123-example.com/v1', kind: 'Widget', metadata: { name: 'w', namespace: 'abc123-default', labels: L }, spec: { size: 3 } },
  },
  {
    behaviour: 'a cluster-scoped custom resource takes the prefix on its name too',
    group: 'example.com',
    resource: 'clusterwidgets',
    tenant: { apiVersion: 'example.com/v1', kind: 'ClusterWidget', metadata: { name: 'cw' } },
    upstream: { apiVersion: 'abc123-example.com/v1', kind: 'ClusterWidget', metadata: { name: 'abc123-cw', labels: L } },
  },
  {
    behaviour: 'a webhook is called only for the tenant’s namespaces and objects, at its service in the tenant’s namespace',
    group: 'admissionregistration.k8s.io',
    resource: 'validatingwebhookconfigurations',
    tenant: {
      metadata: { name: 'policy' },
      webhooks: [
        {
          name: 'check.example.com',
          clientConfig: { service: { namespace: 'hooks', name: 'check', path: '/v' }, caBundle: 'Q0E=' },
          rules: [{ apiGroups: ['apps', 'example.com'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['deployments', 'widgets'] }],
          namespaceSelector: {},
          objectSelector: {},
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
        },
      ],
    },
    upstream: {
      metadata: { name: 'abc123-policy', labels: L },
      webhooks: [
        {
          name: 'check.example.com',
          clientConfig: { service: { namespace: 'abc123-hooks', name: 'check', path: '/v' }, caBundle: 'Q0E=' },
          rules: [{ apiGroups: ['apps', 'abc123-example.com'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['deployments', 'widgets'] }],
          namespaceSelector: { matchLabels: L },
          objectSelector: { matchLabels: L },
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
        },
      ],
    },
  },
  {
    behaviour: 'a mutating webhook selecting namespaces by name selects the tenant’s namespaces of those names',
    group: 'admissionregistration.k8s.io',
    resource: 'mutatingwebhookconfigurations',
    tenant: {
      metadata: { name: 'inject' },
      webhooks: [
        {
          name: 'inject.example.com',
          clientConfig: { service: { namespace: 'hooks', name: 'inject' } },
          namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['kube-system'] }] },
          objectSelector: { matchLabels: { inject: 'yes' } },
        },
      ],
    },
    upstream: {
      metadata: { name: 'abc123-inject', labels: L },
      webhooks: [
        {
          name: 'inject.example.com',
          clientConfig: { service: { namespace: 'abc123-hooks', name: 'inject' } },
          namespaceSelector: { matchLabels: L, matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['abc123-kube-system'] }] },
          objectSelector: { matchLabels: { inject: 'yes', ...L } },
        },
      ],
    },
  },
  {
    behaviour: 'an admission policy judges only the tenant’s objects; its param kind is the tenant’s',
    group: 'admissionregistration.k8s.io',
    resource: 'validatingadmissionpolicies',
    tenant: {
      metadata: { name: 'replicas' },
      spec: {
        paramKind: { apiVersion: 'example.com/v1', kind: 'Widget' },
        matchConstraints: {
          resourceRules: [{ apiGroups: ['apps'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['deployments'] }],
          namespaceSelector: {},
          objectSelector: {},
        },
        validations: [{ expression: 'object.spec.replicas <= 5' }],
      },
    },
    upstream: {
      metadata: { name: 'abc123-replicas', labels: L },
      spec: {
        paramKind: { apiVersion: 'abc123-example.com/v1', kind: 'Widget' },
        matchConstraints: {
          resourceRules: [{ apiGroups: ['apps'], apiVersions: ['v1'], operations: ['CREATE'], resources: ['deployments'] }],
          namespaceSelector: { matchLabels: L },
          objectSelector: { matchLabels: L },
        },
        validations: [{ expression: 'object.spec.replicas <= 5' }],
      },
    },
  },
  {
    behaviour: 'an admission policy binding binds the tenant’s policy to params in the tenant’s namespace',
    group: 'admissionregistration.k8s.io',
    resource: 'validatingadmissionpolicybindings',
    tenant: {
      metadata: { name: 'replicas-binding' },
      spec: { policyName: 'replicas', paramRef: { name: 'limits', namespace: 'default' }, validationActions: ['Deny'] },
    },
    upstream: {
      metadata: { name: 'abc123-replicas-binding', labels: L },
      spec: { policyName: 'abc123-replicas', paramRef: { name: 'limits', namespace: 'abc123-default' }, validationActions: ['Deny'] },
    },
  },
  {
    behaviour: 'a network policy allowing all namespaces allows the tenant’s namespaces only',
    group: 'networking.k8s.io',
    resource: 'networkpolicies',
    tenant: {
      metadata: { name: 'allow', namespace: 'default' },
      spec: {
        podSelector: {},
        ingress: [{ from: [{ namespaceSelector: {} }, { podSelector: { matchLabels: { app: 'a' } } }] }],
        egress: [{ to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'data' } } }] }],
      },
    },
    upstream: {
      metadata: { name: 'allow', namespace: 'abc123-default', labels: L },
      spec: {
        podSelector: {},
        ingress: [{ from: [{ namespaceSelector: { matchLabels: L } }, { podSelector: { matchLabels: { app: 'a' } } }] }],
        egress: [{ to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'abc123-data', ...L } } }] }],
      },
    },
  },
  {
    behaviour: 'a SubjectAccessReview asks about the tenant’s user, groups, namespace and custom group',
    group: 'authorization.k8s.io',
    resource: 'subjectaccessreviews',
    tenant: {
      spec: {
        user: 'alice',
        groups: ['devs', 'system:authenticated'],
        resourceAttributes: { namespace: 'default', verb: 'get', group: 'example.com', resource: 'widgets', name: 'w' },
      },
      status: { allowed: true, reason: 'RBAC: allowed by RoleBinding "devs/default" of ClusterRole "edit" to User "alice"' },
    },
    upstream: {
      metadata: {},
      spec: {
        user: 'abc123-alice',
        groups: ['abc123:devs', 'abc123:system:authenticated'],
        resourceAttributes: { namespace: 'abc123-default', verb: 'get', group: 'abc123-example.com', resource: 'widgets', name: 'w' },
      },
      status: { allowed: true, reason: 'RBAC: allowed by RoleBinding "devs/default" of ClusterRole "edit" to User "alice"' },
    },
  },
  {
    behaviour: 'a LocalSubjectAccessReview asks in the tenant’s namespace about a service account',
    group: 'authorization.k8s.io',
    resource: 'localsubjectaccessreviews',
    tenant: {
      metadata: { namespace: 'default' },
      spec: { user: 'system:serviceaccount:default:bot', resourceAttributes: { namespace: 'default', verb: 'list', resource: 'pods' } },
    },
    upstream: {
      metadata: { namespace: 'abc123-default' },
      spec: { user: 'system:serviceaccount:abc123-default:bot', resourceAttributes: { namespace: 'abc123-default', verb: 'list', resource: 'pods' } },
    },
  },
  {
    behaviour: 'kubectl auth can-i delete namespace ops asks about the tenant’s namespace',
    group: 'authorization.k8s.io',
    resource: 'selfsubjectaccessreviews',
    tenant: { spec: { resourceAttributes: { verb: 'delete', resource: 'namespaces', name: 'ops' } }, status: { allowed: true } },
    upstream: { metadata: {}, spec: { resourceAttributes: { verb: 'delete', resource: 'namespaces', name: 'abc123-ops' } }, status: { allowed: true } },
  },
  {
    behaviour: 'kubectl auth can-i --list asks in the tenant’s namespace',
    group: 'authorization.k8s.io',
    resource: 'selfsubjectrulesreviews',
    tenant: { spec: { namespace: 'default' } },
    upstream: { metadata: {}, spec: { namespace: 'abc123-default' } },
  },
  {
    behaviour: 'a TokenReview sends the token as it is',
    group: 'authentication.k8s.io',
    resource: 'tokenreviews',
    tenant: { spec: { token: 'eyJ...', audiences: ['api'] } },
    upstream: { metadata: {}, spec: { token: 'eyJ...', audiences: ['api'] } },
  },
  {
    behaviour: 'a pod binding targets a shared node by its real name',
    group: '',
    resource: 'bindings',
    tenant: { metadata: { name: 'web', namespace: 'default' }, target: { apiVersion: 'v1', kind: 'Node', name: 'node-1' } },
    upstream: { metadata: { name: 'web', namespace: 'abc123-default', labels: L }, target: { apiVersion: 'v1', kind: 'Node', name: 'node-1' } },
  },
  {
    behaviour: 'leases and HPAs are plain namespaced objects',
    group: 'coordination.k8s.io',
    resource: 'leases',
    tenant: { metadata: { name: 'leader', namespace: 'kube-system' }, spec: { holderIdentity: 'me' } },
    upstream: { metadata: { name: 'leader', namespace: 'abc123-kube-system', labels: L }, spec: { holderIdentity: 'me' } },
  },
  {
    behaviour: 'generateName of a cluster-scoped object takes the prefix; of a namespaced one it does not',
    group: 'rbac.authorization.k8s.io',
    resource: 'clusterroles',
    tenant: { metadata: { generateName: 'temp-' } },
    upstream: { metadata: { generateName: 'abc123-temp-', labels: L } },
  },
  {
    behaviour: 'generateName of a namespaced object is unchanged',
    group: '',
    resource: 'configmaps',
    tenant: { metadata: { generateName: 'temp-', namespace: 'default' } },
    upstream: { metadata: { generateName: 'temp-', namespace: 'abc123-default', labels: L } },
  },
];

t.test('every kind converts to upstream and back', async (t) => {
  for (const c of cases) {
    t.test(c.behaviour, async (t) => {
      t.strictSame(up(c.tenant, c.group, c.resource), c.upstream, 'to upstream');
      t.strictSame(down(c.upstream, c.group, c.resource), c.tenant, 'to tenant');
      const back = down(up(c.tenant, c.group, c.resource), c.group, c.resource);
      t.strictSame(back, c.tenant, 'round trip');
    });
  }
});

t.test('the tenant label is forced on every write and can be neither seen nor faked', async (t) => {
  const faked = { metadata: { name: 'x', namespace: 'default', labels: { [TENANT_LABEL]: 'xyz789', app: 'a' } } };
  t.strictSame(up(faked, '', 'configmaps').metadata, { name: 'x', namespace: 'abc123-default', labels: { [TENANT_LABEL]: 'abc123', app: 'a' } });
  const namespace = { metadata: { name: 'ops', labels: { [TENANT_LABEL]: 'xyz789' } } };
  t.strictSame(up(namespace, '', 'namespaces').metadata, { name: 'abc123-ops', labels: L }, 'a namespace keeps the tenant’s label on every update');
  const template = { metadata: { name: 'd', namespace: 'default' }, spec: { template: { metadata: { labels: { [TENANT_LABEL]: 'xyz789' } } } } };
  t.strictSame((up(template, 'apps', 'deployments').spec as Json).template, { metadata: { labels: L } });
  const read = down({ metadata: { name: 'x', namespace: 'abc123-default', labels: { ...L, app: 'a' } } }, '', 'configmaps');
  t.strictSame(read?.metadata, { name: 'x', namespace: 'default', labels: { app: 'a' } });
});

t.test('the tenant label and custom groups do not show in managedFields', async (t) => {
  const upstream = {
    apiVersion: 'abc123-example.com/v1',
    metadata: {
      name: 'w',
      namespace: 'abc123-default',
      labels: { ...L, app: 'w' },
      managedFields: [
        {
          manager: 'kubectl',
          operation: 'Update',
          apiVersion: 'abc123-example.com/v1',
          fieldsType: 'FieldsV1',
          fieldsV1: {
            'f:metadata': { 'f:labels': { [`f:${TENANT_LABEL}`]: {}, 'f:app': {} } },
            'f:spec': { 'f:template': { 'f:metadata': { 'f:labels': { [`f:${TENANT_LABEL}`]: {} } } } },
          },
        },
      ],
    },
  };
  const read = down(upstream, 'example.com', 'widgets');
  t.strictSame((read?.metadata as Json).managedFields, [
    {
      manager: 'kubectl',
      operation: 'Update',
      apiVersion: 'example.com/v1',
      fieldsType: 'FieldsV1',
      fieldsV1: { 'f:metadata': { 'f:labels': { 'f:app': {} } } },
    },
  ]);
});

t.test('names too long once prefixed are refused with a 422 before any upstream call', async (t) => {
  const name = (length: number) => 'n'.repeat(length);
  t.equal((up({ metadata: { name: name(56) } }, '', 'namespaces').metadata as Json).name, 'abc123-' + name(56), 'a namespace of exactly 56 characters fits');
  const namespace = thrown(() => up({ metadata: { name: name(57) } }, '', 'namespaces'));
  t.equal(namespace?.code, 422);
  t.equal(namespace?.reason, 'Invalid');
  t.match(namespace?.message, /^Namespace "n{57}" is invalid: metadata.name: Invalid value: "n{57}": must be no more than 56 characters$/);
  t.strictSame(namespace?.details?.causes, [
    { reason: 'FieldValueInvalid', message: `Invalid value: "${name(57)}": must be no more than 56 characters`, field: 'metadata.name' },
  ]);
  t.equal(namespace?.details?.kind, 'Namespace');

  t.equal(
    (up({ metadata: { name: name(246) } }, 'rbac.authorization.k8s.io', 'clusterroles').metadata as Json).name,
    'abc123-' + name(246),
    'a ClusterRole of 246 fits',
  );
  const clusterRole = thrown(() => up({ metadata: { name: name(247) } }, 'rbac.authorization.k8s.io', 'clusterroles'));
  t.equal(clusterRole?.code, 422);
  t.match(clusterRole?.message, /must be no more than 246 characters/);
  t.equal(thrown(() => up({ metadata: { name: name(247) } }, 'example.com', 'clusterwidgets'))?.code, 422, 'cluster-scoped custom resources too');

  const crdName = (length: number) => 'w'.repeat(length - 's.example.com'.length) + 's.example.com';
  t.equal(crdName(246).length, 246);
  const crd = (n: string) => ({ metadata: { name: n }, spec: { group: 'example.com', names: { plural: n.slice(0, n.indexOf('.')) } } });
  t.equal((up(crd(crdName(246)), 'apiextensions.k8s.io', 'customresourcedefinitions').metadata as Json).name, crdNameToUpstream(crdName(246), 'abc123'));
  t.equal(thrown(() => up(crd(crdName(247)), 'apiextensions.k8s.io', 'customresourcedefinitions'))?.code, 422);

  t.equal(
    (up({ metadata: { name: name(253), namespace: 'default' } }, '', 'configmaps').metadata as Json).name,
    name(253),
    'names of namespaced objects are not prefixed: no shorter limit',
  );
  t.equal(thrown(() => up({ metadata: { name: 'x', namespace: name(57) } }, '', 'configmaps'))?.code, 422, 'an object’s namespace longer than 56');
  t.equal((up({ metadata: { name: 'x', namespace: name(56) } }, '', 'configmaps').metadata as Json).namespace, 'abc123-' + name(56));
});

t.test('a CRD cannot take a built-in group or a name that is not plural.group', async (t) => {
  const builtin = thrown(() =>
    up({ metadata: { name: 'widgets.apps' }, spec: { group: 'apps', names: { plural: 'widgets' } } }, 'apiextensions.k8s.io', 'customresourcedefinitions'),
  );
  t.equal(builtin?.code, 422);
  t.match(builtin?.message, /spec.group: Invalid value: "apps": is a built-in API group/);
  const mismatched = thrown(() =>
    up(
      { metadata: { name: 'gadgets.example.com' }, spec: { group: 'example.com', names: { plural: 'widgets' } } },
      'apiextensions.k8s.io',
      'customresourcedefinitions',
    ),
  );
  t.equal(mismatched?.code, 422);
  t.match(mismatched?.message, /must be spec.names.plural\+"."\+spec.group/);
  const label = thrown(() =>
    up(
      { metadata: { name: `w.${'g'.repeat(57)}.com` }, spec: { group: `${'g'.repeat(57)}.com`, names: { plural: 'w' } } },
      'apiextensions.k8s.io',
      'customresourcedefinitions',
    ),
  );
  t.equal(label?.code, 422, 'a group whose first label would be too long once prefixed');
});

t.test('an owner of unknown kind is refused rather than guessed (the garbage collector would delete the child)', async (t) => {
  const orphan = { metadata: { name: 'x', namespace: 'default', ownerReferences: [{ apiVersion: 'example.com/v1', kind: 'Gadget', name: 'g', uid: 'u' }] } };
  const error = thrown(() => up(orphan, '', 'configmaps'));
  t.equal(error?.code, 422);
  t.equal(error?.details?.causes?.[0]?.field, 'metadata.ownerReferences[0]');
});

t.test('a ClusterRoleBinding may name service accounts: upstream they are shadow users their tokens do not carry', async (t) => {
  const binding = (subject: object) => ({
    metadata: { name: 'b' },
    subjects: [{ kind: 'User', name: 'alice' }, subject],
    roleRef: { kind: 'ClusterRole', name: 'reader' },
  });
  for (const [subject, upstreamName] of [
    [{ kind: 'ServiceAccount', name: 'sa', namespace: 'ci' }, 'tenantgate:cluster:system:serviceaccount:abc123-ci:sa'],
    [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'system:serviceaccount:ci:sa' }, 'tenantgate:cluster:system:serviceaccount:abc123-ci:sa'],
    [{ kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'system:serviceaccounts:ci' }, 'tenantgate:cluster:system:serviceaccounts:abc123-ci'],
    [{ kind: 'Group', name: 'system:serviceaccounts' }, 'tenantgate:cluster:abc123:system:serviceaccounts'],
  ] as const) {
    const upstream = up(binding(subject), 'rbac.authorization.k8s.io', 'clusterrolebindings');
    const subjects = upstream.subjects as Json[];
    t.equal(subjects[0]!.name, 'tenantgate:cluster:abc123-alice', JSON.stringify(subject));
    t.equal(subjects[1]!.name, upstreamName, JSON.stringify(subject));
    t.ok(
      subjects.every((s) => s.kind === 'User' || s.kind === 'Group'),
      'upstream only users and groups: no service account a token authenticates as',
    );
    t.ok(down(upstream, 'rbac.authorization.k8s.io', 'clusterrolebindings') !== null, 'and the tenant reads it back');
  }
  // A service-account subject reads back as the ServiceAccount it was (the User form of it reads back the same way).
  const back = down(
    up(binding({ kind: 'ServiceAccount', name: 'sa', namespace: 'ci' }), 'rbac.authorization.k8s.io', 'clusterrolebindings'),
    'rbac.authorization.k8s.io',
    'clusterrolebindings',
  );
  t.same((back?.subjects as Json[])[1], { kind: 'ServiceAccount', name: 'sa', namespace: 'ci' });
});

t.test('a ClusterRoleBinding upstream is the tenant’s only when every subject is its shadow form', async (t) => {
  const upstream = (subjects: Json[]) => ({ metadata: { name: 'abc123-b', labels: L }, subjects, roleRef: { kind: 'ClusterRole', name: 'abc123-reader' } });
  for (const subject of [
    { kind: 'User', name: 'abc123-alice' }, // a real identity: an old-style grant, not the tenant's view
    { kind: 'Group', name: 'abc123:devs' },
    { kind: 'ServiceAccount', name: 'sa', namespace: 'abc123-ci' },
    { kind: 'User', name: 'tenantgate:cluster:xyz789-alice' }, // another tenant's shadow
    { kind: 'Group', name: 'tenantgate:cluster:xyz789:devs' },
    { kind: 'User', name: 'tenantgate:cluster:system:serviceaccount:xyz789-ci:sa' },
    { kind: 'User', name: 'tenantgate:cluster:system:admin' },
    { kind: 'Group', name: 'tenantgate:cluster:system:masters' },
  ]) {
    t.equal(
      down(upstream([{ kind: 'User', name: 'tenantgate:cluster:abc123-bob' }, subject]), 'rbac.authorization.k8s.io', 'clusterrolebindings'),
      null,
      JSON.stringify(subject),
    );
  }
  t.same(down(upstream([{ kind: 'Group', name: 'tenantgate:cluster:abc123:devs' }]), 'rbac.authorization.k8s.io', 'clusterrolebindings')?.subjects, [
    { kind: 'Group', name: 'devs' },
  ]);
});

t.test('an access review’s reason names the tenant’s ClusterRoleBinding and user, not their upstream forms', async (t) => {
  const review = {
    metadata: {},
    spec: { user: 'abc123-alice', resourceAttributes: { verb: 'list', resource: 'configmaps', namespace: 'abc123-shop' } },
    status: {
      allowed: true,
      reason: 'RBAC: allowed by RoleBinding "tenantgate:crb:abc123-readers/abc123-shop" of ClusterRole "abc123-reader" to User "abc123-alice"',
    },
  };
  t.equal(
    (down(review, 'authorization.k8s.io', 'subjectaccessreviews')?.status as Json).reason,
    'RBAC: allowed by ClusterRoleBinding "readers" of ClusterRole "reader" to User "alice"',
  );
  const shadow = {
    ...review,
    status: {
      allowed: true,
      reason: 'RBAC: allowed by ClusterRoleBinding "abc123-readers" of ClusterRole "abc123-reader" to User "tenantgate:cluster:abc123-alice"',
    },
  };
  t.equal(
    (down(shadow, 'authorization.k8s.io', 'subjectaccessreviews')?.status as Json).reason,
    'RBAC: allowed by ClusterRoleBinding "readers" of ClusterRole "reader" to User "alice"',
  );
});

t.test('the RoleBindings tenantgate keeps in a tenant’s namespaces are not the tenant’s, and no tenant may write one', async (t) => {
  for (const name of ['tenantgate:tenant-admin', 'tenantgate:crb:abc123-readers']) {
    const upstream = {
      metadata: { name, namespace: 'abc123-default', labels: L },
      subjects: [{ kind: 'User', name: 'abc123-alice' }],
      roleRef: { kind: 'ClusterRole', name: 'abc123-reader' },
    };
    t.equal(down(upstream, 'rbac.authorization.k8s.io', 'rolebindings'), null, `${name} is hidden`);
    const error = thrown(() =>
      up(
        { metadata: { name, namespace: 'default' }, subjects: [], roleRef: { kind: 'ClusterRole', name: 'reader' } },
        'rbac.authorization.k8s.io',
        'rolebindings',
      ),
    );
    t.equal(error?.code, 422, `${name} cannot be written`);
  }
});

t.test('shared kinds cannot be written and hidden kinds do not exist', async (t) => {
  t.equal(thrown(() => up({ metadata: { name: 'node-1' } }, '', 'nodes'))?.code, 403);
  t.equal(thrown(() => up({ metadata: { name: 'high' } }, 'scheduling.k8s.io', 'priorityclasses'))?.code, 403);
  t.equal(thrown(() => up({ metadata: { name: 'abc123' } }, 'tenant.kubezoo.io', 'tenants'))?.code, 404);
  t.equal(thrown(() => objectToUpstream('not an object', ctx, rowOf('', 'configmaps')))?.code, 400);
  t.equal(down({ metadata: { name: 'abc123' } }, 'tenant.kubezoo.io', 'tenants'), null, 'tenants never reach a tenant');
  t.equal(
    thrown(() => up({ metadata: { name: 'v1.example.com' }, spec: { group: 'example.com', version: 'v1' } }, 'apiregistration.k8s.io', 'apiservices'))?.code,
    403,
  );
});

t.test('APIServices: built-in groups as they are, the tenant’s CRD groups under its names, nobody else’s', async (t) => {
  const apiService = (group: string, version = 'v1') => ({
    metadata: { name: `${version}.${group}`, labels: { 'kube-aggregator.kubernetes.io/automanaged': 'true' } },
    spec: { ...(group === '' ? {} : { group }), version, groupPriorityMinimum: 1000, versionPriority: 100 },
    status: { conditions: [{ type: 'Available', status: 'True', reason: 'Local' }] },
  });
  for (const group of ['', 'apps', 'apiregistration.k8s.io', 'metrics.k8s.io']) {
    t.strictSame(down(apiService(group), 'apiregistration.k8s.io', 'apiservices'), apiService(group), `v1.${group} as it is`);
  }
  t.strictSame(
    down(apiService('abc123-example.com'), 'apiregistration.k8s.io', 'apiservices'),
    apiService('example.com'),
    'the tenant’s own CRD group, name and spec.group',
  );
  for (const group of [
    'xyz789-example.com',
    'abc123x-example.com',
    'example.com',
    'tenant.kubezoo.io',
    'flowcontrol.tenantgate.kubezoo.io',
    'internal.apiserver.k8s.io',
    'storagemigration.k8s.io',
  ]) {
    t.equal(down(apiService(group), 'apiregistration.k8s.io', 'apiservices'), null, `v1.${group} is not the tenant’s to see`);
  }
  const wrongName = { ...apiService('abc123-example.com'), metadata: { name: 'v1.apps' } };
  t.equal(down(wrongName, 'apiregistration.k8s.io', 'apiservices'), null, 'a name that is not <version>.<group> is not judged by its name');
  const noVersionServed = { ...ctx, servesTenantResources: (group: string, version: string) => !(group === 'certificates.k8s.io' && version === 'v1') };
  t.equal(down(apiService('certificates.k8s.io'), 'apiregistration.k8s.io', 'apiservices', noVersionServed), null, 'a version discovery does not show');
  t.ok(down(apiService('certificates.k8s.io', 'v1beta1'), 'apiregistration.k8s.io', 'apiservices', noVersionServed), 'one it shows');
});

t.test('shared objects are read under their real names; nodes without other tenants’ images and volumes', async (t) => {
  const node = {
    metadata: { name: 'node-1', labels: { zone: 'a' } },
    status: {
      capacity: { cpu: '4' },
      images: [{ names: ['secret/image'] }],
      volumesInUse: ['kubernetes.io/csi/x^abc123-data'],
      volumesAttached: [{ name: 'v', devicePath: '' }],
    },
  };
  t.strictSame(down(node, '', 'nodes'), { metadata: { name: 'node-1', labels: { zone: 'a' } }, status: { capacity: { cpu: '4' } } });
  const priorityClass = { metadata: { name: 'system-node-critical' }, value: 2000001000 };
  t.strictSame(
    down(priorityClass, 'scheduling.k8s.io', 'priorityclasses', contextFor('system')),
    priorityClass,
    'tenant system sees the real system-node-critical, not a "node-critical" of its own',
  );
});

t.test('text from upstream names the tenant’s objects without the prefix', async (t) => {
  const event = {
    metadata: { name: 'e', namespace: 'abc123-default' },
    involvedObject: { kind: 'Pod', namespace: 'abc123-default', name: 'web' },
    message: 'Successfully assigned abc123-default/web to node-1; pvc "abc123-data" bound; group abc123:devs; my-abc123-x; xabc123-y; web.abc123-default.svc',
  };
  t.equal(
    down(event, '', 'events')?.message,
    'Successfully assigned default/web to node-1; pvc "data" bound; group devs; my-abc123-x; xabc123-y; web.default.svc',
  );
  t.equal(down({ metadata: { name: 'e', namespace: 'abc123-default' }, note: 'abc123-x' }, 'events.k8s.io', 'events')?.note, 'x');
  t.equal(stripTenantPrefixes('xyz789-default abc123-default', 'abc123'), 'xyz789-default default', 'other tenants’ names are left alone');
  const deployment = {
    metadata: { name: 'd', namespace: 'abc123-default' },
    status: { conditions: [{ type: 'Progressing', message: 'ReplicaSet "abc123-x" progressing' }] },
  };
  t.equal(((down(deployment, 'apps', 'deployments')?.status as Json).conditions as Json[])[0]?.message, 'ReplicaSet "x" progressing');
});

t.test('access reviews read back in the tenant’s names, denying what tenantgate refuses', async (t) => {
  const review = {
    spec: { resourceAttributes: { verb: 'update', resource: 'nodes', name: 'node-1' } },
    status: {
      allowed: true,
      reason: 'RBAC: allowed by ClusterRoleBinding "abc123-admins" of ClusterRole "abc123-cluster-admin" to Group "abc123:system:masters"',
    },
  };
  const read = down(review, 'authorization.k8s.io', 'selfsubjectaccessreviews');
  t.equal((read?.status as Json).allowed, false, 'kubectl auth can-i update nodes: no');
  t.equal((read?.status as Json).denied, true);
  t.match((read?.status as Json).reason, /read-only/);
  const tenants = down(
    { spec: { resourceAttributes: { verb: 'get', group: 'tenant.kubezoo.io', resource: 'tenants' } }, status: { allowed: true } },
    'authorization.k8s.io',
    'selfsubjectaccessreviews',
  );
  t.equal((tenants?.status as Json).allowed, false, 'kubectl auth can-i get tenants: no');
  const pods = down(
    { spec: { resourceAttributes: { verb: 'get', resource: 'pods', namespace: 'abc123-default' } }, status: { allowed: true, reason: 'by "abc123-admins"' } },
    'authorization.k8s.io',
    'selfsubjectaccessreviews',
  );
  t.strictSame(pods?.status, { allowed: true, reason: 'by "admins"' });

  const rules = {
    spec: { namespace: 'abc123-default' },
    status: {
      resourceRules: [
        { verbs: ['get'], apiGroups: ['abc123-example.com'], resources: ['widgets'] },
        { verbs: ['get'], apiGroups: [''], resources: ['namespaces'], resourceNames: ['abc123-default'] },
        { verbs: ['create'], apiGroups: ['authorization.k8s.io'], resources: ['selfsubjectaccessreviews'] },
      ],
      nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['/api'] }],
      incomplete: false,
    },
  };
  t.strictSame(down(rules, 'authorization.k8s.io', 'selfsubjectrulesreviews'), {
    spec: { namespace: 'default' },
    status: {
      resourceRules: [
        { verbs: ['get'], apiGroups: ['example.com'], resources: ['widgets'] },
        { verbs: ['get'], apiGroups: [''], resources: ['namespaces'], resourceNames: ['default'] },
        { verbs: ['create'], apiGroups: ['authorization.k8s.io'], resources: ['selfsubjectaccessreviews'] },
      ],
      nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['/api'] }],
      incomplete: false,
    },
  });
});

t.test('a token review names the tenant’s service account, and another tenant’s token is not valid here', async (t) => {
  const mine = {
    spec: { token: 't' },
    status: {
      authenticated: true,
      user: {
        username: 'system:serviceaccount:abc123-default:bot',
        uid: 'u',
        groups: ['system:serviceaccounts', 'system:serviceaccounts:abc123-default', 'system:authenticated'],
      },
    },
  };
  t.strictSame(down(mine, 'authentication.k8s.io', 'tokenreviews')?.status, {
    authenticated: true,
    user: {
      username: 'system:serviceaccount:default:bot',
      uid: 'u',
      groups: ['system:serviceaccounts', 'system:serviceaccounts:default', 'system:authenticated'],
    },
  });
  for (const username of ['system:serviceaccount:xyz789-default:bot', 'system:serviceaccount:kube-system:admin', 'system:bootstrap:abc']) {
    const status = down(
      { spec: { token: 't' }, status: { authenticated: true, user: { username, groups: ['system:masters'] } } },
      'authentication.k8s.io',
      'tokenreviews',
    )?.status as Json;
    t.equal(status.authenticated, false, username);
    t.notMatch(JSON.stringify(status), /xyz789|kube-system|masters|bootstrap/, 'nothing of the real user shows');
  }
});

t.test('kubectl auth whoami shows the tenant’s own name and groups', async (t) => {
  const review = {
    status: {
      userInfo: { username: 'abc123-alice', groups: ['abc123:devs', 'abc123:system:authenticated', 'system:authenticated'], extra: { tenant: ['abc123'] } },
    },
  };
  t.strictSame(
    down(review, 'authentication.k8s.io', 'selfsubjectreviews')?.status,
    { userInfo: { username: 'alice', groups: ['devs', 'system:authenticated'] } },
    "without tenantgate's tenant extra",
  );
  const withOwnExtra = { status: { userInfo: { username: 'abc123-alice', extra: { tenant: ['abc123'], 'example.com/team': ['shop'] } } } };
  t.strictSame(
    down(withOwnExtra, 'authentication.k8s.io', 'selfsubjectreviews')?.status,
    { userInfo: { username: 'alice', extra: { 'example.com/team': ['shop'] } } },
    "the caller's own extra stays",
  );
  t.equal(down({ status: { userInfo: { username: 'xyz789-bob' } } }, 'authentication.k8s.io', 'selfsubjectreviews'), null);
});

t.test('identities: users, groups and service accounts both ways', async (t) => {
  const users: [string, string][] = [
    ['alice', 'abc123-alice'],
    ['system:admin', 'abc123-system:admin'],
    ['system:serviceaccount:default:bot', 'system:serviceaccount:abc123-default:bot'],
    ['system:serviceaccount:broken', 'abc123-system:serviceaccount:broken'],
  ];
  for (const [tenant, upstream] of users) {
    t.equal(userToUpstream(tenant, 'abc123'), upstream, tenant);
    t.equal(userToTenant(upstream, 'abc123'), tenant, upstream);
  }
  const groups: [string, string][] = [
    ['devs', 'abc123:devs'],
    ['system:masters', 'abc123:system:masters'],
    ['system:authenticated', 'abc123:system:authenticated'],
    ['system:serviceaccounts', 'abc123:system:serviceaccounts'],
    ['system:serviceaccounts:ci', 'system:serviceaccounts:abc123-ci'],
  ];
  for (const [tenant, upstream] of groups) {
    t.equal(groupToUpstream(tenant, 'abc123'), upstream, tenant);
    t.equal(groupToTenant(upstream, 'abc123'), tenant, upstream);
  }
  t.equal(serviceAccountUser('default', 'bot', 'abc123'), 'system:serviceaccount:abc123-default:bot');
  t.strictSame(identityToUpstream('alice', ['devs', 'system:authenticated'], 'abc123'), {
    user: 'abc123-alice',
    groups: ['abc123:devs', 'abc123:system:authenticated'],
  });
  for (const upstream of [
    'xyz789-alice',
    'alice',
    'abc123',
    'abc123:alice',
    'system:serviceaccount:xyz789-default:bot',
    'system:serviceaccount:default:bot',
    'system:kube-scheduler',
  ]) {
    t.equal(userToTenant(upstream, 'abc123'), null, `user ${upstream} is not abc123's`);
  }
  for (const upstream of [
    'xyz789:devs',
    'devs',
    'abc123-devs',
    'abc123:',
    'system:masters',
    'system:authenticated',
    'system:serviceaccounts:kube-system',
    'system:serviceaccounts',
  ]) {
    t.equal(groupToTenant(upstream, 'abc123'), null, `group ${upstream} is not abc123's`);
  }
});

t.test('prefix traps: tenant system never owns system:* groups or roles, tenant defaul never owns default', async (t) => {
  const system = contextFor('system');
  t.equal(groupToTenant('system:masters', 'system'), null, 'system:masters is never tenant system’s group "masters"');
  t.equal(groupToTenant('system:authenticated', 'system'), null);
  const error = thrown(() => groupToUpstream('masters', 'system'));
  t.equal(error?.code, 403, 'tenant system’s group "masters" would become upstream system:masters: refused');
  t.equal(groupToUpstream('system:serviceaccounts:ci', 'system'), 'system:serviceaccounts:system-ci', 'service account namespace groups are safe');
  t.equal(userToTenant('system:kube-scheduler', 'system'), null);
  t.equal(userToTenant('system:serviceaccount:kube-system:x', 'system'), null);
  t.equal(userToTenant('system-alice', 'system'), 'alice');

  for (const name of ['system:controller:x', 'system:aggregate-to-admin', 'system:node']) {
    t.equal(down({ metadata: { name }, rules: [] }, 'rbac.authorization.k8s.io', 'clusterroles', system), null, `ClusterRole ${name} is not tenant system's`);
    t.equal(down({ metadata: { name }, roleRef: { kind: 'ClusterRole', name } }, 'rbac.authorization.k8s.io', 'clusterrolebindings', system), null);
  }
  const binding = {
    metadata: { name: 'system-b' },
    subjects: [{ kind: 'Group', name: 'system:masters' }],
    roleRef: { kind: 'ClusterRole', name: 'system-admin' },
  };
  t.equal(down(binding, 'rbac.authorization.k8s.io', 'clusterrolebindings', system), null, 'a binding to system:masters is not tenant system’s');

  const defaul = contextFor('defaul');
  t.equal(down({ metadata: { name: 'default' } }, '', 'namespaces', defaul), null, 'namespace default is not tenant defaul’s "t"');
  t.equal(down({ metadata: { name: 'kube-root-ca.crt', namespace: 'default' } }, '', 'configmaps', defaul), null);
  t.strictSame(
    down({ metadata: { name: 'x', namespace: 'defaul-t' } }, '', 'configmaps', defaul)?.metadata,
    { name: 'x', namespace: 't' },
    'its own namespace t is defaul-t',
  );
  t.equal((up({ metadata: { name: 't' } }, '', 'namespaces', defaul).metadata as Json).name, 'defaul-t');
});

/** Upstream objects tenant abc123 must never see. */
const notMine: [behaviour: string, group: string, resource: string, upstream: Json][] = [
  ['another tenant’s configmap', '', 'configmaps', { metadata: { name: 'x', namespace: 'xyz789-default' } }],
  ['the upstream’s own configmap', '', 'configmaps', { metadata: { name: 'x', namespace: 'kube-system' } }],
  ['a namespace too short to carry a prefix', '', 'namespaces', { metadata: { name: 'abc123-' } }],
  [
    'an object under the prefix labelled for another tenant',
    '',
    'configmaps',
    { metadata: { name: 'x', namespace: 'abc123-default', labels: { [TENANT_LABEL]: 'xyz789' } } },
  ],
  ['another tenant’s ClusterRole', 'rbac.authorization.k8s.io', 'clusterroles', { metadata: { name: 'xyz789-reader' } }],
  ['a ClusterRole whose name only contains the id', 'rbac.authorization.k8s.io', 'clusterroles', { metadata: { name: 'abc1234-reader' } }],
  [
    'a binding to another tenant’s user',
    'rbac.authorization.k8s.io',
    'rolebindings',
    { metadata: { name: 'b', namespace: 'abc123-default' }, subjects: [{ kind: 'User', name: 'xyz789-bob' }], roleRef: { kind: 'Role', name: 'r' } },
  ],
  [
    'a binding to an upstream ClusterRole',
    'rbac.authorization.k8s.io',
    'rolebindings',
    { metadata: { name: 'b', namespace: 'abc123-default' }, subjects: [], roleRef: { kind: 'ClusterRole', name: 'system:aggregate-to-edit' } },
  ],
  [
    'a binding to a service account of another tenant',
    'rbac.authorization.k8s.io',
    'rolebindings',
    {
      metadata: { name: 'b', namespace: 'abc123-default' },
      subjects: [{ kind: 'ServiceAccount', name: 's', namespace: 'xyz789-default' }],
      roleRef: { kind: 'Role', name: 'r' },
    },
  ],
  [
    'another tenant’s custom resource in our namespace',
    'example.com',
    'widgets',
    { apiVersion: 'xyz789-example.com/v1', metadata: { name: 'w', namespace: 'abc123-default' } },
  ],
  [
    'another tenant’s CRD',
    'apiextensions.k8s.io',
    'customresourcedefinitions',
    { metadata: { name: 'widgets.xyz789-example.com' }, spec: { group: 'xyz789-example.com' } },
  ],
  [
    'the platform’s CRD',
    'apiextensions.k8s.io',
    'customresourcedefinitions',
    { metadata: { name: 'volumesnapshots.snapshot.storage.k8s.io' }, spec: { group: 'snapshot.storage.k8s.io' } },
  ],
  [
    'an event about another tenant’s pod',
    '',
    'events',
    { metadata: { name: 'e', namespace: 'abc123-default' }, involvedObject: { kind: 'Pod', namespace: 'xyz789-default', name: 'p' } },
  ],
  [
    'a PV bound to another tenant’s claim',
    '',
    'persistentvolumes',
    { metadata: { name: 'abc123-data' }, spec: { claimRef: { kind: 'PersistentVolumeClaim', namespace: 'xyz789-default', name: 'd' } } },
  ],
  [
    'a dynamically provisioned PV (not under the prefix)',
    '',
    'persistentvolumes',
    { metadata: { name: 'pvc-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0' }, spec: { claimRef: { namespace: 'abc123-default', name: 'd' } } },
  ],
  [
    'a PVC bound to another tenant’s PV',
    '',
    'persistentvolumeclaims',
    { metadata: { name: 'd', namespace: 'abc123-default' }, spec: { volumeName: 'xyz789-data' } },
  ],
  [
    'a pod owned by another tenant’s cluster-scoped resource',
    '',
    'pods',
    {
      metadata: {
        name: 'p',
        namespace: 'abc123-default',
        ownerReferences: [{ apiVersion: 'xyz789-example.com/v1', kind: 'ClusterWidget', name: 'xyz789-cw', uid: 'u' }],
      },
    },
  ],
  [
    'a pod owned by an upstream namespace',
    '',
    'pods',
    { metadata: { name: 'p', namespace: 'abc123-default', ownerReferences: [{ apiVersion: 'v1', kind: 'Namespace', name: 'kube-system', uid: 'u' }] } },
  ],
  [
    'endpoints pointing at another tenant’s pod',
    '',
    'endpoints',
    {
      metadata: { name: 'e', namespace: 'abc123-default' },
      subsets: [{ addresses: [{ ip: '1.1.1.1', targetRef: { kind: 'Pod', namespace: 'xyz789-default', name: 'p' } }] }],
    },
  ],
  [
    'a webhook calling a service of another tenant',
    'admissionregistration.k8s.io',
    'validatingwebhookconfigurations',
    { metadata: { name: 'abc123-w' }, webhooks: [{ name: 'w', clientConfig: { service: { namespace: 'xyz789-hooks', name: 's' } } }] },
  ],
  [
    'a webhook selecting another tenant’s namespaces',
    'admissionregistration.k8s.io',
    'mutatingwebhookconfigurations',
    { metadata: { name: 'abc123-w' }, webhooks: [{ name: 'w', namespaceSelector: { matchLabels: { [TENANT_LABEL]: 'xyz789' } } }] },
  ],
  [
    'a policy binding to another tenant’s policy',
    'admissionregistration.k8s.io',
    'validatingadmissionpolicybindings',
    { metadata: { name: 'abc123-b' }, spec: { policyName: 'xyz789-p' } },
  ],
  [
    'a network policy opening to another tenant',
    'networking.k8s.io',
    'networkpolicies',
    {
      metadata: { name: 'n', namespace: 'abc123-default' },
      spec: { ingress: [{ from: [{ namespaceSelector: { matchLabels: { [TENANT_LABEL]: 'xyz789' } } }] }] },
    },
  ],
  [
    'an access review about another tenant’s user',
    'authorization.k8s.io',
    'subjectaccessreviews',
    { spec: { user: 'xyz789-bob', resourceAttributes: { verb: 'get', resource: 'pods' } } },
  ],
  [
    'an access review in another tenant’s namespace',
    'authorization.k8s.io',
    'selfsubjectaccessreviews',
    { spec: { resourceAttributes: { verb: 'get', resource: 'pods', namespace: 'xyz789-default' } } },
  ],
  ['a hidden kind', 'apiregistration.k8s.io', 'apiservices', { metadata: { name: 'abc123-x' } }],
  [
    'another tenant’s FlowSchema',
    'flowcontrol.apiserver.k8s.io',
    'flowschemas',
    { apiVersion: 'flowcontrol.tenantgate.kubezoo.io/v1', kind: 'FlowSchema', metadata: { name: 'xyz789-x', labels: { [TENANT_LABEL]: 'xyz789' } } },
  ],
];

t.test('another tenant’s (or the upstream’s) objects are never shown: toTenant is null', async (t) => {
  for (const [behaviour, group, resource, upstream] of notMine) t.equal(down(upstream, group, resource), null, behaviour);
});

t.test('CRD names map their group part only', async (t) => {
  t.equal(crdNameToUpstream('widgets.example.com', 'abc123'), 'widgets.abc123-example.com');
  t.equal(crdNameToTenant('widgets.abc123-example.com', 'abc123'), 'widgets.example.com');
  t.equal(crdNameToTenant('widgets.xyz789-example.com', 'abc123'), null);
  t.equal(crdNameToTenant('abc123-widgets', 'abc123'), null);
});

/** A small seeded generator, so generated cases are the same on every run. */
function generator(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
  const pick = (alphabet: string, length: number) => Array.from({ length }, () => alphabet[Math.floor(next() * alphabet.length)]).join('');
  return { next, pick };
}

t.test('generated names round-trip for any tenant and are never another tenant’s', async (t) => {
  const { next, pick } = generator(20260101);
  const ids = '0123456789abcdefghijklmnopqrstuvwxyz';
  const dns = 'abcdefghijklmnopqrstuvwxyz0123456789-.';
  let checked = 0;
  for (let i = 0; i < 300; i++) {
    const tenant = pick(ids, 6);
    let other = pick(ids, 6);
    if (other === tenant) other = tenant.slice(1) + 'x';
    const context = contextFor(tenant);
    const otherContext = contextFor(other);
    const namespace = pick(ids, 1 + Math.floor(next() * 55));
    const name = pick(ids, 1) + pick(dns, Math.floor(next() * 245));
    const samples: [string, string, Json][] = [
      ['', 'configmaps', { metadata: { name, namespace, labels: { k: pick(ids, 3) } } }],
      [
        'rbac.authorization.k8s.io',
        'clusterroles',
        { metadata: { name }, rules: [{ apiGroups: [''], resources: ['namespaces'], resourceNames: [namespace], verbs: ['get'] }] },
      ],
      ['', 'namespaces', { metadata: { name: namespace } }],
      [
        'rbac.authorization.k8s.io',
        'rolebindings',
        {
          metadata: { name, namespace },
          subjects: [
            { kind: 'User', name: pick(dns, 8) },
            { kind: 'ServiceAccount', name: 's', namespace },
          ],
          roleRef: { kind: 'ClusterRole', name },
        },
      ],
    ];
    for (const [group, resource, obj] of samples) {
      const row = kindOf(group, resource)!;
      const upstream = objectToUpstream(copy(obj), context, row);
      if (objectToTenant(copy(upstream), otherContext, row) !== null) t.fail(`${other} saw ${tenant}'s ${resource} ${JSON.stringify(upstream)}`);
      const back = objectToTenant(upstream, context, row);
      if (JSON.stringify(back) !== JSON.stringify(obj)) t.strictSame(back, obj, `${tenant} ${resource}`);
      checked++;
    }
  }
  t.equal(checked, 1200);
});

t.test('a tenant webhook calls a service of its own, or a URL only on a host the administrator allowed', async (t) => {
  const webhookConfiguration = (clientConfig: Json) => ({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: 'check' },
    webhooks: [
      { name: 'ok.example.com', clientConfig: { service: { namespace: 'hooks', name: 'check' } } },
      { name: 'check.example.com', clientConfig },
    ],
  });
  const allowing = { ...ctx, webhookUrlHosts: new Set(['hooks.example.com', '10.0.0.9', '::1']) };
  const refusals: [string, string | undefined, string][] = [
    ['an IP and port of the control plane', 'https://10.0.0.1:2379/', '"10.0.0.1" only if the administrator allows it'],
    ['a host allowed only to another tenantgate', 'https://hooks.example.com.evil.test/', 'hooks.example.com.evil.test'],
    ['credentials before an allowed host', 'https://hooks.example.com@10.0.0.1/', '"10.0.0.1"'],
    ['no URL at all', 'not a url', 'must be a valid URL'],
  ];
  for (const [what, url, message] of refusals) {
    const error = thrown(() => up(webhookConfiguration({ url }), 'admissionregistration.k8s.io', 'validatingwebhookconfigurations', allowing));
    t.equal(error?.code, 422, `${what}: 422`);
    t.match(error?.message, message, what);
    t.same(
      (error?.details as { causes?: { field?: string }[] } | undefined)?.causes?.map((cause) => cause.field),
      ['webhooks[1].clientConfig.url'],
      `${what}: the cause names the field`,
    );
  }
  const nothingAllowed = thrown(() =>
    up(webhookConfiguration({ url: 'https://hooks.example.com/' }), 'admissionregistration.k8s.io', 'mutatingwebhookconfigurations'),
  );
  t.equal(nothingAllowed?.code, 422, 'without the flag no host is allowed');
  for (const url of ['https://hooks.example.com/check', 'https://HOOKS.example.com:8443/', 'https://10.0.0.9/', 'https://[::1]:9443/']) {
    const upstream = up(webhookConfiguration({ url }), 'admissionregistration.k8s.io', 'validatingwebhookconfigurations', allowing) as any;
    t.equal(upstream.webhooks[1].clientConfig.url, url, `${url}: allowed, unchanged`);
  }
  const patch = thrown(() =>
    objectToUpstream(
      { webhooks: [{ name: 'x', clientConfig: { url: 'https://10.0.0.1/' } }] },
      ctx,
      rowOf('admissionregistration.k8s.io', 'validatingwebhookconfigurations'),
      'patch',
    ),
  );
  t.equal(patch?.code, 422, 'a patch setting a URL is refused too');
  const crd = thrown(() =>
    up(
      {
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name: 'widgets.example.com' },
        spec: {
          group: 'example.com',
          names: { plural: 'widgets' },
          conversion: { strategy: 'Webhook', webhook: { clientConfig: { url: 'https://10.0.0.1:6443/' } } },
        },
      },
      'apiextensions.k8s.io',
      'customresourcedefinitions',
    ),
  );
  t.equal(crd?.code, 422, "a CRD's conversion webhook URL is refused alike");
  t.match(crd?.message, 'spec.conversion.webhook.clientConfig.url');
});

t.test("admission policies' and webhooks' CEL reads the tenant's namespace names upstream and reads back as written", async (t) => {
  const expression = "object.metadata.namespace == 'team' && has(object.metadata.namespace) && 'request.namespace' != request.namespace";
  const upstreamExpression =
    "object.metadata.namespace.substring(object.metadata.namespace.size() < 7 ? 0 : 7) == 'team' && has(object.metadata.namespace) && 'request.namespace' != request.namespace.substring(request.namespace.size() < 7 ? 0 : 7)";
  const policy: Json = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: 'p' },
    spec: {
      validations: [{ expression, messageExpression: expression }],
      auditAnnotations: [{ key: 'k', valueExpression: expression }],
      matchConditions: [{ name: 'm', expression }],
      variables: [{ name: 'v', expression }],
    },
  };
  const upstream = up(policy, 'admissionregistration.k8s.io', 'validatingadmissionpolicies');
  const spec = upstream.spec as Json;
  t.same(
    [
      (spec.validations as Json[])[0]!.expression,
      (spec.validations as Json[])[0]!.messageExpression,
      (spec.auditAnnotations as Json[])[0]!.valueExpression,
      (spec.matchConditions as Json[])[0]!.expression,
      (spec.variables as Json[])[0]!.expression,
    ],
    Array(5).fill(upstreamExpression),
  );
  t.same(down(upstream, 'admissionregistration.k8s.io', 'validatingadmissionpolicies'), policy, 'reads back as written');

  const mutating: Json = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingAdmissionPolicy',
    metadata: { name: 'm' },
    spec: {
      mutations: [
        { patchType: 'JSONPatch', jsonPatch: { expression } },
        { patchType: 'ApplyConfiguration', applyConfiguration: { expression } },
      ],
      variables: [{ name: 'v', expression }],
    },
  };
  const mutatingUp = up(mutating, 'admissionregistration.k8s.io', 'mutatingadmissionpolicies');
  t.equal(((mutatingUp.spec as Json).mutations as Json[])[1]!.applyConfiguration!['expression' as never], upstreamExpression);
  t.same(down(mutatingUp, 'admissionregistration.k8s.io', 'mutatingadmissionpolicies'), mutating, 'mutating: reads back as written');

  const webhook: Json = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: 'w' },
    webhooks: [
      {
        name: 'w.example.com',
        clientConfig: { service: { namespace: 'default', name: 'hook' } },
        matchConditions: [{ name: 'm', expression }],
        namespaceSelector: {},
        objectSelector: {},
      },
    ],
  };
  const webhookUp = up(webhook, 'admissionregistration.k8s.io', 'validatingwebhookconfigurations');
  t.equal(((webhookUp.webhooks as Json[])[0]!.matchConditions as Json[])[0]!.expression, upstreamExpression);
  t.same(down(webhookUp, 'admissionregistration.k8s.io', 'validatingwebhookconfigurations'), webhook, 'webhook: reads back as written');
});

import t from 'tap';
import { accessRefusal, builtinKindOf, isBuiltinGroup, isTenantCrdGroup, kindOf, KINDS, type KindRow } from '../../lib/convert/kinds.ts';
import { RULES } from '../../lib/convert/rules/index.ts';

const row = (group: string, resource: string): KindRow => {
  const found = kindOf(group, resource);
  if (found === undefined) throw new Error(`no row for ${group}/${resource}`);
  return found;
};

/** Every resource a 1.36 kube-apiserver serves (pkg/registry/*\/rest), with its scope; plus the Tenant kind. */
const SERVED: [group: string, resource: string, scope: 'Namespaced' | 'Cluster'][] = [
  ...(
    [
      'pods',
      'services',
      'configmaps',
      'secrets',
      'serviceaccounts',
      'endpoints',
      'events',
      'persistentvolumeclaims',
      'replicationcontrollers',
      'resourcequotas',
      'limitranges',
      'podtemplates',
      'bindings',
    ] as const
  ).map((resource): [string, string, 'Namespaced'] => ['', resource, 'Namespaced']),
  ['', 'namespaces', 'Cluster'],
  ['', 'nodes', 'Cluster'],
  ['', 'persistentvolumes', 'Cluster'],
  ['', 'componentstatuses', 'Cluster'],
  ['apps', 'deployments', 'Namespaced'],
  ['apps', 'replicasets', 'Namespaced'],
  ['apps', 'statefulsets', 'Namespaced'],
  ['apps', 'daemonsets', 'Namespaced'],
  ['apps', 'controllerrevisions', 'Namespaced'],
  ['batch', 'jobs', 'Namespaced'],
  ['batch', 'cronjobs', 'Namespaced'],
  ['autoscaling', 'horizontalpodautoscalers', 'Namespaced'],
  ['policy', 'poddisruptionbudgets', 'Namespaced'],
  ['rbac.authorization.k8s.io', 'roles', 'Namespaced'],
  ['rbac.authorization.k8s.io', 'rolebindings', 'Namespaced'],
  ['rbac.authorization.k8s.io', 'clusterroles', 'Cluster'],
  ['rbac.authorization.k8s.io', 'clusterrolebindings', 'Cluster'],
  ['networking.k8s.io', 'ingresses', 'Namespaced'],
  ['networking.k8s.io', 'networkpolicies', 'Namespaced'],
  ['networking.k8s.io', 'ingressclasses', 'Cluster'],
  ['networking.k8s.io', 'ipaddresses', 'Cluster'],
  ['networking.k8s.io', 'servicecidrs', 'Cluster'],
  ['discovery.k8s.io', 'endpointslices', 'Namespaced'],
  ['events.k8s.io', 'events', 'Namespaced'],
  ['storage.k8s.io', 'storageclasses', 'Cluster'],
  ['storage.k8s.io', 'csidrivers', 'Cluster'],
  ['storage.k8s.io', 'csinodes', 'Cluster'],
  ['storage.k8s.io', 'csistoragecapacities', 'Namespaced'],
  ['storage.k8s.io', 'volumeattachments', 'Cluster'],
  ['storage.k8s.io', 'volumeattributesclasses', 'Cluster'],
  ['scheduling.k8s.io', 'priorityclasses', 'Cluster'],
  ['scheduling.k8s.io', 'workloads', 'Namespaced'],
  ['scheduling.k8s.io', 'podgroups', 'Namespaced'],
  ['node.k8s.io', 'runtimeclasses', 'Cluster'],
  ['coordination.k8s.io', 'leases', 'Namespaced'],
  ['coordination.k8s.io', 'leasecandidates', 'Namespaced'],
  ['certificates.k8s.io', 'certificatesigningrequests', 'Cluster'],
  ['certificates.k8s.io', 'clustertrustbundles', 'Cluster'],
  ['certificates.k8s.io', 'podcertificaterequests', 'Namespaced'],
  ['admissionregistration.k8s.io', 'validatingwebhookconfigurations', 'Cluster'],
  ['admissionregistration.k8s.io', 'mutatingwebhookconfigurations', 'Cluster'],
  ['admissionregistration.k8s.io', 'validatingadmissionpolicies', 'Cluster'],
  ['admissionregistration.k8s.io', 'validatingadmissionpolicybindings', 'Cluster'],
  ['admissionregistration.k8s.io', 'mutatingadmissionpolicies', 'Cluster'],
  ['admissionregistration.k8s.io', 'mutatingadmissionpolicybindings', 'Cluster'],
  ['apiextensions.k8s.io', 'customresourcedefinitions', 'Cluster'],
  ['apiregistration.k8s.io', 'apiservices', 'Cluster'],
  ['flowcontrol.apiserver.k8s.io', 'flowschemas', 'Cluster'],
  ['flowcontrol.apiserver.k8s.io', 'prioritylevelconfigurations', 'Cluster'],
  ['authentication.k8s.io', 'tokenreviews', 'Cluster'],
  ['authentication.k8s.io', 'selfsubjectreviews', 'Cluster'],
  ['authorization.k8s.io', 'subjectaccessreviews', 'Cluster'],
  ['authorization.k8s.io', 'selfsubjectaccessreviews', 'Cluster'],
  ['authorization.k8s.io', 'selfsubjectrulesreviews', 'Cluster'],
  ['authorization.k8s.io', 'localsubjectaccessreviews', 'Namespaced'],
  ['resource.k8s.io', 'resourceclaims', 'Namespaced'],
  ['resource.k8s.io', 'resourceclaimtemplates', 'Namespaced'],
  ['resource.k8s.io', 'deviceclasses', 'Cluster'],
  ['resource.k8s.io', 'resourceslices', 'Cluster'],
  ['resource.k8s.io', 'devicetaintrules', 'Cluster'],
  ['resource.k8s.io', 'resourcepoolstatusrequests', 'Cluster'],
  ['storagemigration.k8s.io', 'storageversionmigrations', 'Cluster'],
  ['internal.apiserver.k8s.io', 'storageversions', 'Cluster'],
  ['tenant.kubezoo.io', 'tenants', 'Cluster'],
];

const WRITE_VERBS = ['create', 'update', 'patch', 'delete', 'deletecollection'];
const READ_VERBS = ['get', 'list', 'watch'];

t.test('every resource the kube-apiserver serves has exactly one row, with its real scope', async (t) => {
  for (const [group, resource, scope] of SERVED) t.equal(kindOf(group, resource)?.scope, scope, `${group}/${resource}`);
  const keys = KINDS.map((row) => `${row.group}/${row.resource}`);
  t.equal(new Set(keys).size, keys.length, 'no resource twice');
  const kinds = KINDS.map((row) => `${row.group}/${row.kind}`);
  t.equal(new Set(kinds).size, kinds.length, 'no kind twice in a group');
});

t.test('every row names a rule that exists, and a list path that fits its tenancy', async (t) => {
  for (const row of KINDS) {
    t.ok(RULES[row.rule], `${row.resource}: rule ${row.rule}`);
    const expected = row.tenancy === 'tenant' ? ['label-filter', 'per-namespace'] : row.tenancy === 'shared-read-only' ? ['unfiltered'] : ['none'];
    t.ok(expected.includes(row.listPath), `${row.group}/${row.resource}: ${row.tenancy} lists ${row.listPath}`);
    if (row.tenancy === 'hidden') t.equal(row.rule, 'hidden');
    if (row.listPath === 'per-namespace') t.equal(row.scope, 'Namespaced', `${row.resource}: only namespaced kinds can be listed per namespace`);
  }
});

t.test('nodes are readable but never writable, and never reachable through the kubelet proxy', async (t) => {
  const nodes = row('', 'nodes');
  t.equal(nodes.tenancy, 'shared-read-only');
  for (const verb of READ_VERBS) t.equal(accessRefusal(nodes, verb), null, `${verb} nodes`);
  t.equal(accessRefusal(nodes, 'get', 'status'), null, 'get nodes/status');
  for (const verb of WRITE_VERBS) {
    const refusal = accessRefusal(nodes, verb);
    t.equal(refusal?.code, 403, `${verb} nodes`);
    t.equal(refusal?.reason, 'Forbidden');
    t.match(refusal?.message, /read-only/);
  }
  t.equal(accessRefusal(nodes, 'patch', 'status')?.code, 403, 'patch nodes/status');
  t.equal(accessRefusal(nodes, 'get', 'proxy')?.code, 403, 'get nodes/proxy');
  t.equal(accessRefusal(nodes, 'create', 'proxy')?.code, 403, 'create nodes/proxy');
});

t.test('APIServices are readable (with their status) but never writable', async (t) => {
  const apiServices = row('apiregistration.k8s.io', 'apiservices');
  t.equal(apiServices.tenancy, 'shared-read-only');
  for (const verb of READ_VERBS) t.equal(accessRefusal(apiServices, verb), null, `${verb} apiservices`);
  t.equal(accessRefusal(apiServices, 'get', 'status'), null, 'get apiservices/status');
  for (const verb of WRITE_VERBS) t.equal(accessRefusal(apiServices, verb)?.code, 403, `${verb} apiservices`);
  t.equal(accessRefusal(apiServices, 'update', 'status')?.code, 403, 'update apiservices/status');
});

t.test('tenants and component statuses do not exist for a tenant', async (t) => {
  for (const [group, resource] of [
    ['tenant.kubezoo.io', 'tenants'],
    ['', 'componentstatuses'],
    ['networking.k8s.io', 'ipaddresses'],
    ['networking.k8s.io', 'servicecidrs'],
    ['storage.k8s.io', 'volumeattachments'],
  ] as const) {
    const hidden = row(group, resource);
    t.equal(hidden.tenancy, 'hidden', resource);
    for (const verb of [...READ_VERBS, ...WRITE_VERBS]) {
      const refusal = accessRefusal(hidden, verb);
      t.equal(refusal?.code, 404, `${verb} ${resource}`);
      t.equal(refusal?.reason, 'NotFound');
    }
  }
});

t.test('priority, runtime and storage classes are the platform’s: tenants read them under their real names', async (t) => {
  for (const [group, resource] of [
    ['scheduling.k8s.io', 'priorityclasses'],
    ['node.k8s.io', 'runtimeclasses'],
    ['storage.k8s.io', 'storageclasses'],
    ['storage.k8s.io', 'volumeattributesclasses'],
    ['networking.k8s.io', 'ingressclasses'],
    ['resource.k8s.io', 'deviceclasses'],
  ] as const) {
    const shared = row(group, resource);
    t.equal(shared.tenancy, 'shared-read-only', resource);
    t.equal(shared.listPath, 'unfiltered', `${resource} are listed without the tenant label`);
    t.equal(accessRefusal(shared, 'list'), null);
    // A tenant writes PriorityClasses of its own beside the platform's (rules/priority-classes.ts refuses the platform's).
    if (resource === 'priorityclasses') t.equal(accessRefusal(shared, 'create'), null, 'a tenant creates priority classes of its own');
    else t.equal(accessRefusal(shared, 'create')?.code, 403);
    t.equal(accessRefusal(shared, 'update', 'status')?.code, 403, `no ${resource}/status write`);
  }
});

t.test('a tenant may do anything upstream RBAC allows on its own kinds', async (t) => {
  for (const resource of ['pods', 'namespaces', 'persistentvolumes', 'secrets']) {
    for (const verb of [...READ_VERBS, ...WRITE_VERBS]) t.equal(accessRefusal(row('', resource), verb), null, `${verb} ${resource}`);
  }
  t.equal(accessRefusal(row('', 'pods'), 'create', 'exec'), null, 'pods/exec');
  t.equal(row('', 'persistentvolumes').tenancy, 'tenant', 'PVs are prefixed like any cluster-scoped kind');
});

t.test('kubectl get events -A finds events made by upstream controllers: they are listed per namespace', async (t) => {
  t.equal(row('', 'events').listPath, 'per-namespace');
  t.equal(row('events.k8s.io', 'events').listPath, 'per-namespace');
  t.equal(row('', 'serviceaccounts').listPath, 'per-namespace', 'the default ServiceAccount is made upstream');
  t.equal(row('', 'configmaps').listPath, 'per-namespace', 'kube-root-ca.crt is made upstream');
  t.equal(row('', 'pods').listPath, 'label-filter', 'pods inherit the label from their templates');
  t.equal(row('apps', 'replicasets').listPath, 'label-filter');
  t.equal(row('', 'namespaces').listPath, 'label-filter');
});

t.test('custom resources are the tenant’s, with the scope discovery found', async (t) => {
  const widget = kindOf('example.com', 'widgets', 'Namespaced', 'Widget');
  t.strictSame(widget, {
    group: 'example.com',
    resource: 'widgets',
    kind: 'Widget',
    scope: 'Namespaced',
    tenancy: 'tenant',
    rule: 'custom-resource',
    listPath: 'label-filter',
    subresources: ['status', 'scale'],
  });
  t.equal(kindOf('example.com', 'clusterwidgets', 'Cluster')?.scope, 'Cluster');
  t.equal(kindOf('gateway.networking.k8s.io', 'gateways', 'Namespaced')?.rule, 'custom-resource', 'a tenant may install the Gateway API');
  t.equal(kindOf('example.com', 'widgets'), undefined, 'unknown to discovery: does not exist');
  t.equal(kindOf('*', 'widgets', 'Namespaced'), undefined);
});

t.test('a built-in group never turns into a custom one, and unknown built-in resources are not served', async (t) => {
  t.equal(kindOf('apps', 'widgets', 'Namespaced'), undefined, 'discovery cannot add resources to apps');
  t.equal(kindOf('', 'pods/log'), undefined, 'rows are for resources, not subresources');
  t.equal(accessRefusal(undefined, 'get')?.code, 404);
  t.equal(builtinKindOf('', 'Node')?.resource, 'nodes');
  t.equal(builtinKindOf('events.k8s.io', 'Event')?.group, 'events.k8s.io');
  t.equal(builtinKindOf('example.com', 'Widget'), undefined);
});

t.test('built-in groups and tenant CRD groups', async (t) => {
  for (const group of ['', 'apps', 'rbac.authorization.k8s.io', 'resource.k8s.io', 'tenant.kubezoo.io', 'meta.k8s.io', 'metrics.k8s.io']) {
    t.ok(isBuiltinGroup(group), `${group || 'core'} is built in`);
    t.notOk(isTenantCrdGroup(group), `${group || 'core'} is no tenant's`);
  }
  for (const group of ['example.com', 'gateway.networking.k8s.io', 'snapshot.storage.k8s.io', 'abc123-example.com']) {
    t.notOk(isBuiltinGroup(group), group);
    t.ok(isTenantCrdGroup(group), group);
  }
  t.notOk(isTenantCrdGroup('*'));
});

import t from 'tap';
import { kindOfUpstream, KINDS } from '../../lib/convert/kinds.ts';
import { TENANT_CLUSTER_SCOPE_GROUP } from '../../lib/auth/impersonation.ts';
import {
  legacyTenantBindingsOf,
  SHARED_TENANT_RBAC,
  TENANT_CLUSTER_ROLE,
  TENANTS_OWN_CLUSTER_RULES,
  tenantCustomResourcesRole,
  tenantReadableUpstream,
} from '../../lib/tenants/bootstrap.ts';
import { expansionOf, migratedSubjects, type ClusterRoleBinding } from '../../lib/tenants/cluster-bindings.ts';

t.test('the shared tenant ClusterRole names no namespaced resource and no wildcard group or resource', async (t) => {
  for (const rule of TENANT_CLUSTER_ROLE.rules) {
    t.notOk(rule.apiGroups.includes('*'), JSON.stringify(rule));
    for (const resource of rule.resources) {
      const base = resource.split('/')[0]!;
      t.not(base, '*', JSON.stringify(rule));
      const row = kindOfUpstream(rule.apiGroups[0]!, base);
      t.equal(row?.scope, 'Cluster', `${resource}.${rule.apiGroups[0]} is cluster-scoped`);
      t.not(row?.tenancy, 'hidden', `${resource} is not hidden`);
    }
  }
  t.notOk(
    TENANT_CLUSTER_ROLE.rules.some((rule) => rule.resources.some((r) => r.startsWith('nodes/proxy'))),
    'no nodes/proxy',
  );
});

t.test('what a tenant identity can still read of every tenant upstream: the cluster-scoped kinds of the table, nothing namespaced', async (t) => {
  const readable = tenantReadableUpstream();
  t.same(readable, [
    'namespaces',
    'persistentvolumes',
    'clusterroles.rbac.authorization.k8s.io',
    'clusterrolebindings.rbac.tenantgate.kubezoo.io',
    'priorityclasses.scheduling.k8s.io',
    'certificatesigningrequests.certificates.k8s.io',
    'validatingwebhookconfigurations.admissionregistration.k8s.io',
    'mutatingwebhookconfigurations.admissionregistration.k8s.io',
    'validatingadmissionpolicies.admissionregistration.k8s.io',
    'validatingadmissionpolicybindings.admissionregistration.k8s.io',
    'mutatingadmissionpolicies.admissionregistration.k8s.io',
    'mutatingadmissionpolicybindings.admissionregistration.k8s.io',
    'customresourcedefinitions.apiextensions.k8s.io',
    'flowschemas.flowcontrol.tenantgate.kubezoo.io',
    'prioritylevelconfigurations.flowcontrol.tenantgate.kubezoo.io',
    'nodes',
    'ingressclasses.networking.k8s.io',
    'storageclasses.storage.k8s.io',
    'volumeattributesclasses.storage.k8s.io',
    'csidrivers.storage.k8s.io',
    'csinodes.storage.k8s.io',
    'runtimeclasses.node.k8s.io',
    'clustertrustbundles.certificates.k8s.io',
    'apiservices.apiregistration.k8s.io',
    'deviceclasses.resource.k8s.io',
    'resourceslices.resource.k8s.io',
    'nodes.metrics.k8s.io',
  ]);
  t.equal(
    readable.length,
    KINDS.filter((row) => row.scope === 'Cluster' && row.tenancy !== 'hidden' && !row.rule.includes('review')).length,
    'one per such row of the table',
  );
});

t.test('the admin’s custom-resource role names only the tenant’s cluster-scoped CRDs', async (t) => {
  const role = tenantCustomResourcesRole('abc123', [
    { spec: { group: 'abc123-example.com', scope: 'Cluster', names: { plural: 'gadgets' } } },
    { spec: { group: 'abc123-example.com', scope: 'Namespaced', names: { plural: 'widgets' } } },
    { spec: { group: 'xyz789-example.com', scope: 'Cluster', names: { plural: 'gadgets' } } },
    { spec: { group: 'abc1234-example.com', scope: 'Cluster', names: { plural: 'gadgets' } } },
  ]);
  t.same(role.rules, [
    { apiGroups: ['abc123-example.com'], resources: ['gadgets'], verbs: ['create', 'update', 'patch', 'delete', 'deletecollection'] },
    { apiGroups: ['abc123-example.com'], resources: ['gadgets/status', 'gadgets/scale'], verbs: ['update', 'patch'] },
  ]);
  t.ok(rbacAllows(role.rules, 'abc123-example.com', 'gadgets', 'status', 'update'), 'gadgets/status');
  t.ok(rbacAllows(role.rules, 'abc123-example.com', 'gadgets', 'scale', 'patch'), 'gadgets/scale');
  // Every tenant admin holds the aggregate of all these roles: no read, so no admin reads another tenant's objects.
  for (const verb of ['get', 'list', 'watch']) {
    t.notOk(rbacAllows(role.rules, 'abc123-example.com', 'gadgets', '', verb), `no ${verb} of gadgets`);
    t.notOk(rbacAllows(role.rules, 'abc123-example.com', 'gadgets', 'status', verb), `no ${verb} of gadgets/status`);
  }
  t.equal(role.metadata.labels['tenantgate.kubezoo.io/aggregate-to-tenant-admins'], 'true', 'aggregated into the role every tenant admin is bound to');
});

t.test('tenantgate keeps no ClusterRoleBinding per tenant: a fixed few bind the group every tenant admin carries', async (t) => {
  const bindings = SHARED_TENANT_RBAC.filter((shared) => shared.object.kind === 'ClusterRoleBinding').map(
    (shared) => shared.object as unknown as ClusterRoleBinding,
  );
  t.equal(bindings.length, 2, "two bindings, both of the admins' group (no cluster-admin binding of shadow identities)");
  for (const binding of bindings) {
    t.same(
      binding.subjects?.map((subject) => subject.kind),
      ['Group'],
      `${binding.metadata.name} binds a group`,
    );
    t.notMatch(JSON.stringify(binding), /abc123|<id>/, 'names no tenant');
  }
  const grantsOfGroup = bindings.filter((binding) => binding.subjects?.[0]?.name === TENANT_CLUSTER_SCOPE_GROUP).map((binding) => binding.roleRef.name);
  t.same(
    grantsOfGroup,
    [TENANT_CLUSTER_ROLE.metadata.name, TENANTS_OWN_CLUSTER_RULES.metadata.name],
    "the admins' group: the shared role and the aggregate of the tenants' own",
  );
  const roles = SHARED_TENANT_RBAC.filter((shared) => shared.object.kind === 'ClusterRole').map((shared) => shared.object.metadata.name);
  for (const binding of bindings) t.ok(roles.includes(binding.roleRef.name), `${binding.metadata.name} binds a role made before it`);
  t.same(
    legacyTenantBindingsOf('abc123'),
    ['tenantgate:tenant:abc123', 'tenantgate:tenant-shadow:abc123', 'tenantgate:tenant-custom-resources:abc123', 'tenantgate:tenant-signers:abc123'],
    'what older versions kept per tenant, removed on upgrade',
  );
});

/** RBAC's own matching (k8s.io/component-helpers/auth/rbac/validation): `<resource>/*` matches no subresource. */
function rbacAllows(
  rules: readonly { apiGroups: string[]; resources: string[]; verbs: string[] }[],
  group: string,
  resource: string,
  subresource: string,
  verb: string,
): boolean {
  const requested = subresource === '' ? resource : `${resource}/${subresource}`;
  return rules.some(
    (rule) =>
      (rule.verbs.includes('*') || rule.verbs.includes(verb)) &&
      (rule.apiGroups.includes('*') || rule.apiGroups.includes(group)) &&
      rule.resources.some((r) => r === '*' || r === requested || (subresource !== '' && r === `*/${subresource}`)),
  );
}

t.test('the tenant admin holds every subresource of its cluster-scoped kinds upstream (each named: RBAC has no <resource>/*)', async (t) => {
  for (const rule of TENANT_CLUSTER_ROLE.rules) for (const resource of rule.resources) t.notMatch(resource, /\/\*$/, `${resource}: a form RBAC never matches`);
  const owned = KINDS.filter((row) => row.scope === 'Cluster' && row.tenancy === 'tenant' && !row.rule.includes('review'));
  t.ok(owned.some((row) => row.subresources.length > 0));
  for (const row of owned) {
    for (const subresource of row.subresources) {
      for (const verb of ['get', 'update', 'patch'])
        t.ok(rbacAllows(TENANT_CLUSTER_ROLE.rules, row.upstreamGroup ?? row.group, row.resource, subresource, verb), `${verb} ${row.resource}/${subresource}`);
    }
  }
  t.ok(
    rbacAllows(TENANT_CLUSTER_ROLE.rules, 'admissionregistration.k8s.io', 'validatingadmissionpolicies', 'status', 'get'),
    'the conformance spec’s validatingadmissionpolicies/status',
  );
  t.ok(rbacAllows(TENANT_CLUSTER_ROLE.rules, '', 'namespaces', 'finalize', 'update'), 'namespaces/finalize');
  t.notOk(rbacAllows(TENANT_CLUSTER_ROLE.rules, '', 'nodes', 'status', 'update'), 'shared kinds: reads only');
  t.notOk(rbacAllows(TENANT_CLUSTER_ROLE.rules, '', 'nodes', 'proxy', 'get'), 'never nodes/proxy');
  t.notOk(rbacAllows(TENANT_CLUSTER_ROLE.rules, '', 'pods', 'status', 'get'), 'nothing namespaced');
});

t.test('a ClusterRoleBinding expands to a RoleBinding for its real subjects of the tenant only; old bindings migrate to shadow subjects', async (t) => {
  const binding: ClusterRoleBinding = {
    metadata: { name: 'abc123-readers', labels: { 'kubezoo.io/tenant': 'abc123' } },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'abc123-reader' },
    subjects: [
      { kind: 'User', name: 'tenantgate:cluster:abc123-alice' },
      { kind: 'Group', name: 'tenantgate:cluster:abc123:devs' },
      { kind: 'User', name: 'tenantgate:cluster:system:serviceaccount:abc123-ci:robot' },
      { kind: 'Group', name: 'tenantgate:cluster:system:serviceaccounts:abc123-ci' },
      { kind: 'User', name: 'tenantgate:cluster:xyz789-mallory' },
      { kind: 'Group', name: 'tenantgate:cluster:system:masters' },
      { kind: 'User', name: 'abc123-real' },
    ],
  };
  const expansion = expansionOf(binding, 'abc123-shop', 'abc123');
  t.equal(expansion.metadata.name, 'tenantgate:crb:abc123-readers');
  t.same(expansion.roleRef, binding.roleRef);
  t.same(expansion.subjects, [
    { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'abc123-alice' },
    { kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'abc123:devs' },
    { kind: 'ServiceAccount', name: 'robot', namespace: 'abc123-ci' },
    { kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'system:serviceaccounts:abc123-ci' },
  ]);
  t.same(
    migratedSubjects({
      ...binding,
      subjects: [
        { kind: 'User', name: 'abc123-bob' },
        { kind: 'ServiceAccount', name: 'sa', namespace: 'abc123-ci' },
      ],
    }),
    [
      { kind: 'User', name: 'tenantgate:cluster:abc123-bob' },
      { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'tenantgate:cluster:system:serviceaccount:abc123-ci:sa' },
    ],
  );
  t.equal(migratedSubjects({ ...binding, subjects: binding.subjects!.slice(0, 2) }), null, 'already shadow: nothing to migrate');
});

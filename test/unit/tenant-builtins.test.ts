import t from 'tap';
import { builtinKindOf } from '../../lib/convert/kinds.ts';
import { TENANT_LABEL } from '../../lib/convert/prefix.ts';
import { objectToTenant } from '../../lib/convert/rules/index.ts';
import { builtinBindingsOf, builtinBindingNamesOf, tenantBuiltinBinding, tenantBuiltinRole, type BuiltinRole } from '../../lib/tenants/builtin-roles.ts';
import { endpointRefusal, inClusterAddress, kubernetesEndpointSlice, kubernetesService } from '../../lib/tenants/cluster-service.ts';

const ctx = { tenant: 'abc123', scopeOf: () => undefined, kindScope: () => undefined };

/** The upstream's `edit`, as a 1.36 apiserver has it (rules are the aggregation controller's). */
const EDIT: BuiltinRole = {
  metadata: {
    name: 'edit',
    labels: { 'kubernetes.io/bootstrapping': 'rbac-defaults', 'rbac.authorization.k8s.io/aggregate-to-admin': 'true' },
    annotations: { 'rbac.authorization.kubernetes.io/autoupdate': 'true' },
  },
  aggregationRule: { clusterRoleSelectors: [{ matchLabels: { 'rbac.authorization.k8s.io/aggregate-to-edit': 'true' } }] },
};

t.test("a tenant's copy of an aggregated built-in role aggregates only the tenant's roles, and reads back as the built-in", async (t) => {
  const copy = tenantBuiltinRole('abc123', EDIT);
  t.equal(copy.metadata.name, 'abc123-edit');
  t.same(copy.metadata.labels, {
    'kubernetes.io/bootstrapping': 'rbac-defaults',
    'abc123.aggregation.kubezoo.io/aggregate-to-admin': 'true',
    [TENANT_LABEL]: 'abc123',
  });
  t.same(copy.aggregationRule, {
    clusterRoleSelectors: [{ matchLabels: { 'abc123.aggregation.kubezoo.io/aggregate-to-edit': 'true', [TENANT_LABEL]: 'abc123' } }],
  });
  t.notOk('rules' in copy, "no rules: the upstream's aggregation controller fills them");
  t.same(
    EDIT.aggregationRule,
    { clusterRoleSelectors: [{ matchLabels: { 'rbac.authorization.k8s.io/aggregate-to-edit': 'true' } }] },
    "the upstream's role read is left as it was",
  );
  const back = objectToTenant(structuredClone(copy), ctx, builtinKindOf('rbac.authorization.k8s.io', 'ClusterRole')!);
  t.same(back?.metadata, EDIT.metadata, "the tenant reads the built-in's name, labels and annotations");
  t.same(back?.aggregationRule, EDIT.aggregationRule);
  t.equal(
    objectToTenant(structuredClone(copy), { ...ctx, tenant: 'xyz789' }, builtinKindOf('rbac.authorization.k8s.io', 'ClusterRole')!),
    null,
    'another tenant does not',
  );
});

t.test('a copy of a plain built-in role keeps its rules', async (t) => {
  const rules = [
    { apiGroups: ['*'], resources: ['*'], verbs: ['*'] },
    { nonResourceURLs: ['*'], verbs: ['*'] },
  ];
  const copy = tenantBuiltinRole('abc123', { metadata: { name: 'cluster-admin' }, rules });
  t.equal(copy.metadata.name, 'abc123-cluster-admin');
  t.same(copy.rules, rules);
});

t.test("the built-in bindings bind the tenant's own groups as shadow subjects, except for a tenant that has none", async (t) => {
  const [discovery] = builtinBindingsOf('abc123');
  const binding = tenantBuiltinBinding('abc123', discovery!);
  // Kept as tenantgate's custom resource, whose name must be a DNS subdomain: `system:discovery` written in hex.
  t.equal(binding.metadata.name, `abc123-tghex-${Buffer.from('system:discovery').toString('hex')}`);
  t.equal(binding.apiVersion, 'rbac.tenantgate.kubezoo.io/v1');
  t.same(binding.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'abc123-system:discovery' });
  t.same(binding.subjects, [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'tenantgate:cluster:abc123:system:authenticated' }]);
  t.ok(builtinBindingNamesOf('abc123').has(`abc123-tghex-${Buffer.from('system:basic-user').toString('hex')}`));
  t.same(builtinBindingsOf('system'), [], 'tenant "system" cannot carry groups (upstream reserves "system:")');
});

t.test('the EndpointSlice of default/kubernetes only where the apiserver takes the address', async (t) => {
  const cases: [string, string | null][] = [
    ['10.0.0.5', null],
    ['192.168.1.20', null],
    ['fd00::5', null],
    ['127.0.0.1', 'a loopback address'],
    ['::1', 'a loopback address'],
    ['0.0.0.0', 'an unspecified address'],
    ['::', 'an unspecified address'],
    ['169.254.1.1', 'a link-local address'],
    ['fe80::1', 'a link-local address'],
    ['224.0.0.1', 'a multicast address'],
    ['tenantgate.example.com', 'not an IP address'],
  ];
  for (const [host, refusal] of cases) t.equal(endpointRefusal(host), refusal, host);
  t.equal(kubernetesEndpointSlice('abc123', { host: '127.0.0.1', port: 6443 }), null, 'none for loopback');
  const slice = kubernetesEndpointSlice('abc123', { host: 'fd00::5', port: 6443 })!;
  t.equal(slice.metadata.namespace, 'abc123-default');
  t.equal(slice.addressType, 'IPv6');
  t.same(slice.ports, [{ name: 'https', port: 6443, protocol: 'TCP' }]);
  t.equal((slice.metadata.labels as Record<string, string>)['kubernetes.io/service-name'], 'kubernetes');
});

t.test('Service default/kubernetes: 443 https to where tenantgate listens', async (t) => {
  const address = inClusterAddress({ host: '10.1.2.3', port: 8443 });
  t.same(address, { host: '10.1.2.3', port: 8443 }, 'the listen address, until an in-cluster address is configured');
  const service = kubernetesService('abc123', address);
  t.equal(service.metadata.namespace, 'abc123-default');
  t.same((service.spec as { ports: unknown }).ports, [{ name: 'https', port: 443, protocol: 'TCP', targetPort: 8443 }]);
  t.equal((service.metadata.labels as Record<string, string>)[TENANT_LABEL], 'abc123');
});

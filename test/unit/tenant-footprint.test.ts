// The density bench's counting: which upstream objects are a tenant's, each counted once by kind, what the totals grew
// by per tenant, and which Ns a run measures.
import t from 'tap';
import { DiscoveryCache } from '../../lib/upstream/discovery.ts';
import { tenantCountsFrom } from '../../bench/scenarios/density.ts';
import { countByKind, listableResources, perTenantGrowth, tenantOwns, type ObjectMeta } from '../../bench/tenant-footprint.ts';

const TENANT = 'abc123';
const NAMESPACES = new Set(['abc123-default', 'abc123-kube-system']);

t.test("a tenant's objects are those under its exact prefix, in its namespaces, or labelled as its own", async (t) => {
  const cases: [string, ObjectMeta, boolean][] = [
    ['its namespace', { name: 'abc123-default' }, true],
    ['a copy of a built-in ClusterRole under its prefix', { name: 'abc123-system:aggregate-to-view' }, true],
    ["tenantgate's binding for it, by the owned label", { name: 'tenantgate:tenant:abc123', labels: { 'tenantgate.kubezoo.io/tenant': TENANT } }, true],
    ['a flowcontrol custom resource with the tenant label', { name: 'abc123-global-default', labels: { 'kubezoo.io/tenant': TENANT } }, true],
    ["kube-controller-manager's ServiceAccount in its namespace", { name: 'default', namespace: 'abc123-kube-system' }, true],
    ['a RoleBinding labelled as its own outside its namespaces', { name: 'x', namespace: 'tenantgate-system', labels: { 'kubezoo.io/tenant': TENANT } }, true],
    ['a longer id that starts with its id', { name: 'abc1234-default' }, false],
    ['its id without the dash', { name: 'abc123default' }, false],
    ["another tenant's namespace", { name: 'zzz999-default', labels: { 'kubezoo.io/tenant': 'zzz999' } }, false],
    ["another tenant's binding", { name: 'tenantgate:tenant:zzz999', labels: { 'tenantgate.kubezoo.io/tenant': 'zzz999' } }, false],
    ['a namespaced object named under its prefix in a namespace not its own', { name: 'abc123-cm', namespace: 'default' }, false],
    ['the shared ClusterRole', { name: 'tenantgate:tenant-cluster-scope' }, false],
  ];
  for (const [what, meta, owned] of cases) t.equal(tenantOwns(TENANT, meta, NAMESPACES), owned, what);
});

t.test("an object serving one in a tenant's namespace is the tenant's, though it has neither prefix nor label", async (t) => {
  const clusterIp = { name: '10.0.0.17', labels: { 'ipaddress.kubernetes.io/managed-by': 'ipallocator.k8s.io' } };
  t.equal(tenantOwns(TENANT, clusterIp, NAMESPACES, 'abc123-default'), true, "its Service's ClusterIP");
  t.equal(tenantOwns(TENANT, clusterIp, NAMESPACES, 'default'), false, "the platform's kubernetes Service's");
  t.equal(tenantOwns(TENANT, clusterIp, NAMESPACES, 'zzz999-default'), false, "another tenant's Service's");
});

t.test('an object found twice (by its namespace and by its label) counts once, kinds sorted', async (t) => {
  const rolebinding = { name: 'tenantgate:tenant-admin', namespace: 'abc123-default', labels: { 'kubezoo.io/tenant': TENANT } };
  const counts = countByKind([
    { kind: 'rolebindings.rbac.authorization.k8s.io', meta: rolebinding },
    { kind: 'namespaces', meta: { name: 'abc123-default' } },
    { kind: 'rolebindings.rbac.authorization.k8s.io', meta: { ...rolebinding } },
    { kind: 'configmaps', meta: { name: 'kube-root-ca.crt', namespace: 'abc123-default' } },
    { kind: 'configmaps', meta: { name: 'kube-root-ca.crt', namespace: 'abc123-kube-system' } },
    { kind: 'serviceaccounts', meta: { name: 'default', namespace: 'abc123-default' } },
    // The same name in another kind is another object.
    { kind: 'secrets', meta: { name: 'default', namespace: 'abc123-default' } },
  ]);
  t.same(Object.keys(counts), ['configmaps', 'namespaces', 'rolebindings.rbac.authorization.k8s.io', 'secrets', 'serviceaccounts']);
  t.same(counts, { configmaps: 2, namespaces: 1, 'rolebindings.rbac.authorization.k8s.io': 1, secrets: 1, serviceaccounts: 1 });
});

t.test('growth per tenant is each changed kind over the tenants added; none without tenants added', async (t) => {
  const before = { namespaces: 10, 'clusterroles.rbac.authorization.k8s.io': 100, nodes: 0 };
  const after = { namespaces: 410, 'clusterroles.rbac.authorization.k8s.io': 1600, nodes: 0, 'flowschemas.flowcontrol.tenantgate.kubezoo.io': 300 };
  t.same(perTenantGrowth(before, after, 100), {
    'clusterroles.rbac.authorization.k8s.io': 15,
    'flowschemas.flowcontrol.tenantgate.kubezoo.io': 3,
    namespaces: 4,
  });
  t.same(perTenantGrowth(before, after, 0), {});
  t.same(perTenantGrowth({ namespaces: 3 }, { namespaces: 4 }, 3), { namespaces: 0.33 }, 'rounded to two decimals');
});

t.test('each resource is listed once, at the version its group lists first; events once, in the core group', async (t) => {
  const discovery = DiscoveryCache.ofTables({
    scopes: new Map([
      ['/configmaps', 'Namespaced'],
      ['/namespaces', 'Cluster'],
      ['/events', 'Namespaced'],
      ['events.k8s.io/events', 'Namespaced'],
      ['flowcontrol.apiserver.k8s.io/flowschemas', 'Cluster'],
    ]),
    kindScopes: new Map(),
    resourcesByVersion: new Map([
      ['/v1', ['configmaps', 'namespaces', 'events']],
      ['events.k8s.io/v1', ['events']],
      ['flowcontrol.apiserver.k8s.io/v1', ['flowschemas']],
      ['flowcontrol.apiserver.k8s.io/v1beta3', ['flowschemas']],
    ]),
  });
  t.same(listableResources(discovery), [
    { group: '', version: 'v1', resource: 'configmaps', namespaced: true },
    { group: '', version: 'v1', resource: 'namespaces', namespaced: false },
    { group: '', version: 'v1', resource: 'events', namespaced: true },
    { group: 'flowcontrol.apiserver.k8s.io', version: 'v1', resource: 'flowschemas', namespaced: false },
  ]);
});

t.test('DENSITY_TENANTS chooses the Ns: ascending counts, or the defaults when unset', async (t) => {
  t.same(tenantCountsFrom(undefined, [0, 100]), [0, 100]);
  t.same(tenantCountsFrom('', [0, 100]), [0, 100]);
  t.same(tenantCountsFrom('0, 100,300', [0]), [0, 100, 300]);
  t.same(tenantCountsFrom('50', [0]), [50], 'without 0: the first N is the baseline');
  for (const wrong of ['100,0', '0,0', '-1', '1.5', 'ten', '0,,5', '100000']) t.throws(() => tenantCountsFrom(wrong, [0]), /DENSITY_TENANTS/, wrong);
});

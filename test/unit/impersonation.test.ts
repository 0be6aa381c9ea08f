import t from 'tap';
import { TENANT_CLUSTER_SCOPE_GROUP, upstreamIdentityOf, withClusterScopeGroup } from '../../lib/auth/impersonation.ts';

t.test('administrators are impersonated as themselves', async (t) => {
  t.same(upstreamIdentityOf({ user: 'ops', groups: ['system:masters'], tenant: null }), { user: 'ops', groups: ['system:masters'], tenant: null });
});

t.test("a tenant user can never be impersonated as a system or another tenant's identity", async (t) => {
  const upstream = upstreamIdentityOf({ user: 'system:admin', groups: ['system:masters', 'bravo2:devs'], tenant: 'alpha1' });
  t.equal(upstream.user, 'alpha1-system:admin');
  t.same(upstream.groups, ['alpha1:system:masters', 'alpha1:bravo2:devs', 'alpha1:system:authenticated']);
  t.same(upstream.extra, { tenant: ['alpha1'] });
});

t.test('a tenant read goes with the user and groups RBAC needs; writes and CONNECTs carry the tenant extra the confinement policy reads', async (t) => {
  const alice = { user: 'alice', groups: ['devs'], tenant: 'alpha1' };
  const read = upstreamIdentityOf(alice, { verb: 'get', subresource: '' });
  t.same(
    read,
    { user: 'alpha1-alice', groups: ['alpha1:devs', 'alpha1:system:authenticated'], tenant: 'alpha1' },
    'a get: no extra, so one authorization less upstream',
  );
  t.equal(read.extra, undefined);
  for (const verb of ['list', 'watch']) t.equal(upstreamIdentityOf(alice, { verb, subresource: '' }).extra, undefined, `a ${verb}: no extra`);
  for (const verb of ['create', 'update', 'patch', 'delete', 'deletecollection']) {
    t.same(upstreamIdentityOf(alice, { verb, subresource: '' }).extra, { tenant: ['alpha1'] }, `a ${verb} carries the tenant extra`);
  }
  for (const subresource of ['proxy', 'exec', 'attach', 'portforward']) {
    t.same(
      upstreamIdentityOf(alice, { verb: 'get', subresource }).extra,
      { tenant: ['alpha1'] },
      `a get of ${subresource} is admitted as CONNECT: it carries the extra`,
    );
  }
  t.same(upstreamIdentityOf(alice).extra, { tenant: ['alpha1'] }, 'without a request: every attribute');
  t.equal(upstreamIdentityOf(alice, { verb: 'get', subresource: '' }), read, 'made once per identity');
  t.same(
    upstreamIdentityOf({ user: 'ops', groups: ['system:masters'], tenant: null }, { verb: 'create', subresource: '' }),
    { user: 'ops', groups: ['system:masters'], tenant: null },
    'administrators: themselves, whatever the request',
  );
});

t.test('a tenant admin carries the cluster-scope group where the shared bindings are needed, and only there', async (t) => {
  const admin = { user: 'admin', groups: [], tenant: 'alpha1' };
  t.same(upstreamIdentityOf(admin).groups, ['alpha1:system:authenticated', TENANT_CLUSTER_SCOPE_GROUP], 'without a request: every group');
  t.ok(
    upstreamIdentityOf(admin, { verb: 'create', subresource: '', namespace: '', resource: 'namespaces' }).groups.includes(TENANT_CLUSTER_SCOPE_GROUP),
    'a create of a namespace',
  );
  t.ok(
    upstreamIdentityOf(admin, { verb: 'get', subresource: '', namespace: '', resource: 'clusterroles' }).groups.includes(TENANT_CLUSTER_SCOPE_GROUP),
    'a read at the cluster scope',
  );
  t.ok(
    upstreamIdentityOf(admin, { verb: 'delete', subresource: '', namespace: 'shop', resource: 'namespaces' }).groups.includes(TENANT_CLUSTER_SCOPE_GROUP),
    "a namespace's own request",
  );
  const inNamespace = upstreamIdentityOf(admin, { verb: 'create', subresource: '', namespace: 'shop', resource: 'pods' });
  t.same(inNamespace.groups, ['alpha1:system:authenticated'], 'a write inside a namespace: its RoleBinding suffices, one impersonated value less');
  t.same(inNamespace.extra, { tenant: ['alpha1'] }, 'still with the tenant extra');
  t.same(
    upstreamIdentityOf(admin, { verb: 'get', subresource: '', namespace: 'shop', resource: 'pods' }),
    { user: 'alpha1-admin', groups: [], tenant: 'alpha1' },
    'a read inside a namespace: the user alone',
  );
  t.same(
    upstreamIdentityOf({ user: 'alice', groups: [], tenant: 'alpha1' }, { verb: 'get', subresource: '', namespace: 'shop', resource: 'pods' }).groups,
    ['alpha1:system:authenticated'],
    "another user's read there keeps its groups: bindings to them may be all it has",
  );
  for (const user of ['alice', 'system:serviceaccount:kube-system:admin', 'admin2']) {
    t.notOk(upstreamIdentityOf({ user, groups: [], tenant: 'alpha1' }).groups.includes(TENANT_CLUSTER_SCOPE_GROUP), `${user} never carries it`);
  }
  t.notOk(upstreamIdentityOf({ user: 'admin', groups: [], tenant: null }).groups.includes(TENANT_CLUSTER_SCOPE_GROUP), 'nor an administrator of tenantgate');
  t.same(withClusterScopeGroup({ user: 'alpha1-admin', groups: [] }, 'alpha1').groups, [TENANT_CLUSTER_SCOPE_GROUP], 'a review about the admin asks with it');
  t.same(withClusterScopeGroup({ user: 'bravo2-admin', groups: [] }, 'alpha1').groups, [], "but not about another tenant's admin");
});

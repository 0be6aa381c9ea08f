import t from 'tap';
import { upstreamIdentityOf } from '../../lib/auth/impersonation.ts';

t.test('administrators are impersonated as themselves', async (t) => {
  t.same(upstreamIdentityOf({ user: 'ops', groups: ['system:masters'], tenant: null }), { user: 'ops', groups: ['system:masters'], tenant: null });
});

t.test('a tenant user can never be impersonated as a system or another tenant\'s identity', async (t) => {
  const upstream = upstreamIdentityOf({ user: 'system:admin', groups: ['system:masters', 'bravo2:devs'], tenant: 'alpha1' });
  t.equal(upstream.user, 'alpha1-system:admin');
  t.same(upstream.groups, ['alpha1:system:masters', 'alpha1:bravo2:devs', 'alpha1:system:authenticated']);
  t.same(upstream.extra, { tenant: ['alpha1'] });
});

t.test('a tenant read goes with the user and groups RBAC needs; writes and CONNECTs carry the tenant extra the confinement policy reads', async (t) => {
  const alice = { user: 'alice', groups: ['devs'], tenant: 'alpha1' };
  const read = upstreamIdentityOf(alice, { verb: 'get', subresource: '' });
  t.same(read, { user: 'alpha1-alice', groups: ['alpha1:devs', 'alpha1:system:authenticated'], tenant: 'alpha1' }, 'a get: no extra, so one authorization less upstream');
  t.equal(read.extra, undefined);
  for (const verb of ['list', 'watch']) t.equal(upstreamIdentityOf(alice, { verb, subresource: '' }).extra, undefined, `a ${verb}: no extra`);
  for (const verb of ['create', 'update', 'patch', 'delete', 'deletecollection']) {
    t.same(upstreamIdentityOf(alice, { verb, subresource: '' }).extra, { tenant: ['alpha1'] }, `a ${verb} carries the tenant extra`);
  }
  for (const subresource of ['proxy', 'exec', 'attach', 'portforward']) {
    t.same(upstreamIdentityOf(alice, { verb: 'get', subresource }).extra, { tenant: ['alpha1'] }, `a get of ${subresource} is admitted as CONNECT: it carries the extra`);
  }
  t.same(upstreamIdentityOf(alice).extra, { tenant: ['alpha1'] }, 'without a request: every attribute');
  t.equal(upstreamIdentityOf(alice, { verb: 'get', subresource: '' }), read, 'made once per identity');
  t.same(upstreamIdentityOf({ user: 'ops', groups: ['system:masters'], tenant: null }, { verb: 'create', subresource: '' }), { user: 'ops', groups: ['system:masters'], tenant: null }, 'administrators: themselves, whatever the request');
});

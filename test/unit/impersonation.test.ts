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

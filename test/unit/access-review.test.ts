import t from 'tap';
import {
  accessCacheKey,
  clusterScopeQuestion,
  readForbidden,
  AccessReviews,
  type AccessReviewer,
  type ClusterScopeReviewer,
} from '../../lib/auth/access-review.ts';
import type { ClusterScopeQuestion } from '../../lib/auth/tenant-rbac.ts';

/** A decider of the tenant's RBAC at its cluster scope that allows what `allow` says and records each question. */
function reviewer(allow: (q: ClusterScopeQuestion, tenant: string) => boolean) {
  const asked: ClusterScopeQuestion[] = [];
  const review: ClusterScopeReviewer = async (tenant, q) => {
    asked.push(q);
    return { allowed: allow(q, tenant), reason: '' };
  };
  return { asked, review };
}

const noUpstreamReview: AccessReviewer = () => Promise.reject(new Error('no upstream review is expected here'));

const alice = { user: 'abc123-alice', groups: ['abc123:devs', 'abc123:system:authenticated'] };

t.test("the tenant's RBAC is asked about the caller at the cluster scope, in upstream names", async (t) => {
  t.same(clusterScopeQuestion(alice, 'list', '', 'configmaps'), {
    user: 'abc123-alice',
    groups: ['abc123:devs', 'abc123:system:authenticated'],
    resourceAttributes: { verb: 'list', group: '', resource: 'configmaps' },
  });
});

t.test('an answer is never reused for another tenant, user, group set, verb, group or resource (CVE-2023-46254)', async (t) => {
  const { asked, review } = reviewer((q, tenant) => tenant === 'abc123' && q.user === 'abc123-alice' && q.groups.includes('abc123:devs'));
  const access = new AccessReviews(noUpstreamReview, review);
  t.equal(await access.allowed('abc123', alice, 'list', '', 'configmaps'), true);
  t.equal(access.allowed('abc123', alice, 'list', '', 'configmaps'), true, 'a cached answer comes back at once');
  t.equal(asked.length, 1);
  const others: [string, { user: string; groups: string[] }, string, string, string][] = [
    ['xyz789', alice, 'list', '', 'configmaps'],
    ['abc123', { user: 'abc123-bob', groups: alice.groups }, 'list', '', 'configmaps'],
    ['abc123', { user: alice.user, groups: ['abc123:system:authenticated'] }, 'list', '', 'configmaps'],
    ['abc123', alice, 'watch', '', 'configmaps'],
    ['abc123', alice, 'list', 'apps', 'configmaps'],
    ['abc123', alice, 'list', '', 'secrets'],
  ];
  const keys = new Set([accessCacheKey('abc123', alice, 'list', '', 'configmaps')]);
  for (const [tenant, identity, verb, group, resource] of others) {
    await access.allowed(tenant, identity, verb, group, resource);
    keys.add(accessCacheKey(tenant, identity, verb, group, resource));
  }
  t.equal(asked.length, 1 + others.length, 'each different question reached the upstream');
  t.equal(keys.size, 1 + others.length, 'and has a key of its own');
  // Joined strings could collide: a user ending where a group begins.
  t.not(
    accessCacheKey('abc123', { user: 'a', groups: ['b,c'] }, 'list', '', 'x'),
    accessCacheKey('abc123', { user: 'a', groups: ['b', 'c'] }, 'list', '', 'x'),
  );
});

t.test('a refusal is cached for less time than an allowance; an upstream failure is not cached', async (t) => {
  let allow = false;
  let fail = false;
  let calls = 0;
  const access = new AccessReviews(
    noUpstreamReview,
    async () => {
      calls++;
      if (fail) throw new Error('down');
      return { allowed: allow, reason: '' };
    },
    { allowedTtlMs: 60_000, deniedTtlMs: 30 },
  );
  t.equal(await access.allowed('abc123', alice, 'list', '', 'configmaps'), false);
  allow = true;
  t.equal(access.allowed('abc123', alice, 'list', '', 'configmaps'), false, 'refused while the refusal is cached');
  await new Promise((resolve) => setTimeout(resolve, 60));
  t.equal(await access.allowed('abc123', alice, 'list', '', 'configmaps'), true, 'a new grant shows once the refusal expires');
  fail = true;
  await t.rejects(Promise.resolve(access.allowed('abc123', alice, 'watch', '', 'configmaps')));
  fail = false;
  t.equal(await access.allowed('abc123', alice, 'watch', '', 'configmaps'), true, 'a failure was not remembered');
  t.equal(calls, 4);
});

t.test('concurrent questions reach the upstream once', async (t) => {
  const { asked, review } = reviewer(() => true);
  const access = new AccessReviews(noUpstreamReview, review);
  await Promise.all(Array.from({ length: 20 }, () => access.allowed('abc123', alice, 'list', '', 'pods')));
  t.equal(asked.length, 1);
});

t.test('a refusal reads as the apiserver’s own, in the tenant’s names', async (t) => {
  t.same(readForbidden('alice', 'list', '', 'configmaps').toJSON(), {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" at the cluster scope',
    reason: 'Forbidden',
    details: { kind: 'configmaps' },
    code: 403,
  });
  t.match(readForbidden('alice', 'watch', 'apps', 'deployments').message, /^deployments\.apps is forbidden: .* in API group "apps" at the cluster scope$/);
});

import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { upstreamIdentityOf } from '../../lib/auth/impersonation.ts';
import { bearerToken, identityFromTokenReview, ServiceAccountTokens, type TokenReviewStatus } from '../../lib/auth/service-account-tokens.ts';

const uids: Record<string, string> = { abc123: 'uid-abc', defaul: 'uid-defaul' };
const uidOf = (id: string) => uids[id];

function saReview(namespace: string, name: string): TokenReviewStatus {
  return {
    authenticated: true,
    user: {
      username: `system:serviceaccount:${namespace}:${name}`,
      groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
    },
  };
}

t.test("a tenant service account becomes the tenant's own identity, groups unprefixed", async (t) => {
  t.same(identityFromTokenReview(saReview('abc123-default', 'builder'), uidOf), {
    user: 'system:serviceaccount:default:builder',
    groups: ['system:serviceaccounts', 'system:serviceaccounts:default', 'system:authenticated'],
    tenant: 'abc123',
    proof: { kind: 'token', tenantUid: 'uid-abc' },
  });
});

t.test('only authenticated tenant service accounts pass', async (t) => {
  const cases: [string, TokenReviewStatus][] = [
    ['not authenticated', { ...saReview('abc123-default', 'x'), authenticated: false }],
    ['authenticated missing (empty token answer)', { user: saReview('abc123-default', 'x').user }],
    ['no user', { authenticated: true }],
    ['an upstream service account', saReview('kube-system', 'default')],
    ['namespace default (tenant defaul has no `-` after its id)', saReview('default', 'default')],
    ['namespace kube-public', saReview('kube-public', 'default')],
    ['a prefix with nothing after it', saReview('abc123-', 'default')],
    ['an upper-case "id"', saReview('ABC123-default', 'default')],
    ['a user, not a service account', { authenticated: true, user: { username: 'abc123-admin', groups: [] } }],
    ['a malformed service-account user', { authenticated: true, user: { username: 'system:serviceaccount:abc123-default' } }],
  ];
  for (const [name, status] of cases) t.equal(identityFromTokenReview(status, uidOf), null, name);
});

t.test('groups of other tenants and the upstream never reach the identity', async (t) => {
  const status = saReview('abc123-ns', 'sa');
  status.user!.groups!.push('xyz789:devs', 'system:serviceaccounts:xyz789-ns', 'system:masters', 'abc123:devs');
  t.same(identityFromTokenReview(status, uidOf)!.groups, ['system:serviceaccounts', 'system:serviceaccounts:ns', 'system:authenticated', 'devs']);
});

t.test('a tenant service account is impersonated upstream as system:serviceaccount:<id>-<ns>:<name>, groups its own', async (t) => {
  const upstream = upstreamIdentityOf(identityFromTokenReview(saReview('abc123-default', 'builder'), uidOf)!);
  t.equal(upstream.user, 'system:serviceaccount:abc123-default:builder');
  t.same(upstream.groups, ['abc123:system:serviceaccounts', 'system:serviceaccounts:abc123-default', 'abc123:system:authenticated']);
  t.same(upstream.extra, { tenant: ['abc123'] });
});

t.test('bearer tokens: the Bearer scheme only, never empty', async (t) => {
  t.equal(bearerToken('Bearer abc.def'), 'abc.def');
  t.equal(bearerToken('bearer abc'), 'abc');
  for (const value of [undefined, '', 'Bearer', 'Bearer ', 'Bearer    ', 'Basic YWI6Y2Q=', 'Token abc'])
    t.equal(bearerToken(value), null, JSON.stringify(value));
});

/** A reviewer that counts its calls and answers from a table. */
function reviewer(answers: Record<string, TokenReviewStatus | Error>) {
  const calls: string[] = [];
  return {
    calls,
    review: async (token: string) => {
      calls.push(token);
      await sleep(5);
      const answer = answers[token] ?? { authenticated: false };
      if (answer instanceof Error) throw answer;
      return answer;
    },
  };
}

t.test('accepted tokens are reviewed once until their TTL, then again', async (t) => {
  const upstream = reviewer({ good: saReview('abc123-default', 'default') });
  const tokens = new ServiceAccountTokens(upstream.review, uidOf, { successTtlMs: 150, failureTtlMs: 50 });
  const first = await tokens.authenticate('good');
  t.equal((first as { user: string }).user, 'system:serviceaccount:default:default');
  const hit = tokens.authenticate('good');
  t.notOk(hit instanceof Promise, 'a cached token answers synchronously');
  t.same(hit, first);
  t.equal(tokens.reviews, 1);
  await sleep(200);
  t.same(await tokens.authenticate('good'), first);
  t.equal(tokens.reviews, 2, 'reviewed again once the TTL passed');
});

t.test('refusals are cached too, for their shorter TTL', async (t) => {
  const upstream = reviewer({});
  const tokens = new ServiceAccountTokens(upstream.review, uidOf, { successTtlMs: 10_000, failureTtlMs: 100 });
  for (let i = 0; i < 20; i++) t.equal(await tokens.authenticate('garbage'), null);
  t.equal(tokens.reviews, 1, '20 garbage requests, one review');
  await sleep(150);
  t.equal(await tokens.authenticate('garbage'), null);
  t.equal(tokens.reviews, 2, 'the refusal expired sooner than a success would');
});

t.test('concurrent requests with one token share one review', async (t) => {
  const upstream = reviewer({ good: saReview('abc123-default', 'default') });
  const tokens = new ServiceAccountTokens(upstream.review, uidOf);
  const results = await Promise.all(Array.from({ length: 10 }, () => tokens.authenticate('good')));
  t.equal(upstream.calls.length, 1);
  t.ok(results.every((r) => r !== null));
});

t.test('an upstream that cannot review is not a refusal: nothing is cached', async (t) => {
  const upstream = reviewer({ flaky: new Error('upstream down') });
  const tokens = new ServiceAccountTokens(upstream.review, uidOf);
  await t.rejects(Promise.resolve(tokens.authenticate('flaky')));
  await t.rejects(Promise.resolve(tokens.authenticate('flaky')));
  t.equal(upstream.calls.length, 2, 'asked again');
  t.equal(tokens.size, 0);
});

t.test('a token of a tenant that does not exist yet is held only as long as a refusal', async (t) => {
  const upstream = reviewer({ early: saReview('new001-default', 'default') });
  const tokens = new ServiceAccountTokens(upstream.review, uidOf, { successTtlMs: 10_000, failureTtlMs: 50 });
  const identity = await tokens.authenticate('early');
  t.same(identity && identity.proof, { kind: 'token', tenantUid: undefined });
  await sleep(80);
  await tokens.authenticate('early');
  t.equal(tokens.reviews, 2);
});

t.test('the cache is bounded, and keyed by a hash, not by the token', async (t) => {
  const upstream = reviewer({});
  const tokens = new ServiceAccountTokens(upstream.review, uidOf, { maxEntries: 10 });
  for (let i = 0; i < 50; i++) await tokens.authenticate(`token-${i}`);
  t.equal(tokens.size, 10, 'never more than maxEntries');
  await tokens.authenticate('token-0');
  t.equal(tokens.reviews, 51, 'the oldest was evicted');
  await tokens.authenticate('token-49');
  t.equal(tokens.reviews, 51, 'the newest is still there');
});

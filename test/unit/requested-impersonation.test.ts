import t from 'tap';
import { AccessReviews, type AccessQuestion } from '../../lib/auth/access-review.ts';
import type { Identity } from '../../lib/auth/identity.ts';
import { TENANT_CLUSTER_SCOPE_GROUP, upstreamIdentityOf } from '../../lib/auth/impersonation.ts';
import { authorizeImpersonation, impersonationChecks, requestedImpersonation } from '../../lib/auth/requested-impersonation.ts';
import { StatusError } from '../../lib/errors/status-error.ts';
import { upstreamRequestHeaders } from '../../lib/upstream/headers.ts';

const raw = (headers: [string, string][]) => headers.flat();

/** The refusal an impersonation ends in (fails the test when it was allowed). */
async function refusalOf(attempt: Promise<Identity>): Promise<StatusError> {
  const outcome = await attempt.catch((error: unknown) => error);
  if (!(outcome instanceof StatusError)) throw new Error(`expected a refusal, got ${JSON.stringify(outcome)}`);
  return outcome;
}

t.test('headers are read as the apiserver reads them', async (t) => {
  t.equal(requestedImpersonation(raw([['accept', 'application/json']])), null, 'no Impersonate-* header: nothing asked');
  t.same(
    requestedImpersonation(
      raw([
        ['Impersonate-User', 'alice'],
        ['Impersonate-User', 'bob'],
        ['Impersonate-Group', 'devs, ops'],
        ['impersonate-group', 'qa'],
        ['Impersonate-Extra-Scopes', 'view'],
        ['Impersonate-Extra-Scopes', 'edit'],
        ['Impersonate-Extra-Acme.com%2Fteam', 'red'],
        ['Impersonate-Uid', 'u-1'],
      ]),
    ),
    { user: 'alice', groups: ['devs, ops', 'qa'], uid: 'u-1', extra: { scopes: ['view', 'edit'], 'acme.com/team': ['red'] } },
    'the first user; one group per header line (commas are part of a name); extra keys lowercased and percent-decoded',
  );
  t.same(
    requestedImpersonation(
      raw([
        ['impersonate-user', 'alice'],
        ['impersonate-uid', ''],
      ]),
    ),
    { user: 'alice', groups: [], uid: undefined, extra: {} },
    'an empty uid asks for none',
  );
  for (const [name, value] of [
    ['impersonate-group', 'system:masters'],
    ['impersonate-extra-tenant', 'b'],
    ['impersonate-uid', 'x'],
  ] as const) {
    t.throws(
      () => requestedImpersonation(raw([[name, value]])),
      { code: 400, message: /without impersonating a user/ },
      `${name} without a user is malformed (400, never 500)`,
    );
    t.throws(
      () =>
        requestedImpersonation(
          raw([
            ['impersonate-user', ''],
            [name, value],
          ]),
        ),
      { code: 400 },
      `${name} with an empty user too`,
    );
  }
});

t.test("a tenant's names map under its prefix: it can name no system identity nor another tenant's", async (t) => {
  const upstreamOf = (headers: [string, string][]) => impersonationChecks(requestedImpersonation(raw(headers))!, 'alpha1').map((check) => check.upstream);
  t.same(upstreamOf([['impersonate-user', 'alice']]), [
    { verb: 'impersonate', group: '', resource: 'users', namespace: '', name: 'alpha1-alice', subresource: '' },
  ]);
  t.same(upstreamOf([['impersonate-user', 'system:serviceaccount:shop:robot']]), [
    { verb: 'impersonate', group: '', resource: 'serviceaccounts', namespace: 'alpha1-shop', name: 'robot', subresource: '' },
  ]);
  const names = upstreamOf([
    ['impersonate-user', 'system:admin'],
    ['impersonate-group', 'system:masters'],
    ['impersonate-group', 'bravo2:devs'],
    ['impersonate-group', 'system:serviceaccounts:kube-system'],
    ['impersonate-group', 'system:authenticated'],
  ]).map((attributes) => attributes.name);
  t.same(names, [
    'alpha1-system:admin',
    'alpha1:system:masters',
    'alpha1:bravo2:devs',
    'system:serviceaccounts:alpha1-kube-system',
    'alpha1:system:authenticated',
  ]);
  t.same(upstreamOf([['impersonate-user', 'bravo2-alice']])[0]!.name, 'alpha1-bravo2-alice', "another tenant's upstream name is just a name in this tenant");
  t.same(upstreamOf([['impersonate-user', 'system:serviceaccount:bravo2-default:default']])[0]!.namespace, 'alpha1-bravo2-default');
  // Administrators see the upstream as it is.
  t.same(impersonationChecks(requestedImpersonation(raw([['impersonate-user', 'system:admin']]))!, null)[0]!.upstream.name, 'system:admin');
});

type Decider = 'upstream' | 'tenant RBAC';

/**
 * An access module whose upstream (about the caller) and tenant RBAC (its ClusterRoleBindings, at the cluster scope)
 * allow what `allow` says, recording each question and which of the two was asked.
 */
function accessAllowing(allow: (q: AccessQuestion, by: Decider) => boolean) {
  const asked: AccessQuestion[] = [];
  const by: Decider[] = [];
  const access = new AccessReviews(
    async (q) => {
      asked.push(q);
      by.push('upstream');
      return allow(q, 'upstream');
    },
    async (_tenant, q) => {
      const { verb = '', group = '', resource = '', subresource = '', name = '' } = q.resourceAttributes ?? {};
      const question: AccessQuestion = { user: q.user, groups: [...q.groups], resourceAttributes: { verb, group, resource, namespace: '', name, subresource } };
      asked.push(question);
      by.push('tenant RBAC');
      return { allowed: allow(question, 'tenant RBAC'), reason: '' };
    },
  );
  return { asked, by, access };
}

const tenantAdmin: Identity = { user: 'admin', groups: [], tenant: 'alpha1', proof: { kind: 'certificate', serial: '01' } };
const tenantUser: Identity = { user: 'dev', groups: ['devs'], tenant: 'alpha1', proof: { kind: 'certificate', serial: '02' } };

t.test("a tenant may impersonate what its RoleBindings (upstream) or its ClusterRoleBindings (tenantgate's evaluation) allow", async (t) => {
  // The tenant admin holds everything at its cluster scope (tenant RBAC); upstream it holds nothing cluster-wide.
  const { asked, by, access } = accessAllowing((q, decider) => decider === 'tenant RBAC' && q.user === 'alpha1-admin');
  const target = await authorizeImpersonation(
    access,
    tenantAdmin,
    requestedImpersonation(
      raw([
        ['impersonate-user', 'alice'],
        ['impersonate-group', 'devs'],
      ]),
    )!,
  );
  t.same(
    asked.map((q, i) => [by[i], q.user, q.resourceAttributes.resource, q.resourceAttributes.name]),
    [
      ['upstream', 'alpha1-admin', 'users', 'alpha1-alice'],
      ['tenant RBAC', 'alpha1-admin', 'users', 'alpha1-alice'],
      ['upstream', 'alpha1-admin', 'groups', 'alpha1:devs'],
      ['tenant RBAC', 'alpha1-admin', 'groups', 'alpha1:devs'],
    ],
  );
  t.same(
    asked[0]!.groups,
    ['alpha1:system:authenticated', TENANT_CLUSTER_SCOPE_GROUP],
    "asked about the caller's whole upstream identity (an admin's cluster-scope group included)",
  );
  t.same(
    asked[1]!.groups,
    ['alpha1:system:authenticated', TENANT_CLUSTER_SCOPE_GROUP],
    "and tenantgate's evaluation of its tenant's RBAC asks about the same identity",
  );
  t.same(
    target,
    { user: 'alice', groups: ['devs', 'system:authenticated'], tenant: 'alpha1', proof: tenantAdmin.proof },
    "the target keeps the caller's tenant and proof",
  );
  t.same(
    upstreamIdentityOf(target),
    { user: 'alpha1-alice', groups: ['alpha1:devs', 'alpha1:system:authenticated'], extra: { tenant: ['alpha1'] }, tenant: 'alpha1' },
    'upstream: under the prefix, the tenant extra kept',
  );

  const robot = await authorizeImpersonation(access, tenantAdmin, requestedImpersonation(raw([['impersonate-user', 'system:serviceaccount:shop:robot']]))!);
  t.same(
    upstreamIdentityOf(robot),
    {
      user: 'system:serviceaccount:alpha1-shop:robot',
      groups: ['alpha1:system:serviceaccounts', 'system:serviceaccounts:alpha1-shop', 'alpha1:system:authenticated'],
      extra: { tenant: ['alpha1'] },
      tenant: 'alpha1',
    },
    'a service account gets its groups, as a token of its own would',
  );
});

t.test("a refusal is the apiserver's 403, in the tenant's names, and nothing further is asked", async (t) => {
  const { asked, access } = accessAllowing(() => false);
  const refusal = await authorizeImpersonation(
    access,
    tenantUser,
    requestedImpersonation(
      raw([
        ['impersonate-user', 'system:serviceaccount:shop:robot'],
        ['impersonate-group', 'x'],
      ]),
    )!,
  ).catch((e: unknown) => e);
  t.ok(refusal instanceof StatusError);
  t.match((refusal as StatusError).toJSON(), {
    kind: 'Status',
    code: 403,
    reason: 'Forbidden',
    message: 'serviceaccounts "robot" is forbidden: User "dev" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "shop"',
    details: { name: 'robot', kind: 'serviceaccounts' },
  });
  t.equal(asked.length, 2, "the upstream about the caller, then the tenant's RBAC; the group is never asked about");
  const user = await refusalOf(authorizeImpersonation(access, tenantUser, requestedImpersonation(raw([['impersonate-user', 'alice']]))!));
  t.equal(user.message, 'users "alice" is forbidden: User "dev" cannot impersonate resource "users" in API group "" at the cluster scope');
  const extra = await authorizeImpersonation(
    access,
    tenantUser,
    requestedImpersonation(
      raw([
        ['impersonate-user', 'alice'],
        ['impersonate-extra-scopes', 'view'],
      ]),
    )!,
  ).catch((e: unknown) => e);
  t.ok(extra instanceof StatusError);
});

t.test('the tenant extra can never be set, changed or dropped by a tenant, whatever its spelling', async (t) => {
  const { asked, access } = accessAllowing(() => true);
  for (const name of ['impersonate-extra-tenant', 'Impersonate-Extra-Tenant', 'impersonate-extra-%74enant', 'impersonate-extra-%54enant']) {
    const refusal = await refusalOf(
      authorizeImpersonation(
        access,
        tenantAdmin,
        requestedImpersonation(
          raw([
            ['impersonate-user', 'alice'],
            [name, 'bravo2'],
          ]),
        )!,
      ),
    );
    t.equal(refusal.code, 403, name);
    t.match(
      refusal.message,
      /^userextras.authentication.k8s.io "bravo2" is forbidden: User "admin" cannot impersonate resource "userextras\/[tT]enant" in API group "authentication.k8s.io" at the cluster scope: /,
    );
  }
  t.equal(asked.length, 0, 'refused before any question reaches the upstream');
  const other = await authorizeImpersonation(
    access,
    tenantAdmin,
    requestedImpersonation(
      raw([
        ['impersonate-user', 'alice'],
        ['impersonate-extra-scopes', 'view'],
        ['impersonate-uid', 'u-1'],
      ]),
    )!,
  );
  const upstream = upstreamIdentityOf(other);
  t.same(upstream.extra, { scopes: ['view'], tenant: ['alpha1'] }, 'other extras pass; the tenant extra is still there');
  const headers = upstreamRequestHeaders(
    { 'impersonate-extra-tenant': 'bravo2', 'impersonate-user': 'system:admin', connection: 'impersonate-user' },
    upstream,
    {},
  );
  t.same(
    [headers['impersonate-user'], headers['impersonate-uid'], headers['impersonate-extra-tenant'], headers['impersonate-extra-scopes']],
    ['alpha1-alice', 'u-1', ['alpha1'], ['view']],
    "upstream headers carry only tenantgate's impersonation of the target",
  );
});

t.test('an administrator is asked about as itself, upstream only, and impersonates as given', async (t) => {
  const { asked, access } = accessAllowing((q) => q.groups.includes('system:masters'));
  const admin: Identity = { user: 'ops', groups: ['system:masters'], tenant: null };
  const target = await authorizeImpersonation(access, admin, requestedImpersonation(raw([['impersonate-user', 'system:serviceaccount:kube-system:default']]))!);
  t.same(upstreamIdentityOf(target), {
    user: 'system:serviceaccount:kube-system:default',
    groups: ['system:serviceaccounts', 'system:serviceaccounts:kube-system', 'system:authenticated'],
    tenant: null,
  });
  t.same(asked[0], {
    user: 'ops',
    groups: ['system:masters'],
    resourceAttributes: { verb: 'impersonate', group: '', resource: 'serviceaccounts', namespace: 'kube-system', name: 'default', subresource: '' },
  });
  const plain: Identity = { user: 'viewer', groups: [], tenant: null };
  await t.rejects(authorizeImpersonation(access, plain, requestedImpersonation(raw([['impersonate-user', 'system:admin']]))!), {
    code: 403,
    message: 'users "system:admin" is forbidden: User "viewer" cannot impersonate resource "users" in API group "" at the cluster scope',
  });
  t.equal(asked.length, 2, 'one question each: administrators have no tenant RBAC');
  const anonymous = await authorizeImpersonation(access, admin, requestedImpersonation(raw([['impersonate-user', 'system:anonymous']]))!);
  t.same(anonymous.groups, ['system:unauthenticated'], 'the anonymous user is unauthenticated, as the apiserver makes it');
});

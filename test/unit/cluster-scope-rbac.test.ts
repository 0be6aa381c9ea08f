import t from 'tap';
import {
  apiGroupMatches,
  decideAtClusterScope,
  nonResourceUrlMatches,
  resourceMatches,
  resourceNameMatches,
  ruleAllows,
  verbMatches,
  type ClusterScopeQuestion,
  type PolicyRule,
  type TenantRbacSource,
} from '../../lib/auth/tenant-rbac.ts';
import type { ClusterRoleBinding } from '../../lib/tenants/cluster-bindings.ts';

t.test('verbs: exact or *', async (t) => {
  const cases: [string[], string, boolean][] = [
    [['get'], 'get', true],
    [['get', 'list'], 'list', true],
    [['*'], 'delete', true],
    [['get', 'list'], 'watch', false],
    [['GET'], 'get', false],
    [[], 'get', false],
  ];
  for (const [verbs, verb, allowed] of cases) t.equal(verbMatches({ verbs }, verb), allowed, `${JSON.stringify(verbs)} ${verb}`);
});

t.test('groups: exact or *, core is ""', async (t) => {
  const cases: [string[], string, boolean][] = [
    [[''], '', true],
    [['apps'], '', false],
    [['', 'apps'], 'apps', true],
    [['*'], 'abc123-example.com', true],
    [['rbac.authorization.k8s.io'], 'rbac.tenantgate.kubezoo.io', false],
    [[], '', false],
  ];
  for (const [apiGroups, group, allowed] of cases)
    t.equal(apiGroupMatches({ apiGroups }, group), allowed, `${JSON.stringify(apiGroups)} ${JSON.stringify(group)}`);
});

t.test('resources: exact, *, and */<subresource> of any resource, never <resource>/*', async (t) => {
  const cases: [string[], string, string, boolean][] = [
    // [rule resources, resource, subresource, allowed]
    [['pods'], 'pods', '', true],
    [['pods'], 'pods', 'log', false],
    [['pods/log'], 'pods', 'log', true],
    [['*/log'], 'pods', 'log', true],
    [['*/log'], 'pods', '', false],
    [['*/status'], 'pods', 'log', false],
    [['*/logs'], 'pods', 'log', false],
    [['*'], 'pods', 'exec', true],
    [['pods/*'], 'pods', 'log', false],
    [['*/*'], 'pods', 'log', false],
    [['deployments', 'pods'], 'pods', '', true],
    [[], 'pods', '', false],
  ];
  for (const [resources, resource, subresource, allowed] of cases) {
    const combined = subresource === '' ? resource : `${resource}/${subresource}`;
    t.equal(resourceMatches({ resources }, combined, subresource), allowed, `${JSON.stringify(resources)} ${combined}`);
  }
});

t.test('resource names: none named is every name; named ones match exactly, so a list (no name) matches no named rule', async (t) => {
  const cases: [string[] | undefined, string, boolean][] = [
    [undefined, 'x', true],
    [[], '', true],
    [['a'], 'a', true],
    [['a', 'b'], 'b', true],
    [['a'], '', false],
    [['a'], 'ab', false],
  ];
  for (const [resourceNames, name, allowed] of cases)
    t.equal(
      resourceNameMatches(resourceNames === undefined ? {} : { resourceNames }, name),
      allowed,
      `${JSON.stringify(resourceNames)} ${JSON.stringify(name)}`,
    );
});

t.test('non-resource URLs: exact, *, or a prefix before a trailing *', async (t) => {
  const cases: [string[], string, boolean][] = [
    [['/healthz'], '/healthz', true],
    [['/healthz'], '/healthz/ping', false],
    [['/healthz/*'], '/healthz/ping', true],
    [['/healthz/*'], '/healthz', false],
    [['/api*'], '/apis/apps', true],
    [['/api'], '/api/', false],
    [['*'], '/metrics', true],
    [['/metrics**'], '/metrics/slis', true],
    [[], '/', false],
  ];
  for (const [nonResourceURLs, path, allowed] of cases)
    t.equal(nonResourceUrlMatches({ nonResourceURLs }, path), allowed, `${JSON.stringify(nonResourceURLs)} ${path}`);
});

t.test('a rule allows a resource question by all four, a non-resource question by verb and path only', async (t) => {
  const rule: PolicyRule = { verbs: ['get', 'list'], apiGroups: [''], resources: ['configmaps'], resourceNames: ['settings'] };
  const who = { user: 'abc123-alice', groups: [] };
  const cases: [ClusterScopeQuestion, boolean][] = [
    [{ ...who, resourceAttributes: { verb: 'get', group: '', resource: 'configmaps', name: 'settings' } }, true],
    [{ ...who, resourceAttributes: { verb: 'list', group: '', resource: 'configmaps' } }, false],
    [{ ...who, resourceAttributes: { verb: 'get', group: 'apps', resource: 'configmaps', name: 'settings' } }, false],
    [{ ...who, resourceAttributes: { verb: 'delete', group: '', resource: 'configmaps', name: 'settings' } }, false],
    [{ ...who, nonResourceAttributes: { verb: 'get', path: '/healthz' } }, false],
  ];
  for (const [question, allowed] of cases)
    t.equal(ruleAllows(question, rule), allowed, JSON.stringify(question.resourceAttributes ?? question.nonResourceAttributes));
  t.ok(ruleAllows({ ...who, nonResourceAttributes: { verb: 'get', path: '/version' } }, { verbs: ['get'], nonResourceURLs: ['/version'] }));
  t.notOk(
    ruleAllows({ ...who, resourceAttributes: { verb: 'get', group: '', resource: 'version' } }, { verbs: ['get'], nonResourceURLs: ['/version'] }),
    'a URL rule grants no resource',
  );
});

const TENANT = 'abc123';
const labels = { 'kubezoo.io/tenant': TENANT };
const shadow = (name: string) => `tenantgate:cluster:${name}`;

/** The tenant's stored bindings (upstream form: prefixed names, shadow subjects) and roles, as the upstream would give them. */
const BINDINGS: ClusterRoleBinding[] = [
  {
    metadata: { name: 'abc123-readers', labels },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'abc123-reader' },
    subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: shadow('abc123-alice') }],
  },
  {
    metadata: { name: 'abc123-devs', labels },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'abc123-deployer' },
    subjects: [{ kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: shadow('abc123:devs') }],
  },
  {
    metadata: { name: 'abc123-robots', labels },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'abc123-reader' },
    subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: shadow('system:serviceaccount:abc123-ci:robot') }],
  },
  // Its role is gone: RBAC visits the next binding.
  {
    metadata: { name: 'abc123-a-dangling', labels },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'abc123-gone' },
    subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: shadow('abc123-alice') }],
  },
  // Neither a subject of another tenant, nor a role outside the prefix, nor another tenant's binding grants anything.
  {
    metadata: { name: 'abc123-foreign', labels },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'abc123-reader' },
    subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: shadow('xyz789-mallory') }],
  },
  {
    metadata: { name: 'abc123-real-role', labels },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
    subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: shadow('abc123-bob') }],
  },
  {
    metadata: { name: 'xyz789-readers', labels },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'abc123-reader' },
    subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: shadow('abc123-carol') }],
  },
  // Real subjects (never written by tenantgate) are no shadow subjects: they apply to nobody.
  {
    metadata: { name: 'abc123-plain', labels },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'abc123-reader' },
    subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'abc123-dave' }],
  },
];
const ROLES: Record<string, PolicyRule[]> = {
  'abc123-reader': [{ verbs: ['get', 'list', 'watch'], apiGroups: [''], resources: ['configmaps', 'pods'] }],
  'abc123-deployer': [
    { verbs: ['*'], apiGroups: ['apps'], resources: ['deployments', 'deployments/scale'] },
    { verbs: ['get'], nonResourceURLs: ['/healthz/*'] },
  ],
  'cluster-admin': [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'] }],
};
const source: TenantRbacSource = {
  bindings: async () => structuredClone(BINDINGS),
  clusterRoleRules: async (name) => ROLES[name] ?? null,
};

t.test("the tenant's ClusterRoleBindings decide, with the apiserver's reason in the tenant's names", async (t) => {
  const list = (resource: string) => ({ resourceAttributes: { verb: 'list', group: '', resource } });
  const cases: [string, ClusterScopeQuestion, boolean, string][] = [
    [
      'a bound user',
      { user: 'abc123-alice', groups: [], ...list('configmaps') },
      true,
      'RBAC: allowed by ClusterRoleBinding "readers" of ClusterRole "reader" to User "alice"',
    ],
    [
      'a bound group',
      {
        user: 'abc123-eve',
        groups: ['abc123:devs'],
        resourceAttributes: { verb: 'update', group: 'apps', resource: 'deployments', subresource: 'scale', name: 'web' },
      },
      true,
      'RBAC: allowed by ClusterRoleBinding "devs" of ClusterRole "deployer" to Group "devs"',
    ],
    [
      'a bound group, a non-resource URL',
      { user: 'abc123-eve', groups: ['abc123:devs'], nonResourceAttributes: { verb: 'get', path: '/healthz/etcd' } },
      true,
      'RBAC: allowed by ClusterRoleBinding "devs" of ClusterRole "deployer" to Group "devs"',
    ],
    [
      'a bound service account',
      { user: 'system:serviceaccount:abc123-ci:robot', groups: ['system:serviceaccounts:abc123-ci'], ...list('pods') },
      true,
      'RBAC: allowed by ClusterRoleBinding "robots" of ClusterRole "reader" to ServiceAccount "robot/ci"',
    ],
    ['what the role does not grant', { user: 'abc123-alice', groups: [], ...list('secrets') }, false, ''],
    ['a user bound to nothing', { user: 'abc123-frank', groups: [], ...list('configmaps') }, false, ''],
    ["another tenant's user named in a binding", { user: 'xyz789-mallory', groups: [], ...list('configmaps') }, false, ''],
    ['a binding to a role outside the prefix', { user: 'abc123-bob', groups: [], ...list('configmaps') }, false, ''],
    ['a binding outside the prefix', { user: 'abc123-carol', groups: [], ...list('configmaps') }, false, ''],
    ['a binding with a real subject', { user: 'abc123-dave', groups: [], ...list('configmaps') }, false, ''],
    [
      'a group of the same name without the tenant prefix',
      { user: 'abc123-eve', groups: ['devs'], resourceAttributes: { verb: 'get', group: 'apps', resource: 'deployments' } },
      false,
      '',
    ],
    [
      'the tenant admin, whatever it asks',
      { user: 'abc123-admin', groups: [], resourceAttributes: { verb: 'delete', group: '', resource: 'nodes' } },
      true,
      '',
    ],
  ];
  for (const [behaviour, question, allowed, reason] of cases) {
    t.same(await decideAtClusterScope(source, TENANT, question), { allowed, reason }, behaviour);
  }
});

t.test('an upstream that cannot be read is an error, never a refusal to cache', async (t) => {
  const down: TenantRbacSource = { bindings: async () => Promise.reject(new Error('down')), clusterRoleRules: async () => null };
  await t.rejects(
    decideAtClusterScope(down, TENANT, { user: 'abc123-alice', groups: [], resourceAttributes: { verb: 'list', group: '', resource: 'pods' } }),
    /down/,
  );
});

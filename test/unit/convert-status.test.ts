import t from 'tap';
import { statusToTenant, stripTenantPrefixes } from '../../lib/convert/status.ts';

const tenant = 'abc123';

function failure(code: number, reason: string, message: string, details?: object) {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, ...(details ? { details } : {}), code };
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

// [what the tenant did, upstream Status, what the tenant must see]
const cases: [string, ReturnType<typeof failure>, ReturnType<typeof failure>][] = [
  [
    'get a namespace that does not exist',
    failure(404, 'NotFound', 'namespaces "abc123-nope" not found', { name: 'abc123-nope', kind: 'namespaces' }),
    failure(404, 'NotFound', 'namespaces "nope" not found', { name: 'nope', kind: 'namespaces' }),
  ],
  [
    'get a configmap that does not exist',
    failure(404, 'NotFound', 'configmaps "settings" not found', { name: 'settings', kind: 'configmaps' }),
    failure(404, 'NotFound', 'configmaps "settings" not found', { name: 'settings', kind: 'configmaps' }),
  ],
  [
    'get a custom resource that does not exist',
    failure(404, 'NotFound', 'widgets.abc123-example.com "w1" not found', { name: 'w1', group: 'abc123-example.com', kind: 'widgets' }),
    failure(404, 'NotFound', 'widgets.example.com "w1" not found', { name: 'w1', group: 'example.com', kind: 'widgets' }),
  ],
  [
    'get a CRD that does not exist',
    failure(404, 'NotFound', 'customresourcedefinitions.apiextensions.k8s.io "widgets.abc123-example.com" not found', {
      name: 'widgets.abc123-example.com',
      group: 'apiextensions.k8s.io',
      kind: 'customresourcedefinitions',
    }),
    failure(404, 'NotFound', 'customresourcedefinitions.apiextensions.k8s.io "widgets.example.com" not found', {
      name: 'widgets.example.com',
      group: 'apiextensions.k8s.io',
      kind: 'customresourcedefinitions',
    }),
  ],
  [
    'create a namespace that exists',
    failure(409, 'AlreadyExists', 'namespaces "abc123-dev" already exists', { name: 'abc123-dev', kind: 'namespaces' }),
    failure(409, 'AlreadyExists', 'namespaces "dev" already exists', { name: 'dev', kind: 'namespaces' }),
  ],
  [
    'create a ClusterRole that exists',
    failure(409, 'AlreadyExists', 'clusterroles.rbac.authorization.k8s.io "abc123-reader" already exists', {
      name: 'abc123-reader',
      group: 'rbac.authorization.k8s.io',
      kind: 'clusterroles',
    }),
    failure(409, 'AlreadyExists', 'clusterroles.rbac.authorization.k8s.io "reader" already exists', {
      name: 'reader',
      group: 'rbac.authorization.k8s.io',
      kind: 'clusterroles',
    }),
  ],
  [
    'create a custom resource while it is being deleted',
    failure(409, 'AlreadyExists', 'object is being deleted: widgets.abc123-example.com "w1" already exists', {
      name: 'w1',
      group: 'abc123-example.com',
      kind: 'widgets',
    }),
    failure(409, 'AlreadyExists', 'object is being deleted: widgets.example.com "w1" already exists', { name: 'w1', group: 'example.com', kind: 'widgets' }),
  ],
  [
    'a user without RBAC gets a configmap',
    failure(
      403,
      'Forbidden',
      'configmaps "x" is forbidden: User "abc123-admin" cannot get resource "configmaps" in API group "" in the namespace "abc123-default"',
      { name: 'x', kind: 'configmaps' },
    ),
    failure(403, 'Forbidden', 'configmaps "x" is forbidden: User "admin" cannot get resource "configmaps" in API group "" in the namespace "default"', {
      name: 'x',
      kind: 'configmaps',
    }),
  ],
  [
    'a service account lists pods in another namespace',
    failure(
      403,
      'Forbidden',
      'pods is forbidden: User "system:serviceaccount:abc123-ci:builder" cannot list resource "pods" in API group "" in the namespace "abc123-prod"',
      { kind: 'pods' },
    ),
    failure(
      403,
      'Forbidden',
      'pods is forbidden: User "system:serviceaccount:ci:builder" cannot list resource "pods" in API group "" in the namespace "prod"',
      {
        kind: 'pods',
      },
    ),
  ],
  [
    'a user lists a custom resource at the cluster scope',
    failure(
      403,
      'Forbidden',
      'widgets.abc123-example.com is forbidden: User "abc123-dev" cannot list resource "widgets" in API group "abc123-example.com" at the cluster scope',
      { group: 'abc123-example.com', kind: 'widgets' },
    ),
    failure(403, 'Forbidden', 'widgets.example.com is forbidden: User "dev" cannot list resource "widgets" in API group "example.com" at the cluster scope', {
      group: 'example.com',
      kind: 'widgets',
    }),
  ],
  [
    'a user gets a namespace',
    failure(
      403,
      'Forbidden',
      'namespaces "abc123-prod" is forbidden: User "abc123-dev" cannot get resource "namespaces" in API group "" in the namespace "abc123-prod"',
      { name: 'abc123-prod', kind: 'namespaces' },
    ),
    failure(403, 'Forbidden', 'namespaces "prod" is forbidden: User "dev" cannot get resource "namespaces" in API group "" in the namespace "prod"', {
      name: 'prod',
      kind: 'namespaces',
    }),
  ],
  [
    'a user reads a non-resource path',
    failure(403, 'Forbidden', 'forbidden: User "abc123-dev" cannot get path "/apis/abc123-example.com"', {}),
    failure(403, 'Forbidden', 'forbidden: User "dev" cannot get path "/apis/example.com"', {}),
  ],
  [
    'a user grants permissions it does not hold',
    failure(
      403,
      'Forbidden',
      'clusterroles.rbac.authorization.k8s.io "abc123-reader" is forbidden: user "abc123-dev" (groups=["abc123:developers" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:["abc123-example.com"], Resources:["widgets"], Verbs:["get"]}',
      { name: 'abc123-reader', group: 'rbac.authorization.k8s.io', kind: 'clusterroles' },
    ),
    failure(
      403,
      'Forbidden',
      'clusterroles.rbac.authorization.k8s.io "reader" is forbidden: user "dev" (groups=["developers" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:["example.com"], Resources:["widgets"], Verbs:["get"]}',
      { name: 'reader', group: 'rbac.authorization.k8s.io', kind: 'clusterroles' },
    ),
  ],
  [
    'create in a namespace that is being deleted',
    failure(403, 'Forbidden', 'configmaps "x" is forbidden: unable to create new content in namespace abc123-dev because it is being terminated', {
      name: 'x',
      kind: 'configmaps',
      causes: [{ reason: 'NamespaceTerminating', message: 'namespace abc123-dev is being terminated', field: 'metadata.namespace' }],
    }),
    failure(403, 'Forbidden', 'configmaps "x" is forbidden: unable to create new content in namespace dev because it is being terminated', {
      name: 'x',
      kind: 'configmaps',
      causes: [{ reason: 'NamespaceTerminating', message: 'namespace dev is being terminated', field: 'metadata.namespace' }],
    }),
  ],
  [
    'a pod names a service account that does not exist',
    failure(403, 'Forbidden', 'pods "web" is forbidden: error looking up service account abc123-dev/builder: serviceaccount "builder" not found', {
      name: 'web',
      kind: 'pods',
    }),
    failure(403, 'Forbidden', 'pods "web" is forbidden: error looking up service account dev/builder: serviceaccount "builder" not found', {
      name: 'web',
      kind: 'pods',
    }),
  ],
  [
    'create a namespace with an invalid name',
    failure(
      422,
      'Invalid',
      "Namespace \"abc123-Dev\" is invalid: metadata.name: Invalid value: \"abc123-Dev\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
      {
        name: 'abc123-Dev',
        kind: 'Namespace',
        causes: [
          {
            reason: 'FieldValueInvalid',
            message:
              "Invalid value: \"abc123-Dev\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            field: 'metadata.name',
          },
        ],
      },
    ),
    failure(
      422,
      'Invalid',
      "Namespace \"Dev\" is invalid: metadata.name: Invalid value: \"Dev\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
      {
        name: 'Dev',
        kind: 'Namespace',
        causes: [
          {
            reason: 'FieldValueInvalid',
            message:
              "Invalid value: \"Dev\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            field: 'metadata.name',
          },
        ],
      },
    ),
  ],
  [
    'create a CRD with a bad group',
    failure(
      422,
      'Invalid',
      'CustomResourceDefinition.apiextensions.k8s.io "widgets.abc123-example" is invalid: spec.group: Invalid value: "abc123-example": should be a domain with at least one dot',
      {
        name: 'widgets.abc123-example',
        group: 'apiextensions.k8s.io',
        kind: 'CustomResourceDefinition',
        causes: [{ reason: 'FieldValueInvalid', message: 'Invalid value: "abc123-example": should be a domain with at least one dot', field: 'spec.group' }],
      },
    ),
    failure(
      422,
      'Invalid',
      'CustomResourceDefinition.apiextensions.k8s.io "widgets.example" is invalid: spec.group: Invalid value: "example": should be a domain with at least one dot',
      {
        name: 'widgets.example',
        group: 'apiextensions.k8s.io',
        kind: 'CustomResourceDefinition',
        causes: [{ reason: 'FieldValueInvalid', message: 'Invalid value: "example": should be a domain with at least one dot', field: 'spec.group' }],
      },
    ),
  ],
  [
    'update a namespace with a stale resourceVersion',
    failure(
      409,
      'Conflict',
      'Operation cannot be fulfilled on namespaces "abc123-dev": the object has been modified; please apply your changes to the latest version and try again',
      { name: 'abc123-dev', kind: 'namespaces' },
    ),
    failure(
      409,
      'Conflict',
      'Operation cannot be fulfilled on namespaces "dev": the object has been modified; please apply your changes to the latest version and try again',
      {
        name: 'dev',
        kind: 'namespaces',
      },
    ),
  ],
  [
    'update a custom resource with a stale resourceVersion',
    failure(
      409,
      'Conflict',
      'Operation cannot be fulfilled on widgets.abc123-example.com "w1": the object has been modified; please apply your changes to the latest version and try again',
      {
        name: 'w1',
        group: 'abc123-example.com',
        kind: 'widgets',
      },
    ),
    failure(
      409,
      'Conflict',
      'Operation cannot be fulfilled on widgets.example.com "w1": the object has been modified; please apply your changes to the latest version and try again',
      {
        name: 'w1',
        group: 'example.com',
        kind: 'widgets',
      },
    ),
  ],
  [
    "a webhook in the tenant's namespace cannot be reached",
    failure(
      500,
      'InternalError',
      'Internal error occurred: failed calling webhook "check.example.com": failed to call webhook: Post "https://hook.abc123-infra.svc:443/check?timeout=10s": service "hook" not found',
      {
        causes: [
          {
            message:
              'failed calling webhook "check.example.com": failed to call webhook: Post "https://hook.abc123-infra.svc:443/check?timeout=10s": service "hook" not found',
          },
        ],
      },
    ),
    failure(
      500,
      'InternalError',
      'Internal error occurred: failed calling webhook "check.example.com": failed to call webhook: Post "https://hook.infra.svc:443/check?timeout=10s": service "hook" not found',
      {
        causes: [
          {
            message:
              'failed calling webhook "check.example.com": failed to call webhook: Post "https://hook.infra.svc:443/check?timeout=10s": service "hook" not found',
          },
        ],
      },
    ),
  ],
  [
    'a watch resumes from an expired resourceVersion',
    failure(410, 'Expired', 'too old resource version: 12 (345)'),
    failure(410, 'Expired', 'too old resource version: 12 (345)'),
  ],
];

t.test('real apiserver Status messages, as the tenant sees them', async (t) => {
  for (const [what, upstream, expected] of cases) {
    t.same(statusToTenant(deepFreeze(structuredClone(upstream)), tenant), expected, what);
  }
});

t.test("shared upstream names and other tenants' names are never touched", async (t) => {
  const untouched = [
    'namespaces "kube-system" not found',
    'namespaces "default" not found',
    'namespaces "def456-prod" not found',
    'User "def456-admin" cannot get resource "pods"',
    'groups=["def456:developers" "system:authenticated" "system:masters"]',
    'User "system:serviceaccount:kube-system:generic-garbage-collector"',
    'priorityclasses.scheduling.k8s.io "system-node-critical" not found',
    'nodes "xabc123-node" not found',
    'configmaps "my-abc123-x" not found',
    'configmaps "abc123x-y" not found',
    'configmaps "abc123-" not found',
    'abc123 is the tenant, abc123:',
    'User "abc123" cannot',
  ];
  for (const message of untouched) t.equal(stripTenantPrefixes(message, tenant), message, message);
});

t.test('each prefix goes once: a tenant name that itself looks prefixed survives', async (t) => {
  t.equal(stripTenantPrefixes('namespaces "abc123-abc123-x" not found', tenant), 'namespaces "abc123-x" not found');
  t.equal(stripTenantPrefixes('namespaces "abc123-def456-x" not found', tenant), 'namespaces "def456-x" not found');
  t.equal(stripTenantPrefixes('"abc123-a","abc123-b" abc123-c', tenant), '"a","b" c');
  t.equal(stripTenantPrefixes('abc123-x', tenant), 'x', 'at the very start');
  t.equal(stripTenantPrefixes('', tenant), '');
});

t.test('identities: users, groups and service accounts', async (t) => {
  t.equal(stripTenantPrefixes('User "abc123-admin"', tenant), 'User "admin"');
  t.equal(stripTenantPrefixes('groups=["abc123:developers" "abc123:oidc:ops"]', tenant), 'groups=["developers" "oidc:ops"]');
  t.equal(stripTenantPrefixes('User "system:serviceaccount:abc123-ns:sa"', tenant), 'User "system:serviceaccount:ns:sa"');
  t.equal(stripTenantPrefixes('group "system:serviceaccounts:abc123-ns"', tenant), 'group "system:serviceaccounts:ns"');
});

t.test('the ids that trap naive prefix matching: defaul and system', async (t) => {
  // `default` is not `defaul-` anything
  t.equal(stripTenantPrefixes('namespaces "default" not found', 'defaul'), 'namespaces "default" not found');
  t.equal(stripTenantPrefixes('namespaces "defaul-default" not found', 'defaul'), 'namespaces "default" not found');
  // for the tenant `system`, `system:` starts Kubernetes' own identities, never the tenant's groups
  t.equal(
    stripTenantPrefixes('User "system:serviceaccount:system-ci:sa" (groups=["system:authenticated" "system:serviceaccounts"])', 'system'),
    'User "system:serviceaccount:ci:sa" (groups=["system:authenticated" "system:serviceaccounts"])',
  );
  t.equal(stripTenantPrefixes('User "system-admin"', 'system'), 'User "admin"');
  t.equal(stripTenantPrefixes('User "system:kube-scheduler"', 'system'), 'User "system:kube-scheduler"');
});

t.test("a namespaced object's own name is kept when the caller says the kind is namespaced", async (t) => {
  const isNamespaced = (kind: string) => ['configmaps', 'ConfigMap', 'pods'].includes(kind);
  const upstream = failure(
    403,
    'Forbidden',
    'configmaps "abc123-cm" is forbidden: User "abc123-admin" cannot get resource "configmaps" in API group "" in the namespace "abc123-cm"',
    { name: 'abc123-cm', kind: 'configmaps' },
  );
  t.same(
    statusToTenant(upstream, tenant, { isNamespaced }),
    failure(403, 'Forbidden', 'configmaps "abc123-cm" is forbidden: User "admin" cannot get resource "configmaps" in API group "" in the namespace "cm"', {
      name: 'abc123-cm',
      kind: 'configmaps',
    }),
    'the name stays, the namespace of the same spelling does not',
  );
  const invalid = failure(422, 'Invalid', 'ConfigMap "abc123-cm" is invalid: metadata.name: Invalid value: "abc123-cm": too long', {
    name: 'abc123-cm',
    kind: 'ConfigMap',
    causes: [{ reason: 'FieldValueInvalid', message: 'Invalid value: "abc123-cm": too long', field: 'metadata.name' }],
  });
  t.same(statusToTenant(invalid, tenant, { isNamespaced }), invalid, 'Invalid uses the Kind');
  // a namespace that is missing while creating a pod: details name a namespace, not the pod
  const missing = failure(404, 'NotFound', 'namespaces "abc123-dev" not found', { name: 'abc123-dev', kind: 'namespaces' });
  t.same(statusToTenant(missing, tenant, { isNamespaced }), failure(404, 'NotFound', 'namespaces "dev" not found', { name: 'dev', kind: 'namespaces' }));
  // the group the callback sees is the tenant's
  const seen: string[] = [];
  statusToTenant(failure(404, 'NotFound', 'x', { name: 'w', group: 'abc123-example.com', kind: 'widgets' }), tenant, {
    isNamespaced: (kind, group) => {
      seen.push(`${kind}.${group}`);
      return true;
    },
  });
  t.same(seen, ['widgets.example.com']);
});

t.test("details.group is un-prefixed only when it is the tenant's", async (t) => {
  for (const [group, expected] of [
    ['abc123-example.com', 'example.com'],
    ['def456-example.com', 'def456-example.com'],
    ['apps', 'apps'],
    ['', ''],
  ] as const) {
    t.equal(statusToTenant(failure(404, 'NotFound', 'm', { group }), tenant).details.group, expected, group || '(core)');
  }
});

t.test('anything that is not a Status object passes through unchanged', async (t) => {
  for (const value of [null, undefined, 'abc123-x', 42, ['abc123-x']]) t.equal(statusToTenant(value, tenant), value);
  t.same(statusToTenant({ kind: 'Status', status: 'Success', metadata: {} }, tenant), { kind: 'Status', status: 'Success', metadata: {} });
  t.same(statusToTenant({ message: 'abc123-x', details: null }, tenant), { message: 'x', details: null });
  t.same(statusToTenant({ details: { causes: [null, 'abc123-x', { field: 'abc123-f' }] } }, tenant), {
    details: { causes: [null, 'abc123-x', { field: 'f' }] },
  });
  t.same(
    statusToTenant({ details: { name: 'abc123-n', uid: 'abc123-u', retryAfterSeconds: 1, kind: 'namespaces' } }, tenant),
    { details: { name: 'n', uid: 'abc123-u', retryAfterSeconds: 1, kind: 'namespaces' } },
    'uid and other details are kept',
  );
});

t.test('generated messages: every tenant name comes back, no other name changes', async (t) => {
  const names = ['default', 'kube-system', 'abc123-x', 'def456-y', 'a.b', 'web-1', 'system:x'];
  const others = ['def456-prod', 'kube-public', 'system:masters', 'xabc123-z'];
  let seed = 11;
  const pick = <T>(list: readonly T[]): T => list[Math.floor(((seed = (seed * 16807) % 2147483647) / 2147483647) * list.length)]!;
  for (let n = 0; n < 300; n++) {
    const name = pick(names);
    const other = pick(others);
    const template = pick([
      (a: string, b: string) => `namespaces "${a}" not found; see "${b}"`,
      (a: string, b: string) => `User "${a}" cannot get resource "pods" in the namespace "${b}"`,
      (a: string, b: string) => `unable to create new content in namespace ${a} because ${b} is being terminated`,
      (a: string, b: string) => `[${a}, ${b}]`,
    ]);
    t.equal(stripTenantPrefixes(template(`abc123-${name}`, other), tenant), template(name, other), `${name} / ${other}`);
  }
});

t.test("an admission policy's refusal quotes the tenant's expression as written, not as the upstream evaluates it", async (t) => {
  const upstreamExpression = "namespaceObject.metadata.name.substring(namespaceObject.metadata.name.size() < 7 ? 0 : 7) == 'team'";
  const upstream = {
    kind: 'Status',
    status: 'Failure',
    message: `configmaps "c" is forbidden: ValidatingAdmissionPolicy 'abc123-only-team' with binding 'abc123-only-team' denied request: failed expression: ${upstreamExpression}`,
    reason: 'Forbidden',
    code: 403,
  };
  t.equal(
    statusToTenant(upstream, tenant).message,
    `configmaps "c" is forbidden: ValidatingAdmissionPolicy 'only-team' with binding 'only-team' denied request: failed expression: namespaceObject.metadata.name == 'team'`,
  );
});

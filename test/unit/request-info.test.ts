import t from 'tap';
import { parseRequestInfo, type RequestInfo } from '../../lib/convert/request-info.ts';
import { StatusError } from '../../lib/errors/status-error.ts';

type Expected = Partial<RequestInfo>;

function info(method: string, target: string): RequestInfo {
  const q = target.indexOf('?');
  return parseRequestInfo(method, q === -1 ? target : target.slice(0, q), new URLSearchParams(q === -1 ? '' : target.slice(q + 1)));
}

// Each case names only the fields it is about.
function check(t: { same(found: unknown, wanted: unknown, message: string): boolean }, cases: [string, string, Expected][]): void {
  for (const [method, target, expected] of cases) {
    const got = info(method, target);
    const picked: Record<string, unknown> = {};
    for (const key of Object.keys(expected)) picked[key] = got[key as keyof RequestInfo];
    t.same(picked, expected, `${method} ${target}`);
  }
}

t.test("the apiserver's own table of resource paths (requestinfo_test.go)", async (t) => {
  const ns = 'other';
  check(t, [
    [
      'GET',
      '/api/v1/namespaces',
      { verb: 'list', apiPrefix: 'api', apiGroup: '', apiVersion: 'v1', namespace: '', resource: 'namespaces', name: '', parts: ['namespaces'] },
    ],
    ['GET', `/api/v1/namespaces/${ns}`, { verb: 'get', namespace: ns, resource: 'namespaces', name: ns, subresource: '', parts: ['namespaces', ns] }],
    ['GET', `/api/v1/namespaces/${ns}/pods`, { verb: 'list', namespace: ns, resource: 'pods', name: '', parts: ['pods'] }],
    ['GET', `/api/v1/namespaces/${ns}/pods/foo`, { verb: 'get', namespace: ns, resource: 'pods', name: 'foo', parts: ['pods', 'foo'] }],
    ['HEAD', `/api/v1/namespaces/${ns}/pods/foo`, { verb: 'get', resource: 'pods', name: 'foo' }],
    ['GET', '/api/v1/pods', { verb: 'list', namespace: '', resource: 'pods', name: '' }],
    ['HEAD', '/api/v1/pods', { verb: 'list', resource: 'pods' }],
    ['GET', `/api/v1/namespaces/${ns}/pods/foo`, { verb: 'get', resource: 'pods', name: 'foo' }],
    ['GET', `/api/v1/namespaces/${ns}/pods`, { verb: 'list', resource: 'pods' }],
    ['GET', '/api/v1/namespaces/other/pods?watch=true', { verb: 'watch', namespace: 'other', resource: 'pods' }],
    ['GET', '/api/v1/namespaces/other/pods?watch=1', { verb: 'watch' }],
    ['GET', '/api/v1/namespaces/other/pods?watch=0', { verb: 'list' }],
    ['GET', '/api/v1/namespaces/other/pods?watch=false', { verb: 'list' }],
    ['GET', '/api/v1/namespaces/other/pods?watch=False', { verb: 'list' }],
    ['GET', '/api/v1/namespaces/other/pods?watch', { verb: 'watch' }],
    ['GET', '/api/v1/namespaces/other/pods?watch=yes', { verb: 'watch' }],
    ['GET', '/api/v1/namespaces/other/pods?watch=false&watch=true', { verb: 'list' }],
    // a watch parameter on a named GET does nothing: a get stays a get
    ['GET', '/api/v1/namespaces/other/pods/foo?watch=true', { verb: 'get', name: 'foo' }],
    ['GET', '/api/v1/watch/pods', { verb: 'watch', namespace: '', resource: 'pods', name: '', parts: ['pods'] }],
    ['GET', '/api/v1/watch/namespaces/other/pods', { verb: 'watch', namespace: 'other', resource: 'pods' }],
    ['GET', '/api/v1/watch/namespaces/other/pods/foo', { verb: 'watch', namespace: 'other', resource: 'pods', name: 'foo' }],
    ['GET', '/api/v1/watch/namespaces', { verb: 'watch', namespace: '', resource: 'namespaces' }],
    ['GET', '/api/v1/watch/namespaces/other', { verb: 'watch', namespace: 'other', resource: 'namespaces', name: 'other' }],
    ['GET', '/api/v1/proxy/namespaces/other/pods/foo', { verb: 'proxy', namespace: 'other', resource: 'pods', name: 'foo' }],
    ['GET', '/api/v1/proxy/nodes/node-1/metrics', { verb: 'proxy', resource: 'nodes', name: 'node-1', subresource: '', parts: ['nodes', 'node-1', 'metrics'] }],
    ['POST', '/api/v1/namespaces/other/pods', { verb: 'create', namespace: 'other', resource: 'pods', name: '' }],
    ['PUT', '/api/v1/namespaces/other/pods/foo', { verb: 'update', name: 'foo' }],
    ['PATCH', '/api/v1/namespaces/other/pods/foo', { verb: 'patch', name: 'foo' }],
    ['DELETE', '/api/v1/namespaces/other/pods/foo', { verb: 'delete', name: 'foo' }],
    ['DELETE', '/api/v1/namespaces/other/pods', { verb: 'deletecollection', resource: 'pods', name: '' }],
    ['DELETE', '/apis/rbac.authorization.k8s.io/v1/clusterroles', { verb: 'deletecollection', resource: 'clusterroles' }],
    ['OPTIONS', '/api/v1/namespaces/other/pods', { isResourceRequest: true, verb: '', resource: 'pods' }],
    ['CONNECT', '/api/v1/namespaces/other/pods/foo/exec', { isResourceRequest: true, verb: '', subresource: 'exec' }],
  ]);
});

t.test('grouped, cluster-scoped and namespaced resources', async (t) => {
  check(t, [
    [
      'GET',
      '/apis/apps/v1/deployments',
      { isResourceRequest: true, verb: 'list', apiPrefix: 'apis', apiGroup: 'apps', apiVersion: 'v1', namespace: '', resource: 'deployments' },
    ],
    ['GET', '/apis/apps/v1/namespaces/default/deployments/web', { verb: 'get', apiGroup: 'apps', namespace: 'default', resource: 'deployments', name: 'web' }],
    [
      'GET',
      '/apis/apps/v1/namespaces/default/deployments/web/scale',
      { verb: 'get', resource: 'deployments', name: 'web', subresource: 'scale', parts: ['deployments', 'web', 'scale'] },
    ],
    ['PUT', '/apis/apps/v1/namespaces/default/deployments/web/status', { verb: 'update', subresource: 'status' }],
    [
      'POST',
      '/apis/rbac.authorization.k8s.io/v1/clusterroles',
      { verb: 'create', apiGroup: 'rbac.authorization.k8s.io', namespace: '', resource: 'clusterroles' },
    ],
    ['GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles/admin', { verb: 'get', resource: 'clusterroles', name: 'admin', namespace: '' }],
    [
      'GET',
      '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com',
      { verb: 'get', resource: 'customresourcedefinitions', name: 'widgets.example.com' },
    ],
    ['GET', '/apis/example.com/v1/namespaces/default/widgets', { verb: 'list', apiGroup: 'example.com', resource: 'widgets', namespace: 'default' }],
    ['GET', '/apis/example.com/v1/widgets?watch=true', { verb: 'watch', apiGroup: 'example.com', resource: 'widgets', namespace: '' }],
    ['GET', '/apis/example.com/v1/watch/namespaces/default/widgets/w1', { verb: 'watch', resource: 'widgets', namespace: 'default', name: 'w1' }],
    ['GET', '/api/v1/nodes/node-1', { verb: 'get', resource: 'nodes', name: 'node-1', namespace: '' }],
    ['GET', '/api/v1/persistentvolumes', { verb: 'list', resource: 'persistentvolumes' }],
    ['POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', { verb: 'create', resource: 'selfsubjectaccessreviews' }],
    [
      'POST',
      '/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews',
      { verb: 'create', namespace: 'default', resource: 'localsubjectaccessreviews' },
    ],
    ['POST', '/apis/authentication.k8s.io/v1/tokenreviews', { verb: 'create', resource: 'tokenreviews' }],
    [
      'POST',
      '/api/v1/namespaces/default/serviceaccounts/builder/token',
      { verb: 'create', resource: 'serviceaccounts', name: 'builder', subresource: 'token' },
    ],
    ['GET', '/api/v1/namespaces/default/events', { verb: 'list', resource: 'events', namespace: 'default' }],
    ['GET', '/apis/events.k8s.io/v1/events', { verb: 'list', apiGroup: 'events.k8s.io', resource: 'events', namespace: '' }],
  ]);
});

t.test('namespaces: status and finalize are subresources, anything else is a resource in the namespace', async (t) => {
  check(t, [
    [
      'GET',
      '/api/v1/namespaces/prod/status',
      { verb: 'get', namespace: 'prod', resource: 'namespaces', name: 'prod', subresource: 'status', parts: ['namespaces', 'prod', 'status'] },
    ],
    ['PUT', '/api/v1/namespaces/prod/finalize', { verb: 'update', namespace: 'prod', resource: 'namespaces', name: 'prod', subresource: 'finalize' }],
    ['PATCH', '/api/v1/namespaces/prod/status', { verb: 'patch', resource: 'namespaces', subresource: 'status' }],
    ['DELETE', '/api/v1/namespaces/prod', { verb: 'delete', namespace: 'prod', resource: 'namespaces', name: 'prod' }],
    ['GET', '/api/v1/namespaces/prod/configmaps', { verb: 'list', namespace: 'prod', resource: 'configmaps', name: '' }],
    ['GET', '/api/v1/namespaces/status/pods', { verb: 'list', namespace: 'status', resource: 'pods' }],
    // a namespace called "status" is still a namespace, and its status subresource works
    ['GET', '/api/v1/namespaces/status/status', { namespace: 'status', resource: 'namespaces', name: 'status', subresource: 'status' }],
    // a resource literally called "namespaces" inside a namespace
    ['GET', '/api/v1/namespaces/prod/namespaces', { namespace: 'prod', resource: 'namespaces', name: '', verb: 'list' }],
    ['GET', '/apis/example.com/v1/namespaces', { verb: 'list', apiGroup: 'example.com', resource: 'namespaces', namespace: '' }],
  ]);
});

t.test('subresources of pods: exec, attach, portforward, log, proxy, binding, eviction', async (t) => {
  check(t, [
    ['POST', '/api/v1/namespaces/ns/pods/web/exec?command=ls&stdout=true', { verb: 'create', resource: 'pods', name: 'web', subresource: 'exec' }],
    ['GET', '/api/v1/namespaces/ns/pods/web/exec?command=ls', { verb: 'get', subresource: 'exec' }],
    ['POST', '/api/v1/namespaces/ns/pods/web/attach', { verb: 'create', subresource: 'attach' }],
    ['GET', '/api/v1/namespaces/ns/pods/web/portforward', { verb: 'get', subresource: 'portforward' }],
    ['GET', '/api/v1/namespaces/ns/pods/web/log?follow=true', { verb: 'get', subresource: 'log' }],
    ['GET', '/api/v1/namespaces/ns/pods/web/proxy/metrics/x', { verb: 'get', subresource: 'proxy', parts: ['pods', 'web', 'proxy', 'metrics', 'x'] }],
    ['GET', '/api/v1/namespaces/ns/services/https:web:443/proxy/', { verb: 'get', resource: 'services', name: 'https:web:443', subresource: 'proxy' }],
    ['POST', '/api/v1/namespaces/ns/pods/web/binding', { verb: 'create', subresource: 'binding' }],
    ['POST', '/api/v1/namespaces/ns/pods/web/eviction', { verb: 'create', subresource: 'eviction' }],
    ['PATCH', '/api/v1/namespaces/ns/pods/web/ephemeralcontainers', { verb: 'patch', subresource: 'ephemeralcontainers' }],
  ]);
});

t.test('non-resource requests keep the lower-case method as their verb', async (t) => {
  for (const [method, path] of [
    ['GET', '/'],
    ['GET', '/api'],
    ['GET', '/api/v1'],
    ['GET', '/apis'],
    ['GET', '/apis/apps'],
    ['GET', '/version'],
    ['GET', '/openapi/v2'],
    ['GET', '/openapi/v3'],
    ['GET', '/openapi/v3/apis/apps/v1?hash=abc'],
    ['GET', '/healthz'],
    ['GET', '/healthz/etcd'],
    ['GET', '/livez'],
    ['GET', '/readyz/ping'],
    ['GET', '/metrics'],
    ['GET', '/.well-known/openid-configuration'],
    ['GET', '/openid/v1/jwks'],
    ['POST', '/apis'],
    ['DELETE', '/api/v1'],
    ['GET', '/logs/kube-apiserver.log'],
    ['GET', '/apiz/v1/pods'],
  ] as const) {
    const got = info(method, path);
    t.same(
      { isResourceRequest: got.isResourceRequest, verb: got.verb, apiPrefix: got.apiPrefix, resource: got.resource, parts: got.parts },
      { isResourceRequest: false, verb: method.toLowerCase(), apiPrefix: '', resource: '', parts: [] },
      `${method} ${path}`,
    );
  }
  // /apis/{group}/{version} is discovery, yet the apiserver has already set apiPrefix "apis" by then
  check(t, [
    ['GET', '/apis/apps/v1', { isResourceRequest: false, verb: 'get', apiPrefix: 'apis', apiGroup: '', apiVersion: '', parts: [] }],
    ['GET', '/apis/example.com/v1?watch=true', { isResourceRequest: false, verb: 'get', apiPrefix: 'apis' }],
    ['POST', '/apis/apps/v1', { isResourceRequest: false, verb: 'post' }],
  ]);
  t.equal(info('PATCH', '/healthz').verb, 'patch');
  t.equal(info('get', '/api/v1/pods').verb, '', 'methods are case-sensitive: "get" is not GET');
  t.equal(info('get', '/healthz').verb, 'get');
  t.equal(info('toString', '/api/v1/pods').verb, '', 'no method name reaches past the table');
});

t.test("paths are percent-decoded before they are split, as Go's URL.Path is", async (t) => {
  check(t, [
    ['GET', '/api/v1/namespaces/my%2Dns/pods/a%3Ab', { path: '/api/v1/namespaces/my-ns/pods/a:b', namespace: 'my-ns', name: 'a:b' }],
    // %2F is a separator once decoded: the upstream reads this path the same way
    ['GET', '/api/v1/namespaces/a%2Fb/pods', { namespace: 'a', resource: 'b', name: 'pods', verb: 'get' }],
    ['GET', '/api%2Fv1%2Fpods', { isResourceRequest: true, resource: 'pods', verb: 'list' }],
    ['GET', '/api/v1/namespaces/ns/configmaps/caf%C3%A9', { name: 'café' }],
    ['GET', '/api/v1/namespaces/ns/configmaps/a+b', { name: 'a+b' }],
  ]);
  t.throws(() => info('GET', '/api/v1/namespaces/%zz/pods'), { code: 400, reason: 'BadRequest' });
  t.throws(() => info('GET', '/api/v1/namespaces/%E0%A4%A/pods'), { code: 400 });
  try {
    info('GET', '/api/v1/%');
    t.fail('a lone % is refused');
  } catch (error) {
    t.ok(error instanceof StatusError, 'the refusal is a StatusError');
  }
});

t.test('slashes and short paths: trimmed at both ends, empty inner segments kept', async (t) => {
  check(t, [
    ['GET', '/api/v1/pods/', { resource: 'pods', verb: 'list', parts: ['pods'] }],
    ['GET', '//api/v1/pods//', { resource: 'pods', verb: 'list' }],
    ['GET', '/api//v1/pods', { isResourceRequest: true, apiVersion: '', resource: 'v1', name: 'pods', verb: 'get' }],
    ['GET', '/api/v1/namespaces/', { resource: 'namespaces', namespace: '', verb: 'list' }],
    ['GET', '/api/v1/namespaces//pods', { namespace: '', resource: 'pods', verb: 'list' }],
    ['GET', '/apis/apps/v1/', { isResourceRequest: false, verb: 'get', apiPrefix: 'apis' }],
    ['GET', '/apis//v1/deployments', { isResourceRequest: true, apiGroup: '', apiVersion: 'v1', resource: 'deployments' }],
    ['GET', '', { isResourceRequest: false, verb: 'get', parts: [] }],
    ['GET', '/api/v1/pods/a/b/c/d', { resource: 'pods', name: 'a', subresource: 'b', parts: ['pods', 'a', 'b', 'c', 'd'] }],
  ]);
});

t.test("a bare /watch or /proxy is the apiserver's 500, not a guess", async (t) => {
  for (const path of ['/api/v1/watch', '/api/v1/watch/', '/api/v1/proxy', '/apis/apps/v1/watch']) {
    t.throws(() => info('GET', path), { code: 500, reason: 'InternalError', message: /unable to determine kind and namespace/ }, path);
  }
  // ...but a resource called "watch" inside a namespace is a resource
  check(t, [['GET', '/api/v1/namespaces/ns/watch', { resource: 'watch', verb: 'list' }]]);
});

t.test('a list or watch with fieldSelector metadata.name=X names X, as the apiserver does for authorization', async (t) => {
  check(t, [
    ['GET', '/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Dfoo', { verb: 'list', name: 'foo', parts: ['configmaps'] }],
    ['GET', '/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3D%3Dfoo&watch=true', { verb: 'watch', name: 'foo' }],
    ['GET', '/api/v1/configmaps?fieldSelector=metadata.name!%3Dfoo', { verb: 'list', name: '' }],
    ['GET', '/api/v1/configmaps?fieldSelector=metadata.namespace%3Dns,metadata.name%3Dfoo', { verb: 'list', name: 'foo' }],
    // the terms are sorted first: the smallest metadata.name term wins
    ['GET', '/api/v1/configmaps?fieldSelector=metadata.name%3Db,metadata.name%3Da', { name: 'a' }],
    // ...sorted as written: `metadata.name==b` sorts before `metadata.name=c`
    ['GET', '/api/v1/configmaps?fieldSelector=metadata.name%3D%3Db,metadata.name%3Dc', { name: 'b' }],
    // names that cannot be a path segment are not taken
    ['GET', '/api/v1/configmaps?fieldSelector=metadata.name%3Da/b', { name: '' }],
    ['GET', '/api/v1/configmaps?fieldSelector=metadata.name%3D..', { name: '' }],
    ['GET', '/api/v1/configmaps?fieldSelector=metadata.name%3Da%25b', { name: '' }],
    ['GET', '/api/v1/configmaps?fieldSelector=metadata.name%3D', { name: '', verb: 'list' }],
    // any decoding failure of the list options: list (or watch), and no name
    ['GET', '/api/v1/configmaps?fieldSelector=metadata.name%3Dfoo&limit=x', { verb: 'list', name: '' }],
    ['GET', '/api/v1/configmaps?fieldSelector=metadata.name%3Dfoo&limit=', { verb: 'list', name: '' }],
    ['GET', '/api/v1/configmaps?fieldSelector=metadata.name%3Dfoo&limit=9223372036854775808', { name: '' }],
    ['GET', '/api/v1/configmaps?fieldSelector=metadata.name%3Dfoo&limit=-5', { name: 'foo' }],
    ['GET', '/api/v1/configmaps?fieldSelector=metadata.name%3Dfoo&timeoutSeconds=1.5&watch=1', { verb: 'watch', name: '' }],
    ['GET', '/api/v1/configmaps?fieldSelector=metadata.name%3Dfoo&labelSelector=a%20in', { name: '' }],
    ['GET', '/api/v1/configmaps?fieldSelector=metadata.name%3Dfoo&labelSelector=app%3Dweb', { name: 'foo' }],
    ['GET', '/api/v1/configmaps?fieldSelector=metadata.name%3Dfoo,bad', { verb: 'list', name: '' }],
    ['GET', '/api/v1/configmaps?fieldSelector=metadata.name%3Dfo\\o', { name: '' }],
    // the deprecated /watch/ path never reads the query: no name from it
    ['GET', '/api/v1/watch/configmaps?fieldSelector=metadata.name%3Dfoo', { verb: 'watch', name: '' }],
    // a DELETE of a collection stays deletecollection with no name
    ['DELETE', '/api/v1/namespaces/ns/configmaps?fieldSelector=metadata.name%3Dfoo', { verb: 'deletecollection', name: '' }],
  ]);
});

t.test('path holds the decoded path without the query', async (t) => {
  t.equal(info('GET', '/api/v1/namespaces/a%20b/pods?limit=1').path, '/api/v1/namespaces/a b/pods');
  t.equal(info('GET', '/healthz?verbose').path, '/healthz');
});

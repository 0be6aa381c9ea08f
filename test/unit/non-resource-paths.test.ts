// A tenant's discovery and OpenAPI paths: only the forms the apiserver serves, re-encoded segment by segment, a CRD
// group under the tenant's own prefix; and which requests may take the upgrade path.
import t from 'tap';
import { parseRequestInfo } from '../../lib/convert/request-info.ts';
import { upstreamNonResourcePath } from '../../lib/convert/request.ts';
import { isUpgradableRequest } from '../../lib/request/upgrade.ts';

t.test('discovery, version and OpenAPI paths map to the upstream, a CRD group under the tenant prefix', async (t) => {
  const cases: [string, string][] = [
    ['/api', '/api'],
    ['/api/', '/api'],
    ['/api/v1', '/api/v1'],
    ['/apis', '/apis'],
    ['/apis/apps', '/apis/apps'],
    ['/apis/apps/v1', '/apis/apps/v1'],
    ['/apis/example.com/v1', '/apis/alpha1-example.com/v1'],
    ['/version', '/version'],
    ['/openapi/v2', '/openapi/v2'],
    ['/openapi/v3', '/openapi/v3'],
    ['/openapi/v3/api/v1', '/openapi/v3/api/v1'],
    ['/openapi/v3/apis/apps/v1', '/openapi/v3/apis/apps/v1'],
    ['/openapi/v3/apis/example.com/v1', '/openapi/v3/apis/alpha1-example.com/v1'],
    // Another tenant's group is just a group name of this tenant's: it stays under this tenant's prefix.
    ['/openapi/v3/apis/bravo1-example.com/v1', '/openapi/v3/apis/alpha1-bravo1-example.com/v1'],
    ['/apis/bravo1-example.com', '/apis/alpha1-bravo1-example.com'],
  ];
  for (const [path, upstream] of cases) t.equal(upstreamNonResourcePath(path, 'alpha1'), upstream, path);
});

t.test('whatever a tenant encoded stays inside its segment upstream', async (t) => {
  // (request-target refuses `?` and `#` before this; the mapping must still never let them end the path.)
  t.equal(upstreamNonResourcePath('/openapi/v3/apis/example.com/v1?', 'alpha1'), '/openapi/v3/apis/alpha1-example.com/v1%3F');
  t.equal(upstreamNonResourcePath('/apis/a b', 'alpha1'), '/apis/alpha1-a%20b');
});

t.test('any other non-resource path does not exist for a tenant', async (t) => {
  for (const path of [
    '/',
    '/healthz',
    '/metrics',
    '/logs',
    '/debug/pprof',
    '/apis/apps/v1/extra',
    '/api/v1/x/y',
    '/openapi/v3/apis/apps',
    '/openapi/v3/apis/apps/v1/x',
    '/openapi/v2/x',
    '/openapi/v4',
    '/version/x',
    '/apis//v1',
    '/apisx',
  ]) {
    t.equal(upstreamNonResourcePath(path, 'alpha1'), null, path);
  }
});

t.test('only exec, attach, port-forward and proxy take the upgrade path', async (t) => {
  const info = (method: string, path: string) =>
    parseRequestInfo(method, path, new URLSearchParams(path.includes('?') ? path.slice(path.indexOf('?') + 1) : ''));
  for (const path of [
    '/api/v1/namespaces/default/pods/web/exec',
    '/api/v1/namespaces/default/pods/web/attach',
    '/api/v1/namespaces/default/pods/web/portforward',
    '/api/v1/namespaces/default/pods/web/proxy',
    '/api/v1/namespaces/default/pods/web/proxy/some/path',
    '/api/v1/namespaces/default/services/web/proxy',
    '/api/v1/nodes/n1/proxy',
    '/api/v1/proxy/namespaces/default/pods/web',
  ]) {
    t.ok(isUpgradableRequest(info('GET', path)), path);
  }
  for (const path of [
    '/api/v1/configmaps',
    '/api/v1/namespaces/default/configmaps',
    '/api/v1/namespaces/default/pods',
    '/api/v1/namespaces/default/pods/web',
    '/api/v1/namespaces/default/pods/web/log',
    '/api/v1/namespaces/default/pods/web/status',
    '/api/v1/serviceaccounts',
    '/api/v1/events',
    '/apis/events.k8s.io/v1/events',
    '/apis/example.com/v1/namespaces/default/pods/web/exec',
    '/api/v1/namespaces/default/secrets/exec',
    '/api',
    '/openapi/v3',
  ]) {
    t.notOk(isUpgradableRequest(info('GET', path)), path);
  }
});

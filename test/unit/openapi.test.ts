// The tenant's view of OpenAPI. v2 on a document captured from a 1.36 kube-apiserver (test/fixtures/openapi-v2.json,
// trimmed to a few paths, descriptions and media type lists removed): tenants alpha1 and bravo2 each created the CRD
// widgets.example.com (status and scale subresources); an administrator created gadgets.example.org for nobody.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { openapiIndexToTenant, openapiV2ToTenant } from '../../lib/convert/openapi.ts';

const FIXTURE = readFileSync(new URL('../fixtures/openapi-v2.json', import.meta.url), 'utf8');

interface Operation {
  operationId?: string;
  tags?: string[];
  'x-kubernetes-group-version-kind'?: { group: string; version: string; kind: string };
  responses?: Record<string, { schema?: { $ref?: string } }>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  definitions: Record<string, { 'x-kubernetes-group-version-kind'?: { group: string }[]; properties?: Record<string, any> }>;
  parameters: Record<string, unknown>;
}

const viewOf = (tenant: string, text = FIXTURE) => openapiV2ToTenant(JSON.parse(text), tenant) as unknown as Document;

/** Every `$ref` in the document that points at nothing in it. */
function danglingReferences(doc: Document): string[] {
  const dangling: string[] = [];
  JSON.stringify(doc, (key, value) => {
    if (key === '$ref' && typeof value === 'string') {
      const [, section, name] = /^#\/(\w+)\/(.+)$/.exec(value) ?? [];
      if (section === undefined || !Object.hasOwn((doc as any)[section] ?? {}, name!)) dangling.push(value);
    }
    return value;
  });
  return dangling;
}

t.test("a tenant's own CRD paths and schemas carry its group without the prefix", async (t) => {
  for (const [tenant, other] of [
    ['alpha1', 'bravo2'],
    ['bravo2', 'alpha1'],
  ] as const) {
    const text =
      tenant === 'alpha1'
        ? FIXTURE
        : FIXTURE.replaceAll('alpha1', 'xxxxxx')
            .replaceAll('bravo2', 'alpha1')
            .replaceAll('xxxxxx', 'bravo2')
            .replaceAll('Alpha1', 'Xxxxxx')
            .replaceAll('Bravo2', 'Alpha1')
            .replaceAll('Xxxxxx', 'Bravo2');
    const doc = viewOf(tenant, text);
    const list = doc.paths['/apis/example.com/v1/namespaces/{namespace}/widgets']?.get;
    t.ok(list, `${tenant}: the list path under its own group`);
    t.equal(list?.responses?.['200']?.schema?.$ref, '#/definitions/com.example.v1.WidgetList');
    t.same(list?.['x-kubernetes-group-version-kind'], { group: 'example.com', kind: 'Widget', version: 'v1' });
    t.equal(list?.operationId, 'listExampleComV1NamespacedWidget');
    t.same(list?.tags, ['exampleCom_v1']);
    t.same(doc.definitions['com.example.v1.Widget']?.['x-kubernetes-group-version-kind'], [{ group: 'example.com', kind: 'Widget', version: 'v1' }]);
    t.ok(doc.definitions['com.example.v1.WidgetList']);
    t.ok(doc.paths['/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/scale'], 'subresource paths too');
    t.ok(doc.definitions['io.k8s.api.autoscaling.v1.Scale'], 'with the built-in schemas they use');
    const text2 = JSON.stringify(doc);
    t.notMatch(
      text2,
      new RegExp(`${other}|${tenant}-|${tenant[0]!.toUpperCase()}${tenant.slice(1)}`),
      `${tenant}: neither the other tenant nor its own prefix appears anywhere`,
    );
    t.same(danglingReferences(doc), [], 'every reference resolves');
  }
});

t.test("other tenants' and nobody's custom groups are absent, paths and schemas", async (t) => {
  const doc = viewOf('alpha1');
  t.same(
    Object.keys(doc.paths)
      .filter((path) => /example/.test(path))
      .sort(),
    [
      '/apis/example.com/v1/namespaces/{namespace}/widgets',
      '/apis/example.com/v1/namespaces/{namespace}/widgets/{name}',
      '/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/scale',
      '/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/status',
      '/apis/example.com/v1/widgets',
    ],
  );
  t.same(
    Object.keys(doc.definitions)
      .filter((name) => /example/.test(name))
      .sort(),
    ['com.example.v1.Widget', 'com.example.v1.WidgetList'],
  );
  t.notMatch(JSON.stringify(doc), /Gadget|example\.org|org\.example/);
});

t.test('hidden groups and kinds are absent; their group and version paths too once nothing is left under them', async (t) => {
  const doc = viewOf('alpha1');
  const paths = Object.keys(doc.paths);
  t.same(Object.keys(doc.paths['/apis/apiregistration.k8s.io/v1/apiservices/{name}'] ?? {}).sort(), ['get', 'parameters'], 'APIServices: read-only');
  t.ok(
    paths.some((path) => path.startsWith('/apis/certificates.k8s.io/v1/certificatesigningrequests')),
    "CSRs are the tenant's own",
  );
  t.notOk(paths.includes('/api/v1/componentstatuses'), 'a hidden core kind');
  t.notOk(
    Object.keys(doc.definitions).some((name) => /ComponentStatus/.test(name)),
    'nor their schemas',
  );
  t.ok(paths.includes('/apis/storage.k8s.io/v1/'), 'a version with a visible kind keeps its path');
  t.ok(paths.includes('/api/v1/') && paths.includes('/apis/') && paths.includes('/version/'));
  const deleteOptions = doc.definitions['io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions']?.['x-kubernetes-group-version-kind'] ?? [];
  t.ok(
    deleteOptions.some((gvk) => gvk.group === 'apps'),
    'shared schemas stay',
  );
  t.ok(
    deleteOptions.some((gvk) => gvk.group === 'flowcontrol.apiserver.k8s.io'),
    "flow control is the tenant's (kept as tenantgate's custom resources upstream)",
  );
});

t.test('shared kinds keep their read operations only; unreadable subresources are absent', async (t) => {
  const doc = viewOf('alpha1');
  t.same(Object.keys(doc.paths['/apis/storage.k8s.io/v1/storageclasses/{name}'] ?? {}).sort(), ['get', 'parameters']);
  t.notOk(doc.paths['/api/v1/nodes/{name}/proxy'], 'nodes/proxy');
  t.same(
    Object.keys(doc.paths['/api/v1/namespaces/{namespace}/configmaps'] ?? {}).sort(),
    ['delete', 'get', 'parameters', 'post'],
    'a tenant kind keeps every operation',
  );
});

t.test('a tenant id starting with a digit: operation ids lose no more and no less than the prefix', async (t) => {
  // kube-openapi drops a leading digit and capitalizes what follows: 9alpha-example.com → AlphaExampleCom.
  const text = FIXTURE.replaceAll('alpha1-example', '9alpha-example')
    .replaceAll('Alpha1ExampleCom', 'AlphaExampleCom')
    .replaceAll('alpha1ExampleCom', 'AlphaExampleCom');
  const list = viewOf('9alpha', text).paths['/apis/example.com/v1/namespaces/{namespace}/widgets']?.get;
  t.equal(list?.operationId, 'listExampleComV1NamespacedWidget');
  t.same(list?.tags, ['exampleCom_v1']);
});

t.test('a malformed document is a Status error; malformed parts are skipped', async (t) => {
  for (const body of [null, [], 'swagger', { swagger: '2.0' }, { paths: [] }]) {
    t.throws(() => openapiV2ToTenant(body, 'alpha1'), { code: 502, reason: 'InternalError' }, JSON.stringify(body));
  }
  const view = openapiV2ToTenant(
    {
      paths: {
        '/api/v1/pods': null,
        '/api/v1/namespaces/{namespace}/pods': { get: { responses: { 200: { schema: { $ref: '#/definitions/missing' } } } } },
        '/api/v1/x%zz': { get: {} },
      },
      definitions: 'none',
    },
    'alpha1',
  );
  t.same(Object.keys(view.paths as object), ['/api/v1/namespaces/{namespace}/pods'], 'only the well-formed path stays');
  t.same(view.definitions, {});
});

t.test("OpenAPI v3 index: the tenant's groups under its names, nothing hidden, empty or of others", async (t) => {
  // As the 1.36 apiserver lists them: a group entry and one per version (CRD groups have only versions).
  const entry = (path: string) => ({ serverRelativeURL: `/openapi/v3/${path}?hash=H` });
  const paths = [
    'api',
    'api/v1',
    'apis/apps',
    'apis/apps/v1',
    'apis/certificates.k8s.io',
    'apis/certificates.k8s.io/v1',
    'apis/flowcontrol.apiserver.k8s.io',
    'apis/flowcontrol.apiserver.k8s.io/v1',
    'apis/flowcontrol.tenantgate.kubezoo.io/v1',
    'apis/apiregistration.k8s.io',
    'apis/apiregistration.k8s.io/v1',
    'apis/alpha1-example.com/v1',
    'apis/bravo2-example.com/v1',
    'apis/example.org/v1',
  ];
  const onlyCsrs = (group: string, version: string) => !(group === 'certificates.k8s.io' && version === 'v1');
  const view = openapiIndexToTenant({ paths: Object.fromEntries(paths.map((path) => [path, entry(path)])) }, 'alpha1', onlyCsrs);
  t.same(view.paths, {
    api: entry('api'),
    'api/v1': entry('api/v1'),
    'apis/apps': entry('apis/apps'),
    'apis/apps/v1': entry('apis/apps/v1'),
    'apis/flowcontrol.apiserver.k8s.io': entry('apis/flowcontrol.apiserver.k8s.io'),
    'apis/flowcontrol.apiserver.k8s.io/v1': entry('apis/flowcontrol.apiserver.k8s.io/v1'),
    'apis/apiregistration.k8s.io': entry('apis/apiregistration.k8s.io'),
    'apis/apiregistration.k8s.io/v1': entry('apis/apiregistration.k8s.io/v1'),
    'apis/example.com/v1': entry('apis/example.com/v1'),
  });
  // Asked under the tenant's URL: each document named under it too, so clients fetch and cache it there.
  const under = openapiIndexToTenant({ paths: Object.fromEntries(paths.map((path) => [path, entry(path)])) }, 'alpha1', onlyCsrs, '/tenants/alpha1');
  t.same(Object.keys(under.paths ?? {}), Object.keys(view.paths ?? {}), 'the same documents');
  t.equal(under.paths?.['apis/example.com/v1']?.serverRelativeURL, '/tenants/alpha1/openapi/v3/apis/example.com/v1?hash=H');
  t.equal(under.paths?.['api/v1']?.serverRelativeURL, '/tenants/alpha1/openapi/v3/api/v1?hash=H');
});

// What a tenant learns about the API: aggregated discovery (apidiscovery.k8s.io/v2), legacy discovery, and OpenAPI
// v2 and v3, against the real apiserver. Two tenants create a CRD of the same group; each sees its own, un-prefixed,
// and nothing of the other's, nor hidden groups and kinds.
import type { ClientHttp2Session } from 'node:http2';
import t from 'tap';
import { exampleCrd } from '../helpers/fixtures.ts';
import { connectH2, credentialsOf, h2Request } from '../helpers/http.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';
import { eventually } from '../helpers/kit.ts';

/** What client-go 1.36 (kubectl) sends for /api and /apis. */
const KUBECTL_DISCOVERY_ACCEPT =
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json';
/** What client-go sends for /openapi/v2: protobuf only. */
const KUBECTL_OPENAPI_V2_ACCEPT = 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf';

let stack: Stack;
let alpha: TestTenant;
let bravo: TestTenant;
const sessions = new Map<string, ClientHttp2Session>();

function sessionOf(tenant: TestTenant): ClientHttp2Session {
  let session = sessions.get(tenant.id);
  if (session === undefined) {
    session = connectH2(credentialsOf(tenant.kubeconfig));
    sessions.set(tenant.id, session);
  }
  return session;
}

const get = (tenant: TestTenant, path: string, accept: string) => h2Request(sessionOf(tenant), 'GET', path, { headers: { accept } });

interface DiscoveredGroup {
  metadata: { name?: string };
  versions: {
    version: string;
    resources: { resource: string; verbs: string[]; responseKind?: { group: string }; subresources?: { subresource: string }[] }[];
  }[];
}

async function aggregatedDiscovery(tenant: TestTenant, root: '/api' | '/apis'): Promise<DiscoveredGroup[]> {
  const answer = await get(tenant, root, KUBECTL_DISCOVERY_ACCEPT);
  if (answer.status !== 200) throw new Error(`${tenant.id} ${root}: ${answer.status} ${answer.body}`);
  return answer.json().items;
}

/** Every `$ref` of an OpenAPI v2 document that points at nothing in it. */
function danglingReferences(doc: any): string[] {
  const dangling: string[] = [];
  JSON.stringify(doc, (key, value) => {
    if (key === '$ref' && typeof value === 'string') {
      const [, section, name] = /^#\/(\w+)\/(.+)$/.exec(value) ?? [];
      if (section === undefined || !Object.hasOwn(doc[section] ?? {}, name!)) dangling.push(value);
    }
    return value;
  });
  return dangling;
}

/** The apiserver publishes a new CRD in discovery and OpenAPI a moment after it is established. */
t.before(async () => {
  stack = await startStack();
  alpha = await createTestTenant(stack, 'disca1');
  bravo = await createTestTenant(stack, 'discb2');
  for (const tenant of [alpha, bravo]) {
    const crd = exampleCrd('Widget', 'widgets');
    const created = await tenant.kubectl(['apply', '-f', '-'], { input: JSON.stringify(crd) });
    if (created.code !== 0) throw new Error(`${tenant.id}: ${created.stderr}`);
  }
  for (const tenant of [alpha, bravo]) {
    await eventually(`${tenant.id}'s widgets in OpenAPI v2`, async () =>
      (await get(tenant, '/openapi/v2', 'application/json')).body.includes('"com.example.v1.Widget"'),
    );
    // kubectl explain reads OpenAPI v3, which the apiserver publishes on its own schedule.
    await eventually(`${tenant.id}'s widgets in OpenAPI v3`, async () =>
      (await get(tenant, '/openapi/v3/apis/example.com/v1', 'application/json')).body.includes('"com.example.v1.Widget"'),
    );
  }
});
t.teardown(async () => {
  for (const session of sessions.values()) session.close();
  await stack?.stop();
});

t.test("aggregated discovery: answered as v2, the tenant's CRD group un-prefixed, nothing of the other tenant", async (t) => {
  for (const [tenant, other] of [
    [alpha, bravo],
    [bravo, alpha],
  ] as const) {
    const answer = await get(tenant, '/apis', KUBECTL_DISCOVERY_ACCEPT);
    t.equal(answer.status, 200);
    t.match(String(answer.headers['content-type']), /^application\/json;.*as=APIGroupDiscoveryList/, 'the client is told it got v2');
    t.equal(answer.json().kind, 'APIGroupDiscoveryList');
    t.notMatch(answer.body, new RegExp(`${other.id}|${tenant.id}-`), `${tenant.id}: no prefix of either tenant anywhere`);
    const groups: DiscoveredGroup[] = answer.json().items;
    const names = groups.map((group) => group.metadata.name ?? '');
    t.ok(names.includes('example.com'), `${tenant.id} sees example.com`);
    for (const hidden of ['flowcontrol.tenantgate.kubezoo.io', 'tenant.kubezoo.io']) t.notOk(names.includes(hidden), `${tenant.id}: no ${hidden}`);
    t.ok(names.includes('apiregistration.k8s.io'), `${tenant.id} sees apiregistration.k8s.io, as in any cluster`);
    const csrs = groups
      .find((group) => group.metadata.name === 'certificates.k8s.io')
      ?.versions[0]?.resources.find((r) => r.resource === 'certificatesigningrequests');
    t.same(csrs?.subresources?.map((s) => s.subresource).sort(), ['approval', 'status'], `${tenant.id}: its CSRs, with approval and status`);
    const widgets = groups.find((group) => group.metadata.name === 'example.com')!.versions[0]!.resources.find((r) => r.resource === 'widgets');
    t.equal(widgets?.responseKind?.group, 'example.com');
  }
});

t.test('aggregated discovery of the core group: shared kinds read-only, hidden kinds absent', async (t) => {
  const [core] = await aggregatedDiscovery(alpha, '/api');
  const resources = core!.versions[0]!.resources;
  const nodes = resources.find((r) => r.resource === 'nodes');
  t.same(nodes?.verbs, ['get', 'list', 'watch']);
  t.same(
    nodes?.subresources?.map((s) => s.subresource),
    ['status'],
    'nodes/proxy is not offered',
  );
  t.notOk(resources.some((r) => r.resource === 'componentstatuses'));
  t.ok(resources.some((r) => r.resource === 'pods'));
});

t.test('clients that ask no aggregated discovery get the legacy document, never protobuf', async (t) => {
  const legacy = await get(alpha, '/apis', 'application/json');
  t.equal(legacy.json().kind, 'APIGroupList');
  t.ok(legacy.json().groups.some((group: { name: string }) => group.name === 'example.com'));
  const protobuf = await get(alpha, '/apis', 'application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList');
  t.equal(protobuf.status, 200);
  t.match(String(protobuf.headers['content-type']), /^application\/json/);
  t.equal(protobuf.json().kind, 'APIGroupList');
});

t.test("kubectl api-resources (aggregated discovery) shows the tenant's API and no more", async (t) => {
  const r = await alpha.kubectl(['api-resources', '-o', 'wide', '-v=8']);
  t.equal(r.code, 0, r.stderr.slice(-2000));
  t.match(r.stderr, /Content-Type: application\/json;g=apidiscovery\.k8s\.io;v=v2;as=APIGroupDiscoveryList/, 'kubectl received aggregated discovery');
  const lines = r.stdout.split('\n');
  t.ok(
    lines.some((line) => /^widgets\s+example\.com\/v1\s+true\s+Widget\s/.test(line)),
    "the CRD under the tenant's group",
  );
  t.match(
    lines.find((line) => line.startsWith('nodes ')),
    /^nodes\s+no\s+v1\s+false\s+Node\s+get,list,watch\s*$/,
    'nodes, read-only',
  );
  t.ok(
    lines.some((line) => /^certificatesigningrequests\s+csr\s+certificates\.k8s\.io\/v1\s+false\s+CertificateSigningRequest\s/.test(line)),
    "CSRs, the tenant's own",
  );
  t.match(
    lines.find((line) => line.startsWith('apiservices ')),
    /^apiservices\s+apiregistration\.k8s\.io\/v1\s+false\s+APIService\s+get,list,watch\s+api-extensions\s*$/,
    'APIServices, read-only',
  );
  t.notMatch(r.stdout, /tenantgate|componentstatuses|discb2|disca1-/);
});

t.test("kubectl explain the tenant's CRD (OpenAPI v3)", async (t) => {
  const r = await alpha.kubectl(['explain', 'widgets']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /GROUP:\s+example\.com/);
  t.match(r.stdout, /KIND:\s+Widget/);
});

t.test("OpenAPI v2, as JSON and as kubectl's protobuf: the tenant's CRD under its group, nothing of the other tenant", async (t) => {
  for (const [tenant, other] of [
    [alpha, bravo],
    [bravo, alpha],
  ] as const) {
    const answer = await get(tenant, '/openapi/v2', 'application/json');
    t.equal(answer.status, 200);
    t.match(String(answer.headers['content-type']), /^application\/json/);
    t.notOk(answer.body.includes(`${other.id}-`), `${tenant.id}: "${other.id}-" appears nowhere in the document`);
    t.notOk(answer.body.includes(`${tenant.id}-`), `${tenant.id}: nor its own prefix`);
    const doc = answer.json();
    t.ok(doc.paths['/apis/example.com/v1/namespaces/{namespace}/widgets'], "the CRD's paths under the tenant's group");
    t.same(doc.definitions['com.example.v1.Widget']?.['x-kubernetes-group-version-kind'], [{ group: 'example.com', kind: 'Widget', version: 'v1' }]);
    t.notOk(
      Object.keys(doc.paths).some((path) => path.startsWith('/apis/flowcontrol.tenantgate.kubezoo.io/')),
      'no hidden group',
    );
    t.same(danglingReferences(doc), [], "every reference resolves in the tenant's document");

    // The same document for kubectl, which reads only protobuf (the upstream is asked for JSON all the same).
    const protobuf = await get(tenant, '/openapi/v2', KUBECTL_OPENAPI_V2_ACCEPT);
    t.equal(protobuf.status, 200);
    t.equal(protobuf.headers['content-type'], 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf');
    t.ok(protobuf.body.includes('/apis/example.com/v1/namespaces/{namespace}/widgets'), `${tenant.id}: the CRD's paths under its group`);
    t.notOk(protobuf.body.includes(`${other.id}-`), `${tenant.id}: "${other.id}-" appears nowhere in the protobuf document`);
    t.notOk(protobuf.body.includes(`${tenant.id}-`), `${tenant.id}: nor its own prefix`);
    t.notOk(protobuf.body.includes('/apis/flowcontrol.tenantgate.kubezoo.io/'), 'nor a hidden group');
  }
});

t.test("OpenAPI v3: the tenant's group, not the other's, no hidden group", async (t) => {
  const answer = await get(alpha, '/openapi/v3', 'application/json');
  const paths = Object.keys(answer.json().paths);
  t.ok(paths.includes('apis/example.com/v1'));
  t.same(
    paths.filter((path) => /discb2|disca1-|tenantgate/.test(path)),
    [],
  );
  t.ok(paths.includes('apis/certificates.k8s.io/v1'), "the CSRs' group, the tenant's own kind");
  t.ok(paths.includes('apis/apiregistration.k8s.io/v1'), "APIServices' schema, as for any shared kind");
  t.equal(
    (await get(alpha, '/openapi/v3/apis/flowcontrol.tenantgate.kubezoo.io/v1', 'application/json')).status,
    404,
    "a hidden group's document is not served either",
  );
  t.equal((await get(alpha, '/openapi/v3/apis/discb2-example.com/v1', 'application/json')).status, 404, "nor another tenant's");
});

/** `kubectl get apiservices -o name` as names (`v1.apps`), sorted. */
async function apiServiceNames(tenant: TestTenant): Promise<string[]> {
  const r = await tenant.kubectl(['get', 'apiservices', '-o', 'name']);
  if (r.code !== 0) throw new Error(`${tenant.id}: ${r.stderr}`);
  return r.stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => line.replace(/^apiservice\.apiregistration\.k8s\.io\//, ''))
    .sort();
}

t.test('APIServices: the built-in groups’ as upstream, the tenant’s CRD groups under its names, never the other tenant’s', async (t) => {
  // Only alpha has group solo.example.org; the apiserver registers its APIService a moment after the CRD.
  const base = exampleCrd('Gizmo', 'gizmos');
  const solo = { ...base, metadata: { name: 'gizmos.solo.example.org' }, spec: { ...base.spec, group: 'solo.example.org' } };
  const created = await alpha.kubectl(['apply', '-f', '-'], { input: JSON.stringify(solo) });
  t.equal(created.code, 0, created.stderr);
  await eventually("alpha's v1.solo.example.org", async () => (await alpha.kubectl(['get', 'apiservice', 'v1.solo.example.org'])).code === 0);

  const mine = await alpha.kubectl(['get', 'apiservice', 'v1.solo.example.org', '-o', 'json']);
  const view = JSON.parse(mine.stdout);
  t.same(
    [view.metadata.name, view.spec.group, view.spec.version],
    ['v1.solo.example.org', 'solo.example.org', 'v1'],
    "name and spec.group in the tenant's names",
  );
  t.notMatch(mine.stdout, /disca1-/, 'no prefix anywhere');
  const upstream = await stack.kubectlDirect(['get', 'apiservice', 'v1.disca1-solo.example.org', '-o', 'jsonpath={.spec.group}']);
  t.equal(upstream.stdout, 'disca1-solo.example.org', "upstream it is alpha's prefixed group");

  const alphaNames = await apiServiceNames(alpha);
  for (const name of ['v1.', 'v1.apps', 'v2.autoscaling', 'v1.example.com', 'v1.solo.example.org']) t.ok(alphaNames.includes(name), `alpha sees ${name}`);
  t.same(
    alphaNames.filter((name) => /disca1|discb2|kubezoo|internal\.apiserver/.test(name)),
    [],
    "nothing prefixed, hidden or tenantgate's",
  );
  const bravoNames = await apiServiceNames(bravo);
  t.ok(bravoNames.includes('v1.example.com'), 'bravo sees its own example.com');
  t.notOk(bravoNames.includes('v1.solo.example.org'), "bravo never sees alpha's group");
  t.same(
    bravoNames.filter((name) => /disca1|discb2|solo/.test(name)),
    [],
  );

  // `kubectl get apiservices` agrees with `kubectl api-versions` (the tenant's discovery).
  const versions = await alpha.kubectl(['api-versions']);
  const fromDiscovery = versions.stdout
    .split('\n')
    .filter((line) => line !== '')
    .sort();
  const fromApiServices = alphaNames
    .map((name) => (name.endsWith('.') ? name.slice(0, -1) : `${name.slice(name.indexOf('.') + 1)}/${name.slice(0, name.indexOf('.'))}`))
    .sort();
  t.same(
    fromApiServices.filter((gv) => !fromDiscovery.includes(gv)),
    [],
    'every APIService a tenant sees is a group version its discovery shows',
  );
  // The aggregator serves its own group without an APIService, as in any 1.36 cluster.
  t.same(
    fromDiscovery.filter((gv) => !fromApiServices.includes(gv)),
    ['apiregistration.k8s.io/v1'],
    'and every group version discovery shows has its APIService',
  );

  const session = sessionOf(bravo);
  for (const name of ['v1.solo.example.org', 'v1.disca1-solo.example.org', 'v1.tenant.kubezoo.io']) {
    const got = await h2Request(session, 'GET', `/apis/apiregistration.k8s.io/v1/apiservices/${name}`);
    t.equal(got.status, 404, `bravo: get ${name} is not found`);
    t.notMatch(got.body.replaceAll(name, ''), /disca1|discb2/, 'and the answer names nothing but what bravo asked');
  }
  const byName = await h2Request(session, 'GET', '/apis/apiregistration.k8s.io/v1/apiservices?fieldSelector=metadata.name%3Dv1.solo.example.org');
  t.same(byName.json().items, [], "bravo: a field selector on alpha's name finds nothing");
  const alphaByName = await h2Request(sessionOf(alpha), 'GET', '/apis/apiregistration.k8s.io/v1/apiservices?fieldSelector=metadata.name%3Dv1.solo.example.org');
  t.same(
    alphaByName.json().items.map((item: { metadata: { name: string } }) => item.metadata.name),
    ['v1.solo.example.org'],
    'alpha: the same selector finds its own',
  );
  const protobufList = await h2Request(session, 'GET', '/apis/apiregistration.k8s.io/v1/apiservices', {
    headers: { accept: 'application/vnd.kubernetes.protobuf, application/json' },
  });
  t.equal(protobufList.status, 200);
  t.notMatch(protobufList.body, /solo|disca1/, 'bravo: a list asked as protobuf neither');
  const table = await bravo.kubectl(['get', 'apiservices']);
  t.notMatch(table.stdout, /solo|disca1/, "nor kubectl's table");

  // A watch from before alpha's next group: alpha's watch shows it, bravo's never does.
  const resourceVersion = (await h2Request(session, 'GET', '/apis/apiregistration.k8s.io/v1/apiservices')).json().metadata.resourceVersion;
  const late = { ...base, metadata: { name: 'gizmos.late.example.org' }, spec: { ...base.spec, group: 'late.example.org' } };
  t.equal((await alpha.kubectl(['apply', '-f', '-'], { input: JSON.stringify(late) })).code, 0);
  await eventually(
    'upstream v1.disca1-late.example.org',
    async () => (await stack.kubectlDirect(['get', 'apiservice', 'v1.disca1-late.example.org'])).code === 0,
  );
  const watchPath = `/apis/apiregistration.k8s.io/v1/apiservices?watch=true&resourceVersion=${resourceVersion}&timeoutSeconds=2`;
  const alphaWatch = await h2Request(sessionOf(alpha), 'GET', watchPath);
  t.match(alphaWatch.body, /"name":"v1\.late\.example\.org"/, "alpha's watch shows its new group's APIService");
  const bravoWatch = await h2Request(session, 'GET', watchPath);
  t.equal(bravoWatch.status, 200);
  t.notMatch(bravoWatch.body, /late\.example\.org|disca1|solo/, "bravo's watch never does");
});

t.test('a tenant cannot write APIServices: 403 for every write, the upstream unchanged', async (t) => {
  const session = sessionOf(alpha);
  const json = { 'content-type': 'application/json' };
  const body = JSON.stringify({
    apiVersion: 'apiregistration.k8s.io/v1',
    kind: 'APIService',
    metadata: { name: 'v1.mine.example.org' },
    spec: { group: 'mine.example.org', version: 'v1', groupPriorityMinimum: 1000, versionPriority: 15 },
  });
  const writes: [string, string, Record<string, string>, string | undefined][] = [
    ['POST', '/apis/apiregistration.k8s.io/v1/apiservices', json, body],
    [
      'PUT',
      '/apis/apiregistration.k8s.io/v1/apiservices/v1.apps',
      json,
      JSON.stringify({
        apiVersion: 'apiregistration.k8s.io/v1',
        kind: 'APIService',
        metadata: { name: 'v1.apps' },
        spec: { group: 'apps', version: 'v1', groupPriorityMinimum: 1, versionPriority: 1 },
      }),
    ],
    [
      'PATCH',
      '/apis/apiregistration.k8s.io/v1/apiservices/v1.example.com',
      { 'content-type': 'application/merge-patch+json' },
      '{"metadata":{"labels":{"x":"y"}}}',
    ],
    ['PUT', '/apis/apiregistration.k8s.io/v1/apiservices/v1.apps/status', json, JSON.stringify({ metadata: { name: 'v1.apps' }, status: { conditions: [] } })],
    ['DELETE', '/apis/apiregistration.k8s.io/v1/apiservices/v1.apps', {}, undefined],
    ['DELETE', '/apis/apiregistration.k8s.io/v1/apiservices', {}, undefined],
  ];
  for (const [method, path, headers, payload] of writes) {
    const answer = await h2Request(session, method, path, { headers, ...(payload === undefined ? {} : { body: payload }) });
    t.equal(answer.status, 403, `${method} ${path}`);
    t.equal(answer.json().reason, 'Forbidden');
  }
  const kubectlDelete = await alpha.kubectl(['delete', 'apiservice', 'v1.example.com']);
  t.not(kubectlDelete.code, 0);
  t.match(kubectlDelete.stderr, /Forbidden|forbidden/);
  const upstream = await stack.kubectlDirect(['get', 'apiservices', '-o', 'name']);
  t.match(upstream.stdout, /v1\.apps\n/, 'v1.apps is still there');
  t.match(upstream.stdout, /v1\.disca1-example\.com\n/, "alpha's own group's too");
  t.notMatch(upstream.stdout, /mine\.example\.org/, 'nothing was created');
  t.equal((await stack.kubectlDirect(['get', 'apiservice', 'v1.disca1-example.com', '-o', 'jsonpath={.metadata.labels.x}'])).stdout, '', 'nothing was patched');
});

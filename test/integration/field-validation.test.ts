// Duplicate fields reach the apiserver through a tenant: fieldValidation=Strict refuses them with the apiserver's own
// status and message (beside unknown fields), Warn answers its Warning headers, Ignore nothing (issue 14 item 5).
// Each request is also sent to the upstream directly, and the tenant's answer must be the same.
import type { ClientHttp2Session } from 'node:http2';
import t from 'tap';
import { connectH2, credentialsOf, h2Request, type Answer } from '../helpers/http.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';

let stack: Stack;
let alpha: TestTenant;
let bravo: TestTenant;
let alphaSession: ClientHttp2Session;
let bravoSession: ClientHttp2Session;
let directSession: ClientHttp2Session;
const DIRECT_NS = 'fieldvalidation-direct';

const deploymentWith = (spec: string) => `{
  "apiVersion": "apps/v1", "kind": "Deployment",
  "metadata": {"name": "my-dep", "labels": {"app": "nginx"}},
  "spec": {${spec}
    "selector": {"matchLabels": {"app": "nginx"}},
    "template": {"metadata": {"labels": {"app": "nginx"}}, "spec": {"containers": [{"name": "nginx", "image": "nginx:latest"}]}}
  }
}`;
const DUPLICATED = deploymentWith('"unknownField": "foo", "replicas": 2, "replicas": 3,');
const CLEAN = deploymentWith('"replicas": 1,');

const widgetCrd = (group: string) => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `widgets.${group}` },
  spec: {
    group,
    scope: 'Cluster',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: { spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true, properties: { foo: { type: 'string' } } } },
          },
        },
      },
    ],
  },
});
// As the conformance spec writes it: the duplicate `foo` is on line 9.
const widgetYaml = (group: string, name: string) => `
apiVersion: ${group}/v1
kind: Widget
metadata:
  name: ${name}
spec:
  unknown: uk1
  foo: foo1
  foo: foo2
  cronSpec: "* * * * */5"
`;

t.before(async () => {
  stack = await startStack();
  alpha = await createTestTenant(stack, 'fvalfa');
  bravo = await createTestTenant(stack, 'fvbrav');
  alphaSession = connectH2(credentialsOf(alpha.kubeconfig));
  bravoSession = connectH2(credentialsOf(bravo.kubeconfig));
  directSession = connectH2(credentialsOf(stack.upstreamKubeconfig));
  const created = await stack.kubectlDirect(['create', 'namespace', DIRECT_NS]);
  if (created.code !== 0) throw new Error(created.stderr);
  for (const [kubectl, group] of [
    [(args: string[], input: string) => stack.kubectlDirect(args, { input }), 'direct.example.com'],
    [(args: string[], input: string) => alpha.kubectl(args, { input }), 'example.com'],
    [(args: string[], input: string) => bravo.kubectl(args, { input }), 'example.com'],
  ] as const) {
    const crd = await kubectl(['apply', '-f', '-'], JSON.stringify(widgetCrd(group)));
    if (crd.code !== 0) throw new Error(crd.stderr);
    const established = await kubectl(['wait', '--for=condition=Established', '--timeout=30s', `crd/widgets.${group}`], '');
    if (established.code !== 0) throw new Error(established.stderr);
  }
});
t.teardown(async () => {
  for (const session of [alphaSession, bravoSession, directSession]) session?.close();
  await stack?.stop();
});

/**
 * The parts of an answer a client sees of a refusal or a warning. A patch's refusal quotes the patched object
 * (uid, times, the namespace's name), which differs between the two namespaces: only the strict decoding part counts.
 */
function seen(answer: Answer): { status: number; reason?: string; message?: string; warnings: string[] } {
  const warning = answer.headers.warning;
  const warnings =
    warning === undefined
      ? []
      : Array.isArray(warning)
        ? warning
        : String(warning)
            .split(/,(?=\s*299 )/)
            .map((w) => w.trim());
  if (answer.status < 400) return { status: answer.status, warnings };
  const status = answer.json();
  const message = String(status.message);
  const strict = message.indexOf('strict decoding error');
  return {
    status: answer.status,
    reason: status.reason,
    message: strict <= 0 || !message.includes('patch: Invalid value') ? message : message.slice(strict),
    warnings,
  };
}

const deploymentsPath = (namespace: string) => `/apis/apps/v1/namespaces/${namespace}/deployments`;
const json = { 'content-type': 'application/json' };

t.test("a typed create: Strict refuses unknown and duplicate fields with the apiserver's message, in one error", async (t) => {
  const query = '?fieldManager=field_validation_mgr&fieldValidation=Strict';
  const direct = seen(await h2Request(directSession, 'POST', deploymentsPath(DIRECT_NS) + query, { headers: json, body: DUPLICATED }));
  const tenant = seen(await h2Request(alphaSession, 'POST', deploymentsPath('default') + query, { headers: json, body: DUPLICATED }));
  t.match(tenant.message, 'strict decoding error: unknown field "spec.unknownField", duplicate field "spec.replicas"');
  t.same(tenant, direct, 'the same status, reason and message as the apiserver directly');
  const bravoGet = await h2Request(bravoSession, 'GET', deploymentsPath('default') + '/my-dep');
  t.equal(bravoGet.status, 404, 'tenant bravo sees nothing');
});

t.test('unknown metadata fields, of a typed object and of a custom resource, are refused as directly', async (t) => {
  const query = '?fieldManager=field_validation_mgr&fieldValidation=Strict';
  const body = CLEAN.replace('"name": "my-dep",', '"name": "my-dep", "unknownMeta": "foo",');
  const direct = seen(await h2Request(directSession, 'POST', deploymentsPath(DIRECT_NS) + query, { headers: json, body }));
  const tenant = seen(await h2Request(alphaSession, 'POST', deploymentsPath('default') + query, { headers: json, body }));
  t.match(tenant.message, 'strict decoding error: unknown field "metadata.unknownMeta"');
  t.same(tenant, direct);
  const widget = (group: string) => `apiVersion: ${group}/v1\nkind: Widget\nmetadata:\n  name: meta\n  unknownMeta: unknown\nspec:\n  foo: x\n`;
  const apply = (session: ClientHttp2Session, group: string) =>
    h2Request(session, 'PATCH', `/apis/${group}/v1/widgets/meta${query}`, { headers: { 'content-type': 'application/apply-patch+yaml' }, body: widget(group) });
  const crDirect = seen(await apply(directSession, 'direct.example.com'));
  const crTenant = seen(await apply(alphaSession, 'example.com'));
  t.match(crTenant.message, '.metadata.unknownMeta: field not declared in schema');
  t.same(
    { ...crTenant, message: crTenant.message?.replace('example.com', 'GROUP') },
    { ...crDirect, message: crDirect.message?.replace('direct.example.com', 'GROUP') },
  );
});

t.test("Warn (the default) creates and answers the apiserver's Warning headers; Ignore answers none", async (t) => {
  const direct = seen(await h2Request(directSession, 'POST', deploymentsPath(DIRECT_NS), { headers: json, body: DUPLICATED }));
  const tenant = seen(await h2Request(alphaSession, 'POST', deploymentsPath('default'), { headers: json, body: DUPLICATED }));
  t.equal(tenant.status, 201);
  t.same(tenant.warnings, ['299 - "unknown field \\"spec.unknownField\\""', '299 - "duplicate field \\"spec.replicas\\""']);
  t.same(tenant, direct);
  const replicas = (await h2Request(alphaSession, 'GET', deploymentsPath('default') + '/my-dep')).json().spec.replicas;
  t.equal(replicas, 3, 'the last value won');

  const bravoCreated = seen(await h2Request(bravoSession, 'POST', deploymentsPath('default'), { headers: json, body: CLEAN }));
  t.same(bravoCreated, { status: 201, warnings: [] }, "tenant bravo, same names, clean body: no warning of alpha's");
  t.equal((await h2Request(bravoSession, 'GET', deploymentsPath('default') + '/my-dep')).json().spec.replicas, 1, 'bravo has its own');

  for (const session of [directSession, alphaSession]) {
    const path = `${deploymentsPath(session === directSession ? DIRECT_NS : 'default')}/my-dep`;
    await h2Request(session, 'DELETE', path);
  }
  const ignoredDirect = seen(
    await h2Request(directSession, 'POST', `${deploymentsPath(DIRECT_NS)}?fieldValidation=Ignore`, { headers: json, body: DUPLICATED }),
  );
  const ignored = seen(await h2Request(alphaSession, 'POST', `${deploymentsPath('default')}?fieldValidation=Ignore`, { headers: json, body: DUPLICATED }));
  t.same(ignored, { status: 201, warnings: [] });
  t.same(ignored, ignoredDirect);
});

t.test('patches and YAML bodies: duplicates reported as the apiserver reports them', async (t) => {
  for (const [session, namespace] of [
    [directSession, DIRECT_NS],
    [alphaSession, 'default'],
    [bravoSession, 'default'],
  ] as const) {
    const made = await h2Request(session, 'POST', `/api/v1/namespaces/${namespace}/configmaps`, {
      headers: json,
      body: '{"metadata":{"name":"cm"},"data":{"a":"0"}}',
    });
    t.equal(made.status, 201, made.body);
  }
  const cases: [string, string, string, string][] = [
    ['a merge patch', 'PATCH', 'application/merge-patch+json', '{"data":{"a":"1","a":"2"}}'],
    ['a strategic merge patch', 'PATCH', 'application/strategic-merge-patch+json', '{"data":{"a":"1","a":"2"},"metadata":{"labels":{"x":"1","x":"2"}}}'],
    ['a YAML update', 'PUT', 'application/yaml', 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: "1"\n  b: "2"\n  a: "3"\n'],
  ];
  for (const [what, method, contentType, body] of cases) {
    for (const validation of ['Strict', 'Warn']) {
      const path = (namespace: string) => `/api/v1/namespaces/${namespace}/configmaps/cm?fieldValidation=${validation}`;
      const direct = seen(await h2Request(directSession, method, path(DIRECT_NS), { headers: { 'content-type': contentType }, body }));
      const tenant = seen(await h2Request(alphaSession, method, path('default'), { headers: { 'content-type': contentType }, body }));
      t.same(tenant, direct, `${what}, ${validation}: ${JSON.stringify(direct)}`);
      t.notMatch(JSON.stringify(tenant), /fvalfa-|fieldvalidation-direct/, "in the tenant's names");
      t.match(JSON.stringify(tenant), /duplicate field|already set in map/, `${what}, ${validation}: reported`);
    }
  }
  const bravoCm = (await h2Request(bravoSession, 'GET', '/api/v1/namespaces/default/configmaps/cm')).json();
  t.same(bravoCm.data, { a: '0' }, "tenant bravo's configmap of the same name is untouched");
});

t.test('a custom resource applied as YAML: the duplicate is named on the line the client wrote it', async (t) => {
  const apply = (session: ClientHttp2Session, group: string, validation: string) =>
    h2Request(session, 'PATCH', `/apis/${group}/v1/widgets/mytest?fieldManager=field_validation_mgr&fieldValidation=${validation}`, {
      headers: { 'content-type': 'application/apply-patch+yaml' },
      body: widgetYaml(group, 'mytest'),
    });
  const direct = seen(await apply(directSession, 'direct.example.com', 'Strict'));
  const tenant = seen(await apply(alphaSession, 'example.com', 'Strict'));
  t.match(tenant, { status: 400, message: /line 9: key "foo" already set in map/ });
  t.same(tenant, direct);
  t.equal((await h2Request(bravoSession, 'GET', '/apis/example.com/v1/widgets/mytest')).status, 404, 'bravo: nothing');

  const warnedDirect = seen(await apply(directSession, 'direct.example.com', 'Warn'));
  const warned = seen(await apply(alphaSession, 'example.com', 'Warn'));
  t.equal(warned.status, 201);
  t.same(warned, warnedDirect, `warnings: ${JSON.stringify(warned.warnings)}`);
  t.equal((await h2Request(alphaSession, 'GET', '/apis/example.com/v1/widgets/mytest')).json().spec.foo, 'foo2');
  const bravoWidgets = (await h2Request(bravoSession, 'GET', '/apis/example.com/v1/widgets')).json();
  t.same(bravoWidgets.items, [], "bravo lists none of alpha's widgets");
});

// Media types tenantgate does not convert (CBOR, as client-go's ClientsAllowCBOR and ClientsPreferCBOR send it, and
// whatever else the apiserver refuses): a tenant gets the apiserver's own 406 or 415, compared with the apiserver's
// answer to the same request straight upstream, over HTTP/2 and HTTP/1.1. A client that prefers CBOR and falls back
// to JSON gets JSON, its own tenant's objects only; nothing refused is written, and the other tenant, with the same
// names, keeps its objects.
import type { ClientHttp2Session } from 'node:http2';
import t, { type Test } from 'tap';
import { parse as parseYaml } from 'yaml';
import { createOnceServed, exampleCrd } from '../helpers/fixtures.ts';
import { connectH2, credentialsOf, h1Request, h2Request, type Answer } from '../helpers/http.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';

// Both tenants use the same names: a leak would show as the other's object under the same name.
const ALPHA = 'mediaa';
const BRAVO = 'mediab';
/** An empty CBOR map: bytes no JSON or YAML parser reads. */
const CBOR_BODY = Buffer.from([0xa0]);
/** client-go with ClientsPreferCBOR: CBOR first, JSON as the fallback. */
const PREFERS_CBOR = 'application/json;q=0.9,application/cbor;q=1';

let stack: Stack;
let alpha: TestTenant;
let bravo: TestTenant;
let up: ClientHttp2Session;
const sessions: ClientHttp2Session[] = [];

t.before(async () => {
  stack = await startStack({ controllers: false });
  alpha = await createTestTenant(stack, ALPHA);
  bravo = await createTestTenant(stack, BRAVO);
  up = connectH2(credentialsOf(stack.upstreamKubeconfig));
  sessions.push(up);
  for (const tenant of [alpha, bravo]) {
    const session = connectH2(credentialsOf(tenant.kubeconfig));
    sessions.push(session);
    const made = await h2Request(session, 'POST', '/api/v1/namespaces/default/configmaps', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings' }, data: { owner: tenant.id } }),
    });
    if (made.status !== 201) throw new Error(`ConfigMap: ${made.status} ${made.body}`);
    const crd = await h2Request(session, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(exampleCrd('Gadget', 'gadgets')),
    });
    if (crd.status !== 201) throw new Error(`CRD: ${crd.status} ${crd.body}`);
    await createOnceServed(session, '/apis/example.com/v1/namespaces/default/gadgets', {
      apiVersion: 'example.com/v1',
      kind: 'Gadget',
      metadata: { name: 'same' },
      spec: { owner: tenant.id },
    });
  }
});
t.teardown(async () => {
  for (const session of sessions) session.close();
  await stack?.stop();
});

/** The same path as the apiserver names it for `tenant` (its namespace and custom group under the tenant's prefix). */
function upstreamPath(path: string, tenant: string): string {
  return path.replace('/namespaces/default/', `/namespaces/${tenant}-default/`).replace('/apis/example.com/', `/apis/${tenant}-example.com/`);
}

interface Case {
  what: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  code: number;
}

const CONFIGMAP = '/api/v1/namespaces/default/configmaps/settings';
const CONFIGMAPS = '/api/v1/namespaces/default/configmaps';
const GADGET = '/apis/example.com/v1/namespaces/default/gadgets/same';
const GADGETS = '/apis/example.com/v1/namespaces/default/gadgets';

const CASES: Case[] = [
  { what: 'a get that accepts CBOR only', method: 'GET', path: CONFIGMAP, headers: { accept: 'application/cbor' }, code: 406 },
  { what: 'a list that accepts CBOR only', method: 'GET', path: CONFIGMAPS, headers: { accept: 'application/cbor' }, code: 406 },
  {
    what: 'a watch that accepts cbor-seq only',
    method: 'GET',
    path: `${CONFIGMAPS}?watch=1&timeoutSeconds=1`,
    headers: { accept: 'application/cbor-seq' },
    code: 406,
  },
  { what: 'a Table in CBOR', method: 'GET', path: CONFIGMAPS, headers: { accept: 'application/cbor;as=Table;v=v1;g=meta.k8s.io' }, code: 406 },
  { what: 'text/html', method: 'GET', path: CONFIGMAP, headers: { accept: 'text/html' }, code: 406 },
  { what: 'application/* (no wildcard subtype)', method: 'GET', path: CONFIGMAP, headers: { accept: 'application/*' }, code: 406 },
  { what: 'a create in CBOR', method: 'POST', path: CONFIGMAPS, headers: { 'content-type': 'application/cbor' }, body: CBOR_BODY, code: 415 },
  { what: 'a create with no body, said to be CBOR', method: 'POST', path: CONFIGMAPS, headers: { 'content-type': 'application/cbor' }, code: 415 },
  { what: 'an update in CBOR', method: 'PUT', path: CONFIGMAP, headers: { 'content-type': 'application/cbor' }, body: CBOR_BODY, code: 415 },
  {
    what: 'an apply in CBOR',
    method: 'PATCH',
    path: `${CONFIGMAP}?fieldManager=m`,
    headers: { 'content-type': 'application/apply-patch+cbor' },
    body: CBOR_BODY,
    code: 415,
  },
  { what: 'a patch in text/plain', method: 'PATCH', path: CONFIGMAP, headers: { 'content-type': 'text/plain' }, body: Buffer.from('{}'), code: 415 },
  {
    what: 'a create in JSON that accepts CBOR only',
    method: 'POST',
    path: CONFIGMAPS,
    headers: { 'content-type': 'application/json', accept: 'application/cbor' },
    body: Buffer.from(JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'refused' } })),
    code: 406,
  },
  // Not judged by tenantgate: a proxied service answers what it answers (here, no such Service: 404).
  {
    what: "a service proxy with a browser's Accept",
    method: 'GET',
    path: '/api/v1/namespaces/default/services/web/proxy/',
    headers: { accept: 'text/html' },
    code: 404,
  },
  // Discovery, worded per document as the apiserver words it.
  ...['/api', '/api/v1', '/apis', '/apis/apps', '/apis/apps/v1', '/version'].map((path) => ({
    what: `discovery ${path} in CBOR only`,
    method: 'GET',
    path,
    headers: { accept: 'application/cbor' },
    code: 406,
  })),
  { what: 'discovery /api/v1 for a browser', method: 'GET', path: '/api/v1', headers: { accept: 'text/html' }, code: 406 },
  { what: '/version in YAML only', method: 'GET', path: '/version', headers: { accept: 'application/yaml' }, code: 406 },
  { what: 'a custom resource that accepts CBOR only', method: 'GET', path: GADGET, headers: { accept: 'application/cbor' }, code: 406 },
  { what: 'a list of custom resources in CBOR only', method: 'GET', path: GADGETS, headers: { accept: 'application/cbor' }, code: 406 },
  { what: 'a custom resource created in CBOR', method: 'POST', path: GADGETS, headers: { 'content-type': 'application/cbor' }, body: CBOR_BODY, code: 415 },
  { what: 'a custom resource patched in CBOR', method: 'PATCH', path: GADGET, headers: { 'content-type': 'application/cbor' }, body: CBOR_BODY, code: 415 },
  {
    what: 'a custom resource patched with a strategic merge',
    method: 'PATCH',
    path: GADGET,
    headers: { 'content-type': 'application/strategic-merge-patch+json' },
    body: Buffer.from('{}'),
    code: 415,
  },
];

/** The Status an answer carries, as a client reads it (the apiserver pretty-prints some), and its type. */
function statusOf(t: Test, answer: Answer, what: string): { type: string; code: number; reason: string; message: string } | null {
  const type = String(answer.headers['content-type']);
  t.match(type, /^application\/(json|yaml)/, `${what}: a Status in JSON (or YAML, to a client that takes only YAML)`);
  try {
    // (YAML reads JSON too.)
    const { kind, code, reason, message } = parseYaml(answer.body);
    t.equal(kind, 'Status', `${what}: a Status`);
    return { type, code, reason, message };
  } catch {
    t.fail(`${what}: not JSON or YAML: ${answer.body.slice(0, 200)}`);
    return null;
  }
}

t.test('what the apiserver refuses, tenantgate refuses as it does: the same code, reason and message', async (t) => {
  const viaH2 = sessions[1]!;
  const credentials = credentialsOf(alpha.kubeconfig);
  for (const { what, method, path, headers, body, code } of CASES) {
    const direct = await h2Request(up, method, upstreamPath(path, ALPHA), { headers, body });
    t.equal(direct.status, code, `${what}: the apiserver answers ${code}`);
    const expected = statusOf(t, direct, `${what} (directly)`);
    for (const [protocol, answer] of [
      ['HTTP/2', await h2Request(viaH2, method, path, { headers, body })],
      ['HTTP/1.1', await h1Request(credentials, method, path, { headers, body })],
    ] as const) {
      t.equal(answer.status, code, `${what} over ${protocol}: ${code}`);
      t.same(statusOf(t, answer, `${what} over ${protocol}`), expected, `${what} over ${protocol}: the apiserver's Status`);
    }
  }
});

t.test("a delete's options in CBOR: 415, which makes client-go send them in JSON; nothing deleted", async (t) => {
  // (The apiserver reads CBOR DeleteOptions even with CBOR serving off; tenantgate reads no CBOR.)
  const session = sessions[1]!;
  const refused = await h2Request(session, 'DELETE', CONFIGMAP, { headers: { 'content-type': 'application/cbor' }, body: CBOR_BODY });
  t.equal(refused.status, 415);
  t.equal(refused.json().reason, 'UnsupportedMediaType');
  t.match(refused.json().message, 'the body of the request was in an unknown format - accepted media types include: application/json');
  t.equal((await h2Request(session, 'GET', CONFIGMAP)).status, 200, 'the ConfigMap is still there');
  const bodyless = await h2Request(session, 'DELETE', `${CONFIGMAPS}/nosuch`, { headers: { 'content-type': 'application/cbor' } });
  t.equal(bodyless.status, 404, 'a delete with no body is not judged by its Content-Type');
});

t.test('nothing refused was written, and the other tenant, with the same names, keeps its own', async (t) => {
  for (const tenant of [alpha, bravo]) {
    const session = connectH2(credentialsOf(tenant.kubeconfig));
    const configMaps = (await h2Request(session, 'GET', CONFIGMAPS)).json();
    t.same(
      configMaps.items.map((item: { metadata: { name: string } }) => item.metadata.name).filter((name: string) => name !== 'kube-root-ca.crt'),
      ['settings'],
      `${tenant.id}: its one ConfigMap, none created by a refused request`,
    );
    t.same(configMaps.items.find((item: { metadata: { name: string } }) => item.metadata.name === 'settings').data, { owner: tenant.id });
    const gadget = (await h2Request(session, 'GET', GADGET)).json();
    t.same(gadget.spec, { owner: tenant.id }, `${tenant.id}: its own gadget, unchanged`);
    session.close();
  }
});

t.test('a client that prefers CBOR and falls back to JSON gets JSON, its own tenant only', async (t) => {
  for (const tenant of [alpha, bravo]) {
    const session = connectH2(credentialsOf(tenant.kubeconfig));
    for (const path of [CONFIGMAP, GADGET]) {
      const answer = await h2Request(session, 'GET', path, { headers: { accept: PREFERS_CBOR } });
      t.equal(answer.status, 200, `${tenant.id} ${path}`);
      t.match(String(answer.headers['content-type']), /^application\/json/, 'in JSON, as the apiserver with CBOR serving off');
      const object = answer.json();
      t.same(object.data ?? object.spec, { owner: tenant.id }, "the tenant's own object, in its own names");
      t.equal(object.metadata.namespace, 'default');
    }
    const list = await h1Request(credentialsOf(tenant.kubeconfig), 'GET', GADGETS, { headers: { accept: PREFERS_CBOR } });
    t.equal(list.status, 200);
    t.same(
      list.json().items.map((item: { spec: unknown }) => item.spec),
      [{ owner: tenant.id }],
      `${tenant.id}: a list over HTTP/1.1 of its own gadget only`,
    );
    session.close();
  }
});

/** A YAML answer as a client reads it: its status, its type and the value it parses to. */
async function yamlAnswer(answer: Promise<Answer>): Promise<{ status: number; type: string; value: any }> {
  const got = await answer;
  return { status: got.status, type: String(got.headers['content-type']), value: parseYaml(got.body) };
}

t.test('a client that chooses YAML gets YAML where the apiserver gives it, in its own names, its own objects only', async (t) => {
  const YAML = { accept: 'application/yaml' };
  for (const tenant of [alpha, bravo]) {
    const session = connectH2(credentialsOf(tenant.kubeconfig));
    const credentials = credentialsOf(tenant.kubeconfig);
    for (const [what, path, headers] of [
      ['a ConfigMap', CONFIGMAP, YAML],
      ['a list of ConfigMaps', CONFIGMAPS, YAML],
      ['a custom resource', GADGET, YAML],
      ['a list of custom resources', GADGETS, YAML],
      ['YAML before JSON by q', CONFIGMAP, { accept: 'application/json;q=0.5, application/yaml' }],
      ['YAML before */* (more specific)', CONFIGMAPS, { accept: '*/*, application/yaml' }],
    ] as const) {
      const direct = await yamlAnswer(h2Request(up, 'GET', upstreamPath(path, tenant.id), { headers }));
      const asJson = (await h2Request(session, 'GET', path)).json();
      for (const [protocol, answer] of [
        ['HTTP/2', h2Request(session, 'GET', path, { headers })],
        ['HTTP/1.1', h1Request(credentials, 'GET', path, { headers })],
      ] as const) {
        const got = await yamlAnswer(answer);
        t.equal(got.status, 200, `${tenant.id}, ${what} over ${protocol}`);
        t.equal(got.type, direct.type, `${what} over ${protocol}: ${direct.type}, as the apiserver answers`);
        // (Lists differ in resourceVersion between two reads only when something was written: nothing is.)
        t.same(got.value, asJson, `${what} over ${protocol}: the tenant's JSON answer, written as YAML`);
      }
      if (Array.isArray(asJson.items))
        t.equal(asJson.apiVersion, path.startsWith('/apis/') ? 'example.com/v1' : 'v1', "the list's own apiVersion is the tenant's");
      const owners = JSON.stringify(asJson).match(/"owner":"(\w+)"/g) ?? [];
      t.ok(owners.length > 0 && owners.every((owner) => owner === `"owner":"${tenant.id}"`), `${tenant.id}: its own objects only`);
      t.notMatch(JSON.stringify(asJson), new RegExp(`${tenant.id}-|${tenant === alpha ? BRAVO : ALPHA}`), 'no upstream name, nothing of the other tenant');
    }
    session.close();
  }

  const session = sessions[1]!;
  // A Status, for a request that fails, and a watch, which has no YAML form: as the apiserver answers them.
  for (const [what, path, headers, code] of [
    ['a ConfigMap that is not there', `${CONFIGMAPS}/nosuch`, YAML, 404],
    ['a watch for a client that takes YAML only', `${CONFIGMAPS}?watch=1&timeoutSeconds=1`, YAML, 406],
  ] as const) {
    const direct = await yamlAnswer(h2Request(up, 'GET', upstreamPath(path, ALPHA), { headers }));
    const got = await yamlAnswer(h2Request(session, 'GET', path, { headers }));
    t.equal(direct.status, code, `${what}: the apiserver answers ${code}`);
    t.equal(got.status, code, `${what}: ${code}`);
    t.equal(got.type, direct.type, `${what}: a Status in ${direct.type}`);
    const pick = ({ kind, code, reason, message }: any) => ({ kind, code, reason, message });
    t.same(pick(got.value), pick(direct.value), `${what}: the apiserver's Status`);
  }
  const watch = await h2Request(session, 'GET', `${CONFIGMAPS}?watch=1&timeoutSeconds=1`, { headers: { accept: 'application/yaml, application/json' } });
  t.equal(watch.status, 200, 'a watch that takes JSON too');
  t.match(String(watch.headers['content-type']), /^application\/json/, 'is answered in JSON, as the apiserver streams no YAML');
  t.equal(JSON.parse(watch.body.split('\n')[0]!).type, 'ADDED');

  // A write answers in YAML too; the object is the tenant's.
  const created = await yamlAnswer(
    h2Request(session, 'POST', CONFIGMAPS, {
      headers: { ...YAML, 'content-type': 'application/json' },
      body: Buffer.from(JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'in-yaml' }, data: { on: 'yes', n: '12' } })),
    }),
  );
  t.equal(created.status, 201);
  t.equal(created.type, 'application/yaml');
  t.same(created.value.metadata.namespace, 'default');
  t.same(created.value.data, { on: 'yes', n: '12' }, 'strings that YAML 1.1 would read as booleans or numbers stay strings');
  const deleted = await h2Request(session, 'DELETE', `${CONFIGMAPS}/in-yaml`);
  t.equal(deleted.status, 200);
});

t.test('unknown Accept parameters and the alpha shardSelector: answered as the apiserver answers them with the feature off', async (t) => {
  for (const tenant of [alpha, bravo]) {
    const session = connectH2(credentialsOf(tenant.kubeconfig));
    for (const [what, path, accept] of [
      ['drop=metadata.managedFields', CONFIGMAPS, 'application/json;drop=metadata.managedFields'],
      ['stream=watch on a list', CONFIGMAPS, 'application/json;stream=watch'],
      ['shardSelector', `${CONFIGMAPS}?shardSelector=${encodeURIComponent('shardRange(object.metadata.uid, 0x0, 0x8000000000000000)')}`, 'application/json'],
      ['shardSelector on custom resources', `${GADGETS}?shardSelector=x`, 'application/json'],
    ] as const) {
      const direct = await h2Request(up, 'GET', upstreamPath(path, tenant.id), { headers: { accept } });
      const got = await h2Request(session, 'GET', path, { headers: { accept } });
      t.equal(got.status, direct.status, `${tenant.id}, ${what}: ${direct.status}, as the apiserver answers`);
      t.equal(String(got.headers['content-type']), String(direct.headers['content-type']));
      const list = got.json();
      t.notOk('shardInfo' in (list.metadata ?? {}), 'no shardInfo');
      const owners = list.items.map((item: any) => item.data?.owner ?? item.spec?.owner).filter((owner: unknown) => owner !== undefined);
      t.same(owners, [tenant.id], `${what}: every item of the tenant's, none of the other's`);
    }
    session.close();
  }
});

// An upstream that serves CBOR (kube-apiserver with the alpha CBORServingAndStorage gate on): tenantgate still never
// asks it for CBOR, which it cannot convert, nor sends it a CBOR body. A tenant gets what an apiserver with the gate
// off answers (406, 415, or JSON when JSON is its fallback), while the same requests straight upstream get CBOR.
// A rig of its own: the gate is an apiserver flag, and a shared rig runs the defaults.
import type { ClientHttp2Session } from 'node:http2';
import t from 'tap';
import { createOnceServed, exampleCrd } from '../helpers/fixtures.ts';
import { connectH2, credentialsOf, h1Request, h2Request } from '../helpers/http.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';

const ALPHA = 'cbora1';
const BRAVO = 'cborb2';
/** The self-described CBOR tag the apiserver's CBOR serializer writes first and reads first. */
const SELF_DESCRIBED = Buffer.from([0xd9, 0xd9, 0xf7]);

/** CBOR of a JSON object of strings and objects (all a test object needs). */
function cbor(value: Record<string, unknown>): Buffer {
  const head = (major: number, length: number) =>
    length < 24
      ? Buffer.from([(major << 5) | length])
      : length < 256
        ? Buffer.from([(major << 5) | 24, length])
        : Buffer.from([(major << 5) | 25, length >> 8, length & 255]);
  const encode = (item: unknown): Buffer => {
    if (typeof item === 'string') return Buffer.concat([head(3, Buffer.byteLength(item)), Buffer.from(item)]);
    const entries = Object.entries(item as Record<string, unknown>);
    return Buffer.concat([head(5, entries.length), ...entries.flatMap(([key, entry]) => [encode(key), encode(entry)])]);
  };
  return Buffer.concat([SELF_DESCRIBED, encode(value)]);
}

let stack: Stack;
let alpha: TestTenant;
let bravo: TestTenant;
let up: ClientHttp2Session;
const sessions: ClientHttp2Session[] = [];
const GADGETS = '/apis/example.com/v1/namespaces/default/gadgets';
const upstreamPath = (path: string, tenant: string) =>
  path.replace('/namespaces/default/', `/namespaces/${tenant}-default/`).replace('/apis/example.com/', `/apis/${tenant}-example.com/`);

t.before(async () => {
  stack = await startStack({ controllers: false, apiserverFeatureGates: ['CBORServingAndStorage=true'] });
  alpha = await createTestTenant(stack, ALPHA);
  bravo = await createTestTenant(stack, BRAVO);
  up = connectH2(credentialsOf(stack.upstreamKubeconfig));
  sessions.push(up);
  for (const tenant of [alpha, bravo]) {
    const session = connectH2(credentialsOf(tenant.kubeconfig));
    sessions.push(session);
    const crd = await h2Request(session, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(exampleCrd('Gadget', 'gadgets')),
    });
    if (crd.status !== 201) throw new Error(`CRD: ${crd.status} ${crd.body}`);
    await createOnceServed(session, GADGETS, { apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name: 'same' }, spec: { owner: tenant.id } });
  }
});
t.teardown(async () => {
  for (const session of sessions) session.close();
  await stack?.stop();
});

t.test('the upstream serves CBOR: the same requests straight upstream get it', async (t) => {
  const got = await h2Request(up, 'GET', `${upstreamPath(GADGETS, ALPHA)}/same`, { headers: { accept: 'application/cbor' } });
  t.equal(got.status, 200, got.body.slice(0, 200));
  t.equal(got.headers['content-type'], 'application/cbor', 'the gate is on: a CBOR answer');
  t.ok(got.bytes.subarray(0, 3).equals(SELF_DESCRIBED), 'in CBOR');
  const created = await h2Request(up, 'POST', upstreamPath(GADGETS, ALPHA), {
    headers: { 'content-type': 'application/cbor', accept: 'application/json' },
    body: cbor({ apiVersion: `${ALPHA}-example.com/v1`, kind: 'Gadget', metadata: { name: 'from-cbor', labels: { 'tenant.kubezoo.io/id': ALPHA } } }),
  });
  t.equal(created.status, 201, `a CBOR body is read: ${created.body.slice(0, 300)}`);
  await h2Request(up, 'DELETE', `${upstreamPath(GADGETS, ALPHA)}/from-cbor`);
});

t.test('through tenantgate, a tenant gets the answers of an apiserver with the gate off, and only its own objects', async (t) => {
  const credentials = credentialsOf(alpha.kubeconfig);
  const viaH2 = sessions[1]!;
  for (const [protocol, send] of [
    ['HTTP/2', (method: string, path: string, options: { headers: Record<string, string>; body?: Buffer }) => h2Request(viaH2, method, path, options)],
    ['HTTP/1.1', (method: string, path: string, options: { headers: Record<string, string>; body?: Buffer }) => h1Request(credentials, method, path, options)],
  ] as const) {
    const only = await send('GET', `${GADGETS}/same`, { headers: { accept: 'application/cbor' } });
    t.equal(only.status, 406, `${protocol}: CBOR only: 406, never a CBOR answer`);
    t.match(String(only.headers['content-type']), /^application\/json/);
    t.equal(only.json().reason, 'NotAcceptable');
    const seq = await send('GET', `${GADGETS}?watch=1&timeoutSeconds=1`, { headers: { accept: 'application/cbor-seq' } });
    t.equal(seq.status, 406, `${protocol}: a cbor-seq watch: 406`);
    const fallback = await send('GET', `${GADGETS}/same`, { headers: { accept: 'application/json;q=0.9,application/cbor;q=1' } });
    t.equal(fallback.status, 200, `${protocol}: CBOR preferred, JSON as the fallback`);
    t.match(String(fallback.headers['content-type']), /^application\/json/, 'answered in JSON');
    t.same(fallback.json().spec, { owner: ALPHA }, "the tenant's own object, in its own names");
    t.equal(fallback.json().apiVersion, 'example.com/v1');
    const list = await send('GET', GADGETS, { headers: { accept: 'application/json;q=0.9,application/cbor;q=1' } });
    t.same(
      list.json().items.map((item: { spec: unknown }) => item.spec),
      [{ owner: ALPHA }],
      `${protocol}: a list, the tenant's only`,
    );
    const body = await send('POST', GADGETS, {
      headers: { 'content-type': 'application/cbor', accept: 'application/json' },
      body: cbor({ apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name: 'via-cbor' } }),
    });
    t.equal(body.status, 415, `${protocol}: a CBOR body: 415, as with the gate off (client-go then sends JSON)`);
  }
  for (const tenant of [alpha, bravo]) {
    const names = (await h2Request(sessions[tenant === alpha ? 1 : 2]!, 'GET', GADGETS)).json().items.map((item: any) => item.metadata.name);
    t.same(names, ['same'], `${tenant.id}: nothing written by a refused request`);
  }
});

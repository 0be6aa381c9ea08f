// Issue 18: a client that prefers protobuf (client-go's controllers) gets protobuf back — objects, lists, watches and
// Status errors converted on the wire — the same tenant view the JSON answer gives, and never another tenant's objects,
// though both tenants use the same names.
import type { ClientHttp2Session } from 'node:http2';
import t from 'tap';
import { connectH2, credentialsOf, h2Request } from '../helpers/http.ts';
import { decodeBody, decodeWatchFrames, goModuleCache, loadProtoMessages, type ProtoMessages } from '../helpers/k8s-proto.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';
import { sleep, waitFor } from '../helpers/watch.ts';

type Json = Record<string, any>;

const PROTOBUF = 'application/vnd.kubernetes.protobuf';
/** What client-go sends with ContentType protobuf. */
const ACCEPT_PROTOBUF = { accept: `${PROTOBUF}, application/json` };
const CORE = 'k8s.io.api.core.v1';
const IDS = ['pbana1', 'pbanb2'] as const;

let stack: Stack;
let messages: ProtoMessages;
const tenants = new Map<string, TestTenant>();
const sessions = new Map<string, ClientHttp2Session>();

async function ok(result: Promise<{ code: number; stderr: string }>, what: string): Promise<void> {
  const r = await result;
  if (r.code !== 0) throw new Error(`${what}: ${r.stderr}`);
}

t.before(async () => {
  const moduleCache = goModuleCache();
  if (moduleCache === undefined) throw new Error('the Go module cache of the rig is missing: npm run rig');
  messages = loadProtoMessages(moduleCache);
  stack = await startStack({ controllers: true });
  for (const id of IDS) {
    const tenant = await createTestTenant(stack, id);
    tenants.set(id, tenant);
    sessions.set(id, connectH2(credentialsOf(tenant.kubeconfig)));
    await ok(tenant.kubectl(['create', 'namespace', 'app']), 'namespace');
    for (const namespace of ['default', 'app']) await ok(tenant.kubectl(['create', 'configmap', 'shared', '-n', namespace, `--from-literal=owner=${id}`]), 'configmap');
    await ok(tenant.kubectl(['create', 'configmap', `only-${id}`, '-n', 'default']), 'configmap');
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web', labels: { app: 'web' } },
      spec: {
        affinity: { podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: 'zone', namespaces: ['app'], labelSelector: { matchLabels: { app: 'web' } } }] } },
        containers: [{ name: 'web', image: 'registry.k8s.io/pause:3.10' }],
      },
    };
    await ok(tenant.kubectl(['apply', '-n', 'default', '-f', '-'], { input: JSON.stringify(pod) }), 'pod');
  }
});
t.teardown(async () => {
  for (const session of sessions.values()) session.close();
  await stack?.stop();
});

/**
 * An object as both encodings can say it: without managed fields (their times) and without empty values (protobuf
 * writes a field's zero value, JSON omits it).
 */
function comparable(value: unknown): unknown {
  if (Array.isArray(value)) return value.length === 0 ? undefined : value.map(comparable);
  if (value === null || typeof value !== 'object') return value === '' || value === 0 || value === false ? undefined : value;
  const out: Json = {};
  for (const [key, member] of Object.entries(value)) {
    if (key === 'managedFields' || key === 'apiVersion' || key === 'kind') continue;
    const kept = comparable(member);
    if (kept !== undefined) out[key] = kept;
  }
  return Object.keys(out).length === 0 ? undefined : out;
}

for (const id of IDS) {
  const other = IDS.find((x) => x !== id)!;

  t.test(`${id}: a ConfigMap and a Pod in protobuf are the tenant's view the JSON answer gives`, async (t) => {
    const session = sessions.get(id)!;
    for (const [path, type] of [
      ['/api/v1/namespaces/default/configmaps/shared', `${CORE}.ConfigMap`],
      ['/api/v1/namespaces/default/pods/web', `${CORE}.Pod`],
    ] as const) {
      const protobuf = await h2Request(session, 'GET', path, { headers: ACCEPT_PROTOBUF });
      t.equal(protobuf.status, 200, `GET ${path}`);
      t.match(String(protobuf.headers['content-type']), /^application\/vnd\.kubernetes\.protobuf/, 'answered in protobuf');
      t.notOk(protobuf.bytes.includes(`${id}-`), 'no upstream name in the bytes');
      const decoded = decodeBody(messages, type, protobuf.bytes);
      const json = (await h2Request(session, 'GET', path)).json();
      t.same(comparable(decoded), comparable(json), `${path}: as the JSON answer`);
    }
  });

  t.test(`${id}: lists in protobuf, in one namespace and across namespaces, hold only the tenant's objects`, async (t) => {
    const session = sessions.get(id)!;
    for (const path of ['/api/v1/namespaces/default/configmaps', '/api/v1/configmaps', '/api/v1/pods']) {
      const protobuf = await h2Request(session, 'GET', path, { headers: ACCEPT_PROTOBUF });
      t.equal(protobuf.status, 200, `GET ${path}`);
      const json = (await h2Request(session, 'GET', path)).json();
      // (Lists merged across namespaces are answered in JSON: the pages are merged as JSON.)
      const list: Json = String(protobuf.headers['content-type']).startsWith(PROTOBUF)
        ? decodeBody(messages, path.endsWith('pods') ? `${CORE}.PodList` : `${CORE}.ConfigMapList`, protobuf.bytes)
        : protobuf.json();
      const names = (list.items as Json[]).map((item) => `${item.metadata.namespace}/${item.metadata.name}`).sort();
      t.same(names, (json.items as Json[]).map((item) => `${item.metadata.namespace}/${item.metadata.name}`).sort(), `${path}: the items of the JSON answer`);
      t.notOk(names.includes(`default/only-${other}`), `never ${other}'s`);
      t.ok((list.items as Json[]).every((item) => item.data?.owner === undefined || item.data.owner === id), `only ${id}'s data`);
      t.notOk(protobuf.bytes.includes(other), `no byte of ${other}'s id`);
    }
    const one = await h2Request(session, 'GET', '/api/v1/namespaces/default/configmaps', { headers: ACCEPT_PROTOBUF });
    t.match(String(one.headers['content-type']), /^application\/vnd\.kubernetes\.protobuf/, 'a list in one namespace is answered in protobuf');
  });

  t.test(`${id}: a Status in protobuf names what the tenant asked for`, async (t) => {
    const session = sessions.get(id)!;
    const missing = await h2Request(session, 'GET', '/api/v1/namespaces/default/configmaps/absent', { headers: ACCEPT_PROTOBUF });
    t.equal(missing.status, 404);
    t.match(String(missing.headers['content-type']), /^application\/vnd\.kubernetes\.protobuf/);
    const status: Json = decodeBody(messages, 'k8s.io.apimachinery.pkg.apis.meta.v1.Status', missing.bytes);
    t.equal(status.message, 'configmaps "absent" not found');
    t.notOk(missing.bytes.includes(`${id}-`), 'no upstream name');
    const theirs = await h2Request(session, 'GET', `/api/v1/namespaces/${other}-default/configmaps/shared`, { headers: ACCEPT_PROTOBUF });
    t.ok(theirs.status === 403 || theirs.status === 404, `${other}'s namespace by its upstream name: ${theirs.status}`);
  });

  t.test(`${id}: a watch in protobuf streams the tenant's events only`, async (t) => {
    const session = sessions.get(id)!;
    const list: Json = decodeBody(messages, `${CORE}.ConfigMapList`, (await h2Request(session, 'GET', '/api/v1/namespaces/app/configmaps', { headers: ACCEPT_PROTOBUF })).bytes);
    const stream = session.request({ ':path': `/api/v1/namespaces/app/configmaps?watch=true&resourceVersion=${list.metadata.resourceVersion}`, ...ACCEPT_PROTOBUF });
    const chunks: Buffer[] = [];
    let contentType = '';
    stream.on('response', (headers) => (contentType = String(headers['content-type'])));
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    await sleep(300);
    for (const tenant of IDS) await ok(tenants.get(tenant)!.kubectl(['patch', 'configmap', 'shared', '-n', 'app', '--type=merge', '-p', JSON.stringify({ data: { step: `${tenant === id ? 'own' : 'other'}-${IDS.indexOf(id)}` } })]), 'patch');
    await ok(tenants.get(id)!.kubectl(['create', 'configmap', `watched-${id}`, '-n', 'app']), 'create');
    const events = () => decodeWatchFrames(messages, `${CORE}.ConfigMap`, Buffer.concat(chunks)) as { type: string; object: Json }[];
    await waitFor('the create event', () => events().some((e) => e.object.metadata?.name === `watched-${id}`), 15_000);
    stream.close();
    t.match(contentType, /^application\/vnd\.kubernetes\.protobuf;stream=watch/);
    const seen = events().map((e) => `${e.type} ${e.object.metadata.namespace}/${e.object.metadata.name} ${e.object.data?.step ?? ''}`);
    t.same(seen, [`MODIFIED app/shared own-${IDS.indexOf(id)}`, `ADDED app/watched-${id} `], `${id} sees its own events, under its names, in order`);
    t.notOk(Buffer.concat(chunks).includes(other), `no byte of ${other}'s`);
  });
}

t.test('a Table, or JSON first, is not answered in protobuf', async (t) => {
  const session = sessions.get(IDS[0])!;
  const table = await h2Request(session, 'GET', '/api/v1/namespaces/default/configmaps', { headers: { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json' } });
  t.equal(table.json().kind, 'Table');
  const json = await h2Request(session, 'GET', '/api/v1/namespaces/default/configmaps', { headers: { accept: `application/json, ${PROTOBUF}` } });
  t.equal(json.json().kind, 'ConfigMapList', 'JSON first: JSON');
});

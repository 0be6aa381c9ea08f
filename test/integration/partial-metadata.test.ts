// Metadata clients (client-go's metadata client and informers, with WatchList) through a tenant: PartialObjectMetadata
// and PartialObjectMetadataList come in protobuf when preferred, as the apiserver answers them, so a metadata
// informer's store equals a metadata list (issue 14: JSON items keep kind and apiVersion, protobuf items do not).
import type { ClientHttp2Session } from 'node:http2';
import t from 'tap';
import { connectH2, credentialsOf, h2Request } from '../helpers/http.ts';
import { decodeBody, goModuleCache, loadProtoMessages, type ProtoMessages } from '../helpers/k8s-proto.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';

let stack: Stack;
let alpha: TestTenant;
let bravo: TestTenant;
let alphaSession: ClientHttp2Session;
let bravoSession: ClientHttp2Session;
let directSession: ClientHttp2Session;
let messages: ProtoMessages;

const META = 'k8s.io.apimachinery.pkg.apis.meta.v1';
// What client-go's metadata client sends.
const LIST_ACCEPT =
  'application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
const OBJECT_ACCEPT =
  'application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';
const SECRETS = '/api/v1/namespaces/default/secrets';

t.before(async () => {
  const moduleCache = goModuleCache();
  if (moduleCache === undefined) throw new Error('the Go module cache of the rig is missing: npm run rig');
  messages = loadProtoMessages(moduleCache);
  stack = await startStack();
  alpha = await createTestTenant(stack, 'pmalfa');
  bravo = await createTestTenant(stack, 'pmbrav');
  alphaSession = connectH2(credentialsOf(alpha.kubeconfig));
  bravoSession = connectH2(credentialsOf(bravo.kubeconfig));
  directSession = connectH2(credentialsOf(stack.upstreamKubeconfig));
  for (const [session, names] of [
    [alphaSession, ['secret-1', 'secret-2', 'secret-3']],
    [bravoSession, ['secret-1']],
  ] as const) {
    // An owner that exists (the garbage collector deletes dependents of a missing one).
    const owner = await h2Request(session, 'POST', '/api/v1/namespaces/default/configmaps', {
      headers: { 'content-type': 'application/json' },
      body: '{"metadata":{"name":"owner"}}',
    });
    const uid = owner.json().metadata.uid;
    for (const name of names) {
      const body = JSON.stringify({
        metadata: { name, labels: { watchlist: 'true' }, ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid }] },
        stringData: { a: 'b' },
      });
      const created = await h2Request(session, 'POST', SECRETS, { headers: { 'content-type': 'application/json' }, body });
      if (created.status !== 201) throw new Error(created.body);
    }
  }
});
t.teardown(async () => {
  for (const session of [alphaSession, bravoSession, directSession]) session?.close();
  await stack?.stop();
});

/** The test helper decodes FieldsV1 as its bytes; the JSON form is the object those bytes hold. */
function withFieldsAsJson(object: any): any {
  for (const item of [object, ...(Array.isArray(object?.items) ? object.items : [])]) {
    for (const entry of item?.metadata?.managedFields ?? []) {
      if (typeof entry.fieldsV1?.raw === 'string') entry.fieldsV1 = JSON.parse(Buffer.from(entry.fieldsV1.raw, 'base64').toString());
    }
  }
  return object;
}

async function protobufAnswer(session: ClientHttp2Session, path: string, accept: string, type: string) {
  const answer = await new Promise<{ status: number; type: string; body: Buffer }>((resolve, reject) => {
    const stream = session.request({ ':method': 'GET', ':path': path, accept });
    const chunks: Buffer[] = [];
    let status = 0;
    let contentType = '';
    stream.on('response', (headers) => ((status = Number(headers[':status'])), (contentType = String(headers['content-type']))));
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => resolve({ status, type: contentType, body: Buffer.concat(chunks) }));
    stream.on('error', reject);
    stream.end();
  });
  return {
    ...answer,
    object: answer.type.startsWith('application/vnd.kubernetes.protobuf') ? withFieldsAsJson(decodeBody(messages, `${META}.${type}`, answer.body)) : null,
  };
}

t.test("a metadata list preferred in protobuf comes in protobuf: the tenant's JSON view, items without kind", async (t) => {
  const path = `${SECRETS}?labelSelector=watchlist%3Dtrue`;
  const list = await protobufAnswer(alphaSession, path, LIST_ACCEPT, 'PartialObjectMetadataList');
  t.equal(list.status, 200);
  t.match(list.type, /^application\/vnd\.kubernetes\.protobuf/);
  const json = (await h2Request(alphaSession, 'GET', path, { headers: { accept: LIST_ACCEPT.slice(LIST_ACCEPT.indexOf(',') + 1) } })).json();
  t.equal(json.kind, 'PartialObjectMetadataList');
  const { metadata, items } = json;
  // (Each list carries the cluster's resourceVersion at its moment, which other writers may have moved in between.)
  const { resourceVersion: protobufVersion, ...protobufListMeta } = list.object.metadata;
  const { resourceVersion: jsonVersion, ...jsonListMeta } = metadata;
  t.ok(Number(protobufVersion) > 0 && Number(protobufVersion) <= Number(jsonVersion), 'the list has a resourceVersion, not after the later list');
  t.same(
    { ...list.object, metadata: protobufListMeta },
    { apiVersion: 'meta.k8s.io/v1', kind: 'PartialObjectMetadataList', metadata: jsonListMeta, items: items.map((item: any) => ({ metadata: item.metadata })) },
    'exactly the JSON view',
  );
  t.same(
    items.map((item: any) => item.metadata.name),
    ['secret-1', 'secret-2', 'secret-3'],
  );
  t.same(
    items.map((item: any) => item.metadata.namespace),
    ['default', 'default', 'default'],
  );
  t.same(items[0].metadata.labels, { watchlist: 'true' }, "tenantgate's label is not shown");

  // The upstream answers the same objects in the same encoding.
  const upstream = await protobufAnswer(
    directSession,
    `/api/v1/namespaces/pmalfa-default/secrets?labelSelector=watchlist%3Dtrue`,
    LIST_ACCEPT,
    'PartialObjectMetadataList',
  );
  t.match(upstream.type, /^application\/vnd\.kubernetes\.protobuf/);
  t.same(
    (upstream.object!.items as any[]).map((item) => [
      item.metadata.uid,
      item.metadata.resourceVersion,
      item.metadata.creationTimestamp,
      item.metadata.ownerReferences,
    ]),
    items.map((item: any) => [item.metadata.uid, item.metadata.resourceVersion, item.metadata.creationTimestamp, item.metadata.ownerReferences]),
  );
  t.notOk(JSON.stringify(list.object).includes('pmalfa'), 'nothing of the upstream names');
});

t.test('one PartialObjectMetadata preferred in protobuf too; an unknown name stays a 404', async (t) => {
  const one = await protobufAnswer(alphaSession, `${SECRETS}/secret-2`, OBJECT_ACCEPT, 'PartialObjectMetadata');
  t.equal(one.status, 200);
  t.match(one.object, {
    apiVersion: 'meta.k8s.io/v1',
    kind: 'PartialObjectMetadata',
    metadata: { name: 'secret-2', namespace: 'default', labels: { watchlist: 'true' } },
  });
  const missing = await h2Request(alphaSession, 'GET', `${SECRETS}/secret-9`, { headers: { accept: OBJECT_ACCEPT } });
  t.equal(missing.status, 404);
  t.match(missing.json(), { kind: 'Status', reason: 'NotFound' });
});

t.test('tenant bravo, same names, sees only its own secret, in protobuf and in a watch list', async (t) => {
  const alphaUids = new Set(
    ((await h2Request(alphaSession, 'GET', SECRETS, { headers: { accept: 'application/json' } })).json().items as any[]).map((item) => item.metadata.uid),
  );
  const list = await protobufAnswer(bravoSession, SECRETS, LIST_ACCEPT, 'PartialObjectMetadataList');
  const items = list.object!.items as any[];
  t.same(
    items.map((item) => item.metadata.name).filter((name) => name.startsWith('secret-')),
    ['secret-1'],
  );
  t.notOk(
    items.some((item) => alphaUids.has(item.metadata.uid)),
    "none of alpha's",
  );
  const other = await protobufAnswer(bravoSession, `${SECRETS}/secret-2`, OBJECT_ACCEPT, 'PartialObjectMetadata');
  t.equal(other.status, 404, "alpha's secret-2 is not there for bravo");

  const watch = await h2Request(
    bravoSession,
    'GET',
    `${SECRETS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&labelSelector=watchlist%3Dtrue&timeoutSeconds=1`,
    { headers: { accept: OBJECT_ACCEPT } },
  );
  const events = watch.body
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line));
  t.same(
    events.map((event) => event.type),
    ['ADDED', 'BOOKMARK'],
    'its one secret, then the end of the initial events',
  );
  t.equal(events[0].object.metadata.uid, items.find((item) => item.metadata.name === 'secret-1').metadata.uid);
  t.equal(events[1].object.metadata.annotations['k8s.io/initial-events-end'], 'true');
});

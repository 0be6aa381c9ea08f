// A custom resource asked for protobuf first (client-go's Accept): the apiserver has no protobuf for custom resources
// and answers JSON; the watch cache answers the same from its cache (no upstream watch), each tenant its own objects.
// Protobuf alone gets what the apiserver gives: 406 Not Acceptable.
import t from 'tap';
import type { ClientHttp2Session } from 'node:http2';
import { connectH2, credentialsOf, h2Request, sumMetric } from '../helpers/http.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant } from '../helpers/tenants.ts';
import { openWatch, settled, upstreamWatchCount, type WatchEvent } from '../helpers/watch-events.ts';
import { createOnceServed, exampleCrd } from '../helpers/fixtures.ts';
import { decodeBody, goModuleCache, loadProtoMessages } from '../helpers/k8s-proto.ts';

// Both tenants use the same names: a leak would show as the other's object under the same name.
const ALPHA = 'cnalfa';
const BRAVO = 'cnbrav';
/** What client-go sends with ContentType protobuf. */
const PROTOBUF_ACCEPT = 'application/vnd.kubernetes.protobuf, application/json';
const PROTOBUF_ONLY = 'application/vnd.kubernetes.protobuf';
const PATH = '/apis/example.com/v1/namespaces/default/gadgets';

let stack: Stack;
let a: ClientHttp2Session;
let b: ClientHttp2Session;
let up: ClientHttp2Session;
t.before(async () => {
  stack = await startStack({ controllers: false });
  a = connectH2(credentialsOf((await createTestTenant(stack, ALPHA)).kubeconfig));
  b = connectH2(credentialsOf((await createTestTenant(stack, BRAVO)).kubeconfig));
  up = connectH2(credentialsOf(stack.upstreamKubeconfig));
  for (const session of [a, b]) {
    const crd = await h2Request(session, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(exampleCrd('Gadget', 'gadgets')),
    });
    if (crd.status !== 201) throw new Error(`CRD: ${crd.status} ${crd.body}`);
  }
  await makeGadget(a, 'same', ALPHA);
  await makeGadget(b, 'same', BRAVO);
  // A tenant's custom resource is cached once the tenant watches it: one JSON watch each starts its cache.
  for (const session of [a, b]) {
    const first = openWatch(session, `${PATH}?watch=1`);
    await first.until("the first watch's ADDED", (events) => events.length >= 1);
    first.close();
  }
  for (let i = 0; (await cacheMetric('tenantgate_watch_cache_objects', '_custom')) < 2; i++) {
    if (i === 100) throw new Error("the tenants' custom resources were not cached");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
});
t.teardown(async () => {
  for (const session of [a, b, up]) session?.close();
  await stack?.stop();
});

function makeGadget(session: ClientHttp2Session, name: string, owner: string): Promise<void> {
  return createOnceServed(session, PATH, { apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name }, spec: { owner } });
}

async function cacheMetric(name: string, resource: string): Promise<number> {
  return sumMetric(await (await fetch(stack.metricsUrl)).text(), name, { resource });
}

/** Lists of gadgets the apiserver has answered (of every tenant's upstream group). */
async function upstreamLists(): Promise<number> {
  return sumMetric((await h2Request(up, 'GET', '/metrics')).body, 'apiserver_request_total', { resource: 'gadgets', verb: 'LIST' });
}

const owners = (events: readonly WatchEvent[]) =>
  events.filter((e) => e.type !== 'BOOKMARK').map((e) => [e.type, e.object.metadata.namespace, e.object.metadata.name, e.object.spec.owner]);

t.test("client-go's protobuf-first watch of a custom resource: JSON from the cache, as the apiserver answers, each tenant its own", async (t) => {
  const direct = openWatch(up, `/apis/${ALPHA}-example.com/v1/namespaces/${ALPHA}-default/gadgets?watch=1`, { accept: PROTOBUF_ACCEPT });
  const directHead = await direct.head;
  t.equal(directHead[':status'], 200, 'the apiserver answers it');
  const before = await settled('upstream watches of gadgets', () => upstreamWatchCount(up, 'gadgets'));
  const alphaWatch = openWatch(a, `${PATH}?watch=1&allowWatchBookmarks=true`, { accept: PROTOBUF_ACCEPT });
  const bravoWatch = openWatch(b, `${PATH}?watch=1`, { accept: PROTOBUF_ACCEPT });
  for (const w of [alphaWatch, bravoWatch]) {
    const head = await w.head;
    t.equal(head[':status'], 200);
    t.equal(head['content-type'], directHead['content-type'], `the apiserver's content type (${directHead['content-type']})`);
  }
  t.equal(await upstreamWatchCount(up, 'gadgets'), before, "the tenants' watches added no upstream watch: the cache serves them");
  await makeGadget(a, 'later', ALPHA);
  await makeGadget(b, 'later', BRAVO);
  for (const w of [alphaWatch, bravoWatch, direct]) await w.until('the later gadget', (events) => events.some((e) => e.object?.metadata?.name === 'later'));
  await new Promise((resolve) => setTimeout(resolve, 300)); // anything of the other tenant's would have come by now
  t.same(
    owners(alphaWatch.events),
    [
      ['ADDED', 'default', 'same', ALPHA],
      ['ADDED', 'default', 'later', ALPHA],
    ],
    `${ALPHA}: its own gadgets only, in its own namespace`,
  );
  t.same(
    owners(bravoWatch.events),
    [
      ['ADDED', 'default', 'same', BRAVO],
      ['ADDED', 'default', 'later', BRAVO],
    ],
    `${BRAVO}: its own gadgets only`,
  );
  t.same(
    owners(direct.events).map(([type, , name]) => [type, name]),
    [
      ['ADDED', 'same'],
      ['ADDED', 'later'],
    ],
    "the apiserver's events, the same",
  );
  t.ok(
    alphaWatch.events.every((e) => e.type === 'BOOKMARK' || e.object.apiVersion === 'example.com/v1'),
    "in the tenant's group",
  );
  for (const w of [alphaWatch, bravoWatch, direct]) w.close();
});

t.test("client-go's protobuf-first list of a custom resource from the cache: JSON, as the apiserver answers", async (t) => {
  const direct = await h2Request(up, 'GET', `/apis/${ALPHA}-example.com/v1/namespaces/${ALPHA}-default/gadgets?resourceVersion=0`, {
    headers: { accept: PROTOBUF_ACCEPT },
  });
  t.equal(direct.status, 200);
  const listsBefore = await upstreamLists();
  for (const [session, owner] of [
    [a, ALPHA],
    [b, BRAVO],
  ] as const) {
    const answer = await h2Request(session, 'GET', `${PATH}?resourceVersion=0`, { headers: { accept: PROTOBUF_ACCEPT } });
    t.equal(answer.status, 200);
    t.equal(answer.headers['content-type'], direct.headers['content-type'], "the apiserver's content type");
    const list = JSON.parse(answer.body);
    t.equal(list.kind, 'GadgetList');
    t.same(
      list.items.map((i: any) => [i.metadata.name, i.spec.owner]).sort(),
      [
        ['later', owner],
        ['same', owner],
      ],
      `${owner}: its own gadgets only`,
    );
  }
  t.equal(await upstreamLists(), listsBefore, 'no list went upstream: the cache answered both');
});

// The cache leaves such a request to the upstream path, which refuses it before asking the apiserver (it would ask for
// JSON, the only encoding of custom resources, and answer in an encoding the client refused).
t.test("a custom resource asked for protobuf only: the apiserver's 406 Not Acceptable", async (t) => {
  for (const query of ['?watch=1&timeoutSeconds=3', '?resourceVersion=0']) {
    const direct = await h2Request(up, 'GET', `/apis/${ALPHA}-example.com/v1/namespaces/${ALPHA}-default/gadgets${query}`, {
      headers: { accept: PROTOBUF_ONLY },
    });
    t.equal(direct.status, 406, `${query}: the apiserver's 406`);
    const answer = await h2Request(a, 'GET', `${PATH}${query}`, { headers: { accept: PROTOBUF_ONLY } });
    t.equal(answer.status, direct.status, `${query}: the apiserver's status`);
    t.equal(answer.headers['content-type'], direct.headers['content-type'], `${query}: the apiserver's content type (its Status in protobuf)`);
    const status = decodeBody(loadProtoMessages(goModuleCache()!), 'k8s.io.apimachinery.pkg.apis.meta.v1.Status', answer.bytes);
    t.equal(status.code, 406, `${query}: a Status of code 406 (${status.message})`);
    t.notOk(String(status.message).includes(`${ALPHA}-`), `${query}: in the tenant's names`);
  }
});

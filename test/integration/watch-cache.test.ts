// The shared watch cache against the real apiserver: tenants' watches and cached lists see only their own objects,
// the events a cache watcher receives are the ones a direct upstream watch receives (after conversion), and the
// upstream holds one watch per cached resource however many tenant watchers there are.
import t from 'tap';
import type { ClientHttp2Session } from 'node:http2';
import { connectH2, credentialsOf, h2Request, sumMetric } from '../helpers/http.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';
import { openWatch, settled, type WatchEvent } from '../helpers/watch-events.ts';
import { createOnceServed, exampleCrd } from '../helpers/fixtures.ts';

let stack: Stack;
let alpha: TestTenant;
let bravo: TestTenant;
t.before(async () => {
  stack = await startStack({ controllers: false });
  alpha = await createTestTenant(stack, 'wcalfa');
  bravo = await createTestTenant(stack, 'wcbrav');
});
t.teardown(() => stack?.stop());

async function upstreamWatches(resource: string): Promise<number> {
  const session = connectH2(credentialsOf(stack.upstreamKubeconfig));
  try {
    const metrics = await h2Request(session, 'GET', '/metrics');
    return sumMetric(metrics.body, 'apiserver_longrunning_requests', { resource, verb: 'WATCH' });
  } finally {
    session.close();
  }
}

async function create(session: ClientHttp2Session, namespace: string, name: string, data: Record<string, string>, labels: Record<string, string> = {}) {
  const answer = await h2Request(session, 'POST', `/api/v1/namespaces/${namespace}/configmaps`, {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ metadata: { name, labels }, data }),
  });
  if (answer.status !== 201) throw new Error(`create ${name}: ${answer.status} ${answer.body}`);
  return JSON.parse(answer.body);
}

t.test('two tenants with the same names: each watch and cached list sees only its own objects', async (t) => {
  const a = connectH2(credentialsOf(alpha.kubeconfig));
  const b = connectH2(credentialsOf(bravo.kubeconfig));
  t.teardown(() => {
    a.close();
    b.close();
  });
  const inNamespace = openWatch(a, '/api/v1/namespaces/default/configmaps?watch=1&allowWatchBookmarks=true');
  const everywhere = openWatch(a, '/api/v1/configmaps?watch=1');
  t.equal(await inNamespace.status, 200);
  t.equal(await everywhere.status, 200);
  await create(b, 'default', 'same', { owner: 'bravo' });
  await create(a, 'default', 'same', { owner: 'alpha' });
  await inNamespace.until("alpha's ConfigMap", (events) => events.some((e) => e.object.metadata.name === 'same'));
  await everywhere.until("alpha's ConfigMap", (events) => events.some((e) => e.object.metadata.name === 'same'));
  for (const [label, watch] of [
    ['namespace', inNamespace],
    ['all namespaces', everywhere],
  ] as const) {
    const same = watch.events.filter((e) => e.object.metadata.name === 'same');
    t.same(
      same.map((e) => [e.type, e.object.data.owner, e.object.metadata.namespace]),
      [['ADDED', 'alpha', 'default']],
      `${label}: alpha's object only, in alpha's names`,
    );
    t.notOk(
      watch.events.some((e) => JSON.stringify(e).includes('wcbrav')),
      `${label}: nothing of bravo`,
    );
  }
  const list = await h2Request(a, 'GET', '/api/v1/namespaces/default/configmaps?resourceVersion=0');
  t.equal(list.status, 200);
  const body = JSON.parse(list.body);
  t.equal(body.kind, 'ConfigMapList');
  const same = body.items.filter((i: any) => i.metadata.name === 'same');
  t.same(
    same.map((i: any) => i.data.owner),
    ['alpha'],
    "the cached list holds alpha's object only",
  );
  t.notOk(list.body.includes('wcbrav'), 'nothing of bravo in the cached list');
  inNamespace.close();
  everywhere.close();
  const served = await cacheMetric('tenantgate_watch_cache_deliveries_total', 'configmaps');
  t.ok(served >= 2, `the cache delivered the events (tenantgate_watch_cache_deliveries_total{resource="configmaps"} = ${served})`);
});

async function cacheMetric(name: string, resource: string): Promise<number> {
  const text = await (await fetch(stack.metricsUrl)).text();
  return sumMetric(text, name, { resource });
}

t.test("a tenant custom resource is cached once the tenant watches it, and stays the tenant's", async (t) => {
  const a = connectH2(credentialsOf(alpha.kubeconfig));
  const b = connectH2(credentialsOf(bravo.kubeconfig));
  t.teardown(() => {
    a.close();
    b.close();
  });
  for (const session of [a, b]) {
    const crd = await h2Request(session, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(exampleCrd('Gizmo', 'gizmos')),
    });
    t.equal(crd.status, 201, 'CRD created');
  }
  const path = '/apis/example.com/v1/namespaces/default/gizmos';
  const makeGizmo = (session: ClientHttp2Session, name: string, owner: string) =>
    createOnceServed(session, path, { apiVersion: 'example.com/v1', kind: 'Gizmo', metadata: { name }, spec: { owner } });
  await makeGizmo(a, 'same', 'alpha');
  await makeGizmo(b, 'same', 'bravo');
  // The first watch goes upstream and starts the cache; later ones are served from it once it is in.
  const first = openWatch(a, `${path}?watch=1`);
  t.equal(await first.status, 200);
  await first.until("the first watch's ADDED", (events) => events.length >= 1);
  first.close();
  let cached = 0;
  // (Each tenant's custom resource is its own upstream resource: only alpha's is cached, bravo never watched its own.)
  for (let i = 0; i < 50 && cached === 0; i++) {
    await new Promise((r) => setTimeout(r, 100));
    cached = await cacheMetric('tenantgate_watch_cache_objects', '_custom');
  }
  t.equal(cached, 1, "alpha's custom resource is cached");
  const watch = openWatch(a, `${path}?watch=1&allowWatchBookmarks=true`);
  const deliveredBefore = await cacheMetric('tenantgate_watch_cache_deliveries_total', '_custom');
  await watch.until("alpha's gizmo", (events) => events.some((e) => e.object?.metadata?.name === 'same'));
  await makeGizmo(a, 'later', 'alpha');
  await makeGizmo(b, 'later', 'bravo');
  await watch.until("alpha's later gizmo", (events) => events.some((e) => e.object?.metadata?.name === 'later'));
  await new Promise((r) => setTimeout(r, 300));
  t.same(
    watch.events.map((e) => [e.type, e.object.apiVersion, e.object.metadata.namespace, e.object.metadata.name, e.object.spec.owner]),
    [
      ['ADDED', 'example.com/v1', 'default', 'same', 'alpha'],
      ['ADDED', 'example.com/v1', 'default', 'later', 'alpha'],
    ],
    'alpha sees its own gizmos only, in its own group and namespace',
  );
  t.ok((await cacheMetric('tenantgate_watch_cache_deliveries_total', '_custom')) > deliveredBefore, 'served from the cache');
  const list = await h2Request(a, 'GET', `${path}?resourceVersion=0`);
  t.same(
    JSON.parse(list.body)
      .items.map((i: any) => [i.metadata.name, i.spec.owner])
      .sort(),
    [
      ['later', 'alpha'],
      ['same', 'alpha'],
    ],
    'the cached list too',
  );
  t.equal(JSON.parse(list.body).kind, 'GizmoList');
  watch.close();
});

t.test('the upstream holds one watch per cached resource however many tenants watch', async (t) => {
  // (Settled first: on a shared rig, the watches of the tenantgate before this one may still be closing.)
  const before = await settled('upstream configmap watches', () => upstreamWatches('configmaps'));
  const sessions = [connectH2(credentialsOf(alpha.kubeconfig)), connectH2(credentialsOf(bravo.kubeconfig))];
  const watches = Array.from({ length: 20 }, (_, i) => openWatch(sessions[i % 2]!, `/api/v1/namespaces/default/configmaps?watch=1&allowWatchBookmarks=true`));
  for (const w of watches) t.equal(await w.status, 200);
  const during = await upstreamWatches('configmaps');
  t.equal(during, before, `20 tenant watches add no upstream watch (upstream configmap watches: ${during})`);
  t.ok(during >= 1, "the cache's own watch is there");
  for (const w of watches) w.close();
  for (const s of sessions) s.close();
});

t.test('a watcher whose client stops reading is closed, and the others get every event meanwhile', async (t) => {
  const slowSession = connectH2(credentialsOf(alpha.kubeconfig));
  const a = connectH2(credentialsOf(alpha.kubeconfig));
  t.teardown(() => {
    slowSession.destroy();
    a.close();
  });
  const closedBefore = await cacheMetric('tenantgate_watch_cache_slow_watchers_closed_total', 'configmaps');
  const slow = slowSession.request({
    ':path': '/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0&sendInitialEvents=false&resourceVersionMatch=NotOlderThan',
    accept: 'application/json',
  });
  let slowEnded = false;
  slow.on('response', () => slow.pause()); // reads nothing: HTTP/2 flow control stops the bytes, they pile up in tenantgate
  slow.on('close', () => (slowEnded = true));
  slow.on('error', () => (slowEnded = true));
  const reader = openWatch(a, '/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0&sendInitialEvents=false&resourceVersionMatch=NotOlderThan');
  t.equal(await reader.status, 200);
  // 12 ConfigMaps of 600 KB, each written 1 time: about 7 MB for a watcher that reads nothing (the bound is 4 MiB).
  const big = 'x'.repeat(600 * 1024);
  for (let i = 0; i < 12; i++) await create(a, 'default', `big-${i}`, { big });
  await reader.until('every big ConfigMap', (events) => events.filter((e) => e.object.metadata.name.startsWith('big-')).length === 12);
  let closed = await cacheMetric('tenantgate_watch_cache_slow_watchers_closed_total', 'configmaps');
  for (let i = 0; i < 100 && closed === closedBefore; i++) {
    await new Promise((r) => setTimeout(r, 100));
    closed = await cacheMetric('tenantgate_watch_cache_slow_watchers_closed_total', 'configmaps');
  }
  t.equal(closed, closedBefore + 1, 'counted as a slow watcher closed');
  // A paused client stream learns of the reset once it reads again: what arrived, then the end.
  slow.resume();
  const deadline = Date.now() + 10_000;
  while (!slowEnded && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  t.ok(slowEnded, 'the watch that read nothing was closed');
  t.notOk(reader.ended, 'the reading watcher goes on');
  reader.close();
});

t.test('a watch-list with resourceVersion unset starts from a consistent state, then follows the cache', async (t) => {
  const a = connectH2(credentialsOf(alpha.kubeconfig));
  const upstream = connectH2(credentialsOf(stack.upstreamKubeconfig));
  t.teardown(() => {
    a.close();
    upstream.close();
  });
  const query = 'watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true';
  // Written just before the watch-list starts: a consistent initial state holds it.
  const written = await create(a, 'default', 'just-written', { fresh: 'yes' });
  const deliveredBefore = await cacheMetric('tenantgate_watch_cache_deliveries_total', 'configmaps');
  const watchList = openWatch(a, `/api/v1/namespaces/default/configmaps?${query}`);
  const direct = openWatch(upstream, `/api/v1/namespaces/wcalfa-default/configmaps?${query}`);
  const initialEnd = (events: WatchEvent[]) =>
    events.some((e) => e.type === 'BOOKMARK' && e.object.metadata.annotations?.['k8s.io/initial-events-end'] === 'true');
  await watchList.until('the end of the initial events', initialEnd);
  await direct.until('the end of the direct initial events', initialEnd);
  const initialNames = (events: WatchEvent[]) =>
    events
      .slice(
        0,
        events.findIndex((e) => e.type === 'BOOKMARK'),
      )
      .map((e) => [e.type, e.object.metadata.name])
      .sort();
  t.same(initialNames(watchList.events), initialNames(direct.events), "the same initial ADDED events as the apiserver's own watch-list");
  t.ok(
    initialNames(watchList.events).some(([, name]) => name === 'just-written'),
    'the object written just before is in the initial state',
  );
  const bookmark = watchList.events.find((e) => e.type === 'BOOKMARK')!;
  t.ok(
    Number(bookmark.object.metadata.resourceVersion) >= Number(written.metadata.resourceVersion),
    'the initial-events-end bookmark is at least as new as that write',
  );
  t.equal(bookmark.object.kind, 'ConfigMap');
  await create(a, 'default', 'after-watch-list', { fresh: 'later' });
  await watchList.until('the next change', (events) => events.some((e) => e.object.metadata?.name === 'after-watch-list'));
  t.ok((await cacheMetric('tenantgate_watch_cache_deliveries_total', 'configmaps')) > deliveredBefore, 'served by the cache');
  t.notOk(
    watchList.events.some((e) => JSON.stringify(e).includes('wcbrav')),
    'nothing of bravo',
  );
  watchList.close();
  direct.close();
});

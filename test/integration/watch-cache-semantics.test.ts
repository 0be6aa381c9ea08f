// The watch cache answers tenants' watches and lists with the apiserver's own semantics: each test opens the same
// watch or list through tenantgate (served by the cache) and straight against the apiserver for the tenant's upstream
// namespace, and asserts the two agree, event for event — resourceVersions, bookmarks, watch-lists, selectors,
// timeouts, paging — and that no answer ever carries the other tenant's objects.
import t, { type Test } from 'tap';
import type { ClientHttp2Session } from 'node:http2';
import { connectH2, credentialsOf, h1Request, h2Request, sumMetric, type Answer } from '../helpers/http.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';
import { decodeBody, decodeWatchFrames, goModuleCache, loadProtoMessages, withoutZeroValues } from '../helpers/k8s-proto.ts';
import { openWatch, settled, summary, upstreamWatchCount, type OpenedWatch, type WatchEvent } from '../helpers/watch-events.ts';

// Both tenants use the same namespace and object names: a leak would show as the other's objects under the same name.
const ALPHA = 'abcdef';
const BRAVO = 'zyxwvu';

/** What client-go sends with ContentType protobuf. */
const PROTOBUF_ACCEPT = 'application/vnd.kubernetes.protobuf, application/json';
const moduleCache = goModuleCache();
if (moduleCache === undefined) throw new Error('the Go module cache of the rig is missing: npm run rig');
const messages = loadProtoMessages(moduleCache);

let stack: Stack;
let alpha: TestTenant;
let bravo: TestTenant;
let a: ClientHttp2Session;
let b: ClientHttp2Session;
let up: ClientHttp2Session;
t.before(async () => {
  stack = await startStack({ controllers: false });
  alpha = await createTestTenant(stack, ALPHA);
  bravo = await createTestTenant(stack, BRAVO);
  a = connectH2(credentialsOf(alpha.kubeconfig));
  b = connectH2(credentialsOf(bravo.kubeconfig));
  up = connectH2(credentialsOf(stack.upstreamKubeconfig));
  await createNamespaces(a, [
    'sem-rv',
    'sem-bookmarks',
    'sem-watchlist',
    'sem-labels',
    'sem-fields',
    'sem-pods',
    'sem-list',
    'sem-other',
    'sem-exact',
    'sem-proto',
  ]);
  await createNamespaces(b, ['sem-rv', 'sem-watchlist', 'sem-fields', 'sem-list', 'sem-proto']);
});
t.teardown(async () => {
  for (const session of [a, b, up]) session?.close();
  await stack?.stop();
});

async function send(
  session: ClientHttp2Session,
  method: string,
  path: string,
  body: unknown,
  expected: number,
  contentType = 'application/json',
): Promise<any> {
  const answer = await h2Request(session, method, path, { headers: { 'content-type': contentType }, body: JSON.stringify(body) });
  if (answer.status !== expected) throw new Error(`${method} ${path}: ${answer.status} ${answer.body}`);
  return JSON.parse(answer.body);
}

/** Creates the tenant's namespaces; resolves once it may write in each (its RoleBindings there come a moment later). */
async function createNamespaces(session: ClientHttp2Session, names: string[]): Promise<void> {
  for (const name of names) await send(session, 'POST', '/api/v1/namespaces', { metadata: { name } }, 201);
  for (const name of names) {
    for (let attempt = 0; ; attempt++) {
      const probe = await h2Request(session, 'POST', `/api/v1/namespaces/${name}/configmaps?dryRun=All`, {
        headers: { 'content-type': 'application/json' },
        body: '{"metadata":{"name":"probe"}}',
      });
      if (probe.status === 201) break;
      if (attempt === 150) throw new Error(`the tenant may not write in its namespace ${name}: ${probe.status} ${probe.body}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

function createConfigMap(session: ClientHttp2Session, namespace: string, name: string, labels: Record<string, string> = {}, data: Record<string, string> = {}) {
  return send(session, 'POST', `/api/v1/namespaces/${namespace}/configmaps`, { metadata: { name, labels }, data }, 201);
}

function patchConfigMap(session: ClientHttp2Session, namespace: string, name: string, patch: unknown) {
  return send(session, 'PATCH', `/api/v1/namespaces/${namespace}/configmaps/${name}`, patch, 200, 'application/merge-patch+json');
}

async function getJson(session: ClientHttp2Session, path: string): Promise<Answer> {
  return h2Request(session, 'GET', path, { headers: { accept: 'application/json' } });
}

/** The same watch through tenantgate as tenant alpha, and straight on the apiserver in alpha's upstream namespace. */
function pair(namespace: string, query: string): { tenant: OpenedWatch; direct: OpenedWatch } {
  return {
    tenant: openWatch(a, `/api/v1/namespaces/${namespace}/configmaps?watch=1&${query}`),
    direct: openWatch(up, `/api/v1/namespaces/${ALPHA}-${namespace}/configmaps?watch=1&${query}`),
  };
}

const hasEvent = (type: string, name: string) => (events: WatchEvent[]) => events.some((e) => e.type === type && e.object?.metadata?.name === name);
const withoutBookmarks = (events: readonly WatchEvent[]) => events.filter((e) => e.type !== 'BOOKMARK');

/** Opening `open` adds no upstream watch of `resource`: the cache serves it. */
async function servedByCache(t: Test, resource: string, open: () => OpenedWatch[]): Promise<OpenedWatch[]> {
  const before = await settled(`upstream watches of ${resource}`, () => upstreamWatchCount(up, resource));
  const watches = open();
  for (const w of watches) t.equal(await w.status, 200);
  t.equal(await upstreamWatchCount(up, resource), before, `${watches.length} tenant watch(es) of ${resource} added no upstream watch: the cache serves them`);
  return watches;
}

t.test('resourceVersion unset, "0" and a specific one: the apiserver\'s events, initial state or replay', async (t) => {
  const first = await createConfigMap(a, 'sem-rv', 'one');
  await createConfigMap(a, 'sem-rv', 'two');
  await createConfigMap(b, 'sem-rv', 'one', {}, { owner: BRAVO });
  const from = first.metadata.resourceVersion;
  const queries = { unset: '', zero: 'resourceVersion=0', specific: `resourceVersion=${from}` };
  const tenant = await servedByCache(t, 'configmaps', () =>
    Object.values(queries).map((q) => openWatch(a, `/api/v1/namespaces/sem-rv/configmaps?watch=1&${q}`)),
  );
  const direct = Object.values(queries).map((q) => openWatch(up, `/api/v1/namespaces/${ALPHA}-sem-rv/configmaps?watch=1&${q}`));
  // Both sides must have started before the changes, or the direct side would see them as initial state.
  for (const w of direct) t.equal(await w.status, 200);
  await tenant[2]!.until('the replay', hasEvent('ADDED', 'two'));
  await direct[2]!.until('the replay', hasEvent('ADDED', 'two'));
  await patchConfigMap(a, 'sem-rv', 'one', { data: { changed: 'yes' } });
  await send(a, 'DELETE', '/api/v1/namespaces/sem-rv/configmaps/two', {}, 200);
  await patchConfigMap(b, 'sem-rv', 'one', { data: { changed: 'bravo' } });
  const names = Object.keys(queries);
  for (let i = 0; i < names.length; i++) {
    await tenant[i]!.until(`${names[i]}: the deletion`, hasEvent('DELETED', 'two'));
    await direct[i]!.until(`${names[i]}: the deletion`, hasEvent('DELETED', 'two'));
    t.same(summary(tenant[i]!.events), summary(direct[i]!.events), `${names[i]}: the same events as the apiserver's (types, order, objects, resourceVersions)`);
    t.notOk(
      tenant[i]!.events.some((e) => e.object.data?.owner === BRAVO || e.object.data?.changed === 'bravo'),
      `${names[i]}: nothing of ${BRAVO}'s object of the same name`,
    );
    t.ok(
      tenant[i]!.events.every((e) => e.object.metadata.namespace === 'sem-rv'),
      `${names[i]}: in the tenant's names`,
    );
  }
  t.same(
    summary(tenant[2]!.events).map(([type, name]) => [type, name]),
    [
      ['ADDED', 'two'],
      ['MODIFIED', 'one'],
      ['DELETED', 'two'],
    ],
    'the specific resourceVersion replays what came after it, and no initial state',
  );
  t.same(
    summary(tenant[0]!.events)
      .slice(0, 2)
      .map(([type, name]) => [type, name]),
    [
      ['ADDED', 'one'],
      ['ADDED', 'two'],
    ],
    'unset: the initial state first',
  );
  for (const w of [...tenant, ...direct]) w.close();
});

t.test("a resourceVersion older than the history: 200, then one ERROR event with the apiserver's 410 Expired Status", async (t) => {
  // The rig's apiserver still holds every configmap event since it started, so it replays resourceVersion=1 there.
  // Its own answer for a version older than its window, from a custom resource whose watch cache begins now:
  await send(
    up,
    'POST',
    '/apis/apiextensions.k8s.io/v1/customresourcedefinitions',
    {
      metadata: { name: 'probes.semantics.example.com' },
      spec: {
        group: 'semantics.example.com',
        scope: 'Namespaced',
        names: { plural: 'probes', singular: 'probe', kind: 'Probe', listKind: 'ProbeList' },
        versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
      },
    },
    201,
  );
  let directAnswer: Answer;
  for (let attempt = 0; ; attempt++) {
    // Until its cache is initialized the apiserver answers 429 (or 404 before the CRD is served).
    directAnswer = await getJson(up, '/apis/semantics.example.com/v1/namespaces/default/probes?watch=1&resourceVersion=1&timeoutSeconds=5');
    if (directAnswer.status === 200 || attempt === 100) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  t.equal(directAnswer.status, 200, 'the apiserver answers a too-old watch with 200');
  const cached = await getJson(a, '/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=1&timeoutSeconds=5');
  t.equal(cached.status, 200, 'so does the cache');
  t.equal(cached.headers['content-type'], directAnswer.headers['content-type']);
  const lines = cached.body.split('\n').filter((line) => line !== '');
  t.equal(lines.length, 1, 'one event, then the watch ends');
  const event = JSON.parse(lines[0]!);
  t.match(event.object.message, /^too old resource version: 1 \(\d+\)$/, 'the message names the version asked for and the oldest kept, as the apiserver does');
  const numbersOut = (line: string) => line.replace(/too old resource version: \d+ \(\d+\)/, 'too old resource version: N (M)');
  t.equal(numbersOut(lines[0]!), numbersOut(directAnswer.body.trim()), "the ERROR event byte for byte the apiserver's, but for the numbers");
  t.same(event, {
    type: 'ERROR',
    object: { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message: event.object.message, reason: 'Expired', code: 410 },
  });
});

t.test('allowWatchBookmarks: a BOOKMARK at the newest resourceVersion before the watch times out, as the apiserver sends', async (t) => {
  // The apiserver sends one 2 s before the deadline, and then every minute; the minute is not waited for here.
  const start = (await getJson(a, '/api/v1/namespaces/sem-bookmarks/configmaps')).json().metadata.resourceVersion;
  const bookmarked = pair('sem-bookmarks', `resourceVersion=${start}&allowWatchBookmarks=true&timeoutSeconds=4`);
  const plain = pair('sem-bookmarks', `resourceVersion=${start}&timeoutSeconds=4`);
  for (const w of [bookmarked.tenant, bookmarked.direct, plain.tenant, plain.direct]) t.equal(await w.status, 200);
  const created = await createConfigMap(a, 'sem-bookmarks', 'marked');
  const rv = Number(created.metadata.resourceVersion);
  await Promise.all([bookmarked.tenant.done, bookmarked.direct.done, plain.tenant.done, plain.direct.done]);
  for (const [label, watch] of [
    ['tenant', bookmarked.tenant],
    ['direct', bookmarked.direct],
  ] as const) {
    const bookmarks = watch.events.filter((e) => e.type === 'BOOKMARK');
    t.ok(bookmarks.length >= 1, `${label}: a bookmark before the end`);
    const last = bookmarks.at(-1)!;
    t.same(Object.keys(last.object).sort(), ['apiVersion', 'kind', 'metadata'], `${label}: a bookmark is only its kind and resourceVersion`);
    t.match(last.object, { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: String } });
    t.ok(Number(last.object.metadata.resourceVersion) >= rv, `${label}: at the newest resourceVersion (${last.object.metadata.resourceVersion} ≥ ${rv})`);
    t.same(
      summary(withoutBookmarks(watch.events)).map(([type, name]) => [type, name]),
      [['ADDED', 'marked']],
    );
  }
  t.notOk(
    plain.tenant.events.some((e) => e.type === 'BOOKMARK'),
    'no bookmark for a watch that did not ask for them',
  );
  t.notOk(
    plain.direct.events.some((e) => e.type === 'BOOKMARK'),
    '(nor from the apiserver)',
  );
});

t.test("watch-list (sendInitialEvents): ADDED events, then the bookmark annotated initial-events-end, as the apiserver's", async (t) => {
  for (const name of ['c', 'a', 'b']) await createConfigMap(a, 'sem-watchlist', name, { app: 'listed' });
  await createConfigMap(b, 'sem-watchlist', 'a', { app: 'listed' }, { owner: BRAVO });
  await createConfigMap(b, 'sem-watchlist', 'only-bravo');
  const rv = (await getJson(a, '/api/v1/namespaces/sem-watchlist/configmaps')).json().metadata.resourceVersion;
  const query = `sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=${rv}&allowWatchBookmarks=true`;
  const [tenant] = await servedByCache(t, 'configmaps', () => [openWatch(a, `/api/v1/namespaces/sem-watchlist/configmaps?watch=1&${query}`)]);
  const everywhere = openWatch(a, `/api/v1/configmaps?watch=1&${query}&labelSelector=app%3Dlisted`);
  const direct = openWatch(up, `/api/v1/namespaces/${ALPHA}-sem-watchlist/configmaps?watch=1&${query}`);
  const isEnd = (e: WatchEvent) => e.type === 'BOOKMARK' && e.object.metadata.annotations?.['k8s.io/initial-events-end'] === 'true';
  for (const w of [tenant!, everywhere, direct]) await w.until('the end of the initial events', (events) => events.some(isEnd));
  const initial = (w: OpenedWatch) => w.events.slice(0, w.events.findIndex(isEnd) + 1);
  t.same(summary(initial(tenant!)), summary(initial(direct)), 'the same ADDED events in the same order, and the bookmark at the same resourceVersion');
  t.same(
    initial(tenant!).map((e) => e.object.metadata.name ?? ''),
    ['a', 'b', 'c', ''],
    'in name order, then the bookmark',
  );
  const end = initial(tenant!).at(-1)!;
  t.same(
    end.object,
    {
      kind: 'ConfigMap',
      apiVersion: 'v1',
      metadata: { resourceVersion: end.object.metadata.resourceVersion, annotations: { 'k8s.io/initial-events-end': 'true' } },
    },
    'the bookmark as the apiserver writes it',
  );
  t.same(end.object, initial(direct).at(-1)!.object, "the bookmark equal to the apiserver's");
  t.same(
    initial(everywhere).map((e) => [e.type, e.object.metadata.namespace ?? '', e.object.metadata.name ?? '']),
    [
      ['ADDED', 'sem-watchlist', 'a'],
      ['ADDED', 'sem-watchlist', 'b'],
      ['ADDED', 'sem-watchlist', 'c'],
      ['BOOKMARK', '', ''],
    ],
    "all namespaces with a label selector: alpha's selected objects only",
  );
  for (const w of [tenant!, everywhere])
    t.notOk(
      w.events.some((e) => e.object.data?.owner === BRAVO || e.object.metadata.name === 'only-bravo'),
      `nothing of ${BRAVO}'s`,
    );
  await createConfigMap(a, 'sem-watchlist', 'later', { app: 'listed' });
  for (const w of [tenant!, everywhere, direct]) await w.until('the event after the initial ones', hasEvent('ADDED', 'later'));
  t.same(summary(withoutBookmarks(tenant!.events)), summary(withoutBookmarks(direct.events)), "then the same events as the apiserver's");
  for (const w of [tenant!, everywhere, direct]) w.close();
});

t.test('label selectors: a label change moves an object out of the selection (DELETED) and back in (ADDED), as the apiserver says', async (t) => {
  await createConfigMap(a, 'sem-labels', 'mover', { app: 'in', tier: 'x' });
  await createConfigMap(a, 'sem-labels', 'stay', { app: 'in' });
  await createConfigMap(a, 'sem-labels', 'other', { app: 'no' });
  const selectors = ['labelSelector=app%3Din', 'labelSelector=app%20in%20(in%2Cmaybe)%2C!gone', 'labelSelector=app!%3Dno'];
  const watches = selectors.map((selector) => pair('sem-labels', `resourceVersion=0&${selector}`));
  const patch = (name: string, labels: Record<string, string | null>) => patchConfigMap(a, 'sem-labels', name, { metadata: { labels } });
  for (const w of watches)
    await Promise.all([w.tenant.until('the initial state', hasEvent('ADDED', 'stay')), w.direct.until('the initial state', hasEvent('ADDED', 'stay'))]);
  await patch('mover', { app: 'out' });
  await patch('other', { tier: 'y' });
  await patch('mover', { app: 'in' });
  await patch('mover', { gone: 'yes' });
  await patch('stay', { tier: 'last' });
  for (const [i, w] of watches.entries()) {
    await w.tenant.until('the last change', (events) => events.some((e) => e.object.metadata.labels?.tier === 'last'));
    await w.direct.until('the last change', (events) => events.some((e) => e.object.metadata.labels?.tier === 'last'));
    t.same(summary(w.tenant.events), summary(w.direct.events), `${decodeURIComponent(selectors[i]!)}: the apiserver's events`);
    t.notOk(
      w.tenant.events.some((e) => e.object.metadata.name === 'other'),
      'never the object the selector never selected',
    );
  }
  t.same(
    summary(watches[0]!.tenant.events).map(([type, name]) => [type, name]),
    [
      ['ADDED', 'mover'],
      ['ADDED', 'stay'],
      ['DELETED', 'mover'],
      ['ADDED', 'mover'],
      ['MODIFIED', 'mover'],
      ['MODIFIED', 'stay'],
    ],
  );
  // The apiserver's cacher sends the object as it was before the change (still selected), at the change's resourceVersion.
  const deleted = watches[0]!.tenant.events[2]!;
  const deletedDirectly = watches[0]!.direct.events[2]!;
  t.equal(deleted.object.metadata.labels.app, 'in', 'the DELETED event carries the object as it was before the change');
  const { ['kubezoo.io/tenant']: _tenantLabel, ...directLabels } = deletedDirectly.object.metadata.labels;
  t.same(
    [deleted.object.metadata.labels, deleted.object.metadata.resourceVersion],
    [directLabels, deletedDirectly.object.metadata.resourceVersion],
    "as the apiserver's does (without the tenant label), at the same resourceVersion",
  );
  t.same(
    summary(watches[1]!.tenant.events)
      .map(([type, name]) => [type, name])
      .slice(-2),
    [
      ['DELETED', 'mover'],
      ['MODIFIED', 'stay'],
    ],
    'a set-based selector: the label that appears (!gone) moves it out',
  );
  const tenantLabel = await getJson(a, '/api/v1/namespaces/sem-labels/configmaps?watch=1&resourceVersion=0&labelSelector=kubezoo.io%2Ftenant%3Dzyxwvu');
  t.equal(tenantLabel.status, 400, 'a selector on the tenant label is refused, as on the upstream path');
  for (const w of watches) {
    w.tenant.close();
    w.direct.close();
  }
});

t.test("field selectors: metadata.name, metadata.namespace across namespaces, pods' spec.nodeName and status.phase", async (t) => {
  await createConfigMap(a, 'sem-fields', 'named');
  await createConfigMap(a, 'sem-fields', 'unnamed');
  await createConfigMap(b, 'sem-fields', 'named', {}, { owner: BRAVO });
  const byName = pair('sem-fields', 'resourceVersion=0&fieldSelector=metadata.name%3Dnamed');
  const notName = pair('sem-fields', 'resourceVersion=0&fieldSelector=metadata.name!%3Dnamed');
  const inNamespace = {
    tenant: openWatch(a, '/api/v1/configmaps?watch=1&resourceVersion=0&fieldSelector=metadata.namespace%3Dsem-fields'),
    direct: openWatch(up, `/api/v1/configmaps?watch=1&resourceVersion=0&fieldSelector=metadata.namespace%3D${ALPHA}-sem-fields`),
  };
  // Each watch has its initial state before the changes, or a change could show as initial state.
  for (const [w, first] of [
    [byName, 'named'],
    [notName, 'unnamed'],
    [inNamespace, 'unnamed'],
  ] as const) {
    await w.tenant.until('the initial state', hasEvent('ADDED', first));
    await w.direct.until('the initial state', hasEvent('ADDED', first));
  }
  await patchConfigMap(a, 'sem-fields', 'named', { data: { step: '1' } });
  await patchConfigMap(a, 'sem-fields', 'unnamed', { data: { step: '1' } });
  await patchConfigMap(b, 'sem-fields', 'named', { data: { step: '1' } });
  for (const [label, w, last] of [
    ['metadata.name=', byName, 'named'],
    ['metadata.name!=', notName, 'unnamed'],
    ['metadata.namespace= (all namespaces)', inNamespace, 'unnamed'],
  ] as const) {
    await w.tenant.until(`${label} (tenant)`, hasEvent('MODIFIED', last));
    await w.direct.until(`${label} (direct)`, hasEvent('MODIFIED', last));
    t.same(summary(w.tenant.events), summary(w.direct.events), `${label}: the apiserver's events`);
    t.notOk(
      w.tenant.events.some((e) => e.object.data?.owner === BRAVO),
      `${label}: nothing of ${BRAVO}'s`,
    );
    t.ok(
      w.tenant.events.every((e) => e.object.metadata.namespace === 'sem-fields'),
      `${label}: in the tenant's names`,
    );
    w.tenant.close();
    w.direct.close();
  }
  t.same(
    summary(byName.tenant.events).map(([type, name]) => [type, name]),
    [
      ['ADDED', 'named'],
      ['MODIFIED', 'named'],
    ],
  );

  // Pods without a scheduler or kubelet stay Pending; their status is the tenant's to change here.
  await send(a, 'POST', '/api/v1/namespaces/sem-pods/serviceaccounts', { metadata: { name: 'default' } }, 201);
  const pod = (name: string, nodeName?: string) =>
    send(
      a,
      'POST',
      '/api/v1/namespaces/sem-pods/pods',
      { metadata: { name }, spec: { ...(nodeName === undefined ? {} : { nodeName }), containers: [{ name: 'c', image: 'busybox' }] } },
      201,
    );
  await pod('on-node', 'node-1');
  await pod('unbound');
  const podWatch = (session: ClientHttp2Session, namespace: string, selector: string) =>
    openWatch(session, `/api/v1/namespaces/${namespace}/pods?watch=1&resourceVersion=0&fieldSelector=${encodeURIComponent(selector)}`);
  // Each selector, and the last event its watch sees once the pod starts running and the other is labelled.
  const expectations: [string, string, string][] = [
    ['spec.nodeName=node-1', 'MODIFIED', 'on-node'],
    ['spec.nodeName=', 'MODIFIED', 'unbound'],
    ['status.phase=Pending', 'MODIFIED', 'unbound'],
    ['status.phase=Running', 'ADDED', 'on-node'],
    ['status.phase=Pending,spec.nodeName=node-1', 'DELETED', 'on-node'],
  ];
  const podWatches = await servedByCache(t, 'pods', () => expectations.map(([selector]) => podWatch(a, 'sem-pods', selector)));
  const podDirect = expectations.map(([selector]) => podWatch(up, `${ALPHA}-sem-pods`, selector));
  for (const w of podDirect) t.equal(await w.status, 200);
  await send(a, 'PATCH', '/api/v1/namespaces/sem-pods/pods/on-node/status', { status: { phase: 'Running' } }, 200, 'application/merge-patch+json');
  await send(a, 'PATCH', '/api/v1/namespaces/sem-pods/pods/unbound', { metadata: { labels: { last: 'yes' } } }, 200, 'application/merge-patch+json');
  for (const [i, [selector, type, name]] of expectations.entries()) {
    await podWatches[i]!.until(`${selector} (tenant)`, hasEvent(type, name));
    await podDirect[i]!.until(`${selector} (direct)`, hasEvent(type, name));
    t.same(summary(podWatches[i]!.events), summary(podDirect[i]!.events), `${selector}: the apiserver's events`);
    podWatches[i]!.close();
    podDirect[i]!.close();
  }
  t.same(
    summary(podWatches[2]!.events)
      .map(([type, name]) => [type, name])
      .filter(([, name]) => name === 'on-node'),
    [
      ['ADDED', 'on-node'],
      ['DELETED', 'on-node'],
    ],
    'status.phase=Pending: the pod that starts running leaves',
  );
  t.same(
    summary(podWatches[3]!.events).map(([type, name]) => [type, name]),
    [['ADDED', 'on-node']],
    'status.phase=Running: and arrives there',
  );
});

t.test('timeoutSeconds ends the watch, over HTTP/2 and HTTP/1.1 (chunked)', async (t) => {
  const h2 = openWatch(a, '/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0&timeoutSeconds=2');
  t.equal(await h2.status, 200);
  const h1 = h1Request(credentialsOf(alpha.kubeconfig), 'GET', '/api/v1/namespaces/sem-rv/configmaps?watch=1&timeoutSeconds=2', {
    headers: { accept: 'application/json' },
  });
  const deadline = (what: string) => new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what} still open after 15 s`)), 15_000).unref());
  const started = Date.now();
  await Promise.race([h2.done, deadline('the HTTP/2 watch')]);
  t.ok(h2.ended, 'the HTTP/2 watch ended by itself');
  const answer = await Promise.race([h1, deadline('the HTTP/1.1 watch')]);
  t.ok(Date.now() - started >= 1_500, 'not before its timeout');
  t.equal(answer.status, 200);
  t.equal(answer.headers['transfer-encoding'], 'chunked', 'HTTP/1.1: chunked, as the apiserver streams a watch');
  t.equal(answer.headers['content-type'], 'application/json');
  const events = answer.body
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as WatchEvent);
  t.same(
    events.map((e) => [e.type, e.object.metadata.name]),
    [['ADDED', 'one']],
    "its events, one JSON object a line (alpha's objects of sem-rv)",
  );
});

t.test("cached lists: resourceVersion=0 with limit and continue pages through the consistent list's items", async (t) => {
  for (let i = 0; i < 7; i++) {
    await createConfigMap(a, 'sem-list', `item-${i}`, { parity: i % 2 === 0 ? 'even' : 'odd' });
    await createConfigMap(b, 'sem-list', `item-${i}`, {}, { owner: BRAVO });
  }
  const consistent = (await getJson(a, '/api/v1/namespaces/sem-list/configmaps')).json();
  t.equal(consistent.items.length, 7);
  // NotOlderThan the consistent list's resourceVersion: the cache waits until it has seen it, then answers.
  const notOlder = (
    await getJson(a, `/api/v1/namespaces/sem-list/configmaps?resourceVersionMatch=NotOlderThan&resourceVersion=${consistent.metadata.resourceVersion}`)
  ).json();
  t.same(notOlder.items, consistent.items, "resourceVersionMatch=NotOlderThan: the consistent list's items");
  t.ok(Number(notOlder.metadata.resourceVersion) >= Number(consistent.metadata.resourceVersion), 'at a resourceVersion not older than asked');
  const pages: any[] = [];
  let path = '/api/v1/namespaces/sem-list/configmaps?resourceVersion=0&limit=3';
  for (;;) {
    const answer = await getJson(a, path);
    t.equal(answer.status, 200);
    const page = answer.json();
    pages.push(page);
    if (page.metadata.continue === undefined) break;
    path = `/api/v1/namespaces/sem-list/configmaps?limit=3&continue=${encodeURIComponent(page.metadata.continue)}`;
    if (pages.length > 5) break;
  }
  t.same(
    pages.map((p) => p.items.length),
    [3, 3, 1],
    'three pages',
  );
  t.same(
    pages.map((p) => p.metadata.remainingItemCount),
    [4, 1, undefined],
    'remainingItemCount counts what is left, and goes once nothing is',
  );
  t.ok(pages[0].metadata.continue.startsWith('tgwc.'), "the cache's own continue token: the cache answered");
  t.same(
    pages.map((p) => p.kind),
    ['ConfigMapList', 'ConfigMapList', 'ConfigMapList'],
  );
  t.ok(
    pages.every((p) => p.metadata.resourceVersion === pages[0].metadata.resourceVersion),
    "every page from the first page's snapshot",
  );
  t.same(
    pages.flatMap((p) => p.items),
    consistent.items,
    'the items, in order, equal those of a consistent list',
  );
  // The apiserver itself answers resourceVersion=0 whole, whatever the limit; its paged (consistent) list is the reference.
  const directPages: any[] = [];
  for (let next = ''; directPages.length < 5;) {
    const page = (
      await getJson(up, `/api/v1/namespaces/${ALPHA}-sem-list/configmaps?limit=3${next === '' ? '' : `&continue=${encodeURIComponent(next)}`}`)
    ).json();
    directPages.push(page);
    next = page.metadata.continue ?? '';
    if (next === '') break;
  }
  t.same(
    pages.map((p) => [p.items.length, p.metadata.remainingItemCount]),
    directPages.map((p) => [p.items.length, p.metadata.remainingItemCount]),
    "the pages and remainders of the apiserver's own paged list",
  );
  t.same(
    pages.flatMap((p) => p.items.map((i: any) => [i.metadata.name, i.metadata.resourceVersion])),
    directPages.flatMap((p) => p.items.map((i: any) => [i.metadata.name, i.metadata.resourceVersion])),
  );
  const selected = (await getJson(a, '/api/v1/namespaces/sem-list/configmaps?resourceVersion=0&limit=2&labelSelector=parity%3Deven')).json();
  const directSelected = (await getJson(up, `/api/v1/namespaces/${ALPHA}-sem-list/configmaps?limit=2&labelSelector=parity%3Deven`)).json();
  t.same(
    selected.items.map((i: any) => i.metadata.name),
    ['item-0', 'item-2'],
  );
  t.equal(selected.metadata.remainingItemCount, undefined, 'with a selector, no remainingItemCount');
  t.equal(directSelected.metadata.remainingItemCount, undefined, '(as the apiserver)');
  t.ok(selected.metadata.continue, 'but a continue token');

  // A token is its tenant's: another tenant's request with it is refused, and learns nothing of the list.
  const token = (await getJson(a, '/api/v1/namespaces/sem-list/configmaps?resourceVersion=0&limit=2')).json().metadata.continue;
  const stolen = await getJson(b, `/api/v1/namespaces/sem-list/configmaps?limit=2&continue=${encodeURIComponent(token)}`);
  t.equal(stolen.status, 400, "another tenant's continue token: 400");
  t.match(stolen.json(), { kind: 'Status', code: 400, reason: 'BadRequest' });
  t.notOk(stolen.body.includes('item-'), 'and no item');
  const decoded = JSON.parse(Buffer.from(token.slice('tgwc.'.length), 'base64url').toString());
  const forged = 'tgwc.' + Buffer.from(JSON.stringify({ ...decoded, t: BRAVO })).toString('base64url');
  const forgedAnswer = await getJson(b, `/api/v1/namespaces/sem-list/configmaps?limit=2&continue=${encodeURIComponent(forged)}`);
  t.equal(forgedAnswer.status, 400, 'nor with the token rewritten to name the other tenant');
  t.notOk(forgedAnswer.body.includes('item-'));
  const own = await getJson(a, `/api/v1/namespaces/sem-list/configmaps?limit=2&continue=${encodeURIComponent(token)}`);
  t.same(
    own.json().items.map((i: any) => i.metadata.name),
    ['item-2', 'item-3'],
    'the token still serves its own tenant',
  );
  const bravoList = (await getJson(b, '/api/v1/namespaces/sem-list/configmaps?resourceVersion=0')).json();
  t.ok(
    bravoList.items.every((i: any) => i.data?.owner === BRAVO),
    `${BRAVO}'s cached list: its own objects only`,
  );
});

/** The watch cache's tenantgate_watch_cache_bytes for `resource`. */
async function cacheBytes(resource: string): Promise<number> {
  return sumMetric(await (await fetch(stack.metricsUrl)).text(), 'tenantgate_watch_cache_bytes', { resource });
}

/** A protobuf watch as client-go opens one: its frames decoded (ConfigMaps) as they come. */
function openProtobufWatch(session: ClientHttp2Session, path: string) {
  const stream = session.request({ ':path': path, accept: PROTOBUF_ACCEPT });
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  const head = new Promise<Record<string, unknown>>((resolve) => {
    stream.on('response', (h) => resolve(h));
    stream.on('close', () => resolve({}));
  });
  const done = new Promise<void>((resolve) => stream.on('close', resolve));
  const events = (): { type: string; object: any }[] => decodeWatchFrames(messages, 'k8s.io.api.core.v1.ConfigMap', Buffer.concat(chunks));
  return {
    head,
    done,
    bytes: () => Buffer.concat(chunks),
    events,
    close: () => stream.close(),
    async until(what: string, check: (events: { type: string; object: any }[]) => boolean, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (!check(events())) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; got ${JSON.stringify(summary(events()))}`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
  };
}

t.test("protobuf watches (client-go's Accept) are served by the cache: each tenant its own events, as the apiserver's frames", async (t) => {
  const first = await createConfigMap(a, 'sem-proto', 'same', { app: 'x' }, { owner: ALPHA });
  await createConfigMap(b, 'sem-proto', 'same', { app: 'x' }, { owner: BRAVO });
  const from = first.metadata.resourceVersion;
  const before = await settled('upstream watches of configmaps', () => upstreamWatchCount(up, 'configmaps'));
  const bytesBefore = await cacheBytes('configmaps');
  const alphaWatch = openProtobufWatch(a, `/api/v1/namespaces/sem-proto/configmaps?watch=1&resourceVersion=${from}&allowWatchBookmarks=true`);
  const bravoWatch = openProtobufWatch(b, '/api/v1/namespaces/sem-proto/configmaps?watch=1');
  const acrossWatch = openProtobufWatch(a, '/api/v1/configmaps?watch=1&labelSelector=app%3Dx');
  for (const w of [alphaWatch, bravoWatch, acrossWatch]) {
    const head = await w.head;
    t.equal(head[':status'], 200);
    t.equal(head['content-type'], 'application/vnd.kubernetes.protobuf;stream=watch', "the apiserver's content type for a protobuf watch");
  }
  t.equal(await upstreamWatchCount(up, 'configmaps'), before, 'three protobuf watches added no upstream watch: the cache serves them');
  const direct = openProtobufWatch(up, `/api/v1/namespaces/${ALPHA}-sem-proto/configmaps?watch=1&resourceVersion=${from}`);
  t.equal((await direct.head)[':status'], 200);
  await bravoWatch.until("bravo's initial state", (events) => events.length >= 1);
  await acrossWatch.until("the selection's initial state", (events) => events.length >= 1);
  const bytesServed = await cacheBytes('configmaps');
  t.ok(bytesServed > bytesBefore, `the protobuf the cache made for them counts in tenantgate_watch_cache_bytes (${bytesBefore} → ${bytesServed})`);
  await patchConfigMap(a, 'sem-proto', 'same', { metadata: { labels: { app: 'y' } } });
  await createConfigMap(a, 'sem-proto', 'second', { app: 'x' });
  await send(a, 'DELETE', '/api/v1/namespaces/sem-proto/configmaps/second', {}, 200);
  await patchConfigMap(b, 'sem-proto', 'same', { data: { changed: 'bravo' } });
  await alphaWatch.until("alpha's deletion", (events) => events.some((e) => e.type === 'DELETED' && e.object.metadata.name === 'second'));
  await direct.until("the apiserver's deletion", (events) => events.some((e) => e.type === 'DELETED' && e.object.metadata.name === 'second'));
  await bravoWatch.until("bravo's change", (events) => events.some((e) => e.type === 'MODIFIED'));
  await acrossWatch.until("the selection's departure and deletion", (events) => events.filter((e) => e.type === 'DELETED').length >= 2);
  const alphaEvents = alphaWatch.events().filter((e) => e.type !== 'BOOKMARK');
  t.same(summary(alphaEvents), summary(direct.events()), "the same events as the apiserver's protobuf watch (types, names, resourceVersions)");
  const tenantView = (object: any) => {
    const { labels, namespace, ...metadata } = object.metadata;
    const { 'kubezoo.io/tenant': _, ...rest } = labels ?? {};
    return { ...object, metadata: { ...metadata, namespace: namespace.replace(`${ALPHA}-`, ''), ...(Object.keys(rest).length > 0 ? { labels: rest } : {}) } };
  };
  // (managedFields aside: the tenant's view takes the tenant label out of them too.)
  t.same(
    alphaEvents.map((e) => withoutZeroValues(withoutManagedFields(e.object))),
    direct.events().map((e) => withoutZeroValues(withoutManagedFields(tenantView(e.object)))),
    "each object the apiserver's (zero values aside), in the tenant's names, decoded from protobuf",
  );
  t.same(
    summary(bravoWatch.events()).map(([type, name]) => [type, name]),
    [
      ['ADDED', 'same'],
      ['MODIFIED', 'same'],
    ],
    `${BRAVO}: its own object of the same name, and its change only`,
  );
  t.ok(
    bravoWatch.events().every((e) => e.object.data?.owner === BRAVO),
    `${BRAVO} never gets ${ALPHA}'s object`,
  );
  t.same(
    summary(acrossWatch.events()).map(([type, name]) => [type, name]),
    [
      ['ADDED', 'same'],
      ['DELETED', 'same'],
      ['ADDED', 'second'],
      ['DELETED', 'second'],
    ],
    'across namespaces with a selector: the label change is a departure',
  );
  for (const [w, other] of [
    [alphaWatch, BRAVO],
    [acrossWatch, BRAVO],
    [bravoWatch, ALPHA],
  ] as const) {
    const bytes = w.bytes().toString('latin1');
    t.notOk(
      bytes.includes(`${other}`) || bytes.includes(`${ALPHA}-`) || bytes.includes(`${BRAVO}-`),
      "no other tenant's byte, and no upstream name, in the stream",
    );
  }
  for (const w of [alphaWatch, bravoWatch, acrossWatch, direct]) w.close();
});

t.test("a protobuf watch from a resourceVersion older than the cache's history: the cache's 410 Expired, in protobuf", async (t) => {
  // The rig's apiserver still holds every configmap event since it started: a 410 for resourceVersion=1 is the cache's.
  const watch = openProtobufWatch(a, '/api/v1/namespaces/sem-proto/configmaps?watch=1&resourceVersion=1&timeoutSeconds=5');
  t.equal((await watch.head)[':status'], 200);
  await watch.done;
  const events = watch.events();
  t.equal(events.length, 1, 'one event, then the watch ends');
  t.same(events[0], {
    type: 'ERROR',
    object: { apiVersion: 'v1', kind: 'Status', metadata: {}, status: 'Failure', message: events[0]?.object.message, reason: 'Expired', code: 410 },
  });
  t.match(events[0]?.object.message, /^too old resource version: 1 \(\d+\)$/);
});

t.test("protobuf lists from the cache: pages with limit and continue, each tenant its own, the consistent list's items", async (t) => {
  for (let i = 0; i < 5; i++) {
    await createConfigMap(a, 'sem-proto', `page-${i}`, {}, { owner: ALPHA });
    await createConfigMap(b, 'sem-proto', `page-${i}`, {}, { owner: BRAVO });
  }
  for (const [session, owner] of [
    [a, ALPHA],
    [b, BRAVO],
  ] as const) {
    const consistent = (await getJson(session, '/api/v1/namespaces/sem-proto/configmaps')).json();
    const pages: any[] = [];
    let path = '/api/v1/namespaces/sem-proto/configmaps?resourceVersion=0&limit=2';
    for (let i = 0; i < 10; i++) {
      const answer = await h2Request(session, 'GET', path, { headers: { accept: PROTOBUF_ACCEPT } });
      t.equal(answer.status, 200);
      t.equal(answer.headers['content-type'], 'application/vnd.kubernetes.protobuf');
      const page: any = decodeBody(messages, 'k8s.io.api.core.v1.ConfigMapList', answer.bytes);
      pages.push(page);
      if (page.metadata.continue === undefined) break;
      path = `/api/v1/namespaces/sem-proto/configmaps?limit=2&continue=${encodeURIComponent(page.metadata.continue)}`;
    }
    t.ok(pages[0].metadata.continue.startsWith('tgwc.'), `${owner}: the cache's own continue token: the cache answered`);
    t.same(
      pages.map((p) => (p.items ?? []).length),
      [2, 2, 2, consistent.items.length - 6].filter((n) => n > 0),
      `${owner}: pages of two`,
    );
    t.same(
      pages.map((p) => p.metadata.remainingItemCount),
      pages.map((_, i) => (i === pages.length - 1 ? undefined : consistent.items.length - 2 * (i + 1))),
      'remainingItemCount as the apiserver counts it',
    );
    t.same(
      pages.flatMap((p) => p.items ?? []).map((item: any) => withoutManagedFields(item)),
      consistent.items.map((item: any) => withoutManagedFields(item)),
      `${owner}: the items of a consistent JSON list, decoded from protobuf`,
    );
    t.ok(
      pages.flatMap((p) => p.items ?? []).every((item: any) => item.data?.owner === owner),
      `${owner}: its own objects only`,
    );
  }
});

function withoutManagedFields(object: any): any {
  const { managedFields: _, ...metadata } = object.metadata;
  return { ...object, metadata };
}

// Divergences these tests found once, asserted as they should be: what decides an object its tenant's, continue
// tokens bound to their list, and what must go upstream.

t.test("an upstream namespace that only looks like the tenant's is not the tenant's in the cache either", async (t) => {
  // Made upstream by the platform, not through tenantgate: no tenant label, no RoleBinding of the tenant's.
  await send(up, 'POST', '/api/v1/namespaces', { metadata: { name: `${ALPHA}-platform` } }, 201);
  await send(
    up,
    'POST',
    `/api/v1/namespaces/${ALPHA}-platform/secrets`,
    { metadata: { name: 'platform-credentials' }, stringData: { password: 'not-for-tenants' } },
    201,
  );
  await send(up, 'POST', `/api/v1/namespaces/${ALPHA}-platform/configmaps`, { metadata: { name: 'platform-settings' }, data: { x: 'y' } }, 201);
  const namespaced = await getJson(a, '/api/v1/namespaces/platform/secrets');
  t.equal(namespaced.status, 403, 'the tenant may not read it by its namespace');
  const consistent = await getJson(a, '/api/v1/secrets');
  t.notOk(consistent.body.includes('platform-credentials'), 'nor does the upstream path list it across namespaces');
  const upstreamNamespaces = (await getJson(a, '/api/v1/namespaces')).json().items.map((n: any) => n.metadata.name);
  t.notOk(upstreamNamespaces.includes('platform'), 'nor list the namespace');
  // The cache's answer must be the same: it keeps objects by name prefix alone.
  // (Fixed, these wait their 5 s in vain.)
  await waitForCache(a, '/api/v1/configmaps?resourceVersion=0', 'platform-settings');
  await waitForCache(a, '/api/v1/secrets?resourceVersion=0', 'platform-credentials');
  const cachedSecrets = await getJson(a, '/api/v1/secrets?resourceVersion=0');
  t.equal(cachedSecrets.status, 200);
  t.notOk(cachedSecrets.body.includes('platform-credentials'), 'a cached list across namespaces does not hold its secret');
  t.notOk((await getJson(a, '/api/v1/configmaps?resourceVersion=0')).body.includes('platform-settings'), 'nor its ConfigMap');
  t.notOk(
    (await getJson(a, '/api/v1/namespaces?resourceVersion=0')).json().items.some((n: any) => n.metadata.name === 'platform'),
    'nor the namespace itself',
  );
  const watch = openWatch(a, '/api/v1/secrets?watch=1&timeoutSeconds=1');
  await watch.done;
  t.notOk(
    watch.events.some((e) => e.object.metadata.name === 'platform-credentials'),
    'nor a cached watch across namespaces',
  );
});

/** Polls a cached list until it holds `name` (the cache takes in upstream changes asynchronously). */
async function waitForCache(session: ClientHttp2Session, path: string, name: string): Promise<void> {
  for (let i = 0; i < 50 && !(await getJson(session, path)).body.includes(name); i++) await new Promise((resolve) => setTimeout(resolve, 100));
}

t.test('a continue token answers only the list it was made for: the same namespace and selectors', async (t) => {
  for (const name of ['p', 'q', 'r']) await createConfigMap(a, 'sem-other', name);
  const token = (await getJson(a, '/api/v1/namespaces/sem-list/configmaps?resourceVersion=0&limit=2')).json().metadata.continue;
  const elsewhere = await getJson(a, `/api/v1/namespaces/sem-other/configmaps?limit=2&continue=${encodeURIComponent(token)}`);
  const items = elsewhere.status === 200 ? elsewhere.json().items : [];
  t.ok(
    items.every((i: any) => i.metadata.namespace === 'sem-other'),
    `used in another namespace: 400, or that namespace's items (got ${elsewhere.status} ${JSON.stringify(items.map((i: any) => `${i.metadata.namespace}/${i.metadata.name}`))})`,
  );
  const token2 = (await getJson(a, '/api/v1/namespaces/sem-list/configmaps?resourceVersion=0&limit=2')).json().metadata.continue;
  const reselected = await getJson(a, `/api/v1/namespaces/sem-list/configmaps?limit=2&labelSelector=parity%3Dodd&continue=${encodeURIComponent(token2)}`);
  const reselectedItems = reselected.status === 200 ? reselected.json().items : [];
  t.ok(
    reselectedItems.every((i: any) => i.metadata.labels?.parity === 'odd'),
    `used with another selector: 400, or items that match it (got ${reselected.status} ${JSON.stringify(reselectedItems.map((i: any) => i.metadata.labels))})`,
  );
});

t.test("metadata.namespace on a cluster-scoped kind: the apiserver's 400", async (t) => {
  const direct = await getJson(up, '/api/v1/namespaces?resourceVersion=0&fieldSelector=metadata.namespace%3Dfoo');
  t.equal(direct.status, 400, `the apiserver: ${direct.json().message}`);
  t.equal((await getJson(a, '/api/v1/namespaces?fieldSelector=metadata.namespace%3Dfoo')).status, 400, 'the upstream path: the same');
  const cached = await getJson(a, '/api/v1/namespaces?resourceVersion=0&fieldSelector=metadata.namespace%3Dfoo');
  t.equal(cached.status, 400, 'the cache: the same');
});

t.test('a list with a resourceVersion and a limit (no resourceVersionMatch) is the state at that resourceVersion', async (t) => {
  await createConfigMap(a, 'sem-exact', 'before');
  const at = (await getJson(a, '/api/v1/namespaces/sem-exact/configmaps')).json().metadata.resourceVersion;
  await createConfigMap(a, 'sem-exact', 'after');
  const direct = (await getJson(up, `/api/v1/namespaces/${ALPHA}-sem-exact/configmaps?resourceVersion=${at}&limit=5`)).json();
  t.same(
    [direct.metadata.resourceVersion, direct.items.map((i: any) => i.metadata.name)],
    [at, ['before']],
    'the apiserver: the state at that resourceVersion',
  );
  const cached = (await getJson(a, `/api/v1/namespaces/sem-exact/configmaps?resourceVersion=${at}&limit=5`)).json();
  t.same([cached.metadata.resourceVersion, cached.items.map((i: any) => i.metadata.name)], [at, ['before']], 'through tenantgate: the same');
});

// Tenant watches served by WatchCache.watch, against a stand-in upstream: the initial state or the replay a
// resourceVersion asks for, 410 Expired exactly at the history's edge, bookmarks at their cadence, and the timeout.
// (The periodic bookmark is a minute in tenantgate serve; here the cache is made with a short interval.)
import t from 'tap';
import { PassThrough } from 'node:stream';
import { kindOf } from '../../lib/convert/kinds.ts';
import { parseRequestInfo } from '../../lib/convert/request-info.ts';
import { standInWatchCache, TENANT_NAMESPACES, upstreamConfigMap, type StandInCache } from '../helpers/watch-cache-stand-in.ts';

const CONFIGMAPS = '/api/v1/configmaps';

/** A watch of tenant `tenant` for GET `target` (tenant names): its lines as they come, and whether it ended. */
function watch(stand: StandInCache, tenant: string, target: string) {
  const url = new URL(target, 'https://tenantgate');
  const info = parseRequestInfo('GET', url.pathname, url.searchParams);
  const plan = stand.watchCache.planOf(info, kindOf(info.apiGroup, info.resource) ?? null, tenant, url.searchParams, undefined);
  if (plan === null) throw new Error(`the cache does not serve ${target}`);
  const out = new PassThrough();
  const events: any[] = [];
  let ended = false;
  let pending = '';
  out.setEncoding('utf8');
  out.on('data', (chunk: string) => {
    pending += chunk;
    let newline: number;
    while ((newline = pending.indexOf('\n')) !== -1) {
      events.push(JSON.parse(pending.slice(0, newline)));
      pending = pending.slice(newline + 1);
    }
  });
  out.on('end', () => (ended = true));
  const watcher = stand.watchCache.watch(plan, tenant, out, performance.now());
  return {
    events,
    watcher,
    get ended() {
      return ended;
    },
    summary: () => events.map((e) => [e.type, e.object.metadata?.name ?? e.object.message, e.object.metadata?.resourceVersion]),
  };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

t.test('initial state, a replay from a resourceVersion, and 410 Expired at the edge of the history', async (t) => {
  // A history of 3 events: after 5, the first two have left it.
  const stand = await standInWatchCache(
    ['configmaps', 'namespaces'],
    { ...TENANT_NAMESPACES, [CONFIGMAPS]: [upstreamConfigMap('abcdef', 'default', 'listed', 90), upstreamConfigMap('zyxwvu', 'default', 'listed', 91)] },
    100,
    { historyCapacity: 3 },
  );
  t.teardown(() => stand.stop());
  const fresh = watch(stand, 'abcdef', '/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=50');
  await settle();
  t.same(
    fresh.summary(),
    [['ERROR', 'too old resource version: 50 (100)', undefined]],
    "older than the list, before any event: 410, the list's resourceVersion named",
  );
  t.ok(fresh.ended, 'and the watch ends');
  t.equal(fresh.watcher, null);
  t.same(fresh.events[0].object, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'too old resource version: 50 (100)',
    reason: 'Expired',
    code: 410,
  });
  const atList = watch(stand, 'abcdef', '/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=100');
  await settle();
  t.same(atList.summary(), [], "from the list's own resourceVersion: nothing to replay, and no error");
  await stand.push(CONFIGMAPS, [
    ['ADDED', upstreamConfigMap('abcdef', 'default', 'e1', 101)],
    ['ADDED', upstreamConfigMap('zyxwvu', 'default', 'e2', 102)],
    ['MODIFIED', upstreamConfigMap('abcdef', 'default', 'e1', 103)],
    ['ADDED', upstreamConfigMap('abcdef', 'other', 'e4', 104)],
    ['DELETED', upstreamConfigMap('abcdef', 'default', 'listed', 105)],
  ]);
  t.same(
    atList.summary(),
    [
      ['ADDED', 'e1', '101'],
      ['MODIFIED', 'e1', '103'],
      ['DELETED', 'listed', '105'],
    ],
    "then the tenant's events of its namespace as they come",
  );
  // The history now holds 103, 104, 105: a watch may resume from 102 (the event before the oldest kept), not 101.
  const edge = watch(stand, 'abcdef', '/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=102');
  await settle();
  t.same(
    edge.summary(),
    [
      ['MODIFIED', 'e1', '103'],
      ['DELETED', 'listed', '105'],
    ],
    'from just before the oldest kept event: replayed',
  );
  const gone = watch(stand, 'abcdef', '/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=101');
  await settle();
  t.same(gone.summary(), [['ERROR', 'too old resource version: 101 (102)', undefined]], 'one before that: 410, as the apiserver says it');
  const everywhere = watch(stand, 'abcdef', '/api/v1/configmaps?watch=1&resourceVersion=102');
  await settle();
  t.same(
    everywhere.summary(),
    [
      ['MODIFIED', 'e1', '103'],
      ['ADDED', 'e4', '104'],
      ['DELETED', 'listed', '105'],
    ],
    "all namespaces: the tenant's events, never another tenant's",
  );
  const initial = watch(stand, 'abcdef', '/api/v1/configmaps?watch=1');
  const zero = watch(stand, 'abcdef', '/api/v1/configmaps?watch=1&resourceVersion=0');
  const noInitial = watch(stand, 'abcdef', '/api/v1/configmaps?watch=1&resourceVersion=0&sendInitialEvents=false&resourceVersionMatch=NotOlderThan');
  await settle();
  t.same(
    initial.summary(),
    [
      ['ADDED', 'e1', '103'],
      ['ADDED', 'e4', '104'],
    ],
    'resourceVersion unset: the state now, as ADDED events, in key order',
  );
  t.same(zero.summary(), initial.summary(), 'resourceVersion=0: the same');
  t.same(noInitial.summary(), [], 'sendInitialEvents=false: no initial state');
  await stand.push(CONFIGMAPS, [['ADDED', upstreamConfigMap('abcdef', 'default', 'e6', 106)]]);
  for (const w of [initial, zero, noInitial, everywhere]) t.same(w.summary().at(-1), ['ADDED', 'e6', '106'], 'then what comes');
  for (const w of [atList, edge, everywhere, initial, zero, noInitial]) w.watcher?.end();
});

t.test('bookmarks at their cadence, at the newest resourceVersion; none unless asked; the timeout ends the watch', async (t) => {
  const stand = await standInWatchCache(['configmaps', 'namespaces'], { ...TENANT_NAMESPACES, [CONFIGMAPS]: [] }, 200, { bookmarkIntervalMs: 100 });
  t.teardown(() => stand.stop());
  const marked = watch(stand, 'abcdef', '/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=200&allowWatchBookmarks=true');
  const plain = watch(stand, 'abcdef', '/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=200');
  const timed = watch(stand, 'abcdef', '/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=200&allowWatchBookmarks=true&timeoutSeconds=1');
  await stand.push(CONFIGMAPS, [['ADDED', upstreamConfigMap('zyxwvu', 'default', 'elsewhere', 201)]]);
  await stand.push(CONFIGMAPS, [['BOOKMARK', { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: '250' } }]]);
  for (let i = 0; i < 60 && (marked.events.length < 2 || !timed.ended); i++) await new Promise((resolve) => setTimeout(resolve, 100));
  const bookmarks = marked.events.filter((e) => e.type === 'BOOKMARK');
  t.ok(bookmarks.length >= 2, `bookmarks keep coming (${bookmarks.length} in ~2 s at a 100 ms interval, checked each second)`);
  t.same(
    bookmarks.at(-1).object,
    { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: '250' } },
    "at the newest resourceVersion the cache has seen (the upstream's bookmark included), even with no event of the tenant's",
  );
  t.same(
    marked.events.filter((e) => e.type !== 'BOOKMARK'),
    [],
    "and nothing of the other tenant's event",
  );
  t.same(plain.events, [], 'a watch that did not allow bookmarks gets none');
  t.ok(timed.ended, 'timeoutSeconds=1 ended its watch');
  t.equal(timed.events.at(-1)?.type, 'BOOKMARK', 'with a bookmark last, so its client resumes from the newest resourceVersion');
  t.equal(stand.watchCache.watcherCount, 2, 'the ended watcher left the cache');
  marked.watcher?.end();
  plain.watcher?.end();
  t.equal(stand.watchCache.watcherCount, 0);
});

t.test("a watch-list: the initial ADDED events, then the bookmark that ends them, at the cache's resourceVersion", async (t) => {
  const stand = await standInWatchCache(
    ['configmaps', 'namespaces'],
    {
      ...TENANT_NAMESPACES,
      [CONFIGMAPS]: [
        upstreamConfigMap('abcdef', 'default', 'b', 301, { app: 'x' }),
        upstreamConfigMap('abcdef', 'default', 'a', 302),
        upstreamConfigMap('zyxwvu', 'default', 'a', 303),
      ],
    },
    310,
  );
  t.teardown(() => stand.stop());
  const list = watch(
    stand,
    'abcdef',
    '/api/v1/namespaces/default/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=305&allowWatchBookmarks=true',
  );
  const selected = watch(
    stand,
    'abcdef',
    '/api/v1/namespaces/default/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=0&allowWatchBookmarks=true&labelSelector=app%3Dx',
  );
  await settle();
  const end = { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: '310', annotations: { 'k8s.io/initial-events-end': 'true' } } };
  t.same(list.summary(), [
    ['ADDED', 'a', '302'],
    ['ADDED', 'b', '301'],
    ['BOOKMARK', undefined, '310'],
  ]);
  t.same(list.events.at(-1).object, end);
  t.same(
    selected.summary(),
    [
      ['ADDED', 'b', '301'],
      ['BOOKMARK', undefined, '310'],
    ],
    'selected objects only, and the same end',
  );
  t.notOk(
    list.events.some((e) => e.object.data?.owner === 'zyxwvu'),
    "nothing of the other tenant's object of the same name",
  );
  list.watcher?.end();
  selected.watcher?.end();
});

// The watch cache in protobuf, against a stand-in upstream: watches of protobuf clients get the frames the apiserver
// writes (events, departures, bookmarks, 410 Expired) decoded by the .proto files of the Go module cache, each event
// converted once per encoding however many watchers get it, two tenants with the same names each their own; lists as
// the apiserver's protobuf List with pages.
import t from 'tap';
import { PassThrough } from 'node:stream';
import { kindOf } from '../../lib/convert/kinds.ts';
import { parseRequestInfo } from '../../lib/convert/request-info.ts';
import { protobufListParts, type Page } from '../../lib/watchcache/cached-list.ts';
import type { ResourceCache } from '../../lib/watchcache/resource-cache.ts';
import { decodeBody, decodeWatchFrames, goModuleCache, loadProtoMessages, type ProtoMessages } from '../helpers/k8s-proto.ts';
import { standInWatchCache, TENANT_NAMESPACES, upstreamConfigMap, type StandInCache } from '../helpers/watch-cache-stand-in.ts';

const moduleCache = goModuleCache();
const NEEDS_PROTO = {
  skip: moduleCache === undefined ? 'the Go module cache with k8s.io/api v0.36.3 is not on this machine: build the rig first (npm run rig)' : false,
};
const messages: ProtoMessages = moduleCache === undefined ? new Map() : loadProtoMessages(moduleCache);

const CONFIGMAPS = '/api/v1/configmaps';
const CONFIGMAP = 'k8s.io.api.core.v1.ConfigMap';
const PROTOBUF = 'application/vnd.kubernetes.protobuf, application/json';

/** A protobuf watch of `tenant` for GET `target`: its frames as they come (raw), decoded on demand. */
function watch(stand: StandInCache, tenant: string, target: string, accept = PROTOBUF) {
  const url = new URL(target, 'https://tenantgate');
  const info = parseRequestInfo('GET', url.pathname, url.searchParams);
  const plan = stand.watchCache.planOf(info, kindOf(info.apiGroup, info.resource) ?? null, tenant, url.searchParams, accept);
  if (plan === null) throw new Error(`the cache does not serve ${target}`);
  const out = new PassThrough();
  const chunks: Buffer[] = [];
  let ended = false;
  out.on('data', (chunk: Buffer) => chunks.push(chunk));
  out.on('end', () => (ended = true));
  const watcher = stand.watchCache.watch(plan, tenant, out, performance.now());
  return {
    plan,
    watcher,
    chunks,
    get ended() {
      return ended;
    },
    events: () => decodeWatchFrames(messages, CONFIGMAP, Buffer.concat(chunks)),
    summary() {
      return this.events().map((e) => [e.type, (e.object.metadata as any)?.name ?? e.object.message, (e.object.metadata as any)?.resourceVersion]);
    },
  };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

t.test('a protobuf watch: initial state, events as they come, two tenants with the same names each their own', NEEDS_PROTO, async (t) => {
  const stand = await standInWatchCache(
    ['configmaps', 'namespaces'],
    {
      ...TENANT_NAMESPACES,
      [CONFIGMAPS]: [upstreamConfigMap('abcdef', 'default', 'same', 90, { app: 'x' }), upstreamConfigMap('zyxwvu', 'default', 'same', 91, { app: 'x' })],
    },
    100,
  );
  t.teardown(() => stand.stop());
  const mine = watch(stand, 'abcdef', '/api/v1/namespaces/default/configmaps?watch=1');
  const theirs = watch(stand, 'zyxwvu', '/api/v1/namespaces/default/configmaps?watch=1');
  const selected = watch(stand, 'abcdef', '/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=100&labelSelector=app%3Dx');
  const json = watch(stand, 'abcdef', '/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=100', 'application/json');
  t.equal(mine.plan.encoding, 'protobuf');
  t.equal(json.plan.encoding, 'json');
  await settle();
  t.same(mine.summary(), [['ADDED', 'same', '90']], 'the initial state as ADDED frames');
  t.same(
    mine.events()[0]!.object,
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'same', namespace: 'default', uid: 'uid-90', resourceVersion: '90', labels: { app: 'x' } },
      data: { owner: 'abcdef' },
    },
    "the tenant's view: its names, no tenant label",
  );
  t.same(theirs.events()[0]!.object.data, { owner: 'zyxwvu' }, 'the other tenant gets its own object of the same name');
  await stand.push(CONFIGMAPS, [
    ['MODIFIED', upstreamConfigMap('abcdef', 'default', 'same', 101, { app: 'y' })],
    ['ADDED', upstreamConfigMap('zyxwvu', 'default', 'new', 102)],
    ['DELETED', upstreamConfigMap('abcdef', 'default', 'same', 103, { app: 'y' })],
  ]);
  t.same(mine.summary(), [
    ['ADDED', 'same', '90'],
    ['MODIFIED', 'same', '101'],
    ['DELETED', 'same', '103'],
  ]);
  t.same(
    theirs.summary(),
    [
      ['ADDED', 'same', '91'],
      ['ADDED', 'new', '102'],
    ],
    "never the other tenant's events",
  );
  t.same(selected.summary(), [['DELETED', 'same', '101']], "a change out of a selection is a departure, at the change's resourceVersion, in protobuf too");
  t.same((selected.events()[0]!.object.metadata as any).labels, { app: 'x' }, 'the object as it was');
  t.notOk(Buffer.concat(mine.chunks).includes('zyxwvu') || Buffer.concat(theirs.chunks).includes('abcdef'), "no other tenant's byte in either stream");
  t.equal(Buffer.concat(json.chunks).toString().split('\n')[0]!.startsWith('{"type":"MODIFIED"'), true, 'a JSON watcher of the same cache gets JSON lines');
  for (const w of [mine, theirs, selected, json]) w.watcher?.end();
});

t.test('each event is converted once per encoding, however many protobuf watchers get it', NEEDS_PROTO, async (t) => {
  const stand = await standInWatchCache(['configmaps', 'namespaces'], { ...TENANT_NAMESPACES, [CONFIGMAPS]: [] }, 100);
  t.teardown(() => stand.stop());
  const watchers = Array.from({ length: 5 }, () => watch(stand, 'abcdef', '/api/v1/configmaps?watch=1&resourceVersion=100'));
  await stand.push(CONFIGMAPS, [['ADDED', upstreamConfigMap('abcdef', 'default', 'a', 101)]]);
  const first = watchers[0]!.chunks[0]!;
  for (const w of watchers) t.equal(w.chunks[0], first, 'the very same frame Buffer');
  const [cache] = [...stand.watchCache.resources].filter((c) => c.kind === 'ConfigMap') as [ResourceCache];
  const [object] = cache.objectsOf('abcdef', 'default');
  t.ok(
    object!.protobuf !== undefined && first.includes(object!.protobuf),
    "the frame carries the object's protobuf body, kept on the object for lists and later watchers",
  );
  t.equal(object!.protobuf!.buffer, first.buffer, 'as a view into the frame: one copy of the bytes per event, as for JSON');
  for (const w of watchers) w.watcher?.end();
});

t.test("the cache's bytes (tenantgate_watch_cache_bytes) count the protobuf it keeps, made once a protobuf client is served", NEEDS_PROTO, async (t) => {
  const stand = await standInWatchCache(
    ['configmaps', 'namespaces'],
    { ...TENANT_NAMESPACES, [CONFIGMAPS]: [upstreamConfigMap('abcdef', 'default', 'a', 90)] },
    100,
  );
  t.teardown(() => stand.stop());
  const [cache] = [...stand.watchCache.resources].filter((c) => c.kind === 'ConfigMap') as [ResourceCache];
  const objectOf = (name: string) => cache.objectsOf('abcdef', 'default').find((o) => o.name === name)!;
  const jsonOnly = objectOf('a').bytes.length;
  t.equal(cache.stats.bytes, jsonOnly, 'JSON only while no protobuf client asked');
  const json = watch(stand, 'abcdef', '/api/v1/namespaces/default/configmaps?watch=1', 'application/json');
  await settle();
  t.equal(cache.stats.bytes, jsonOnly, 'a JSON watcher makes no protobuf');
  const proto = watch(stand, 'abcdef', '/api/v1/namespaces/default/configmaps?watch=1');
  await settle();
  t.equal(proto.summary().length, 1);
  t.ok(objectOf('a').protobuf!.length > 0);
  t.equal(cache.stats.bytes, jsonOnly + objectOf('a').protobuf!.length, "a protobuf watcher served: the object's protobuf counts too");
  const again = watch(stand, 'abcdef', '/api/v1/namespaces/default/configmaps?watch=1');
  await settle();
  t.equal(cache.stats.bytes, jsonOnly + objectOf('a').protobuf!.length, 'made once: a second protobuf watcher adds nothing');
  await stand.push(CONFIGMAPS, [
    ['MODIFIED', upstreamConfigMap('abcdef', 'default', 'a', 101, { app: 'y' })],
    ['ADDED', upstreamConfigMap('abcdef', 'default', 'b', 102)],
  ]);
  t.same(
    proto.summary().map(([type, name]) => [type, name]),
    [
      ['ADDED', 'a'],
      ['MODIFIED', 'a'],
      ['ADDED', 'b'],
    ],
  );
  const kept = ['a', 'b'].map(objectOf);
  t.equal(
    cache.stats.bytes,
    kept.reduce((sum, o) => sum + o.bytes.length + o.protobuf!.length, 0),
    "the new versions' JSON and protobuf, the replaced version's gone",
  );
  await stand.push(CONFIGMAPS, [
    ['DELETED', upstreamConfigMap('abcdef', 'default', 'a', 103, { app: 'y' })],
    ['DELETED', upstreamConfigMap('abcdef', 'default', 'b', 104)],
  ]);
  t.equal(cache.stats.bytes, 0, 'nothing kept, nothing counted');
  for (const w of [json, proto, again]) w.watcher?.end();
});

t.test("protobuf: 410 Expired for a resourceVersion older than the history, bookmarks, and a watch-list's end", NEEDS_PROTO, async (t) => {
  const stand = await standInWatchCache(
    ['configmaps', 'namespaces'],
    { ...TENANT_NAMESPACES, [CONFIGMAPS]: [upstreamConfigMap('abcdef', 'default', 'a', 90)] },
    100,
    { bookmarkIntervalMs: 100 },
  );
  t.teardown(() => stand.stop());
  const old = watch(stand, 'abcdef', '/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=50');
  await settle();
  t.same(old.events(), [
    {
      type: 'ERROR',
      object: {
        apiVersion: 'v1',
        kind: 'Status',
        metadata: {},
        status: 'Failure',
        message: 'too old resource version: 50 (100)',
        reason: 'Expired',
        code: 410,
      },
    },
  ]);
  t.ok(old.ended, 'and the watch ends');
  const list = watch(
    stand,
    'abcdef',
    '/api/v1/namespaces/default/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=100&allowWatchBookmarks=true',
  );
  await settle();
  t.same(list.events(), [
    {
      type: 'ADDED',
      object: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'a', namespace: 'default', uid: 'uid-90', resourceVersion: '90' },
        data: { owner: 'abcdef' },
      },
    },
    {
      type: 'BOOKMARK',
      object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { resourceVersion: '100', annotations: { 'k8s.io/initial-events-end': 'true' } } },
    },
  ]);
  await stand.push(CONFIGMAPS, [['BOOKMARK', { kind: 'ConfigMap', apiVersion: 'v1', metadata: { resourceVersion: '150' } }]]);
  for (let i = 0; i < 30 && list.events().length < 3; i++) await new Promise((resolve) => setTimeout(resolve, 100));
  t.same(
    list.events()[2],
    { type: 'BOOKMARK', object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { resourceVersion: '150' } } },
    'a periodic bookmark, in protobuf',
  );
  list.watcher?.end();
});

t.test("a protobuf list of the cache: the apiserver's List message, its ListMeta, items in order, pages", NEEDS_PROTO, async (t) => {
  const stand = await standInWatchCache(
    ['configmaps', 'namespaces'],
    { ...TENANT_NAMESPACES, [CONFIGMAPS]: ['c', 'a', 'b'].map((name, i) => upstreamConfigMap('abcdef', 'default', name, 90 + i)) },
    100,
  );
  t.teardown(() => stand.stop());
  const [cache] = [...stand.watchCache.resources].filter((c) => c.kind === 'ConfigMap') as [ResourceCache];
  const objects = cache.objectsOf('abcdef', 'default');
  const decode = (page: Page) => decodeBody(messages, 'k8s.io.api.core.v1.ConfigMapList', Buffer.concat(protobufListParts('ConfigMap', 'v1', page)));
  const whole = decode({ objects, resourceVersion: 100, continueToken: '', remaining: null });
  t.same([whole.apiVersion, whole.kind, whole.metadata], ['v1', 'ConfigMapList', { resourceVersion: '100' }]);
  t.same(
    (whole.items as any[]).map((item) => item.metadata.name),
    ['a', 'b', 'c'],
  );
  t.same(
    (whole.items as any[])[0],
    { metadata: { name: 'a', namespace: 'default', uid: 'uid-91', resourceVersion: '91' }, data: { owner: 'abcdef' } },
    "items without kind and apiVersion, as the apiserver's",
  );
  const first = stand.watchCache.snapshots.firstPage('abcdef', cache, objects, 100, true, 2);
  const page = decode(first);
  t.same(
    (page.items as any[]).map((item) => item.metadata.name),
    ['a', 'b'],
  );
  t.same(page.metadata, { resourceVersion: '100', continue: first.continueToken, remainingItemCount: 1 });
  const rest = decode(stand.watchCache.snapshots.nextPage('abcdef', cache, first.continueToken, 2));
  t.same(
    (rest.items as any[]).map((item) => item.metadata.name),
    ['c'],
  );
  t.same(rest.metadata, { resourceVersion: '100' });
  const empty = decode({ objects: [], resourceVersion: 100, continueToken: '', remaining: null });
  t.same(empty, { apiVersion: 'v1', kind: 'ConfigMapList', metadata: { resourceVersion: '100' } }, 'an empty list');
});

t.test(
  'an object the encoder cannot write (a field its schema lacks) ends the protobuf watch, never a guessed field; JSON watchers go on',
  NEEDS_PROTO,
  async (t) => {
    const stand = await standInWatchCache(['configmaps', 'namespaces'], { ...TENANT_NAMESPACES, [CONFIGMAPS]: [] }, 100);
    t.teardown(() => stand.stop());
    const protobuf = watch(stand, 'abcdef', '/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=100');
    const json = watch(stand, 'abcdef', '/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=100', 'application/json');
    await stand.push(CONFIGMAPS, [
      ['ADDED', { ...upstreamConfigMap('abcdef', 'default', 'odd', 101), futureField: 'x' }],
      ['ADDED', upstreamConfigMap('abcdef', 'default', 'fine', 102)],
    ]);
    await settle();
    t.ok(protobuf.ended, 'the protobuf watch ended (its client resumes, as after any end)');
    t.same(protobuf.chunks, [], 'having sent nothing of it');
    t.equal(
      Buffer.concat(json.chunks)
        .toString()
        .split('\n')
        .filter((line) => line !== '').length,
      2,
      'the JSON watcher got both events',
    );
    const [cache] = [...stand.watchCache.resources].filter((c) => c.kind === 'ConfigMap') as [ResourceCache];
    t.throws(
      () => protobufListParts('ConfigMap', 'v1', { objects: cache.objectsOf('abcdef', 'default'), resourceVersion: 102, continueToken: '', remaining: null }),
      /has no field "futureField"/,
      'a list of it throws before a byte is answered (the stage sends it upstream)',
    );
    json.watcher?.end();
  },
);

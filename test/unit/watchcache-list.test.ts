// Lists answered from the watch cache: limit/continue pages over one snapshot, continue tokens that serve only the
// tenant they were made for, a 410 once a snapshot is gone, and the list written as the apiserver writes one.
import t from 'tap';
import { PassThrough, Writable } from 'node:stream';
import { ListSnapshots, writeList, type Page } from '../../lib/watchcache/cached-list.ts';
import { CachedObject } from '../../lib/watchcache/cached-object.ts';
import type { ResourceCache } from '../../lib/watchcache/resource-cache.ts';
import { thrownStatus } from '../helpers/status-error.ts';
import { standInWatchCache, upstreamConfigMap } from '../helpers/watch-cache-stand-in.ts';

const stand = await standInWatchCache(
  ['configmaps', 'secrets'],
  {
    '/api/v1/configmaps': [
      upstreamConfigMap('abcdef', 'default', 'b', 11, { app: 'x' }),
      upstreamConfigMap('abcdef', 'default', 'a', 12),
      upstreamConfigMap('abcdef', 'apps', 'a', 13),
      upstreamConfigMap('zyxwvu', 'default', 'a', 14),
      // Outside every tenant's prefix: never kept.
      { kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'kube-root-ca.crt', namespace: 'kube-system', resourceVersion: '5' } },
    ],
  },
  20,
);
t.teardown(() => stand.stop());
const [configmaps, secrets] = [...stand.watchCache.resources] as [ResourceCache, ResourceCache];

const objects = (count: number) =>
  Array.from(
    { length: count },
    (_, i) =>
      new CachedObject(
        'abcdef',
        'default',
        `o${i}`,
        100 + i,
        undefined,
        null,
        Buffer.from(JSON.stringify({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: `o${i}` } })),
      ),
  );
const names = (page: Page) => page.objects.map((o) => o.name);

t.test("first and next pages: every object once, in order, with remainingItemCount and the first page's resourceVersion", async (t) => {
  const snapshots = new ListSnapshots();
  const all = objects(5);
  const whole = snapshots.firstPage('abcdef', configmaps, all, 200, true, 0);
  t.same([names(whole), whole.continueToken, whole.remaining], [['o0', 'o1', 'o2', 'o3', 'o4'], '', null], 'no limit: all of it, no token');
  t.same(names(snapshots.firstPage('abcdef', configmaps, all, 200, true, 5)), ['o0', 'o1', 'o2', 'o3', 'o4'], 'a limit it fits in: all of it');
  t.equal(snapshots.firstPage('abcdef', configmaps, all, 200, true, 5).continueToken, '');
  const first = snapshots.firstPage('abcdef', configmaps, all, 200, true, 2);
  t.same([names(first), first.remaining, first.resourceVersion], [['o0', 'o1'], 3, 200]);
  t.ok(first.continueToken.startsWith('tgwc.'), "the cache's own token");
  const second = snapshots.nextPage('abcdef', configmaps, first.continueToken, 2);
  t.same([names(second), second.remaining, second.resourceVersion], [['o2', 'o3'], 1, 200]);
  const again = snapshots.nextPage('abcdef', configmaps, first.continueToken, 2);
  t.same(names(again), ['o2', 'o3'], 'a token may be used again while its snapshot lasts (a client retrying)');
  const last = snapshots.nextPage('abcdef', configmaps, second.continueToken, 2);
  t.same([names(last), last.continueToken, last.remaining, last.resourceVersion], [['o4'], '', null, 200], 'the last page: no token, no remainingItemCount');
  const bigger = snapshots.firstPage('abcdef', configmaps, all, 200, true, 2);
  t.same(names(snapshots.nextPage('abcdef', configmaps, bigger.continueToken, 10)), ['o2', 'o3', 'o4'], "the next page's limit is its own");
  const selected = snapshots.firstPage('abcdef', configmaps, all, 200, false, 2);
  t.equal(selected.remaining, null, 'a selected list tells no remainingItemCount, as the apiserver');
  t.equal(snapshots.nextPage('abcdef', configmaps, selected.continueToken, 2).remaining, null);
});

t.test('a page is cut from the snapshot, not from what the cache holds now', async (t) => {
  const snapshots = new ListSnapshots();
  await stand.push('/api/v1/configmaps', [
    ['ADDED', upstreamConfigMap('abcdef', 'snap', 'x', 40)],
    ['ADDED', upstreamConfigMap('abcdef', 'snap', 'y', 41)],
    ['ADDED', upstreamConfigMap('abcdef', 'snap', 'z', 42)],
  ]);
  const first = snapshots.firstPage('abcdef', configmaps, configmaps.objectsOf('abcdef', 'snap'), configmaps.resourceVersion, true, 1);
  t.same([names(first), first.resourceVersion], [['x'], 42]);
  await stand.push('/api/v1/configmaps', [
    ['DELETED', upstreamConfigMap('abcdef', 'snap', 'y', 43)],
    ['MODIFIED', upstreamConfigMap('abcdef', 'snap', 'z', 44, { changed: 'yes' })],
    ['ADDED', upstreamConfigMap('abcdef', 'snap', 'zz', 45)],
  ]);
  t.same(
    configmaps.objectsOf('abcdef', 'snap').map((o) => o.name),
    ['x', 'z', 'zz'],
    'the cache moved on',
  );
  const rest = snapshots.nextPage('abcdef', configmaps, first.continueToken, 10);
  t.same(
    rest.objects.map((o) => [o.name, o.resourceVersion]),
    [
      ['y', 41],
      ['z', 42],
    ],
    "the pages after the first are the snapshot's",
  );
  t.equal(rest.resourceVersion, 42);
});

t.test('a continue token serves its own tenant and resource only', async (t) => {
  const snapshots = new ListSnapshots();
  const first = snapshots.firstPage('abcdef', configmaps, objects(5), 200, true, 2);
  const other = thrownStatus(() => snapshots.nextPage('zyxwvu', configmaps, first.continueToken, 2));
  t.equal(other.code, 400, 'another tenant: 400');
  t.notMatch(other.message, /o2|abcdef/, 'and learns nothing of the list');
  const decoded = JSON.parse(Buffer.from(first.continueToken.slice(5), 'base64url').toString());
  const forged = 'tgwc.' + Buffer.from(JSON.stringify({ ...decoded, t: 'zyxwvu' })).toString('base64url');
  t.equal(thrownStatus(() => snapshots.nextPage('zyxwvu', configmaps, forged, 2)).code, 400, 'nor with the token rewritten to name it');
  t.equal(thrownStatus(() => snapshots.nextPage('abcdef', secrets, first.continueToken, 2)).code, 400, 'the same tenant, another resource: 400');
  for (const broken of [
    'tgwc.',
    'tgwc.!!!',
    'tgwc.' + Buffer.from('[]').toString('base64url'),
    'tgwc.' + Buffer.from(JSON.stringify({ ...decoded, o: -1 })).toString('base64url'),
    'tgwc.' + Buffer.from(JSON.stringify({ ...decoded, o: 1.5 })).toString('base64url'),
    'tgwc.' + Buffer.from(JSON.stringify({ ...decoded, s: 7 })).toString('base64url'),
  ]) {
    const refusal = thrownStatus(() => snapshots.nextPage('abcdef', configmaps, broken, 2));
    t.match(refusal, { code: 400, reason: 'BadRequest' }, `malformed: ${broken}`);
  }
  t.same(names(snapshots.nextPage('abcdef', configmaps, first.continueToken, 2)), ['o2', 'o3'], 'and still serves its own tenant');
});

t.test('a token whose snapshot is gone: 410 Expired, so the client starts its list again', async (t) => {
  const snapshots = new ListSnapshots();
  const first = snapshots.firstPage('abcdef', configmaps, objects(3), 200, true, 2);
  const unknown = 'tgwc.' + Buffer.from(JSON.stringify({ s: 'nosuchsnapshot', o: 2, t: 'abcdef' })).toString('base64url');
  t.match(
    thrownStatus(() => snapshots.nextPage('abcdef', configmaps, unknown, 2)),
    { code: 410, reason: 'Expired' },
    'a snapshot never made (or made by another replica)',
  );
  t.same(names(snapshots.nextPage('abcdef', configmaps, first.continueToken, 2)), ['o2']);
  t.match(
    thrownStatus(() => snapshots.nextPage('abcdef', configmaps, first.continueToken, 2)),
    { code: 410, reason: 'Expired' },
    'a snapshot whose last page was served is let go',
  );
  const oldest = snapshots.firstPage('abcdef', configmaps, objects(3), 200, true, 1);
  for (let i = 0; i < 1_000; i++) snapshots.firstPage('abcdef', configmaps, objects(2), 200, true, 1);
  const evicted = thrownStatus(() => snapshots.nextPage('abcdef', configmaps, oldest.continueToken, 1));
  t.match(evicted, { code: 410, reason: 'Expired', message: /continue/ }, 'the oldest of more than 1,000 snapshots is let go');
});

/** What `writeList` wrote, parsed. */
async function written(page: Page, out: Writable & { text(): string } = collector()): Promise<any> {
  await writeList(out, 'ConfigMap', 'v1', page);
  return JSON.parse(out.text());
}

function collector(highWaterMark?: number, slowMs = 0): Writable & { text(): string } {
  const chunks: Buffer[] = [];
  const out = new Writable({
    highWaterMark,
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk);
      if (slowMs > 0) setTimeout(done, slowMs);
      else done();
    },
  });
  return Object.assign(out, { text: () => Buffer.concat(chunks).toString('utf8') });
}

t.test("writeList: the apiserver's list JSON, items without their kind and apiVersion", async (t) => {
  const cached = configmaps.objectsOf('abcdef', null).filter((o) => o.namespace !== 'snap');
  t.same(
    cached.map((o) => `${o.namespace}/${o.name}`),
    ['apps/a', 'default/a', 'default/b'],
    "the cache's objects of the tenant, in etcd's key order (namespace, then name)",
  );
  const list = await written({ objects: cached, resourceVersion: 20, continueToken: '', remaining: null });
  t.same(Object.keys(list), ['kind', 'apiVersion', 'metadata', 'items'], 'kind, apiVersion, metadata, items, in that order');
  t.same([list.kind, list.apiVersion, list.metadata], ['ConfigMapList', 'v1', { resourceVersion: '20' }]);
  t.same(
    list.items.map((i: any) => [i.metadata.namespace, i.metadata.name]),
    [
      ['apps', 'a'],
      ['default', 'a'],
      ['default', 'b'],
    ],
  );
  for (const item of list.items) {
    t.notOk('kind' in item || 'apiVersion' in item, `${item.metadata.name}: no kind or apiVersion (the list says them)`);
    t.same(item.data, { owner: 'abcdef' }, 'the rest of the object as kept');
    t.notOk(JSON.stringify(item).includes('abcdef-'), "in the tenant's names");
    t.notOk(item.metadata.labels?.['kubezoo.io/tenant'], 'without the tenant label');
  }
  t.same(
    configmaps.objectsOf('zyxwvu', 'default').map((o) => o.name),
    ['a'],
    "the other tenant's object of the same name is its own",
  );
  t.same(
    configmaps.objectsOf('abcdef', 'default').map((o) => o.name),
    ['a', 'b'],
  );
  const paged = await written({ objects: cached.slice(0, 1), resourceVersion: 20, continueToken: 'tgwc.x', remaining: 2 });
  t.same(paged.metadata, { resourceVersion: '20', continue: 'tgwc.x', remainingItemCount: 2 });
  const empty = await written({ objects: [], resourceVersion: 20, continueToken: '', remaining: null });
  t.same(empty.items, [], 'an empty list has items: []');
  // An object whose bytes do not start with its kind and apiVersion is written as it is.
  const odd = new CachedObject(
    'abcdef',
    'default',
    'odd',
    21,
    undefined,
    null,
    Buffer.from('{"metadata":{"name":"odd"},"kind":"ConfigMap","apiVersion":"v1"}'),
  );
  t.same((await written({ objects: [odd], resourceVersion: 21, continueToken: '', remaining: null })).items, [
    { metadata: { name: 'odd' }, kind: 'ConfigMap', apiVersion: 'v1' },
  ]);
});

t.test('writeList: an object that arrived by the upstream watch is written as a list item too', async (t) => {
  await stand.push('/api/v1/configmaps', [['ADDED', upstreamConfigMap('abcdef', 'default', 'c', 50)]]);
  const list = await written({ objects: configmaps.objectsOf('abcdef', 'default'), resourceVersion: 50, continueToken: '', remaining: null });
  t.same(
    list.items.map((i: any) => [i.metadata.name, 'kind' in i]),
    [
      ['a', false],
      ['b', false],
      ['c', false],
    ],
  );
});

t.test('writeList: a large list goes in chunks, waiting for a slow client, and still parses whole and in order', async (t) => {
  const big = Array.from(
    { length: 400 },
    (_, i) =>
      new CachedObject(
        'abcdef',
        'default',
        `big-${String(i).padStart(3, '0')}`,
        1000 + i,
        undefined,
        null,
        Buffer.from(
          JSON.stringify({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: `big-${String(i).padStart(3, '0')}` }, data: { blob: 'x'.repeat(1_000) } }),
        ),
      ),
  );
  const out = collector(16 * 1024, 1);
  let writes = 0;
  const write = out.write.bind(out);
  out.write = ((chunk: any, ...rest: any[]) => (writes++, write(chunk, ...rest))) as typeof out.write;
  const list = await written({ objects: big, resourceVersion: 2000, continueToken: '', remaining: null }, out);
  t.equal(list.items.length, 400);
  t.same(
    list.items.map((i: any) => i.metadata.name),
    big.map((o) => o.name),
    'in order',
  );
  t.ok(writes > 1, `written in ${writes} chunks, not as one buffer`);
  const gone = new PassThrough();
  gone.destroy();
  await writeList(gone, 'ConfigMap', 'v1', { objects: big, resourceVersion: 2000, continueToken: '', remaining: null });
  t.pass('a client gone mid-list ends the writing');
});

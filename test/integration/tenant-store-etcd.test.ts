// The etcd tenant store against a real etcd (the rig's binary, alone): the same contract as the embedded store, two
// replicas agreeing, etcd stopped and started mid-test, a replica cut off past a compaction, and 1,000 tenants.
// No rig: etcd alone, stopped and started by the test.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import t from 'tap';
import { startEtcd, type StandaloneEtcd } from '../../lib/rig/harness.ts';
import { EtcdTenantStore } from '../../lib/tenants/etcd-store.ts';
import { TenantStoreUnavailable, type TenantStore } from '../../lib/tenants/tenant.ts';
import { cuttableRelay } from '../helpers/relay.ts';
import { eventually, recorder, tenantSpec, testTenantStoreContract } from '../helpers/tenant-store-contract.ts';

const dir = mkdtempSync(join(tmpdir(), 'tenant-store-etcd-'));
let etcd: StandaloneEtcd;
const stores = new Set<TenantStore>();
let prefixes = 0;

t.before(async () => {
  etcd = await startEtcd(dir);
});
t.teardown(async () => {
  for (const store of stores) await store.close();
  await etcd?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A fresh key prefix per test: tests share one etcd but none sees another's tenants. */
function freshPrefix(): string {
  return `/tenantgate-test/${process.pid}-${++prefixes}/tenants/`;
}

async function openStore(prefix: string, endpoint = etcd.endpoint): Promise<EtcdTenantStore> {
  const store = new EtcdTenantStore({ endpoints: [endpoint], prefix });
  stores.add(store);
  await store.start();
  return store;
}

t.test('the etcd store keeps the TenantStore contract', (t) => testTenantStoreContract(t, () => openStore(freshPrefix())));

t.test('two stores on one etcd agree within a second: create, update and delete on one are seen by the other', async (t) => {
  const prefix = freshPrefix();
  const [one, two] = [await openStore(prefix), await openStore(prefix)];
  const heardByTwo = recorder();
  two.onChange(heardByTwo.onEvent);

  let started = Date.now();
  const created = await one.create(tenantSpec('abc123'));
  await eventually(() => two.get('abc123') !== undefined, 'the create on the other store', 1_000);
  const createSeenMs = Date.now() - started;
  t.same(two.get('abc123'), created, 'the same object, resourceVersion included');
  t.same(
    two.list().map((tenant) => tenant.metadata.name),
    ['abc123'],
  );

  started = Date.now();
  const updated = await two.update({ ...structuredClone(created), metadata: { ...created.metadata, labels: { tier: 'gold' } } });
  await eventually(() => one.get('abc123')?.metadata.resourceVersion === updated.metadata.resourceVersion, 'the update on the first store', 1_000);
  const updateSeenMs = Date.now() - started;
  t.same(one.get('abc123')!.metadata.labels, { tier: 'gold' });

  started = Date.now();
  await one.remove('abc123');
  await eventually(() => two.get('abc123') === undefined, 'the delete on the other store', 1_000);
  const deleteSeenMs = Date.now() - started;
  t.same(two.list(), []);
  await eventually(() => heardByTwo.events.length === 3, "the other store's listener hears all three");
  t.same(heardByTwo.lines(), ['ADDED abc123', 'MODIFIED abc123', 'DELETED abc123']);
  t.comment(`seen by the other store after: create ${createSeenMs} ms, update ${updateSeenMs} ms, delete ${deleteSeenMs} ms`);
});

t.test('a store on another prefix sees none of these tenants and cannot change them', async (t) => {
  const ours = await openStore(freshPrefix());
  const theirs = await openStore(freshPrefix());
  const created = await ours.create(tenantSpec('abc123'));
  await theirs.create(tenantSpec('zzz999'));
  t.equal(theirs.get('abc123'), undefined);
  t.same(
    theirs.list().map((tenant) => tenant.metadata.name),
    ['zzz999'],
  );
  await t.rejects(theirs.update(created), { name: 'TenantMissing' });
  await t.rejects(theirs.remove('abc123'), { name: 'TenantMissing' });
  t.same(ours.get('abc123'), created, 'untouched');
});

t.test('etcd stopped: reads keep answering and writes fail fast with 503; etcd back: nothing lost, watches resume', async (t) => {
  const prefix = freshPrefix();
  const [one, two] = [await openStore(prefix), await openStore(prefix)];
  const kept = await one.create(tenantSpec('keep01'));
  const doomed = await one.create(tenantSpec('gone01'));
  await eventually(() => two.list().length === 2, 'both tenants on the second store');

  await etcd.stop('crash');
  t.same(one.get('keep01'), kept, 'get answers from the index');
  t.same(
    two.list().map((tenant) => tenant.metadata.name),
    ['gone01', 'keep01'],
    'list answers from the index',
  );
  for (const [what, write] of [
    ['create', () => one.create(tenantSpec('new001'))],
    ['update', () => two.update({ ...structuredClone(kept), metadata: { ...kept.metadata, labels: { x: 'y' } } })],
    ['remove', () => one.remove('gone01')],
  ] as [string, () => Promise<unknown>][]) {
    const started = Date.now();
    await t.rejects(write(), TenantStoreUnavailable, `${what} rejects with TenantStoreUnavailable`);
    const took = Date.now() - started;
    t.ok(took < 5_000, `${what} failed in ${took} ms, not a hang`);
  }
  t.same(one.get('keep01'), kept, 'a failed write changed nothing in the index');

  await etcd.start();
  const restarted = Date.now();
  // The first write may still meet the old connection; within a few seconds writes land.
  let created;
  for (;;) {
    try {
      created = await one.create(tenantSpec('new001'));
      break;
    } catch (error) {
      if (!(error instanceof TenantStoreUnavailable) || Date.now() - restarted > 10_000) throw error;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  t.comment(`first write landed ${Date.now() - restarted} ms after etcd was healthy again`);
  await eventually(() => two.get('new001') !== undefined, 'the write after the restart on the other store', 5_000);
  t.same(two.get('new001'), created);
  await two.remove('gone01', doomed.metadata.resourceVersion);
  await eventually(() => one.get('gone01') === undefined, 'the delete after the restart on the first store', 5_000);

  const fresh = await openStore(prefix);
  t.same(fresh.list(), one.list(), 'a new store after the restart loads every tenant');
  t.same(
    fresh.list().map((tenant) => tenant.metadata.name),
    ['keep01', 'new001'],
  );
});

t.test('a store cut off from etcd past a compaction reads everything again and misses no create, update or delete', async (t) => {
  const prefix = freshPrefix();
  const relay = await cuttableRelay(etcd.endpoint);
  t.teardown(relay.close);
  const writer = await openStore(prefix);
  const cutOff = await openStore(prefix, relay.endpoint);
  const changed = await writer.create(tenantSpec('change'));
  await writer.create(tenantSpec('delete'));
  await eventually(() => cutOff.list().length === 2, 'both tenants on the store behind the relay');
  const heard = recorder();
  cutOff.onChange(heard.onEvent);

  relay.cut();
  const updated = await writer.update({ ...structuredClone(changed), metadata: { ...changed.metadata, labels: { while: 'cut off' } } });
  await writer.remove('delete');
  const added = await writer.create(tenantSpec('added1'));
  const raw = new Etcd3({ hosts: etcd.endpoint });
  try {
    // Compact everything up to now: the cut-off store's watch cannot resume from where it stopped.
    const { header } = await raw.get('anything').exec();
    await raw.kv.compact({ revision: header.revision, physical: true });
  } finally {
    raw.close();
  }
  t.equal(cutOff.get('delete')?.metadata.name, 'delete', 'while cut off, the index still serves what it had');

  await relay.mend();
  await eventually(() => cutOff.get('delete') === undefined && cutOff.get('added1') !== undefined, 'the changes made while cut off', 10_000);
  t.same(cutOff.get('change'), updated, 'the update made while cut off');
  t.same(cutOff.get('added1'), added, 'the create made while cut off');
  t.same(cutOff.list(), writer.list(), 'both stores hold the same tenants');
  t.same(heard.lines().sort(), ['ADDED added1', 'DELETED delete', 'MODIFIED change'], 'listeners heard each change once');
  const afterwards = await writer.create(tenantSpec('after1'));
  await eventually(() => cutOff.get('after1') !== undefined, 'a change after the re-read', 2_000);
  t.same(cutOff.get('after1'), afterwards);
});

t.test('an etcd that stops answering (connection open, nothing comes back): writes fail within the timeout, reads answer', async (t) => {
  const prefix = freshPrefix();
  const relay = await cuttableRelay(etcd.endpoint);
  t.teardown(relay.close);
  const store = new EtcdTenantStore({ endpoints: [relay.endpoint], prefix, timeoutMs: 1_000 });
  stores.add(store);
  await store.start();
  const created = await store.create(tenantSpec('abc123'));
  relay.stall();
  const started = Date.now();
  await t.rejects(store.create(tenantSpec('zzz999')), TenantStoreUnavailable);
  const took = Date.now() - started;
  t.ok(took >= 900 && took < 2_500, `the write failed after ${took} ms, at its 1 s timeout`);
  t.same(store.get('abc123'), created, 'get still answers');
  const closing = Date.now();
  await store.close();
  t.ok(Date.now() - closing < 2_000, 'close does not hang on a stalled etcd');
});

t.test('1,000 tenants created (20 at a time) and listed; a new store loads them all', async (t) => {
  const prefix = freshPrefix();
  const [one, two] = [await openStore(prefix), await openStore(prefix)];
  const ids = Array.from({ length: 1_000 }, (_, i) => `t${String(i).padStart(5, '0')}`);
  const started = Date.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 20 }, async () => {
      while (next < ids.length) await one.create(tenantSpec(ids[next++]!));
    }),
  );
  const createMs = Date.now() - started;
  const listStarted = performance.now();
  const listed = one.list();
  const listMs = performance.now() - listStarted;
  t.same(
    listed.map((tenant) => tenant.metadata.name),
    ids,
    'all 1,000, sorted',
  );
  await eventually(() => two.list().length === 1_000, 'all 1,000 on the other store', 5_000);
  const loadStarted = Date.now();
  const fresh = await openStore(prefix);
  const loadMs = Date.now() - loadStarted;
  t.equal(fresh.list().length, 1_000, 'a new store loads all 1,000');
  const lookupStarted = performance.now();
  for (let i = 0; i < 100_000; i++) fresh.get(ids[i % 1_000]!);
  const lookupNs = ((performance.now() - lookupStarted) * 1e6) / 100_000;
  t.comment(`1,000 creates: ${createMs} ms; list: ${listMs.toFixed(2)} ms; new store start: ${loadMs} ms; get: ${lookupNs.toFixed(0)} ns`);
});

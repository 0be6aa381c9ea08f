// The TenantStore contract as one table of behaviours, run against every store (embedded in unit tests, etcd against a
// real etcd). A store's events may arrive after its write resolves (etcd's come through a watch): tests wait, bounded.
import type { Test } from 'tap';
import { HISTORY_LIMIT } from '../../lib/tenants/tenant-index.ts';
import {
  TENANT_API_VERSION,
  TenantConflict,
  TenantExists,
  TenantMissing,
  TenantWatchExpired,
  type TenantEvent,
  type TenantStore,
} from '../../lib/tenants/tenant.ts';

/** A started store nobody else writes to; the test closes it. */
export type StoreFactory = (t: Test) => Promise<TenantStore>;

export function tenantSpec(id: string, labels: Record<string, string> = {}): Parameters<TenantStore['create']>[0] {
  return { apiVersion: TENANT_API_VERSION, kind: 'Tenant', metadata: { name: id, labels }, spec: { quota: { hard: { pods: '10' } } } };
}

/** Polls until `check` holds, failing after `timeoutMs`: etcd-backed stores see changes through a watch. */
export async function eventually(check: () => boolean, what: string, timeoutMs = 2_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Records what a watch or listener receives, as `TYPE name` lines. */
export function recorder(): { events: TenantEvent[]; lines: () => string[]; onEvent: (event: TenantEvent) => void } {
  const events: TenantEvent[] = [];
  return { events, lines: () => events.map((e) => `${e.type} ${e.tenant.metadata.name}`), onEvent: (e) => events.push(e) };
}

const contract: Record<string, (t: Test, store: TenantStore) => Promise<void>> = {
  'a created tenant gets uid, creationTimestamp and resourceVersion from the store, and get returns it': async (t, store) => {
    const created = await store.create({ ...tenantSpec('abc123'), metadata: { name: 'abc123', uid: 'forged', resourceVersion: '999999' } });
    t.match(created.metadata.uid, /^[0-9a-f-]{36}$/, 'uid is a UUID');
    t.not(created.metadata.uid, 'forged', "the writer's uid is ignored");
    t.match(created.metadata.creationTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    t.ok(Number(created.metadata.resourceVersion) > 0, 'a numeric resourceVersion');
    t.not(created.metadata.resourceVersion, '999999');
    t.same(store.get('abc123'), created, 'get answers right after create resolves');
    t.ok(Number(store.resourceVersion) >= Number(created.metadata.resourceVersion), "the store's resourceVersion is at least the write's");
    t.equal(store.get('zzz999'), undefined, 'an unknown id is undefined');
  },

  'creating an id that exists is TenantExists and leaves the first tenant as it was': async (t, store) => {
    const first = await store.create(tenantSpec('abc123', { owner: 'first' }));
    await t.rejects(store.create(tenantSpec('abc123', { owner: 'second' })), TenantExists);
    t.same(store.get('abc123'), first);
  },

  'list is sorted by name': async (t, store) => {
    for (const id of ['zz0001', 'aa0001', 'mm0001']) await store.create(tenantSpec(id));
    t.same(
      store.list().map((tenant) => tenant.metadata.name),
      ['aa0001', 'mm0001', 'zz0001'],
    );
  },

  'an update with the current resourceVersion replaces the tenant and keeps its uid and creationTimestamp': async (t, store) => {
    const created = await store.create(tenantSpec('abc123'));
    const edit = structuredClone(created);
    edit.metadata.labels = { tier: 'gold' };
    edit.metadata.uid = 'forged';
    edit.metadata.creationTimestamp = '2000-01-01T00:00:00Z';
    const updated = await store.update(edit);
    t.same(updated.metadata.labels, { tier: 'gold' });
    t.equal(updated.metadata.uid, created.metadata.uid, 'uid is kept');
    t.equal(updated.metadata.creationTimestamp, created.metadata.creationTimestamp, 'creationTimestamp is kept');
    t.ok(Number(updated.metadata.resourceVersion) > Number(created.metadata.resourceVersion), 'resourceVersion moved on');
    t.same(store.get('abc123'), updated, 'get answers the update right after it resolves');
  },

  'an update or delete with a stale resourceVersion is TenantConflict and changes nothing': async (t, store) => {
    const created = await store.create(tenantSpec('abc123'));
    const current = await store.update({ ...structuredClone(created), metadata: { ...created.metadata, labels: { v: '2' } } });
    await t.rejects(store.update({ ...structuredClone(created), metadata: { ...created.metadata, labels: { v: 'stale' } } }), TenantConflict);
    await t.rejects(store.remove('abc123', created.metadata.resourceVersion), TenantConflict);
    t.same(store.get('abc123'), current);
  },

  'update and delete of a missing tenant are TenantMissing': async (t, store) => {
    const created = await store.create(tenantSpec('abc123'));
    await store.remove('abc123');
    await t.rejects(store.update(created), TenantMissing);
    await t.rejects(store.remove('abc123'), TenantMissing);
    await t.rejects(store.remove('abc123', created.metadata.resourceVersion), TenantMissing);
  },

  "a second tenant cannot touch the first: changing and deleting one leaves the other's object as it was": async (t, store) => {
    const a = await store.create(tenantSpec('aaaaaa', { owner: 'a' }));
    const b = await store.create(tenantSpec('bbbbbb', { owner: 'b' }));
    // b's resourceVersion on a's name is not a's: the write must not land on a.
    await t.rejects(
      store.update({ ...structuredClone(a), metadata: { ...a.metadata, resourceVersion: b.metadata.resourceVersion, labels: { owner: 'b' } } }),
      TenantConflict,
    );
    await t.rejects(store.remove('aaaaaa', b.metadata.resourceVersion), TenantConflict);
    await store.update({ ...structuredClone(b), metadata: { ...b.metadata, labels: { owner: 'b2' } } });
    await store.remove('bbbbbb');
    t.same(store.get('aaaaaa'), a, 'a is untouched');
    t.same(
      store.list().map((tenant) => tenant.metadata.name),
      ['aaaaaa'],
    );
  },

  'a removed tenant is gone from get and list, and re-creating the id gives a new uid': async (t, store) => {
    const first = await store.create(tenantSpec('abc123'));
    await store.remove('abc123', first.metadata.resourceVersion);
    t.equal(store.get('abc123'), undefined);
    t.same(store.list(), []);
    const again = await store.create(tenantSpec('abc123'));
    t.not(again.metadata.uid, first.metadata.uid, 'a new uid: nothing keyed by the old one matches');
  },

  "what get and list return cannot change the store's tenants, and neither can a create's result": async (t, store) => {
    const created = await store.create(tenantSpec('abc123', { owner: 'a' }));
    created.metadata.labels!.owner = 'mallory';
    t.same(store.get('abc123')!.metadata.labels, { owner: 'a' });
    t.throws(() => {
      store.get('abc123')!.metadata.labels!.owner = 'mallory';
    }, TypeError);
    t.throws(() => {
      store.list()[0]!.spec.quota = {};
    }, TypeError);
    t.same(store.get('abc123')!.metadata.labels, { owner: 'a' });
  },

  'a watch without resourceVersion sends every tenant as ADDED, then each change as it happens': async (t, store) => {
    await store.create(tenantSpec('aaaaaa'));
    await store.create(tenantSpec('bbbbbb'));
    const seen = recorder();
    const stop = store.watch(seen.onEvent);
    t.same(seen.lines(), ['ADDED aaaaaa', 'ADDED bbbbbb'], 'current tenants first');
    const a = store.get('aaaaaa')!;
    await store.update({ ...structuredClone(a), metadata: { ...a.metadata, labels: { x: 'y' } } });
    await store.remove('bbbbbb');
    await store.create(tenantSpec('cccccc'));
    await eventually(() => seen.events.length === 5, 'five events');
    t.same(seen.lines(), ['ADDED aaaaaa', 'ADDED bbbbbb', 'MODIFIED aaaaaa', 'DELETED bbbbbb', 'ADDED cccccc']);
    t.same(seen.events[2]!.tenant.metadata.labels, { x: 'y' }, 'MODIFIED carries the new object');
    t.ok(
      Number(seen.events[3]!.tenant.metadata.resourceVersion) > Number(seen.events[2]!.tenant.metadata.resourceVersion),
      'DELETED carries a newer resourceVersion',
    );
    stop();
    await store.create(tenantSpec('dddddd'));
    await eventually(() => store.get('dddddd') !== undefined, 'dddddd in the index');
    t.equal(seen.events.length, 5, 'a stopped watch hears nothing more');
  },

  'a watch from a resourceVersion replays exactly the changes after it, in order, then goes live': async (t, store) => {
    await store.create(tenantSpec('aaaaaa'));
    const from = store.resourceVersion;
    await store.create(tenantSpec('bbbbbb'));
    const a = store.get('aaaaaa')!;
    await store.update({ ...structuredClone(a), metadata: { ...a.metadata, labels: { x: 'y' } } });
    await store.remove('bbbbbb');
    const seen = recorder();
    const stop = store.watch(seen.onEvent, from);
    t.same(seen.lines(), ['ADDED bbbbbb', 'MODIFIED aaaaaa', 'DELETED bbbbbb'], 'only what came after the resourceVersion');
    await store.create(tenantSpec('cccccc'));
    await eventually(() => seen.events.length === 4, 'the live event');
    t.same(seen.lines().at(-1), 'ADDED cccccc');
    const replayedNothing = recorder();
    store.watch(replayedNothing.onEvent, store.resourceVersion)();
    t.same(replayedNothing.events, [], 'from the current resourceVersion nothing is replayed');
    stop();
  },

  'a watch from a resourceVersion older than the history is TenantWatchExpired': async (t, store) => {
    let tenant = await store.create(tenantSpec('abc123'));
    const old = tenant.metadata.resourceVersion;
    for (let i = 0; i < HISTORY_LIMIT + 1; i++) {
      tenant = await store.update({ ...structuredClone(tenant), metadata: { ...tenant.metadata, labels: { n: String(i) } } });
    }
    await eventually(() => store.resourceVersion === tenant.metadata.resourceVersion, 'the last update in the index');
    t.throws(() => store.watch(() => {}, old), TenantWatchExpired);
    t.throws(() => store.watch(() => {}, 'not-a-number'), TenantWatchExpired);
    const recent = recorder();
    store.watch(recent.onEvent, String(Number(tenant.metadata.resourceVersion) - 1))();
    t.same(recent.lines(), ['MODIFIED abc123'], 'a recent resourceVersion still resumes');
  },

  'onChange hears every change until stopped, and each listener stops on its own': async (t, store) => {
    const first = recorder();
    const second = recorder();
    const stopFirst = store.onChange(first.onEvent);
    store.onChange(second.onEvent);
    const created = await store.create(tenantSpec('abc123'));
    const updated = await store.update({ ...structuredClone(created), metadata: { ...created.metadata, labels: { x: 'y' } } });
    await store.remove('abc123', updated.metadata.resourceVersion);
    await eventually(() => first.events.length === 3, 'three changes');
    t.same(first.lines(), ['ADDED abc123', 'MODIFIED abc123', 'DELETED abc123']);
    t.equal(first.events[0]!.tenant.metadata.uid, created.metadata.uid);
    stopFirst();
    await store.create(tenantSpec('abc123'));
    await eventually(() => second.events.length === 4, 'the second listener hears the re-create');
    t.equal(first.events.length, 3, 'the stopped listener heard nothing more');
  },
};

/** Runs every behaviour of the contract against fresh stores from `makeStore`. */
export async function testTenantStoreContract(t: Test, makeStore: StoreFactory): Promise<void> {
  for (const [name, behaviour] of Object.entries(contract)) {
    await t.test(name, async (t) => {
      const store = await makeStore(t);
      try {
        await behaviour(t, store);
      } finally {
        await store.close();
      }
    });
  }
}

// The watch cache under faults, against the real rig: the apiserver restarting (gracefully and by crash), etcd
// compacted under it, tenantgate itself restarting or replaced by another replica, its upstream connection cut, and
// watches that start while the namespace changes or ahead of the cache. Whatever happens, a tenant client
// that resumes from the last resourceVersion it saw and relists on 410 (as client-go does) ends with exactly the
// changes etcd recorded, in order, none missed or repeated; a watch the cache cannot continue is ended, never left to
// miss an event silently.
// Its own rig (not a shared one): it restarts kube-apiserver and compacts etcd under the cache.
import t, { type Test } from 'tap';
import type { ChildProcess } from 'node:child_process';
import type { ClientHttp2Session } from 'node:http2';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TENANT_LABEL } from '../../lib/convert/prefix.ts';
import { renderKubeconfig } from '../../lib/upstream/kubeconfig.ts';
import { connectH2, credentialsOf, h1Request, h2Request } from '../helpers/http.ts';
import { parsePrometheusText, sampleSum } from '../helpers/prometheus-text.ts';
import { cuttableRelay } from '../helpers/relay.ts';
import { spawnGateway, startStack, stopChild, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';
import { departures, describeEntry, etcdRecord, Reflector, sleep, stateAt, waitFor, type ReflectorEntry, type TruthEvent } from '../helpers/watch.ts';
import { openWatch } from '../helpers/watch-events.ts';
import { eventually } from '../helpers/kit.ts';

const BOOKMARKS_EVERY_SECOND = ['--watch-cache-bookmark-interval', '1s'];
let stack: Stack;
let alpha: TestTenant;
let bravo: TestTenant;
/** The stack's tenantgate, or the one that replaced it on the same port (the restart test). */
let gateway: { child: ChildProcess; metricsUrl: string };
/** The log lines of every tenantgate started here, shown when a test fails. */
const gatewayLogs: { name: string; logs: string[] }[] = [];
/** Every client session the tests open, closed at the end whatever happened. */
const sessions = new Set<ClientHttp2Session>();

t.before(async () => {
  // Bookmarks every second (the apiserver's cadence is a minute): the clients here see them between the faults.
  stack = await startStack({ rig: 'private', controllers: false, gatewayArgs: BOOKMARKS_EVERY_SECOND });
  gateway = { child: stack.gateway, metricsUrl: stack.metricsUrl };
  gatewayLogs.push({ name: "the stack's tenantgate", logs: stack.gatewayLogs });
  alpha = await createTestTenant(stack, 'wcfalf');
  bravo = await createTestTenant(stack, 'wcfbrv');
});
t.teardown(async () => {
  for (const session of sessions) session.destroy();
  if (stack !== undefined && gateway.child !== stack.gateway) await stopChild(gateway.child);
  await stack?.stop();
});

function tracked(session: ClientHttp2Session): ClientHttp2Session {
  sessions.add(session);
  session.on('close', () => sessions.delete(session));
  return session;
}

/** A session of `tenant` with tenantgate (the stack's port unless `server` says another). */
function tenantSession(tenant: TestTenant, server?: string): ClientHttp2Session {
  const credentials = credentialsOf(tenant.kubeconfig);
  return tracked(connectH2(server === undefined ? credentials : { ...credentials, server }));
}

/** A session straight to the apiserver, as its administrator. */
function upstreamSession(): ClientHttp2Session {
  return tracked(connectH2(credentialsOf(stack.upstreamKubeconfig)));
}

async function gatewayMetrics(metricsUrl = gateway.metricsUrl) {
  const response = await fetch(metricsUrl);
  if (response.status !== 200) throw new Error(`GET ${metricsUrl}: ${response.status}`);
  return parsePrometheusText(await response.text());
}

async function configmapRelists(metricsUrl?: string): Promise<number> {
  return sampleSum(await gatewayMetrics(metricsUrl), 'tenantgate_watch_cache_relists_total', { resource: 'configmaps' });
}

/** The configmap relists once there are more than `before`, or as many as there are after 60 s. */
async function relistsAfter(before: number, metricsUrl?: string): Promise<number> {
  const deadline = Date.now() + 60_000;
  let relists: number;
  while ((relists = await configmapRelists(metricsUrl)) === before && Date.now() < deadline) await sleep(200);
  return relists;
}

/**
 * Whether a tenantgate (the stack's unless `server` says another) serves alpha's watches from its cache, tried until it
 * does or 40 s pass: a watch opened before its first list is in goes upstream, and stays there.
 */
async function cacheServes(namespace: string, server?: string, metricsUrl?: string): Promise<boolean> {
  const session = tenantSession(alpha, server);
  try {
    for (const deadline = Date.now() + 40_000; Date.now() < deadline; await sleep(200)) {
      const watchers = await cacheWatchers(alpha, metricsUrl);
      const probe = openWatch(session, `/api/v1/namespaces/${namespace}/configmaps?watch=1&resourceVersion=0`);
      await probe.status;
      const served = (await cacheWatchers(alpha, metricsUrl)) > watchers;
      probe.close();
      if (served) return true;
    }
    return false;
  } finally {
    session.close();
  }
}

async function cacheWatchers(tenant: TestTenant, metricsUrl?: string): Promise<number> {
  return sampleSum(await gatewayMetrics(metricsUrl), 'tenantgate_watch_cache_watchers', { tenant: tenant.id });
}

/** alpha's watches served from the cache, once they are `expected` or 10 s have passed (a closed one takes a moment). */
async function cacheWatchersSettled(expected: number, metricsUrl?: string): Promise<number> {
  const deadline = Date.now() + 10_000;
  let watchers: number;
  while ((watchers = await cacheWatchers(alpha, metricsUrl)) !== expected && Date.now() < deadline) await sleep(100);
  return watchers;
}

/**
 * Writes ConfigMaps of one namespace through a session it opens (again, should the server go away), and remembers
 * the data written at each resourceVersion. A write the server answers 503 (its upstream away) is tried again.
 */
class Writer {
  readonly written = new Map<number, Record<string, string>>();
  readonly #connect: () => ClientHttp2Session;
  readonly #collection: string;
  #session: ClientHttp2Session | undefined;

  constructor(connect: () => ClientHttp2Session, namespace: string) {
    this.#connect = connect;
    this.#collection = `/api/v1/namespaces/${namespace}/configmaps`;
  }

  create(name: string, data: Record<string, string>): Promise<number> {
    return this.#send('POST', this.#collection, { metadata: { name }, data }, 201, 'application/json');
  }

  update(name: string, data: Record<string, string>): Promise<number> {
    return this.#send('PATCH', `${this.#collection}/${name}`, { data }, 200, 'application/merge-patch+json');
  }

  async remove(name: string): Promise<void> {
    await this.#send('DELETE', `${this.#collection}/${name}`, undefined, 200, 'application/json');
  }

  close(): void {
    this.#session?.close();
  }

  async #send(method: string, path: string, body: unknown, expected: number, contentType: string): Promise<number> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      if (this.#session === undefined || this.#session.closed || this.#session.destroyed) this.#session = this.#connect();
      const answer = await h2Request(this.#session, method, path, {
        headers: { 'content-type': contentType },
        body: body === undefined ? undefined : JSON.stringify(body),
      }).catch((error: Error) => ({ status: 0, body: error.message }));
      if (answer.status === expected) {
        const object = JSON.parse(answer.body);
        if (object.kind !== 'ConfigMap') return 0;
        const resourceVersion = Number(object.metadata.resourceVersion);
        this.written.set(resourceVersion, object.data);
        return resourceVersion;
      }
      if ((answer.status !== 503 && answer.status !== 0) || Date.now() > deadline)
        throw new Error(`${method} ${path}: ${answer.status} ${answer.body.slice(0, 300)}`);
      this.#session?.close();
      this.#session = undefined;
      await sleep(200);
    }
  }
}

async function createNamespace(tenant: TestTenant, name: string): Promise<void> {
  const session = tenantSession(tenant);
  try {
    const answer = await h2Request(session, 'POST', '/api/v1/namespaces', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ metadata: { name } }),
    });
    if (answer.status !== 201) throw new Error(`create namespace ${name} for ${tenant.id}: ${answer.status} ${answer.body}`);
  } finally {
    session.close();
  }
}

/**
 * A namespace of the same name for alpha and bravo (bravo's objects have the same names, so one leaking into alpha's
 * view would show), etcd's record of alpha's ConfigMaps there, and writers for both.
 */
async function scene(t: Test, namespace: string) {
  await createNamespace(alpha, namespace);
  await createNamespace(bravo, namespace);
  const upstreamNamespace = `${alpha.id}-${namespace}`;
  const truth = await etcdRecord(stack.rig.etcdEndpoint, `/registry/configmaps/${upstreamNamespace}/`);
  const writer = new Writer(() => tenantSession(alpha), namespace);
  const mirror = new Writer(() => tenantSession(bravo), namespace);
  t.teardown(async () => {
    writer.close();
    mirror.close();
    await truth.close();
    if (t.passing()) return;
    for (const { name, logs } of gatewayLogs) {
      const notable = logs.filter((line) => !line.includes('"level":"info"'));
      t.comment(`${name}, its last warnings and errors:\n${notable.slice(-20).join('\n')}`);
    }
  });
  return {
    truth,
    writer,
    mirror,
    upstreamNamespace,
    /** A started reflector of alpha's ConfigMaps of the namespace through tenantgate (the watch cache serves it). */
    viaCache: (connect: () => ClientHttp2Session = () => tenantSession(alpha)) =>
      started(t, new Reflector(connect, `/api/v1/namespaces/${namespace}/configmaps`, 'cached')),
    /** The same collection reflected straight from the apiserver. */
    direct: () => started(t, new Reflector(upstreamSession, `/api/v1/namespaces/${upstreamNamespace}/configmaps`, 'consistent')),
    /** The tenant's name of an object of the collection in the tenant's view, null for any other. */
    tenantName: (object: any) => (object.metadata.namespace === namespace ? object.metadata.name : null),
    upstreamName: (object: any) => (object.metadata.namespace === upstreamNamespace ? object.metadata.name : null),
  };
}

/** `reflector` started, and stopped when `t` ends. */
async function started(t: Test, reflector: Reflector): Promise<Reflector> {
  t.teardown(() => reflector.stop());
  await reflector.start();
  return reflector;
}

/** The reflector ended with the truth's state, and no departure from the truth on the way. */
function endsLikeTheTruth(
  t: Test,
  label: string,
  reflector: Reflector,
  truth: readonly TruthEvent[],
  nameOf: (object: any) => string | null,
  written: ReadonlyMap<number, unknown>,
) {
  t.same(departures(reflector.log, truth, nameOf, written), [], `${label}: every change in order, none missed or repeated, lists as the state was`);
  const held = new Map(
    [...reflector.objects.values()].map((object) => [
      nameOf(object) ?? `(foreign) ${object.metadata.namespace}/${object.metadata.name}`,
      Number(object.metadata.resourceVersion),
    ]),
  );
  t.same([...held].sort(), [...stateAt(truth, Infinity)].sort(), `${label}: holds exactly what exists`);
  t.comment(
    `${label}: ${reflector.count('listed')} lists, ${reflector.count('ended')} watch ends, ${reflector.count('expired')} 410s, ${reflector.count('refused')} refusals: ${reflector.log.map(describeEntry).join(' | ')}`,
  );
}

for (const how of ['graceful', 'crash'] as const) {
  t.test(`an upstream ${how} restart: a client of the cache that resumes or relists misses no change`, async (t) => {
    const s = await scene(t, `restart-${how}`);
    const [viaCache, direct] = await Promise.all([s.viaCache(), s.direct()]);
    t.equal(await cacheWatchersSettled(1), 1, 'the watch is served from the cache');
    const relistsBefore = await configmapRelists();

    await s.writer.create('one', { step: '1' });
    await s.mirror.create('one', { owner: 'bravo' });
    await s.writer.create('two', { step: '1' });
    await s.writer.update('one', { step: '2' });
    await s.writer.remove('two');
    const before = await s.writer.create('three', { step: '1' });
    await s.mirror.update('one', { owner: 'bravo', step: '2' });
    await viaCache.reached(before);

    await stack.rig.stopApiserver(how);
    await stack.rig.startApiserver();

    await s.writer.update('three', { step: '2' });
    await s.writer.create('two', { step: 'again' });
    await s.mirror.remove('one');
    await s.writer.remove('one');
    const last = await s.writer.update('two', { step: 'last' });
    await s.truth.reached(last);
    await Promise.all([viaCache.reached(last), direct.reached(last)]);

    endsLikeTheTruth(t, 'through the cache', viaCache, s.truth.events, s.tenantName, s.writer.written);
    endsLikeTheTruth(t, 'straight to the apiserver', direct, s.truth.events, s.upstreamName, s.writer.written);
    t.comment(`the cache relisted ${(await configmapRelists()) - relistsBefore} times`);
  });
}

t.test('etcd compacted and the apiserver restarted: the cache relists, ends its watchers, and answers old resourceVersions 410', async (t) => {
  const s = await scene(t, 'compaction');
  const viaCache = await s.viaCache();
  await s.writer.create('kept', { step: '1' });
  await s.mirror.create('kept', { owner: 'bravo' });
  await s.writer.create('gone', { step: '1' });
  const old = await s.writer.update('kept', { step: '2' });
  await viaCache.reached(old);
  const tenant = tenantSession(alpha);
  const held = openWatch(tenant, `/api/v1/namespaces/compaction/configmaps?watch=1&resourceVersion=${old}`);
  t.equal(await held.status, 200, 'a watch from a resourceVersion in the history is served');
  // The same over HTTP/1.1: its answer must end as a whole chunked response (resolves), not be cut (rejects).
  const heldOverHttp1 = h1Request(credentialsOf(alpha.kubeconfig), 'GET', `/api/v1/namespaces/compaction/configmaps?watch=1&resourceVersion=${old}`);
  t.equal(await cacheWatchersSettled(3), 3, 'the three watches are served from the cache');
  await s.writer.remove('gone');
  const beforeRestart = await s.writer.update('kept', { step: '3' });
  await held.until('the changes before the restart', (events) => events.some((e) => Number(e.object.metadata.resourceVersion) === beforeRestart));
  const relistsBefore = await configmapRelists();

  const compactedAt = await s.truth.compact();
  t.ok(compactedAt >= beforeRestart, 'etcd compacted past every change so far');
  await stack.rig.stopApiserver('graceful');
  await stack.rig.startApiserver();

  const relists = await relistsAfter(relistsBefore);
  t.ok(relists > relistsBefore, `tenantgate relisted configmaps (tenantgate_watch_cache_relists_total ${relistsBefore} → ${relists})`);
  await waitFor('the held watch to end', () => held.ended, 15_000).catch(() => {});
  t.ok(held.ended, 'the watch the cache could not continue was ended');
  t.same(
    held.events.map((e) => [e.type, e.object.metadata.name, Number(e.object.metadata.resourceVersion)]),
    s.truth.events.filter((e) => e.resourceVersion > old).map((e) => [e.type, e.name, e.resourceVersion]),
    'it had every change up to the restart, and nothing else',
  );
  const overHttp1 = await Promise.race([heldOverHttp1, sleep(15_000).then(() => null)]);
  t.equal(overHttp1?.status, 200, 'the HTTP/1.1 watch ended, its response whole');
  t.same(
    (overHttp1?.body ?? '')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line)),
    held.events,
    'with the same events as the HTTP/2 one',
  );

  // A restarted apiserver serves before its RBAC has read every RoleBinding: until then the tenant's rights in its
  // namespace are denied upstream (403), on a real cluster as here. Wait for them, as a client would retry (on the
  // loaded 2-core machine this has taken more than 15 s).
  await eventually(
    "the tenant's rights after the restart",
    async () => (await h2Request(tenant, 'GET', '/api/v1/namespaces/compaction/configmaps?limit=1')).status === 200,
    { withinMs: 60_000, everyMs: 200 },
  );
  // Resumed from a resourceVersion before the relist: an ERROR event with 410 Expired, as the apiserver answers.
  const resumed = openWatch(tenant, `/api/v1/namespaces/compaction/configmaps?watch=1&resourceVersion=${old}`);
  t.equal(await resumed.status, 200, 'the resumed watch is answered 200, then the error');
  await waitFor('the resumed watch to end', () => resumed.ended, 15_000).catch(() => {});
  const upstream = upstreamSession();
  const asApiserver = openWatch(upstream, `/api/v1/namespaces/${s.upstreamNamespace}/configmaps?watch=1&resourceVersion=${old}`);
  t.equal(await asApiserver.status, 200, 'the apiserver too answers 200, then the error');
  await waitFor("the apiserver's answer to end", () => asApiserver.ended, 15_000).catch(() => {});
  const shape = (events: { type: string; object: any }[]) =>
    events.map((e) => ({
      type: e.type,
      kind: e.object.kind,
      apiVersion: e.object.apiVersion,
      status: e.object.status,
      reason: e.object.reason,
      code: e.object.code,
    }));
  t.same(
    shape(asApiserver.events),
    [{ type: 'ERROR', kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Expired', code: 410 }],
    'the apiserver answers an old resourceVersion with 410 Expired',
  );
  t.same(shape(resumed.events), shape(asApiserver.events), 'tenantgate answers it as the apiserver does');
  t.match(resumed.events[0]?.object.message, /too old resource version/, 'saying so');
  t.ok(resumed.ended, 'and ends the watch');

  // A new watch sees the state as it is, then what changes.
  const fresh = openWatch(tenant, '/api/v1/namespaces/compaction/configmaps?watch=1');
  t.equal(await fresh.status, 200, 'a new watch is served');
  await fresh.until('the initial events', (events) => events.length >= 1);
  await sleep(300);
  t.same(
    fresh.events.map((e) => [e.type, e.object.metadata.name, Number(e.object.metadata.resourceVersion), e.object.data]),
    [['ADDED', 'kept', beforeRestart, { step: '3' }]],
    "a new watch starts from the state now, alpha's object only",
  );
  const after = await s.writer.update('kept', { step: '4' });
  await fresh.until('the change after the relist', (events) => events.some((e) => Number(e.object.metadata.resourceVersion) === after));
  t.same([fresh.events.at(-1)?.type, fresh.events.at(-1)?.object.data], ['MODIFIED', { step: '4' }], 'then the change after the relist');
  const list = await h2Request(tenant, 'GET', `/api/v1/namespaces/compaction/configmaps?resourceVersion=${after}&resourceVersionMatch=NotOlderThan`);
  t.same(
    list.json().items.map((i: any) => [i.metadata.name, Number(i.metadata.resourceVersion), i.data]),
    [['kept', after, { step: '4' }]],
    'a cached list after the relist holds the state',
  );
  fresh.close();

  await s.truth.reached(after);
  await viaCache.reached(after);
  endsLikeTheTruth(t, 'a client that resumes and relists', viaCache, s.truth.events, s.tenantName, s.writer.written);
  t.ok(viaCache.count('expired') >= 1, 'that client was told 410 and relisted');
});

t.test('tenantgate restarted: a client resuming from its last resourceVersion gets the changes after it or a 410, never a gap', async (t) => {
  const s = await scene(t, 'gateway-restart');
  const viaCache = await s.viaCache();
  await s.writer.create('one', { step: '1' });
  await s.mirror.create('one', { owner: 'bravo' });
  await s.writer.create('two', { step: '1' });
  const before = await s.writer.update('one', { step: '2' });
  await viaCache.reached(before);

  const port = new URL(stack.gatewayUrl).port;
  await stopChild(gateway.child);
  // Changed while no tenantgate runs: straight at the apiserver.
  const meanwhile = new Writer(upstreamSession, s.upstreamNamespace);
  t.teardown(() => meanwhile.close());
  await meanwhile.update('one', { step: '3' });
  await meanwhile.update('two', { step: '2' });
  const during = await meanwhile.create('three', { step: '1' });
  for (const [resourceVersion, data] of meanwhile.written) s.writer.written.set(resourceVersion, data);

  const restarted = await spawnGateway(stack.files, ['--confine-upstream-discovery', '--listen', `127.0.0.1:${port}`, ...BOOKMARKS_EVERY_SECOND]);
  gateway = { child: restarted.child, metricsUrl: restarted.metricsUrl };
  gatewayLogs.push({ name: 'the restarted tenantgate', logs: restarted.logs });
  await viaCache.reached(during);
  await s.writer.remove('two');
  const last = await s.writer.update('three', { step: '2' });
  await s.truth.reached(last);
  await viaCache.reached(last);
  endsLikeTheTruth(t, 'the client across the restart', viaCache, s.truth.events, s.tenantName, s.writer.written);

  // Once the new cache serves: a resume from before the restart is answered 410 (the new history starts after it).
  t.ok(await cacheServes('gateway-restart'), 'the new tenantgate serves watches from its cache');
  const tenant = tenantSession(alpha);
  const resumed = openWatch(tenant, `/api/v1/namespaces/gateway-restart/configmaps?watch=1&resourceVersion=${before}`);
  t.equal(await resumed.status, 200, 'the resumed watch is answered 200, then the error');
  await waitFor('the resumed watch to end', () => resumed.ended, 15_000).catch(() => {});
  t.same(
    resumed.events.map((e) => [e.type, e.object.code, e.object.reason]),
    [['ERROR', 410, 'Expired']],
    "a resume from before the new cache's history: 410 Expired, nothing else",
  );
  t.ok(resumed.ended, 'and the watch ends');
  resumed.close();
});

/**
 * A second tenantgate (caching configmaps only) whose upstream connection passes a relay the test can cut or stall;
 * the stack's own keeps writing meanwhile.
 */
async function relayedGateway(t: Test, extraArgs: string[] = []) {
  const relay = await cuttableRelay(stack.rig.server.replace('https:', 'http:'));
  t.teardown(() => relay.close());
  const kubeconfig = join(stack.dir, `relayed-upstream-${relay.port}.kubeconfig`);
  writeFileSync(kubeconfig, renderKubeconfig({ ...stack.rig.admin, server: `https://127.0.0.1:${relay.port}` }, 'relayed'), { mode: 0o600 });
  const behindRelay = await spawnGateway(stack.files, [
    '--confine-upstream-discovery',
    '--upstream-kubeconfig',
    kubeconfig,
    '--watch-cache-resources',
    'configmaps',
    ...BOOKMARKS_EVERY_SECOND,
    ...extraArgs,
  ]);
  t.teardown(() => stopChild(behindRelay.child));
  gatewayLogs.push({ name: `the tenantgate behind relay ${relay.port}`, logs: behindRelay.logs });
  return { relay, behindRelay };
}

t.test('the upstream connection cut and mended: the cache resumes its watch, and its watcher gets what a direct watch gets', async (t) => {
  const s = await scene(t, 'cut');
  const { relay, behindRelay } = await relayedGateway(t);
  t.ok(await cacheServes('cut', behindRelay.url, behindRelay.metricsUrl), 'the relayed tenantgate serves watches from its cache');
  const connect = () => tenantSession(alpha, behindRelay.url);

  // Both from the same point: the state now.
  const probe = upstreamSession();
  const from = Number((await h2Request(probe, 'GET', `/api/v1/namespaces/${s.upstreamNamespace}/configmaps`)).json().metadata.resourceVersion);
  probe.close();
  const viaCache = openWatch(connect(), `/api/v1/namespaces/cut/configmaps?watch=1&resourceVersion=${from}`);
  const direct = openWatch(upstreamSession(), `/api/v1/namespaces/${s.upstreamNamespace}/configmaps?watch=1&resourceVersion=${from}`);
  t.same([await viaCache.status, await direct.status], [200, 200], 'both watches are served');
  t.equal(await cacheWatchersSettled(1, behindRelay.metricsUrl), 1, 'the tenant watch is served from the cache');
  const relistsBefore = await configmapRelists(behindRelay.metricsUrl);

  await s.writer.create('one', { step: '1' });
  await s.mirror.create('one', { owner: 'bravo' });
  const before = await s.writer.create('two', { step: '1' });
  await viaCache.until('the changes before the cut', (events) => events.some((e) => Number(e.object.metadata.resourceVersion) === before));

  relay.cut();
  const acceptedAtCut = relay.accepted;
  await s.writer.update('one', { step: '2' });
  await s.writer.remove('two');
  await s.mirror.update('one', { owner: 'bravo', step: '2' });
  await s.writer.create('three', { step: '1' });
  await sleep(1_500);
  t.notOk(viaCache.ended, 'the tenant watch stays open while the upstream is cut off');
  await relay.mend();

  await s.writer.update('three', { step: '2' });
  const last = await s.writer.update('one', { step: '3' });
  await direct.until('the last change', (events) => events.some((e) => Number(e.object.metadata.resourceVersion) === last));
  await viaCache.until('the last change', (events) => events.some((e) => Number(e.object.metadata.resourceVersion) === last), 30_000);
  t.ok(relay.accepted > acceptedAtCut, 'the cache reached the upstream again on a new connection');

  // The tenant's view of an upstream ConfigMap: its namespace without the prefix, and no tenant label (nor its trace
  // in managedFields).
  const tenantView = (object: any) => {
    const view = structuredClone(object);
    view.metadata.namespace = view.metadata.namespace.slice(alpha.id.length + 1);
    delete view.metadata.labels?.[TENANT_LABEL];
    if (view.metadata.labels !== undefined && Object.keys(view.metadata.labels).length === 0) delete view.metadata.labels;
    for (const entry of view.metadata.managedFields ?? []) delete entry.fieldsV1?.['f:metadata']?.['f:labels']?.[`f:${TENANT_LABEL}`];
    return view;
  };
  const changes = (events: { type: string; object: any }[]) => events.filter((e) => e.type !== 'BOOKMARK');
  t.same(
    changes(viaCache.events).map((e) => [e.type, Number(e.object.metadata.resourceVersion)]),
    changes(direct.events).map((e) => [e.type, Number(e.object.metadata.resourceVersion)]),
    'the same changes, in the same order, at the same resourceVersions',
  );
  t.same(
    changes(viaCache.events),
    changes(direct.events).map((e) => ({ type: e.type, object: tenantView(e.object) })),
    "the same objects, in the tenant's names",
  );
  t.notOk(viaCache.ended, 'the tenant watch continued across the cut');
  t.equal(await configmapRelists(behindRelay.metricsUrl), relistsBefore, 'the cache resumed its watch without relisting');
  viaCache.close();
  direct.close();
});

t.test('changes the cache never saw, then the apiserver restarted (its history gone): the cache relists to the state as it is', async (t) => {
  const s = await scene(t, 'unseen');
  const { relay, behindRelay } = await relayedGateway(t);
  t.ok(await cacheServes('unseen', behindRelay.url, behindRelay.metricsUrl), 'the relayed tenantgate serves watches from its cache');
  const viaCache = await s.viaCache(() => tenantSession(alpha, behindRelay.url));
  t.equal(await cacheWatchersSettled(1, behindRelay.metricsUrl), 1, 'the watch is served from the cache');
  await s.writer.create('kept', { step: '1' });
  await s.writer.create('gone', { step: '1' });
  await s.mirror.create('gone', { owner: 'bravo' });
  const before = await s.writer.create('changed', { step: '1' });
  await viaCache.reached(before);
  const relistsBefore = await configmapRelists(behindRelay.metricsUrl);

  relay.cut();
  await s.writer.remove('gone');
  await s.writer.update('changed', { step: '2' });
  await s.writer.create('added', { step: '1' });
  await s.mirror.create('added', { owner: 'bravo' });
  await stack.rig.stopApiserver('graceful');
  await stack.rig.startApiserver();
  await relay.mend();

  const relists = await relistsAfter(relistsBefore, behindRelay.metricsUrl);
  t.ok(relists > relistsBefore, `the cache could not resume past changes it never saw, and relisted (${relistsBefore} → ${relists})`);
  const last = await s.writer.update('kept', { step: '2' });
  await s.truth.reached(last);
  await viaCache.reached(last);
  endsLikeTheTruth(t, 'a client of the relayed cache', viaCache, s.truth.events, s.tenantName, s.writer.written);
  t.ok(viaCache.count('expired') >= 1, 'that client was ended, told 410, and relisted');
  const list = await h2Request(
    tenantSession(alpha, behindRelay.url),
    'GET',
    `/api/v1/namespaces/unseen/configmaps?resourceVersion=${last}&resourceVersionMatch=NotOlderThan`,
  );
  t.same(
    list.json().items.map((i: any) => [i.metadata.name, Number(i.metadata.resourceVersion), i.data]),
    [...stateAt(s.truth.events, Infinity)].sort().map(([name, resourceVersion]) => [name, resourceVersion, s.writer.written.get(resourceVersion)]),
    "the cached list holds the state as it is: the deletion, update and creation it never saw, alpha's objects only",
  );
});

t.test("a client moving to another replica resumes from its last resourceVersion there: that replica's own cache continues it", async (t) => {
  const s = await scene(t, 'replicas');
  // The relay stays whole here: the second tenantgate is just another replica.
  const { behindRelay: other } = await relayedGateway(t);
  t.ok(await cacheServes('replicas', other.url, other.metricsUrl), 'the other replica serves watches from its cache');
  const onFirst = await s.viaCache();
  await s.writer.create('one', { step: '1' });
  await s.mirror.create('one', { owner: 'bravo' });
  await s.writer.create('two', { step: '1' });
  const left = await s.writer.update('one', { step: '2' });
  await onFirst.reached(left);
  await onFirst.stop();
  // Changed while the client is between replicas.
  await s.writer.remove('two');
  await s.writer.create('three', { step: '1' });
  const resumed = openWatch(tenantSession(alpha, other.url), `/api/v1/namespaces/replicas/configmaps?watch=1&resourceVersion=${onFirst.resourceVersion}`);
  t.equal(await resumed.status, 200, 'the resumed watch is served');
  t.equal(await cacheWatchersSettled(1, other.metricsUrl), 1, "from the other replica's cache");
  const last = await s.writer.update('one', { step: '3' });
  await resumed.until('the last change', (events) => events.some((e) => Number(e.object.metadata.resourceVersion) === last));
  await s.truth.reached(last);
  t.same(
    resumed.events.map((e) => [e.type, e.object.metadata.name, Number(e.object.metadata.resourceVersion)]),
    s.truth.events.filter((e) => e.resourceVersion > onFirst.resourceVersion).map((e) => [e.type, e.name, e.resourceVersion]),
    'every change after the last one it saw, in order, none twice',
  );
  resumed.close();
});

// A watch-list with resourceVersion unset (client-go's informers since 1.35, and their relist after a 410) takes its
// initial state from one upstream list at resourceVersion L, then registers with the cache: the changes after L that
// the cache took in while the list was on its way must come from the cache's history (once 22 of 25 rounds missed 1
// to 5 of them).
t.test('a watch-list (resourceVersion unset, as informers relist) while the namespace changes: its initial state, then every change after it', async (t) => {
  const s = await scene(t, 'watch-list');
  // Larger objects make the upstream list take a moment, as a real namespace's does.
  const filler = 'x'.repeat(150_000);
  for (let i = 0; i < 20; i++) await s.writer.create(`filler${i}`, { filler });
  await s.writer.create('ticker', { n: '0' });
  let ticking = true;
  let ticks = 0;
  const ticker = (async () => {
    while (ticking) await s.writer.update('ticker', { n: String(++ticks) });
  })();
  t.teardown(async () => {
    ticking = false;
    await ticker;
  });
  const session = tenantSession(alpha);
  const gaps: string[] = [];
  for (let round = 0; round < 15; round++) {
    const watch = openWatch(
      session,
      '/api/v1/namespaces/watch-list/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true',
    );
    t.equal(await watch.status, 200, `round ${round}: served`);
    await watch.until("the initial events' end, then five changes", (events) => {
      const end = events.findIndex((e) => e.type === 'BOOKMARK');
      return end !== -1 && events.slice(end + 1).filter((e) => e.type !== 'BOOKMARK').length >= 5;
    });
    watch.close();
    const end = watch.events.findIndex((e) => e.type === 'BOOKMARK');
    t.equal(
      watch.events[end]!.object.metadata.annotations?.['k8s.io/initial-events-end'],
      'true',
      `round ${round}: the initial events end with the annotated bookmark`,
    );
    const changes = watch.events.slice(end + 1).filter((e) => e.type !== 'BOOKMARK');
    const log: ReflectorEntry[] = [
      { kind: 'listed', resourceVersion: Number(watch.events[end]!.object.metadata.resourceVersion), items: watch.events.slice(0, end).map((e) => e.object) },
      ...changes.map((e) => ({
        kind: 'event' as const,
        type: e.type as 'MODIFIED',
        resourceVersion: Number(e.object.metadata.resourceVersion),
        object: e.object,
      })),
    ];
    await s.truth.reached(Number(changes.at(-1)!.object.metadata.resourceVersion));
    gaps.push(...departures(log, s.truth.events, s.tenantName, s.writer.written).map((problem) => `round ${round}: ${problem}`));
  }
  t.same(gaps, [], 'each round: the state at its bookmark, then every change after it, none missed');
  t.comment(`${ticks} changes written during the rounds; ${gaps.length} departures${gaps.length === 0 ? '' : `, the first: ${gaps.slice(0, 3).join('; ')}`}`);
});

// A watch that starts ahead of the cache (its client listed consistently, or wrote, then watches a resource whose cache
// has seen nothing newer) must never be bookmarked below its own resourceVersion: its client would go back, and resume
// from there (sent again what it had, or told 410). The apiserver never bookmarks below a watch's start either.
t.test('a watch from a resourceVersion the cache has not reached: no bookmark behind it', async (t) => {
  const s = await scene(t, 'ahead');
  await s.writer.create('one', { step: '1' });
  // The newest resourceVersion is now a Secret's: ahead of everything the configmaps' cache has seen.
  const session = tenantSession(alpha);
  const secret = await h2Request(session, 'POST', '/api/v1/namespaces/ahead/secrets', {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ metadata: { name: 'newest' } }),
  });
  t.equal(secret.status, 201, 'a Secret written');
  const from = Number(secret.json().metadata.resourceVersion);
  const watchersBefore = await cacheWatchers(alpha);
  const watch = openWatch(session, `/api/v1/namespaces/ahead/configmaps?watch=1&allowWatchBookmarks=true&resourceVersion=${from}`);
  t.equal(await watch.status, 200, 'the watch from its resourceVersion is served');
  t.equal(await cacheWatchers(alpha), watchersBefore + 1, 'from the cache');
  await watch.until('two bookmarks', (events) => events.filter((e) => e.type === 'BOOKMARK').length >= 2, 10_000);
  const bookmarks = watch.events.filter((e) => e.type === 'BOOKMARK').map((e) => Number(e.object.metadata.resourceVersion));
  t.ok(
    bookmarks.every((resourceVersion) => resourceVersion >= from),
    `no bookmark before ${from}, where the watch started (bookmarks at ${bookmarks.join(', ')})`,
  );
  const next = await s.writer.update('one', { step: '2' });
  await watch.until('the next change', (events) => events.some((e) => Number(e.object.metadata.resourceVersion) === next));
  t.same(
    watch.events.filter((e) => e.type !== 'BOOKMARK').map((e) => [e.type, e.object.metadata.name, Number(e.object.metadata.resourceVersion)]),
    [['MODIFIED', 'one', next]],
    'then the change after it, alone',
  );
  watch.close();
});

// With the upstream connection open but silent (a host gone without a reset, a NAT that dropped the flow), nothing
// tells the cache: it must notice by itself. Allowed 2 s of silence here (75 s by default, the apiserver bookmarking
// every minute), its connection then has 15 s to answer a ping, or is dropped and the watch resumes on a new one.
t.test('a silently dead upstream connection: the cache notices, resumes on a new one, and its watcher gets the change', async (t) => {
  const s = await scene(t, 'stall');
  const { relay, behindRelay } = await relayedGateway(t, ['--watch-cache-upstream-idle', '2s']);
  t.ok(await cacheServes('stall', behindRelay.url, behindRelay.metricsUrl), 'the relayed tenantgate serves watches from its cache');
  const viaCache = openWatch(tenantSession(alpha, behindRelay.url), '/api/v1/namespaces/stall/configmaps?watch=1&resourceVersion=0');
  t.equal(await viaCache.status, 200, 'the watch is served');
  const before = await s.writer.create('one', { step: '1' });
  await viaCache.until('the change before the stall', (events) => events.some((e) => Number(e.object.metadata.resourceVersion) === before));
  relay.stall();
  const acceptedAtStall = relay.accepted;
  const during = await s.writer.create('two', { step: '1' });
  await waitFor(
    "the change made while the connection hung, or the watch's end",
    () => viaCache.ended || viaCache.events.some((e) => Number(e.object.metadata.resourceVersion) === during),
    45_000,
  );
  t.ok(relay.accepted > acceptedAtStall, 'the cache reached the upstream on a new connection');
  t.notOk(viaCache.ended, 'the tenant watch continued');
  t.same(
    viaCache.events.filter((e) => e.type !== 'BOOKMARK').map((e) => [e.type, e.object.metadata.name, Number(e.object.metadata.resourceVersion)]),
    [
      ['ADDED', 'one', before],
      ['ADDED', 'two', during],
    ],
    'with the change made while the connection hung, after the one before',
  );
  viaCache.close();
});

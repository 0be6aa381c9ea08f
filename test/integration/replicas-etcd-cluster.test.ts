// Issue 17, replicas on a real etcd cluster: two tenantgate replicas keep tenants in a 3-member etcd cluster (the
// apiserver's etcd is another) behind a loopback load balancer that stands for a Service. Under tenant traffic and
// tenant churn: the etcd leader is killed, then a replica, then both are restarted one at a time with SIGTERM.
// No tenant is lost, no answer is wrong, writes resume after the election, and the rolling restart fails no request.
// Its own rig (not a shared one): it kills and restarts tenantgate replicas and an etcd cluster's leader under load.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { writeGatewayFiles } from '../../lib/dev.ts';
import { startEtcdCluster, startRig } from '../../lib/rig/harness.ts';
import { fetchKubeconfig } from '../../lib/tenants/tenant-command.ts';
import { TENANT_API_VERSION, TENANTS_PATH, type Tenant } from '../../lib/tenants/tenant.ts';
import { upstreamJson } from '../../lib/upstream/client.ts';
import type { ClusterCredentials } from '../../lib/upstream/kubeconfig.ts';
import { credentialsOf, h1Request } from '../helpers/http.ts';
import { startLoadBalancer } from '../helpers/load-balancer.ts';
import { replicaSet, within, type Replica } from '../helpers/replicas.ts';
import { RetryingClient, type RetryCounts } from '../helpers/retrying-client.ts';
import { withClient } from '../helpers/tenants.ts';

const SHUTDOWN_ARGS = ['--shutdown-delay', '1s', '--shutdown-drain', '5s'];
const CM_PATH = '/api/v1/namespaces/default/configmaps';
const TRAFFIC_TENANTS = ['etc001', 'etc002', 'etc003'];
/** A phase's traffic before and after its event. */
const PHASE_MS = 3_000;

const dir = mkdtempSync(join(tmpdir(), 'tenantgate-etcd-cluster-'));
const rig = await startRig({ controllers: true });
mkdirSync(join(dir, 'etcd'));
const etcd = await startEtcdCluster(join(dir, 'etcd'), 3);
const files = writeGatewayFiles(join(dir, 'gateway'), rig);
// The later --etcd-endpoints wins over the rig's in serveArgs.
const replicas = replicaSet(dir, files, ['--etcd-endpoints', etcd.endpoints.join(','), '--confine-upstream-discovery', ...SHUTDOWN_ARGS]);
let a = await replicas.start('a');
let b = await replicas.start('b');
const caPem = files.ca.certPem;
const lb = await startLoadBalancer([a.port, b.port], { readiness: { caPem, intervalMs: 200 } });
t.teardown(async () => {
  await lb.close();
  await replicas.stopAll();
  await etcd.stop();
  await rig.stop();
  rmSync(dir, { recursive: true, force: true });
});

const viaLb = (credentials: ClusterCredentials) => ({ ...credentials, server: lb.url });
const admin = new RetryingClient(viaLb(credentialsOf(a.admin)));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const tenantBody = (id: string) => ({ apiVersion: TENANT_API_VERSION, kind: 'Tenant', metadata: { name: id }, spec: {} });

/** Answers that were wrong (a wrong status, another tenant's object, a write not seen): each described. */
const wrong: string[] = [];

/** Creates a tenant through the load balancer; a 409 after a retry whose first attempt had landed counts as created. */
async function createTenant(client: RetryingClient, id: string): Promise<boolean> {
  const made = await client.request('POST', TENANTS_PATH, tenantBody(id));
  if (made === null) return false;
  if (made.status === 201 || made.status === 409) return true;
  wrong.push(`create tenant ${id}: ${made.status} ${made.body.slice(0, 200)}`);
  return false;
}

async function readyTenant(id: string): Promise<Tenant> {
  let tenant: Tenant | undefined;
  await within(30_000, `tenant ${id} Ready`, async () => {
    const got = await admin.request('GET', `${TENANTS_PATH}/${id}`);
    tenant = got?.status === 200 ? (JSON.parse(got.body) as Tenant) : undefined;
    return tenant?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
  });
  return tenant!;
}

interface TenantUnderLoad {
  id: string;
  uid: string;
  credentials: ClusterCredentials;
  client: RetryingClient;
  /** The names of the configmaps whose create was answered. */
  created: Set<string>;
}

const loaded: TenantUnderLoad[] = [];
for (const id of TRAFFIC_TENANTS) {
  if (!(await createTenant(admin, id))) throw new Error(`creating ${id}`);
  const tenant = await readyTenant(id);
  const kubeconfig = join(dir, `${id}.kubeconfig`);
  writeFileSync(kubeconfig, await withClient(a.admin, (pool) => fetchKubeconfig(pool, id)), { mode: 0o600 });
  const credentials = credentialsOf(kubeconfig);
  loaded.push({ id, uid: tenant.metadata.uid, credentials, client: new RetryingClient(viaLb(credentials)), created: new Set() });
}

// ---- traffic, bounded in count and time, running across the phases

let stopAt = performance.now() + 150_000;
let tenantRequests = 0;

/**
 * A 200 answer's JSON, or null when its body ended before the JSON did: a replica killed mid-answer can end the stream
 * without an error the client sees. Counted as an answer cut mid-way (a failure every phase but the kill refuses).
 */
function answerJson<T>(tl: TenantUnderLoad, what: string, answer: { body: string }): T | null {
  try {
    return JSON.parse(answer.body) as T;
  } catch {
    tl.client.counts.failures.push(`${tl.id} ${what}: the stream was cut mid-answer (a 200 whose body of ${answer.body.length} bytes is not whole JSON)`);
    return null;
  }
}

/** Creates, gets and lists ConfigMaps as one tenant; every tenant uses the same names, so a leak shows as another owner. */
async function tenantTraffic(tl: TenantUnderLoad): Promise<void> {
  for (let n = 0; n < 5_000 && performance.now() < stopAt; n++) {
    const name = `cm-${n}`;
    const made = await tl.client.request('POST', CM_PATH, { metadata: { name }, data: { owner: tl.id } });
    tenantRequests++;
    if (made === null) continue;
    // 409: a retry after a first attempt that had landed (its connection went before the answer came).
    if (made.status !== 201 && made.status !== 409) {
      wrong.push(`${tl.id} create ${name}: ${made.status} ${made.body.slice(0, 200)}`);
      continue;
    }
    tl.created.add(name);
    const got = await tl.client.request('GET', `${CM_PATH}/${name}`);
    tenantRequests++;
    if (got !== null) {
      const object =
        got.status === 200 ? answerJson<{ metadata?: { name?: string; namespace?: string }; data?: { owner?: string } }>(tl, `get ${name}`, got) : null;
      if (got.status === 200 && object === null) continue;
      if (object?.metadata?.name !== name || object?.metadata?.namespace !== 'default' || object?.data?.owner !== tl.id)
        wrong.push(`${tl.id} get ${name}: ${got.status} ${got.body.slice(0, 200)}`);
    }
    if (n % 5 !== 4) continue;
    const listed = await tl.client.request('GET', CM_PATH);
    tenantRequests++;
    if (listed === null) continue;
    if (listed.status !== 200) {
      wrong.push(`${tl.id} list: ${listed.status} ${listed.body.slice(0, 200)}`);
      continue;
    }
    const list = answerJson<{ items: { metadata: { name: string; namespace: string }; data?: { owner?: string } }[] }>(tl, 'list', listed);
    if (list === null) continue;
    const items = list.items;
    const foreign = items.filter((item) => item.metadata.namespace !== 'default' || (item.metadata.name !== 'kube-root-ca.crt' && item.data?.owner !== tl.id));
    if (foreign.length > 0)
      wrong.push(`${tl.id} list shows objects not its own: ${JSON.stringify(foreign.map((item) => [item.metadata.name, item.data?.owner]))}`);
    const names = new Set(items.map((item) => item.metadata.name));
    const missing = [...tl.created].filter((created) => !names.has(created));
    if (missing.length > 0) wrong.push(`${tl.id} list misses created ${missing.join(',')}`);
  }
}

/** Tenants created and deleted through the Tenant API, over and over. */
let churned = 0;
async function tenantChurn(): Promise<void> {
  for (let k = 0; k < 500 && performance.now() < stopAt; k++) {
    const id = `ch${String(k).padStart(4, '0')}`;
    if (!(await createTenant(admin, id))) continue;
    const deleted = await admin.request('DELETE', `${TENANTS_PATH}/${id}`);
    // 404: a retry after a first attempt that had landed.
    if (deleted !== null && deleted.status !== 200 && deleted.status !== 202 && deleted.status !== 404)
      wrong.push(`delete tenant ${id}: ${deleted.status} ${deleted.body.slice(0, 200)}`);
    churned++;
    await sleep(300);
  }
}

const clients = () => [admin, ...loaded.map((tl) => tl.client)];
/** All clients' counts summed. */
function totals(): RetryCounts {
  const sum: RetryCounts = { answered: {}, goawayRefused: 0, connectionLost: 0, retryAfter: 0, failures: [] };
  for (const { counts } of clients()) {
    for (const [status, n] of Object.entries(counts.answered)) sum.answered[Number(status)] = (sum.answered[Number(status)] ?? 0) + n;
    sum.goawayRefused += counts.goawayRefused;
    sum.connectionLost += counts.connectionLost;
    sum.retryAfter += counts.retryAfter;
    sum.failures.push(...counts.failures);
  }
  return sum;
}
function since(before: RetryCounts): RetryCounts {
  const now = totals();
  const answered: Record<number, number> = {};
  for (const [status, n] of Object.entries(now.answered))
    if (n - (before.answered[Number(status)] ?? 0) > 0) answered[Number(status)] = n - (before.answered[Number(status)] ?? 0);
  return {
    answered,
    goawayRefused: now.goawayRefused - before.goawayRefused,
    connectionLost: now.connectionLost - before.connectionLost,
    retryAfter: now.retryAfter - before.retryAfter,
    failures: now.failures.slice(before.failures.length),
  };
}
const describe = (counts: RetryCounts) =>
  `answers ${JSON.stringify(counts.answered)}; retried: ${counts.goawayRefused} refused by GOAWAY, ${counts.connectionLost} connection lost before an answer, ${counts.retryAfter} after 503/429 Retry-After; failed: ${counts.failures.length}`;

/** Every tenant of `expected` listed by `replica` (straight, not through the load balancer) with the same uid, and served. */
async function tenantsOn(replica: Replica): Promise<Map<string, string>> {
  return withClient(replica.admin, async (pool) => {
    const listed = await upstreamJson(pool, 'GET', TENANTS_PATH);
    return new Map((listed.body.items as Tenant[]).map((x) => [x.metadata.name, x.metadata.uid]));
  });
}

const figures: string[] = [];

/** What a stopped replica logged of its drain: how long it took, and whether it reached its bound. */
function drainOf(replica: Replica): string {
  for (const line of replica.logs) {
    const entry = JSON.parse(line) as { msg?: string; ms?: number };
    if (entry.msg === 'drained' || entry.msg === 'drain bound reached: closing what is left') return `${entry.msg} ${entry.ms} ms after the signal`;
  }
  return 'no drain logged';
}
const traffic = [...loaded.map(tenantTraffic), tenantChurn()];
const wrongBefore = () => wrong.length;

t.test('the traffic runs on both replicas before anything fails', async (t) => {
  const before = totals();
  await sleep(PHASE_MS);
  const counts = since(before);
  t.same(wrong, [], 'no wrong answer');
  t.same(counts.failures, [], 'no failure');
  t.ok((lb.connectionsByBackend.get(a.port) ?? 0) > 0 && (lb.connectionsByBackend.get(b.port) ?? 0) > 0, 'connections on both replicas');
  figures.push(`steady: ${describe(counts)}`);
});

t.test('the etcd leader killed mid-traffic: a new one is elected, tenant writes resume, no tenant lost, no wrong answer', async (t) => {
  const wrongAtStart = wrongBefore();
  const tenantsBefore = await tenantsOn(a);
  const leader = await etcd.leader();
  t.ok(leader, 'the cluster has a leader');
  const before = totals();
  const killedAt = performance.now();
  await leader!.stop('crash');
  const electionMs = await within(10_000, 'a new etcd leader', async () => (await etcd.leader()) !== undefined).then(() =>
    Math.round(performance.now() - killedAt),
  );
  // The first tenant write through the Tenant API after the kill (begun at once; a 503 with Retry-After retried).
  const writer = new RetryingClient(viaLb(credentialsOf(a.admin)));
  let firstWriteMs = -1;
  for (let i = 0; i < 50 && performance.now() - killedAt < 30_000; i++) {
    const made = await writer.request('POST', TENANTS_PATH, tenantBody('elect1'));
    if (made?.status === 201 || made?.status === 409) {
      firstWriteMs = Math.round(performance.now() - killedAt);
      break;
    }
  }
  writer.close();
  t.ok(firstWriteMs >= 0, `a tenant create succeeded after the kill (${firstWriteMs} ms; ${describe(writer.counts)})`);
  t.ok(firstWriteMs <= 10_000, 'within 10 s of the kill');
  figures.push(
    `etcd leader ${leader!.name} killed: new leader elected ${electionMs} ms after the kill; first successful tenant create through the Tenant API ${firstWriteMs} ms after the kill (its client retried ${writer.counts.retryAfter} times after 503 Retry-After, ${writer.counts.connectionLost} after a lost connection)`,
  );
  await sleep(PHASE_MS);
  await readyTenant('elect1');
  const counts = since(before);
  for (const replica of [a, b]) {
    const now = await tenantsOn(replica);
    for (const [id, uid] of tenantsBefore) {
      if (id.startsWith('ch')) continue; // the churn's, created and deleted on purpose
      t.equal(now.get(id), uid, `${id} still listed by ${replica.name} with its uid`);
    }
    t.ok(now.has('elect1'), `the tenant written after the kill is listed by ${replica.name}`);
    for (const tl of loaded) {
      const listed = await h1Request({ ...tl.credentials, server: replica.url }, 'GET', CM_PATH);
      t.equal(listed.status, 200, `${tl.id} served by ${replica.name} directly`);
    }
  }
  t.same(wrong.slice(wrongAtStart), [], 'no wrong answer');
  t.same(counts.failures, [], 'no failed request');
  figures.push(`etcd leader kill phase: ${describe(counts)}`);
  await leader!.start();
  t.ok(leader!.running, `${leader!.name} restarted and rejoined`);
});

t.test('a replica killed (SIGKILL) mid-traffic: the survivor serves on; only requests on the killed one may fail', async (t) => {
  const wrongAtStart = wrongBefore();
  const before = totals();
  b.child.kill('SIGKILL');
  await b.exited;
  await sleep(PHASE_MS);
  const counts = since(before);
  t.same(wrong.slice(wrongAtStart), [], 'no wrong answer');
  // What may fail: a request whose answer had begun on the killed replica (cut mid-answer), not retried.
  t.ok(
    counts.failures.every((failure) => /cut mid-answer/.test(failure)),
    `only answers cut mid-way on the killed replica failed: ${JSON.stringify(counts.failures)}`,
  );
  t.ok(Object.keys(counts.answered).length > 0 && (counts.answered[201] ?? 0) > 0, 'writes went on');
  figures.push(`replica killed (SIGKILL): ${describe(counts)}${counts.failures.length > 0 ? ` (${counts.failures.join('; ')})` : ''}`);
  await replicas.stop(b);
  b = await replicas.start('b2');
  lb.setBackends([a.port, b.port]);
  await within(10_000, 'b2 ready behind the load balancer', async () => lb.ready.includes(b.port));
});

t.test('a rolling restart with SIGTERM, one replica at a time: no request fails beyond retriable refusals', async (t) => {
  const wrongAtStart = wrongBefore();
  const before = totals();
  const restarts: string[] = [];
  for (const name of ['a', 'b'] as const) {
    const old = name === 'a' ? a : b;
    const stoppedAt = performance.now();
    old.child.kill('SIGTERM');
    const code = await old.exited;
    const stopMs = Math.round(performance.now() - stoppedAt);
    t.equal(code, 0, `${old.name} exited 0 after SIGTERM`);
    await replicas.stop(old);
    const startedAt = performance.now();
    const fresh = await replicas.start(`${name}3`);
    const startMs = Math.round(performance.now() - startedAt);
    if (name === 'a') a = fresh;
    else b = fresh;
    lb.setBackends([a.port, b.port]);
    await within(10_000, `${fresh.name} ready behind the load balancer`, async () => lb.ready.includes(fresh.port));
    restarts.push(
      `${old.name}: SIGTERM to exit ${stopMs} ms (${drainOf(old)}), new process serving ${startMs} ms later, ready behind the load balancer ${Math.round(performance.now() - startedAt)} ms after its start`,
    );
    await sleep(1_000);
  }
  const counts = since(before);
  t.same(wrong.slice(wrongAtStart), [], 'no wrong answer');
  t.same(counts.failures, [], 'no failed request');
  for (const status of Object.keys(counts.answered).map(Number))
    t.ok(status < 300 || status === 409 || status === 404, `answer ${status} is a success (or a retried create/delete that had landed)`);
  figures.push(`rolling restart (SIGTERM, delay 1 s, drain bound 5 s): ${describe(counts)}`);
  for (const line of restarts) figures.push(`restart ${line}`);
});

t.test('after all of it: every tenant on both replicas, and the traffic was right', async (t) => {
  stopAt = 0;
  await Promise.all(traffic);
  // The churn's last tenant may be removed while this looks (a tenant never used has nothing upstream to clean up):
  // each replica's index follows the store within a watch event.
  let [onA, onB] = [await tenantsOn(a), await tenantsOn(b)];
  const sameTenants = () => JSON.stringify([...onA.keys()].sort()) === JSON.stringify([...onB.keys()].sort());
  await within(5_000, 'both replicas list the same tenants', async () => {
    [onA, onB] = [await tenantsOn(a), await tenantsOn(b)];
    return sameTenants();
  }).catch(() => {}); // the assertion below says what differs
  for (const tl of loaded) {
    t.equal(onA.get(tl.id), tl.uid, `${tl.id} on ${a.name}`);
    t.equal(onB.get(tl.id), tl.uid, `${tl.id} on ${b.name}`);
  }
  t.same([...onA.keys()].sort(), [...onB.keys()].sort(), 'the replicas list the same tenants');
  t.same(wrong, [], 'no wrong answer in the whole run');
  const all = totals();
  figures.unshift(
    `traffic: ${tenantRequests} tenant requests (ConfigMap create/get/list by ${loaded.length} tenants through the load balancer), ${churned} tenants created and deleted; all clients: ${describe(all)}`,
  );
  for (const line of figures) t.comment(line);
  for (const client of clients()) client.close();
});

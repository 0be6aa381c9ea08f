// Issue 4 end to end: two tenantgate processes sharing one etcd for tenants (not the apiserver's), driven the way an
// administrator drives them (`tenantgate tenant ...`) and used the way a tenant uses them (kubectl): replicas agree,
// credentials follow a tenant's life, etcd and a replica go away and come back, ids that would trap prefixes.
// Its own rig (not a shared one): its tenants are made through replicas and the CLI, outside the kit that checks tenant ids are unique in a run.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import t, { type Test } from 'tap';
import { writeGatewayFiles } from '../../lib/dev.ts';
import { startEtcd, startRig } from '../../lib/rig/harness.ts';
import { runCommand, type CommandResult } from '../../lib/rig/process.ts';
import { TENANTGATE_NODE_FLAGS } from '../../lib/runtime.ts';
import { DEFAULT_ETCD_PREFIX } from '../../lib/tenants/etcd-store.ts';
import { TENANT_API_VERSION, TENANTS_PATH, type Tenant } from '../../lib/tenants/tenant.ts';
import { upstreamJson } from '../../lib/upstream/client.ts';
import { loadKubeconfig } from '../../lib/upstream/kubeconfig.ts';
import { h1Request } from '../helpers/http.ts';
import { pointAt as pointAtUrl, replicaSet, within, type Replica } from '../helpers/replicas.ts';
import { productionEnv } from '../helpers/stack.ts';
import { waitUntilReady, withClient } from '../helpers/tenants.ts';

const CLI = new URL('../../dist/lib/cli.js', import.meta.url).pathname;

const dir = mkdtempSync(join(tmpdir(), 'tenantgate-replicas-'));
const rig = await startRig({ controllers: true });
// Tenants live in an etcd of their own: stopping it leaves the apiserver (and its etcd) running.
mkdirSync(join(dir, 'tenant-etcd'));
const tenantEtcd = await startEtcd(join(dir, 'tenant-etcd'));
const files = writeGatewayFiles(join(dir, 'gateway'), rig);
// The later --etcd-endpoints wins (parseArgs keeps the last value of a repeated string option).
const storeArgs = ['--etcd-endpoints', tenantEtcd.endpoint];

const replicas = replicaSet(dir, files, storeArgs);
const startReplica = (name: string) => replicas.start(name);

t.teardown(async () => {
  await replicas.stopAll();
  await tenantEtcd.stop();
  await rig.stop();
  rmSync(dir, { recursive: true, force: true });
});

let a = await startReplica('a');
const b = await startReplica('b');

// ---- helpers: the administrator's CLI, kubeconfigs moved between replicas, raw checks ----

const cliArgs = (replica: Replica, args: string[]) => [...TENANTGATE_NODE_FLAGS, CLI, 'tenant', ...args, '--kubeconfig', replica.admin];

/** `tenantgate tenant ...` as the administrator of `replica`. */
function tenantCli(replica: Replica, ...args: string[]): Promise<CommandResult> {
  return runCommand(process.execPath, cliArgs(replica, args), { env: productionEnv(), timeoutMs: 120_000 });
}

let kubeconfigs = 0;
/** `tenant create` on `replica`; returns the kubeconfig file it wrote. */
async function createTenant(t: Test, replica: Replica, id: string): Promise<string> {
  const file = join(dir, `${id}-${++kubeconfigs}.kubeconfig`);
  const created = await tenantCli(replica, 'create', id, '-o', file);
  t.equal(created.code, 0, `tenant create ${id} on ${replica.name}: ${created.stderr}`);
  return file;
}

/** The same kubeconfig (same certificate) pointing at another replica. */
const pointAt = (kubeconfig: string, replica: Replica) => pointAtUrl(kubeconfig, replica.url);

const kubectl = (kubeconfig: string, ...args: string[]) => rig.kubectl(args, { kubeconfig });
/** kubectl straight to the upstream, as the rig's admin. */
const upstream = (...args: string[]) => rig.kubectl(args);

/** The status a tenant's credentials get from a replica for a namespace list (no kubectl: for timing). */
async function statusOf(kubeconfig: string): Promise<number> {
  return (await h1Request(loadKubeconfig(kubeconfig), 'GET', '/api/v1/namespaces')).status;
}

async function tenantOn(replica: Replica, id: string): Promise<Tenant | undefined> {
  return withClient(replica.admin, async (pool) => {
    const got = await upstreamJson(pool, 'GET', `${TENANTS_PATH}/${id}`);
    return got.status === 200 ? (got.body as Tenant) : undefined;
  });
}

const readyOn = (replica: Replica, id: string) => withClient(replica.admin, (pool) => waitUntilReady(pool, id));

const namespacesOf = async (kubeconfig: string) => {
  const listed = await kubectl(kubeconfig, 'get', 'namespaces', '-o', 'name');
  return { ...listed, names: listed.stdout.split('\n').filter(Boolean) };
};

/** The tenant's namespaces upstream (by label and by prefix). */
async function upstreamNamespacesOf(id: string): Promise<string[]> {
  const listed = await upstream('get', 'namespaces', '-o', 'jsonpath={range .items[*]}{.metadata.name}{" "}{.metadata.labels.kubezoo\\.io/tenant}{"\\n"}{end}');
  if (listed.code !== 0) throw new Error(listed.stderr);
  return listed.stdout
    .split('\n')
    .filter((line) => line.startsWith(`${id}-`) || line.endsWith(` ${id}`))
    .map((line) => line.split(' ')[0]!);
}

const timings: string[] = [];

// ---- the behaviours ----

let first = ''; // kubeconfig of tenant rep001, as issued by replica A

t.test('a tenant created on one replica is known to the other within a second', async (t) => {
  const started = Date.now();
  first = await createTenant(t, a, 'rep001');
  const createdAt = Date.now();
  const onB = pointAt(first, b);
  // Known: B authenticates the certificate. Discovery needs no birth state, so this times the replicas' agreement
  // alone; the first request for objects then waits for B to write the birth state (tens of objects upstream), which
  // on a loaded machine takes seconds and is not what replicas agree on.
  const knownMs = await within(5_000, 'rep001 known to B', async () => {
    const answer = await h1Request(loadKubeconfig(onB), 'GET', '/api');
    return answer.status === 200 && answer.body.includes('"APIVersions"');
  });
  const servedMs = await within(30_000, 'rep001 served by B', async () => {
    const answer = await h1Request(loadKubeconfig(onB), 'GET', '/api/v1/namespaces');
    return answer.status === 200 && answer.body.includes('"kube-system"');
  });
  t.comment(
    `tenant create (CLI) took ${createdAt - started} ms; replica B knew the tenant ${knownMs} ms after it returned, served its namespaces ${knownMs + servedMs} ms after`,
  );
  timings.push(`replica agreement (create on A → tenant's discovery answered by B): ${knownMs} ms`);
  timings.push(`first request for objects on B (waits for the birth state): ${servedMs} ms`);
  t.ok(knownMs <= 1_000, `B knew the tenant ${knownMs} ms after create returned on A`);

  const namespaces = await namespacesOf(onB);
  t.equal(namespaces.code, 0, namespaces.stderr);
  t.same(namespaces.names, ['namespace/default', 'namespace/kube-node-lease', 'namespace/kube-public', 'namespace/kube-system'], 'kubectl through B');

  const listed = await tenantCli(b, 'list');
  t.equal(listed.code, 0, listed.stderr);
  t.match(listed.stdout, /^NAME\s+STATUS\s+AGE\n/);
  t.match(listed.stdout, /\nrep001\s+(Pending|Ready)\s+\d+s\n/);
  const got = await tenantCli(b, 'get', 'rep001', '-o', 'json');
  t.equal(got.code, 0, got.stderr);
  t.equal((JSON.parse(got.stdout) as Tenant).metadata.name, 'rep001');
});

t.test('a new kubeconfig for a tenant works, and the one issued before it keeps working', async (t) => {
  const fresh = join(dir, 'rep001-again.kubeconfig');
  const issued = await tenantCli(b, 'kubeconfig', 'rep001', '-o', fresh);
  t.equal(issued.code, 0, issued.stderr);
  t.not(readFileSync(fresh, 'utf8'), readFileSync(first, 'utf8'), 'another certificate');
  for (const [what, kubeconfig] of [
    ['new (from B)', fresh],
    ['new, on A', pointAt(fresh, a)],
    ['old (from A)', first],
    ['old, on B', pointAt(first, b)],
  ] as const) {
    const listed = await namespacesOf(kubeconfig);
    t.equal(listed.code, 0, `${what}: ${listed.stderr}`);
    t.ok(listed.names.includes('namespace/kube-system'), `${what} kubeconfig lists the tenant's namespaces`);
  }
});

t.test(
  'deleting a tenant refuses its credentials on both replicas at once, removes its namespaces upstream, and a re-created tenant does not revive them',
  async (t) => {
    const id = 'del001';
    const old = await createTenant(t, a, id);
    await readyOn(a, id);
    t.equal((await kubectl(old, 'create', 'configmap', 'left', '-n', 'default')).code, 0, 'the tenant has an object of its own');
    const oldUid = (await tenantOn(a, id))!.metadata.uid;
    const oldOnA = old;
    const oldOnB = pointAt(old, b);
    t.equal(await statusOf(oldOnA), 200);
    t.equal(await statusOf(oldOnB), 200);
    t.not((await upstreamNamespacesOf(id)).length, 0, 'namespaces upstream before the delete');

    // `delete --wait` on B: its first line comes once the delete is accepted; the wait for cleanup goes on after it.
    const deleting = spawn(process.execPath, cliArgs(b, ['delete', id, '--wait']), { env: productionEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    const accepted = new Promise<void>((resolve) =>
      deleting.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
        if (stderr.includes(`tenant/${id} deleted`)) resolve();
      }),
    );
    const exited = new Promise<number | null>((resolve) => deleting.once('exit', resolve));
    const limit = setTimeout(() => deleting.kill('SIGKILL'), 120_000);
    await Promise.race([accepted, exited]);
    const acceptedAt = Date.now();
    const [statusA, statusB] = await Promise.all([statusOf(oldOnA), statusOf(oldOnB)]);
    const checkedMs = Date.now() - acceptedAt;
    t.equal(statusB, 401, 'refused by B (where it was deleted) right after the delete returned');
    t.equal(statusA, 401, `refused by A right after the delete returned (checked within ${checkedMs} ms)`);
    const terminating = await tenantOn(a, id);
    t.ok(terminating?.metadata.deletionTimestamp, 'checked before cleanup finished: the tenant is still there, terminating');

    const code = await exited;
    clearTimeout(limit);
    t.equal(code, 0, `delete --wait: ${stderr}`);
    t.equal(await tenantOn(a, id), undefined, 'gone from A');
    t.equal(await tenantOn(b, id), undefined, 'gone from B');
    t.same(await upstreamNamespacesOf(id), [], 'no namespace of the tenant left upstream');

    const again = await createTenant(t, b, id);
    const recreated = await readyOn(b, id);
    t.not(recreated.metadata.uid, oldUid, 'a new uid');
    const fresh = await namespacesOf(again);
    t.equal(fresh.code, 0, fresh.stderr);
    t.ok(fresh.names.includes('namespace/default'), "the re-created tenant's kubeconfig works");
    const configmaps = await kubectl(again, 'get', 'configmaps', '-n', 'default', '-o', 'name');
    t.notMatch(configmaps.stdout, /left/, 'nothing of the old incarnation is back');
    for (const [where, kubeconfig] of [
      ['A', oldOnA],
      ['B', oldOnB],
    ] as const) {
      const refused = await kubectl(kubeconfig, 'get', 'namespaces');
      t.not(refused.code, 0);
      // (kubectl's words for a 401 on its discovery or on the request itself.)
      t.match(refused.stderr, /Unauthorized|the server has asked for the client to provide credentials/, `the old kubeconfig stays refused on ${where}`);
    }
  },
);

t.test("a tenant on one replica cannot see another tenant's objects made through the other replica", async (t) => {
  const [x, y] = [await createTenant(t, a, 'isox01'), await createTenant(t, b, 'isoy01')];
  await Promise.all([readyOn(a, 'isox01'), readyOn(a, 'isoy01')]);
  const xOnB = pointAt(x, b);
  const yOnA = pointAt(y, a);
  t.equal((await kubectl(yOnA, 'create', 'configmap', 'same', '-n', 'default', '--from-literal=owner=y')).code, 0, 'Y creates hers through A');
  t.equal((await kubectl(xOnB, 'create', 'configmap', 'same', '-n', 'default', '--from-literal=owner=x')).code, 0, 'X creates his through B');
  const listed = await kubectl(xOnB, 'get', 'configmaps', '-A', '-o', 'json');
  t.equal(listed.code, 0, listed.stderr);
  const items = (JSON.parse(listed.stdout) as { items: { metadata: { name: string; namespace: string }; data?: Record<string, string> }[] }).items;
  const same = items.filter((item) => item.metadata.name === 'same');
  t.same(
    same.map((item) => [item.metadata.namespace, item.data?.owner]),
    [['default', 'x']],
    'X sees only his own `same`',
  );
  t.notOk(
    items.some((item) => item.data?.owner === 'y' || item.metadata.namespace.includes('isoy01')),
    "nothing of Y's in X's list",
  );
  const hers = await kubectl(yOnA, 'get', 'configmap', 'same', '-n', 'default', '-o', 'jsonpath={.data.owner}');
  t.equal(hers.stdout, 'y', 'Y still reads her own through A');
});

t.test(
  'ids that are not 6 of [a-z0-9], and the reserved `system`, are refused by the CLI and the API; tenant `defaul` leaves the upstream alone',
  async (t) => {
    for (const [id, why] of [
      ['kube-p', /exactly 6 characters of \[a-z0-9\]/],
      ['ABCDEF', /exactly 6 characters of \[a-z0-9\]/],
      ['system', /reserved/],
    ] as const) {
      const cli = await tenantCli(a, 'create', id, '-o', join(dir, 'never.kubeconfig'));
      t.not(cli.code, 0, `CLI refuses ${id}`);
      t.match(cli.stderr, why);
      const api = await withClient(b.admin, (pool) =>
        upstreamJson(pool, 'POST', TENANTS_PATH, { apiVersion: TENANT_API_VERSION, kind: 'Tenant', metadata: { name: id }, spec: {} }),
      );
      t.equal(api.status, 422, `API refuses ${id}`);
      t.equal(api.body.reason, 'Invalid');
    }
    const etcd = new Etcd3({ hosts: tenantEtcd.endpoint });
    try {
      const keys = await etcd.getAll().prefix(DEFAULT_ETCD_PREFIX).keys();
      t.notOk(
        keys.some((key) => /kube-p|ABCDEF|system/i.test(key)),
        `nothing stored for them in etcd (${keys.length} keys)`,
      );
    } finally {
      etcd.close();
    }

    const snapshot = async () => {
      const namespace = await upstream('get', 'namespace', 'default', '-o', 'jsonpath={.metadata.uid}');
      const roles = await upstream('get', 'clusterroles', '-o', 'jsonpath={range .items[*]}{.metadata.name}={.metadata.uid}{"\\n"}{end}');
      const bindings = await upstream('get', 'clusterrolebindings', '-o', 'jsonpath={range .items[*]}{.metadata.name}={.metadata.uid}{"\\n"}{end}');
      const system = (text: string) => text.split('\n').filter((line) => line.startsWith('system:'));
      return { namespace: namespace.stdout, roles: system(roles.stdout), bindings: system(bindings.stdout) };
    };
    const before = await snapshot();
    t.ok(before.namespace !== '' && before.roles.length > 20 && before.bindings.length > 10, 'the upstream has its default namespace and system: RBAC');

    const traps = ['defaul'];
    const kubeconfigs = await Promise.all(traps.map((id, i) => createTenant(t, i === 0 ? a : b, id)));
    await Promise.all(traps.map((id) => readyOn(a, id)));
    // Objects of the tenant's own that cleanup must find by its exact prefix, made by the tenant through tenantgate.
    for (const args of [
      ['create', 'clusterrole', 'mine', '--verb=get', '--resource=pods'],
      ['create', 'namespace', 'work'],
    ]) {
      const made = await kubectl(kubeconfigs[0]!, ...args);
      t.equal(made.code, 0, `defaul: kubectl ${args.join(' ')}: ${made.stderr}`);
    }
    for (const id of traps) t.equal((await upstream('get', 'clusterrole', `${id}-mine`, '-o', 'name')).code, 0, `${id}-mine upstream`);
    const deleted = await Promise.all(traps.map((id, i) => tenantCli(i === 0 ? b : a, 'delete', id, '--wait')));
    for (const [i, result] of deleted.entries()) t.equal(result.code, 0, `delete ${traps[i]} --wait: ${result.stderr}`);
    for (const id of traps) {
      t.same(await upstreamNamespacesOf(id), [], `no namespace of ${id} left upstream`);
      t.not((await upstream('get', 'clusterrole', `${id}-mine`)).code, 0, `${id}-mine gone upstream`);
    }
    const after = await snapshot();
    t.equal(after.namespace, before.namespace, "the upstream's default namespace is the same object");
    t.same(after.roles, before.roles, 'system:* ClusterRoles untouched');
    t.same(after.bindings, before.bindings, 'system:* ClusterRoleBindings untouched');
  },
);

t.test('the tenant etcd stopped: tenants keep working on both replicas, creates fail with 503; etcd back: creates work, nothing lost', async (t) => {
  const before = (await withClient(a.admin, (pool) => upstreamJson(pool, 'GET', TENANTS_PATH))).body.items.map(
    (x: Tenant) => `${x.metadata.name}/${x.metadata.uid}`,
  );
  t.ok(before.length >= 4, `${before.length} tenants before the outage`);

  await tenantEtcd.stop('crash');
  let etcdDown = true;
  // Whatever fails below, the tests after this one get their etcd back.
  t.teardown(async () => {
    if (etcdDown) await tenantEtcd.start();
  });
  for (const [where, kubeconfig] of [
    ['A', first],
    ['B', pointAt(first, b)],
  ] as const) {
    const listed = await namespacesOf(kubeconfig);
    t.equal(listed.code, 0, `kubectl through ${where} with etcd down: ${listed.stderr}`);
    t.ok(listed.names.includes('namespace/default'), `served from ${where}'s index`);
  }
  const listed = await tenantCli(b, 'list');
  t.equal(listed.code, 0, listed.stderr);
  t.match(listed.stdout, /rep001/, 'tenant list answers from the index');

  let started = Date.now();
  const failed = await tenantCli(a, 'create', 'out001', '-o', join(dir, 'out001.kubeconfig'));
  const failedMs = Date.now() - started;
  t.not(failed.code, 0, 'create refused while etcd is down');
  t.match(failed.stderr, /creating tenant out001: 503 the tenant store is unavailable, try again/, `a clear message: ${failed.stderr.trim()}`);
  timings.push(`etcd down: tenant create (CLI, including its start) failed after ${failedMs} ms`);
  t.ok(failedMs < 10_000, `failed in ${failedMs} ms, not a hang`);

  await tenantEtcd.start();
  etcdDown = false;
  started = Date.now();
  // Through the Tenant API from this process, every 100 ms: what is timed is tenantgate's recovery, not the start of
  // a CLI process per attempt (1-2 s each on a loaded machine, which made three attempts cross the bound).
  const recovery = await withClient(a.admin, async (pool) => {
    const tries: string[] = [];
    for (;;) {
      const triedAt = Date.now();
      const answer = await upstreamJson(pool, 'POST', TENANTS_PATH, { apiVersion: TENANT_API_VERSION, kind: 'Tenant', metadata: { name: 'back01' }, spec: {} });
      tries.push(`${answer.status} after ${Date.now() - triedAt} ms`);
      if (answer.status === 201 || Date.now() - started > 15_000) return { status: answer.status, tries };
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });
  const recoveredMs = Date.now() - started;
  t.equal(recovery.status, 201, `create works again (${recovery.tries.join(', ')})`);
  timings.push(`etcd back: first successful tenant create ${recoveredMs} ms after etcd was healthy (${recovery.tries.join(', ')})`);
  t.ok(recoveredMs < 5_000, `create worked ${recoveredMs} ms after etcd was back`);
  const kubeconfig = await tenantCli(a, 'kubeconfig', 'back01', '-o', join(dir, 'back01.kubeconfig'));
  t.equal(kubeconfig.code, 0, `its kubeconfig: ${kubeconfig.stderr}`);
  const seenMs = await within(5_000, 'back01 on B', async () => (await tenantOn(b, 'back01')) !== undefined);
  t.comment(`B saw back01 ${seenMs} ms after the create returned`);
  await readyOn(b, 'back01');
  const fresh = await namespacesOf(pointAt(join(dir, 'back01.kubeconfig'), b));
  t.equal(fresh.code, 0, fresh.stderr);

  for (const replica of [a, b]) {
    const now = (await withClient(replica.admin, (pool) => upstreamJson(pool, 'GET', TENANTS_PATH))).body.items.map(
      (x: Tenant) => `${x.metadata.name}/${x.metadata.uid}`,
    );
    t.same(
      now.filter((entry: string) => !entry.startsWith('back01/')),
      before,
      `replica ${replica.name}: every tenant from before the outage, same uids, and nothing else but back01`,
    );
  }
});

t.test('a restarted replica has every tenant, and the kubeconfigs issued before work against it', async (t) => {
  const before = (await tenantOn(b, 'rep001'))!;
  const ids = (await withClient(b.admin, (pool) => upstreamJson(pool, 'GET', TENANTS_PATH))).body.items.map((x: Tenant) => x.metadata.name);
  await replicas.stop(a);
  a = await startReplica('a2');
  const listed = await withClient(a.admin, (pool) => upstreamJson(pool, 'GET', TENANTS_PATH));
  t.same(
    listed.body.items.map((x: Tenant) => x.metadata.name),
    ids,
    'the new process lists every tenant',
  );
  t.equal((await tenantOn(a, 'rep001'))?.metadata.uid, before.metadata.uid);
  for (const [what, kubeconfig] of [
    ['rep001 (issued by the old A)', first],
    ['back01 (issued by the old A)', join(dir, 'back01.kubeconfig')],
  ] as const) {
    const onNewA = pointAt(kubeconfig, a);
    const answer = await namespacesOf(onNewA);
    t.equal(answer.code, 0, `${what}: ${answer.stderr}`);
    t.ok(answer.names.includes('namespace/default'), `${what} works against the restarted replica`);
  }
});

t.test('timings', async (t) => {
  for (const line of timings) t.comment(line);
  t.pass();
});

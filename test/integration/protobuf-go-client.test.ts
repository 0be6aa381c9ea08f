// Issue 18, item 4: a client-go program configured as controllers are (ContentType protobuf, the typed clientset,
// informers) run as two tenants that use the same names: every read — get, list, pages, watch, informer — is answered
// in protobuf and holds only the tenant's own objects, under its own names.
// Its own rig (not a shared one): it restarts kube-apiserver under the informers.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import t, { type Test } from 'tap';
import { ensureGoClient } from '../../lib/rig/go-client.ts';
import { runCommand } from '../../lib/rig/process.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';
import { etcdRecord, waitFor } from '../helpers/watch.ts';
import { succeeded } from '../helpers/kit.ts';

type Json = Record<string, any>;
interface Item {
  kind: string;
  namespace: string;
  name: string;
  owner: string;
  resourceVersion: string;
}
interface Response {
  method: string;
  url: string;
  accept: string;
  status: number;
  contentType: string;
}

const PROTOBUF = /^application\/vnd\.kubernetes\.protobuf/;
const IDS = ['pbgoa1', 'pbgob2'] as const;
const PAGED = ['page-1', 'page-2', 'page-3', 'page-4', 'page-5'];

let stack: Stack;
let goClient: string;
const tenants = new Map<string, TestTenant>();

/** The tenant's objects: the same names in both tenants, each labelled and filled with its owner's id. */
function objectsOf(id: string): Json {
  const labels = { owner: id };
  const configMap = (namespace: string, name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace, labels }, data: { owner: id } });
  return {
    apiVersion: 'v1',
    kind: 'List',
    items: [
      configMap('default', 'shared'),
      configMap('app', 'shared'),
      { ...configMap('default', `only-${id}`), metadata: { name: `only-${id}`, namespace: 'default' } },
      ...PAGED.map((name) => configMap('app', name)),
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'shared', namespace: 'default', labels },
        spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
      },
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'shared', namespace: 'default', labels },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'shared' } },
          template: { metadata: { labels: { app: 'shared', owner: id } }, spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] } },
        },
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'shared', namespace: 'default', labels },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get'] }],
      },
    ],
  };
}

/** Runs the Go client as `id` to completion; its JSON lines, the last of which lists the responses it saw. */
async function go(id: string, ...args: string[]): Promise<{ lines: Json[]; responses: Response[] }> {
  const result = await runCommand(goClient, [tenants.get(id)!.kubeconfig, ...args], { timeoutMs: 60_000 });
  if (result.code !== 0) throw new Error(`go-client ${args.join(' ')}: ${result.code} ${result.stderr}`);
  const lines = result.stdout
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Json);
  return { lines: lines.slice(0, -1), responses: lines.at(-1)!.responses as Response[] };
}

/** Every item the tenant's: under its names (never an upstream `<id>-` name), owned by it or by nobody. */
function onlyOwn(t: Test, id: string, items: readonly Item[], what: string): void {
  const other = IDS.find((x) => x !== id)!;
  const foreign = items.filter(
    (item) =>
      (item.owner !== '' && item.owner !== id) || item.namespace.startsWith(`${other}-`) || item.namespace.startsWith(`${id}-`) || item.name.includes(other),
  );
  t.same(foreign, [], `${what}: only ${id}'s objects, under its names`);
}

function allProtobuf(t: Test, responses: readonly Response[], what: string): void {
  t.ok(responses.length > 0, `${what}: answers were seen`);
  for (const r of responses) t.match(r.contentType, PROTOBUF, `${what}: ${r.method} ${r.url} (Accept ${r.accept}) answered in protobuf`);
}

t.before(async () => {
  const started = Date.now();
  goClient = await ensureGoClient({ log: (line) => t.comment(line) });
  t.comment(`go-client ready in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  stack = await startStack({ rig: 'private', controllers: true });
  for (const id of IDS) {
    const tenant = await createTestTenant(stack, id);
    tenants.set(id, tenant);
    await succeeded(tenant.kubectl(['create', 'namespace', 'app']), 'namespace');
    await succeeded(tenant.kubectl(['apply', '-f', '-'], { input: JSON.stringify(objectsOf(id)) }), 'objects');
  }
});
t.teardown(async () => {
  await stack?.stop();
});

for (const id of IDS) {
  const other = IDS.find((x) => x !== id)!;

  t.test(`${id}: get of a ConfigMap and a Pod of a shared name, decoded from protobuf`, async (t) => {
    const { lines, responses } = await go(id, 'get', 'default', 'shared');
    t.match(lines[0], { configmap: { namespace: 'default', name: 'shared', owner: id } });
    t.match(lines[1], { pod: { namespace: 'default', name: 'shared', owner: id } });
    allProtobuf(t, responses, 'get');
  });

  t.test(`${id}: ${other}'s upstream namespace is refused, in protobuf`, async (t) => {
    const { lines, responses } = await go(id, 'get', `${other}-default`, 'shared');
    for (const [line, key] of [
      [lines[0], 'configmapError'],
      [lines[1], 'podError'],
    ] as const) {
      t.ok(line?.[key] !== undefined, `${key}: ${JSON.stringify(line)}`);
      t.ok([403, 404].includes(line?.[key]?.code), `refused with ${line?.[key]?.code}`);
      t.notOk(JSON.stringify(line).includes(`"owner":"${other}"`), 'nothing of its object');
    }
    // `${other}-default` is, to this tenant, a namespace of its own that does not exist: 404, the Status naming only what
    // was asked, in protobuf as the apiserver negotiates a Status.
    for (const r of responses) {
      t.ok(r.status === 403 || r.status === 404, `${r.url}: refused with ${r.status}`);
      t.match(r.contentType, PROTOBUF, `${r.url}: the refusal in protobuf`);
    }
  });

  t.test(`${id}: lists in ${other}'s upstream namespace are empty`, async (t) => {
    const { lines, responses } = await go(id, 'list', `${other}-default`);
    for (const resource of ['configmaps', 'pods', 'deployments', 'roles']) t.same(lines[0]![resource], [], `no ${resource}`);
    // A namespace the tenant lacks is answered by tenantgate: an empty list in protobuf carrying the current
    // resourceVersion, as the apiserver's own empty list.
    for (const resource of ['configmaps', 'pods', 'deployments', 'roles'])
      t.match(lines[0]![`${resource}ResourceVersion`], /^[0-9]+$/, `${resource}: a resourceVersion`);
    for (const r of responses) t.match(r.contentType, PROTOBUF, `${r.url}: in protobuf`);
  });

  t.test(`${id}: lists of ConfigMaps, Pods, Deployments and Roles hold only the tenant's objects`, async (t) => {
    const { lines, responses } = await go(id, 'list', 'default');
    const list = lines[0]!;
    t.same((list.configmaps as Item[]).map((i) => i.name).sort(), ['kube-root-ca.crt', `only-${id}`, 'shared'], 'configmaps');
    t.same(
      (list.pods as Item[]).filter((i) => i.name === 'shared').map((i) => i.owner),
      [id],
      'the pod',
    );
    t.same(
      (list.deployments as Item[]).map((i) => `${i.name} ${i.owner}`),
      [`shared ${id}`],
      'the deployment',
    );
    t.same(
      (list.roles as Item[]).map((i) => `${i.name} ${i.owner}`),
      [`shared ${id}`],
      'the role',
    );
    for (const resource of ['configmaps', 'pods', 'deployments', 'roles']) onlyOwn(t, id, list[resource], resource);
    allProtobuf(t, responses, 'lists in a namespace');

    const everywhere = await go(id, 'list', '');
    const all = everywhere.lines[0]!;
    t.same(
      (all.configmaps as Item[])
        .filter((i) => i.owner !== '')
        .map((i) => `${i.namespace}/${i.name}`)
        .sort(),
      ['app/page-1', 'app/page-2', 'app/page-3', 'app/page-4', 'app/page-5', 'app/shared', `default/only-${id}`, 'default/shared'],
    );
    for (const resource of ['configmaps', 'pods', 'deployments', 'roles']) onlyOwn(t, id, all[resource], `${resource} across namespaces`);
    // ConfigMaps across namespaces are merged from the tenant's namespaces: in protobuf too.
    allProtobuf(t, everywhere.responses, 'lists across namespaces');
  });

  t.test(`${id}: typed create, update, patch and delete of a ConfigMap of a shared name are answered in protobuf`, async (t) => {
    const { lines, responses } = await go(id, 'write', 'app', 'written', id);
    t.match(lines[0], { created: { namespace: 'app', name: 'written', owner: id } });
    t.match(lines[1], { updated: { namespace: 'app', name: 'written', owner: id }, step: 'updated' });
    t.match(lines[2], { patched: { namespace: 'app', name: 'written', owner: id }, step: 'patched' });
    t.match(lines[3], { deleted: true });
    t.match(lines[4], { deletedAgainError: { code: 404, reason: 'NotFound', message: 'configmaps "written" not found' } });
    onlyOwn(
      t,
      id,
      lines.slice(0, 3).map((line) => (line.created ?? line.updated ?? line.patched) as Item),
      'the written object',
    );
    t.same(
      responses.map((r) => `${r.method} ${r.status}`),
      ['POST 201', 'PUT 200', 'PATCH 200', 'DELETE 200', 'DELETE 404'],
      'every write reached the server once',
    );
    allProtobuf(t, responses, 'writes');
  });

  t.test(`${id}: label selectors on lists`, async (t) => {
    const own = (await go(id, 'list', 'app', `owner=${id}`)).lines[0]!;
    t.same((own.configmaps as Item[]).map((i) => i.name).sort(), [...PAGED, 'shared'].sort(), 'its own label selects its objects');
    const theirs = await go(id, 'list', 'app', `owner=${other}`);
    for (const resource of ['configmaps', 'pods', 'deployments', 'roles']) t.same(theirs.lines[0]![resource], [], `owner=${other} selects no ${resource}`);
    allProtobuf(t, theirs.responses, 'selected lists');
  });

  t.test(`${id}: pages of two follow continue tokens through the tenant's objects only`, async (t) => {
    const { lines, responses } = await go(id, 'list-paged', 'app', '2');
    const pages = lines[0]!.pages as Item[][];
    t.equal(pages.length, 4, '7 configmaps in pages of two (kube-root-ca.crt included)');
    t.ok(
      pages.every((page) => page.length <= 2),
      'no page over the limit',
    );
    t.same(
      pages
        .flat()
        .map((i) => i.name)
        .sort(),
      ['kube-root-ca.crt', ...PAGED, 'shared'].sort(),
      'every object once',
    );
    onlyOwn(t, id, pages.flat(), 'pages');
    t.equal(lines[0]!.continue.length, 3, 'three continue tokens');
    allProtobuf(t, responses, 'pages');
  });

  t.test(`${id}: a typed watch streams the tenant's events only, in protobuf`, async (t) => {
    const rv = (await go(id, 'list', 'app')).lines[0]!.configmapsResourceVersion as string;
    const child = spawn(goClient, [tenants.get(id)!.kubeconfig, 'watch', 'app', rv, '6'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const lines: Json[] = [];
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    createInterface({ input: child.stdout }).on('line', (line) => lines.push(JSON.parse(line)));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    await waitFor(
      'the watch',
      () => lines.some((l) => l.watching === true),
      20_000,
      () => stderr,
    );
    for (const tenant of IDS) {
      await succeeded(
        tenants
          .get(tenant)!
          .kubectl(['patch', 'configmap', 'shared', '-n', 'app', '--type=merge', '-p', JSON.stringify({ data: { step: `watched-by-${id}` } })]),
        'patch',
      );
    }
    await succeeded(tenants.get(id)!.kubectl(['create', 'configmap', `watched-${id}`, '-n', 'app']), 'create');
    t.equal(await exited, 0, stderr);
    const events = lines.filter((l) => l.type !== undefined);
    t.same(
      events.map((e) => `${e.type} ${e.object.namespace}/${e.object.name} ${e.object.owner}`),
      [`MODIFIED app/shared ${id}`, `ADDED app/watched-${id} `],
      'its own events, under its names, in order',
    );
    const responses = lines.at(-1)!.responses as Response[];
    const watch = responses.find((r) => r.url.includes('watch=true'));
    t.match(watch?.contentType, /^application\/vnd\.kubernetes\.protobuf;stream=watch/, 'the watch streamed protobuf');
  });

  t.test(`${id}: a watch from resourceVersion 1 replays (or refuses with 410) only the tenant's history`, async (t) => {
    const { lines, responses } = await go(id, 'watch', 'default', '1', '4');
    const events = lines.filter((l) => l.type !== undefined);
    t.ok(events.length > 0, 'events or an error');
    const errors = events.filter((e) => e.type === 'ERROR');
    for (const e of errors) t.equal(e.error.code, 410, `an expired history is 410 Gone: ${e.error.message}`);
    const objects = events.filter((e) => e.type !== 'ERROR').map((e) => e.object as Item);
    if (errors.length === 0)
      t.ok(
        objects.some((o) => o.name === `only-${id}`),
        'the replay holds its own objects',
      );
    onlyOwn(t, id, objects, 'the replay');
    t.notOk(
      objects.some((o) => o.name === `only-${other}`),
      `never only-${other}`,
    );
    allProtobuf(t, responses, 'the replay');
  });

  t.test(`${id}: an informer syncs a store of the tenant's objects`, async (t) => {
    const { lines, responses } = await go(id, 'informer', 'default');
    t.equal(lines[0]!.synced, true, 'synced');
    const store = lines[0]!.store as Item[];
    t.same(
      store
        .filter((i) => i.kind === 'v1.ConfigMap' && i.owner !== '')
        .map((i) => i.name)
        .sort(),
      [`only-${id}`, 'shared'],
    );
    t.ok(
      store.some((i) => i.kind === 'v1.Pod' && i.name === 'shared' && i.owner === id),
      'its pod',
    );
    onlyOwn(t, id, store, 'the store');
    // client-go 0.36 lists by watch (sendInitialEvents=true, WatchListClient on by default): that stream is protobuf too.
    t.ok(
      responses.some((r) => r.url.includes('sendInitialEvents=true')),
      'a streaming list',
    );
    allProtobuf(t, responses, "the informer's lists and watches");
  });

  t.test(`${id}: kubectl get -o yaml shows the tenant's view`, async (t) => {
    const got = await tenants.get(id)!.kubectl(['get', 'configmap', 'shared', '-n', 'default', '-o', 'yaml', '-v=8']);
    t.equal(got.code, 0, got.stderr.slice(-2000));
    t.match(got.stdout, new RegExp(`owner: ${id}`), 'its data');
    t.match(got.stdout, /namespace: default\n/, 'under its namespace');
    t.notOk(got.stdout.includes(`${id}-`) || got.stdout.includes(other), 'no upstream name, nothing of the other tenant');
    // kubectl get (v1.36.3) asks for JSON only (`Accept: application/json`, logged below), even with -o yaml: its YAML is
    // the JSON path's tenant view, asserted above; kubectl's reads never take the protobuf path.
    const accepts = got.stderr.split('\n').filter((line) => /accept/i.test(line));
    t.comment(`kubectl get -o yaml, its Accept lines:\n${accepts.join('\n')}`);
    t.ok(accepts.length > 0, 'kubectl logged its Accept');
    t.notOk(
      accepts.some((line) => line.includes('protobuf')),
      "kubectl did not ask for protobuf (if it starts to, the YAML above is the protobuf path's view)",
    );
  });
}

t.test('after etcd is compacted and the apiserver restarted: old resourceVersions and continue tokens are 410 Gone, and nothing else', async (t) => {
  const kept = new Map<string, { resourceVersion: string; token: string }>();
  for (const id of IDS) {
    const resourceVersion = (await go(id, 'list', 'app')).lines[0]!.configmapsResourceVersion as string;
    const token = ((await go(id, 'list-paged', 'app', '2')).lines[0]!.continue as string[])[0]!;
    kept.set(id, { resourceVersion, token });
    await succeeded(tenants.get(id)!.kubectl(['patch', 'configmap', 'shared', '-n', 'app', '--type=merge', '-p', '{"data":{"step":"after"}}']), 'patch');
  }
  const etcd = await etcdRecord(stack.rig.etcdEndpoint, '/registry/configmaps/');
  await etcd.compact();
  await etcd.close();
  // The apiserver's watch cache keeps every event since it started; a restart makes it begin after the compaction.
  await stack.rig.stopApiserver('graceful');
  await stack.rig.startApiserver();
  for (const id of IDS) {
    const other = IDS.find((x) => x !== id)!;
    const { resourceVersion, token } = kept.get(id)!;
    let watched: Json[] = [];
    for (let attempt = 0; attempt < 40; attempt++) {
      watched = (await go(id, 'watch', 'app', resourceVersion, '3')).lines;
      if (!watched.some((l) => l.watchError !== undefined && l.watchError.code !== 410)) break;
      await new Promise((resolve) => setTimeout(resolve, 250)); // the apiserver is still starting
    }
    const failure = watched.find((l) => l.watchError !== undefined)?.watchError ?? watched.find((l) => l.type === 'ERROR')?.error;
    t.equal(failure?.code, 410, `${id}: the watch from ${resourceVersion} is told its history is gone: ${JSON.stringify(watched)}`);
    t.same(
      watched.filter((l) => l.type !== undefined && l.type !== 'ERROR'),
      [],
      `${id}: and given no events`,
    );
    const paged = (await go(id, 'list-paged', 'app', '2', token)).lines[0]!;
    t.equal(paged.error?.code, 410, `${id}: the old continue token is 410 Gone: ${JSON.stringify(paged.error)}`);
    t.notOk(JSON.stringify(paged).includes(other), `${id}: nothing of ${other}'s`);
    // The Status offers a token for the remainder: the upstream's token names upstream keys, so it must not pass as is.
    const offered = String(paged.error?.continue ?? '');
    t.comment(`${id}: the 410 offers continue=${JSON.stringify(offered)} (${Buffer.from(offered, 'base64').toString('latin1')})`);
    t.notOk(
      Buffer.from(offered, 'base64').toString('latin1').includes(`${id}-`) || Buffer.from(offered, 'base64').toString('latin1').includes(other),
      `${id}: the offered token names no upstream key`,
    );
  }
});

// The watch cache as real clients use it: kubectl `get -w` and client-node informers of two tenants with the same
// names each see only their own objects and changes; however many informers run, the upstream holds one configmap
// watch (the cache's); the tenant's RBAC still decides, with the apiserver's own 403; and a burst of watch opens is
// not refused by flow control. A second tenantgate on the same rig with --watch-cache=false is "today's" path: where
// the clients' view must not change, the two are run side by side. Differences found once are asserted as they must be.
import * as k8s from '@kubernetes/client-node';
import { spawn, type ChildProcess } from 'node:child_process';
import http2, { type ClientHttp2Session } from 'node:http2';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { connectH2, credentialsOf, sumMetric } from '../helpers/http.ts';
import { parseJsonStream, withoutRepeats } from '../helpers/normalize.ts';
import { productionEnv, spawnGateway, startStack, stopChild, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';
import { settled, upstreamWatchCount, type WatchEvent } from '../helpers/watch-events.ts';
import { eventually, kubectlOk } from '../helpers/kit.ts';

let stack: Stack;
let alpha: TestTenant;
let bravo: TestTenant;
/** A replica of tenantgate on the same rig and tenants, without the watch cache. */
let uncached: { child: ChildProcess; url: string };

t.before(async () => {
  stack = await startStack({ controllers: false });
  alpha = await createTestTenant(stack, 'kilo01');
  bravo = await createTestTenant(stack, 'lima02');
  uncached = await spawnGateway(stack.files, ['--confine-upstream-discovery', '--watch-cache=false']);
  for (const tenant of [alpha, bravo]) {
    const r = await tenant.kubectl(['create', 'namespace', 'other']);
    if (r.code !== 0) throw new Error(r.stderr);
  }
});
t.teardown(async () => {
  if (uncached !== undefined) await stopChild(uncached.child);
  await stack?.stop();
});

// ---- helpers

/** `what` may be a function, to say at the timeout what was last seen. */
async function upstreamConfigmapWatches(): Promise<number> {
  const session = connectH2(credentialsOf(stack.upstreamKubeconfig));
  try {
    return await upstreamWatchCount(session, 'configmaps');
  } finally {
    session.close();
  }
}

async function gatewayMetric(name: string, labels: Record<string, string>): Promise<number> {
  return sumMetric(await (await fetch(stack.metricsUrl)).text(), name, labels);
}

/** Tenant watches the cache serves now, of both tenants. */
async function cacheWatchers(): Promise<{ alpha: number; bravo: number }> {
  const text = await (await fetch(stack.metricsUrl)).text();
  return {
    alpha: sumMetric(text, 'tenantgate_watch_cache_watchers', { tenant: alpha.id }),
    bravo: sumMetric(text, 'tenantgate_watch_cache_watchers', { tenant: bravo.id }),
  };
}

/** A long-running kubectl of `tenant` (through `kubeconfig`, by default its own), its output as it comes. */
function kubectlStreaming(tenant: TestTenant, args: string[], kubeconfig = tenant.kubeconfig) {
  const child = spawn(stack.rig.binaries.kubectl, [`--kubeconfig=${kubeconfig}`, `--cache-dir=${join(stack.dir, 'kubectl-cache')}`, ...args], {
    env: productionEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    label: `${tenant.id}: kubectl ${args.join(' ')}`,
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    until(what: string, check: (out: string) => boolean) {
      return eventually(`${what} (${this.label}; stdout ${JSON.stringify(stdout.slice(-600))}; stderr ${JSON.stringify(stderr.slice(-300))})`, () =>
        check(stdout),
      );
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Rows of `kubectl get --output-watch-events` (EVENT [NAMESPACE] NAME DATA AGE) without the header, as "EVENT [NS] NAME DATA". */
function tableRows(out: string, withNamespace: boolean): string[] {
  return out
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('EVENT'))
    .map((line) =>
      line
        .trim()
        .split(/\s+/)
        .slice(0, withNamespace ? 4 : 3)
        .join(' '),
    );
}

function eventsOf(out: string): WatchEvent[] {
  return parseJsonStream(out) as WatchEvent[];
}

const described = (e: WatchEvent) =>
  `${e.type} ${e.object.metadata.namespace}/${e.object.metadata.name} ${e.object.data?.owner ?? ''}:${Object.keys(e.object.data ?? {}).length}`;

// ---- kubectl

t.test('kubectl get -w and get -A -w, as Tables and as JSON: each tenant sees only its own configmaps and changes', async (t) => {
  // Same names in both tenants; bravo's have one key more, so a row of bravo's in alpha's table would show.
  await kubectlOk(alpha, ['-n', 'default', 'create', 'configmap', 'same', '--from-literal=owner=alpha']);
  await kubectlOk(bravo, ['-n', 'default', 'create', 'configmap', 'same', '--from-literal=owner=bravo', '--from-literal=extra=b']);
  const upstreamBefore = await settled('upstream configmap watches', upstreamConfigmapWatches);
  const cachedBefore = await settled("the cache's watchers", cacheWatchers);

  const watches: { tenant: TestTenant; scope: string[]; form: 'table' | 'json'; kubectl: ReturnType<typeof kubectlStreaming> }[] = [];
  for (const tenant of [alpha, bravo]) {
    for (const scope of [['-n', 'default'], ['-A']]) {
      watches.push({ tenant, scope, form: 'table', kubectl: kubectlStreaming(tenant, ['get', 'configmaps', ...scope, '--watch', '--output-watch-events']) });
      watches.push({
        tenant,
        scope,
        form: 'json',
        kubectl: kubectlStreaming(tenant, ['get', 'configmaps', ...scope, '--watch', '--output-watch-events', '-o', 'json']),
      });
    }
  }
  t.teardown(() => Promise.all(watches.map((w) => w.kubectl.stop())));
  for (const w of watches) await w.kubectl.until('the initial list', (out) => out.includes('same'));
  // kubectl asks Tables of the upstream (the cache serves plain JSON only), and its -o json watches of the cache.
  const routed = await eventually("kubectl's watches to open", async () => {
    const [upstream, cached] = await Promise.all([upstreamConfigmapWatches(), cacheWatchers()]);
    return upstream - upstreamBefore === 4 && cached.alpha - cachedBefore.alpha === 2 && cached.bravo - cachedBefore.bravo === 2
      ? { upstream, cached }
      : undefined;
  });
  t.pass(`4 Table watches upstream (${routed.upstream} upstream configmap watches), 2 JSON watches per tenant from the cache`);

  for (const [tenant, keys] of [
    [alpha, 2],
    [bravo, 3],
  ] as const) {
    const owner = tenant === alpha ? 'alpha' : 'bravo';
    await kubectlOk(tenant, ['-n', 'default', 'create', 'configmap', `only-${owner}`, `--from-literal=owner=${owner}`]);
    await kubectlOk(tenant, ['-n', 'other', 'create', 'configmap', 'same', `--from-literal=owner=${owner}`]);
    await kubectlOk(tenant, ['-n', 'default', 'patch', 'configmap', 'same', '--type=merge', '-p', JSON.stringify({ data: { [`k${keys}`]: 'x' } })]);
    await kubectlOk(tenant, ['-n', 'default', 'delete', 'configmap', 'same']);
  }
  for (const w of watches) {
    await w.kubectl.until('the delete', (out) => (w.form === 'json' ? eventsOf(out).some((e) => e.type === 'DELETED') : /^DELETED\s/m.test(out)));
  }
  // A moment for anything that should not come (the other tenant's events) to arrive.
  await new Promise((r) => setTimeout(r, 500));

  for (const w of watches) {
    const mine = w.tenant === alpha ? 'alpha' : 'bravo';
    const other = w.tenant === alpha ? bravo : alpha;
    const everywhere = w.scope[0] === '-A';
    const label = `${w.kubectl.label}`;
    // alpha's `same` has 1 key, then 2; bravo's 2, then 3.
    const first = mine === 'alpha' ? 1 : 2;
    if (w.form === 'table') {
      const expected = everywhere
        ? [
            `ADDED default same ${first}`,
            `ADDED default only-${mine} 1`,
            'ADDED other same 1',
            `MODIFIED default same ${first + 1}`,
            `DELETED default same ${first + 1}`,
          ]
        : [`ADDED same ${first}`, `ADDED only-${mine} 1`, `MODIFIED same ${first + 1}`, `DELETED same ${first + 1}`];
      t.same(tableRows(w.kubectl.stdout, everywhere), expected, `${label}: its own rows, in order`);
    } else {
      const expected = [
        `ADDED default/same ${mine}:${first}`,
        `ADDED default/only-${mine} ${mine}:1`,
        ...(everywhere ? [`ADDED other/same ${mine}:1`] : []),
        `MODIFIED default/same ${mine}:${first + 1}`,
        `DELETED default/same ${mine}:${first + 1}`,
      ];
      t.same(eventsOf(w.kubectl.stdout).map(described), expected, `${label}: its own events, in order`);
    }
    t.notMatch(
      w.kubectl.stdout,
      new RegExp(`only-${mine === 'alpha' ? 'bravo' : 'alpha'}|${other.id}|${w.tenant.id}`),
      `${label}: nothing of the other tenant, no upstream name`,
    );
    t.equal(w.kubectl.stderr, '', `${label}: no error`);
  }
  for (const tenant of [alpha, bravo]) {
    await kubectlOk(tenant, ['-n', 'default', 'delete', 'configmap', '--all']);
    await kubectlOk(tenant, ['-n', 'other', 'delete', 'configmap', '--all']);
  }
});

/** A pod bound to `node` (no kubelet runs: it stays Pending, and goes only when deleted with --force). */
function podOn(name: string, node: string) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'other' },
    spec: { nodeName: node, automountServiceAccountToken: false, containers: [{ name: 'c', image: 'example.invalid/none' }] },
  };
}

/** A core Event about a `kind` named "seed" in default. */
function eventAbout(name: string, kind: string) {
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name, namespace: 'default' },
    involvedObject: { kind, name: 'seed', namespace: 'default', apiVersion: 'v1' },
    reason: 'Tested',
    message: `about a ${kind}`,
    type: 'Normal',
  };
}

t.test(
  'kubectl -w -o json prints the same events through the cache as without it: namespaces, secrets, configmaps, pods and events by their selectors',
  async (t) => {
    const commands = [
      { kind: 'namespaces', args: ['get', 'namespaces'], last: (e: WatchEvent) => e.type === 'MODIFIED' && e.object.metadata.name === 'fresh' },
      { kind: 'secrets', args: ['get', 'secrets', '-n', 'default', '--field-selector', 'type=Opaque'], last: (e: WatchEvent) => e.type === 'DELETED' },
      { kind: 'configmaps', args: ['get', 'configmaps', '-A', '-l', 'team in (a,b)'], last: (e: WatchEvent) => e.type === 'DELETED' },
      { kind: 'pods', args: ['get', 'pods', '-A', '--field-selector', 'spec.nodeName=n1,status.phase=Pending'], last: (e: WatchEvent) => e.type === 'DELETED' },
      {
        kind: 'events',
        args: ['get', 'events', '-n', 'default', '--field-selector', 'involvedObject.kind=ConfigMap,involvedObject.namespace=default'],
        last: (e: WatchEvent) => e.type === 'DELETED',
      },
    ];
    const cachedBefore = await settled("the cache's watchers", cacheWatchers);
    const runs: {
      tenant: TestTenant;
      kind: string;
      last: (e: WatchEvent) => boolean;
      cached: ReturnType<typeof kubectlStreaming>;
      today: ReturnType<typeof kubectlStreaming>;
    }[] = [];
    // The seeds go whatever the outcome: a seed left behind would be in the next test's lists.
    t.teardown(async () => {
      for (const tenant of [alpha, bravo]) {
        await kubectlOk(tenant, ['-n', 'other', 'delete', 'pod', 'seed', '--grace-period=0', '--force', '--ignore-not-found']);
        await kubectlOk(tenant, ['-n', 'default', 'delete', 'event', 'seed', '--ignore-not-found']);
        await kubectlOk(tenant, ['-n', 'default', 'delete', 'secret', 'seed', '--ignore-not-found']);
        await kubectlOk(tenant, ['-n', 'other', 'delete', 'configmap', 'seed', '--ignore-not-found']);
      }
    });
    for (const tenant of [alpha, bravo]) {
      await kubectlOk(tenant, ['-n', 'default', 'create', 'secret', 'generic', 'seed', '--from-literal=owner=x']);
      await kubectlOk(tenant, ['-n', 'other', 'create', 'configmap', 'seed']);
      await kubectlOk(tenant, ['-n', 'other', 'label', 'configmap', 'seed', 'team=a']);
      await kubectlOk(
        tenant,
        ['apply', '-f', '-'],
        JSON.stringify({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'default', namespace: 'other' } }),
      );
      await kubectlOk(tenant, ['apply', '-f', '-'], JSON.stringify(podOn('seed', 'n1')));
      await kubectlOk(tenant, ['apply', '-f', '-'], JSON.stringify(eventAbout('seed', 'ConfigMap')));
      const withoutCache = uncachedKubeconfig(tenant);
      for (const { kind, args, last } of commands) {
        const watch = [...args, '--watch', '--output-watch-events', '-o', 'json'];
        runs.push({ tenant, kind, last, cached: kubectlStreaming(tenant, watch), today: kubectlStreaming(tenant, watch, withoutCache) });
      }
    }
    t.teardown(() => Promise.all(runs.flatMap((r) => [r.cached.stop(), r.today.stop()])));
    for (const run of runs) for (const k of [run.cached, run.today]) await k.until('the initial list', (out) => eventsOf(out).length > 0);
    let watchers = cachedBefore;
    await eventually(
      () => `the cache to serve every watch of each tenant (${commands.length} each; before ${JSON.stringify(cachedBefore)}, now ${JSON.stringify(watchers)})`,
      async () => {
        watchers = await cacheWatchers();
        return watchers.alpha - cachedBefore.alpha === commands.length && watchers.bravo - cachedBefore.bravo === commands.length;
      },
    );
    for (const tenant of [alpha, bravo]) {
      const owner = tenant === alpha ? 'alpha' : 'bravo';
      await kubectlOk(tenant, ['create', 'namespace', 'fresh']);
      await kubectlOk(tenant, ['label', 'namespace', 'fresh', `owner=${owner}`]);
      await kubectlOk(tenant, ['-n', 'default', 'create', 'secret', 'generic', 'opaque', `--from-literal=owner=${owner}`]);
      await kubectlOk(
        tenant,
        ['-n', 'default', 'apply', '-f', '-'],
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'basic' },
          type: 'kubernetes.io/basic-auth',
          stringData: { username: owner, password: 'p' },
        }),
      );
      await kubectlOk(tenant, ['-n', 'default', 'patch', 'secret', 'opaque', '--type=merge', '-p', '{"stringData":{"step":"1"}}']);
      await kubectlOk(tenant, ['-n', 'default', 'delete', 'secret', 'opaque', 'basic']);
      await kubectlOk(tenant, ['-n', 'fresh', 'create', 'configmap', 'moving', `--from-literal=owner=${owner}`]);
      await kubectlOk(tenant, ['-n', 'fresh', 'label', 'configmap', 'moving', 'team=c']);
      await kubectlOk(tenant, ['-n', 'fresh', 'label', 'configmap', 'moving', 'team=b', '--overwrite']);
      await kubectlOk(tenant, ['-n', 'fresh', 'delete', 'configmap', 'moving']);
      await kubectlOk(tenant, ['apply', '-f', '-'], JSON.stringify(podOn('p1', 'n1')));
      await kubectlOk(tenant, ['apply', '-f', '-'], JSON.stringify(podOn('p2', 'n2')));
      await kubectlOk(tenant, ['-n', 'other', 'label', 'pod', 'p1', `owner=${owner}`]);
      await kubectlOk(tenant, ['-n', 'other', 'delete', 'pod', 'p1', 'p2', '--grace-period=0', '--force']);
      await kubectlOk(tenant, ['apply', '-f', '-'], JSON.stringify(eventAbout('e1', 'ConfigMap')));
      await kubectlOk(tenant, ['apply', '-f', '-'], JSON.stringify(eventAbout('e2', 'Pod')));
      await kubectlOk(tenant, ['-n', 'default', 'label', 'event', 'e1', `owner=${owner}`]);
      await kubectlOk(tenant, ['-n', 'default', 'delete', 'event', 'e1', 'e2']);
    }
    for (const run of runs) for (const k of [run.cached, run.today]) await k.until('the last event', (out) => eventsOf(out).some(run.last));
    await new Promise((r) => setTimeout(r, 500));
    for (const run of runs) {
      const cached = eventsOf(run.cached.stdout);
      const today = eventsOf(run.today.stdout);
      t.same(cached, today, `${run.tenant.id} ${run.kind}: the same ${cached.length} events, objects and all`);
      const other = run.tenant === alpha ? bravo : alpha;
      t.notMatch(
        run.cached.stdout,
        new RegExp(`${other.id}|${run.tenant.id}-|"owner": "${run.tenant === alpha ? 'bravo' : 'alpha'}"`),
        `${run.tenant.id} ${run.kind}: nothing of the other tenant, no upstream name`,
      );
      t.equal(run.cached.stderr, '', 'no error');
    }
    // (A forced pod delete is one or two MODIFIED first, as the apiserver has it: both sides alike, checked above.)
    const summary = (run: (typeof runs)[number]) =>
      withoutRepeats(eventsOf(run.cached.stdout).map((e) => `${e.type} ${e.object.metadata.namespace ?? ''}/${e.object.metadata.name}`));
    const [namespaces, secrets, configmaps, pods, events] = runs.slice(0, 5).map(summary);
    t.same(
      namespaces,
      ['ADDED /default', 'ADDED /kube-node-lease', 'ADDED /kube-public', 'ADDED /kube-system', 'ADDED /other', 'ADDED /fresh', 'MODIFIED /fresh'],
      "alpha's namespaces only, in its names",
    );
    t.same(secrets, ['ADDED default/seed', 'ADDED default/opaque', 'MODIFIED default/opaque', 'DELETED default/opaque'], "alpha's Opaque secrets only");
    t.same(
      configmaps,
      ['ADDED other/seed', 'ADDED fresh/moving', 'DELETED fresh/moving'],
      "alpha's configmaps of team a or b only, entering the selection by label",
    );
    t.same(pods, ['ADDED other/seed', 'ADDED other/p1', 'MODIFIED other/p1', 'DELETED other/p1'], "alpha's pods on n1 only");
    t.same(events, ['ADDED default/seed', 'ADDED default/e1', 'MODIFIED default/e1', 'DELETED default/e1'], "alpha's events about configmaps only");
  },
);

t.test('kubectl get -w --request-timeout ends the same way through the cache as without it', async (t) => {
  await kubectlOk(alpha, ['-n', 'default', 'create', 'configmap', 'timed', '--from-literal=owner=alpha']);
  const args = ['-n', 'default', 'get', 'configmaps', '--watch', '--output-watch-events', '-o', 'json', '--request-timeout=3s'];
  const before = (await settled("the cache's watchers", cacheWatchers)).alpha;
  const running = Promise.all([stack.rig.kubectl(args, { kubeconfig: alpha.kubeconfig }), stack.rig.kubectl(args, { kubeconfig: uncachedKubeconfig(alpha) })]);
  await eventually('the cache to serve the watch', async () => (await cacheWatchers()).alpha === before + 1, { withinMs: 3_000 });
  t.pass("the cache serves kubectl's watch with its timeout");
  const [cached, today] = await running;
  t.equal(cached.code, today.code, `exit code ${cached.code}, as without the cache`);
  t.equal(cached.stderr, today.stderr, 'the same words on stderr');
  t.same(eventsOf(cached.stdout), eventsOf(today.stdout), 'the same events');
  await kubectlOk(alpha, ['-n', 'default', 'delete', 'configmap', 'timed']);
});

// ---- client-node informers

interface InformerRecord {
  tenant: TestTenant;
  path: string;
  informer: k8s.Informer<k8s.V1ConfigMap> & k8s.ObjectCache<k8s.V1ConfigMap>;
  /** "add|update|delete ns/name owner" after the informer started (all delivered by its watch). */
  seen: string[];
  /** The resourceVersion of each object in `seen`. */
  versions: string[];
  errors: unknown[];
}

function startInformer(tenant: TestTenant, namespace: string | null, options: { kubeconfig?: string; labelSelector?: string } = {}): InformerRecord {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(options.kubeconfig ?? tenant.kubeconfig);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const path = namespace === null ? '/api/v1/configmaps' : `/api/v1/namespaces/${namespace}/configmaps`;
  const labelSelector = options.labelSelector;
  const list = () => (namespace === null ? core.listConfigMapForAllNamespaces({ labelSelector }) : core.listNamespacedConfigMap({ namespace, labelSelector }));
  const informer = k8s.makeInformer<k8s.V1ConfigMap>(kc, path, list, labelSelector);
  const record: InformerRecord = { tenant, path, informer, seen: [], versions: [], errors: [] };
  for (const verb of [k8s.ADD, k8s.UPDATE, k8s.DELETE] as const) {
    informer.on(verb, (cm: k8s.V1ConfigMap) => {
      const labels = labelSelector === undefined ? '' : ` team=${cm.metadata?.labels?.team ?? ''}`;
      record.seen.push(`${verb} ${cm.metadata?.namespace}/${cm.metadata?.name} ${cm.data?.owner ?? ''}:${cm.data?.step ?? ''}${labels}`);
      record.versions.push(cm.metadata?.resourceVersion ?? '');
    });
  }
  informer.on(k8s.ERROR, (error: unknown) => record.errors.push(error));
  return record;
}

/** A copy of `tenant`'s kubeconfig that reaches the --watch-cache=false replica. */
function uncachedKubeconfig(tenant: TestTenant): string {
  const path = join(stack.dir, `uncached-${tenant.id}.kubeconfig`);
  writeFileSync(path, readFileSync(tenant.kubeconfig, 'utf8').replaceAll(stack.gatewayUrl, uncached.url), { mode: 0o600 });
  return path;
}

t.test(
  'client-node informers: each sees only its own objects and changes; the upstream holds no more configmap watches for ten of them, the cache serves them',
  async (t) => {
    const upstreamBefore = await settled('upstream configmap watches', upstreamConfigmapWatches);
    const cachedBefore = await settled("the cache's watchers", cacheWatchers);
    const deliveriesBefore = await gatewayMetric('tenantgate_watch_cache_deliveries_total', { resource: 'configmaps' });
    // Five per tenant: three of one namespace, two across namespaces.
    const informers: InformerRecord[] = [];
    for (const tenant of [alpha, bravo])
      for (const namespace of ['default', 'default', 'default', null, null]) informers.push(startInformer(tenant, namespace));
    t.teardown(() => Promise.all(informers.map((i) => i.informer.stop())));
    await Promise.all(informers.map((i) => i.informer.start()));
    const cached = await eventually('ten informer watches in the cache', async () => {
      const now = await cacheWatchers();
      return now.alpha - cachedBefore.alpha === 5 && now.bravo - cachedBefore.bravo === 5 ? now : undefined;
    });
    t.pass(`the cache serves the ten informers' watches (watchers now: ${JSON.stringify(cached)})`);
    const upstreamDuring = await upstreamConfigmapWatches();
    t.ok(upstreamBefore >= 1, `the cache's own upstream watch is there (${upstreamBefore} before)`);
    t.equal(upstreamDuring, upstreamBefore, `ten informers of two tenants add no upstream configmap watch (${upstreamDuring})`);

    // The same names in both tenants, in order: create, two updates, delete; and one in another namespace.
    for (const tenant of [alpha, bravo]) {
      const owner = tenant === alpha ? 'alpha' : 'bravo';
      await kubectlOk(tenant, ['-n', 'default', 'create', 'configmap', 'shared', `--from-literal=owner=${owner}`]);
      await kubectlOk(tenant, ['-n', 'other', 'create', 'configmap', 'shared', `--from-literal=owner=${owner}`]);
      for (const step of ['1', '2'])
        await kubectlOk(tenant, ['-n', 'default', 'patch', 'configmap', 'shared', '--type=merge', '-p', JSON.stringify({ data: { step } })]);
      await kubectlOk(tenant, ['-n', 'default', 'delete', 'configmap', 'shared']);
    }
    const expected = (owner: string, everywhere: boolean) => [
      `add default/shared ${owner}:`,
      ...(everywhere ? [`add other/shared ${owner}:`] : []),
      `update default/shared ${owner}:1`,
      `update default/shared ${owner}:2`,
      `delete default/shared ${owner}:2`,
    ];
    for (const record of informers) {
      await eventually(`${record.tenant.id} ${record.path}: its delete (seen ${JSON.stringify(record.seen)})`, () =>
        record.seen.some((s) => s.startsWith('delete ')),
      );
    }
    await new Promise((r) => setTimeout(r, 500));
    let delivered = 0;
    for (const record of informers) {
      const owner = record.tenant === alpha ? 'alpha' : 'bravo';
      const everywhere = record.path === '/api/v1/configmaps';
      t.same(record.seen, expected(owner, everywhere), `${record.tenant.id} ${record.path}: its own add, updates and delete, nothing of the other tenant's`);
      t.same(record.errors, [], `${record.tenant.id} ${record.path}: no error`);
      t.same(
        record.informer.list().map((cm) => `${cm.metadata?.namespace}/${cm.metadata?.name} ${cm.data?.owner}`),
        everywhere ? [`other/shared ${owner}`] : [],
        'its store holds its own objects',
      );
      delivered += record.seen.length;
    }
    const deliveries = (await gatewayMetric('tenantgate_watch_cache_deliveries_total', { resource: 'configmaps' })) - deliveriesBefore;
    t.ok(deliveries >= delivered, `the cache delivered the informers' ${delivered} events (its count went up by ${deliveries})`);

    // Against the same rig, tenantgate without the cache gives each watch its own upstream watch: the count would show it.
    const session = connectH2({ ...credentialsOf(alpha.kubeconfig), server: uncached.url });
    t.teardown(() => session.close());
    const direct = [0, 1].map(() => session.request({ ':path': '/api/v1/namespaces/default/configmaps?watch=1', accept: 'application/json' }));
    const statuses = await Promise.all(direct.map((stream) => new Promise((resolve) => stream.once('response', (headers) => resolve(headers[':status'])))));
    t.same(statuses, [200, 200], 'both watches through --watch-cache=false open');
    const withUncached = await eventually('two more upstream watches', async () =>
      (await upstreamConfigmapWatches()) === upstreamBefore + 2 ? true : undefined,
    );
    t.ok(withUncached, 'two watches through --watch-cache=false are two more upstream watches');
    for (const stream of direct) stream.close();
    for (const tenant of [alpha, bravo]) await kubectlOk(tenant, ['-n', 'other', 'delete', 'configmap', '--all']);
  },
);

t.test('client-node informers with a label selector: objects moving into and out of the selection, as without the cache', async (t) => {
  const informers: { cached: InformerRecord; today: InformerRecord }[] = [];
  for (const tenant of [alpha, bravo]) {
    informers.push({
      cached: startInformer(tenant, 'default', { labelSelector: 'team=a' }),
      today: startInformer(tenant, 'default', { labelSelector: 'team=a', kubeconfig: uncachedKubeconfig(tenant) }),
    });
  }
  const all = informers.flatMap((i) => [i.cached, i.today]);
  t.teardown(() => Promise.all(all.map((i) => i.informer.stop())));
  await Promise.all(all.map((i) => i.informer.start()));
  for (const tenant of [alpha, bravo]) {
    const owner = tenant === alpha ? 'alpha' : 'bravo';
    const label = (team: string) => kubectlOk(tenant, ['-n', 'default', 'label', 'configmap', 'picked', `team=${team}`, '--overwrite']);
    const step = (n: string) =>
      kubectlOk(tenant, ['-n', 'default', 'patch', 'configmap', 'picked', '--type=merge', '-p', JSON.stringify({ data: { step: n } })]);
    await kubectlOk(tenant, ['-n', 'default', 'create', 'configmap', 'picked', `--from-literal=owner=${owner}`]);
    await label('a');
    await step('1');
    await label('b');
    await step('2');
    await label('a');
    await kubectlOk(tenant, ['-n', 'default', 'delete', 'configmap', 'picked']);
  }
  for (const record of all) {
    await eventually(
      `${record.tenant.id}: the last delete (seen ${JSON.stringify(record.seen)})`,
      () => record.seen.filter((s) => s.startsWith('delete ')).length === 2,
    );
  }
  await new Promise((r) => setTimeout(r, 500));
  for (const { cached, today } of informers) {
    const owner = cached.tenant === alpha ? 'alpha' : 'bravo';
    t.same(
      cached.seen.filter((s) => !s.startsWith('delete ')),
      [`add default/picked ${owner}: team=a`, `update default/picked ${owner}:1 team=a`, `add default/picked ${owner}:2 team=a`],
      `${cached.tenant.id}: added when labelled in, updated, added again; nothing of the other tenant`,
    );
    t.same(
      today.seen.filter((s) => !s.startsWith('delete ')),
      cached.seen.filter((s) => !s.startsWith('delete ')),
      `${cached.tenant.id}: the same adds and updates as without the cache`,
    );
    t.same(cached.errors, [], 'no error');
    // Leaving the selection: the apiserver's DELETED carries the object as it was before the change (still selected).
    t.same(
      today.seen.filter((s) => s.startsWith('delete ')),
      [`delete default/picked ${owner}:1 team=a`, `delete default/picked ${owner}:2 team=a`],
      `${cached.tenant.id}: without the cache, deletes carry the object as last selected`,
    );
    t.same(today.versions.length, today.seen.length);
    const leaving = today.seen.indexOf(`delete default/picked ${owner}:1 team=a`);
    t.ok(Number(today.versions[leaving]) > Number(today.versions[leaving - 1]), 'at the resourceVersion of the change that made it leave');
    // The DELETED of an object leaving a selection carries the object before the change, at the change's resourceVersion.
    t.same(cached.seen, today.seen, `${cached.tenant.id}: the cache's events carry the same objects`);
    t.same(cached.versions, today.versions, `${cached.tenant.id}: at the same resourceVersions`);
  }
});

// ---- RBAC

/** An HTTP/2 session to `server` that authenticates with a bearer token only (no client certificate). */
function tokenSession(server: string): ClientHttp2Session {
  const session = http2.connect(server, { ca: credentialsOf(alpha.kubeconfig).caPem });
  session.on('error', () => {});
  return session;
}

/** A GET with `token`: a refusal's status and Status body; a watch that opens is closed at once (status only). */
function getWithToken(session: ClientHttp2Session, path: string, token: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':path': path, accept: 'application/json', authorization: `Bearer ${token}` });
    const chunks: Buffer[] = [];
    let status = 0;
    stream.on('response', (headers) => {
      status = Number(headers[':status']);
      if (status === 200 && path.includes('watch=')) {
        stream.close();
        resolve({ status, body: null });
      }
    });
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => {
      const text = Buffer.concat(chunks).toString();
      resolve({ status, body: text === '' ? null : JSON.parse(text) });
    });
    stream.on('error', reject);
  });
}

const forbiddenMessage = (verb: string, where: string) =>
  `configmaps is forbidden: User "system:serviceaccount:default:reader" cannot ${verb} resource "configmaps" in API group "" ${where}`;

t.test(
  "RBAC: a service account with only get is refused cached watches and lists with the apiserver's 403; a grant lets it in within seconds, a revocation shuts it out again",
  async (t) => {
    const tokens = new Map<TestTenant, string>();
    for (const tenant of [alpha, bravo]) {
      await kubectlOk(tenant, ['-n', 'default', 'create', 'configmap', 'visible', `--from-literal=owner=${tenant === alpha ? 'alpha' : 'bravo'}`]);
      await kubectlOk(tenant, ['-n', 'default', 'create', 'serviceaccount', 'reader']);
      await kubectlOk(tenant, ['-n', 'default', 'create', 'role', 'cm-get', '--verb=get', '--resource=configmaps']);
      await kubectlOk(tenant, ['-n', 'default', 'create', 'rolebinding', 'reader-get', '--role=cm-get', '--serviceaccount=default:reader']);
      await kubectlOk(tenant, ['-n', 'default', 'create', 'role', 'cm-watch', '--verb=list,watch', '--resource=configmaps']);
      tokens.set(tenant, (await kubectlOk(tenant, ['-n', 'default', 'create', 'token', 'reader'])).trim());
    }
    // bravo's reader, of the same name, may watch and list from the start.
    await kubectlOk(bravo, ['-n', 'default', 'create', 'rolebinding', 'reader-watch', '--role=cm-watch', '--serviceaccount=default:reader']);
    const cachedSession = tokenSession(stack.gatewayUrl);
    const uncachedSession = tokenSession(uncached.url);
    t.teardown(() => {
      cachedSession.close();
      uncachedSession.close();
    });
    const alphaToken = tokens.get(alpha)!;
    const bravoToken = tokens.get(bravo)!;
    await eventually(
      "bravo's grant upstream",
      async () => (await getWithToken(cachedSession, '/api/v1/namespaces/default/configmaps?watch=1', bravoToken)).status === 200,
    );

    const got = await getWithToken(cachedSession, '/api/v1/namespaces/default/configmaps/visible', alphaToken);
    t.equal(got.status, 200, "alpha's reader gets a configmap: the token works through tenantgate");
    t.equal(got.body?.data?.owner, 'alpha');
    // A metadata.name field selector makes a list or watch a read of that object: its access review and its 403 name it.
    const refusals: { what: string; path: string; message: string }[] = [
      {
        what: 'a watch of its namespace (served from the cache)',
        path: '/api/v1/namespaces/default/configmaps?watch=1',
        message: forbiddenMessage('watch', 'in the namespace "default"'),
      },
      {
        what: 'a resumed watch (from the cache)',
        path: '/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=1&allowWatchBookmarks=true',
        message: forbiddenMessage('watch', 'in the namespace "default"'),
      },
      {
        what: 'a cached list (resourceVersion=0)',
        path: '/api/v1/namespaces/default/configmaps?resourceVersion=0',
        message: forbiddenMessage('list', 'in the namespace "default"'),
      },
      {
        what: 'a watch of one object by name',
        path: '/api/v1/namespaces/default/configmaps?watch=1&fieldSelector=metadata.name%3Dvisible',
        message: forbiddenMessage('watch', 'in the namespace "default"').replace('configmaps is', 'configmaps "visible" is'),
      },
      { what: 'a watch across namespaces', path: '/api/v1/configmaps?watch=1', message: forbiddenMessage('watch', 'at the cluster scope') },
      { what: 'a cached list across namespaces', path: '/api/v1/configmaps?resourceVersion=0', message: forbiddenMessage('list', 'at the cluster scope') },
    ];
    for (const { what, path, message } of refusals) {
      const cached = await getWithToken(cachedSession, path, alphaToken);
      const today = await getWithToken(uncachedSession, path, alphaToken);
      t.equal(cached.status, 403, `${what}: 403`);
      t.equal(today.body?.message, message, `${what}: the apiserver's message without the watch cache`);
      t.equal(cached.body?.message, message, `${what}: the apiserver's message, in the tenant's names`);
      t.same(cached.body, today.body, `${what}: the same Status as without the watch cache`);
    }
    t.equal(
      (await getWithToken(cachedSession, '/api/v1/namespaces/default/configmaps?watch=1', bravoToken)).status,
      200,
      "bravo's reader of the same name, granted in bravo, watches",
    );

    // A Role naming one object lets its holder watch and list that object by a metadata.name field selector: the
    // apiserver authorizes such a list or watch as one of the named object (kubectl get cm visible -w asks so).
    await kubectlOk(alpha, ['-n', 'default', 'create', 'role', 'cm-visible', '--verb=list,watch', '--resource=configmaps', '--resource-name=visible']);
    await kubectlOk(alpha, ['-n', 'default', 'create', 'rolebinding', 'reader-visible', '--role=cm-visible', '--serviceaccount=default:reader']);
    const byName = '/api/v1/namespaces/default/configmaps?watch=1&fieldSelector=metadata.name%3Dvisible';
    await eventually('the named grant upstream', async () => (await getWithToken(uncachedSession, byName, alphaToken)).status === 200);
    for (const [what, path] of [
      ['a watch of the named object', byName],
      ['a cached list of the named object', '/api/v1/namespaces/default/configmaps?resourceVersion=0&fieldSelector=metadata.name%3Dvisible'],
    ] as const) {
      const today = await getWithToken(uncachedSession, path, alphaToken);
      t.equal(today.status, 200, `${what}: allowed without the watch cache`);
      // Past the 1 s a refusal of the same question is remembered.
      await new Promise((r) => setTimeout(r, 1_100));
      const cached = await getWithToken(cachedSession, path, alphaToken);
      t.equal(cached.status, 200, `${what}: allowed through the watch cache too (got ${cached.status}: ${cached.body?.message ?? ''})`);
    }
    await kubectlOk(alpha, ['-n', 'default', 'delete', 'rolebinding', 'reader-visible']);

    // Refused just before the grant: the cache remembers that refusal (1 s) while the grant is made.
    t.equal((await getWithToken(cachedSession, '/api/v1/namespaces/default/configmaps?watch=1', alphaToken)).status, 403, 'still refused before the grant');
    t.equal((await getWithToken(cachedSession, '/api/v1/namespaces/default/configmaps?resourceVersion=0', alphaToken)).status, 403);
    await kubectlOk(alpha, ['-n', 'default', 'create', 'rolebinding', 'reader-watch', '--role=cm-watch', '--serviceaccount=default:reader']);
    const granted = Date.now();
    await eventually(
      'the watch to be let in',
      async () => (await getWithToken(cachedSession, '/api/v1/namespaces/default/configmaps?watch=1', alphaToken)).status === 200,
      { withinMs: 10_000 },
    );
    const watchAfter = Date.now() - granted;
    const list = await eventually(
      'the cached list to be let in',
      async () => {
        const answer = await getWithToken(cachedSession, '/api/v1/namespaces/default/configmaps?resourceVersion=0', alphaToken);
        return answer.status === 200 ? answer.body : undefined;
      },
      { withinMs: 10_000 },
    );
    const listAfter = Date.now() - granted;
    // The cache remembers a refusal for 1 s; the upstream's RBAC takes the new binding in well under a second.
    t.ok(watchAfter < 5_000, `granted watch and list: the watch is let in after ${watchAfter} ms`);
    t.ok(listAfter < 5_000, `and the cached list after ${listAfter} ms`);
    t.same(
      list.items.map((cm: any) => `${cm.metadata.namespace}/${cm.metadata.name} ${cm.data.owner}`),
      ['default/visible alpha'],
      "the cached list holds alpha's configmap only",
    );
    t.equal((await getWithToken(cachedSession, '/api/v1/configmaps?watch=1', alphaToken)).status, 403, "a namespace's Role grants no watch across namespaces");
    const watchersBefore = (await settled("the cache's watchers", cacheWatchers)).alpha;
    const held = cachedSession.request({
      ':path': '/api/v1/namespaces/default/configmaps?watch=1',
      accept: 'application/json',
      authorization: `Bearer ${alphaToken}`,
    });
    t.teardown(() => held.close());
    await eventually("the service account's watch in the cache", async () => (await cacheWatchers()).alpha === watchersBefore + 1);
    t.pass("the service account's watch is served from the cache");
    held.close();

    await kubectlOk(alpha, ['-n', 'default', 'delete', 'rolebinding', 'reader-watch']);
    const revoked = Date.now();
    await eventually(
      'the watch to be refused again',
      async () => (await getWithToken(cachedSession, '/api/v1/namespaces/default/configmaps?watch=1', alphaToken)).status === 403,
      { withinMs: 15_000 },
    );
    const refusedAfter = Date.now() - revoked;
    // An allowance is remembered for 5 s.
    t.ok(refusedAfter < 8_000, `revoked: refused again after ${refusedAfter} ms`);
    for (const tenant of [alpha, bravo]) await kubectlOk(tenant, ['-n', 'default', 'delete', 'configmap', 'visible']);
  },
);

t.test(
  'RBAC: a tenant ClusterRoleBinding lets a service account watch and list from the cache in every namespace, one made later too, and across namespaces',
  async (t) => {
    await kubectlOk(alpha, ['-n', 'default', 'create', 'serviceaccount', 'watcher']);
    await kubectlOk(alpha, ['create', 'clusterrole', 'cm-watcher', '--verb=get,list,watch', '--resource=configmaps']);
    await kubectlOk(alpha, ['create', 'clusterrolebinding', 'watcher', '--clusterrole=cm-watcher', '--serviceaccount=default:watcher']);
    for (const tenant of [alpha, bravo])
      await kubectlOk(tenant, ['-n', 'other', 'create', 'configmap', 'mine', `--from-literal=owner=${tenant === alpha ? 'alpha' : 'bravo'}`]);
    const token = (await kubectlOk(alpha, ['-n', 'default', 'create', 'token', 'watcher'])).trim();
    const cachedSession = tokenSession(stack.gatewayUrl);
    const uncachedSession = tokenSession(uncached.url);
    t.teardown(() => {
      cachedSession.close();
      uncachedSession.close();
    });
    await eventually(
      'the binding upstream',
      async () => (await getWithToken(uncachedSession, '/api/v1/namespaces/other/configmaps?watch=1', token)).status === 200,
    );
    await kubectlOk(alpha, ['create', 'namespace', 'later']);
    const paths = [
      '/api/v1/namespaces/default/configmaps?watch=1',
      '/api/v1/namespaces/other/configmaps?watch=1',
      '/api/v1/namespaces/later/configmaps?watch=1',
      '/api/v1/configmaps?watch=1',
      '/api/v1/namespaces/other/configmaps?resourceVersion=0',
      '/api/v1/configmaps?resourceVersion=0',
    ];
    for (const path of paths) {
      // The binding reaches a namespace made after it within moments (tenantgate expands it upstream).
      const today = await eventually(`${path} without the cache`, async () => {
        const answer = await getWithToken(uncachedSession, path, token);
        return answer.status === 200 ? answer : undefined;
      });
      const cached = await eventually(
        `${path} through the cache`,
        async () => {
          const answer = await getWithToken(cachedSession, path, token);
          return answer.status === 200 ? answer : undefined;
        },
        { withinMs: 5_000 },
      ).catch(() => getWithToken(cachedSession, path, token));
      t.equal(cached.status, today.status, `${path}: ${cached.status} through the cache, as without it`);
      if (today.body !== null) {
        const names = (list: any) => list.items.map((cm: any) => `${cm.metadata.namespace}/${cm.metadata.name} ${cm.data?.owner}`).sort();
        t.same(names(cached.body), names(today.body), `${path}: the same items as without the cache`);
        t.ok(
          names(cached.body).includes('other/mine alpha') && !names(cached.body).includes('other/mine bravo'),
          `${path}: alpha's own configmap, not bravo's`,
        );
      }
    }
    await kubectlOk(alpha, ['delete', 'clusterrolebinding', 'watcher']);
    const revoked = Date.now();
    for (const path of ['/api/v1/namespaces/other/configmaps?watch=1', '/api/v1/configmaps?watch=1']) {
      await eventually(`${path} refused again`, async () => (await getWithToken(cachedSession, path, token)).status === 403);
    }
    t.ok(Date.now() - revoked < 10_000, `the binding removed, both refused again after ${Date.now() - revoked} ms`);
    for (const tenant of [alpha, bravo]) await kubectlOk(tenant, ['-n', 'other', 'delete', 'configmap', 'mine']);
  },
);

// ---- flow control

const BURST = 500;

/** Opens `count` watches of `path` at once on one session; resolves with every stream's status once all answered. */
async function burstOfWatches(session: ClientHttp2Session, path: string, count: number) {
  const opened = Array.from({ length: count }, () => {
    const stream = session.request({ ':path': path, accept: 'application/json' });
    let received = '';
    stream.setEncoding('utf8');
    // Kept short: what a test asks of the stream is whether one name came, or what a refusal said.
    stream.on('data', (chunk: string) => (received = (received + chunk).slice(-4096)));
    stream.on('error', () => {});
    const status = new Promise<number>((resolve) => {
      stream.once('response', (headers) => resolve(Number(headers[':status'])));
      stream.once('close', () => resolve(0));
    });
    return { stream, status, received: () => received };
  });
  const statuses = await Promise.race([
    Promise.all(opened.map((o) => o.status)),
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error('the burst was not answered within 30 s')), 30_000)),
  ]);
  const byStatus: Record<number, number> = {};
  for (const status of statuses) byStatus[status] = (byStatus[status] ?? 0) + 1;
  return { opened, statuses, byStatus, close: () => opened.forEach((o) => o.stream.close()) };
}

t.test(
  `flow control: a burst of ${BURST} watch opens by one tenant is served by the cache without a 429; without the cache it is refused in part`,
  async (t) => {
    const credentials = credentialsOf(alpha.kubeconfig);
    const path = '/api/v1/namespaces/default/configmaps?watch=1&allowWatchBookmarks=true';
    const cachedBefore = (await settled("the cache's watchers", cacheWatchers)).alpha;
    const session = connectH2(credentials);
    t.teardown(() => session.close());
    const cached = await burstOfWatches(session, path, BURST);
    t.teardown(() => cached.close());
    t.same(cached.byStatus, { 200: BURST }, `every watch opens through the cache (${JSON.stringify(cached.byStatus)})`);
    await eventually('the burst in the cache', async () => (await cacheWatchers()).alpha - cachedBefore === BURST);
    // They are live watches, not just answered heads: each receives the next change.
    await kubectlOk(alpha, ['-n', 'default', 'create', 'configmap', 'burst', '--from-literal=owner=alpha']);
    await eventually('the change on every watch', () => cached.opened.every((o) => o.received().includes('"name":"burst"')));
    t.pass(`all ${BURST} watches received the next change`);
    cached.close();
    await eventually('the burst to leave the cache', async () => (await cacheWatchers()).alpha === cachedBefore);

    const uncachedSession = connectH2({ ...credentials, server: uncached.url });
    t.teardown(() => uncachedSession.close());
    const today = await burstOfWatches(uncachedSession, path, BURST);
    t.teardown(() => today.close());
    t.ok((today.byStatus[429] ?? 0) > 0, `without the cache the same burst gets 429s (${JSON.stringify(today.byStatus)})`);
    t.same(Object.keys(today.byStatus).sort(), ['200', '429'], 'answered or refused, nothing else');
    const refusal = today.opened[today.statuses.indexOf(429)]!;
    await eventually("a refusal's body", () => refusal.received().endsWith('}') || refusal.received().endsWith('}\n'));
    t.match(JSON.parse(refusal.received()), { kind: 'Status', reason: 'TooManyRequests', code: 429 }, 'a Status saying why');
    today.close();
    await kubectlOk(alpha, ['-n', 'default', 'delete', 'configmap', 'burst']);
  },
);

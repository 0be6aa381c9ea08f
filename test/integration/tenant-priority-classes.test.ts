// A tenant's own PriorityClasses, on the real rig: each tenant creates, reads, uses and deletes classes of its own
// beside the platform's, two tenants with the same names each their own; its pods (and its controllers' pods) take
// its class's value upstream while it reads its own names back, in JSON and protobuf; `globalDefault` is the tenant's
// own default; the platform's classes stay read-only; its Tenant's band bounds its classes' values, and the upstream
// itself refuses a pod of a class outside the band or a tenant identity's class that is not labelled as its own.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ensureHelm } from '../../lib/rig/helm.ts';
import { runCommand } from '../../lib/rig/process.ts';
import { TENANTS_PATH } from '../../lib/tenants/tenant.ts';
import { upstreamJson } from '../../lib/upstream/client.ts';
import { TENANT_CLUSTER_SCOPE_GROUP } from '../../lib/auth/impersonation.ts';
import { connectH2, credentialsOf, h2Request } from '../helpers/http.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, withClient, type TestTenant } from '../helpers/tenants.ts';
import { eventually, kubectlOk, succeeded } from '../helpers/kit.ts';

type Json = Record<string, any>;

const PLATFORM_LOW = 'pc-platform-low';
const PLATFORM_MID = 'pc-platform-mid';

let stack: Stack;
let alpha: TestTenant; // nothing set
let bravo: TestTenant; // nothing set: the same names as alpha
let charlie: TestTenant; // priorityClasses: allowed pc-platform-low, band max 500

const priorityClass = (name: string, value: number, extra: Json = {}) =>
  JSON.stringify({ apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name }, value, ...extra });
const pod = (name: string, priorityClassName?: string) =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { ...(priorityClassName && { priorityClassName }), containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
  });

const direct = (args: string[], input?: string) => succeeded(stack.kubectlDirect(args, { input }), `kubectl ${args.join(' ')} upstream`);

const names = async (tenant: TestTenant) =>
  (await kubectlOk(tenant, ['get', 'priorityclasses', '-o', 'name']))
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => line.slice(line.indexOf('/') + 1))
    .sort();
const upstreamPod = async (tenant: TestTenant, name: string, namespace = 'default') =>
  JSON.parse(await direct(['get', 'pod', name, '-n', `${tenant.id}-${namespace}`, '-o', 'json']));

t.before(async () => {
  stack = await startStack();
  await direct(
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: [
        { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: PLATFORM_LOW }, value: 50 },
        { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: PLATFORM_MID }, value: 5000 },
      ],
    }),
  );
  [alpha, bravo, charlie] = await Promise.all([createTestTenant(stack, 'pcalfa'), createTestTenant(stack, 'pcbrav'), createTestTenant(stack, 'pcchar')]);
  const patched = await withClient(stack.adminKubeconfig, (pool) =>
    upstreamJson(
      pool,
      'PATCH',
      `${TENANTS_PATH}/${charlie.id}`,
      { spec: { priorityClasses: { allowed: [PLATFORM_LOW], band: { max: 500 } } } },
      { 'content-type': 'application/merge-patch+json' },
    ),
  );
  if (patched.status !== 200) throw new Error(`patching the Tenant: ${patched.status} ${JSON.stringify(patched.body)}`);
  // The band reaches charlie's namespaces (what the upstream's policy reads).
  await eventually('the band annotation', async () => {
    const namespace = JSON.parse(await direct(['get', 'namespace', `${charlie.id}-default`, '-o', 'json']));
    return namespace.metadata.annotations?.['tenantgate.kubezoo.io/priority-band'] === '-2147483648,500' ? true : undefined;
  }).catch(async () => {
    // Its namespaces are born on its first request: make one, then wait again.
    await kubectlOk(charlie, ['get', 'namespaces']);
    await eventually('the band annotation', async () => {
      const namespace = JSON.parse(await direct(['get', 'namespace', `${charlie.id}-default`, '-o', 'json']));
      return namespace.metadata.annotations?.['tenantgate.kubezoo.io/priority-band'] === '-2147483648,500' ? true : undefined;
    });
  });
});
t.teardown(async () => {
  await stack?.kubectlDirect(['delete', 'priorityclass', PLATFORM_LOW, PLATFORM_MID, '--ignore-not-found']);
  await stack?.stop();
});

t.test("two tenants create a class of the same name: each reads its own, beside the platform's, and never the other's", async (t) => {
  await kubectlOk(alpha, ['create', '-f', '-'], priorityClass('mine', 1000, { globalDefault: true, description: 'alpha batch' }));
  await kubectlOk(bravo, ['create', '-f', '-'], priorityClass('mine', 10, { description: 'bravo batch' }));
  const alphas = JSON.parse(await kubectlOk(alpha, ['get', 'priorityclass', 'mine', '-o', 'json']));
  t.equal(alphas.metadata.name, 'mine');
  t.equal(alphas.value, 1000);
  t.equal(alphas.globalDefault, true, 'its globalDefault, as it wrote it');
  t.equal(alphas.description, 'alpha batch');
  t.notOk(alphas.metadata.labels, 'no tenant label');
  t.notOk(alphas.metadata.annotations, 'no annotation of tenantgate');
  const bravos = JSON.parse(await kubectlOk(bravo, ['get', 'priorityclass', 'mine', '-o', 'json']));
  t.equal(bravos.value, 10, "bravo's own class of the same name");
  t.notOk(bravos.globalDefault, 'not a default');

  const alphaNames = await names(alpha);
  t.ok(alphaNames.includes('mine') && alphaNames.includes(PLATFORM_LOW) && alphaNames.includes(PLATFORM_MID), `alpha's list: ${alphaNames.join(' ')}`);
  t.notOk(
    alphaNames.some((name) => name.includes(bravo.id) || name.includes(alpha.id)),
    'no upstream name in the list',
  );
  t.equal(alphaNames.filter((name) => name === 'mine').length, 1, 'one "mine": its own');
  const listed = JSON.parse(await kubectlOk(alpha, ['get', 'priorityclasses', '-o', 'json'])).items as Json[];
  t.same(
    listed.filter((item) => item.metadata.name === 'mine').map((item) => item.value),
    [1000],
  );
  const table = await kubectlOk(alpha, ['get', 'priorityclass', 'mine']);
  t.match(table, /mine\s+1000\s+true/, `the table marks its own default: ${table}`);
  const platformRow = (await kubectlOk(alpha, ['get', 'priorityclass', PLATFORM_LOW])).split('\n')[1] ?? '';
  t.match(platformRow, /false/, "and not the platform's");
  const selected = JSON.parse(await kubectlOk(alpha, ['get', '--raw', '/apis/scheduling.k8s.io/v1/priorityclasses?fieldSelector=metadata.name%3Dmine']))
    .items as Json[];
  t.same(
    selected.map((item) => [item.metadata.name, item.value]),
    [['mine', 1000]],
    'a field selector names its own',
  );

  const upstream = JSON.parse(await direct(['get', 'priorityclass', `${alpha.id}-mine`, '-o', 'json']));
  t.equal(upstream.value, 1000);
  t.notOk(upstream.globalDefault, "upstream it is nobody's global default");
  t.equal(upstream.metadata.labels['kubezoo.io/tenant'], alpha.id);

  // globalDefault on and off again by patches, as kubectl apply and kubectl patch send them.
  for (const [type, on, off] of [
    ['merge', '{"globalDefault":true}', '{"globalDefault":false}'],
    ['strategic', '{"globalDefault":true}', '{"globalDefault":null}'],
  ]) {
    await kubectlOk(bravo, ['patch', 'priorityclass', 'mine', `--type=${type}`, '-p', on!]);
    t.equal(JSON.parse(await kubectlOk(bravo, ['get', 'priorityclass', 'mine', '-o', 'json'])).globalDefault, true, `${type} patch: on`);
    await kubectlOk(bravo, ['patch', 'priorityclass', 'mine', `--type=${type}`, '-p', off!]);
    t.notOk(JSON.parse(await kubectlOk(bravo, ['get', 'priorityclass', 'mine', '-o', 'json'])).globalDefault, `${type} patch: off`);
  }
  // And by server-side apply: the whole class each time.
  await kubectlOk(bravo, ['apply', '--server-side', '-f', '-'], priorityClass('applied', 20, { globalDefault: true }));
  t.equal(JSON.parse(await kubectlOk(bravo, ['get', 'priorityclass', 'applied', '-o', 'json'])).globalDefault, true, 'server-side apply: on');
  await kubectlOk(bravo, ['apply', '--server-side', '-f', '-'], priorityClass('applied', 20));
  t.notOk(JSON.parse(await kubectlOk(bravo, ['get', 'priorityclass', 'applied', '-o', 'json'])).globalDefault, 'server-side apply: off');
  await kubectlOk(bravo, ['delete', 'priorityclass', 'applied']);
});

t.test("pods take their tenant's own class upstream and read its name back, in JSON, in tables and in protobuf", async (t) => {
  await kubectlOk(alpha, ['create', '-f', '-'], pod('named', 'mine'));
  await kubectlOk(bravo, ['create', '-f', '-'], pod('named', 'mine'));
  await kubectlOk(alpha, ['create', '-f', '-'], pod('unnamed'));
  await kubectlOk(bravo, ['create', '-f', '-'], pod('unnamed'));
  await kubectlOk(alpha, ['create', '-f', '-'], pod('platform', PLATFORM_LOW));

  const alphaNamed = await upstreamPod(alpha, 'named');
  t.equal(alphaNamed.spec.priority, 1000, "alpha's pod has alpha's value");
  t.equal(alphaNamed.spec.priorityClassName, `${alpha.id}-mine`);
  t.equal((await upstreamPod(bravo, 'named')).spec.priority, 10, "bravo's pod of the same names has bravo's");
  const alphaUnnamed = await upstreamPod(alpha, 'unnamed');
  t.equal(alphaUnnamed.spec.priority, 1000, "a pod naming none gets alpha's own default");
  t.equal(alphaUnnamed.spec.priorityClassName, `${alpha.id}-mine`);
  t.not((await upstreamPod(bravo, 'unnamed')).spec.priorityClassName ?? '', `${alpha.id}-mine`, "bravo's does not");
  t.equal((await upstreamPod(alpha, 'platform')).spec.priority, 50, "the platform's class is the platform's");

  const seen = JSON.parse(await kubectlOk(alpha, ['get', 'pod', 'named', '-o', 'json']));
  t.equal(seen.spec.priorityClassName, 'mine', 'alpha reads its own name');
  t.equal(seen.spec.priority, 1000);
  const all = JSON.parse(await kubectlOk(alpha, ['get', 'pods', '-o', 'json'])).items as Json[];
  t.same(
    all.map((item) => [item.metadata.name, item.spec.priorityClassName]).sort(),
    [
      ['named', 'mine'],
      ['platform', PLATFORM_LOW],
      ['unnamed', 'mine'],
    ],
    'a list (the byte-level path) names its own classes as alpha does',
  );
  const wide = await kubectlOk(alpha, ['get', 'pods', '-o', 'yaml']);
  t.notMatch(wide, new RegExp(`${alpha.id}-`), 'no prefix anywhere in the YAML');

  const h2 = connectH2(credentialsOf(alpha.kubeconfig));
  t.teardown(() => h2.close());
  for (const path of ['/api/v1/namespaces/default/pods/named', '/api/v1/namespaces/default/pods']) {
    const answer = await h2Request(h2, 'GET', path, { headers: { accept: 'application/vnd.kubernetes.protobuf' } });
    t.equal(answer.status, 200, path);
    t.match(String(answer.headers['content-type']), /protobuf/, `${path}: protobuf`);
    t.notOk(answer.bytes.includes(`${alpha.id}-`), `${path}: no upstream name in protobuf`);
    t.ok(answer.bytes.includes(Buffer.from([0xc2, 0x01, 4, ...Buffer.from('mine')])), `${path}: its class by its name (PodSpec.priorityClassName = 24)`);
  }
});

t.test("a Deployment's pods, made upstream, take the tenant's own class; its ReplicaSet reads the name back", async (t) => {
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'workers' },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: 'workers' } },
      template: {
        metadata: { labels: { app: 'workers' } },
        spec: { priorityClassName: 'mine', containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
      },
    },
  };
  await kubectlOk(bravo, ['create', '-f', '-'], JSON.stringify(deployment));
  const made = await eventually('the ReplicaSet controller made the pod', async () => {
    const pods = JSON.parse(await direct(['get', 'pods', '-n', `${bravo.id}-default`, '-l', 'app=workers', '-o', 'json'])).items as Json[];
    return pods.length > 0 ? pods[0] : undefined;
  });
  t.equal(made.spec.priority, 10, "bravo's value, upstream");
  const replicaSets = JSON.parse(await kubectlOk(bravo, ['get', 'replicasets', '-l', 'app=workers', '-o', 'json'])).items as Json[];
  t.equal(replicaSets[0]?.spec.template.spec.priorityClassName, 'mine');
  t.equal(JSON.parse(await kubectlOk(bravo, ['get', 'deployment', 'workers', '-o', 'json'])).spec.template.spec.priorityClassName, 'mine');
});

t.test("the platform's classes stay read-only; a name the platform uses is taken", async (t) => {
  for (const args of [
    ['label', 'priorityclass', PLATFORM_LOW, 'mine=yes'],
    ['delete', 'priorityclass', PLATFORM_LOW],
  ]) {
    const refused = await alpha.kubectl(args);
    t.not(refused.code, 0, args.join(' '));
    t.match(refused.stderr, /forbidden.*read-only/i, `${args.join(' ')}: ${refused.stderr}`);
  }
  const taken = await alpha.kubectl(['create', '-f', '-'], { input: priorityClass(PLATFORM_MID, 7) });
  t.match(taken.stderr, /AlreadyExists|already exists/, taken.stderr);
  t.equal(JSON.parse(await direct(['get', 'priorityclass', PLATFORM_MID, '-o', 'json'])).value, 5000, 'untouched');
  // deletecollection reaches only the tenant's own.
  const deleted = await bravo.kubectl(['delete', '--raw', '/apis/scheduling.k8s.io/v1/priorityclasses']);
  t.equal(deleted.code, 0, deleted.stderr);
  t.equal((await stack.kubectlDirect(['get', 'priorityclass', `${bravo.id}-mine`])).code, 1, "bravo's own went");
  t.equal((await stack.kubectlDirect(['get', 'priorityclass', PLATFORM_LOW])).code, 0, "the platform's stayed");
  t.equal((await stack.kubectlDirect(['get', 'priorityclass', `${alpha.id}-mine`])).code, 0, "alpha's stayed");
});

t.test("a Tenant's band bounds its classes, in tenantgate and upstream; a restricted tenant uses its own classes", async (t) => {
  const tooHigh = await charlie.kubectl(['create', '-f', '-'], { input: priorityClass('big', 1000) });
  t.not(tooHigh.code, 0);
  t.match(tooHigh.stderr, /outside the values this tenant's priority classes may take \(-2147483648 to 500\)/, tooHigh.stderr);
  await kubectlOk(charlie, ['create', '-f', '-'], priorityClass('small', 400));
  await kubectlOk(charlie, ['create', '-f', '-'], pod('own', 'small'));
  t.equal((await upstreamPod(charlie, 'own')).spec.priority, 400, 'its own class, though its Tenant allows only one platform class');
  t.notOk((await names(charlie)).includes(PLATFORM_MID), 'a platform class it may not use is not in its list');
  const hidden = await charlie.kubectl(['create', '-f', '-'], { input: pod('hidden', PLATFORM_MID) });
  t.match(hidden.stderr, /not one of the priority classes this tenant may use/, 'a pod naming it is refused in words');
  // Its name is free to charlie: a class of its own by that name shadows the platform's.
  await kubectlOk(charlie, ['create', '-f', '-'], priorityClass(PLATFORM_MID, 450));
  t.equal(JSON.parse(await kubectlOk(charlie, ['get', 'priorityclass', PLATFORM_MID, '-o', 'json'])).value, 450);
  await eventually('its own class of that name is known', async () =>
    (await charlie.kubectl(['create', '-f', '-'], { input: pod('shadow', PLATFORM_MID) })).code === 0 ? true : undefined,
  );
  t.equal((await upstreamPod(charlie, 'shadow')).spec.priority, 450, 'its pod takes its own class');

  // As if tenantgate had a bug: a class of charlie's beyond its band exists upstream, and a pod names it directly.
  await direct(
    ['create', '-f', '-'],
    JSON.stringify({
      apiVersion: 'scheduling.k8s.io/v1',
      kind: 'PriorityClass',
      metadata: { name: `${charlie.id}-smuggled`, labels: { 'kubezoo.io/tenant': charlie.id } },
      value: 900,
    }),
  );
  t.teardown(() => stack.kubectlDirect(['delete', 'priorityclass', `${charlie.id}-smuggled`, '--ignore-not-found']));
  const smuggled = await stack.kubectlDirect(['create', '-n', `${charlie.id}-default`, '-f', '-'], { input: pod('smuggled', `${charlie.id}-smuggled`) });
  t.not(smuggled.code, 0, 'the upstream refuses the pod');
  t.match(smuggled.stderr, /outside the values this tenant's priority classes may take/, smuggled.stderr);
});

t.test('bypassing conversion, a tenant identity writes only classes labelled its own and never the global default', async (t) => {
  const asAlpha = (args: string[], input?: string) =>
    stack.kubectlDirect(['--as', `${alpha.id}-admin`, '--as-group', TENANT_CLUSTER_SCOPE_GROUP, '--as-user-extra', `tenant=${alpha.id}`, ...args], { input });
  const unlabelled = await asAlpha(['create', '--validate=false', '-f', '-'], priorityClass(`${alpha.id}-bare`, 1));
  t.match(unlabelled.stderr, /carries the label kubezoo.io\/tenant/, unlabelled.stderr);
  const global = await asAlpha(
    ['create', '--validate=false', '-f', '-'],
    JSON.stringify({
      ...JSON.parse(priorityClass(`${alpha.id}-global`, 1, { globalDefault: true })),
      metadata: { name: `${alpha.id}-global`, labels: { 'kubezoo.io/tenant': alpha.id } },
    }),
  );
  t.match(global.stderr, /not the global default/, global.stderr);
  const platform = await asAlpha(['delete', 'priorityclass', PLATFORM_LOW]);
  t.match(platform.stderr, /may write only in its own namespaces and names/, platform.stderr);
  const others = await asAlpha(['delete', 'priorityclass', `${charlie.id}-small`]);
  t.match(others.stderr, /may write only in its own namespaces and names/, others.stderr);
});

t.test("a tenant deletes its own class; the other tenant's of the same name stays", async (t) => {
  await kubectlOk(bravo, ['create', '-f', '-'], priorityClass('mine', 10));
  await kubectlOk(alpha, ['delete', 'priorityclass', 'mine']);
  t.not((await alpha.kubectl(['get', 'priorityclass', 'mine'])).code, 0, 'gone for alpha');
  t.equal(JSON.parse(await kubectlOk(bravo, ['get', 'priorityclass', 'mine', '-o', 'json'])).value, 10, "bravo's is there");
  // Without its own default, alpha's next pod gets none of alpha's.
  await eventually("alpha's default is gone", async () => {
    const table = await kubectlOk(alpha, ['get', 'priorityclasses', '-o', 'json']);
    return (JSON.parse(table).items as Json[]).some((item) => item.globalDefault === true && item.metadata.name === 'mine') ? undefined : true;
  });
  await kubectlOk(alpha, ['create', '-f', '-'], pod('after'));
  t.not((await upstreamPod(alpha, 'after')).spec.priorityClassName ?? '', `${alpha.id}-mine`);
});

t.test('a chart that ships a PriorityClass and a Deployment naming it installs, upgrades and uninstalls unchanged', async (t) => {
  const helm = await ensureHelm({ log: (line) => t.comment(line) });
  const scratch = mkdtempSync(join(tmpdir(), 'tenant-priority-chart-'));
  t.teardown(() => rmSync(scratch, { recursive: true, force: true }));
  const chart = join(scratch, 'batch');
  mkdirSync(join(chart, 'templates'), { recursive: true });
  writeFileSync(join(chart, 'Chart.yaml'), 'apiVersion: v2\nname: batch\nversion: 0.1.0\n');
  writeFileSync(
    join(chart, 'templates', 'batch.yaml'),
    [
      'apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: batch-high\nvalue: 300\ndescription: "{{ .Values.note | default "first" }}"',
      'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: batch\nspec:\n  replicas: 1\n  selector:\n    matchLabels: { app: batch }\n  template:\n    metadata:\n      labels: { app: batch }\n    spec:\n      priorityClassName: batch-high\n      containers:\n        - { name: c, image: registry.k8s.io/pause:3.10 }',
    ].join('\n---\n'),
  );
  const env = { ...process.env, HELM_CACHE_HOME: join(scratch, 'cache'), HELM_CONFIG_HOME: join(scratch, 'config'), HELM_DATA_HOME: join(scratch, 'data') };
  for (const tenant of [alpha, bravo]) {
    const installed = await runCommand(helm, ['install', 'batch', chart, '--namespace', 'default', '--kubeconfig', tenant.kubeconfig], {
      env,
      timeoutMs: 90_000,
    });
    t.equal(installed.code, 0, `helm install as ${tenant.id}: ${installed.stderr}`);
  }
  const made = await eventually("the chart's pod upstream", async () => {
    const pods = JSON.parse(await direct(['get', 'pods', '-n', `${alpha.id}-default`, '-l', 'app=batch', '-o', 'json'])).items as Json[];
    return pods.length > 0 ? pods[0] : undefined;
  });
  t.equal(made.spec.priority, 300, "the chart's class gives its pod its value");
  const upgraded = await runCommand(helm, ['upgrade', 'batch', chart, '--namespace', 'default', '--kubeconfig', alpha.kubeconfig, '--set', 'note=second'], {
    env,
    timeoutMs: 90_000,
  });
  t.equal(upgraded.code, 0, `helm upgrade: ${upgraded.stderr}`);
  t.equal(JSON.parse(await kubectlOk(alpha, ['get', 'priorityclass', 'batch-high', '-o', 'json'])).description, 'second', 'upgraded');
  t.equal(JSON.parse(await kubectlOk(bravo, ['get', 'priorityclass', 'batch-high', '-o', 'json'])).description, 'first', "bravo's release is its own");
  const uninstalled = await runCommand(helm, ['uninstall', 'batch', '--namespace', 'default', '--kubeconfig', alpha.kubeconfig], { env, timeoutMs: 90_000 });
  t.equal(uninstalled.code, 0, `helm uninstall: ${uninstalled.stderr}`);
  t.not((await alpha.kubectl(['get', 'priorityclass', 'batch-high'])).code, 0, 'the class went with the release');
  t.equal((await bravo.kubectl(['get', 'priorityclass', 'batch-high'])).code, 0, "bravo's stayed");
});

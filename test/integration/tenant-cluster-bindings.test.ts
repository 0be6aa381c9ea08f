// A tenant's ClusterRoleBindings cost the upstream's authorizer nothing (issue 27): they are tenantgate's custom
// resources upstream, never real ClusterRoleBindings, yet grant as in any cluster — across namespaces, in access
// reviews with RBAC's reason, through Helm — and another tenant with the same names neither sees nor touches them.
import { SHARED_TENANT_RBAC } from '../../lib/tenants/bootstrap.ts';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ensureHelm } from '../../lib/rig/helm.ts';
import { runCommand } from '../../lib/rig/process.ts';
import { encodeObject } from '../../lib/convert/protobuf/encode.ts';
import { connectH2, credentialsOf, h1Request, h2Request } from '../helpers/http.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';
import { eventually, kubectlOk } from '../helpers/kit.ts';

const RBAC = 'rbac.authorization.k8s.io';
/** Where a tenant's ClusterRoleBindings are kept upstream: tenantgate's custom resources. */
const STORED_BINDINGS = 'clusterrolebindings.rbac.tenantgate.kubezoo.io';
/** tenantgate's own per-tenant bindings (its admin's), labelled so; a tenant's own never are. */
const TENANTGATE_OWNED_LABEL = 'tenantgate.kubezoo.io/tenant';
const ROBOT = 'system:serviceaccount:shop:robot';

let stack: Stack;
let alpha: TestTenant;
let bravo: TestTenant;
/** Real upstream ClusterRoleBindings before any tenant existed (name → uid). */
let realEmpty: Map<string, string>;
let realBefore: Map<string, string>;

/** Real ClusterRoleBindings upstream but tenantgate's own per-tenant ones (name → uid). */
async function realBindings(): Promise<Map<string, string>> {
  const r = await stack.kubectlDirect(['get', 'clusterrolebindings', '-l', `!${TENANTGATE_OWNED_LABEL}`, '-o', 'json']);
  if (r.code !== 0) throw new Error(r.stderr);
  return new Map((JSON.parse(r.stdout).items as { metadata: { name: string; uid: string } }[]).map((item) => [item.metadata.name, item.metadata.uid]));
}

/** The tenant's own SelfSubjectAccessReview of `attributes`, as `as` (impersonated by the tenant admin). */
async function selfReview(tenant: TestTenant, as: string, attributes: Record<string, string>): Promise<{ allowed: boolean; reason?: string }> {
  const review = { apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: { resourceAttributes: attributes } };
  return JSON.parse(await kubectlOk(tenant, ['create', '-f', '-', '-o', 'json', '--validate=false', `--as=${as}`], JSON.stringify(review))).status;
}

t.before(async () => {
  stack = await startStack();
  realEmpty = await realBindings();
  alpha = await createTestTenant(stack, 'crba01');
  // (The first tenant's bootstrap makes the few bindings all tenants share: the second must add none.)
  realBefore = await realBindings();
  bravo = await createTestTenant(stack, 'crbb02');
  for (const tenant of [alpha, bravo]) {
    for (const namespace of ['shop', 'back']) await kubectlOk(tenant, ['create', 'namespace', namespace]);
    await kubectlOk(tenant, ['-n', 'back', 'create', 'configmap', 'settings', `--from-literal=owner=${tenant.id}`]);
    await kubectlOk(tenant, ['-n', 'shop', 'create', 'serviceaccount', 'robot']);
    await kubectlOk(tenant, ['create', 'clusterrole', 'cm-reader', '--verb=get,list,watch', '--resource=configmaps,pods']);
  }
});
t.teardown(() => stack?.stop());

t.test('creating tenants adds no ClusterRoleBinding of theirs upstream: the built-in ones are stored', async (t) => {
  // (On a rig an earlier file used, the shared bindings may be there before this file's first tenant.)
  const shared = SHARED_TENANT_RBAC.filter((kept) => kept.object.kind === 'ClusterRoleBinding').map((kept) => kept.object.metadata.name);
  t.same(
    shared.filter((name) => !realBefore.has(name)),
    [],
    'after the first tenant the bindings all tenants share are there',
  );
  t.same(
    [...realBefore.keys()].filter((name) => !realEmpty.has(name) && !shared.includes(name)),
    [],
    'and the first tenant brought no other binding',
  );
  const real = await realBindings();
  t.same(
    [...real.keys()].filter((name) => !realBefore.has(name)),
    [],
    'the second tenant no real ClusterRoleBinding at all',
  );
  t.equal(real.size, realBefore.size, 'as many real ClusterRoleBindings as before the tenants');
  const stored = await stack.kubectlDirect(['get', STORED_BINDINGS, '-l', 'kubezoo.io/tenant=crba01', '-o', 'name']);
  t.match(
    stored.stdout,
    new RegExp(`crba01-tghex-${Buffer.from('system:discovery').toString('hex')}`),
    "upstream the tenant's system:discovery is tenantgate's custom resource (its name in hex)",
  );
  const seen = JSON.parse(await kubectlOk(alpha, ['get', 'clusterrolebinding', 'system:discovery', '-o', 'json']));
  t.same(
    [seen.apiVersion, seen.kind, seen.subjects],
    [`${RBAC}/v1`, 'ClusterRoleBinding', [{ apiGroup: RBAC, kind: 'Group', name: 'system:authenticated' }]],
    'the tenant reads it as a real one',
  );
});

t.test('a service account bound by a ClusterRoleBinding lists in every namespace, and can-i says which binding allows it', async (t) => {
  const before = await realBindings();
  // kubectl create sends the binding as protobuf (a typed client).
  await kubectlOk(alpha, ['create', 'clusterrolebinding', 'robot-reads', '--clusterrole=cm-reader', '--serviceaccount=shop:robot']);
  t.same(await realBindings(), before, 'no real ClusterRoleBinding upstream');
  const upstream = JSON.parse((await stack.kubectlDirect(['get', STORED_BINDINGS, 'crba01-robot-reads', '-o', 'json'])).stdout);
  t.same(
    upstream.subjects,
    [{ kind: 'User', apiGroup: RBAC, name: 'tenantgate:cluster:system:serviceaccount:crba01-shop:robot' }],
    'stored with its shadow subject',
  );

  const listed = JSON.parse(await kubectlOk(alpha, ['get', 'configmaps', '-A', '-o', 'json', `--as=${ROBOT}`]));
  t.ok(
    listed.items.some((item: { metadata: { namespace: string; name: string } }) => item.metadata.namespace === 'back' && item.metadata.name === 'settings'),
    'the robot lists configmaps across namespaces',
  );
  t.notMatch(JSON.stringify(listed), /crbb02|crba01-/, 'nothing of the other tenant, no upstream name');
  const can = await alpha.kubectl(['auth', 'can-i', 'list', 'pods', '-A', `--as=${ROBOT}`]);
  t.equal(can.stdout.trim(), 'yes', 'kubectl auth can-i list pods -A: yes');
  const review = await selfReview(alpha, ROBOT, { verb: 'list', resource: 'pods' });
  t.same(
    review,
    { allowed: true, reason: 'RBAC: allowed by ClusterRoleBinding "robot-reads" of ClusterRole "cm-reader" to ServiceAccount "robot/shop"' },
    "with the apiserver's reason, in the tenant's names",
  );
  t.equal((await alpha.kubectl(['auth', 'can-i', 'list', 'secrets', '-A', `--as=${ROBOT}`])).stdout.trim(), 'no', 'and nothing the role does not grant');

  await kubectlOk(alpha, ['create', 'clusterrolebinding', 'bob-reads', '--clusterrole=cm-reader', '--user=bob']);
  const subjectReview = {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    spec: { user: 'bob', resourceAttributes: { verb: 'watch', resource: 'configmaps' } },
  };
  const status = JSON.parse(await kubectlOk(alpha, ['create', '-f', '-', '-o', 'json'], JSON.stringify(subjectReview))).status;
  t.same(
    status,
    { allowed: true, reason: 'RBAC: allowed by ClusterRoleBinding "bob-reads" of ClusterRole "cm-reader" to User "bob"' },
    'a SubjectAccessReview about a user names the binding too',
  );
});

t.test('kubectl shows a stored ClusterRoleBinding as the apiserver does: Table, wide, describe', async (t) => {
  const table = await kubectlOk(alpha, ['get', 'clusterrolebinding', 'robot-reads', '-o', 'wide']);
  t.match(table, /^NAME\s+ROLE\s+AGE\s+USERS\s+GROUPS\s+SERVICEACCOUNTS/m, "the apiserver's columns");
  t.match(table, /robot-reads\s+ClusterRole\/cm-reader\s+\S+\s+shop\/robot/, "its cells, in the tenant's names");
  t.notMatch(table, /crba01|tenantgate/);
  const described = await kubectlOk(alpha, ['describe', 'clusterrolebinding', 'bob-reads']);
  t.match(described, /Role:\s*\n\s+Kind:\s+ClusterRole\s*\n\s+Name:\s+cm-reader/);
  t.match(described, /User\s+bob/);
  const list = await kubectlOk(alpha, ['get', 'clusterrolebindings', '-o', 'name']);
  t.match(list, /clusterrolebinding.rbac.authorization.k8s.io\/robot-reads/);
  t.match(list, /clusterrolebinding.rbac.authorization.k8s.io\/system:discovery/);
  t.same(
    list.split('\n').filter((name) => /crb|tenantgate/.test(name)),
    [],
    "neither upstream names nor tenantgate's own",
  );
});

t.test("a second tenant with the same names neither sees nor touches the first one's bindings", async (t) => {
  await kubectlOk(bravo, ['create', 'clusterrolebinding', 'robot-reads', '--clusterrole=cm-reader', '--user=zed']);
  t.same(
    JSON.parse(await kubectlOk(bravo, ['get', 'clusterrolebinding', 'robot-reads', '-o', 'json'])).subjects,
    [{ apiGroup: RBAC, kind: 'User', name: 'zed' }],
    'B reads its own',
  );
  for (const args of [
    ['get', 'clusterrolebinding', 'crba01-robot-reads'],
    ['get', 'clusterrolebinding', 'bob-reads'],
    ['delete', 'clusterrolebinding', 'bob-reads'],
  ]) {
    const r = await bravo.kubectl(args);
    t.match(r.stderr, /NotFound|not found/, `B: ${args.join(' ')}`);
  }
  const listed = JSON.parse(await kubectlOk(bravo, ['get', 'clusterrolebindings', '-o', 'json']));
  t.notOk(
    listed.items.some((item: { metadata: { name: string } }) => item.metadata.name === 'bob-reads'),
    "B's list has none of A's",
  );
  t.equal(
    (await bravo.kubectl(['get', 'clusterrolebindings', '--field-selector=metadata.name=crba01-bob-reads', '-o', 'name'])).stdout.trim(),
    '',
    "nor a field selector naming A's upstream name",
  );
  // B's watch sees B's change and nothing of A's.
  const watch = bravo.kubectl(['get', '--raw', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings?watch=true&timeoutSeconds=4']);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  await kubectlOk(alpha, ['label', 'clusterrolebinding', 'robot-reads', 'seen=by-alpha']);
  await kubectlOk(bravo, ['label', 'clusterrolebinding', 'robot-reads', 'seen=by-bravo']);
  const events = (await watch).stdout;
  t.match(events, /by-bravo/, "B's watch has B's change");
  t.notMatch(events, /by-alpha|crba01|bob-reads/, "and nothing of A's");
  await kubectlOk(bravo, ['delete', 'clusterrolebindings', '--all']);
  t.equal(
    JSON.parse(await kubectlOk(alpha, ['get', 'clusterrolebinding', 'robot-reads', '-o', 'json'])).metadata.labels.seen,
    'by-alpha',
    "B deleting all its bindings left A's",
  );
  t.equal((await alpha.kubectl(['auth', 'can-i', 'list', 'pods', '-A', `--as=${ROBOT}`])).stdout.trim(), 'yes', "and A's grant");
});

t.test('unbinding takes the right away', async (t) => {
  await kubectlOk(alpha, ['delete', 'clusterrolebinding', 'robot-reads']);
  await eventually('can-i says no', async () =>
    (await alpha.kubectl(['auth', 'can-i', 'list', 'pods', '-A', `--as=${ROBOT}`])).stdout.trim() === 'no' ? true : undefined,
  );
  const refused = await eventually('the list is refused', async () => {
    const r = await alpha.kubectl(['get', 'configmaps', '-A', `--as=${ROBOT}`]);
    return r.code !== 0 ? r.stderr : undefined;
  });
  t.match(refused, /forbidden/i);
  t.notMatch(refused, /crba01/);
  await eventually('and in its namespaces too (the expansions are gone)', async () =>
    (await alpha.kubectl(['auth', 'can-i', 'list', 'configmaps', '-n', 'back', `--as=${ROBOT}`])).stdout.trim() === 'no' ? true : undefined,
  );
});

t.test("a chart with ClusterRoleBindings installs, grants and uninstalls, and the upstream's ClusterRoleBindings stay as they were", async (t) => {
  const helm = await ensureHelm({ log: (line) => t.comment(line) });
  const scratch = mkdtempSync(join(tmpdir(), 'tenant-chart-'));
  t.teardown(() => rmSync(scratch, { recursive: true, force: true }));
  const chart = join(scratch, 'reader');
  mkdirSync(join(chart, 'templates'), { recursive: true });
  writeFileSync(join(chart, 'Chart.yaml'), 'apiVersion: v2\nname: reader\nversion: 0.1.0\n');
  writeFileSync(
    join(chart, 'templates', 'rbac.yaml'),
    [
      'apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: chart-reader\n  namespace: {{ .Release.Namespace }}',
      'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: chart-reader\nrules:\n  - apiGroups: [""]\n    resources: [configmaps]\n    verbs: [get, list]',
      'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: chart-reader\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: ClusterRole\n  name: chart-reader\nsubjects:\n  - kind: ServiceAccount\n    name: chart-reader\n    namespace: {{ .Release.Namespace }}',
    ].join('\n---\n'),
  );
  const env = { ...process.env, HELM_CACHE_HOME: join(scratch, 'cache'), HELM_CONFIG_HOME: join(scratch, 'config'), HELM_DATA_HOME: join(scratch, 'data') };
  const before = await realBindings();
  const installed = await runCommand(
    helm,
    ['install', 'reader', chart, '--namespace', 'shop', '--kubeconfig', alpha.kubeconfig, '--wait', '--timeout', '60s'],
    { env, timeoutMs: 90_000 },
  );
  t.equal(installed.code, 0, `helm install: ${installed.stderr}`);
  t.same(await realBindings(), before, 'the upstream has the same real ClusterRoleBindings as before the chart');
  t.equal((await stack.kubectlDirect(['get', STORED_BINDINGS, 'crba01-chart-reader', '-o', 'name'])).code, 0, "the chart's binding is stored");
  t.equal(
    (await alpha.kubectl(['auth', 'can-i', 'list', 'configmaps', '-A', '--as=system:serviceaccount:shop:chart-reader'])).stdout.trim(),
    'yes',
    'and grants',
  );
  const upgraded = await runCommand(helm, ['upgrade', 'reader', chart, '--namespace', 'shop', '--kubeconfig', alpha.kubeconfig, '--set', 'x=1'], {
    env,
    timeoutMs: 90_000,
  });
  t.equal(upgraded.code, 0, `helm upgrade: ${upgraded.stderr}`);
  const uninstalled = await runCommand(helm, ['uninstall', 'reader', '--namespace', 'shop', '--kubeconfig', alpha.kubeconfig], { env, timeoutMs: 90_000 });
  t.equal(uninstalled.code, 0, `helm uninstall: ${uninstalled.stderr}`);
  t.not((await alpha.kubectl(['get', 'clusterrolebinding', 'chart-reader'])).code, 0, 'the binding went with the release');
  t.same(await realBindings(), before, 'and still the same real ones');
});

t.test("an existing tenant's real ClusterRoleBinding (an older tenantgate's) moves to the stored form and keeps granting", async (t) => {
  const legacy = {
    apiVersion: `${RBAC}/v1`,
    kind: 'ClusterRoleBinding',
    metadata: { name: 'crba01-legacy', labels: { 'kubezoo.io/tenant': 'crba01' } },
    roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'crba01-cm-reader' },
    subjects: [{ apiGroup: RBAC, kind: 'User', name: 'tenantgate:cluster:crba01-carol' }],
  };
  const created = await stack.kubectlDirect(['create', '-f', '-'], { input: JSON.stringify(legacy) });
  t.equal(created.code, 0, created.stderr);
  await eventually('stored', async () => ((await stack.kubectlDirect(['get', STORED_BINDINGS, 'crba01-legacy'])).code === 0 ? true : undefined));
  await eventually('the real one gone', async () =>
    (await stack.kubectlDirect(['get', 'clusterrolebinding', 'crba01-legacy'])).code !== 0 ? true : undefined,
  );
  const seen = JSON.parse(await kubectlOk(alpha, ['get', 'clusterrolebinding', 'legacy', '-o', 'json']));
  t.same([seen.roleRef.name, seen.subjects], ['cm-reader', [{ apiGroup: RBAC, kind: 'User', name: 'carol' }]], 'the tenant reads it as before');
  const carol = await eventually('carol lists across namespaces', async () => {
    const r = await alpha.kubectl(['get', 'configmaps', '-A', '-o', 'name', '--as=carol']);
    return r.code === 0 ? r.stdout : undefined;
  });
  t.match(carol, /configmap\/settings/);
  t.same(await realBindings(), realBefore, 'no real ClusterRoleBinding of a tenant is left upstream');
});

t.test('a service account its ClusterRoleBinding lets write ClusterRoles does, only what it holds, only in its tenant', async (t) => {
  const robot = `--as=${ROBOT}`;
  const roleMaker = {
    apiVersion: `${RBAC}/v1`,
    kind: 'ClusterRole',
    metadata: { name: 'role-maker' },
    rules: [
      { apiGroups: [RBAC], resources: ['clusterroles', 'clusterrolebindings'], verbs: ['create', 'get', 'list', 'update', 'patch', 'delete'] },
      { apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] },
    ],
  };
  await kubectlOk(alpha, ['apply', '-f', '-'], JSON.stringify(roleMaker));
  await kubectlOk(alpha, ['create', 'clusterrolebinding', 'robot-makes-roles', '--clusterrole=role-maker', '--serviceaccount=shop:robot']);

  // Before: a real cluster's answer for what the binding allows, where upstream RBAC knew nothing of it (403).
  const made = await eventually('the robot creates a ClusterRole it holds the rules of', async () => {
    const r = await alpha.kubectl(['create', 'clusterrole', 'made-by-robot', '--verb=get', '--resource=configmaps', robot]);
    return r.code === 0 ? r.stdout : undefined;
  });
  t.match(made, /made-by-robot created/);
  t.match(await kubectlOk(alpha, ['label', 'clusterrole', 'made-by-robot', 'team=shop', robot]), /labeled/, 'a patch of it too');
  t.equal(JSON.parse(await kubectlOk(alpha, ['get', 'clusterrole', 'made-by-robot', '-o', 'json'])).metadata.labels.team, 'shop');

  const greedy = await alpha.kubectl(['create', 'clusterrole', 'greedy', '--verb=get', '--resource=secrets', robot]);
  t.not(greedy.code, 0, 'a ClusterRole granting what the robot lacks is refused');
  t.match(greedy.stderr, /is attempting to grant RBAC permissions not currently held/);
  t.match(greedy.stderr, /Resources:\["secrets"\]/);
  t.notMatch(greedy.stderr, /crba01/, "in the tenant's names");
  const raise = await alpha.kubectl([
    'patch',
    'clusterrole',
    'made-by-robot',
    '--type=json',
    '-p',
    '[{"op":"add","path":"/rules/-","value":{"apiGroups":[""],"resources":["secrets"],"verbs":["get"]}}]',
    robot,
  ]);
  t.not(raise.code, 0, 'nor may a patch add such a rule');
  t.equal(JSON.parse(await kubectlOk(alpha, ['get', 'clusterrole', 'made-by-robot', '-o', 'json'])).rules.length, 1);
  const aggregated = await alpha.kubectl(['create', 'clusterrole', 'joins-view', '--aggregation-rule=rbac.example.com/aggregate-to-x=true', robot]);
  t.not(aggregated.code, 0);
  t.match(aggregated.stderr, /must have cluster-admin privileges to use the aggregationRule/);

  const bindsHeld = await alpha.kubectl(['create', 'clusterrolebinding', 'robot-binds', '--clusterrole=made-by-robot', '--user=dana', robot]);
  t.equal(bindsHeld.code, 0, `binding a role it holds: ${bindsHeld.stderr}`);
  const bindsMore = await alpha.kubectl(['create', 'clusterrolebinding', 'robot-binds-more', '--clusterrole=cm-reader', '--user=dana', robot]);
  t.not(bindsMore.code, 0, "binding cm-reader (watch, pods: not the robot's) is refused");
  t.match(bindsMore.stderr, /not currently held/);

  // The other tenant: its same-named roles untouched, and its robot, bound to nothing, refused as before.
  const theirs = JSON.parse(await kubectlOk(bravo, ['get', 'clusterrole', 'cm-reader', '-o', 'json']));
  t.same(theirs.rules[0].resources, ['configmaps', 'pods']);
  t.not((await bravo.kubectl(['get', 'clusterrole', 'made-by-robot'])).code, 0, 'bravo has no made-by-robot');
  const bravoRobot = await bravo.kubectl(['create', 'clusterrole', 'made-by-robot', '--verb=get', '--resource=configmaps', robot]);
  t.not(bravoRobot.code, 0, "bravo's robot has no binding");
  t.match(bravoRobot.stderr, /forbidden/);
  t.notMatch(bravoRobot.stderr, /crbb02|crba01/);
  await kubectlOk(alpha, ['delete', 'clusterrole', 'made-by-robot', robot]);
  t.equal((await bravo.kubectl(['get', 'clusterrole', 'cm-reader'])).code, 0, "alpha's robot deleting its own left bravo's roles");
  await kubectlOk(alpha, ['delete', 'clusterrolebinding', 'robot-makes-roles', 'robot-binds']);
});

t.test("the robot's cluster-scoped writes take the same stages over HTTP/1.1 in YAML and over HTTP/2 in protobuf", async (t) => {
  await kubectlOk(alpha, [
    'create',
    'clusterrole',
    'role-maker-2',
    '--verb=get,create,delete',
    '--resource=clusterroles',
    '--verb=get',
    '--resource=configmaps',
  ]);
  await kubectlOk(alpha, ['create', 'clusterrolebinding', 'robot-makes-roles-2', '--clusterrole=role-maker-2', '--serviceaccount=shop:robot']);
  const credentials = credentialsOf(alpha.kubeconfig);
  const asRobot = { 'impersonate-user': ROBOT };
  const collection = `/apis/${RBAC}/v1/clusterroles`;
  const yamlRole = (name: string, resource: string) =>
    `apiVersion: ${RBAC}/v1\nkind: ClusterRole\nmetadata:\n  name: ${name}\nrules:\n- apiGroups: [""]\n  resources: [${resource}]\n  verbs: [get]\n`;
  const yamlPost = (name: string, resource: string) =>
    h1Request(credentials, 'POST', collection, {
      headers: { ...asRobot, 'content-type': 'application/yaml', accept: 'application/json' },
      body: yamlRole(name, resource),
    });

  const made = await eventually('the robot creates a ClusterRole over HTTP/1.1 in YAML', async () => {
    const answer = await yamlPost('yaml-by-robot', 'configmaps');
    return answer.status === 201 ? answer : undefined;
  });
  t.equal(made.json().metadata.name, 'yaml-by-robot', "answered in the tenant's names");
  const greedy = await yamlPost('yaml-greedy', 'secrets');
  t.equal(greedy.status, 403, 'a YAML body granting what the robot lacks is refused as in JSON');
  t.match(greedy.json().message, /attempting to grant RBAC permissions not currently held/, "in the apiserver's words");
  t.notMatch(greedy.body, /crba01|crbb02|tenantgate/, "in the tenant's names");

  const session = connectH2(credentials);
  try {
    const role = (name: string, resource: string) => ({
      apiVersion: `${RBAC}/v1`,
      kind: 'ClusterRole',
      metadata: { name },
      rules: [{ apiGroups: [''], resources: [resource], verbs: ['get'] }],
    });
    const protobufPost = (name: string, resource: string) =>
      h2Request(session, 'POST', collection, {
        headers: { ...asRobot, 'content-type': 'application/vnd.kubernetes.protobuf', accept: 'application/json' },
        body: encodeObject(`${RBAC}/v1`, 'ClusterRole', role(name, resource)),
      });
    const byProtobuf = await protobufPost('protobuf-by-robot', 'configmaps');
    t.equal(byProtobuf.status, 201, byProtobuf.body.slice(0, 300));
    const greedyProtobuf = await protobufPost('protobuf-greedy', 'secrets');
    t.equal(greedyProtobuf.status, 403, 'a protobuf body granting what the robot lacks is refused');
    t.match(greedyProtobuf.json().message, /attempting to grant RBAC permissions not currently held/);
  } finally {
    session.close();
  }

  // What the robot made is alpha's alone: bravo, same names, sees none of it, and its robot (bound to nothing) is refused.
  for (const name of ['yaml-by-robot', 'protobuf-by-robot']) {
    t.equal(JSON.parse(await kubectlOk(alpha, ['get', 'clusterrole', name, '-o', 'json'])).rules[0].resources[0], 'configmaps', `alpha has ${name}`);
    t.not((await bravo.kubectl(['get', 'clusterrole', name])).code, 0, `bravo has no ${name}`);
  }
  const bravoRobot = await h1Request(credentialsOf(bravo.kubeconfig), 'POST', collection, {
    headers: { ...asRobot, 'content-type': 'application/yaml', accept: 'application/json' },
    body: yamlRole('yaml-by-robot', 'configmaps'),
  });
  t.equal(bravoRobot.status, 403, "bravo's robot is refused over HTTP/1.1 too");
  t.notMatch(bravoRobot.body, /crba01|crbb02/);
  await kubectlOk(alpha, ['delete', 'clusterrole', 'yaml-by-robot', 'protobuf-by-robot', 'role-maker-2']);
  await kubectlOk(alpha, ['delete', 'clusterrolebinding', 'robot-makes-roles-2']);
});

t.test('a deleted tenant leaves none of its stored ClusterRoleBindings upstream, and the other tenant keeps its own', async (t) => {
  await kubectlOk(bravo, ['create', 'clusterrolebinding', 'leaving', '--clusterrole=cm-reader', '--user=zed']);
  const deleted = await stack.kubectl(['delete', 'tenant', bravo.id, '--wait=false']);
  t.equal(deleted.code, 0, deleted.stderr);
  await eventually("crbb02's stored bindings gone", async () => {
    const r = await stack.kubectlDirect(['get', STORED_BINDINGS, '-o', 'name']);
    return r.code === 0 && !r.stdout.includes('crbb02-') ? true : undefined;
  });
  const left = await stack.kubectlDirect(['get', STORED_BINDINGS, '-o', 'name']);
  t.match(left.stdout, /crba01-legacy/, "crba01's are still there");
});

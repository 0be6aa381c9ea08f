// Two tenants (echo05, foxtr6) use the same names everywhere; neither reaches the other's objects through anything
// that refers to an object or an identity: owner references and garbage collection, RBAC subjects and roleRefs,
// webhook configurations, access and token reviews (and the service-account tokens they review), kubectl explain of
// a CRD both define, kubectl's validation against OpenAPI v2 (read as protobuf), deletecollection, and the errors
// of exec. Against the real rig, through kubectl.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentialsOf, h1Request } from '../helpers/http.ts';
import { SHARED_TENANT_RBAC } from '../../lib/tenants/bootstrap.ts';
import { startStack, type KubectlResult, type Stack } from '../helpers/stack.ts';
import { createTestTenant, withoutBuiltinRoles, type TestTenant } from '../helpers/tenants.ts';
import { poll, succeeded } from '../helpers/kit.ts';

let stack: Stack;
let echo: TestTenant;
let foxtrot: TestTenant;
/** A user of echo05 other than its admin: no rights until echo05 grants some. */
let bobKubeconfig: string;
let scratch: string;

const RBAC = 'rbac.authorization.k8s.io';
/** Where a tenant's ClusterRoleBindings are kept upstream: tenantgate's custom resources. */
const STORED_BINDINGS = 'clusterrolebindings.rbac.tenantgate.kubezoo.io';

/**
 * kubectl as `tenant`, with a discovery and HTTP cache of its own: kubectl keys its cache by server address only, and
 * both tenants reach the same tenantgate address (see 'kubectl caches' below for one cache shared).
 */
function as(tenant: TestTenant, args: string[], input?: string): Promise<KubectlResult> {
  return tenant.kubectl([`--cache-dir=${join(scratch, 'cache', tenant.id)}`, ...args], { input });
}

function asBob(args: string[]): Promise<KubectlResult> {
  return stack.kubectl([`--cache-dir=${join(scratch, 'cache', 'bob')}`, ...args], { kubeconfig: bobKubeconfig });
}

const ok = (tenant: TestTenant, args: string[], input?: string) => succeeded(as(tenant, args, input), `${tenant.id}: kubectl ${args.join(' ')}`);

const apply = (tenant: TestTenant, object: object) => ok(tenant, ['apply', '-f', '-'], JSON.stringify(object));
const getJson = async (tenant: TestTenant, args: string[]) => JSON.parse(await ok(tenant, ['get', ...args, '-o', 'json']));

async function upstreamJson(args: string[]): Promise<any> {
  const r = await stack.kubectlDirect(['get', ...args, '-o', 'json']);
  if (r.code !== 0) throw new Error(`upstream: kubectl get ${args.join(' ')}: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

async function exists(tenant: TestTenant, args: string[]): Promise<boolean> {
  const r = await as(tenant, ['get', ...args, '-o', 'name']);
  if (r.code === 0) return true;
  if (/NotFound/.test(r.stderr)) return false;
  throw new Error(`${tenant.id}: kubectl get ${args.join(' ')}: ${r.stderr}`);
}

/** Polls `probe` until it returns a value other than undefined, or `timeoutMs` passes (then undefined). */
/** Polls until the object is gone for the tenant; true when it went. */
const goneEventually = async (tenant: TestTenant, args: string[]) => (await poll(async () => ((await exists(tenant, args)) ? undefined : true))) === true;

/** The same CRD for both tenants (widgets.example.com) with a spec field of each tenant's own, to tell them apart. */
function widgetCrd(owner: string, field: string) {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'widgets.example.com' },
    spec: {
      group: 'example.com',
      scope: 'Namespaced',
      names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: `A widget of ${owner}.`,
              properties: { spec: { type: 'object', properties: { [field]: { type: 'string', description: `The ${field} of ${owner}'s widget.` } } } },
            },
          },
        },
      ],
    },
  };
}

const configMap = (name: string, data: Record<string, string>, metadata: object = {}) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'shop', ...metadata },
  data,
});

t.before(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'tenant-references-'));
  stack = await startStack({ controllers: true }); // the garbage collector and the token signer run in kube-controller-manager
  echo = await createTestTenant(stack, 'echo05');
  foxtrot = await createTestTenant(stack, 'foxtr6');
  bobKubeconfig = stack.kubeconfigFor({ user: 'bob', groups: [], tenant: 'echo05' });
  for (const [tenant, owner, field] of [
    [echo, 'echo', 'colour'],
    [foxtrot, 'foxtrot', 'flavour'],
  ] as const) {
    await apply(tenant, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'shop' } });
    await apply(tenant, configMap('settings', { owner }));
    await apply(tenant, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'reader', labels: { owner } },
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }],
    });
    await apply(tenant, widgetCrd(owner, field));
  }
  for (const tenant of [echo, foxtrot]) {
    await ok(tenant, ['wait', '--for=condition=Established', 'crd/widgets.example.com', '--timeout=60s']);
    const widget = JSON.stringify({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'parent', namespace: 'shop' }, spec: {} });
    const created = await poll(async () => ((await as(tenant, ['apply', '-f', '-'], widget)).code === 0 ? true : undefined));
    if (created !== true) throw new Error(`${tenant.id}: the Widget kind was not served in time`);
  }
});
t.teardown(async () => {
  await stack?.stop();
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
});

t.test("owner references name the tenant's own owners, and garbage collection follows them", async (t) => {
  await apply(echo, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'parent' }, rules: [] });
  await apply(foxtrot, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'parent' }, rules: [] });
  const roleUid = (await getJson(echo, ['clusterrole', 'parent'])).metadata.uid;
  const widgetUid = (await getJson(echo, ['-n', 'shop', 'widget', 'parent'])).metadata.uid;
  const byRole = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', name: 'parent', uid: roleUid };
  const byWidget = { apiVersion: 'example.com/v1', kind: 'Widget', name: 'parent', uid: widgetUid };
  await apply(echo, configMap('child-of-role', { owner: 'echo' }, { ownerReferences: [byRole] }));
  await apply(echo, configMap('child-of-widget', { owner: 'echo' }, { ownerReferences: [byWidget] }));
  // foxtr6 has children of the same names, owned by nothing: a collector confused by names would take them.
  await apply(foxtrot, configMap('child-of-role', { owner: 'foxtrot' }));
  await apply(foxtrot, configMap('child-of-widget', { owner: 'foxtrot' }));

  t.same((await getJson(echo, ['-n', 'shop', 'configmap', 'child-of-role'])).metadata.ownerReferences, [byRole], 'echo reads its owner as it named it');
  t.same((await getJson(echo, ['-n', 'shop', 'configmap', 'child-of-widget'])).metadata.ownerReferences, [byWidget], 'a custom owner in its own group');
  const upstreamRoleRef = (await upstreamJson(['-n', 'echo05-shop', 'configmap', 'child-of-role'])).metadata.ownerReferences[0];
  t.same([upstreamRoleRef.name, upstreamRoleRef.uid], ['echo05-parent', roleUid], "upstream the owner is echo's ClusterRole, under its prefix");
  const upstreamWidgetRef = (await upstreamJson(['-n', 'echo05-shop', 'configmap', 'child-of-widget'])).metadata.ownerReferences[0];
  t.same([upstreamWidgetRef.apiVersion, upstreamWidgetRef.name], ['echo05-example.com/v1', 'parent'], "upstream the owner is in echo's CRD group");

  await ok(echo, ['delete', 'clusterrole', 'parent']);
  await ok(echo, ['-n', 'shop', 'delete', 'widget', 'parent']);
  t.ok(await goneEventually(echo, ['-n', 'shop', 'configmap', 'child-of-role']), 'deleting the ClusterRole collected its child');
  t.ok(await goneEventually(echo, ['-n', 'shop', 'configmap', 'child-of-widget']), 'deleting the Widget collected its child');
  for (const name of ['child-of-role', 'child-of-widget']) {
    t.equal((await getJson(foxtrot, ['-n', 'shop', 'configmap', name])).data.owner, 'foxtrot', `foxtr6's ${name} is untouched`);
  }
  t.ok(await exists(foxtrot, ['clusterrole', 'parent']), 'foxtr6\'s ClusterRole "parent" is untouched');
  t.ok(await exists(foxtrot, ['-n', 'shop', 'widget', 'parent']), 'foxtr6\'s Widget "parent" is untouched');
});

t.test("an owner reference cannot point at the other tenant's object", async (t) => {
  // The worst case: echo knows the uid of foxtr6's ClusterRole and names it by its upstream name.
  const foxtrotReader = await upstreamJson(['clusterrole', 'foxtr6-reader']);
  const stolen = { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', name: 'foxtr6-reader', uid: foxtrotReader.metadata.uid };
  const created = JSON.parse(
    await ok(echo, ['create', '-f', '-', '-o', 'json'], JSON.stringify(configMap('sneaky', { owner: 'echo' }, { ownerReferences: [stolen] }))),
  );
  t.same(created.metadata.ownerReferences, [stolen], 'echo reads back the reference it wrote');
  // In echo's cluster no ClusterRole "foxtr6-reader" exists (upstream the reference names echo05-foxtr6-reader): the
  // collector treats the child as orphaned. Had the reference reached foxtr6's ClusterRole, the child would live on.
  t.ok(await goneEventually(echo, ['-n', 'shop', 'configmap', 'sneaky']), 'the child of a ClusterRole echo does not have was collected');
  const after = await getJson(foxtrot, ['clusterrole', 'reader']);
  t.equal(after.metadata.uid, foxtrotReader.metadata.uid, 'foxtr6\'s ClusterRole "reader" is the same object');
  t.same(after.metadata.labels, { owner: 'foxtrot' });
});

t.test("RBAC bindings name the tenant's users, groups, service accounts and ClusterRoles", async (t) => {
  const subjects = [
    { apiGroup: RBAC, kind: 'User', name: 'x' },
    { apiGroup: RBAC, kind: 'Group', name: 'g' },
    { kind: 'ServiceAccount', name: 'sa', namespace: 'ns' },
  ];
  const roleRef = { apiGroup: RBAC, kind: 'ClusterRole', name: 'reader' };
  await apply(echo, { apiVersion: `${RBAC}/v1`, kind: 'RoleBinding', metadata: { name: 'readers', namespace: 'shop' }, roleRef, subjects });
  await apply(echo, { apiVersion: `${RBAC}/v1`, kind: 'ClusterRoleBinding', metadata: { name: 'readers' }, roleRef, subjects: subjects.slice(0, 2) });

  const upstream = await upstreamJson(['-n', 'echo05-shop', 'rolebinding', 'readers']);
  t.same(
    upstream.subjects.map((s: { name: string; namespace?: string }) => [s.name, s.namespace]),
    [
      ['echo05-x', undefined],
      ['echo05:g', undefined],
      ['sa', 'echo05-ns'],
    ],
    "upstream: echo's user, group and service account",
  );
  t.equal(upstream.roleRef.name, 'echo05-reader', "upstream: echo's ClusterRole");
  const upstreamCluster = await upstreamJson([STORED_BINDINGS, 'echo05-readers']);
  t.same(
    [upstreamCluster.roleRef.name, ...upstreamCluster.subjects.map((s: { name: string }) => s.name)],
    ['echo05-reader', 'tenantgate:cluster:echo05-x', 'tenantgate:cluster:echo05:g'],
    "upstream the ClusterRoleBinding is tenantgate's custom resource binding shadow identities, which grant nothing cluster-wide",
  );

  const seen = await getJson(echo, ['-n', 'shop', 'rolebinding', 'readers']);
  t.same([seen.roleRef, seen.subjects], [roleRef, subjects], 'echo reads its binding as it wrote it');
  const seenCluster = await getJson(echo, ['clusterrolebinding', 'readers']);
  t.same([seenCluster.roleRef, seenCluster.subjects], [roleRef, subjects.slice(0, 2)]);
  const wide = await ok(echo, ['-n', 'shop', 'get', 'rolebinding', 'readers', '-o', 'wide']);
  t.match(wide, /readers\s+ClusterRole\/reader\s.*\bx\s+g\s+ns\/sa/, "kubectl get -o wide shows the role and subjects in echo's names");
  t.notMatch(wide, /echo05/, 'no upstream name in the table');
  const listed = await ok(echo, ['-n', 'shop', 'get', 'rolebindings']);
  t.notMatch(listed, /tenantgate/, "tenantgate's own grant in the namespace is not listed, as getting it answers 404");
  t.notOk(await exists(foxtrot, ['-n', 'shop', 'rolebinding', 'readers']), 'foxtr6 has no such RoleBinding');
  t.notOk(await exists(foxtrot, ['clusterrolebinding', 'readers']), 'foxtr6 has no such ClusterRoleBinding');
});

t.test("a binding grants only what the tenant has, to the tenant's own users", async (t) => {
  const canBob = async (args: string[]) => (await asBob(['auth', 'can-i', ...args])).stdout.trim();
  t.equal(await canBob(['list', 'configmaps', '-n', 'shop']), 'no', 'bob starts with nothing');
  await ok(echo, ['-n', 'shop', 'create', 'rolebinding', 'bob-reads', '--clusterrole=reader', '--user=bob']);
  t.equal(await canBob(['list', 'configmaps', '-n', 'shop']), 'yes', 'bound to echo\'s "reader" in shop');
  t.equal(await canBob(['list', 'configmaps', '-n', 'default']), 'no', 'and nowhere else');
  const bobSees = await asBob(['-n', 'shop', 'get', 'configmap', 'settings', '-o', 'jsonpath={.data.owner}']);
  t.equal(bobSees.stdout, 'echo', "bob reads echo's configmap");

  // A ClusterRoleBinding to foxtr6's ClusterRole by its upstream name names echo's own "foxtr6-reader": none exists.
  const steal = {
    apiVersion: `${RBAC}/v1`,
    kind: 'ClusterRoleBinding',
    metadata: { name: 'steal' },
    roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: 'foxtr6-reader' },
    subjects: [{ apiGroup: RBAC, kind: 'User', name: 'bob' }],
  };
  // As in any cluster, an admin (who may bind) can bind a ClusterRole that does not exist yet: echo's own "foxtr6-reader".
  await apply(echo, steal);
  t.equal((await getJson(echo, ['clusterrolebinding', 'steal'])).roleRef.name, 'foxtr6-reader', 'echo reads back its binding to its own "foxtr6-reader"');
  t.equal((await upstreamJson([STORED_BINDINGS, 'echo05-steal'])).roleRef.name, 'echo05-foxtr6-reader', "upstream it names echo's ClusterRole of that name");
  const bindings = [...(await upstreamJson(['clusterrolebindings'])).items, ...(await upstreamJson([STORED_BINDINGS])).items];
  const toFoxtrot = bindings.filter((b: { roleRef: { name: string }; subjects?: { name: string }[] }) => b.roleRef.name === 'foxtr6-reader');
  t.same(toFoxtrot, [], "upstream nothing is bound to foxtr6's ClusterRole");
  // (kubectl adds the evaluation error: the binding's expansion names a ClusterRole that does not exist.)
  t.match(
    await canBob(['list', 'configmaps', '-n', 'default']),
    /^no( - RBAC: clusterrole\.rbac\.authorization\.k8s\.io "foxtr6-reader" not found)?$/,
    'bob gained nothing',
  );
});

t.test("a service account bound cluster-wide reads in its tenant's namespaces only, even with its token straight at the upstream", async (t) => {
  await ok(foxtrot, ['-n', 'shop', 'create', 'secret', 'generic', 'private', '--from-literal=password=foxtrot-only']);
  await ok(echo, ['-n', 'shop', 'create', 'serviceaccount', 'robot']);
  await ok(echo, ['-n', 'shop', 'create', 'secret', 'generic', 'mine', '--from-literal=password=echo-only']);
  await apply(echo, {
    apiVersion: `${RBAC}/v1`,
    kind: 'ClusterRole',
    metadata: { name: 'secret-reader' },
    rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list'] }],
  });
  await ok(echo, ['create', 'clusterrolebinding', 'robot-reads', '--clusterrole=secret-reader', '--serviceaccount=shop:robot']);
  const upstream = await upstreamJson([STORED_BINDINGS, 'echo05-robot-reads']);
  t.same(
    upstream.subjects.map((s: { kind: string; name: string }) => [s.kind, s.name]),
    [['User', 'tenantgate:cluster:system:serviceaccount:echo05-shop:robot']],
    'upstream a shadow user',
  );
  const seen = await getJson(echo, ['clusterrolebinding', 'robot-reads']);
  t.same(seen.subjects, [{ kind: 'ServiceAccount', name: 'robot', namespace: 'shop' }], 'echo reads back the service account it bound');

  // The token, used straight against the upstream, reads echo's namespaces and nothing of foxtr6's.
  const token = (await ok(echo, ['-n', 'shop', 'create', 'token', 'robot'])).trim();
  const kubeconfig = join(scratch, 'robot.kubeconfig');
  writeFileSync(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'upstream', cluster: { server: stack.rig.server, 'certificate-authority-data': Buffer.from(stack.rig.caPem).toString('base64') } }],
      users: [{ name: 'robot', user: { token } }],
      contexts: [{ name: 'robot', context: { cluster: 'upstream', user: 'robot' } }],
      'current-context': 'robot',
    }),
  );
  const robot = (args: string[]) => stack.rig.kubectl([`--cache-dir=${join(scratch, 'cache', 'robot')}`, ...args], { kubeconfig });
  // (Raw paths: the upstream's discovery is not for tenant identities, see --confine-upstream-discovery.)
  const own = await poll(async () => {
    const r = await robot(['get', '--raw', '/api/v1/namespaces/echo05-shop/secrets/mine']);
    return r.code === 0 ? r : undefined;
  });
  t.equal(
    JSON.parse(own?.stdout ?? '{}').data?.password,
    Buffer.from('echo-only').toString('base64'),
    "the binding grants in echo's namespace (its expansion there)",
  );
  const theirs = await robot(['get', '--raw', '/api/v1/namespaces/foxtr6-shop/secrets/private']);
  t.not(theirs.code, 0, "but reads no secret of foxtr6's");
  t.match(theirs.stderr, /Forbidden/);
  const everywhere = await robot(['get', '--raw', '/api/v1/secrets']);
  t.match(everywhere.stderr, /Forbidden/, 'nor lists secrets across namespaces');
  const expansions = await stack.kubectlDirect([
    'get',
    'rolebindings',
    '-A',
    '-o',
    'name',
    '--field-selector',
    'metadata.name=tenantgate:crb:echo05-robot-reads',
  ]);
  t.ok(expansions.stdout.trim().split('\n').length >= 4, `one expansion per echo namespace: ${expansions.stdout}`);
  t.notMatch(await ok(echo, ['-n', 'shop', 'get', 'rolebindings']), /tenantgate/, 'echo does not see the expansions');
});

t.test("webhook configurations apply to the tenant's namespaces only, and read back as written", async (t) => {
  const webhook = (name: string, failurePolicy: string, extra: object = {}) => ({
    name,
    clientConfig: { service: { namespace: 'shop', name: 'hook', path: '/admit' } },
    rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] }],
    failurePolicy,
    sideEffects: 'None',
    admissionReviewVersions: ['v1'],
    timeoutSeconds: 2,
    ...extra,
  });
  const ownSelector = { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['shop'] }] };
  const mutating = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: 'stamp' },
    webhooks: [webhook('stamp.example.com', 'Ignore', { namespaceSelector: ownSelector })],
  };
  await apply(echo, mutating);
  const seen = await getJson(echo, ['mutatingwebhookconfiguration', 'stamp']);
  t.equal(seen.metadata.name, 'stamp');
  t.same(seen.webhooks[0].clientConfig.service, { namespace: 'shop', name: 'hook', path: '/admit', port: 443 }, 'the service as echo named it');
  t.same(seen.webhooks[0].namespaceSelector, ownSelector, "echo's own selector, nothing forced on it");
  t.same(seen.webhooks[0].objectSelector, {}, 'no object selector, as echo wrote none');
  const upstream = await upstreamJson(['mutatingwebhookconfiguration', 'echo05-stamp']);
  const hook = upstream.webhooks[0];
  t.equal(hook.clientConfig.service.namespace, 'echo05-shop', "upstream the service is in echo's namespace");
  t.same(
    hook.namespaceSelector,
    { matchLabels: { 'kubezoo.io/tenant': 'echo05' }, matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['echo05-shop'] }] },
    "upstream: echo's namespaces only",
  );
  t.same(hook.objectSelector, { matchLabels: { 'kubezoo.io/tenant': 'echo05' } }, "upstream: echo's objects only");
  t.same(JSON.parse(await ok(foxtrot, ['get', 'mutatingwebhookconfigurations', '-o', 'json'])).items, [], 'foxtr6 sees no webhook');

  // A webhook that fails every configmap create, with no selector at all: it breaks echo, never foxtr6.
  await apply(echo, {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: 'wall' },
    webhooks: [webhook('wall.example.com', 'Fail')],
  });
  let n = 0;
  const blocked = await poll(async () => {
    const r = await as(echo, ['-n', 'shop', 'create', 'configmap', `probe-${++n}`]);
    return r.code === 0 ? undefined : r;
  });
  t.ok(blocked, "echo's configmap creates fail once the webhook is in force");
  t.match(blocked?.stderr, /failed calling webhook "wall\.example\.com".*hook\.shop\.svc/, "calling echo's service in shop");
  t.notMatch(blocked?.stderr, /echo05/, "the error is in echo's names");
  for (const namespace of ['shop', 'default']) {
    const r = await as(foxtrot, ['-n', namespace, 'create', 'configmap', 'untouched']);
    t.equal(r.code, 0, `foxtr6 creates configmaps in its ${namespace}: ${r.stderr}`);
  }
  t.same(JSON.parse(await ok(foxtrot, ['get', 'validatingwebhookconfigurations', '-o', 'json'])).items, []);
  await ok(echo, ['delete', 'validatingwebhookconfiguration', 'wall']);
  await ok(echo, ['delete', 'mutatingwebhookconfiguration', 'stamp']);
  t.ok(
    await poll(async () => ((await as(echo, ['-n', 'shop', 'create', 'configmap', `probe-${++n}`])).code === 0 ? true : undefined)),
    'echo creates again without it',
  );
});

t.test("access reviews answer about the tenant's own users and namespaces", async (t) => {
  for (const args of [
    ['create', 'configmaps', '-n', 'shop'],
    ['delete', 'clusterroles'],
    ['create', 'widgets.example.com', '-n', 'shop'],
  ]) {
    t.equal((await as(echo, ['auth', 'can-i', ...args])).stdout.trim(), 'yes', `echo's admin: can-i ${args.join(' ')}`);
  }
  const review = (spec: object) => JSON.stringify({ apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec });
  const ask = async (tenant: TestTenant, spec: object) => JSON.parse(await ok(tenant, ['create', '-f', '-', '-o', 'json'], review(spec)));

  const mine = await ask(echo, { user: 'x', resourceAttributes: { verb: 'list', resource: 'configmaps', namespace: 'shop' } });
  t.equal(mine.status.allowed, true, 'echo\'s user x may list configmaps in shop (the "readers" binding)');
  t.match(
    mine.status.reason,
    /^RBAC: allowed by (RoleBinding "readers\/shop"|ClusterRoleBinding "readers") of ClusterRole "reader" to User "x"$/,
    "the reason in echo's names",
  );

  // foxtr6's admin on foxtr6's namespace, as both are named upstream: upstream says yes to that question.
  const question = { user: 'foxtr6-admin', resourceAttributes: { verb: 'get', resource: 'secrets', namespace: 'foxtr6-shop', name: 'private' } };
  const direct = await stack.kubectlDirect(['create', '-f', '-', '-o', 'json'], { input: review(question) });
  t.equal(JSON.parse(direct.stdout).status.allowed, true, 'the question has a yes upstream');
  const asked = await ask(echo, question);
  t.same(asked.spec.user, 'foxtr6-admin', 'echo reads back the question it asked');
  t.notOk(asked.status.allowed, 'through tenantgate it is about echo\'s own "foxtr6-admin": no');
  t.notMatch(JSON.stringify(asked.status), /foxtr6|tenant-admin/, "the answer names nothing of foxtr6's");
  const byGroup = await ask(echo, { groups: ['system:masters'], resourceAttributes: { verb: 'get', resource: 'secrets', namespace: 'shop' } });
  t.notOk(byGroup.status.allowed, 'echo\'s group "system:masters" is no upstream administrator');
});

t.test("a token review shows the tenant's own service account, and nothing to the other tenant", async (t) => {
  const token = (await ok(echo, ['-n', 'shop', 'create', 'token', 'robot'])).trim();
  t.match(token, /^ey/, 'kubectl create token works through tenantgate');
  const review = JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } });
  const mine = JSON.parse(await ok(echo, ['create', '-f', '-', '-o', 'json', '--validate=false'], review));
  t.equal(mine.status.authenticated, true);
  t.equal(mine.status.user.username, 'system:serviceaccount:shop:robot', 'echo sees its service account by its own names');
  t.same(mine.status.user.groups.toSorted(), ['system:authenticated', 'system:serviceaccounts', 'system:serviceaccounts:shop']);
  t.notMatch(JSON.stringify(mine.status), /echo05/);
  const upstream = JSON.parse((await stack.kubectlDirect(['create', '-f', '-', '-o', 'json'], { input: review })).stdout);
  t.equal(upstream.status.user.username, 'system:serviceaccount:echo05-shop:robot', "upstream the same token is echo05-shop's");

  const theirs = JSON.parse(await ok(foxtrot, ['create', '-f', '-', '-o', 'json', '--validate=false'], review));
  t.notOk(theirs.status.authenticated, "for foxtr6 echo's token authenticates no one");
  t.notMatch(JSON.stringify(theirs.status), /echo05|robot|serviceaccount|shop/, 'and says nothing of whose it is');
});

t.test('kubectl explain shows each tenant its own schema of the same kind', async (t) => {
  for (const [tenant, field, other] of [
    [echo, 'colour', 'flavour'],
    [foxtrot, 'flavour', 'colour'],
  ] as const) {
    // The apiserver publishes a new CRD's schema a few seconds after it is established.
    const explained = await poll(async () => {
      const r = await as(tenant, ['explain', 'widgets.spec']);
      return r.code === 0 && r.stdout.includes(field) ? r.stdout : undefined;
    });
    t.ok(explained, `${tenant.id}: explain widgets.spec answers with its field`);
    t.match(explained, /^GROUP:\s+example\.com$/m, 'in the group as the tenant named it');
    t.match(explained, new RegExp(`${field}\\s+<string>`));
    t.notMatch(explained, new RegExp(other), "nothing of the other tenant's schema");
    t.notMatch(explained, /echo05|foxtr6/);
    const kind = await as(tenant, ['explain', 'widgets']);
    t.match(kind.stdout, new RegExp(`A widget of ${tenant === echo ? 'echo' : 'foxtrot'}\\.`), "the kind's own description");
  }
});

t.test("kubectl caches: one person holding both tenants' kubeconfigs still gets each tenant's own schema", async (t) => {
  // One cache dir for both (kubectl's default, ~/.kube/cache): kubectl keys it by server address, which is the same.
  const shared = (tenant: TestTenant, args: string[]) => tenant.kubectl([`--cache-dir=${join(scratch, 'cache', 'shared')}`, ...args]);
  for (const [tenant, field, other] of [
    [echo, 'colour', 'flavour'],
    [foxtrot, 'flavour', 'colour'],
    [echo, 'colour', 'flavour'],
  ] as const) {
    const r = await shared(tenant, ['explain', 'widgets.spec']);
    t.equal(r.code, 0, r.stderr);
    t.match(r.stdout, new RegExp(`${field}\\s+<string>`), `${tenant.id} sees its own field`);
    t.notMatch(r.stdout, new RegExp(other), `and not the other tenant's, cached by the other's kubectl`);
  }
});

t.test("deleting a collection deletes only the tenant's objects", async (t) => {
  for (const [tenant, owner] of [
    [echo, 'echo'],
    [foxtrot, 'foxtrot'],
  ] as const) {
    for (const name of ['c1', 'c2']) await apply(tenant, configMap(name, { owner }, { labels: { batch: 'one' } }));
    for (const name of ['lab1', 'lab2'])
      await apply(tenant, { apiVersion: `${RBAC}/v1`, kind: 'ClusterRole', metadata: { name, labels: { owner: 'x' } }, rules: [] });
  }
  const names = async (tenant: TestTenant, args: string[]) =>
    (await ok(tenant, ['get', ...args, '-o', 'name']))
      .split('\n')
      .filter((l) => l !== '')
      .sort();

  // The deletecollection verb itself (kubectl delete --all lists and deletes one by one).
  const deleted = JSON.parse(await ok(echo, ['delete', '--raw', '/api/v1/namespaces/shop/configmaps?labelSelector=batch%3Done']));
  t.same(
    deleted.items.map((i: { metadata: { namespace: string; name: string } }) => `${i.metadata.namespace}/${i.metadata.name}`).sort(),
    ['shop/c1', 'shop/c2'],
    "the answer lists what went, in echo's names",
  );
  t.same(await names(echo, ['-n', 'shop', 'configmaps', '-l', 'batch=one']), [], "echo's batch is gone");
  t.same(await names(foxtrot, ['-n', 'shop', 'configmaps', '-l', 'batch=one']), ['configmap/c1', 'configmap/c2'], "foxtr6's same-named batch is not");

  const all = await ok(echo, ['-n', 'shop', 'delete', 'configmaps', '--all']);
  t.match(all, /configmap "settings" deleted/);
  t.equal((await getJson(foxtrot, ['-n', 'shop', 'configmap', 'settings'])).data.owner, 'foxtrot', 'kubectl delete --all left foxtr6\'s "settings"');

  await ok(echo, ['delete', 'clusterroles', '-l', 'owner=x']);
  t.same(await names(echo, ['clusterroles', '-l', 'owner=x']), [], "echo's labelled ClusterRoles are gone");
  t.same(
    await names(foxtrot, ['clusterroles', '-l', 'owner=x']),
    ['clusterrole.rbac.authorization.k8s.io/lab1', 'clusterrole.rbac.authorization.k8s.io/lab2'],
    "foxtr6's are not",
  );

  // Every ClusterRole of echo's, with no selector at all: upstream the tenant label is the selector.
  await ok(echo, ['delete', '--raw', '/apis/rbac.authorization.k8s.io/v1/clusterroles']);
  // (The built-in ones went too, as in any cluster; tenantgate puts them back: they are left out here.)
  t.same(withoutBuiltinRoles(await names(echo, ['clusterroles'])), [], 'echo has no ClusterRole of its own left');
  t.equal(withoutBuiltinRoles(await names(foxtrot, ['clusterroles'])).length, 4, 'foxtr6 still has its four (reader, parent, lab1, lab2)');
  const upstream = await stack.kubectlDirect(['get', 'clusterrole', 'cluster-admin', 'tenantgate:tenant-cluster-scope', '-o', 'name']);
  t.equal(upstream.code, 0, "the upstream's own ClusterRoles are untouched");
  // And every ClusterRoleBinding of echo's: the shared bindings its admin's rights come from carry no tenant label, so
  // the deletecollection neither reaches them nor is refused on them.
  await ok(echo, ['delete', '--raw', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings']);
  for (const { object } of SHARED_TENANT_RBAC.filter((shared) => shared.object.kind === 'ClusterRoleBinding')) {
    const binding = await stack.kubectlDirect(['get', 'clusterrolebinding', object.metadata.name, '-o', 'jsonpath={.metadata.resourceVersion}']);
    t.equal(binding.code, 0, `${object.metadata.name} is still there upstream`);
  }
  t.same(await names(echo, ['-n', 'shop', 'configmaps']), ['configmap/kube-root-ca.crt'], "and echo's admin still reads its namespace");
});

t.test("a refused exec names the tenant's namespace and user, never the upstream ones", async (t) => {
  const missing = await as(echo, ['-n', 'shop', 'exec', 'nowhere', '--', 'true']);
  t.not(missing.code, 0);
  t.match(missing.stderr, /pods "nowhere" not found/);
  t.notMatch(missing.stderr, /echo05/);

  // bob may read pods but not exec into them: the refusal comes from the upstream over the upgrade path.
  await ok(echo, ['-n', 'shop', 'run', 'web', '--image=nginx:1.27', '--restart=Never']);
  await ok(echo, ['-n', 'shop', 'create', 'role', 'pod-reader', '--verb=get,list', '--resource=pods']);
  await ok(echo, ['-n', 'shop', 'create', 'rolebinding', 'bob-pods', '--role=pod-reader', '--user=bob']);
  for (const subresource of ['exec', 'attach']) {
    const args = subresource === 'exec' ? ['exec', 'web', '--', 'true'] : ['attach', 'web'];
    const refused = await asBob(['-n', 'shop', ...args]);
    t.not(refused.code, 0, `bob's ${subresource} is refused`);
    t.match(
      refused.stderr,
      new RegExp(`pods "web" is forbidden: User "bob" cannot create resource "pods/${subresource}" in API group "" in the namespace "shop"`),
    );
    t.notMatch(refused.stderr, /echo05/, 'no upstream name in the error');
  }
});

t.test('a JSON patch cannot take the tenant selector off a webhook', async (t) => {
  await apply(echo, {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name: 'patched' },
    webhooks: [
      {
        name: 'patched.example.com',
        clientConfig: { service: { namespace: 'shop', name: 'hook' } },
        rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] }],
        failurePolicy: 'Ignore',
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
      },
    ],
  });
  const patch = [
    { op: 'replace', path: '/webhooks/0/namespaceSelector', value: {} },
    { op: 'replace', path: '/webhooks/0/objectSelector', value: {} },
  ];
  await as(echo, ['patch', 'validatingwebhookconfiguration', 'patched', '--type=json', '-p', JSON.stringify(patch)]);
  const hook = (await upstreamJson(['validatingwebhookconfiguration', 'echo05-patched'])).webhooks[0];
  await stack.kubectlDirect(['delete', 'validatingwebhookconfiguration', 'echo05-patched']);
  t.same(hook.namespaceSelector.matchLabels, { 'kubezoo.io/tenant': 'echo05' }, "upstream the webhook still sees only echo's namespaces");
  t.same(hook.objectSelector.matchLabels, { 'kubezoo.io/tenant': 'echo05' }, "and only echo's objects");
});

t.test("a merge patch of owner references names the tenant's owner", async (t) => {
  await apply(echo, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name: 'patch-parent' }, rules: [] });
  await apply(echo, configMap('patch-child', { owner: 'echo' }));
  const uid = (await getJson(echo, ['clusterrole', 'patch-parent'])).metadata.uid;
  const patch = { metadata: { ownerReferences: [{ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', name: 'patch-parent', uid }] } };
  const patched = await as(echo, ['-n', 'shop', 'patch', 'configmap', 'patch-child', '--type=merge', '-p', JSON.stringify(patch)]);
  // Unconverted, the owner would name no upstream ClusterRole "patch-parent": the collector would delete the child.
  t.equal(patched.code, 0, `kubectl patch succeeds: ${patched.stderr.trim()}`);
  const upstream = await stack.kubectlDirect(['-n', 'echo05-shop', 'get', 'configmap', 'patch-child', '-o', 'jsonpath={.metadata.ownerReferences[0].name}']);
  t.equal(upstream.stdout, 'echo05-patch-parent', "upstream the owner is echo's ClusterRole (else the collector deletes the child)");
});

// kubectl validates kinds without an OpenAPI v3 schema (reviews, List) against OpenAPI v2, which it reads as protobuf only.
t.test('kubectl create -f of a review validates', async (t) => {
  const review = JSON.stringify({
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SelfSubjectAccessReview',
    spec: { resourceAttributes: { verb: 'get', resource: 'pods', namespace: 'shop' } },
  });
  const r = await as(echo, ['create', '-f', '-', '-o', 'json'], review);
  t.equal(r.code, 0, r.stderr);
  t.equal(JSON.parse(r.stdout).status?.allowed, true, "echo's admin may get pods in its shop");
});

t.test("kubectl apply -f of a List validates each item against the tenant's own schemas", async (t) => {
  const list = (spec: object) =>
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: [configMap('listed', { from: 'a list' }), { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'listed', namespace: 'shop' }, spec }],
    });
  const refused = await as(echo, ['apply', '-f', '-'], list({ flavour: "foxtrot's field" }));
  t.not(refused.code, 0, "a widget with foxtrot's field is refused");
  t.match(refused.stderr, /unknown field "flavour" in com\.example\.v1\.Widget\.spec/, "by echo's own Widget schema, in echo's names");
  t.notMatch(refused.stderr, /echo05|foxtr6/);
  t.notOk(await exists(echo, ['-n', 'shop', 'configmap', 'listed']), 'before any item of the list was created');
  const applied = await as(echo, ['apply', '-f', '-'], list({ colour: 'blue' }));
  t.equal(applied.code, 0, applied.stderr);
  t.equal((await getJson(echo, ['-n', 'shop', 'widget', 'listed'])).spec.colour, 'blue', 'a valid list is applied');
  t.equal((await getJson(echo, ['-n', 'shop', 'configmap', 'listed'])).data.from, 'a list');
});

t.test("OpenAPI v2 as protobuf holds the tenant's own schemas and nothing of the other tenant", async (t) => {
  const answer = await h1Request(credentialsOf(echo.kubeconfig), 'GET', '/openapi/v2', {
    headers: { accept: 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf' },
  });
  t.equal(answer.status, 200);
  t.equal(answer.headers['content-type'], 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf', 'the type kube-apiserver answers with');
  t.match(answer.body, /The colour of echo's widget\./, "echo's widget schema");
  t.notMatch(answer.body, /foxtr6|flavour|foxtrot/, "nothing of foxtrot's");
  t.notMatch(answer.body, /echo05-/, "nor echo's upstream names");
});

t.test("a tenant's aggregate-to-view ClusterRole never feeds the upstream's own view role", async (t) => {
  // (A tenant cannot make aggregated roles of its own: the upstream wants cluster-admin for an aggregationRule.)
  const marker = 'echo-aggregated-marker';
  await apply(echo, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'feeds-view', labels: { 'rbac.authorization.k8s.io/aggregate-to-view': 'true' } },
    rules: [{ apiGroups: [''], resources: ['secrets'], resourceNames: [marker], verbs: ['get'] }],
  });
  const labels = (await getJson(echo, ['clusterrole', 'feeds-view'])).metadata.labels;
  t.same(labels, { 'rbac.authorization.k8s.io/aggregate-to-view': 'true' }, 'echo reads its label as it wrote it');
  // The aggregation controller updates view within a second of a matching role; give it five.
  const aggregated = await poll(async () => (JSON.stringify((await upstreamJson(['clusterrole', 'view'])).rules).includes(marker) ? true : undefined), {
    withinMs: 5_000,
  });
  t.notOk(aggregated, "the upstream's own view role did not aggregate echo's rule");
});

// The tenant lifecycle against a real kube-apiserver and kube-controller-manager, driven in-process:
// Ready at once, the birth state written upstream on the first request, what is deleted upstream comes back, and
// deletion removes exactly the tenant's objects.
// Its own rig (not a shared one): it crashes kube-apiserver and starts it again.
import t from 'tap';
import { startRig, type Rig } from '../../lib/rig/harness.ts';
import { TENANT_CLUSTER_SCOPE_GROUP } from '../../lib/auth/impersonation.ts';
import { TENANT_LABEL } from '../../lib/convert/prefix.ts';
import { upstreamJson } from '../../lib/upstream/client.ts';
import { UpstreamPool } from '../../lib/upstream/pool.ts';
import { BIRTH_STATE_CONDITION, conditionOf } from '../../lib/tenants/conditions.ts';
import { TenantLifecycle } from '../../lib/tenants/lifecycle.ts';
import { MemoryTenantStore } from '../../lib/tenants/memory-store.ts';
import { TENANT_API_VERSION, TENANT_CLEANUP_FINALIZER, type Tenant, type TenantEvent } from '../../lib/tenants/tenant.ts';

let rig: Rig;
let pool: UpstreamPool;
let store: MemoryTenantStore;
let lifecycle: TenantLifecycle;
/** The built-in namespaces the lifecycle handed to its namespaceCreated hook (quota shares and class annotations). */
const namespacesPrepared: string[] = [];

t.before(async () => {
  rig = await startRig({ controllers: true });
  pool = new UpstreamPool(rig.admin);
  store = new MemoryTenantStore();
  lifecycle = new TenantLifecycle({
    store,
    pool,
    resyncIntervalMs: 30_000,
    cleanupIntervalMs: 500,
    clusterAddress: IN_CLUSTER_ADDRESS,
    // Slow on purpose: the first request must wait for it.
    namespaceCreated: async (_id, namespace) => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      namespacesPrepared.push(namespace);
    },
  });
  await lifecycle.start();
});
t.teardown(async () => {
  await lifecycle?.stop();
  pool?.close();
  await rig?.stop();
});

const RBAC = '/apis/rbac.authorization.k8s.io/v1';
const STORED_CLUSTER_BINDINGS = '/apis/rbac.tenantgate.kubezoo.io/v1/clusterrolebindings';
/** Not loopback (which the apiserver refuses in an EndpointSlice): where tenants' workloads would reach tenantgate. */
const IN_CLUSTER_ADDRESS = { host: '10.96.7.7', port: 6443 };

async function status(path: string): Promise<number> {
  return (await upstreamJson(pool, 'GET', path)).status;
}

async function create(path: string, body: object): Promise<void> {
  const answer = await upstreamJson(pool, 'POST', path, body);
  if (answer.status !== 201) throw new Error(`POST ${path}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`);
}

/** Polls until `check` is true; returns the milliseconds it took. */
async function within(what: string, timeoutMs: number, check: () => boolean | Promise<boolean>): Promise<number> {
  const started = performance.now();
  for (;;) {
    if (await check()) return Math.round(performance.now() - started);
    if (performance.now() - started > timeoutMs) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function addTenant(id: string): Promise<Tenant> {
  return store.create({ apiVersion: TENANT_API_VERSION, kind: 'Tenant', metadata: { name: id, finalizers: [TENANT_CLEANUP_FINALIZER] }, spec: {} });
}

/** What the Tenant API does on `kubectl delete tenant`: deletionTimestamp set, finalizer kept. */
async function markDeleted(id: string): Promise<void> {
  const tenant = structuredClone(store.get(id)!);
  tenant.metadata.deletionTimestamp = new Date().toISOString();
  await store.update(tenant);
}

const isReady = (id: string) => conditionOf(store.get(id) ?? ({} as Tenant), 'Ready')?.status === 'True';

/** A tenant Ready and born: what its first request through tenantgate asks of the lifecycle (pipeline.ts awaitBirth). */
async function bornTenant(id: string, timeoutMs = 10_000): Promise<void> {
  await addTenant(id);
  await within(`${id} Ready`, timeoutMs, () => isReady(id));
  await lifecycle.whenBorn(id);
}

t.test('a new tenant is Ready at once and costs the upstream nothing until its first request', async (t) => {
  const created = performance.now();
  await addTenant('idle01');
  const ms = await within('idle01 Ready', 10_000, () => isReady('idle01'));
  t.comment(`create → Ready=True: ${ms} ms (${Math.round(performance.now() - created)} ms with the store write)`);
  const tenant = store.get('idle01')!;
  t.equal(tenant.status?.online, true, 'status.online');
  t.equal(conditionOf(tenant, 'Ready')?.reason, 'Created');
  t.equal(conditionOf(tenant, BIRTH_STATE_CONDITION)?.status, 'False', 'its birth state is not upstream');
  t.equal(conditionOf(tenant, BIRTH_STATE_CONDITION)?.reason, 'Deferred');
  const labelled = `labelSelector=${encodeURIComponent(`${TENANT_LABEL}=idle01`)}`;
  for (const collection of ['/api/v1/namespaces', `${RBAC}/clusterroles`, STORED_CLUSTER_BINDINGS, '/api/v1/services']) {
    t.same((await upstreamJson(pool, 'GET', `${collection}?${labelled}`)).body.items, [], `no ${collection.split('/').at(-1)} of the tenant upstream`);
  }
  const started = performance.now();
  await lifecycle.whenBorn('idle01');
  t.comment(`first request's wait for the birth state: ${Math.round(performance.now() - started)} ms`);
  t.equal(conditionOf(store.get('idle01')!, BIRTH_STATE_CONDITION)?.status, 'True', 'born once a request asked');
  t.same(
    namespacesPrepared.filter((namespace) => namespace.startsWith('idle01-')).sort(),
    ['idle01-default', 'idle01-kube-node-lease', 'idle01-kube-public', 'idle01-kube-system'],
    "each built-in namespace got what the tenant's quota and classes put on it before the request went on",
  );
  t.equal(await status('/api/v1/namespaces/idle01-kube-system'), 200, 'its built-in namespaces upstream');
  t.equal(lifecycle.whenBorn('idle01'), null, 'later requests wait for nothing');
});

t.test('a tenant born on its first request has its namespaces and RBAC upstream', async (t) => {
  await bornTenant('life01');
  const tenant = store.get('life01')!;
  t.equal(conditionOf(tenant, BIRTH_STATE_CONDITION)?.reason, 'Bootstrapped');
  for (const ns of ['default', 'kube-system', 'kube-public', 'kube-node-lease']) {
    const answer = await upstreamJson(pool, 'GET', `/api/v1/namespaces/life01-${ns}`);
    t.equal(answer.status, 200, `namespace life01-${ns} exists`);
    t.equal(answer.body.metadata.labels[TENANT_LABEL], 'life01', 'with the tenant label');
    t.equal(await status(`${RBAC}/namespaces/life01-${ns}/rolebindings/tenantgate:tenant-admin`), 200, `admin RoleBinding in life01-${ns}`);
  }
  t.equal(await status(`${RBAC}/clusterroles/tenantgate:tenant-cluster-scope`), 200, 'the shared ClusterRole');
  t.equal(await status(`${RBAC}/clusterrolebindings/tenantgate:tenant-cluster-scope`), 200, 'bound once to the group of every tenant admin');
  const bindings = (await upstreamJson(pool, 'GET', `${RBAC}/clusterrolebindings`)).body.items as { metadata: { name: string } }[];
  t.same(
    bindings.map((binding) => binding.metadata.name).filter((name) => name.startsWith('tenantgate:') && name.includes('life01')),
    [],
    'tenantgate keeps no ClusterRoleBinding of its own for the tenant',
  );
  const roles = (await upstreamJson(pool, 'GET', `${RBAC}/clusterroles`)).body.items as { metadata: { name: string } }[];
  t.same(
    roles.map((role) => role.metadata.name).filter((name) => name.startsWith('tenantgate:') && name.includes('life01')),
    [],
    'nor a ClusterRole: no custom resources or signers yet',
  );
  const review = await upstreamJson(pool, 'POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
    apiVersion: 'authorization.k8s.io/v1',
    kind: 'SubjectAccessReview',
    spec: { user: 'life01-admin', groups: [TENANT_CLUSTER_SCOPE_GROUP], resourceAttributes: { verb: 'create', resource: 'namespaces' } },
  });
  t.equal(review.body.status.allowed, true, 'the admin, with the group tenantgate impersonates, may create namespaces upstream');
});

t.test('what a tenant deletes of its bootstrap objects upstream comes back within seconds', async (t) => {
  await bornTenant('life02');

  const bindingPath = `${RBAC}/namespaces/life02-default/rolebindings/tenantgate:tenant-admin`;
  t.equal((await upstreamJson(pool, 'DELETE', bindingPath)).status, 200);
  t.comment(`admin RoleBinding back in ${await within('RoleBinding back', 10_000, async () => (await status(bindingPath)) === 200)} ms`);

  const clusterBindingPath = `${RBAC}/clusterrolebindings/tenantgate:tenant-cluster-scope`;
  t.equal((await upstreamJson(pool, 'DELETE', clusterBindingPath)).status, 200);
  t.comment(`shared ClusterRoleBinding back in ${await within('ClusterRoleBinding back', 10_000, async () => (await status(clusterBindingPath)) === 200)} ms`);

  const rolePath = `${RBAC}/clusterroles/tenantgate:tenant-cluster-scope`;
  t.equal((await upstreamJson(pool, 'DELETE', rolePath)).status, 200);
  t.comment(`shared ClusterRole back in ${await within('ClusterRole back', 10_000, async () => (await status(rolePath)) === 200)} ms`);

  // A namespace the tenant made later, whose RoleBinding the request path failed to create.
  await create('/api/v1/namespaces', { metadata: { name: 'life02-apps', labels: { [TENANT_LABEL]: 'life02' } } });
  t.comment(
    `RoleBinding in a later namespace in ${await within('RoleBinding in life02-apps', 10_000, async () => (await status(`${RBAC}/namespaces/life02-apps/rolebindings/tenantgate:tenant-admin`)) === 200)} ms`,
  );
  // A namespace labelled as the tenant's but outside its prefix gets nothing.
  await create('/api/v1/namespaces', { metadata: { name: 'life02x-apps', labels: { [TENANT_LABEL]: 'life02' } } });

  const namespacePath = '/api/v1/namespaces/life02-default';
  const deleting = await upstreamJson(pool, 'DELETE', namespacePath);
  t.equal(deleting.status, 200);
  const uid = deleting.body.metadata.uid;
  const ms = await within('life02-default back', 60_000, async () => {
    const answer = await upstreamJson(pool, 'GET', namespacePath);
    return answer.status === 200 && answer.body.metadata.uid !== uid && answer.body.status.phase === 'Active';
  });
  t.comment(`deleted built-in namespace back (after it finished terminating) in ${ms} ms`);
  t.equal((await within('its RoleBinding back', 10_000, async () => (await status(bindingPath)) === 200)) >= 0, true, 'with its RoleBinding');
  t.equal(await status(`${RBAC}/namespaces/life02x-apps/rolebindings/tenantgate:tenant-admin`), 404, 'no RoleBinding outside the prefix, label or not');
});

t.test('a tenant created while the upstream is down is Ready; its first request gets 503 until the upstream is back; watches resume', async (t) => {
  await rig.stopApiserver('crash');
  try {
    await addTenant('life03');
    await within('life03 Ready', 15_000, () => isReady('life03'));
    const refused = await lifecycle.whenBorn('life03')!.then(
      () => null,
      (error: { code?: number; message: string }) => error,
    );
    t.equal(refused?.code, 503, 'the request is told to try again');
    t.notMatch(refused?.message ?? '', /life03-|namespaces\//, 'in words without upstream names');
    t.equal(conditionOf(store.get('life03')!, BIRTH_STATE_CONDITION)?.reason, 'BootstrapFailed', "the Tenant's condition says why");
  } finally {
    const restarting = performance.now();
    await rig.startApiserver();
    t.comment(`upstream ready again after ${Math.round(performance.now() - restarting)} ms`);
  }
  const reborn = performance.now();
  await within(
    'life03 born',
    60_000,
    async () =>
      (await lifecycle.whenBorn('life03')?.then(
        () => true,
        () => false,
      )) ?? true,
  );
  t.comment(`then life03 born after ${Math.round(performance.now() - reborn)} ms more`);
  t.equal(await status('/api/v1/namespaces/life03-default'), 200, 'its namespaces upstream');
  const bindingPath = `${RBAC}/clusterrolebindings/tenantgate:tenant-cluster-scope`;
  t.equal((await upstreamJson(pool, 'DELETE', bindingPath)).status, 200);
  t.comment(
    `after the restart, a deleted ClusterRoleBinding back in ${await within('binding back after restart', 30_000, async () => (await status(bindingPath)) === 200)} ms`,
  );
});

/** The same set of objects for a tenant (or any prefix), labelled as that tenant's. */
async function populate(id: string): Promise<void> {
  const labels = { [TENANT_LABEL]: id };
  await create('/api/v1/namespaces', { metadata: { name: `${id}-apps`, labels } });
  for (const ns of [`${id}-default`, `${id}-apps`]) {
    await create(`/api/v1/namespaces/${ns}/configmaps`, { metadata: { name: 'settings', labels }, data: { a: '1' } });
  }
  await create(`${RBAC}/clusterroles`, { metadata: { name: `${id}-reader`, labels }, rules: [] });
  // A tenant's ClusterRoleBinding is tenantgate's custom resource (a real one of a live tenant is moved there).
  await create(STORED_CLUSTER_BINDINGS, {
    apiVersion: 'rbac.tenantgate.kubezoo.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: `${id}-reader`, labels },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `${id}-reader` },
    subjects: [{ kind: 'User', name: `tenantgate:cluster:${id}-someone`, apiGroup: 'rbac.authorization.k8s.io' }],
  });
  await create('/apis/scheduling.k8s.io/v1/priorityclasses', { metadata: { name: `${id}-high`, labels }, value: 1000 });
  const group = `${id}-example.com`;
  await create('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
    metadata: { name: `widgets.${group}`, labels },
    spec: {
      group,
      scope: 'Namespaced',
      names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
    },
  });
  await within(`CRD widgets.${group} established`, 20_000, async () => {
    const answer = await upstreamJson(pool, 'GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.${group}`);
    return answer.body?.status?.conditions?.some((c: { type: string; status: string }) => c.type === 'Established' && c.status === 'True') === true;
  });
  await within(`widgets.${group} served`, 20_000, async () => {
    const answer = await upstreamJson(pool, 'POST', `/apis/${group}/v1/namespaces/${id}-apps/widgets`, {
      apiVersion: `${group}/v1`,
      kind: 'Widget',
      metadata: { name: 'w1', labels },
    });
    return answer.status === 201 || answer.status === 409;
  });
}

function objectsOf(id: string): string[] {
  return [
    `/api/v1/namespaces/${id}-default/configmaps/settings`,
    `/api/v1/namespaces/${id}-apps/configmaps/settings`,
    `/apis/${id}-example.com/v1/namespaces/${id}-apps/widgets/w1`,
    `/api/v1/namespaces/${id}-default`,
    `/api/v1/namespaces/${id}-apps`,
    `${RBAC}/clusterroles/${id}-reader`,
    `${STORED_CLUSTER_BINDINGS}/${id}-reader`,
    '/apis/scheduling.k8s.io/v1/priorityclasses/' + `${id}-high`,
    `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.${id}-example.com`,
  ];
}

/** Deletes the tenant and waits until the store has removed it; returns its events meanwhile. */
async function deleteAndWait(id: string, timeoutMs = 120_000): Promise<{ events: TenantEvent[]; ms: number }> {
  const events: TenantEvent[] = [];
  const unsubscribe = store.onChange((event) => event.tenant.metadata.name === id && events.push(event));
  try {
    await markDeleted(id);
    const ms = await within(`tenant ${id} removed`, timeoutMs, () => store.get(id) === undefined);
    return { events, ms };
  } finally {
    unsubscribe();
  }
}

t.test('deleting a tenant removes all its upstream objects, the Tenant last, and nothing of tenant B or the upstream', async (t) => {
  for (const id of ['dela01', 'delb01']) {
    await bornTenant(id);
    await populate(id);
  }
  // Near misses: a namespace and a ClusterRole that share the first characters but not the exact prefix.
  await create('/api/v1/namespaces', { metadata: { name: 'dela01x-y', labels: { [TENANT_LABEL]: 'dela01' } } });
  await create(`${RBAC}/clusterroles`, { metadata: { name: 'dela01', labels: { [TENANT_LABEL]: 'dela01' } }, rules: [] });
  // A platform PriorityClass under the prefix but not labelled as the tenant's: tenants cannot write PriorityClasses.
  await create('/apis/scheduling.k8s.io/v1/priorityclasses', { metadata: { name: 'dela01-platform' }, value: 10 });

  const { events, ms } = await deleteAndWait('dela01');
  t.comment(`tenant with 2 namespaces, a CRD and 4 cluster-scoped objects deleted in ${ms} ms`);

  for (const path of objectsOf('dela01')) t.equal(await status(path), 404, `gone: ${path}`);
  for (const path of objectsOf('delb01')) t.equal(await status(path), 200, `tenant B untouched: ${path}`);
  t.equal(await status('/api/v1/namespaces/dela01x-y'), 200, 'near miss dela01x-y untouched');
  t.equal(await status(`${RBAC}/clusterroles/dela01`), 200, 'ClusterRole "dela01" (no dash) untouched');
  t.equal(await status('/apis/scheduling.k8s.io/v1/priorityclasses/dela01-platform'), 200, 'unlabelled platform PriorityClass untouched');
  for (const path of [
    '/api/v1/namespaces/default',
    '/api/v1/namespaces/kube-system',
    `${RBAC}/clusterroles/system:controller:namespace-controller`,
    `${RBAC}/clusterroles/tenantgate:tenant-cluster-scope`,
  ]) {
    t.equal(await status(path), 200, `upstream's own untouched: ${path}`);
  }

  const progress = events.flatMap((event) => event.tenant.status?.conditions?.filter((c) => c.type === 'Terminating') ?? []).map((c) => c.message ?? '');
  t.ok(
    progress.some((message) => /^deleting [1-9]\d* namespaces, \d+ cluster-scoped objects remaining/.test(message)),
    `conditions showed progress: ${JSON.stringify([...new Set(progress)])}`,
  );
  const last = events.at(-1)!;
  t.equal(last.type, 'DELETED', 'the Tenant went last, after every upstream object');
  t.notOk(events.at(-2)?.tenant.metadata.finalizers?.includes(TENANT_CLEANUP_FINALIZER), 'its finalizer dropped before it was removed');
  t.equal(store.get('delb01')?.metadata.deletionTimestamp, undefined, 'tenant B still active');
});

t.test('two replicas following one store bootstrap and delete a tenant once, without fighting', async (t) => {
  const replica = new TenantLifecycle({ store, pool, cleanupIntervalMs: 300 });
  await replica.start();
  try {
    const writes: TenantEvent[] = [];
    const unsubscribe = store.onChange((event) => event.tenant.metadata.name === 'rep001' && writes.push(event));
    await addTenant('rep001');
    await within('rep001 Ready', 10_000, () => isReady('rep001'));
    // Its first requests reach both replicas at once.
    await Promise.all([lifecycle.whenBorn('rep001'), replica.whenBorn('rep001')]);
    await new Promise((resolve) => setTimeout(resolve, 500));
    t.equal(
      writes.filter((event) => event.type === 'MODIFIED').length,
      2,
      'one status write for Ready and one for the birth, not one per replica or a ping-pong',
    );
    t.equal(await status('/api/v1/namespaces/rep001-default'), 200, 'its namespaces upstream');
    const { events } = await deleteAndWait('rep001', 60_000);
    unsubscribe();
    t.equal(events.filter((event) => event.type === 'DELETED').length, 1, 'removed once');
    t.equal(await status('/api/v1/namespaces/rep001-default'), 404, 'its namespaces gone');
  } finally {
    await replica.stop();
  }
});

t.test('a tenant an older version bootstrapped counts as born: kept upstream, its requests wait for nothing', async (t) => {
  // As the previous version stored it: Ready once bootstrapped, no BuiltinsUpstream condition; its objects upstream.
  await store.create({
    apiVersion: TENANT_API_VERSION,
    kind: 'Tenant',
    metadata: { name: 'old001', finalizers: [TENANT_CLEANUP_FINALIZER] },
    spec: {},
    status: { online: true, conditions: [{ type: 'Ready', status: 'True', reason: 'Bootstrapped', lastTransitionTime: '2026-11-01T00:00:00Z' }] },
  });
  t.equal(lifecycle.whenBorn('old001'), null, 'its first request after the upgrade waits for nothing');
  // One of its namespaces seen upstream: the reconcile that follows puts back what it lacks, as for any born tenant.
  await create('/api/v1/namespaces', { metadata: { name: 'old001-default', labels: { [TENANT_LABEL]: 'old001' } } });
  await within('old001-kube-public made by the reconcile', 15_000, async () => (await status('/api/v1/namespaces/old001-kube-public')) === 200);
  t.pass('its built-in namespaces are kept upstream');
  t.equal(conditionOf(store.get('old001')!, BIRTH_STATE_CONDITION), undefined, 'and its Tenant is left as it was');

  // A tenant of this version, never used, with a namespace made upstream by someone else: nothing is added.
  await addTenant('new001');
  await within('new001 Ready', 10_000, () => isReady('new001'));
  await create('/api/v1/namespaces', { metadata: { name: 'new001-default', labels: { [TENANT_LABEL]: 'new001' } } });
  await new Promise((resolve) => setTimeout(resolve, 2_000));
  t.equal(await status('/api/v1/namespaces/new001-kube-public'), 404, 'an unborn tenant gets no birth state from the reconcile');
  t.equal(await status(`${RBAC}/namespaces/new001-default/rolebindings/tenantgate:tenant-admin`), 404, 'nor a RoleBinding');
});

t.test('tenants named "defaul" and "system" are deleted without touching "default" or system:* roles', async (t) => {
  for (const id of ['defaul', 'system']) await bornTenant(id);
  const before = {
    roles: (await upstreamJson(pool, 'GET', `${RBAC}/clusterroles`)).body.items.filter((r: { metadata: { name: string } }) =>
      r.metadata.name.startsWith('system:'),
    ).length,
    bindings: (await upstreamJson(pool, 'GET', `${RBAC}/clusterrolebindings`)).body.items.filter((r: { metadata: { name: string } }) =>
      r.metadata.name.startsWith('system:'),
    ).length,
  };
  const defaultUid = (await upstreamJson(pool, 'GET', '/api/v1/namespaces/default')).body.metadata.uid;
  await Promise.all([deleteAndWait('defaul'), deleteAndWait('system')]);

  const namespace = await upstreamJson(pool, 'GET', '/api/v1/namespaces/default');
  t.equal(namespace.status, 200, 'namespace default still there');
  t.equal(namespace.body.metadata.uid, defaultUid, 'the same one, never deleted');
  t.equal(namespace.body.metadata.deletionTimestamp, undefined, 'and not terminating');
  const after = {
    roles: (await upstreamJson(pool, 'GET', `${RBAC}/clusterroles`)).body.items.filter((r: { metadata: { name: string } }) =>
      r.metadata.name.startsWith('system:'),
    ).length,
    bindings: (await upstreamJson(pool, 'GET', `${RBAC}/clusterrolebindings`)).body.items.filter((r: { metadata: { name: string } }) =>
      r.metadata.name.startsWith('system:'),
    ).length,
  };
  t.ok(before.roles > 10, `the upstream has system:* roles (${before.roles})`);
  t.same(after, before, 'every system:* ClusterRole and ClusterRoleBinding still there');
  t.equal(await status('/api/v1/namespaces/defaul-default'), 404, "tenant defaul's own namespaces are gone");
  t.equal(await status('/api/v1/namespaces/system-kube-system'), 404, "tenant system's own namespaces are gone");
});

t.test('a tenant is born with Service default/kubernetes, its EndpointSlice and the built-in roles, and they come back', async (t) => {
  await bornTenant('life09');
  const service = await upstreamJson(pool, 'GET', '/api/v1/namespaces/life09-default/services/kubernetes');
  t.equal(service.status, 200, "Service kubernetes in the tenant's default namespace");
  t.same(service.body.spec.ports, [{ name: 'https', port: 443, protocol: 'TCP', targetPort: 6443 }]);
  const slicePath = '/apis/discovery.k8s.io/v1/namespaces/life09-default/endpointslices/kubernetes';
  const slice = await upstreamJson(pool, 'GET', slicePath);
  t.equal(slice.status, 200, 'and its EndpointSlice');
  t.same(
    slice.body.endpoints.map((endpoint: { addresses: string[] }) => endpoint.addresses),
    [['10.96.7.7']],
    "pointing at tenantgate's address",
  );
  t.equal(slice.body.metadata.labels['kubernetes.io/service-name'], 'kubernetes');

  await upstreamJson(pool, 'DELETE', slicePath);
  t.comment(`deleted EndpointSlice back in ${await within('slice back', 10_000, async () => (await status(slicePath)) === 200)} ms`);
  const moved = await upstreamJson(pool, 'GET', slicePath);
  moved.body.endpoints = [{ addresses: ['10.96.9.9'] }];
  t.equal((await upstreamJson(pool, 'PUT', slicePath, moved.body)).status, 200, 'someone points the slice elsewhere');
  const ms = await within(
    'slice pointing back',
    10_000,
    async () => (await upstreamJson(pool, 'GET', slicePath)).body?.endpoints?.[0]?.addresses?.[0] === '10.96.7.7',
  );
  t.comment(`EndpointSlice pointing at tenantgate again in ${ms} ms`);
  await upstreamJson(pool, 'DELETE', '/api/v1/namespaces/life09-default/services/kubernetes');
  t.comment(
    `deleted Service back in ${await within('service back', 10_000, async () => (await status('/api/v1/namespaces/life09-default/services/kubernetes')) === 200)} ms`,
  );

  for (const name of ['cluster-admin', 'admin', 'edit', 'view', 'system:discovery', 'system:basic-user']) {
    t.equal(await status(`${RBAC}/clusterroles/life09-${encodeURIComponent(name)}`), 200, `ClusterRole life09-${name}`);
  }
  const cluster = await upstreamJson(pool, 'GET', `${RBAC}/clusterroles/life09-cluster-admin`);
  t.same(
    cluster.body.rules,
    [
      { apiGroups: ['*'], resources: ['*'], verbs: ['*'] },
      { nonResourceURLs: ['*'], verbs: ['*'] },
    ],
    "cluster-admin's rules, copied",
  );
  await upstreamJson(pool, 'DELETE', `${RBAC}/clusterroles/life09-edit`);
  t.comment(
    `deleted built-in ClusterRole back in ${await within('edit back', 10_000, async () => (await status(`${RBAC}/clusterroles/life09-edit`)) === 200)} ms`,
  );
  cluster.body.rules = [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }];
  t.equal((await upstreamJson(pool, 'PUT', `${RBAC}/clusterroles/life09-cluster-admin`, cluster.body)).status, 200, 'someone narrows cluster-admin');
  await within(
    'cluster-admin rules restored',
    10_000,
    async () => (await upstreamJson(pool, 'GET', `${RBAC}/clusterroles/life09-cluster-admin`)).body.rules.length === 2,
  );
  const binding = await upstreamJson(
    pool,
    'GET',
    `/apis/rbac.tenantgate.kubezoo.io/v1/clusterrolebindings/life09-tghex-${Buffer.from('system:discovery').toString('hex')}`,
  );
  t.same(
    binding.body.subjects,
    [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'tenantgate:cluster:life09:system:authenticated' }],
    "system:discovery binds the tenant's authenticated group (shadow), kept as tenantgate's custom resource (its name in hex: a custom resource's is a DNS subdomain)",
  );
  t.equal(await status(`${RBAC}/clusterrolebindings/${encodeURIComponent('life09-system:discovery')}`), 404, 'and no real ClusterRoleBinding for it');
  const expansions = await upstreamJson(pool, 'GET', `${RBAC}/namespaces/life09-default/rolebindings`);
  t.notOk(
    expansions.body.items.some((item: { metadata: { name: string } }) => item.metadata.name.includes('system:discovery')),
    'the built-in bindings are not expanded into RoleBindings (they grant nothing namespaced)',
  );
});

t.test('an upgrade replaces the ClusterRoleBindings an older tenantgate kept per tenant, the admin never losing a right', async (t) => {
  await bornTenant('mig001');
  // What the previous version kept for every tenant: four bindings to the admin or its shadow, two roles of its own.
  const owned = { 'tenantgate.kubezoo.io/tenant': 'mig001' };
  const bindTo = (name: string, role: string, user: string) =>
    create(`${RBAC}/clusterrolebindings`, {
      metadata: { name, labels: owned },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }],
    });
  await create(`${RBAC}/clusterroles`, {
    metadata: { name: 'tenantgate:tenant-custom-resources:mig001', labels: { ...owned, 'tenantgate.kubezoo.io/tenant-custom-resources': 'true' } },
    rules: [],
  });
  const signers = [
    { apiGroups: ['certificates.k8s.io'], resources: ['signers'], resourceNames: ['mig001.tenants.tenantgate.kubezoo.io/*'], verbs: ['approve', 'sign'] },
  ];
  await create(`${RBAC}/clusterroles`, { metadata: { name: 'tenantgate:tenant-signers:mig001', labels: owned }, rules: signers });
  await bindTo('tenantgate:tenant:mig001', 'tenantgate:tenant-cluster-scope', 'mig001-admin');
  await bindTo('tenantgate:tenant-shadow:mig001', 'cluster-admin', 'tenantgate:cluster:mig001-admin');
  await bindTo('tenantgate:tenant-custom-resources:mig001', 'tenantgate:tenant-custom-resources:mig001', 'mig001-admin');
  await bindTo('tenantgate:tenant-signers:mig001', 'tenantgate:tenant-signers:mig001', 'mig001-admin');

  const asAdmin = async (resourceAttributes: object) =>
    (
      await upstreamJson(pool, 'POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: { user: 'mig001-admin', groups: [TENANT_CLUSTER_SCOPE_GROUP], resourceAttributes },
      })
    ).body.status.allowed === true;
  const approve = { verb: 'approve', group: 'certificates.k8s.io', resource: 'signers', name: 'mig001.tenants.tenantgate.kubezoo.io/*' };
  // The upgraded replica starts: its first reconcile migrates every tenant.
  // A replica of the new version keeps them for a while: the older version's replicas, in a rolling upgrade, rely on them.
  const early = new TenantLifecycle({ store, pool, cleanupIntervalMs: 300 });
  await early.start();
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  await early.stop();
  t.equal(await status(`${RBAC}/clusterrolebindings/${encodeURIComponent('tenantgate:tenant:mig001')}`), 200, 'within the grace, the legacy bindings stay');
  // (No grace: no replica of the older version runs here.)
  const upgraded = new TenantLifecycle({ store, pool, cleanupIntervalMs: 300, legacyBindingsGraceMs: 0 });
  const lost: string[] = [];
  let watching = true;
  const watchRights = (async () => {
    while (watching) {
      if (!(await asAdmin({ verb: 'create', resource: 'namespaces' }))) lost.push('create namespaces');
      if (!(await asAdmin(approve))) lost.push('approve its signers');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  })();
  await upgraded.start();
  try {
    const legacy = [
      'tenantgate:tenant:mig001',
      'tenantgate:tenant-shadow:mig001',
      'tenantgate:tenant-custom-resources:mig001',
      'tenantgate:tenant-signers:mig001',
    ];
    const ms = await within('legacy bindings gone', 15_000, async () =>
      (await Promise.all(legacy.map((name) => status(`${RBAC}/clusterrolebindings/${encodeURIComponent(name)}`)))).every((code) => code === 404),
    );
    t.comment(`the four per-tenant ClusterRoleBindings removed ${ms} ms after the upgraded lifecycle started`);
    await within(
      'empty custom-resources role gone',
      10_000,
      async () => (await status(`${RBAC}/clusterroles/${encodeURIComponent('tenantgate:tenant-custom-resources:mig001')}`)) === 404,
    );
    const role = await upstreamJson(pool, 'GET', `${RBAC}/clusterroles/${encodeURIComponent('tenantgate:tenant-signers:mig001')}`);
    t.equal(role.body.metadata.labels['tenantgate.kubezoo.io/aggregate-to-tenant-admins'], 'true', 'the signers role kept, aggregated into the shared one');
    t.same(role.body.rules, signers, 'its rules unchanged');
  } finally {
    watching = false;
    await watchRights;
    await upgraded.stop();
  }
  t.same(lost, [], 'the admin held its rights through the whole migration');
  t.ok(await asAdmin(approve), 'and holds them after');
});

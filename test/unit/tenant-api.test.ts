// The Tenant API's answers on the wire, against an in-process tenantgate whose Tenant API never needs the upstream
// (the upstream address points nowhere): status codes, Status reasons, watches, patches, and tenants refused.
import t from 'tap';
import { issueCertificate, type CertificateAuthority } from '../../lib/auth/pki.ts';
import type { Gateway } from '../../lib/server/gateway.ts';
import { tenantStoreStatus } from '../../lib/request/tenant-api.ts';
import { MemoryTenantStore } from '../../lib/tenants/memory-store.ts';
import {
  TenantConflict,
  TenantExists,
  TenantMissing,
  TenantStoreUnavailable,
  TenantWatchExpired,
  type Tenant,
  type TenantStore,
} from '../../lib/tenants/tenant.ts';
import { startGatewayWithoutUpstream } from '../helpers/gateway-without-upstream.ts';
import { connectH2, h2Request } from '../helpers/http.ts';
import { StatusError } from '../../lib/errors/status-error.ts';
import type { ClientHttp2Session } from 'node:http2';

const BASE = '/apis/tenant.kubezoo.io/v1alpha1/tenants';
const tenantBody = (name: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ apiVersion: 'tenant.kubezoo.io/v1alpha1', kind: 'Tenant', metadata: { name }, spec: { id: 7 }, ...extra });

/** The embedded store whose writes fail as etcd's would while it is down; reads still come from its index. */
class StoreWithStorageDown extends MemoryTenantStore {
  down = false;
  override async create(tenant: Parameters<TenantStore['create']>[0]): Promise<Tenant> {
    if (this.down) throw new TenantStoreUnavailable('etcd is unreachable');
    return super.create(tenant);
  }
  override async update(tenant: Tenant): Promise<Tenant> {
    if (this.down) throw new TenantStoreUnavailable('etcd is unreachable');
    return super.update(tenant);
  }
}

async function startTestGateway(
  store: TenantStore,
): Promise<{ gateway: Gateway; ca: CertificateAuthority; as: (who: 'admin' | string) => ClientHttp2Session }> {
  const { gateway, ca } = await startGatewayWithoutUpstream(store);
  const sessions: ClientHttp2Session[] = [];
  t.teardown(async () => {
    for (const session of sessions) session.close();
    await gateway.close();
  });
  const as = (who: string) => {
    const client =
      who === 'admin'
        ? issueCertificate(ca, { commonName: 'tenantgate-admin', organizations: ['system:masters'], usage: 'client' })
        : issueCertificate(ca, { commonName: `${who}-admin`, organizationalUnits: [who], usage: 'client' });
    const session = connectH2({ server: gateway.url, caPem: ca.certPem, certPem: client.certPem, keyPem: client.keyPem });
    sessions.push(session);
    return session;
  };
  return { gateway, ca, as };
}

const store = new StoreWithStorageDown();
const { as } = await startTestGateway(store);
const admin = as('admin');
const json = { 'content-type': 'application/json' };

t.test('invalid tenant ids are refused with 422 naming metadata.name, and nothing is stored', async (t) => {
  for (const name of ['kube-p', 'ABCDEF', 'abc12', 'abc1234', 'defaul-', '']) {
    const answer = await h2Request(admin, 'POST', BASE, { headers: json, body: tenantBody(name) });
    t.equal(answer.status, 422, `${JSON.stringify(name)} → 422`);
    t.equal(answer.json().reason, 'Invalid');
    t.equal(answer.json().details.causes[0].field, 'metadata.name');
  }
  t.equal(store.list().length, 0);
});

t.test('a quota a ResourceQuota would refuse is 400 naming the field, and nothing is stored', async (t) => {
  const withQuota = (name: string, hard: Record<string, unknown>) => tenantBody(name, { spec: { id: 7, quota: { hard } } });
  const badKeys = ['foo', 'podz', 'storage', 'count/', '/gpu', 'example.com/', 'a/b/c', 'Example.com/foo', 'example.com/-foo', 'requests.cpu ', ''];
  const badQuantities: [resource: string, quantity: unknown][] = [
    ['pods', '4x'],
    ['cpu', '1.2.3'],
    ['memory', ' 4'],
    ['pods', '--1'],
    ['memory', 'Gi'],
    ['cpu', '1e'],
    ['pods', '-1'],
    ['memory', '-500Mi'],
    ['cpu', -1],
  ];
  const cases: [resource: string, quantity: unknown, why: RegExp][] = [
    ...badKeys.map((key): [string, unknown, RegExp] => [key, '1', /must be a (standard resource for quota|qualified name)/]),
    ...badQuantities.map(([key, quantity]): [string, unknown, RegExp] => [key, quantity, /must be (a quantity|greater than or equal to 0)/]),
  ];
  for (const [resource, quantity, why] of cases) {
    const field = `spec.quota.hard[${resource}]`;
    const answer = await h2Request(admin, 'POST', BASE, { headers: json, body: withQuota('quo000', { pods: '10', [resource]: quantity }) });
    const said = `${JSON.stringify(resource)}: ${JSON.stringify(quantity)}`;
    t.equal(answer.status, 400, `${said} → 400 Bad Request`);
    t.equal(answer.json().reason, 'BadRequest', `${said}: the reason says BadRequest`);
    t.match(answer.json().message, field, `${said}: the message names ${field}`);
    t.match(answer.json().message, why, `${said}: the message says why`);
    t.equal(answer.json().details.causes[0].field, field, `${said}: the cause names the field`);
  }
  t.match(
    (await h2Request(admin, 'POST', BASE, { headers: json, body: withQuota('quo000', { pods: '4x' }) })).json().message,
    '"4x"',
    'the message quotes the quantity',
  );
  t.equal(store.get('quo000'), undefined, 'no refused tenant is stored');

  const notAString = await h2Request(admin, 'POST', BASE, { headers: json, body: withQuota('quo000', { pods: true }) });
  t.equal(notAString.status, 422, 'a quantity that is no string nor number is still 422 Invalid');

  const accepted = {
    pods: 4,
    services: '5',
    replicationcontrollers: '1',
    resourcequotas: '1',
    secrets: '10',
    configmaps: '10',
    persistentvolumeclaims: '2',
    'services.nodeports': '0',
    'services.loadbalancers': '0',
    cpu: '500m',
    memory: '8Gi',
    'ephemeral-storage': '1e3',
    'requests.cpu': 1.5,
    'requests.memory': '1.5Gi',
    'requests.storage': '100G',
    'requests.ephemeral-storage': '10Gi',
    'limits.cpu': '2',
    'limits.memory': '16Gi',
    'limits.ephemeral-storage': '20Gi',
    'hugepages-2Mi': '1Gi',
    'requests.hugepages-1Gi': '2Gi',
    'count/pods': '3',
    'count/deployments.apps': '2',
    'count/widgets.example.com': '1',
    'gold.storageclass.storage.k8s.io/requests.storage': '500Gi',
    'gold.storageclass.storage.k8s.io/persistentvolumeclaims': '3',
    'requests.nvidia.com/gpu': '1',
    'example.com/foo': '0.1m',
  };
  const created = await h2Request(admin, 'POST', `${BASE}?dryRun=All`, { headers: json, body: withQuota('quo000', accepted) });
  t.equal(created.status, 201, 'every resource name a ResourceQuota takes is accepted');
  t.same(created.json().spec.quota.hard, { ...accepted, pods: '4', 'requests.cpu': '1.5' }, 'quantities are kept as sent, numbers as strings');

  await h2Request(admin, 'POST', BASE, { headers: json, body: withQuota('quo001', { pods: '4' }) });
  const patch = await h2Request(admin, 'PATCH', `${BASE}/quo001`, {
    headers: { 'content-type': 'application/merge-patch+json' },
    body: '{"spec":{"quota":{"hard":{"podz":"4"}}}}',
  });
  t.equal(patch.status, 400, 'a patch that adds a name a ResourceQuota refuses is 400');
  t.match(patch.json().message, 'spec.quota.hard[podz]', 'the patch is told which field');
  t.same(store.get('quo001')?.spec.quota?.hard, { pods: '4' }, 'the refused patch changes nothing');
});

t.test('create, get, conflicting create, stale update and delete answer as the apiserver would', async (t) => {
  const written = { online: false, conditions: [{ type: 'Ready', status: 'False', reason: 'Mine', lastTransitionTime: '2026-01-01T00:00:00Z' }] };
  const created = await h2Request(admin, 'POST', BASE, { headers: json, body: tenantBody('abc123', { status: written }) });
  t.equal(created.status, 201);
  const tenant = created.json();
  t.ok(tenant.metadata.uid);
  t.ok(tenant.metadata.resourceVersion);
  t.equal(tenant.status.online, true, 'the creator cannot write the status');
  t.match(
    tenant.status.conditions,
    [
      { type: 'BuiltinsUpstream', status: 'False', reason: 'Deferred' },
      { type: 'Ready', status: 'True', reason: 'Created' },
    ],
    'a new Tenant is stored Ready, its built-ins deferred to its first request',
  );

  const again = await h2Request(admin, 'POST', BASE, { headers: json, body: tenantBody('abc123') });
  t.equal(again.status, 409);
  t.equal(again.json().reason, 'AlreadyExists');

  const got = await h2Request(admin, 'GET', `${BASE}/abc123`);
  t.same(got.json(), tenant);

  const update = { ...tenant, spec: { id: 8 } };
  const updated = await h2Request(admin, 'PUT', `${BASE}/abc123`, { headers: json, body: JSON.stringify(update) });
  t.equal(updated.status, 200);
  t.equal(updated.json().spec.id, 8);
  t.equal(updated.json().metadata.generation, 2, 'a spec change bumps the generation');
  const stale = await h2Request(admin, 'PUT', `${BASE}/abc123`, { headers: json, body: JSON.stringify({ ...tenant, spec: { id: 9 } }) });
  t.equal(stale.status, 409);
  t.equal(stale.json().reason, 'Conflict');

  const status = await h2Request(admin, 'PUT', `${BASE}/abc123/status`, {
    headers: json,
    body: JSON.stringify({
      ...updated.json(),
      spec: { id: 100 },
      status: { online: true, conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' }] },
    }),
  });
  t.equal(status.status, 200);
  t.equal(status.json().status.online, true);
  t.equal(status.json().spec.id, 8, 'the status subresource does not change the spec');

  const missing = await h2Request(admin, 'GET', `${BASE}/zzz999`);
  t.equal(missing.status, 404);
  t.equal(missing.json().reason, 'NotFound');

  const deleted = await h2Request(admin, 'DELETE', `${BASE}/abc123`);
  t.equal(deleted.status, 200);
  t.ok(deleted.json().metadata.deletionTimestamp);
  t.same(deleted.json().metadata.finalizers, ['tenant.kubezoo.io/cleanup']);
  t.ok(store.get('abc123'), 'the tenant stays until the lifecycle controller removes it');
  const kubeconfig = await h2Request(admin, 'GET', `${BASE}/abc123/kubeconfig`);
  t.equal(kubeconfig.status, 404, 'a terminating tenant gets no credentials');
});

t.test('patches: merge, strategic merge, JSON patch; a wrong body is 400', async (t) => {
  await h2Request(admin, 'POST', BASE, { headers: json, body: tenantBody('pat001') });
  const merge = await h2Request(admin, 'PATCH', `${BASE}/pat001`, {
    headers: { 'content-type': 'application/merge-patch+json' },
    body: '{"metadata":{"labels":{"tier":"gold"}}}',
  });
  t.equal(merge.status, 200);
  t.same(merge.json().metadata.labels, { tier: 'gold' });
  const strategic = await h2Request(admin, 'PATCH', `${BASE}/pat001`, {
    headers: { 'content-type': 'application/strategic-merge-patch+json' },
    body: '{"spec":{"quota":{"hard":{"cpu":4}}}}',
  });
  t.same(strategic.json().spec, { id: 7, quota: { hard: { cpu: '4' } } }, 'numbers in quotas become quantities');
  const jsonPatch = await h2Request(admin, 'PATCH', `${BASE}/pat001`, {
    headers: { 'content-type': 'application/json-patch+json' },
    body: '[{"op":"remove","path":"/metadata/labels/tier"},{"op":"replace","path":"/spec/id","value":42}]',
  });
  t.equal(jsonPatch.status, 200);
  t.same(jsonPatch.json().metadata.labels, {});
  t.equal(jsonPatch.json().spec.id, 42);
  const rename = await h2Request(admin, 'PATCH', `${BASE}/pat001`, {
    headers: { 'content-type': 'application/merge-patch+json' },
    body: '{"metadata":{"name":"other1"}}',
  });
  t.equal(rename.status, 400, 'a patch cannot rename the tenant');
  const badJson = await h2Request(admin, 'POST', BASE, { headers: json, body: '{"apiVersion":' });
  t.equal(badJson.status, 400);
  const wrongKind = await h2Request(admin, 'POST', BASE, {
    headers: json,
    body: JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'abc999' } }),
  });
  t.equal(wrongKind.status, 400);
  const stalePatch = await h2Request(admin, 'PATCH', `${BASE}/pat001`, {
    headers: { 'content-type': 'application/merge-patch+json' },
    body: '{"metadata":{"resourceVersion":"1"},"spec":{"id":1}}',
  });
  t.equal(stalePatch.status, 409, 'a resourceVersion in a patch is a precondition');
});

t.test('a watch sees create, update and delete after the resourceVersion it starts from; a forgotten one is 410', async (t) => {
  const rv = store.resourceVersion;
  const stream = admin.request({ ':method': 'GET', ':path': `${BASE}?watch=1&resourceVersion=${rv}&labelSelector=team%3Dred` });
  const events: { type: string; object: Tenant }[] = [];
  let buffered = '';
  stream.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    let newline;
    while ((newline = buffered.indexOf('\n')) !== -1) {
      events.push(JSON.parse(buffered.slice(0, newline)));
      buffered = buffered.slice(newline + 1);
    }
  });
  await new Promise((resolve) => stream.once('response', resolve));
  await h2Request(admin, 'POST', BASE, { headers: json, body: tenantBody('blue01', { metadata: { name: 'blue01', labels: { team: 'blue' } } }) });
  await h2Request(admin, 'POST', BASE, { headers: json, body: tenantBody('red001', { metadata: { name: 'red001', labels: { team: 'red' } } }) });
  await h2Request(admin, 'PATCH', `${BASE}/red001`, { headers: { 'content-type': 'application/merge-patch+json' }, body: '{"spec":{"id":3}}' });
  await h2Request(admin, 'DELETE', `${BASE}/red001`);
  await store.remove('red001');
  const deadline = Date.now() + 5000;
  while (events.length < 4 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  stream.close();
  t.same(
    events.map((e) => `${e.type} ${e.object.metadata.name}`),
    ['ADDED red001', 'MODIFIED red001', 'MODIFIED red001', 'DELETED red001'],
    'only the selected tenant, in order',
  );
  t.ok(events[2]!.object.metadata.deletionTimestamp);

  // Past the embedded store's history: the watch's starting point is forgotten.
  for (let i = 0; i < 1001; i++) await store.update({ ...store.get('blue01')!, spec: { id: i } });
  const expired = await h2Request(admin, 'GET', `${BASE}?watch=1&resourceVersion=${rv}`);
  t.equal(expired.status, 410);
  t.equal(expired.json().reason, 'Expired');
});

t.test('list with a label selector; the Table has NAME, STATUS and AGE', async (t) => {
  // Stored without a status (as by an older tenantgate, before its lifecycle looked): Pending.
  await store.create({ apiVersion: 'tenant.kubezoo.io/v1alpha1', kind: 'Tenant', metadata: { name: 'pend01' }, spec: {} });
  const all = await h2Request(admin, 'GET', BASE);
  t.equal(all.json().kind, 'TenantList');
  t.equal(all.json().metadata.resourceVersion, store.resourceVersion);
  t.same(
    all.json().items.map((i: Tenant) => i.metadata.name),
    store.list().map((i) => i.metadata.name),
  );
  const blue = await h2Request(admin, 'GET', `${BASE}?labelSelector=team%20in%20(blue)`);
  t.same(
    blue.json().items.map((i: Tenant) => i.metadata.name),
    ['blue01'],
  );
  const table = await h2Request(admin, 'GET', BASE, { headers: { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io' } });
  t.same(
    table.json().columnDefinitions.map((c: { name: string }) => c.name),
    ['Name', 'Status', 'Age'],
  );
  const byName = Object.fromEntries(table.json().rows.map((r: { cells: string[] }) => [r.cells[0], r.cells[1]]));
  t.equal(byName.abc123, 'Terminating');
  t.equal(byName.blue01, 'Ready', 'created through the API: Ready once stored');
  t.equal(byName.pend01, 'Pending');
});

t.test('storage down: reads are served from the index, writes answer 503 and store nothing', async (t) => {
  store.down = true;
  t.teardown(() => void (store.down = false));
  const write = await h2Request(admin, 'POST', BASE, { headers: json, body: tenantBody('down01') });
  t.equal(write.status, 503);
  t.equal(write.json().reason, 'ServiceUnavailable');
  t.ok(write.headers['retry-after']);
  const patch = await h2Request(admin, 'PATCH', `${BASE}/blue01`, { headers: { 'content-type': 'application/merge-patch+json' }, body: '{"spec":{"id":5}}' });
  t.equal(patch.status, 503);
  t.equal((await h2Request(admin, 'GET', `${BASE}/blue01`)).status, 200);
  t.equal(store.get('down01'), undefined);
});

t.test("a tenant's credentials get 403 on every verb and path of the group, and change nothing", async (t) => {
  const tenant = as('blue01');
  const before = JSON.stringify(store.list());
  const attempts: [string, string, string?][] = [
    ['GET', BASE],
    ['GET', `${BASE}?watch=1`],
    ['GET', `${BASE}/blue01`],
    ['GET', `${BASE}/blue01/kubeconfig`],
    ['POST', BASE, tenantBody('evil01')],
    ['PUT', `${BASE}/blue01`, tenantBody('blue01')],
    ['PATCH', `${BASE}/blue01`, '{}'],
    ['DELETE', `${BASE}/blue01`],
    ['DELETE', BASE],
    ['GET', '/apis/tenant.kubezoo.io'],
    ['GET', '/apis/tenant.kubezoo.io/v1alpha1'],
    ['GET', '/apis/tenant%2Ekubezoo.io/v1alpha1/tenants'],
    ['GET', '/openapi/v3/apis/tenant.kubezoo.io/v1alpha1'],
  ];
  for (const [method, path, body] of attempts) {
    const answer = await h2Request(tenant, method, path, body === undefined ? {} : { headers: { 'content-type': 'application/merge-patch+json' }, body });
    t.equal(answer.status, 403, `${method} ${path}`);
    t.equal(answer.json().reason, 'Forbidden');
  }
  t.equal(JSON.stringify(store.list()), before);
});

t.test('store errors map to Kubernetes Status reasons', async (t) => {
  const cases: [Error, number, string][] = [
    [new TenantStoreUnavailable('down'), 503, 'ServiceUnavailable'],
    [new TenantConflict('x'), 409, 'Conflict'],
    [new TenantExists('x'), 409, 'AlreadyExists'],
    [new TenantMissing('x'), 404, 'NotFound'],
    [new TenantWatchExpired('x'), 410, 'Expired'],
  ];
  for (const [error, code, reason] of cases) {
    const status = tenantStoreStatus(error, 'abc123') as StatusError;
    t.equal(status.code, code, error.constructor.name);
    t.equal(status.reason, reason);
  }
  const other = new Error('a bug');
  t.equal(tenantStoreStatus(other), other, 'anything else is left for the 500 path');
});

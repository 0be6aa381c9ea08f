// A Tenant's spec.quota.hard holds over the sum of all its namespaces, enforced by the upstream itself: pods the
// tenant creates in any namespace and pods a Deployment's controller creates upstream are counted and refused alike,
// parallel creates end exactly at the limit, another tenant is not held back, and the refusal is in the tenant's words.
import t from 'tap';
import type { ClientHttp2Session } from 'node:http2';
import { TENANT_QUOTA_NAME } from '../../lib/tenants/tenant-quota.ts';
import { TENANTS_PATH, type Tenant } from '../../lib/tenants/tenant.ts';
import { upstreamJson } from '../../lib/upstream/client.ts';
import { connectH2, credentialsOf, h2Request } from '../helpers/http.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, withClient, type TestTenant } from '../helpers/tenants.ts';
import { eventually, kubectlOk } from '../helpers/kit.ts';

type Json = Record<string, any>;

const NAMESPACES = ['one', 'two', 'three', 'four'];

let stack: Stack;
let alpha: TestTenant; // pods: 4
let bravo: TestTenant; // no quota, the same names
let charlie: TestTenant; // pods: 10, for the parallel creates
const sessions: ClientHttp2Session[] = [];

const pod = (name: string) =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: { app: 'quota' } },
    spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
  });

function sessionOf(tenant: TestTenant): ClientHttp2Session {
  const session = connectH2(credentialsOf(tenant.kubeconfig));
  sessions.push(session);
  return session;
}

async function patchTenant(id: string, spec: Json): Promise<void> {
  await withClient(stack.adminKubeconfig, async (pool) => {
    const patched = await upstreamJson(pool, 'PATCH', `${TENANTS_PATH}/${id}`, { spec }, { 'content-type': 'application/merge-patch+json' });
    if (patched.status !== 200) throw new Error(`patching tenant ${id}: ${patched.status} ${JSON.stringify(patched.body).slice(0, 400)}`);
  });
}

async function tenantOf(id: string): Promise<Tenant> {
  return withClient(stack.adminKubeconfig, async (pool) => (await upstreamJson(pool, 'GET', `${TENANTS_PATH}/${id}`)).body as Tenant);
}

/** The tenant's pods as the upstream has them, over all its namespaces (not through tenantgate). */
async function upstreamPodsOf(tenant: TestTenant): Promise<Json[]> {
  const r = await stack.kubectlDirect(['get', 'pods', '-A', '-o', 'json']);
  if (r.code !== 0) throw new Error(`kubectl get pods -A upstream: ${r.stderr}`);
  return (JSON.parse(r.stdout).items as Json[]).filter((item) => String(item.metadata.namespace).startsWith(`${tenant.id}-`));
}

/** Sets the tenant's limits and waits until each of its namespaces has its share and the Tenant reports its use. */
async function limitTo(tenant: TestTenant, hard: Record<string, string>): Promise<void> {
  await patchTenant(tenant.id, { quota: { hard } });
  await eventually(`${tenant.id}'s status.quota shows ${JSON.stringify(hard)}`, async () => {
    const got = await tenantOf(tenant.id);
    return JSON.stringify(got.status?.quota?.hard) === JSON.stringify(hard) ? true : undefined;
  });
}

t.before(async () => {
  stack = await startStack();
  alpha = await createTestTenant(stack, 'wqalfa');
  bravo = await createTestTenant(stack, 'wqbrav');
  charlie = await createTestTenant(stack, 'wqchar');
  for (const tenant of [alpha, bravo, charlie]) for (const namespace of NAMESPACES) await kubectlOk(tenant, ['create', 'namespace', namespace]);
  await limitTo(alpha, { pods: '4' });
  await limitTo(charlie, { pods: '10' });
});
t.teardown(async () => {
  for (const session of sessions) session.close();
  await stack?.stop();
});

t.test("pods: 4 holds across two namespaces, with the refusal in the tenant's words", async (t) => {
  const session = sessionOf(alpha);
  const answers = [];
  for (let i = 0; i < 6; i++) {
    const namespace = NAMESPACES[i % 2]!;
    answers.push(
      await h2Request(session, 'POST', `/api/v1/namespaces/${namespace}/pods`, { headers: { 'content-type': 'application/json' }, body: pod(`p${i}`) }),
    );
  }
  t.same(
    answers.map((answer) => answer.status),
    [201, 201, 201, 201, 403, 403],
    'four creates over two namespaces pass (capacity moved to where it was wanted), then the limit holds',
  );
  const refusal = answers[4]!.json();
  t.equal(refusal.reason, 'Forbidden');
  t.match(refusal.message, /exceeded quota/, "the apiserver's own words");
  t.notMatch(answers[4]!.body, /wqalfa-/, 'no upstream names in the refusal');
  t.equal((await upstreamPodsOf(alpha)).length, 4, 'upstream: exactly 4 pods of the tenant');
  const status = await eventually('status.quota.used counts 4 pods', async () => {
    const got = await tenantOf(alpha.id);
    return got.status?.quota?.used?.pods === '4' ? got.status.quota : undefined;
  });
  t.same(status, { hard: { pods: '4' }, used: { pods: '4' } }, 'the Tenant shows used next to hard');

  const other = sessionOf(bravo);
  const created = await h2Request(other, 'POST', '/api/v1/namespaces/one/pods', { headers: { 'content-type': 'application/json' }, body: pod('p0') });
  t.equal(created.status, 201, 'another tenant, same namespace and pod names, is admitted while the first is at its limit');
  await kubectlOk(alpha, ['delete', 'pods', '--all', '-n', 'one', '--wait=false']);
  await kubectlOk(alpha, ['delete', 'pods', '--all', '-n', 'two', '--wait=false']);
  await eventually("the tenant's pods are gone upstream", async () => ((await upstreamPodsOf(alpha)).length === 0 ? true : undefined));
});

t.test("a Deployment of 8 gets 4 pods: the controller's creates upstream are refused too, and its ReplicaSet says why", async (t) => {
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'eight', namespace: 'three' },
    spec: {
      replicas: 8,
      selector: { matchLabels: { app: 'eight' } },
      template: { metadata: { labels: { app: 'eight' } }, spec: { containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] } },
    },
  };
  await kubectlOk(alpha, ['apply', '-f', '-'], JSON.stringify(deployment));
  await eventually("4 of the Deployment's pods upstream", async () => ((await upstreamPodsOf(alpha)).length === 4 ? true : undefined));
  // The controller keeps trying: the count must stay at the limit.
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  t.equal((await upstreamPodsOf(alpha)).length, 4, 'still 4 pods upstream after the controller retried');
  const replicaSets = JSON.parse(await kubectlOk(alpha, ['get', 'replicasets', '-n', 'three', '-o', 'json'])).items as Json[];
  const failure = replicaSets.flatMap((rs) => (rs.status?.conditions ?? []) as Json[]).find((condition) => condition.type === 'ReplicaFailure');
  t.ok(failure, 'the ReplicaSet has a ReplicaFailure condition');
  t.match(failure?.message ?? '', /exceeded quota/, 'saying the quota was exceeded');
  t.notMatch(JSON.stringify(replicaSets), /wqalfa-/, "in the tenant's names");
  await kubectlOk(alpha, ['delete', 'deployment', 'eight', '-n', 'three']);
});

t.test('20 parallel creates over 4 namespaces end at the limit exactly', async (t) => {
  const session = sessionOf(charlie);
  const answers = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      h2Request(session, 'POST', `/api/v1/namespaces/${NAMESPACES[i % 4]}/pods`, { headers: { 'content-type': 'application/json' }, body: pod(`q${i}`) }),
    ),
  );
  const created = answers.filter((answer) => answer.status === 201).length;
  t.equal(created, 10, '10 created');
  t.equal(answers.filter((answer) => answer.status === 403).length, 10, 'and 10 refused');
  t.equal((await upstreamPodsOf(charlie)).length, 10, 'upstream: exactly 10 pods of the tenant');
});

t.test('a lowered limit blocks new pods only; a raised one lets them in within seconds', async (t) => {
  const session = sessionOf(charlie);
  await limitTo(charlie, { pods: '6' });
  t.equal((await upstreamPodsOf(charlie)).length, 10, 'the 10 pods stay');
  const refused = await h2Request(session, 'POST', '/api/v1/namespaces/one/pods', { headers: { 'content-type': 'application/json' }, body: pod('r1') });
  t.equal(refused.status, 403, 'a new pod is refused');
  await limitTo(charlie, { pods: '12' });
  const admitted = await h2Request(session, 'POST', '/api/v1/namespaces/two/pods', { headers: { 'content-type': 'application/json' }, body: pod('r2') });
  t.equal(admitted.status, 201, 'raised: a new pod is admitted');
  // 11 of 12: a namespace made now and used at once holds no more than the one pod left.
  await kubectlOk(charlie, ['create', 'namespace', 'five']);
  const first = await h2Request(session, 'POST', '/api/v1/namespaces/five/pods', { headers: { 'content-type': 'application/json' }, body: pod('s1') });
  const second = await h2Request(session, 'POST', '/api/v1/namespaces/five/pods', { headers: { 'content-type': 'application/json' }, body: pod('s2') });
  t.same([first.status, second.status], [201, 403], 'a brand-new namespace is under the limit from its first create');
  t.equal((await upstreamPodsOf(charlie)).length, 12, 'upstream: 12 pods, the limit');
});

t.test('the tenant reads its share but cannot change or delete it', async (t) => {
  const got = JSON.parse(await kubectlOk(alpha, ['get', 'resourcequota', TENANT_QUOTA_NAME, '-n', 'one', '-o', 'json']));
  t.ok(got.spec.hard.pods !== undefined, 'readable, with its pods limit');
  const deleted = await alpha.kubectl(['delete', 'resourcequota', TENANT_QUOTA_NAME, '-n', 'one']);
  t.not(deleted.code, 0, 'delete refused');
  t.match(deleted.stderr, /Forbidden|forbidden/);
  const patched = await alpha.kubectl(['patch', 'resourcequota', TENANT_QUOTA_NAME, '-n', 'one', '--type=merge', '-p', '{"spec":{"hard":{"pods":"100"}}}']);
  t.not(patched.code, 0, 'raising its own share refused');
});

t.test('a malformed quota is refused when the Tenant is written (400 naming the field)', async (t) => {
  for (const hard of [{ podz: '4' }, { pods: '4x' }, { pods: '-1' }]) {
    await withClient(stack.adminKubeconfig, async (pool) => {
      const answer = await upstreamJson(
        pool,
        'PATCH',
        `${TENANTS_PATH}/${alpha.id}`,
        { spec: { quota: { hard } } },
        { 'content-type': 'application/merge-patch+json' },
      );
      t.equal(answer.status, 400, `${JSON.stringify(hard)}: 400`);
      t.match(String(answer.body?.message), `spec.quota.hard[${Object.keys(hard)[0]}]`, 'naming the field');
    });
  }
});

t.test('a quota taken away removes the shares', async (t) => {
  await patchTenant(bravo.id, { quota: { hard: { pods: '3' } } });
  await eventually('bravo has shares', async () => {
    const r = await stack.kubectlDirect(['get', 'resourcequota', TENANT_QUOTA_NAME, '-n', `${bravo.id}-one`]);
    return r.code === 0 ? true : undefined;
  });
  await patchTenant(bravo.id, { quota: null });
  await eventually("bravo's shares are gone", async () => {
    const r = await stack.kubectlDirect(['get', 'resourcequotas', '-A', '-l', `tenantgate.kubezoo.io/tenant-quota=${bravo.id}`, '-o', 'name']);
    return r.code === 0 && r.stdout.trim() === '' ? true : undefined;
  });
  t.pass('no upstream object left for a tenant without a quota');
});

// A tenant admin may use a cluster-scoped custom resource as soon as its CRD is Established, as on a real cluster:
// the upstream rights on it exist before the create of the CRD is answered, and only in the tenant's own groups.
import t from 'tap';
import { upstreamJson, upstreamRequest } from '../../lib/upstream/client.ts';
import type { UpstreamPool } from '../../lib/upstream/pool.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, withClient, type TestTenant } from '../helpers/tenants.ts';

let stack: Stack;
let golf: TestTenant;
let kilo: TestTenant;

const CRDS = 10;
const ESTABLISHED_WITHIN_MS = 30_000;
/** Between reads of a CRD not Established yet: far below the lifecycle's reconcile debounce, gentle on flow control. */
const POLL_MS = 5;
const CRD_PATH = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

t.before(async () => {
  stack = await startStack();
  golf = await createTestTenant(stack, 'golf31');
  kilo = await createTestTenant(stack, 'kilo32');
});
t.teardown(() => stack?.stop());

function crdOf(plural: string) {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.racing.example.com` },
    spec: {
      group: 'racing.example.com',
      scope: 'Cluster',
      names: { plural, singular: plural.slice(0, -1), kind: plural[0]!.toUpperCase() + plural.slice(1, -1) },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
    },
  };
}

const RETRIES_OF_429 = 10;

/** As client-go does: a 429 (a new kind's storage still initializing upstream) is asked again after a second, bounded. */
async function request(pool: UpstreamPool, method: string, path: string, body?: unknown) {
  for (let attempt = 1; ; attempt++) {
    const answer = await upstreamJson(pool, method, path, body);
    if (answer.status !== 429 || attempt === RETRIES_OF_429) return answer;
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
}

/** Reads the CRD back until it is Established (bounded), as client-go's wait helpers do, then goes on at once. */
async function untilEstablished(pool: UpstreamPool, name: string): Promise<void> {
  const deadline = Date.now() + ESTABLISHED_WITHIN_MS;
  for (;;) {
    const got = await upstreamJson(pool, 'GET', `${CRD_PATH}/${name}`);
    const conditions = (got.body as { status?: { conditions?: { type: string; status: string }[] } }).status?.conditions ?? [];
    if (conditions.some((c) => c.type === 'Established' && c.status === 'True')) return;
    if (Date.now() > deadline) throw new Error(`${name} not Established within ${ESTABLISHED_WITHIN_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

t.test('the admin creates each cluster-scoped custom resource right after its CRD is Established', async (t) => {
  const plurals = Array.from({ length: CRDS }, (_, i) => `speedsters${i}s`);
  await withClient(golf.kubeconfig, async (pool) => {
    for (const plural of plurals) {
      const crd = crdOf(plural);
      const created = await request(pool, 'POST', CRD_PATH, crd);
      t.equal(created.status, 201, `CRD ${crd.metadata.name} created`);
      await untilEstablished(pool, crd.metadata.name);
      const cr = await request(pool, 'POST', `/apis/racing.example.com/v1/${plural}`, {
        apiVersion: 'racing.example.com/v1',
        kind: crd.spec.names.kind,
        metadata: { name: 'first' },
        owner: 'golf',
      });
      t.equal(cr.status, 201, `${plural}/first created at once: ${JSON.stringify(cr.body).slice(0, 200)}`);
    }
  });
});

t.test('another tenant with the same CRD and names neither sees nor touches them', async (t) => {
  const plural = 'speedsters0s';
  const crd = crdOf(plural);
  await withClient(kilo.kubeconfig, async (pool) => {
    const before = await request(pool, 'GET', `/apis/racing.example.com/v1/${plural}/first`);
    t.equal(before.status, 404, 'kilo has no such resource before it defines the kind');
    t.equal((await request(pool, 'POST', CRD_PATH, crd)).status, 201, 'kilo defines the same CRD');
    await untilEstablished(pool, crd.metadata.name);
    const path = `/apis/racing.example.com/v1/${plural}`;
    const list = await request(pool, 'GET', path);
    t.equal(list.status, 200);
    t.same((list.body as { items: unknown[] }).items, [], "kilo lists none of golf's");
    t.equal((await request(pool, 'GET', `${path}/first`)).status, 404, "nor gets golf's by name");
    t.equal((await request(pool, 'DELETE', `${path}/first`)).status, 404, 'nor deletes it');
    const own = await request(pool, 'POST', path, {
      apiVersion: 'racing.example.com/v1',
      kind: crd.spec.names.kind,
      metadata: { name: 'first' },
      owner: 'kilo',
    });
    t.equal(own.status, 201, 'kilo makes its own of the same name');
  });
  await withClient(golf.kubeconfig, async (pool) => {
    const got = await request(pool, 'GET', `/apis/racing.example.com/v1/${plural}/first`);
    t.equal((got.body as { owner?: string }).owner, 'golf', "golf's is still golf's");
  });
});

t.test("a JSON patch of a cluster-scoped custom resource applies, as in the e2e CRD watch spec; another tenant's of the same name is untouched", async (t) => {
  const path = '/apis/racing.example.com/v1/speedsters0s/first';
  const patch = (pool: UpstreamPool, value: string, at = path) =>
    upstreamRequest(pool, 'PATCH', at, JSON.stringify([{ op: 'add', path: '/dummy', value }]), { 'content-type': 'application/json-patch+json' });
  await withClient(golf.kubeconfig, async (pool) => {
    const patched = await patch(pool, 'golf-was-here');
    t.equal(patched.status, 200, `golf's JSON patch: ${JSON.stringify(patched.body).slice(0, 300)}`);
    t.equal((patched.body as { dummy?: string }).dummy, 'golf-was-here', 'the patched object, in the answer');
    t.equal((patched.body as { metadata: { name: string } }).metadata.name, 'first', "in golf's names");
  });
  await withClient(kilo.kubeconfig, async (pool) => {
    const got = await request(pool, 'GET', path);
    t.equal((got.body as { owner?: string; dummy?: string }).owner, 'kilo', "kilo's object of the same name is its own");
    t.equal((got.body as { dummy?: string }).dummy, undefined, "and golf's patch did not reach it");
    const missing = await patch(pool, 'x', '/apis/racing.example.com/v1/speedsters0s/golfonly');
    t.equal(missing.status, 404, 'a patch of an object kilo does not have: 404');
  });
});

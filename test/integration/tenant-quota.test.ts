// ResourceQuota counting a tenant's custom resources (`count/<plural>.<group>`), as the conformance spec "capture the
// life of a custom resource" does: the quota names the tenant's group upstream, counts its objects and no other
// tenant's, and reads back under the tenant's own names, for quotas sent as JSON (kubectl) and as protobuf.
import t from 'tap';
import type { ClientHttp2Session } from 'node:http2';
import { connectH2, credentialsOf, h2Request } from '../helpers/http.ts';
import { encodeBody, goModuleCache, loadProtoMessages } from '../helpers/k8s-proto.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';
import { kubectlOk } from '../helpers/kit.ts';

type Json = Record<string, any>;

const GROUP = 'mygroup.example.com';
const COUNT = `count/foos.${GROUP}`;
const QUOTA = 'test-quota';
const WAIT_MS = 90_000;

let stack: Stack;
let alpha: TestTenant;
let bravo: TestTenant;
let alphaSession: ClientHttp2Session;

const crd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `foos.${GROUP}` },
  spec: {
    group: GROUP,
    scope: 'Namespaced',
    names: { plural: 'foos', singular: 'foo', kind: 'Foo', listKind: 'FooList' },
    versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
  },
};
const quota = {
  apiVersion: 'v1',
  kind: 'ResourceQuota',
  metadata: { name: QUOTA, namespace: 'default' },
  spec: { hard: { [COUNT]: '2', 'count/configmaps': '20' } },
};
const foo = (name: string) => JSON.stringify({ apiVersion: `${GROUP}/v1`, kind: 'Foo', metadata: { name, namespace: 'default' } });

const quotaOf = async (tenant: TestTenant): Promise<Json> =>
  JSON.parse(await kubectlOk(tenant, ['get', 'resourcequota', QUOTA, '-n', 'default', '-o', 'json']));

/** Reads the tenant's quota until status.used counts `want` foos (bounded): the quota controller's work. */
async function untilUsed(tenant: TestTenant, want: string): Promise<Json> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const got = await quotaOf(tenant);
    if (got.status?.used?.[COUNT] === want) return got;
    if (Date.now() > deadline) throw new Error(`${tenant.id}'s quota did not count ${want} foos within ${WAIT_MS} ms: ${JSON.stringify(got.status)}`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/**
 * The quota controller learns of a new CRD within 30 s, and recounts a quota only when its spec.hard changes: as the
 * conformance spec does, bump the count's limit (merge patch) until status.used shows it, then set it to `limit`.
 */
async function untilCounted(tenant: TestTenant, limit: string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  for (let bump = 10; ; bump++) {
    const got = await quotaOf(tenant);
    if (got.status?.used?.[COUNT] !== undefined) break;
    if (Date.now() > deadline) throw new Error(`${tenant.id}'s quota never counted foos within ${WAIT_MS} ms: ${JSON.stringify(got.status)}`);
    await kubectlOk(tenant, [
      'patch',
      'resourcequota',
      QUOTA,
      '-n',
      'default',
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { hard: { [COUNT]: String(bump) } } }),
    ]);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
  }
  await kubectlOk(tenant, ['patch', 'resourcequota', QUOTA, '-n', 'default', '--type=merge', '-p', JSON.stringify({ spec: { hard: { [COUNT]: limit } } })]);
}

t.before(async () => {
  const moduleCache = goModuleCache();
  if (moduleCache === undefined) throw new Error('the Go module cache of the rig is missing: npm run rig');
  const messages = loadProtoMessages(moduleCache);
  stack = await startStack();
  alpha = await createTestTenant(stack, 'qtalfa');
  bravo = await createTestTenant(stack, 'qtbrav');
  alphaSession = connectH2(credentialsOf(alpha.kubeconfig));
  for (const tenant of [alpha, bravo]) {
    await kubectlOk(tenant, ['apply', '-f', '-'], JSON.stringify(crd));
    await kubectlOk(tenant, ['wait', '--for=condition=Established', `crd/foos.${GROUP}`, '--timeout=60s']);
  }
  // alpha's quota as a typed client sends it (protobuf), bravo's as kubectl does (JSON): same name, same keys.
  const body = encodeBody(messages, 'k8s.io.api.core.v1.ResourceQuota', quota);
  const created = await h2Request(alphaSession, 'POST', '/api/v1/namespaces/default/resourcequotas', {
    headers: { 'content-type': 'application/vnd.kubernetes.protobuf', accept: 'application/json' },
    body,
  });
  if (created.status !== 201) throw new Error(`alpha's quota as protobuf: ${created.status} ${created.body.slice(0, 400)}`);
  await kubectlOk(bravo, ['create', '-f', '-'], JSON.stringify(quota));
  await untilCounted(alpha, '2');
  await untilCounted(bravo, '2');
});
t.teardown(async () => {
  alphaSession?.close();
  await stack?.stop();
});

t.test("a tenant's quota counts its own custom resources, under its own names", async (t) => {
  const before = await untilUsed(alpha, '0');
  t.same(before.spec.hard, quota.spec.hard, 'alpha reads back the keys it sent (protobuf)');
  t.same(Object.keys(before.status.hard).sort(), Object.keys(quota.spec.hard).sort());
  await kubectlOk(alpha, ['create', '-f', '-'], foo('one'));
  const after = await untilUsed(alpha, '1');
  t.equal(after.status.used['count/configmaps'] !== undefined, true, 'built-in counts stay as they are');
  t.notMatch(JSON.stringify(after), /qtalfa|qtbrav/, 'no prefix anywhere in the tenant view');

  const upstream = JSON.parse((await stack.kubectlDirect(['get', 'resourcequota', QUOTA, '-n', `${alpha.id}-default`, '-o', 'json'])).stdout);
  t.same(Object.keys(upstream.spec.hard).sort(), ['count/configmaps', `count/foos.${alpha.id}-${GROUP}`], "upstream the quota names alpha's group");
  t.equal(upstream.status.used[`count/foos.${alpha.id}-${GROUP}`], '1');

  const bravoQuota = await untilUsed(bravo, '0');
  t.same(bravoQuota.spec.hard, quota.spec.hard, 'bravo reads back the keys it sent (JSON)');
  t.equal(bravoQuota.status.used[COUNT], '0', "bravo's quota, same name and keys, does not count alpha's foo");
});

t.test("the quota is enforced on the tenant's custom resources, and says so in its own names", async (t) => {
  await kubectlOk(alpha, ['create', '-f', '-'], foo('two'));
  const refused = await alpha.kubectl(['create', '-f', '-'], { input: foo('three') });
  t.not(refused.code, 0, 'a third foo exceeds the quota of 2');
  t.match(refused.stderr, /exceeded quota/);
  t.notMatch(refused.stderr, /qtalfa/, 'the refusal names the tenant group as the tenant does');
  await kubectlOk(bravo, ['create', '-f', '-'], foo('three'));
  t.equal((await untilUsed(bravo, '1')).status.used[COUNT], '1', "bravo's own foo is counted by bravo's quota alone");
  t.equal((await untilUsed(alpha, '2')).status.used[COUNT], '2');
});

t.test('lists, tables and watches show each tenant its own quota only', async (t) => {
  const list = JSON.parse(await kubectlOk(alpha, ['get', 'resourcequotas', '-A', '-o', 'json']));
  t.same(
    list.items.map((item: Json) => [item.metadata.namespace, item.metadata.name, item.spec.hard]),
    [['default', QUOTA, quota.spec.hard]],
  );
  const table = await kubectlOk(alpha, ['get', 'resourcequota', QUOTA, '-n', 'default']);
  t.match(table, COUNT, 'kubectl get prints the count under the tenant group');
  t.notMatch(table, /qtalfa/);
  const watched = await alpha.kubectl(['get', 'resourcequotas', '-n', 'default', '--watch', '--output-watch-events', '-o', 'json', '--request-timeout=3s']);
  const events = watched.stdout
    .trim()
    .split(/\n(?=\{)/)
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as Json);
  t.ok(events.length > 0, 'the watch shows the quota');
  for (const event of events) t.same(event.object.spec.hard, quota.spec.hard, 'watched under the tenant names');
  const forbidden = await bravo.kubectl(['get', '--raw', `/api/v1/namespaces/${alpha.id}-default/resourcequotas/${QUOTA}`]);
  t.not(forbidden.code, 0, "bravo cannot read alpha's quota by its upstream namespace");
});

t.test('a count whose name part is too long once its group is prefixed is refused (422) in the tenant words', async (t) => {
  const key = 'count/e2e-test-resourcequota-5315-2830-crds.resourcequota.example.com';
  const long = { ...quota, metadata: { name: 'long', namespace: 'default' }, spec: { hard: { [key]: '1' } } };
  const refused = await alpha.kubectl(['create', '-f', '-'], { input: JSON.stringify(long) });
  t.not(refused.code, 0);
  t.match(refused.stderr, /is invalid: spec\.hard\[count\/e2e-test-resourcequota-5315-2830-crds\.resourcequota\.example\.com\].*no more than 56 bytes/);
  t.notMatch(refused.stderr, /qtalfa/);
});

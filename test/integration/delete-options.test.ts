// DeleteOptions reach the upstream for a tenant: a server-side dry run deletes nothing, orphaning keeps the
// dependents, preconditions are checked (issue 14: tenantgate dropped DELETE bodies, so --dry-run=server deleted).
import t from 'tap';
import { webDeployment } from '../helpers/fixtures.ts';
import { connectH2, credentialsOf, h2Request } from '../helpers/http.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';
import { kubectlOk } from '../helpers/kit.ts';

let stack: Stack;
let tenant: TestTenant;

t.before(async () => {
  stack = await startStack();
  tenant = await createTestTenant(stack, 'delopt');
});
t.teardown(() => stack?.stop());

async function upstreamNames(args: string[]): Promise<string[]> {
  const r = await stack.kubectlDirect([...args, '-o', 'name']);
  return r.stdout
    .split('\n')
    .filter((line) => line !== '')
    .sort();
}

t.test('kubectl delete --dry-run=server deletes nothing, one object or a collection', async (t) => {
  await kubectlOk(tenant, ['create', 'configmap', 'keep-me', '--from-literal=a=1']);
  await kubectlOk(tenant, ['create', 'configmap', 'keep-me-too', '--from-literal=a=2']);
  const dryRun = await tenant.kubectl(['delete', 'configmap', 'keep-me', '--dry-run=server']);
  t.equal(dryRun.code, 0, dryRun.stderr);
  t.match(dryRun.stdout, /configmap "keep-me" deleted.*\(server dry run\)/);
  const all = await tenant.kubectl(['delete', 'configmaps', '--all', '--dry-run=server']);
  t.equal(all.code, 0, all.stderr);
  t.same(
    await upstreamNames(['-n', 'delopt-default', 'get', 'configmaps']),
    ['configmap/keep-me', 'configmap/keep-me-too', 'configmap/kube-root-ca.crt'],
    'upstream, every configmap is still there',
  );
});

t.test('preconditions are checked: a wrong uid is a conflict, the right one deletes', async (t) => {
  await kubectlOk(tenant, ['create', 'configmap', 'guarded', '--from-literal=a=1']);
  const uid = (await kubectlOk(tenant, ['get', 'configmap', 'guarded', '-o', 'jsonpath={.metadata.uid}'])).trim();
  const session = connectH2(credentialsOf(tenant.kubeconfig));
  t.teardown(() => session.close());
  const path = '/api/v1/namespaces/default/configmaps/guarded';
  const body = (preconditionUid: string) => JSON.stringify({ apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: preconditionUid } });
  const wrong = await h2Request(session, 'DELETE', path, {
    headers: { 'content-type': 'application/json' },
    body: body('00000000-0000-0000-0000-000000000000'),
  });
  t.equal(wrong.status, 409, 'a precondition that does not hold: 409 Conflict');
  t.match(wrong.json(), { kind: 'Status', reason: 'Conflict' });
  t.notMatch(wrong.body, /delopt-/, "in the tenant's names");
  t.same(await upstreamNames(['-n', 'delopt-default', 'get', 'configmap', 'guarded']), ['configmap/guarded'], 'still there');
  const malformed = await h2Request(session, 'DELETE', path, { headers: { 'content-type': 'application/json' }, body: '{"preconditions":' });
  t.equal(malformed.status, 400, 'a malformed DeleteOptions body is a 400');
  const right = await h2Request(session, 'DELETE', path, { headers: { 'content-type': 'application/json' }, body: body(uid) });
  t.equal(right.status, 200, right.body);
  t.same(await upstreamNames(['-n', 'delopt-default', 'get', 'configmaps', '--field-selector=metadata.name=guarded']), [], 'deleted');
});

t.test('--cascade=orphan keeps the ReplicaSet of a deleted Deployment', async (t) => {
  await tenant.kubectl(['apply', '-f', '-'], { input: JSON.stringify(webDeployment('web', 'default')) });
  let replicaSets: string[] = [];
  for (let i = 0; i < 60 && replicaSets.length === 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    replicaSets = (await kubectlOk(tenant, ['get', 'replicasets', '-o', 'name'])).split('\n').filter((line) => line !== '');
  }
  t.equal(replicaSets.length, 1, 'the controller made a ReplicaSet');
  const deleted = await tenant.kubectl(['delete', 'deployment', 'web', '--cascade=orphan']);
  t.equal(deleted.code, 0, deleted.stderr);
  // Give the garbage collector the time it took to remove dependents before (tenant-isolation's Deployment test).
  await new Promise((resolve) => setTimeout(resolve, 5000));
  const left = (await kubectlOk(tenant, ['get', 'replicasets', '-o', 'json'])) as string;
  const items = JSON.parse(left).items as { metadata: { name: string; ownerReferences?: unknown[] } }[];
  t.same(
    items.map((item) => item.metadata.name),
    replicaSets.map((name) => name.replace(/^replicaset\.apps\//, '')),
    'the ReplicaSet is still there',
  );
  t.equal(items[0]?.metadata.ownerReferences, undefined, 'orphaned: no owner any more');
});

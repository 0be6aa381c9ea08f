// The Tenant API through real clients: kubectl (apply, get, patch, delete, watch, explain, api-resources) and
// @kubernetes/client-node as tenantgate's administrator; a tenant's own credentials refused and kept blind to it.
import * as k8s from '@kubernetes/client-node';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parse as parseYaml } from 'yaml';
import type { Tenant } from '../../lib/tenants/tenant.ts';
import { fetchKubeconfig } from '../../lib/tenants/tenant-command.ts';
import { productionEnv, startStack } from '../helpers/stack.ts';
import { firstRequest, withClient } from '../helpers/tenants.ts';

const stack = await startStack({ controllers: false });
t.teardown(() => stack.stop());
const kubectl = stack.kubectl;

const tenantYaml = (name: string, id: number) => `apiVersion: tenant.kubezoo.io/v1alpha1
kind: Tenant
metadata:
  name: ${name}
  labels: {tier: gold}
spec:
  id: ${id}
  quota:
    hard: {cpu: "4"}
`;

t.test('kubectl apply, get, patch (merge, strategic, json), server-side apply and delete', async (t) => {
  const applied = await kubectl(['apply', '-f', '-'], { input: tenantYaml('abc123', 1) });
  t.equal(applied.code, 0, applied.stderr);
  t.match(applied.stdout, /tenant.tenant.kubezoo.io\/abc123 created/);

  const table = await kubectl(['get', 'tenants']);
  t.equal(table.code, 0, table.stderr);
  t.match(table.stdout, /^NAME\s+STATUS\s+AGE\n/);
  t.match(table.stdout, /\nabc123\s+(Pending|Ready)\s+\d+s\n/);

  const yaml = await kubectl(['get', 'tenant', 'abc123', '-o', 'yaml']);
  const tenant = parseYaml(yaml.stdout) as Tenant;
  t.equal(tenant.spec.id, 1);
  t.same(tenant.spec.quota, { hard: { cpu: '4' } });
  t.ok(tenant.metadata.annotations?.['kubectl.kubernetes.io/last-applied-configuration'], 'client-side apply keeps its annotation');

  const reapplied = await kubectl(['apply', '-f', '-'], { input: tenantYaml('abc123', 2) });
  t.equal(reapplied.code, 0, reapplied.stderr);
  t.match(reapplied.stdout, /configured/);

  for (const [type, patch, check] of [
    ['merge', '{"metadata":{"labels":{"tier":"silver"}}}', (x: Tenant) => x.metadata.labels?.tier === 'silver'],
    ['strategic', '{"spec":{"quota":{"hard":{"memory":"8Gi"}}}}', (x: Tenant) => x.spec.quota?.hard?.memory === '8Gi' && x.spec.quota?.hard?.cpu === '4'],
    ['json', '[{"op":"replace","path":"/spec/id","value":3}]', (x: Tenant) => x.spec.id === 3],
  ] as const) {
    const patched = await kubectl(['patch', 'tenant', 'abc123', '--type', type, '-p', patch, '-o', 'json']);
    t.equal(patched.code, 0, `${type}: ${patched.stderr}`);
    t.ok(check(JSON.parse(patched.stdout)), `${type} patch applied`);
  }

  const serverSide = await kubectl(['apply', '--server-side', '-f', '-'], { input: tenantYaml('ssa001', 5) });
  t.equal(serverSide.code, 0, serverSide.stderr);
  t.match(serverSide.stdout, /ssa001 serverside-applied/);
  const serverSideAgain = await kubectl(['apply', '--server-side', '-f', '-'], { input: tenantYaml('ssa001', 6) });
  t.equal(serverSideAgain.code, 0, serverSideAgain.stderr);
  t.equal(JSON.parse((await kubectl(['get', 'tenant', 'ssa001', '-o', 'json'])).stdout).spec.id, 6);

  // Used once, so it has namespaces upstream, which this rig (no controller manager) never finishes deleting: the
  // Tenant stays Terminating. (A tenant never used has nothing upstream and would be gone before the get below.)
  const kubeconfig = join(stack.dir, 'tenant-ssa001.kubeconfig');
  writeFileSync(kubeconfig, await withClient(stack.adminKubeconfig, (pool) => fetchKubeconfig(pool, 'ssa001')), { mode: 0o600 });
  await withClient(kubeconfig, (pool) => firstRequest(pool, 'ssa001'));
  const deleted = await kubectl(['delete', 'tenant', 'ssa001', '--wait=false']);
  t.equal(deleted.code, 0, deleted.stderr);
  const after = await kubectl(['get', 'tenant', 'ssa001']);
  t.match(after.stdout, /ssa001\s+Terminating/, 'deletion is the lifecycle controller’s to finish');
});

t.test('invalid ids are refused by kubectl with 422 and nothing is stored', async (t) => {
  for (const name of ['kube-p', 'abc12']) {
    const result = await kubectl(['create', '-f', '-'], { input: tenantYaml(name, 1) });
    t.not(result.code, 0);
    t.match(result.stderr, /is invalid: metadata\.name/);
    t.match((await kubectl(['get', 'tenant', name])).stderr, /NotFound/);
  }
  // Upper case is refused by kubectl's own name check, or by tenantgate: either way it is not stored.
  const upper = await kubectl(['create', '-f', '-'], { input: tenantYaml('ABCDEF', 1) });
  t.not(upper.code, 0);
  t.notMatch((await kubectl(['get', 'tenants', '-o', 'name'])).stdout, /ABCDEF/i);
});

t.test('kubectl get tenants -w sees a tenant created after it started', async (t) => {
  const watcher = spawn(stack.rig.binaries.kubectl, ['--kubeconfig', stack.adminKubeconfig, 'get', 'tenants', '-w', '--request-timeout=20s'], {
    env: productionEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => void watcher.kill());
  let out = '';
  const seen = (pattern: RegExp) =>
    new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 15_000);
      const check = () => {
        if (!pattern.test(out)) return;
        clearTimeout(timer);
        resolve(true);
      };
      watcher.stdout!.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        check();
      });
      check();
    });
  t.ok(await seen(/abc123/), 'the initial list is printed');
  const created = await kubectl(['create', '-f', '-'], { input: tenantYaml('wat001', 9) });
  t.equal(created.code, 0, created.stderr);
  t.ok(await seen(/wat001\s+Ready/), out);
  t.equal(out.match(/^NAME/gm)?.length, 1, 'the header is printed once');
});

t.test('discovery and OpenAPI: kubectl api-resources and kubectl explain', async (t) => {
  const resources = await kubectl(['api-resources', '--api-group', 'tenant.kubezoo.io']);
  t.equal(resources.code, 0, resources.stderr);
  t.match(resources.stdout, /tenants\s+tenant\.kubezoo\.io\/v1alpha1\s+false\s+Tenant/);
  const explain = await kubectl(['explain', 'tenant']);
  t.equal(explain.code, 0, explain.stderr);
  t.match(explain.stdout, /KIND:\s+Tenant/);
  t.match(explain.stdout, /spec\s+<Object>/);
  const spec = await kubectl(['explain', 'tenant.spec.quota']);
  t.equal(spec.code, 0, spec.stderr);
  t.match(spec.stdout, /hard\s+<map\[string\]string>/);
  const builtins = await kubectl(['api-resources', '--api-group', 'apps']);
  t.match(builtins.stdout, /deployments/, "the upstream's own groups are still discovered");
});

t.test('@kubernetes/client-node CustomObjectsApi: create, list, get, delete', async (t) => {
  const config = new k8s.KubeConfig();
  config.loadFromFile(stack.adminKubeconfig);
  const api = config.makeApiClient(k8s.CustomObjectsApi);
  const group = 'tenant.kubezoo.io';
  const version = 'v1alpha1';
  const plural = 'tenants';
  const created = (await api.createClusterCustomObject({
    group,
    version,
    plural,
    body: { apiVersion: `${group}/${version}`, kind: 'Tenant', metadata: { name: 'cli001' }, spec: { id: 11 } },
  })) as Tenant;
  t.equal(created.metadata.name, 'cli001');
  const listed = (await api.listClusterCustomObject({ group, version, plural })) as { items: Tenant[] };
  t.ok(listed.items.some((item) => item.metadata.name === 'cli001'));
  const got = (await api.getClusterCustomObject({ group, version, plural, name: 'cli001' })) as Tenant;
  t.equal(got.metadata.uid, created.metadata.uid);
  const deleted = (await api.deleteClusterCustomObject({ group, version, plural, name: 'cli001' })) as Tenant;
  t.ok(deleted.metadata.deletionTimestamp);
  await t.rejects(
    api.createClusterCustomObject({ group, version, plural, body: { apiVersion: `${group}/${version}`, kind: 'Tenant', metadata: { name: 'kube-p' } } }),
    {
      code: 422,
    },
  );
});

t.test("a tenant's credentials get 403 on every verb of the group", async (t) => {
  const kubeconfig = stack.kubeconfigFor({ user: 'admin', groups: [], tenant: 'abc123' });
  const tenant = { kubectl: (args: string[], o: { input?: string } = {}) => stack.kubectl(args, { kubeconfig, input: o.input }) };
  // What a tenant's write would change; status and resourceVersion move with the lifecycle controller's own work.
  const tenantsAsWritten = async () =>
    (JSON.parse((await kubectl(['get', 'tenants', '-o', 'json'])).stdout).items as Tenant[]).map(
      ({ metadata: { name, uid, labels, annotations, deletionTimestamp }, spec }) => ({ name, uid, labels, annotations, deletionTimestamp, spec }),
    );
  const before = await tenantsAsWritten();
  const attempts = [
    ['get', 'tenants'],
    ['get', '--raw', '/apis/tenant.kubezoo.io/v1alpha1/tenants/abc123'],
    ['get', '--raw', '/apis/tenant.kubezoo.io/v1alpha1/tenants?watch=1'],
    ['get', '--raw', '/apis/tenant.kubezoo.io/v1alpha1/tenants/abc123/kubeconfig'],
    ['create', '--raw', '/apis/tenant.kubezoo.io/v1alpha1/tenants', '-f', '-'],
    ['replace', '--raw', '/apis/tenant.kubezoo.io/v1alpha1/tenants/abc123', '-f', '-'],
    ['delete', '--raw', '/apis/tenant.kubezoo.io/v1alpha1/tenants/abc123'],
  ];
  for (const args of attempts) {
    const input = args.includes('-f') ? JSON.stringify({ apiVersion: 'tenant.kubezoo.io/v1alpha1', kind: 'Tenant', metadata: { name: 'abc123' } }) : undefined;
    const result = await tenant.kubectl(args, { input });
    t.not(result.code, 0, args.join(' '));
    t.match(result.stderr, /forbidden|Forbidden|the server doesn't have a resource type/, `${args.join(' ')}: ${result.stderr}`);
  }
  t.match((await tenant.kubectl(['get', '--raw', '/apis/tenant.kubezoo.io/v1alpha1/tenants'])).stderr, /Forbidden/);
  // Tenants already being deleted (by the tests before) may finish going meanwhile; that is the lifecycle's work, not the tenant's.
  const goingAlready = new Set(before.filter((tenant) => tenant.deletionTimestamp).map((tenant) => tenant.name));
  t.same(
    (await tenantsAsWritten()).filter((tenant) => !goingAlready.has(tenant.name)),
    before.filter((tenant) => !goingAlready.has(tenant.name)),
    'nothing changed',
  );
});

t.test("the kubeconfig an administrator gets works as the tenant's admin, who does not discover the group; none once it is deleted", async (t) => {
  const { files } = stack;
  const admin = (args: string[], input?: string) => stack.kubectl(args, { input });

  t.equal((await admin(['create', '-f', '-'], tenantYaml('kcf001', 1))).code, 0);
  const ready = await admin(['wait', '--for=condition=Ready', 'tenant/kcf001', '--timeout=30s']);
  t.equal(ready.code, 0, `the lifecycle controller sets the tenant up upstream: ${ready.stderr}`);
  const issued = await admin(['get', '--raw', '/apis/tenant.kubezoo.io/v1alpha1/tenants/kcf001/kubeconfig']);
  t.equal(issued.code, 0, issued.stderr);
  const tenantKubeconfig = join(files.dir, 'kcf001.kubeconfig');
  writeFileSync(tenantKubeconfig, issued.stdout, { mode: 0o600 });
  const namespaces = await stack.rig.kubectl(['get', 'namespaces', '-o', 'name'], { kubeconfig: tenantKubeconfig });
  t.equal(namespaces.code, 0, namespaces.stderr);
  t.match(namespaces.stdout, /namespace\/default\n/);
  t.notMatch(namespaces.stdout, /kcf001-/, 'the tenant sees its namespaces without the prefix');
  const refused = await stack.rig.kubectl(['get', 'tenants'], { kubeconfig: tenantKubeconfig });
  t.match(refused.stderr, /Forbidden|forbidden|doesn't have a resource type/);
  const discovered = await stack.rig.kubectl(['api-resources'], { kubeconfig: tenantKubeconfig });
  t.equal(discovered.code, 0, discovered.stderr);
  t.match(discovered.stdout, /deployments/);
  t.notMatch(discovered.stdout, /kubezoo/, 'the group is not in the tenant’s discovery');
  t.notMatch((await stack.rig.kubectl(['get', '--raw', '/openapi/v3'], { kubeconfig: tenantKubeconfig })).stdout, /kubezoo/);

  t.match((await admin(['get', '--raw', '/apis/tenant.kubezoo.io/v1alpha1/tenants/nope01/kubeconfig'])).stderr, /NotFound|not found/);
  t.equal((await admin(['delete', 'tenant', 'kcf001', '--wait=false'])).code, 0);
  t.match(
    (await admin(['get', '--raw', '/apis/tenant.kubezoo.io/v1alpha1/tenants/kcf001/kubeconfig'])).stderr,
    /NotFound|not found/,
    'no credentials for a terminating tenant',
  );
});

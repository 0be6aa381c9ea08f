// ResourceQuota's resource names: counts of a tenant's CRD groups take its prefix upstream and lose it on the way
// back; every other resource name is the same for everyone; a count of another tenant's group is never shown.
import t from 'tap';
import { kindOf } from '../../lib/convert/kinds.ts';
import { objectToTenant, objectToUpstream, type ConvertContext, type Json } from '../../lib/convert/rules/index.ts';
import { quotaResourceToTenant, quotaResourceToUpstream } from '../../lib/convert/rules/quota.ts';
import { thrownStatus } from '../helpers/status-error.ts';

const TENANT = 'abc123';
const CTX: ConvertContext = { tenant: TENANT, scopeOf: () => undefined, kindScope: () => undefined };
const OTHER: ConvertContext = { ...CTX, tenant: 'xyz789' };
const ROW = kindOf('', 'resourcequotas')!;

t.test('the table of kinds gives ResourceQuota its own rule', async (t) => {
  t.equal(ROW.rule, 'resourcequota');
});

t.test('resource names both ways', async (t) => {
  const table: [tenant: string, upstream: string][] = [
    ['count/foos.mygroup.example.com', 'count/foos.abc123-mygroup.example.com'],
    ['count/e2e-test-foo-crds.e2e-test.k8s.io', 'count/e2e-test-foo-crds.abc123-e2e-test.k8s.io'],
    // Already prefixed-looking: it stays within this tenant's groups upstream, and reads back as written.
    ['count/foos.xyz789-g.example.com', 'count/foos.abc123-xyz789-g.example.com'],
    ['count/foos.abc123-g.example.com', 'count/foos.abc123-abc123-g.example.com'],
    ['count/deployments.apps', 'count/deployments.apps'],
    ['count/jobs.batch', 'count/jobs.batch'],
    ['count/configmaps', 'count/configmaps'],
    ['count/', 'count/'],
    ['pods', 'pods'],
    ['services.loadbalancers', 'services.loadbalancers'],
    ['requests.cpu', 'requests.cpu'],
    ['limits.memory', 'limits.memory'],
    ['requests.nvidia.com/gpu', 'requests.nvidia.com/gpu'],
    ['hugepages-2Mi', 'hugepages-2Mi'],
    ['fast.storageclass.storage.k8s.io/requests.storage', 'fast.storageclass.storage.k8s.io/requests.storage'],
    ['gold.storageclass.storage.k8s.io/persistentvolumeclaims', 'gold.storageclass.storage.k8s.io/persistentvolumeclaims'],
  ];
  for (const [tenant, upstream] of table) {
    t.equal(quotaResourceToUpstream(tenant, TENANT), upstream, `${tenant} → ${upstream}`);
    t.equal(quotaResourceToTenant(upstream, TENANT), tenant, `${upstream} → ${tenant}`);
  }
});

t.test("counts of groups that are not the tenant's are never shown to it", async (t) => {
  for (const upstream of ['count/foos.xyz789-mygroup.example.com', 'count/foos.mygroup.example.com', 'count/foos.abc123-apps']) {
    t.equal(quotaResourceToTenant(upstream, TENANT), null, upstream);
  }
});

const quota = (): Json => ({
  apiVersion: 'v1',
  kind: 'ResourceQuota',
  metadata: { name: 'test-quota', namespace: 'ns' },
  spec: {
    hard: { 'count/foos.mygroup.example.com': '1', 'count/foos.xyz789-mygroup.example.com': '2', pods: '5', 'requests.cpu': '1' },
    scopeSelector: { matchExpressions: [{ scopeName: 'PriorityClass', operator: 'In', values: ['count/foos.mygroup.example.com'] }] },
  },
  status: { hard: { 'count/foos.mygroup.example.com': '1', pods: '5' }, used: { 'count/foos.mygroup.example.com': '0', pods: '0' } },
});

t.test('a whole quota: spec.hard, status.hard and status.used mapped, scopes untouched; it reads back as sent', async (t) => {
  const upstream = objectToUpstream(quota(), CTX, ROW) as any;
  t.same(Object.keys(upstream.spec.hard).sort(), [
    'count/foos.abc123-mygroup.example.com',
    'count/foos.abc123-xyz789-mygroup.example.com',
    'pods',
    'requests.cpu',
  ]);
  t.equal(upstream.spec.hard['count/foos.abc123-mygroup.example.com'], '1');
  t.same(upstream.status.used, { 'count/foos.abc123-mygroup.example.com': '0', pods: '0' });
  t.same(upstream.status.hard, { 'count/foos.abc123-mygroup.example.com': '1', pods: '5' });
  t.same(upstream.spec.scopeSelector.matchExpressions[0].values, ['count/foos.mygroup.example.com'], 'scope selectors name scopes, not resources');
  const back = objectToTenant(structuredClone(upstream), CTX, ROW) as any;
  t.same(back.spec, quota().spec);
  t.same(back.status, quota().status);
});

t.test("another tenant never reads the first tenant's quota, nor its groups", async (t) => {
  const upstream = objectToUpstream(quota(), CTX, ROW);
  t.equal(objectToTenant(structuredClone(upstream), OTHER, ROW), null, "the namespace is not the other tenant's");
  // An upstream quota that somehow names another tenant's group: the tenant sees the rest of it, not that key.
  const mixed: any = objectToUpstream(quota(), CTX, ROW);
  mixed.status.used['count/foos.xyz789-mygroup.example.com'] = '3';
  const view = objectToTenant(mixed, CTX, ROW) as any;
  t.same(view.status.used, { 'count/foos.mygroup.example.com': '0', pods: '0' });
});

t.test('a count whose name part would pass 63 bytes once its group is prefixed: 422 in the tenant words', async (t) => {
  const group = 'resourcequota.example.com';
  const withPlural = (plural: string): Json => ({
    apiVersion: 'v1',
    kind: 'ResourceQuota',
    metadata: { name: 'q', namespace: 'ns' },
    spec: { hard: { [`count/${plural}.${group}`]: '1' } },
  });
  const fits = 'p'.repeat(56 - group.length - 1);
  t.same(Object.keys((objectToUpstream(withPlural(fits), CTX, ROW) as any).spec.hard), [`count/${fits}.abc123-${group}`], '56 bytes fit');
  const tooLong = 'e2e-test-resourcequota-5315-2830-crds'; // the conformance spec's: 63 bytes with its group
  const error = thrownStatus(() => objectToUpstream(withPlural(tooLong), CTX, ROW));
  t.equal(error.code, 422);
  t.match(error.message, `spec.hard[count/${tooLong}.${group}]`);
  t.match(error.message, /no more than 56 bytes/);
  t.notMatch(error.message, /abc123/);
  const builtIn: Json = {
    apiVersion: 'v1',
    kind: 'ResourceQuota',
    metadata: { name: 'q', namespace: 'ns' },
    spec: { hard: { [`count/${'x'.repeat(50)}.apps`]: '1' } },
  };
  t.ok(objectToUpstream(builtIn, CTX, ROW), "built-in groups' counts are the apiserver's to judge");
});

import t from 'tap';
import { STORED_RBAC_GROUP } from '../../lib/convert/kinds.ts';
import { TENANT_LABEL } from '../../lib/convert/prefix.ts';
import { isTenantsObject, ownershipOf } from '../../lib/tenants/cleanup.ts';
import { conditionOf, setCondition } from '../../lib/tenants/conditions.ts';
import { TENANT_API_VERSION, type Tenant } from '../../lib/tenants/tenant.ts';

const RBAC = 'rbac.authorization.k8s.io';
const STORED_RBAC = STORED_RBAC_GROUP;
const labelled = (id: string) => ({ [TENANT_LABEL]: id });

t.test('which upstream objects a deleted tenant owns', async (t) => {
  // [tenant, group, resource, upstream name, labels, owned]
  const cases: [string, string, string, string, Record<string, string> | undefined, boolean][] = [
    ['abc123', RBAC, 'clusterroles', 'abc123-reader', undefined, true],
    ['abc123', RBAC, 'clusterroles', 'abc123', labelled('abc123'), false], // no dash
    ['abc123', RBAC, 'clusterroles', 'abc123x-reader', labelled('abc123'), false], // near miss
    ['abc123', RBAC, 'clusterroles', 'abc1234-reader', undefined, false],
    ['system', RBAC, 'clusterroles', 'system:controller:namespace-controller', undefined, false],
    // A tenant's ClusterRoleBindings are tenantgate's custom resources; real ones are its only when an older tenantgate
    // made them (labelled): a real `system-mine` without the label may be the platform's.
    ['system', STORED_RBAC, 'clusterrolebindings', 'system:basic-user', labelled('system'), false],
    ['system', STORED_RBAC, 'clusterrolebindings', 'system-mine', undefined, true],
    ['system', RBAC, 'clusterrolebindings', 'system:basic-user', labelled('system'), false],
    ['system', RBAC, 'clusterrolebindings', 'system-mine', labelled('system'), true],
    ['system', RBAC, 'clusterrolebindings', 'system-mine', undefined, false],
    ['defaul', '', 'persistentvolumes', 'default-pv', undefined, false],
    ['defaul', '', 'persistentvolumes', 'defaul-pv', undefined, true],
    // CRDs are `<plural>.<id>-<group>`: the prefix sits after the first dot.
    ['abc123', 'apiextensions.k8s.io', 'customresourcedefinitions', 'widgets.abc123-example.com', undefined, true],
    ['abc123', 'apiextensions.k8s.io', 'customresourcedefinitions', 'widgets.abc123x-example.com', undefined, false],
    ['abc123', 'apiextensions.k8s.io', 'customresourcedefinitions', 'abc123-widgets.example.com', labelled('abc123'), false],
    ['abc123', 'apiextensions.k8s.io', 'customresourcedefinitions', 'widgets.xyz789-example.com', undefined, false],
    // Shared and hidden kinds, and other groups' custom resources: prefix and label, both.
    ['abc123', 'scheduling.k8s.io', 'priorityclasses', 'abc123-high', labelled('abc123'), true],
    ['abc123', 'scheduling.k8s.io', 'priorityclasses', 'abc123-high', undefined, false],
    ['abc123', 'scheduling.k8s.io', 'priorityclasses', 'abc123-high', labelled('xyz789'), false],
    ['abc123', '', 'nodes', 'abc123-pool-1', undefined, false],
    ['abc123', 'platform.example.com', 'gadgets', 'abc123-g', labelled('abc123'), true],
    ['abc123', 'platform.example.com', 'gadgets', 'abc123-g', undefined, false],
    // Namespaces are handled on their own; the tenant's own custom resources go with its CRDs.
    ['abc123', '', 'namespaces', 'abc123-default', labelled('abc123'), false],
    ['abc123', 'abc123-example.com', 'gizmos', 'anything', labelled('abc123'), false],
  ];
  for (const [tenant, group, resource, name, labels, owned] of cases) {
    const ownership = ownershipOf(group, resource, tenant);
    t.equal(
      isTenantsObject(ownership, name, labels, tenant),
      owned,
      `${tenant}: ${resource}${group ? '.' + group : ''} ${name} ${labels ? JSON.stringify(labels) : 'unlabelled'} → ${owned ? 'deleted' : 'kept'}`,
    );
  }
});

t.test('a condition changes its transition time only when its status changes', async (t) => {
  const tenant: Tenant = {
    apiVersion: TENANT_API_VERSION,
    kind: 'Tenant',
    metadata: { name: 'abc123', uid: 'u', resourceVersion: '1', creationTimestamp: '2026-01-01T00:00:00Z' },
    spec: {},
  };
  t.equal(setCondition(tenant, { type: 'Ready', status: 'False', reason: 'BootstrapFailed', message: 'a' }, new Date('2026-01-01T00:00:01Z')), true, 'added');
  t.equal(
    setCondition(tenant, { type: 'Ready', status: 'False', reason: 'BootstrapFailed', message: 'a' }, new Date('2026-01-01T00:00:02Z')),
    false,
    'the same again: no write',
  );
  t.equal(
    setCondition(tenant, { type: 'Ready', status: 'False', reason: 'BootstrapFailed', message: 'b' }, new Date('2026-01-01T00:00:03Z')),
    true,
    'new message',
  );
  t.equal(conditionOf(tenant, 'Ready')?.lastTransitionTime, '2026-01-01T00:00:01Z', 'same status keeps its transition time');
  setCondition(tenant, { type: 'Ready', status: 'True', reason: 'Bootstrapped' }, new Date('2026-01-01T00:00:04Z'));
  t.same(conditionOf(tenant, 'Ready'), { type: 'Ready', status: 'True', reason: 'Bootstrapped', lastTransitionTime: '2026-01-01T00:00:04Z' });
  setCondition(tenant, { type: 'Terminating', status: 'True' });
  t.same(
    tenant.status?.conditions?.map((c) => c.type),
    ['Ready', 'Terminating'],
    'one condition per type',
  );
});

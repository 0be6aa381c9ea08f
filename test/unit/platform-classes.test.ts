// A tenant's pod never names a platform-critical priority class, in JSON or protobuf; a template may (its pods are the
// upstream's to refuse, tenants/priority-policy.ts), and any other class passes as the tenant wrote it.
import t from 'tap';
import { kindOf, type KindRow } from '../../lib/convert/kinds.ts';
import { protobufBodyToUpstream } from '../../lib/convert/protobuf/to-upstream.ts';
import { objectToUpstream, type ConvertContext } from '../../lib/convert/rules/index.ts';
import { HIGHEST_USER_DEFINABLE_PRIORITY, PLATFORM_CRITICAL_PRIORITY_CLASSES } from '../../lib/convert/rules/platform-classes.ts';
import { TENANT_PRIORITY_POLICY } from '../../lib/tenants/priority-policy.ts';
import { encodeBody, goModuleCache, loadProtoMessages } from '../helpers/k8s-proto.ts';
import { thrownStatus } from '../helpers/status-error.ts';

const TENANT = 'abc123';
const ctx: ConvertContext = { tenant: TENANT, scopeOf: () => undefined, kindScope: () => undefined };
const podRow = kindOf('', 'pods') as KindRow;
const deploymentRow = kindOf('apps', 'deployments') as KindRow;
const podOf = (priorityClassName?: string) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web', namespace: 'default' },
  spec: { ...(priorityClassName === undefined ? {} : { priorityClassName }), containers: [{ name: 'main', image: 'nginx' }] },
});

t.test('a pod naming a platform-critical class is refused with a 403 that says why', async (t) => {
  t.same([...PLATFORM_CRITICAL_PRIORITY_CLASSES], ['system-node-critical', 'system-cluster-critical']);
  for (const name of PLATFORM_CRITICAL_PRIORITY_CLASSES) {
    const refusal = thrownStatus(() => objectToUpstream(podOf(name), ctx, podRow));
    t.equal(refusal.code, 403, name);
    t.match(refusal.message, `priority class "${name}" is the platform's own`);
  }
  for (const name of [undefined, 'high', 'system-node-critical-ish', 'System-Node-Critical']) {
    const converted = objectToUpstream(podOf(name), ctx, podRow) as { spec: { priorityClassName?: string } };
    t.equal(converted.spec.priorityClassName, name, `${name ?? 'no class'} passes as written`);
  }
});

t.test("a Deployment's template may name one: the upstream refuses the pods its ReplicaSet makes", async (t) => {
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', namespace: 'default' },
    spec: { template: { spec: podOf('system-node-critical').spec } },
  };
  const converted = objectToUpstream(deployment, ctx, deploymentRow) as { spec: { template: { spec: { priorityClassName: string } } } };
  t.equal(converted.spec.template.spec.priorityClassName, 'system-node-critical');
});

t.test('the upstream policy judges the resolved priority of every pod in a tenant namespace', async (t) => {
  const [validation] = TENANT_PRIORITY_POLICY.spec.validations;
  t.ok(
    validation!.expression.startsWith(`!has(object.spec.priority) || object.spec.priority <= ${HIGHEST_USER_DEFINABLE_PRIORITY} || `),
    'no priority above the user-definable range ...',
  );
  t.match(
    validation!.expression,
    "object.spec.priorityClassName in namespaceObject.metadata.annotations['tenantgate.kubezoo.io/allowed-priorityclasses'].split(',')",
    '... unless the namespace lists the class (its Tenant names it)',
  );
  t.same(TENANT_PRIORITY_POLICY.spec.matchConstraints.namespaceSelector, { matchExpressions: [{ key: 'kubezoo.io/tenant', operator: 'Exists' }] });
  t.equal(TENANT_PRIORITY_POLICY.spec.failurePolicy, 'Fail');
});

const moduleCache = goModuleCache();
t.test(
  'in protobuf too',
  { skip: moduleCache === undefined ? 'the Go module cache with k8s.io/api is not on this machine: build the rig first (npm run rig)' : false },
  async (t) => {
    const messages = loadProtoMessages(moduleCache!);
    const body = (name?: string) => encodeBody(messages, 'k8s.io.api.core.v1.Pod', podOf(name));
    const options = { verb: 'create', subresource: '', version: 'v1' };
    const refusal = thrownStatus(() => protobufBodyToUpstream(body('system-cluster-critical'), podRow, TENANT, options));
    t.equal(refusal.code, 403);
    t.match(refusal.message, 'priority class "system-cluster-critical" is the platform\'s own');
    t.ok(protobufBodyToUpstream(body('high'), podRow, TENANT, options).length > 0, 'another class passes');
    t.ok(protobufBodyToUpstream(body(), podRow, TENANT, options).length > 0, 'and no class at all');
  },
);

// A tenant's admission policy judges the tenant's namespace names, against the real rig: its CEL reads
// namespaceObject.metadata.name and object.metadata.namespace without the upstream prefix, reads back as written, and
// another tenant using the same names is not judged by it.
import t from 'tap';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';

let stack: Stack;
let a: TestTenant;
let b: TestTenant;

t.before(async () => {
  stack = await startStack();
  [a, b] = await Promise.all([createTestTenant(stack, 'celnsa'), createTestTenant(stack, 'celnsb')]);
});
t.teardown(() => stack?.stop());

const NAMESPACE_CHECK = "namespaceObject.metadata.name == 'team'";
const OBJECT_CHECK = "object.metadata.namespace == 'team' && (!has(object.metadata.namespace) || request.namespace == 'team')";
const MESSAGE = "'only team, not ' + object.metadata.namespace";

const policy = JSON.stringify({
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'ValidatingAdmissionPolicy',
  metadata: { name: 'only-team' },
  spec: {
    failurePolicy: 'Fail',
    matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] }] },
    validations: [{ expression: NAMESPACE_CHECK }, { expression: OBJECT_CHECK, messageExpression: MESSAGE }],
  },
});
const binding = JSON.stringify({
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind: 'ValidatingAdmissionPolicyBinding',
  metadata: { name: 'only-team' },
  spec: { policyName: 'only-team', validationActions: ['Deny'] },
});

async function createConfigMap(tenant: TestTenant, namespace: string, name: string) {
  return tenant.kubectl(['create', 'configmap', name, '-n', namespace, '--from-literal=a=b']);
}

t.test("a tenant's policy compares its own namespace names, and reads back as written", async (t) => {
  for (const tenant of [a, b]) {
    const namespaces = await tenant.kubectl(['create', 'namespace', 'team']);
    t.equal(namespaces.code, 0, namespaces.stderr);
    const other = await tenant.kubectl(['create', 'namespace', 'other']);
    t.equal(other.code, 0, other.stderr);
  }
  for (const body of [policy, binding]) {
    const created = await a.kubectl(['create', '-f', '-'], { input: body });
    t.equal(created.code, 0, created.stderr);
  }

  // The upstream loads new policies within a second or so: wait until `other` is refused.
  let refusal = '';
  for (let i = 0; i < 100 && refusal === ''; i++) {
    const answer = await createConfigMap(a, 'other', `probe-${i}`);
    if (answer.code !== 0) refusal = answer.stderr;
    else await new Promise((resolve) => setTimeout(resolve, 200));
  }
  t.match(refusal, /denied request/, 'a ConfigMap in `other` is refused');
  t.match(refusal, /failed expression: namespaceObject\.metadata\.name == 'team'/, "the refusal quotes the tenant's expression");
  t.notMatch(refusal, /substring/, 'as the tenant wrote it');

  const allowed = await createConfigMap(a, 'team', 'in-team');
  t.equal(allowed.code, 0, `a ConfigMap in \`team\` is allowed: ${allowed.stderr}`);

  const read = await a.kubectl(['get', 'validatingadmissionpolicy', 'only-team', '-o', 'json']);
  t.equal(read.code, 0, read.stderr);
  const validations = JSON.parse(read.stdout).spec.validations as { expression: string; messageExpression?: string }[];
  t.same(
    validations.map((v) => [v.expression, v.messageExpression]),
    [
      [NAMESPACE_CHECK, undefined],
      [OBJECT_CHECK, MESSAGE],
    ],
    'the expressions read back byte for byte',
  );
  const yaml = await a.kubectl(['get', 'validatingadmissionpolicy', 'only-team', '-o', 'yaml']);
  t.notMatch(yaml.stdout, /substring/, 'no trace of the rewriting in the YAML');

  const upstream = await stack.kubectlDirect(['get', 'validatingadmissionpolicy', `${a.id}-only-team`, '-o', 'json']);
  t.equal(upstream.code, 0, upstream.stderr);
  const typeChecking = JSON.parse(upstream.stdout).status?.typeChecking?.expressionWarnings ?? [];
  t.same(typeChecking, [], 'the upstream type-checks the rewritten expressions without warnings');
});

t.test("another tenant with the same names is not judged by the first tenant's policy", async (t) => {
  const inOther = await createConfigMap(b, 'other', 'free');
  t.equal(inOther.code, 0, inOther.stderr);
  const policies = await b.kubectl(['get', 'validatingadmissionpolicies,validatingadmissionpolicybindings', '-o', 'name']);
  t.equal(policies.code, 0, policies.stderr);
  t.notMatch(policies.stdout, /only-team/, "the first tenant's policy is not listed");
  const get = await b.kubectl(['get', 'validatingadmissionpolicy', 'only-team']);
  t.not(get.code, 0);
  t.match(get.stderr, /NotFound|not found/);
});

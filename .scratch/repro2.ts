import { startStack } from '../test/helpers/stack.ts';
import { createTestTenant } from '../test/helpers/tenants.ts';
const stack = await startStack();
try {
  const a = await createTestTenant(stack, 'alpha1');
  console.log((await stack.kubectlDirect(['get', 'clusterrolebindings', '-o', 'name'])).stdout.split('\n').filter((l) => /tenantgate/.test(l)).join('\n'));
  console.log((await stack.kubectlDirect(['get', 'clusterrolebinding', 'tenantgate:tenant-shadow:alpha1', '-o', 'yaml'])).stdout);
  const sar = { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec: { user: 'tenantgate:cluster:alpha1-admin', groups: ['tenantgate:cluster:alpha1:system:authenticated'], resourceAttributes: { verb: 'list', resource: 'secrets' } } };
  console.log((await stack.kubectlDirect(['create', '-f', '-', '-o', 'yaml'], { input: JSON.stringify(sar) })).stdout);
  console.log(stack.gatewayLogs.filter((l) => /warn|error/.test(l)).slice(-10).join('\n'));
} finally { await stack.stop(); }

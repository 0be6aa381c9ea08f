import { startStack } from '../test/helpers/stack.ts';
import { createTestTenant } from '../test/helpers/tenants.ts';
const stack = await startStack();
try {
  const a = await createTestTenant(stack, 'alpha1');
  console.log((await a.kubectl(['create', 'secret', 'generic', 'token', '--from-literal=a=b'])).stderr);
  const r = await a.kubectl(['get', 'secrets', '-A']);
  console.log('TABLE', r.code, r.stdout, r.stderr);
  const j = await a.kubectl(['get', 'secrets', '-A', '-o', 'name']);
  console.log('NAME', j.code, j.stdout, j.stderr);
  const v = await a.kubectl(['get', 'secrets', '-A', '-v=8']);
  console.log('V8', v.stderr.split('\n').filter((l) => /GET|Response|Status/.test(l)).join('\n').slice(0, 3000));
  console.log(stack.gatewayLogs.filter((l) => /secrets|warn|error/.test(l)).slice(-10).join('\n'));
} finally { await stack.stop(); }

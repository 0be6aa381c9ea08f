// Fairness through tenantgate against the rig: the quiet tenant's latency alone, then beside a noisy tenant sending
// ten times its concurrency (first at the default limit, then at a small limit set by annotation), and the noisy
// tenant's share of 429s; last, a noisy client that honours Retry-After as client-go does. Run after `npm run build`: node bench/fairness.ts [--quick]   (loopback; bounded in time)
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { loadFor, loadInWorker, type LoadResult } from '../test/helpers/load.ts';
import { startStack } from '../test/helpers/stack.ts';
import { createTestTenant } from '../test/helpers/tenants.ts';

const quick = process.argv.includes('--quick');
const LOAD_MS = quick ? 2000 : 5000;
const QUIET_LOOPS = 2;
const NOISY_LOOPS = 20;
const NOISY_LIMIT = '2';
const PATH = '/api/v1/namespaces/default/configmaps';

const round = (ms: number) => Math.round(ms * 10) / 10;

function summary(load: LoadResult) {
  const refused = load.byStatus[429] ?? 0;
  return {
    requests: load.answers.length,
    perSecond: Math.round(load.answers.length / (LOAD_MS / 1000)),
    byStatus: load.byStatus,
    p50Ms: round(load.p50),
    p99Ms: round(load.p99),
    share429: Math.round((refused / Math.max(1, load.answers.length)) * 1000) / 1000,
  };
}

const stack = await startStack({ controllers: false, gatewayArgs: ['--tenant-queue-length', '4', '--queue-wait', '1s'] });
try {
  const quiet = await createTestTenant(stack, 'quiet1');
  const noisy = await createTestTenant(stack, 'noisy1');
  const quietAlone = await loadFor(quiet.kubeconfig, PATH, QUIET_LOOPS, LOAD_MS);
  const [quietBesideUnlimited, noisyUnlimited] = await Promise.all([loadFor(quiet.kubeconfig, PATH, QUIET_LOOPS, LOAD_MS), loadInWorker(noisy.kubeconfig, PATH, NOISY_LOOPS, LOAD_MS)]);
  const annotated = await stack.kubectl(['annotate', 'tenant', noisy.id, `tenant.kubezoo.io/max-requests-inflight=${NOISY_LIMIT}`, '--overwrite']);
  if (annotated.code !== 0) throw new Error(annotated.stderr);
  await new Promise((resolve) => setTimeout(resolve, 500)); // the etcd watch brings the change to the index
  const [quietBesideLimited, noisyLimited] = await Promise.all([loadFor(quiet.kubeconfig, PATH, QUIET_LOOPS, LOAD_MS), loadInWorker(noisy.kubeconfig, PATH, NOISY_LOOPS, LOAD_MS)]);
  // A noisy client that backs off as client-go does (it honours Retry-After on 429).
  const [quietBesideBackingOff, noisyBackingOff] = await Promise.all([loadFor(quiet.kubeconfig, PATH, QUIET_LOOPS, LOAD_MS), loadInWorker(noisy.kubeconfig, PATH, NOISY_LOOPS, LOAD_MS, true)]);
  const result = {
    date: new Date().toISOString(),
    machine: `${os.cpus().length} cores, ${os.cpus()[0]?.model ?? ''}`.trim(),
    node: process.version,
    scenario: `GET ${PATH}; quiet ${QUIET_LOOPS} closed loops, noisy ${NOISY_LOOPS}; ${LOAD_MS} ms per phase; --tenant-queue-length 4 --queue-wait 1s`,
    quietAlone: summary(quietAlone),
    besideNoisyAtDefaultLimit: { quiet: summary(quietBesideUnlimited), noisy: summary(noisyUnlimited) },
    besideNoisyAtLimit: { noisyLimit: NOISY_LIMIT, quiet: summary(quietBesideLimited), noisy: summary(noisyLimited) },
    besideNoisyAtLimitHonouringRetryAfter: { noisyLimit: NOISY_LIMIT, quiet: summary(quietBesideBackingOff), noisy: summary(noisyBackingOff) },
  };
  console.log(JSON.stringify(result, null, 2));
  if (!quick) {
    mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
    writeFileSync(new URL('./results/fairness.json', import.meta.url), JSON.stringify(result, null, 2) + '\n');
  }
} finally {
  await stack.stop();
}

// Scenario 5b, the noisy neighbour: a quiet tenant's latency alone, then beside a noisy tenant sending ten times its
// concurrency (first at the default limit, then at a small limit set by annotation), and the noisy tenant's share of
// 429s; last, a noisy client that honours Retry-After as client-go does. Loopback; bounded in time.
import { loadFor, loadInWorker, type LoadResult } from '../../test/helpers/load.ts';
import { startStack } from '../../test/helpers/stack.ts';
import { createTestTenant } from '../../test/helpers/tenants.ts';
import type { Scenario, ScenarioOptions, ScenarioResult } from '../scenario.ts';

const QUIET_LOOPS = 2;
const NOISY_LOOPS = 20;
const NOISY_LIMIT = '2';
const PATH = '/api/v1/namespaces/default/configmaps';

const round = (ms: number) => Math.round(ms * 10) / 10;

function summary(load: LoadResult, loadMs: number) {
  const refused = load.byStatus[429] ?? 0;
  return {
    requests: load.answers.length,
    perSecond: Math.round(load.answers.length / (loadMs / 1000)),
    byStatus: load.byStatus,
    p50Ms: round(load.p50),
    p99Ms: round(load.p99),
    share429: Math.round((refused / Math.max(1, load.answers.length)) * 1000) / 1000,
  };
}

async function run({ quick, log }: ScenarioOptions): Promise<ScenarioResult> {
  const LOAD_MS = quick ? 2000 : 5000;
  const stack = await startStack({ controllers: false, gatewayArgs: ['--tenant-queue-length', '4', '--queue-wait', '1s'] });
  try {
    const quiet = await createTestTenant(stack, 'quiet1');
    const noisy = await createTestTenant(stack, 'noisy1');
    const quietAlone = await loadFor(quiet.kubeconfig, PATH, QUIET_LOOPS, LOAD_MS);
    const [quietBesideUnlimited, noisyUnlimited] = await Promise.all([
      loadFor(quiet.kubeconfig, PATH, QUIET_LOOPS, LOAD_MS),
      loadInWorker(noisy.kubeconfig, PATH, NOISY_LOOPS, LOAD_MS),
    ]);
    const annotated = await stack.kubectl(['annotate', 'tenant', noisy.id, `tenant.kubezoo.io/max-requests-inflight=${NOISY_LIMIT}`, '--overwrite']);
    if (annotated.code !== 0) throw new Error(annotated.stderr);
    await new Promise((resolve) => setTimeout(resolve, 500)); // the etcd watch brings the change to the index
    const [quietBesideLimited, noisyLimited] = await Promise.all([
      loadFor(quiet.kubeconfig, PATH, QUIET_LOOPS, LOAD_MS),
      loadInWorker(noisy.kubeconfig, PATH, NOISY_LOOPS, LOAD_MS),
    ]);
    // A noisy client that backs off as client-go does (it honours Retry-After on 429).
    const [quietBesideBackingOff, noisyBackingOff] = await Promise.all([
      loadFor(quiet.kubeconfig, PATH, QUIET_LOOPS, LOAD_MS),
      loadInWorker(noisy.kubeconfig, PATH, NOISY_LOOPS, LOAD_MS, true),
    ]);
    const result = {
      scenario: `GET ${PATH}; quiet ${QUIET_LOOPS} closed loops, noisy ${NOISY_LOOPS}; ${LOAD_MS} ms per phase; --tenant-queue-length 4 --queue-wait 1s`,
      quietAlone: summary(quietAlone, LOAD_MS),
      besideNoisyAtDefaultLimit: { quiet: summary(quietBesideUnlimited, LOAD_MS), noisy: summary(noisyUnlimited, LOAD_MS) },
      besideNoisyAtLimit: { noisyLimit: NOISY_LIMIT, quiet: summary(quietBesideLimited, LOAD_MS), noisy: summary(noisyLimited, LOAD_MS) },
      besideNoisyAtLimitHonouringRetryAfter: {
        noisyLimit: NOISY_LIMIT,
        quiet: summary(quietBesideBackingOff, LOAD_MS),
        noisy: summary(noisyBackingOff, LOAD_MS),
      },
    };
    log(`quiet p99 alone ${result.quietAlone.p99Ms} ms, beside the noisy one at limit ${NOISY_LIMIT}: ${result.besideNoisyAtLimit.quiet.p99Ms} ms`);
    const quietRefused = [
      result.quietAlone,
      result.besideNoisyAtDefaultLimit.quiet,
      result.besideNoisyAtLimit.quiet,
      result.besideNoisyAtLimitHonouringRetryAfter.quiet,
    ].reduce((n, q) => n + (q.byStatus[429] ?? 0), 0);
    return {
      scenario: 'noisy-neighbour',
      figures: result,
      targets: [{ target: 'noisy neighbour: the quiet tenant is never refused (429)', value: quietRefused, unit: 'requests refused', met: quietRefused === 0 }],
      charts: [
        {
          title: 'Quiet tenant p99, alone and beside a noisy one',
          unit: 'ms',
          bars: {
            alone: result.quietAlone.p99Ms,
            'beside noisy, default limit': result.besideNoisyAtDefaultLimit.quiet.p99Ms,
            [`beside noisy, limit ${NOISY_LIMIT}`]: result.besideNoisyAtLimit.quiet.p99Ms,
            'beside noisy honouring Retry-After': result.besideNoisyAtLimitHonouringRetryAfter.quiet.p99Ms,
          },
        },
      ],
    };
  } finally {
    await stack.stop();
  }
}

export const noisyNeighbourScenario: Scenario = {
  name: 'noisy-neighbour',
  description:
    "A quiet tenant's p50/p99 alone and beside a noisy tenant (default limit, a limit of 2 by annotation, a noisy client honouring Retry-After); the noisy one's share of 429s",
  run,
};

// `npm run conformance [-- --only REGEX] [--parallel N] [--timeout S] [--direct-only|--tenant-only] [--list]`: the
// upstream e2e specs against the rig directly and through a fresh tenant, one process per spec, results in results/.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ensureE2eTestBinary, RIG_VERSIONS } from '../lib/rig/build.ts';
import { startStack, type Stack } from '../test/helpers/stack.ts';
import { createTestTenant } from '../test/helpers/tenants.ts';
import { formatRatio, renderJunit, renderTable, summarize, type Row } from './report.ts';
import { inPool, runSpec, type RunSpecOptions, type SpecResult, type Target } from './run-spec.ts';
import { listAllSpecs, selectSpecs, type Spec } from './specs.ts';

const RESULTS_DIR = fileURLToPath(new URL('./results/', import.meta.url));
/** The fresh tenant the specs run in (a tenant's name is six characters). */
export const CONFORMANCE_TENANT = 'e2e001';

const USAGE = `npm run conformance -- [options]
  --only REGEX        run only specs whose full name matches
  --parallel N        spec processes at a time (default 2)
  --timeout SECONDS   hard limit per spec process (default 300)
  --direct-only       only against the upstream
  --tenant-only       only through the tenant (every selected spec)
  --tenant-all        through the tenant also the specs that failed directly (default: only those that passed)
  --direct-from FILE  take the direct column from an earlier run's rows.json instead of running it again (it depends
                      on the rig only, not on tenantgate); specs that file lacks run directly as usual
  --threshold RATIO   exit 1 when the Conformance ratio is below it (default 0.95)
  --list              print the selected specs and exit
  --build-only        build (or find) e2e.test and exit`;

function options() {
  const { values } = parseArgs({
    options: {
      only: { type: 'string' },
      parallel: { type: 'string', default: '2' },
      timeout: { type: 'string', default: '300' },
      'direct-only': { type: 'boolean', default: false },
      'tenant-only': { type: 'boolean', default: false },
      'tenant-all': { type: 'boolean', default: false },
      'direct-from': { type: 'string' },
      threshold: { type: 'string', default: '0.95' },
      list: { type: 'boolean', default: false },
      'build-only': { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  const parallel = Number(values.parallel);
  const timeout = Number(values.timeout);
  const threshold = Number(values.threshold);
  if (values.help || !(parallel >= 1) || !(timeout > 0) || !(threshold >= 0 && threshold <= 1) || (values['direct-only'] && values['tenant-only'])) {
    process.stderr.write(`${USAGE}\n`);
    process.exit(values.help ? 0 : 2);
  }
  return { ...values, only: values.only === undefined ? undefined : new RegExp(values.only), parallel, timeout, threshold };
}

async function main(): Promise<void> {
  const opts = options();
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const e2eTest = await ensureE2eTestBinary({ log });
  log(`conformance: e2e.test of Kubernetes ${RIG_VERSIONS.kubernetes} at ${e2eTest}`);
  if (opts['build-only']) return;
  const specs = selectSpecs(await listAllSpecs(e2eTest), opts.only);
  if (opts.list) {
    for (const spec of specs) process.stdout.write(`${spec.set}\t${spec.name}\n`);
    return;
  }
  if (specs.length === 0) throw new Error('no spec selected');

  // Read before results/ is emptied: the earlier run's file may be in it.
  const earlier = new Map(
    opts['direct-from'] === undefined ? [] : (JSON.parse(readFileSync(opts['direct-from'], 'utf8')) as Row[]).map((row) => [row.spec.name, row.direct]),
  );
  rmSync(RESULTS_DIR, { recursive: true, force: true });
  mkdirSync(RESULTS_DIR, { recursive: true });
  const started = Date.now();
  let stack: Stack | undefined;
  const stopStack = async () => {
    const s = stack;
    stack = undefined;
    await s?.stop();
  };
  process.once('SIGINT', () => void stopStack().finally(() => process.exit(130)));
  try {
    log('conformance: starting the rig and tenantgate');
    stack = await startStack({ controllers: true });
    const tenant = await createTestTenant(stack, CONFORMANCE_TENANT);
    const direct: Target = { name: 'direct', kubeconfig: stack.upstreamKubeconfig };
    const throughTenant: Target = { name: 'tenant', kubeconfig: tenant.kubeconfig };
    const runOptions: RunSpecOptions = { e2eTest, kubectl: stack.rig.binaries.kubectl, outDir: RESULTS_DIR, timeoutSeconds: opts.timeout };
    const rows = new Map<string, Row>(specs.map((spec) => [spec.name, { spec }]));
    const header = () =>
      `Kubernetes ${RIG_VERSIONS.kubernetes}; ${specs.length} specs; one e2e.test process per spec, ${opts.parallel} at a time, ` +
      `limit ${opts.timeout} s; tenant ${CONFORMANCE_TENANT}, fresh; run time so far ${((Date.now() - started) / 60_000).toFixed(1)} min.`;
    const writeResults = () => {
      const all = [...rows.values()];
      writeFileSync(`${RESULTS_DIR}table.md`, renderTable(all, [summarize(all, 'conformance'), summarize(all, 'apimachinery')], header()));
      writeFileSync(`${RESULTS_DIR}junit-direct.xml`, renderJunit(all, 'direct'));
      writeFileSync(`${RESULTS_DIR}junit-tenant.xml`, renderJunit(all, 'tenant'));
      writeFileSync(`${RESULTS_DIR}rows.json`, `${JSON.stringify(all)}\n`);
    };
    let done = 0;
    let total = opts['tenant-only'] ? 0 : specs.length; // the tenant column's count is known once the direct one ran
    const runColumn = async (target: Target, column: 'direct' | 'tenant', selected: Spec[]) => {
      await inPool(
        selected,
        opts.parallel,
        (spec) => spec.serial,
        async (spec) => {
          const result: SpecResult = await runSpec(spec.name, target, runOptions);
          rows.get(spec.name)![column] = result;
          done++;
          log(`[${done}/${total}] ${column} ${result.outcome} ${result.seconds.toFixed(0)}s ${spec.name}`);
          if (done % 5 === 0) writeResults();
        },
      );
    };
    let directToRun = specs;
    if (opts['direct-from'] !== undefined && !opts['tenant-only']) {
      directToRun = specs.filter((spec) => {
        const result = earlier.get(spec.name);
        if (result !== undefined) rows.get(spec.name)!.direct = result;
        return result === undefined;
      });
      total = directToRun.length;
      log(`conformance: direct column of ${specs.length - directToRun.length} specs taken from ${opts['direct-from']}`);
    }
    if (!opts['tenant-only']) await runColumn(direct, 'direct', directToRun);
    if (!opts['direct-only']) {
      // Only what passed directly counts for the ratio; the rest cannot pass through the tenant on this rig either.
      const forTenant = opts['tenant-only'] || opts['tenant-all'] ? specs : specs.filter((s) => rows.get(s.name)!.direct?.outcome === 'pass');
      total += forTenant.length;
      await runColumn(throughTenant, 'tenant', forTenant);
    }
    writeResults();
    const all = [...rows.values()];
    const summaries = [summarize(all, 'conformance'), summarize(all, 'apimachinery')];
    const minutes = (Date.now() - started) / 60_000;
    writeFileSync(
      `${RESULTS_DIR}summary.json`,
      `${JSON.stringify({ kubernetes: RIG_VERSIONS.kubernetes, minutes, parallel: opts.parallel, timeoutSeconds: opts.timeout, summaries }, null, 2)}\n`,
    );
    for (const summary of summaries) process.stdout.write(`${formatRatio(summary)}\n`);
    process.stdout.write(`run time ${minutes.toFixed(1)} min; table in ${RESULTS_DIR}table.md\n`);
    const headline = summaries[0]!.ratio;
    if (!opts['direct-only'] && !opts['tenant-only'] && headline !== null && headline < opts.threshold) {
      process.stdout.write(`Conformance ratio ${(headline * 100).toFixed(1)}% is below the threshold ${(opts.threshold * 100).toFixed(1)}%\n`);
      process.exitCode = 1;
    }
  } finally {
    await stopStack();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((error: unknown) => {
    process.stderr.write(`conformance: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(2);
  });
}

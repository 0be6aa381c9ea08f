// `npm run bench [-- --quick] [--only NAME[,NAME]] [--cpu-prof]`: every scenario in order, one run on one machine,
// results in bench/results/ (JSON per scenario, summary.md, SVG charts). A failed scenario never stops the others.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ensureRigBinaries, RIG_VERSIONS } from '../lib/rig/build.ts';
import { profileGatewaysInto, profilesIn, readProfile, topSelfTime, type SelfTime } from './profile.ts';
import { barChartSvg, chartFileName, renderSummary, type Machine, type ScenarioReport, type Versions } from './report.ts';
import type { Scenario, ScenarioResult } from './scenario.ts';
import { cpuPerRequestScenario } from './scenarios/cpu-per-request.ts';
import { densityScenario } from './scenarios/density.ts';
import { listScenario } from './scenarios/list.ts';
import { listOffloadScenario } from './scenarios/list-offload.ts';
import { listProtobufScenario } from './scenarios/list-protobuf.ts';
import { manyTenantsScenario } from './scenarios/many-tenants.ts';
import { noisyNeighbourScenario } from './scenarios/noisy-neighbour.ts';
import { protobufEngineScenario } from './scenarios/protobuf-engine.ts';
import { rewriteScenario } from './scenarios/rewrite.ts';
import { smallGetScenario } from './scenarios/small-get.ts';
import { watchCacheProtobufScenario } from './scenarios/watch-cache-protobuf.ts';
import { watchFanout } from './scenarios/watch-fanout.ts';

/** In the order they run: issue 6's numbering, then issue 15's, then issue 18's, then what a tenant costs the upstream. */
const SCENARIOS: Scenario[] = [
  smallGetScenario,
  listScenario,
  watchFanout,
  rewriteScenario,
  manyTenantsScenario,
  noisyNeighbourScenario,
  cpuPerRequestScenario,
  protobufEngineScenario,
  listProtobufScenario,
  listOffloadScenario,
  watchCacheProtobufScenario,
  densityScenario,
];

/** A scenario that runs longer than this has hung: it is reported as failed and the runner goes on. */
const SCENARIO_LIMIT_MS = { quick: 150_000, full: 30 * 60_000 };
const RESULTS_DIR = fileURLToPath(new URL('./results/', import.meta.url));
const PROFILE_DIR = join(RESULTS_DIR, 'profiles');

function withinLimit<T>(work: Promise<T>, limitMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${limitMs / 1000} s`)), limitMs);
  });
  return Promise.race([work, limit]).finally(() => clearTimeout(timer));
}

async function versionsOf(): Promise<Versions> {
  const tenantgate = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  try {
    // The binaries the rig actually runs (environment overrides included); cached, so this returns at once.
    const binaries = await ensureRigBinaries();
    return { node: process.version, tenantgate, kubeApiserver: binaries.kubernetesVersion, etcd: binaries.etcdVersion };
  } catch {
    return { node: process.version, tenantgate, kubeApiserver: RIG_VERSIONS.kubernetes, etcd: RIG_VERSIONS.etcd };
  }
}

function machineNow(loadavgBefore: number[]): Machine {
  return { cpus: os.cpus().length, model: os.cpus()[0]?.model ?? 'unknown', memoryBytes: os.totalmem(), loadavgBefore, loadavgAfter: os.loadavg() };
}

function printProfiles(files: string[], log: (line: string) => void): { file: string; top: SelfTime[] }[] {
  return files.map((file) => {
    const top = topSelfTime(readProfile(file), 10);
    log(`CPU profile ${file}: top functions by self time`);
    for (const row of top) log(`  ${String(row.selfMs).padStart(9)} ms ${String(row.percent).padStart(5)} %  ${row.location}`);
    return { file: basename(file), top };
  });
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { quick: { type: 'boolean', default: false }, only: { type: 'string' }, 'cpu-prof': { type: 'boolean', default: false } },
  });
  const quick = values.quick === true;
  const only = values.only?.split(',').map((name) => name.trim()) ?? null;
  const unknown = only?.filter((name) => !SCENARIOS.some((s) => s.name === name)) ?? [];
  if (unknown.length > 0) {
    console.error(`bench: no scenario ${unknown.join(', ')}; there are ${SCENARIOS.map((s) => s.name).join(', ')}`);
    return 2;
  }
  const chosen = only === null ? SCENARIOS : SCENARIOS.filter((s) => only.includes(s.name));
  mkdirSync(RESULTS_DIR, { recursive: true });
  if (values['cpu-prof'] === true) {
    mkdirSync(PROFILE_DIR, { recursive: true });
    profileGatewaysInto(PROFILE_DIR);
  }
  const versions = await versionsOf();
  const reports: ScenarioReport[] = [];
  const started = performance.now();
  for (const scenario of chosen) {
    const log = (line: string) => console.log(`[${scenario.name}] ${line}`);
    log(`${scenario.description}${quick ? ' (quick)' : ''}`);
    const loadavgBefore = os.loadavg();
    const when = new Date().toISOString();
    const t0 = performance.now();
    const profilesBefore = new Set(profilesIn(PROFILE_DIR));
    let result: ScenarioResult;
    let error: string | undefined;
    try {
      result = await withinLimit(scenario.run({ quick, log }), SCENARIO_LIMIT_MS[quick ? 'quick' : 'full'], scenario.name);
    } catch (thrown) {
      error = thrown instanceof Error ? (thrown.stack ?? thrown.message) : String(thrown);
      log(`FAILED: ${error}`);
      result = { scenario: scenario.name, figures: {}, targets: [], charts: [] };
    }
    const seconds = Math.round((performance.now() - t0) / 100) / 10;
    const chartFiles = result.charts.map((chart) => chartFileName(scenario.name, chart));
    const report: ScenarioReport = {
      ...result,
      scenario: scenario.name,
      description: scenario.description,
      when,
      quick,
      seconds,
      machine: machineNow(loadavgBefore),
      versions,
      chartFiles,
      ...(error === undefined ? {} : { error }),
    };
    const newProfiles = profilesIn(PROFILE_DIR).filter((file) => !profilesBefore.has(file));
    if (newProfiles.length > 0) report.figures.cpuProfiles = printProfiles(newProfiles, log);
    for (const [i, chart] of result.charts.entries()) writeFileSync(join(RESULTS_DIR, chartFiles[i]!), barChartSvg(chart));
    writeFileSync(join(RESULTS_DIR, `${scenario.name}.json`), JSON.stringify(report, null, 2) + '\n');
    for (const check of report.targets) log(`${check.met ? 'met    ' : 'NOT MET'} ${check.target}: ${check.value} ${check.unit}`);
    log(`${error === undefined ? 'done' : 'failed'} in ${seconds} s`);
    reports.push(report);
  }
  writeFileSync(join(RESULTS_DIR, 'summary.md'), renderSummary(reports));
  const failed = reports.filter((r) => r.error !== undefined).map((r) => r.scenario);
  console.log(`\nbench: ${chosen.length} scenarios in ${Math.round((performance.now() - started) / 1000)} s; results in bench/results/ (summary.md)`);
  if (failed.length > 0) console.error(`bench: failed: ${failed.join(', ')}`);
  return failed.length > 0 ? 1 : 0;
}

// Exits explicitly: a scenario that failed may leave a socket or timer behind, which must not hold the run open.
main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);

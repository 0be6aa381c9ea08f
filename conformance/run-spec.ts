// Runs one e2e spec in its own e2e.test process against one kubeconfig, under a hard time limit, and judges the result
// from Ginkgo's JUnit report. Never leaves a process behind: the limit kills the spec's whole process group.
import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readSync, fstatSync } from 'node:fs';
import { join } from 'node:path';
import { startSupervised } from '../lib/rig/process.ts';
import { focusFor } from './specs.ts';

export type Outcome = 'pass' | 'fail' | 'skip' | 'timeout' | 'no-nodes';

export interface SpecResult {
  outcome: Outcome;
  seconds: number;
  /** The failure's message (or why it was skipped or stopped); '' when it passed. */
  message: string;
  logPath: string;
  junitPath: string;
}

export interface Target {
  /** 'direct' or 'tenant': the column, and the folder its reports go to. */
  name: string;
  kubeconfig: string;
}

export interface RunSpecOptions {
  e2eTest: string;
  /** The rig's kubectl, which the sig-cli specs run. */
  kubectl: string;
  outDir: string;
  timeoutSeconds: number;
  /** Once a spec has waited this long for a pod to run, it is stopped as 'no-nodes': the rig has no nodes. */
  podWaitSeconds?: number;
}

/**
 * Flags that let the framework run against a control plane without nodes: no cloud provider, no node count or
 * readiness to wait for, no system pods to wait for. The dumps after a failure list every namespace's events and
 * pods (minutes through a tenant, of no use here), so they are off.
 */
export const NODELESS_FLAGS = [
  '--provider=skeleton',
  '--allowed-not-ready-nodes=-1',
  '--minStartupPods=-1',
  '--num-nodes=0',
  '--node-schedulable-timeout=1s',
  '--dump-logs-on-failure=false',
];

/**
 * What shows a spec waiting for pods to run, which they never do without nodes: the framework's log lines, and the
 * wait functions in the goroutine stacks of Ginkgo's progress reports (for the waits that log nothing).
 */
const WAITS_FOR_RUNNING_PODS = new RegExp(
  [
    /Waiting up to \S+ for pod .* to be "(?:running|running and ready|Succeeded or Failed|success or failure)"/,
    /Waiting up to \S+ for \d+ pods? to be running/,
    /deployment status: .*UnavailableReplicas:[1-9]/,
    /Wait(?:ing)? for (?:the )?deployment.* to (?:be ready|complete)/,
    /the pod .* is not running|waiting for .* pods? .* running/,
    /\] Found \d+ \/ [1-9]\d*\s*$/, // framework.WaitForPodsWithLabelRunningReady counting the running ones
    /STEP: Creating a pod to test /, // e2eoutput's TestContainerOutput: then waits for the pod to succeed
    /\bWait\w*ForPod\w*(?:Running|Success|Ready)\w*\(|\bWaitForDeploymentComplete\w*\(|\bWaitForPodsRunning\w*\(/,
  ]
    .map((re) => re.source)
    .join('|'),
  'i',
);
const POLL_MS = 2_000;

function fileSlug(name: string): string {
  const readable = name
    .replace(/[^A-Za-z0-9]+/g, '-')
    .replace(/^-|-$/g, '')
    .slice(0, 80);
  return `${readable}-${createHash('sha256').update(name).digest('hex').slice(0, 8)}`;
}

/** Reads what a growing log file gained since `offset`. */
function readFrom(path: string, offset: number): { text: string; offset: number } {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return { text: '', offset };
  }
  try {
    const size = fstatSync(fd).size;
    if (size <= offset) return { text: '', offset };
    const buffer = Buffer.alloc(Math.min(size - offset, 1 << 20));
    const read = readSync(fd, buffer, 0, buffer.length, offset);
    return { text: buffer.toString('utf8', 0, read), offset: offset + read };
  } finally {
    closeSync(fd);
  }
}

function unescapeXml(text: string): string {
  return text.replace(/&(lt|gt|quot|apos|amp|#(\d+)|#x([0-9a-fA-F]+));/g, (_, name: string, dec?: string, hex?: string) => {
    if (dec !== undefined) return String.fromCodePoint(Number(dec));
    if (hex !== undefined) return String.fromCodePoint(parseInt(hex, 16));
    return { lt: '<', gt: '>', quot: '"', apos: "'", amp: '&' }[name] ?? '';
  });
}

/**
 * The outcome of `spec` in a Ginkgo JUnit report (which lists every spec of the binary, the others skipped; their
 * names are `[It] <full text>` and then the spec's labels in brackets). A failed suite node (BeforeSuite reads Service
 * default/kubernetes, for one) fails the spec with the suite node's message, since the spec itself never ran.
 */
export function judgeJunit(xml: string, spec: string): { outcome: 'pass' | 'fail' | 'skip'; message: string } {
  let specOutcome: { outcome: 'pass' | 'fail' | 'skip'; message: string } | undefined;
  let suiteFailure: string | undefined;
  for (const match of xml.matchAll(/<testcase\b([^>]*?)(?:\/>|>([\s\S]*?)<\/testcase>)/g)) {
    const attributes = match[1]!;
    const body = match[2] ?? '';
    const name = unescapeXml(/\bname="([^"]*)"/.exec(attributes)?.[1] ?? '');
    const status = /\bstatus="([^"]*)"/.exec(attributes)?.[1] ?? '';
    const failure = /<(?:failure|error)\b[^>]*?message="([^"]*)"[^>]*>([\s\S]*?)<\/(?:failure|error)>/.exec(body);
    const message = failure === null ? '' : unescapeXml(failure[1] || failure[2] || '');
    const isSuiteNode = /^\[(?:Synchronized)?(?:Before|After)Suite\]|^\[ReportAfterSuite\]|^\[ReportBeforeSuite\]/.test(name);
    if (isSuiteNode) {
      if (status === 'failed' || status === 'panicked' || status === 'errored' || failure !== null) suiteFailure ??= `${name}: ${message}`;
      continue;
    }
    if (!name.startsWith(`[It] ${spec}`) || (name.length > spec.length + 5 && !name.startsWith(' [', spec.length + 5))) continue;
    if (status === 'skipped' || status === 'pending') {
      const skipped = /<skipped\b[^>]*?message="([^"]*)"/.exec(body);
      specOutcome = { outcome: 'skip', message: unescapeXml(skipped?.[1] ?? '') };
    } else if (status === 'passed') specOutcome = { outcome: 'pass', message: '' };
    else specOutcome = { outcome: 'fail', message: message || status };
  }
  if (suiteFailure !== undefined && specOutcome?.outcome !== 'pass') return { outcome: 'fail', message: suiteFailure };
  return specOutcome ?? { outcome: 'fail', message: 'the focus matched no spec: the JUnit report does not hold it' };
}

/** Runs `spec` alone against `target`; resolves with its outcome, never rejects for a failing or hanging spec. */
export async function runSpec(spec: string, target: Target, options: RunSpecOptions): Promise<SpecResult> {
  const dir = join(options.outDir, 'specs', target.name);
  mkdirSync(dir, { recursive: true });
  const slug = fileSlug(spec);
  const logPath = join(dir, `${slug}.log`);
  const junitPath = join(dir, `${slug}.xml`);
  const started = Date.now();
  const child = await startSupervised(
    `e2e-${target.name}`,
    options.e2eTest,
    [
      `--kubeconfig=${target.kubeconfig}`,
      `--kubectl-path=${options.kubectl}`,
      ...NODELESS_FLAGS,
      `--ginkgo.focus=${focusFor(spec)}`,
      `--ginkgo.junit-report=${junitPath}`,
      '--ginkgo.no-color',
      '--ginkgo.v', // the spec's log as it happens (not at its end), for the wait-for-pods watch below
      '--ginkgo.poll-progress-after=15s', // and, for waits that log nothing, the stacks of a spec still running
      `--ginkgo.timeout=${options.timeoutSeconds}s`,
    ],
    { logPath, cwd: dir, env: { ...process.env, KUBECONFIG: target.kubeconfig } },
  );

  const podWaitMs = (options.podWaitSeconds ?? 30) * 1000;
  let stoppedAs: { outcome: 'timeout' | 'no-nodes'; message: string } | undefined;
  let offset = 0;
  let podWaitSince: number | undefined;
  let podWaitLine = '';
  const poll = setInterval(() => {
    if (stoppedAs !== undefined) return;
    const gained = readFrom(logPath, offset);
    offset = gained.offset;
    if (podWaitSince === undefined) {
      const line = gained.text.split('\n').find((l) => WAITS_FOR_RUNNING_PODS.test(l));
      if (line !== undefined) {
        podWaitSince = Date.now();
        podWaitLine = line.trim().slice(0, 200);
      }
    }
    const now = Date.now();
    if (podWaitSince !== undefined && now - podWaitSince > podWaitMs) {
      stoppedAs = {
        outcome: 'no-nodes',
        message: `stopped after waiting ${Math.round((now - podWaitSince) / 1000)} s for pods to run (no nodes): ${podWaitLine}`,
      };
    } else if (now - started > options.timeoutSeconds * 1000 + 15_000) {
      // Ginkgo's own --timeout had 15 s to end it and write its report; it did not.
      stoppedAs = { outcome: 'timeout', message: `no result within ${options.timeoutSeconds} s; process group killed` };
    }
    if (stoppedAs !== undefined) void child.stop(2_000);
  }, POLL_MS);
  try {
    await child.exited;
  } finally {
    clearInterval(poll);
  }
  const seconds = (Date.now() - started) / 1000;
  if (stoppedAs !== undefined) return { ...stoppedAs, seconds, logPath, junitPath };
  if (!existsSync(junitPath)) {
    const tail = readFileSync(logPath, 'utf8').split('\n').slice(-15).join('\n');
    return { outcome: 'fail', message: `e2e.test wrote no report; its output ends:\n${tail}`, seconds, logPath, junitPath };
  }
  const judged = judgeJunit(readFileSync(junitPath, 'utf8'), spec);
  // Ginkgo's own --timeout reports an interrupted spec as failed: call it what it is.
  if (judged.outcome === 'fail' && /Interrupted by Timeout|timeout elapsed|suite timeout/i.test(judged.message)) {
    return { outcome: podWaitSince === undefined ? 'timeout' : 'no-nodes', message: judged.message, seconds, logPath, junitPath };
  }
  return { ...judged, seconds, logPath, junitPath };
}

/** Runs `work` over `items`, `parallel` at a time, then the serial ones one by one. */
export async function inPool<T>(items: readonly T[], parallel: number, isSerial: (item: T) => boolean, work: (item: T) => Promise<void>): Promise<void> {
  const queue = items.filter((item) => !isSerial(item));
  const worker = async () => {
    for (let item = queue.shift(); item !== undefined; item = queue.shift()) await work(item);
  };
  await Promise.all(Array.from({ length: Math.min(parallel, queue.length) }, worker));
  for (const item of items.filter(isSerial)) await work(item);
}

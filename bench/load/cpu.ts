// CPU time (user + system, all threads, dead ones included) and resident memory of the rig's processes from /proc, so
// a bench can say what one request cost each process. Reads /proc only; never signals or changes a process.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Clock ticks per second of utime/stime (USER_HZ); 100 on every Linux this runs on, asked once to be sure. */
const TICKS_PER_SECOND = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/** The resolution of every figure read here, ms. */
export const CPU_TICK_MS = 1000 / TICKS_PER_SECOND;

/** CPU time `pid` has used so far (user + system), ms. */
export function cpuMsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) is in parentheses and may hold spaces: count fields after its closing one.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return ((utime + stime) * 1000) / TICKS_PER_SECOND;
}

export type Pids = Record<string, number>;

export interface CpuSpent {
  /** CPU ms each process spent between the two readings, its idle rate over that time taken off when given. */
  ms: Record<string, number>;
  wallMs: number;
}

/** Reads every process's CPU now; call the result to get what each spent since. */
export function cpuMeter(pids: Pids, idleMsPerSecond: Record<string, number> = {}): () => CpuSpent {
  const before = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuMsOf(pid)]));
  const started = performance.now();
  return () => {
    const wallMs = performance.now() - started;
    const ms: Record<string, number> = {};
    for (const [name, pid] of Object.entries(pids)) ms[name] = Math.max(0, cpuMsOf(pid) - before[name]! - ((idleMsPerSecond[name] ?? 0) * wallMs) / 1000);
    return { ms, wallMs };
  };
}

/** What each process spends per second while nothing is asked of it (timers, leases, GC), over `seconds`. */
export async function idleCpuRate(pids: Pids, seconds: number): Promise<Record<string, number>> {
  const spent = cpuMeter(pids);
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  const { ms, wallMs } = spent();
  return Object.fromEntries(Object.entries(ms).map(([name, value]) => [name, (value * 1000) / wallMs]));
}

/**
 * Waits until the processes' CPU, summed over a window, is at most `millicores`, or `maxWaitMs` passed: what they do at
 * rest rather than the tail of the work just done (a controller draining a backlog burns CPU at a steady rate, so
 * "no longer falling" would not tell). Returns the wait, and whether they got there.
 */
export async function untilCpuAtMost(pids: Pids, millicores: number, maxWaitMs: number, windowSeconds = 3): Promise<{ waitedMs: number; reached: boolean }> {
  const started = performance.now();
  for (;;) {
    const rates = await idleCpuRate(pids, windowSeconds);
    const total = Object.values(rates).reduce((sum, rate) => sum + rate, 0);
    const waitedMs = Math.round(performance.now() - started);
    if (total <= millicores) return { waitedMs, reached: true };
    if (waitedMs + windowSeconds * 1000 > maxWaitMs) return { waitedMs, reached: false };
  }
}

/** Resident memory of a process now (bytes), from /proc/<pid>/status. */
export function rssOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? NaN) * 1024;
}

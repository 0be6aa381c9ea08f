// `npm run bench -- --cpu-prof`: the converting tenantgate of each scenario runs under `node --cpu-prof`, and the
// runner prints the functions that took the most self time. Only reads profiles; never changes what is measured.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

let profileDir: string | null = null;

/** Set by the runner before the scenarios start: where tenantgate's CPU profiles go (null: no profiling). */
export function profileGatewaysInto(dir: string | null): void {
  profileDir = dir;
}

/** Node flags for the converting tenantgate a scenario spawns: none unless the runner asked for profiles. */
export function gatewayProfileFlags(): string[] {
  return profileDir === null ? [] : ['--cpu-prof', '--cpu-prof-dir', profileDir];
}

/** The part of a V8 .cpuprofile the summary reads. */
export interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples: number[];
  timeDeltas: number[];
}

export interface SelfTime {
  /** `name (file:line)`, `(anonymous)` for nameless functions. */
  location: string;
  selfMs: number;
  /** Share of all sampled time, in percent. */
  percent: number;
}

/**
 * Self time per function: each sample's delta goes to the function on top of the stack then. Functions of the
 * same name, file and line are one row (V8 makes a node per call path).
 */
export function topSelfTime(profile: CpuProfile, count: number): SelfTime[] {
  const locationOf = new Map<number, string>();
  for (const node of profile.nodes) {
    const { functionName, url, lineNumber } = node.callFrame;
    const file =
      url === ''
        ? ''
        : ` (${url
            .replace(/^file:\/\//, '')
            .split('/')
            .slice(-2)
            .join('/')}:${lineNumber + 1})`;
    locationOf.set(node.id, `${functionName === '' ? '(anonymous)' : functionName}${file}`);
  }
  const selfUs = new Map<string, number>();
  let totalUs = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    // The delta before sample i+1 is time spent where sample i was taken.
    const delta = profile.timeDeltas[i + 1] ?? 0;
    const location = locationOf.get(profile.samples[i]!) ?? '(unknown)';
    selfUs.set(location, (selfUs.get(location) ?? 0) + delta);
    totalUs += delta;
  }
  return [...selfUs.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([location, us]) => ({ location, selfMs: Math.round(us / 100) / 10, percent: totalUs === 0 ? 0 : Math.round((us / totalUs) * 1000) / 10 }));
}

/** The .cpuprofile files in `dir`, newest last. */
export function profilesIn(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((name) => name.endsWith('.cpuprofile'))
      .sort()
      .map((name) => join(dir, name));
  } catch {
    return [];
  }
}

export function readProfile(path: string): CpuProfile {
  return JSON.parse(readFileSync(path, 'utf8')) as CpuProfile;
}

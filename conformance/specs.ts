// Which e2e specs the conformance run covers, read from e2e.test itself (a Ginkgo dry run), and how one is focused.
// Never hand-writes a spec name: every name here comes from the binary, so a focus always matches exactly one spec.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCommand } from '../lib/rig/process.ts';

/** Conformance: the `[Conformance]` specs of the three SIGs; apimachinery: sig-api-machinery's other specs. */
export type SpecSet = 'conformance' | 'apimachinery';

export interface Spec {
  /** Ginkgo's full text: container texts and the leaf text joined by spaces (what --ginkgo.focus matches). */
  name: string;
  set: SpecSet;
  /** `[Serial]` specs run alone, after the others. */
  serial: boolean;
}

const CONFORMANCE_SIGS = ['[sig-api-machinery]', '[sig-auth]', '[sig-cli]'];
/**
 * Non-Conformance api-machinery specs left out: they disrupt the cluster, are known flaky, or need a feature gate or
 * cluster setup the rig (and any default cluster) does not have, so they say nothing about tenantgate.
 */
const NOT_RUN = /\[(?:Disruptive|Flaky|Alpha)\]|\[Feature:|\[FeatureGate:[^\]]*\]\s*\[Alpha\]/;

interface DryRunReport {
  SpecReports?: { LeafNodeType: string; LeafNodeText: string; ContainerHierarchyTexts: string[] | null }[];
}

/** Every `It` in the binary, by full text, from a dry run (no cluster is contacted). */
export async function listAllSpecs(e2eTest: string): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'tenantgate-e2e-list-'));
  try {
    const reportPath = join(dir, 'dry-run.json');
    const result = await runCommand(e2eTest, ['--ginkgo.dry-run', '--ginkgo.no-color', `--ginkgo.json-report=${reportPath}`, '--ginkgo.silence-skips'], {
      timeoutMs: 120_000,
      cwd: dir,
    });
    let reports: DryRunReport[];
    try {
      reports = JSON.parse(readFileSync(reportPath, 'utf8')) as DryRunReport[];
    } catch {
      throw new Error(`e2e.test --ginkgo.dry-run wrote no report (exit ${result.code}):\n${result.stderr.slice(-2000)}${result.stdout.slice(-2000)}`);
    }
    return reports.flatMap((report) =>
      (report.SpecReports ?? []).filter((s) => s.LeafNodeType === 'It').map((s) => [...(s.ContainerHierarchyTexts ?? []), s.LeafNodeText].join(' ')),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The specs this run covers, Conformance first, each name once, in a stable order. */
export function selectSpecs(names: readonly string[], only?: RegExp): Spec[] {
  const specs: Spec[] = [];
  for (const name of new Set(names)) {
    if (only !== undefined && !only.test(name)) continue;
    const conformance = name.includes('[Conformance]') && CONFORMANCE_SIGS.some((sig) => name.startsWith(sig));
    const apimachinery = !conformance && name.startsWith('[sig-api-machinery]') && !NOT_RUN.test(name);
    if (conformance || apimachinery) specs.push({ name, set: conformance ? 'conformance' : 'apimachinery', serial: name.includes('[Serial]') });
  }
  return specs.sort((a, b) => (a.set === b.set ? a.name.localeCompare(b.name) : a.set === 'conformance' ? -1 : 1));
}

/** A --ginkgo.focus that matches exactly this full text (Ginkgo matches it after the suite's description and a space). */
export function focusFor(name: string): string {
  return `(?:^| )${name.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')}$`;
}

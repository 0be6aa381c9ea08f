// Turns the per-spec results of a conformance run into what people read: the ratio per set, a Markdown table of
// spec → direct / tenant, and one JUnit file per column. Pure: it reads nothing and writes nothing itself.
import type { SpecResult } from './run-spec.ts';
import type { Spec, SpecSet } from './specs.ts';

export interface Row {
  spec: Spec;
  direct?: SpecResult;
  tenant?: SpecResult;
}

export interface SetSummary {
  set: SpecSet;
  specs: number;
  directPassed: number;
  tenantPassed: number;
  /** Of the specs that pass directly, how many pass through the tenant. */
  tenantPassedOfDirect: number;
  /** tenantPassedOfDirect ÷ directPassed; null when nothing passed directly (or the direct column was not run). */
  ratio: number | null;
}

export const SET_TITLES: Record<SpecSet, string> = {
  conformance: '[Conformance] of sig-api-machinery, sig-auth, sig-cli',
  apimachinery: 'sig-api-machinery, not Conformance',
};

export function summarize(rows: readonly Row[], set: SpecSet): SetSummary {
  const ofSet = rows.filter((r) => r.spec.set === set);
  const directPassed = ofSet.filter((r) => r.direct?.outcome === 'pass');
  const tenantPassedOfDirect = directPassed.filter((r) => r.tenant?.outcome === 'pass').length;
  return {
    set,
    specs: ofSet.length,
    directPassed: directPassed.length,
    tenantPassed: ofSet.filter((r) => r.tenant?.outcome === 'pass').length,
    tenantPassedOfDirect,
    ratio: directPassed.length === 0 ? null : tenantPassedOfDirect / directPassed.length,
  };
}

export function formatRatio(summary: SetSummary): string {
  const percent = summary.ratio === null ? 'n/a' : `${(summary.ratio * 100).toFixed(1)}%`;
  return `${SET_TITLES[summary.set]}: ${summary.specs} specs; direct passed ${summary.directPassed}; tenant passed ${summary.tenantPassedOfDirect} of those (${summary.tenantPassed} in all); ratio ${percent}`;
}

function cell(result: SpecResult | undefined): string {
  return result === undefined ? '—' : `${result.outcome} ${result.seconds.toFixed(0)}s`;
}

/** The first line of a failure message that says something (Ginkgo's start with a location or a blank line). */
export function messageHead(message: string, length = 240): string {
  const line =
    message
      .split('\n')
      .map((l) => l.trim())
      .find((l) => l !== '' && !/^\[(?:FAILED|PANICKED)\]$/.test(l)) ?? '';
  return line.length > length ? `${line.slice(0, length)}…` : line;
}

function escapeCell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

export function renderTable(rows: readonly Row[], summaries: readonly SetSummary[], header: string): string {
  const lines = [`# Conformance through a tenant`, '', header, '', ...summaries.map((s) => `- ${formatRatio(s)}`), ''];
  const regressions = rows.filter((r) => r.direct?.outcome === 'pass' && r.tenant !== undefined && r.tenant.outcome !== 'pass');
  lines.push(`## Passing directly, not through the tenant (${regressions.length})`, '');
  for (const r of regressions) lines.push(`- ${r.spec.name} — **${r.tenant!.outcome}**: ${escapeCell(messageHead(r.tenant!.message))}`);
  lines.push('', '## Every spec', '', '| spec | set | direct | tenant |', '|---|---|---|---|');
  for (const r of rows) lines.push(`| ${escapeCell(r.spec.name)} | ${r.spec.set} | ${cell(r.direct)} | ${cell(r.tenant)} |`);
  return `${lines.join('\n')}\n`;
}

function xml(text: string): string {
  // Control characters are not allowed in XML 1.0: removed on purpose.
  // eslint-disable-next-line no-control-regex
  return text.replace(/[<>&"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[c]!).replace(/[\x00-\x08\x0b\x0c\x0e-\x1f]/g, '');
}

/** One JUnit file for a column: a testsuite per set, a testcase per spec run. */
export function renderJunit(rows: readonly Row[], column: 'direct' | 'tenant'): string {
  const out = ['<?xml version="1.0" encoding="UTF-8"?>', '<testsuites>'];
  for (const set of ['conformance', 'apimachinery'] as const) {
    const ran = rows.filter((r) => r.spec.set === set && r[column] !== undefined);
    const failures = ran.filter((r) => r[column]!.outcome === 'fail' || r[column]!.outcome === 'timeout').length;
    const skipped = ran.filter((r) => r[column]!.outcome === 'skip' || r[column]!.outcome === 'no-nodes').length;
    const time = ran.reduce((sum, r) => sum + r[column]!.seconds, 0);
    out.push(
      `  <testsuite name="${column}: ${xml(SET_TITLES[set])}" tests="${ran.length}" failures="${failures}" skipped="${skipped}" time="${time.toFixed(1)}">`,
    );
    for (const r of ran) {
      const result = r[column]!;
      out.push(`    <testcase name="${xml(r.spec.name)}" classname="${column}" time="${result.seconds.toFixed(1)}">`);
      if (result.outcome === 'fail' || result.outcome === 'timeout')
        out.push(`      <failure type="${result.outcome}" message="${xml(messageHead(result.message, 1000))}">${xml(result.message)}</failure>`);
      if (result.outcome === 'skip' || result.outcome === 'no-nodes')
        out.push(`      <skipped message="${xml(`${result.outcome}: ${messageHead(result.message, 1000)}`)}"/>`);
      out.push('    </testcase>');
    }
    out.push('  </testsuite>');
  }
  out.push('</testsuites>');
  return `${out.join('\n')}\n`;
}

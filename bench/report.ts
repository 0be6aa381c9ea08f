// What one `npm run bench` leaves for a person: the JSON of each scenario, a markdown summary with every ratio and
// target, and one hand-written SVG bar chart per chart. Pure rendering: never measures, never touches the disk.
import type { Chart, ScenarioResult, TargetCheck } from './scenario.ts';

export interface Machine {
  cpus: number;
  model: string;
  memoryBytes: number;
  loadavgBefore: number[];
  loadavgAfter: number[];
}

export interface Versions {
  node: string;
  tenantgate: string;
  kubeApiserver: string;
  etcd: string;
}

/** bench/results/<scenario>.json: one scenario's run, failed or not. */
export interface ScenarioReport extends ScenarioResult {
  description: string;
  when: string;
  quick: boolean;
  seconds: number;
  machine: Machine;
  versions: Versions;
  /** Set when the scenario threw: what it said. Its figures, targets and charts are then empty. */
  error?: string;
  /** SVG files written for its charts, relative to bench/results/. */
  chartFiles: string[];
}

/** A file name for a chart: the scenario, then the title in lowercase words joined by dashes (the scenario once). */
export function chartFileName(scenario: string, chart: Chart): string {
  const slug = chart.title
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
  return slug.startsWith(`${scenario}-`) ? `${slug}.svg` : `${scenario}-${slug}.svg`;
}

/** Figures in a table: three significant digits (no trailing zeros) below 100, whole numbers from 100 up. */
export function formatFigure(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  if (Math.abs(value) >= 100) return Math.round(value).toLocaleString('en-US');
  return String(Number(value.toPrecision(3)));
}

function escapeXml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

const BAR_HEIGHT = 26;
const LABEL_WIDTH = 260;
const BAR_AREA = 420;
const VALUE_WIDTH = 140;

/** Horizontal bars with their labels and values, scaled to the largest; no dependency, readable in any browser. */
export function barChartSvg(chart: Chart): string {
  const bars = Object.entries(chart.bars);
  const largest = Math.max(0, ...bars.map(([, value]) => (Number.isFinite(value) ? value : 0)));
  const width = LABEL_WIDTH + BAR_AREA + VALUE_WIDTH;
  const top = 40;
  const height = top + bars.length * (BAR_HEIGHT + 8) + 12;
  const rows = bars.map(([label, value], i) => {
    const y = top + i * (BAR_HEIGHT + 8);
    const length = largest > 0 && Number.isFinite(value) && value > 0 ? Math.max(1, (value / largest) * BAR_AREA) : 0;
    return [
      `<text x="${LABEL_WIDTH - 8}" y="${y + BAR_HEIGHT * 0.68}" text-anchor="end">${escapeXml(label)}</text>`,
      `<rect x="${LABEL_WIDTH}" y="${y}" width="${length.toFixed(1)}" height="${BAR_HEIGHT}" fill="${i === bars.length - 1 ? '#2b6cb0' : '#90a4ae'}"/>`,
      `<text x="${(LABEL_WIDTH + length + 6).toFixed(1)}" y="${y + BAR_HEIGHT * 0.68}">${escapeXml(`${formatFigure(value)} ${chart.unit}`)}</text>`,
    ].join('');
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="13">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="12" y="24" font-size="15" font-weight="bold">${escapeXml(`${chart.title} (${chart.unit})`)}</text>`,
    ...rows,
    '</svg>',
    '',
  ].join('\n');
}

function targetRow(check: TargetCheck): string {
  return `| ${check.target} | ${formatFigure(check.value)} ${check.unit} | ${check.met ? 'met' : '**not met**'} |`;
}

/** A chart as a table: each bar's value, and its ratio to the first bar (the direct upstream, where there is one). */
function chartTable(chart: Chart): string[] {
  const bars = Object.entries(chart.bars);
  const first = bars[0];
  const lines = [`| ${chart.title} | ${chart.unit} | × ${first?.[0] ?? ''} |`, '|---|---|---|'];
  for (const [label, value] of bars) {
    const ratio = first !== undefined && first[1] !== 0 ? value / first[1] : NaN;
    lines.push(`| ${label} | ${formatFigure(value)} | ${formatFigure(ratio)} |`);
  }
  return lines;
}

/** bench/results/summary.md: the machine, then per scenario its targets (met or not, with the figure) and its charts. */
export function renderSummary(reports: ScenarioReport[]): string {
  const lines: string[] = ['# tenantgate bench', ''];
  const first = reports[0];
  if (first !== undefined) {
    const { machine, versions } = first;
    lines.push(
      `${first.quick ? 'Quick run (`--quick`: breakage, not speed). ' : ''}Started ${first.when} on ${machine.cpus} × ${machine.model}, ` +
        `${Math.round(machine.memoryBytes / 2 ** 30)} GiB; load average ${machine.loadavgBefore.map((l) => l.toFixed(2)).join(' ')} before.`,
      `Node ${versions.node}, tenantgate ${versions.tenantgate}, kube-apiserver ${versions.kubeApiserver}, etcd ${versions.etcd}.`,
      '',
    );
    const met = reports.flatMap((r) => r.targets).filter((t) => t.met).length;
    const all = reports.flatMap((r) => r.targets).length;
    const failed = reports.filter((r) => r.error !== undefined).map((r) => r.scenario);
    lines.push(`Targets met: ${met} of ${all}.${failed.length > 0 ? ` Failed scenarios: ${failed.join(', ')}.` : ''}`, '');
  }
  for (const report of reports) {
    lines.push(`## ${report.scenario}`, '', `${report.description} (${report.seconds} s)`, '');
    if (report.error !== undefined) {
      lines.push('**Failed:**', '', '```', report.error, '```', '');
      continue;
    }
    if (report.targets.length > 0) lines.push('| target | measured | |', '|---|---|---|', ...report.targets.map(targetRow), '');
    for (const [i, chart] of report.charts.entries()) {
      lines.push(...chartTable(chart), '');
      const file = report.chartFiles[i];
      if (file !== undefined) lines.push(`![${chart.title}](${file})`, '');
    }
  }
  return lines.join('\n');
}

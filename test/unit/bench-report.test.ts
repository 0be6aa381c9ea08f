// The bench's report: what a person reads after `npm run bench` (summary, SVG charts, profile summary).
import t from 'tap';
import { topSelfTime, type CpuProfile } from '../../bench/profile.ts';
import { barChartSvg, chartFileName, renderSummary, type ScenarioReport } from '../../bench/report.ts';
import { percentile } from '../../bench/stats.ts';

const machine = { cpus: 2, model: 'Test CPU', memoryBytes: 8 * 2 ** 30, loadavgBefore: [1, 1, 1], loadavgAfter: [1, 1, 1] };
const versions = { node: 'v24.0.0', tenantgate: '0.1.0', kubeApiserver: 'v1.36.3', etcd: 'v3.6.8' };

function report(overrides: Partial<ScenarioReport>): ScenarioReport {
  return {
    scenario: 'x',
    description: 'd',
    when: '2026-01-01T00:00:00Z',
    quick: false,
    seconds: 1,
    machine,
    versions,
    figures: {},
    targets: [],
    charts: [],
    chartFiles: [],
    ...overrides,
  };
}

t.test('a bar chart scales every bar to the largest and shows each label and value', async (t) => {
  const svg = barChartSvg({ title: 'LIST <5,000> pods', unit: 'MB/s', bars: { direct: 200, passthrough: 100, tenantgate: 50 } });
  const widths = [...svg.matchAll(/<rect x="\d+" y="\d+" width="([\d.]+)"/g)].map((m) => Number(m[1]));
  t.same(widths, [420, 210, 105], 'bars in proportion, the largest full width');
  for (const text of ['direct', 'passthrough', 'tenantgate', '200 MB/s', '50 MB/s']) t.match(svg, `>${text}<`);
  t.match(svg, 'LIST &lt;5,000&gt; pods', 'the title is escaped');
  t.notMatch(svg, '<5,000>');
});

t.test('a bar of zero or NaN draws nothing instead of breaking the chart', async (t) => {
  const svg = barChartSvg({ title: 't', unit: 'ms', bars: { a: 0, b: NaN } });
  t.notMatch(svg, /NaN"|Infinity/, 'no NaN in any attribute');
});

t.test('chart files are named after the scenario once, in lowercase words', async (t) => {
  t.equal(chartFileName('list', { title: 'LIST of 500 pods, throughput', unit: '', bars: {} }), 'list-of-500-pods-throughput.svg');
  t.equal(chartFileName('small-get', { title: 'Small GET, HTTP/2, p50', unit: '', bars: {} }), 'small-get-http-2-p50.svg');
  t.equal(chartFileName('rewrite', { title: 'In memory', unit: '', bars: {} }), 'rewrite-in-memory.svg');
});

t.test('the summary states every target as met or not with its figure, ratios to the first bar, and failures', async (t) => {
  const summary = renderSummary([
    report({
      scenario: 'list',
      targets: [
        { target: 'LIST: >= 0.9x direct throughput', value: 0.95, unit: 'x direct', met: true },
        { target: 'LIST: RSS growth <= 32 MB', value: 40.5, unit: 'MB', met: false },
      ],
      charts: [{ title: 'throughput', unit: 'MB/s', bars: { direct: 200, tenantgate: 150 } }],
      chartFiles: ['list-throughput.svg'],
    }),
    report({ scenario: 'broken', error: 'Error: the rig did not start' }),
  ]);
  t.match(summary, '| LIST: >= 0.9x direct throughput | 0.95 x direct | met |');
  t.match(summary, '| LIST: RSS growth <= 32 MB | 40.5 MB | **not met** |');
  t.match(summary, '| tenantgate | 150 | 0.75 |', 'the ratio to direct');
  t.match(summary, '![throughput](list-throughput.svg)');
  t.match(summary, 'Targets met: 1 of 2. Failed scenarios: broken.');
  t.match(summary, /## broken[\s\S]*the rig did not start/);
  t.match(summary, 'kube-apiserver v1.36.3, etcd v3.6.8');
});

t.test('a CPU profile is summed by function, each sample taking the time until the next', async (t) => {
  const frame = (functionName: string, lineNumber: number) => ({ functionName, url: 'file:///w/lib/stream/tenant-view.ts', lineNumber });
  const profile: CpuProfile = {
    nodes: [
      { id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: -1 } },
      { id: 2, callFrame: frame('scan', 9) },
      { id: 3, callFrame: frame('scan', 9) }, // the same function reached by another path
      { id: 4, callFrame: frame('', 99) },
    ],
    samples: [2, 3, 4, 2, 1],
    timeDeltas: [0, 1000, 500, 2000, 1500],
  };
  const top = topSelfTime(profile, 2);
  t.same(top, [
    { location: 'scan (stream/tenant-view.ts:10)', selfMs: 3, percent: 60 },
    { location: '(anonymous) (stream/tenant-view.ts:100)', selfMs: 2, percent: 40 },
  ]);
});

t.test('percentiles take the nearest rank and say NaN for nothing', async (t) => {
  const values = Array.from({ length: 100 }, (_, i) => 100 - i);
  t.equal(percentile(values, 50), 51);
  t.equal(percentile(values, 99), 100);
  t.equal(percentile([7], 99), 7);
  t.ok(Number.isNaN(percentile([], 50)));
});

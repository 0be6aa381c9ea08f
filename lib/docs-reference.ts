// The reference tables of the docs, made from the code so they cannot go stale: every `serve` flag with its
// environment variable, default and meaning (lib/config.ts SERVE_OPTIONS, in docs/configuration.md), and every metric
// tenantgate registers with its type, labels and help (lib/metrics/metrics.ts, in docs/metrics.md). Each table sits
// between `<!-- <name>:begin -->` and `<!-- <name>:end -->`. `npm run docs` writes them; a unit test fails when the
// docs differ from what this makes.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { serveFlagsTable } from './config.ts';
import { TenantgateMetrics } from './metrics/metrics.ts';

/** A cell of a Markdown table: pipes escaped, line breaks as spaces. */
function cell(text: string): string {
  return text.replaceAll('|', '\\|').replaceAll('\n', ' ');
}

/**
 * Every metric tenantgate registers but Node's process metrics (prom-client's defaults, named in one line after the
 * table), as a Markdown table: name, type, labels, help.
 */
export async function metricsTable(): Promise<string> {
  const metrics = new TenantgateMetrics();
  // The watch cache's series are registered when a cache is observed.
  metrics.observeWatchCache({ resources: [] });
  const defaults = new Registry();
  collectDefaultMetrics({ register: defaults, prefix: 'tenantgate_' });
  const defaultNames = new Set((await defaults.getMetricsAsJSON()).map((metric) => metric.name));
  try {
    const rows = (await metrics.registry.getMetricsAsJSON())
      .filter((metric) => !defaultNames.has(metric.name))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map((metric) => {
        const labels = ((metrics.registry.getSingleMetric(metric.name) as unknown as { labelNames?: string[] }).labelNames ?? []).map(
          (label) => `\`${label}\``,
        );
        return `| \`${metric.name}\` | ${metric.type} | ${labels.join(', ')} | ${cell(metric.help)} |`;
      });
    const table = ['| metric | type | labels | meaning |', '|---|---|---|---|', ...rows].join('\n');
    const processMetrics = [...defaultNames].sort().map((name) => `\`${name}\``);
    return `${table}\n\nAnd Node's process metrics (prom-client's defaults), prefixed \`tenantgate_\`: ${processMetrics.join(', ')}.`;
  } finally {
    metrics.close();
  }
}

export interface Reference {
  /** The doc, from the repository root. */
  readonly file: string;
  /** Its markers' name. */
  readonly name: string;
  make(): string | Promise<string>;
}

export const REFERENCES: readonly Reference[] = [
  { file: 'docs/configuration.md', name: 'serve-flags', make: serveFlagsTable },
  { file: 'docs/metrics.md', name: 'metrics', make: metricsTable },
];

/** `text` with what stands between the reference's markers replaced by `table`; throws when a marker is missing. */
export function withReference(text: string, name: string, table: string): string {
  const begin = `<!-- ${name}:begin -->`;
  const end = `<!-- ${name}:end -->`;
  const from = text.indexOf(begin);
  const to = text.indexOf(end);
  if (from < 0 || to < from) throw new Error(`no ${begin} ... ${end} markers`);
  return `${text.slice(0, from + begin.length)}\n${table}\n${text.slice(to)}`;
}

export const REPOSITORY_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const reference of REFERENCES) {
    const path = join(REPOSITORY_ROOT, reference.file);
    const before = readFileSync(path, 'utf8');
    const after = withReference(before, reference.name, await reference.make());
    if (after !== before) writeFileSync(path, after);
    console.log(`${reference.file}: ${after === before ? 'unchanged' : 'written'}`);
  }
}

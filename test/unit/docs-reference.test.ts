// The reference tables of the docs are the code's: every `serve` flag (with its environment variable, default and
// meaning) in docs/configuration.md, every metric in docs/metrics.md. A flag or metric added, renamed or redescribed
// without `npm run docs` fails here; and each flag's variable is read as the table says.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { environmentVariableOf, SERVE_OPTIONS } from '../../lib/config.ts';
import { REFERENCES, REPOSITORY_ROOT, withReference } from '../../lib/docs-reference.ts';
import { serveFlagsParser } from '../helpers/serve-config.ts';

t.test('each reference table in the docs is what the code makes now', async (t) => {
  for (const reference of REFERENCES) {
    const text = readFileSync(join(REPOSITORY_ROOT, reference.file), 'utf8');
    t.equal(text, withReference(text, reference.name, await reference.make()), `${reference.file} (${reference.name}): run npm run docs`);
  }
});

t.test('the configuration table names every serve flag, and the metrics table every tenantgate_ metric of the dashboard', async (t) => {
  const configuration = readFileSync(join(REPOSITORY_ROOT, 'docs/configuration.md'), 'utf8');
  for (const flag of Object.keys(SERVE_OPTIONS).filter((flag) => flag !== 'help')) {
    t.match(configuration, `| \`--${flag}\` | \`${environmentVariableOf(flag)}\` |`, flag);
  }
  const metrics = readFileSync(join(REPOSITORY_ROOT, 'docs/metrics.md'), 'utf8');
  const dashboard = readFileSync(join(REPOSITORY_ROOT, 'grafana/tenantgate.json'), 'utf8');
  const used = new Set([...dashboard.matchAll(/tenantgate_[a-z_]+?(?=_bucket|_sum|_count|\b)/g)].map((match) => match[0]));
  t.ok(used.size > 5, `the dashboard uses ${used.size} metrics`);
  for (const name of used) t.match(metrics, `\`${name}\``, name);
});

t.test('every serve flag is read from its environment variable when not given, and a flag given wins', async (t) => {
  const parse = serveFlagsParser(t);
  const saved = { ...process.env };
  t.teardown(() => {
    for (const key of Object.keys(process.env)) if (!(key in saved)) delete process.env[key];
    Object.assign(process.env, saved);
  });
  process.env[environmentVariableOf('max-concurrent-streams')] = '77';
  process.env[environmentVariableOf('watch-cache-bookmark-interval')] = '7s';
  process.env[environmentVariableOf('tenant-max-inflight')] = '9';
  process.env[environmentVariableOf('confine-upstream-discovery')] = 'true';
  const fromEnvironment = parse([]);
  t.equal(fromEnvironment.http2.maxConcurrentStreams, 77);
  t.equal(fromEnvironment.watchCache?.bookmarkIntervalMs, 7000);
  t.equal(fromEnvironment.flowControl?.tenantMaxInflight, 9);
  t.equal(fromEnvironment.confineUpstreamDiscovery, true);
  const given = parse(['--max-concurrent-streams', '88', '--tenant-max-inflight', '11']);
  t.equal(given.http2.maxConcurrentStreams, 88, 'the flag given wins over its variable');
  t.equal(given.flowControl?.tenantMaxInflight, 11);
  delete process.env[environmentVariableOf('max-concurrent-streams')];
  t.equal(parse([]).http2.maxConcurrentStreams, 1000, 'neither: the default');
});

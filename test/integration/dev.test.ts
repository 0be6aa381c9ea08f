// `tenantgate dev`: one command brings up the rig with tenantgate in front, writes both kubeconfigs,
// says it is ready (with where its metrics are), and SIGTERM stops every process it started.
// Its own rig (not a shared one): `tenantgate dev` starts the rig itself, which is what it tests.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { TENANTGATE_NODE_FLAGS } from '../../lib/runtime.ts';
import { ensureRigBinaries } from '../../lib/rig/build.ts';
import { runCommand } from '../../lib/rig/process.ts';
import { parsePrometheusText, sampleSum } from '../helpers/prometheus-text.ts';
import { productionEnv } from '../helpers/stack.ts';

const CLI = new URL('../../dist/lib/cli.js', import.meta.url).pathname;

function descendants(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readFileSync('/proc/' + pid + '/task/' + pid + '/children', 'utf8')
    .trim()
    .split(/\s+/)) {
    if (entry === '') continue;
    children.push(Number(entry));
    try {
      children.push(...descendants(Number(entry)));
    } catch {
      // exited meanwhile
    }
  }
  return children;
}

const alive = (pid: number) => existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');

t.test('tenantgate dev starts, serves kubectl through tenantgate and its metrics at the URL it prints, and stops everything on SIGTERM', async (t) => {
  const { kubectl } = await ensureRigBinaries();
  const dir = mkdtempSync(join(tmpdir(), 'tenantgate-dev-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const dev = spawn(process.execPath, [...TENANTGATE_NODE_FLAGS, CLI, 'dev', '--dir', dir, '--port', '0', '--metrics-port', '0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: productionEnv(),
  });
  t.teardown(() => dev.kill('SIGKILL'));
  let stdout = '';
  dev.stdout.on('data', (c: Buffer) => (stdout += c));
  dev.stderr.resume();
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not ready after 180 s:\n${stdout}`)), 180_000);
    dev.stdout.on('data', () => {
      if (stdout.includes('is ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    dev.once('exit', (code) => reject(new Error(`tenantgate dev exited with ${code}`)));
  });
  t.match(stdout, /kubectl --kubeconfig \S+admin\.kubeconfig/, 'the ready line says what to run next');

  const viaGateway = await runCommand(kubectl, ['--kubeconfig', join(dir, 'admin.kubeconfig'), 'get', 'namespace', 'kube-system', '-o', 'name']);
  t.equal(viaGateway.stdout.trim(), 'namespace/kube-system', viaGateway.stderr);
  const server = await runCommand(kubectl, ['--kubeconfig', join(dir, 'admin.kubeconfig'), 'config', 'view', '-o', 'jsonpath={.clusters[0].cluster.server}']);
  const upstreamServer = await runCommand(kubectl, [
    '--kubeconfig',
    join(dir, 'upstream.kubeconfig'),
    'config',
    'view',
    '-o',
    'jsonpath={.clusters[0].cluster.server}',
  ]);
  t.not(server.stdout, upstreamServer.stdout, 'admin.kubeconfig points at tenantgate, upstream.kubeconfig at the kube-apiserver');
  const direct = await runCommand(kubectl, ['--kubeconfig', join(dir, 'upstream.kubeconfig'), 'get', 'namespace', 'kube-system', '-o', 'name']);
  t.equal(direct.stdout.trim(), 'namespace/kube-system', direct.stderr);
  const tenantView = await runCommand(kubectl, ['--kubeconfig', join(dir, 'tenants', 'demo01.kubeconfig'), 'get', 'namespaces', '-o', 'name']);
  t.same(
    tenantView.stdout.trim().split('\n').sort(),
    ['namespace/default', 'namespace/kube-node-lease', 'namespace/kube-public', 'namespace/kube-system'],
    'the demo tenant sees a cluster of its own',
  );

  const metricsUrl = /metrics \(Prometheus\): curl (http:\/\/127\.0\.0\.1:\d+\/metrics)\n/.exec(stdout)?.[1];
  t.ok(metricsUrl, 'the ready lines give the metrics URL');
  const scraped = await fetch(metricsUrl!);
  t.equal(scraped.status, 200);
  t.match(scraped.headers.get('content-type'), /^text\/plain; version=0\.0\.4/, 'Prometheus text format');
  const samples = parsePrometheusText(await scraped.text());
  t.ok(sampleSum(samples, 'tenantgate_requests_total', { tenant: 'demo01' }) >= 1, "the demo tenant's kubectl requests are counted");
  t.equal(sampleSum(samples, 'tenantgate_tenants', { phase: 'ready' }), 1, 'the demo tenant is ready');

  const started = descendants(dev.pid!);
  t.ok(started.length >= 3, `dev runs its processes as children (${started.length})`);
  const exited = new Promise<number | null>((resolve) => dev.once('exit', resolve));
  dev.kill('SIGTERM');
  t.equal(await exited, 0, 'dev exits cleanly on SIGTERM');
  const deadline = Date.now() + 15_000;
  while (started.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
  t.same(started.filter(alive), [], 'every process dev started is gone');
});

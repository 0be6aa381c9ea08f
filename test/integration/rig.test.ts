// The rig runs a real control plane: kubectl reaches kube-apiserver v1.36.3, and kube-controller-manager's
// serviceaccount and namespace controllers act; stop() leaves no process behind.
// Its own rigs (not shared ones): it tests starting and stopping a rig.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import t from 'tap';
import { RIG_VERSIONS } from '../../lib/rig/build.ts';
import { startRig } from '../../lib/rig/harness.ts';
import { isProcessAlive } from '../../lib/rig/process.ts';
import { eventually } from '../helpers/kit.ts';

t.test('rig: real kube-apiserver, etcd and kube-controller-manager', async (t) => {
  const rig = await startRig({ log: (line) => t.comment(line) });
  t.teardown(() => rig.stop());

  const version = await rig.kubectl(['version', '-o', 'json']);
  t.equal(version.code, 0, version.stderr);
  const versions = JSON.parse(version.stdout) as { clientVersion: { gitVersion: string }; serverVersion: { gitVersion: string } };
  t.equal(versions.serverVersion.gitVersion, RIG_VERSIONS.kubernetes, 'apiserver reports the pinned version');
  t.equal(versions.clientVersion.gitVersion, RIG_VERSIONS.kubernetes, 'kubectl reports the pinned version');

  const namespace = 'rig-test';
  const created = await rig.kubectl(['create', 'namespace', namespace]);
  t.equal(created.code, 0, created.stderr);
  const configMap = await rig.kubectl(['-n', namespace, 'create', 'configmap', 'settings', '--from-literal=color=blue']);
  t.equal(configMap.code, 0, configMap.stderr);
  const read = await rig.kubectl(['-n', namespace, 'get', 'configmap', 'settings', '-o', 'jsonpath={.data.color}']);
  t.equal(read.stdout, 'blue');

  await eventually(
    'the default ServiceAccount in the new namespace',
    async () => {
      return (await rig.kubectl(['-n', namespace, 'get', 'serviceaccount', 'default'])).code === 0;
    },
    { withinMs: 60_000 },
  );
  t.pass('kube-controller-manager created the default ServiceAccount');

  const owner = await rig.kubectl(['-n', namespace, 'get', 'configmap', 'settings', '-o', 'jsonpath={.metadata.uid}']);
  const dependent = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: 'dependent', namespace, ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'settings', uid: owner.stdout }] },
  };
  const applied = await rig.kubectl(['apply', '-f', '-'], { input: JSON.stringify(dependent) });
  t.equal(applied.code, 0, applied.stderr);
  t.equal((await rig.kubectl(['-n', namespace, 'delete', 'configmap', 'settings'])).code, 0);
  await eventually(
    'the garbage collector to delete the dependent',
    async () => {
      return (await rig.kubectl(['-n', namespace, 'get', 'configmap', 'dependent'])).stderr.includes('NotFound');
    },
    { withinMs: 60_000 },
  );
  t.pass('the garbage collector deleted the owned configmap');

  const deleted = await rig.kubectl(['delete', 'namespace', namespace, '--wait=false']);
  t.equal(deleted.code, 0, deleted.stderr);
  await eventually(
    'the namespace to be gone',
    async () => {
      const get = await rig.kubectl(['get', 'namespace', namespace]);
      return get.code !== 0 && get.stderr.includes('NotFound');
    },
    { withinMs: 90_000 },
  );
  t.pass('the namespace controller finished deleting the namespace');

  const pids = rig.processes.map((p) => p.pid);
  t.equal(pids.length, 3, 'etcd, kube-apiserver, kube-controller-manager');
  t.ok(pids.every(isProcessAlive), 'all running before stop()');
  await rig.stop();
  t.same(pids.filter(isProcessAlive), [], 'no process left after stop()');
});

t.test('rig without controllers starts only etcd and kube-apiserver', async (t) => {
  const rig = await startRig({ controllers: false, log: (line) => t.comment(line) });
  t.teardown(() => rig.stop());
  t.same(
    rig.processes.map((p) => p.name),
    ['etcd', 'kube-apiserver'],
  );
  const namespaces = await rig.kubectl(['get', 'namespaces', '-o', 'name']);
  t.equal(namespaces.code, 0, namespaces.stderr);
  t.match(namespaces.stdout, /namespace\/default/);
  await rig.stop();
  t.notOk(
    rig.processes.some((p) => isProcessAlive(p.pid)),
    'no process left after stop()',
  );
});

t.test('rig processes die with a SIGKILLed Node', async (t) => {
  const harness = new URL('../../lib/rig/harness.ts', import.meta.url).pathname;
  const script = `
    import { startRig } from ${JSON.stringify(harness)};
    const rig = await startRig({ controllers: false });
    console.log(JSON.stringify({ pids: rig.processes.map((p) => p.pid), dir: rig.dir }));
    setInterval(() => {}, 1000);
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => child.kill('SIGKILL'));
  const [line] = (await once(createInterface({ input: child.stdout }), 'line')) as [string];
  const { pids, dir } = JSON.parse(line) as { pids: number[]; dir: string };
  t.teardown(() => rmSync(dir, { recursive: true, force: true })); // a SIGKILLed Node cannot remove its temp dir
  t.ok(pids.every(isProcessAlive), 'etcd and kube-apiserver running');
  child.kill('SIGKILL');
  await once(child, 'exit');
  // The watchdogs send SIGTERM at once and SIGKILL after 5 s.
  await eventually('the orphaned rig processes to exit', async () => !pids.some(isProcessAlive), { withinMs: 15_000 });
  t.pass('no process outlived Node');
});

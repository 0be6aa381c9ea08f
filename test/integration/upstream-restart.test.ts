// The upstream goes away and comes back: requests in flight end with a 503 Status (never a hang),
// requests meanwhile get a 503 with Retry-After, and tenantgate reconnects by itself once it is back.
// Its own rig (not a shared one): it stops and restarts kube-apiserver.
import t, { type Test } from 'tap';
import { connectH2, credentialsOf, h2Request } from '../helpers/http.ts';
import { startStack, type Stack } from '../helpers/stack.ts';

let stack: Stack;
t.before(async () => {
  stack = await startStack({ rig: 'private', controllers: false });
});
t.teardown(() => stack?.stop());

function isServiceUnavailable(t: Test, answer: { status: number; headers: Record<string, unknown>; body: string }, label: string) {
  t.equal(answer.status, 503, `${label}: 503`);
  const status = JSON.parse(answer.body);
  t.equal(status.kind, 'Status', `${label}: a Status body`);
  t.equal(status.reason, 'ServiceUnavailable');
  t.match(status.message, /upstream API server is unavailable/);
  t.equal(answer.headers['retry-after'], '1', `${label}: Retry-After`);
}

t.test('a crashed upstream: in-flight requests get 503, and tenantgate reconnects when it is back', async (t) => {
  const client = connectH2(credentialsOf(stack.adminKubeconfig));
  t.equal((await h2Request(client, 'GET', '/api/v1/namespaces/default')).status, 200, 'serving before the crash');

  // A request the apiserver holds before answering: a list at a resourceVersion far ahead of etcd waits ~3 s.
  const held = h2Request(client, 'GET', '/api/v1/namespaces/default/configmaps?resourceVersion=999999999&resourceVersionMatch=NotOlderThan');
  // A watch that already has its headers: it must end, not hang.
  const watchEnded = new Promise<string>((resolve) => {
    const watch = client.request({ ':path': '/api/v1/namespaces/default/configmaps?watch=true' });
    watch.on('response', () => {});
    watch.resume();
    watch.on('end', () => resolve('ended'));
    watch.on('error', (e: Error) => resolve(`reset: ${e.message}`));
    watch.on('close', () => resolve('closed'));
  });
  await new Promise((r) => setTimeout(r, 500));
  await stack.rig.stopApiserver('crash');

  isServiceUnavailable(t, await held, 'the request in flight');
  t.match(await watchEnded, /ended|reset|closed/, 'the open watch ended');
  isServiceUnavailable(t, await h2Request(client, 'GET', '/api/v1/namespaces/default'), 'a request while the upstream is down');

  await stack.rig.startApiserver();
  const after = await h2Request(client, 'GET', '/api/v1/namespaces/default');
  t.equal(after.status, 200, 'the same client is served again once the upstream is back');
  client.close();
});

t.test('a graceful upstream restart (GOAWAY) costs clients nothing after it', async (t) => {
  const client = connectH2(credentialsOf(stack.adminKubeconfig));
  t.equal((await h2Request(client, 'GET', '/api/v1/namespaces/default')).status, 200);
  await stack.rig.stopApiserver('graceful');
  await stack.rig.startApiserver();
  const answers = await Promise.all(Array.from({ length: 20 }, () => h2Request(client, 'GET', '/api/v1/namespaces/default')));
  t.same(
    answers.map((a) => a.status),
    Array(20).fill(200),
    'every request after the restart succeeds on a fresh upstream session',
  );
  client.close();
});

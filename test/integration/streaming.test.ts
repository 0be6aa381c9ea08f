// Lists and watches stream through tenantgate: bounded memory for a large list, events in order,
// and a client that goes away takes its upstream watch with it.
import t from 'tap';
import { connectH2, credentialsOf, h2Request, sumMetric } from '../helpers/http.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { eventually } from '../helpers/kit.ts';

const NAMESPACE = 'stream';
const OBJECTS = 5000;
const PAYLOAD_BYTES = 16 * 1024;

let stack: Stack;
t.before(async () => {
  stack = await startStack({ controllers: false });
  const r = await stack.kubectlDirect(['create', 'namespace', NAMESPACE]);
  if (r.code !== 0) throw new Error(r.stderr);
});
t.teardown(async () => {
  await stack?.emptyOnSharedRig([`/api/v1/namespaces/${NAMESPACE}/configmaps`]);
  await stack?.stop();
});

async function upstreamWatchers(): Promise<number> {
  const session = connectH2(credentialsOf(stack.upstreamKubeconfig));
  try {
    const metrics = await h2Request(session, 'GET', '/metrics');
    return sumMetric(metrics.body, 'apiserver_longrunning_requests', { resource: 'configmaps', verb: 'WATCH' });
  } finally {
    session.close();
  }
}

t.test(`a list of ${OBJECTS} objects streams through with bounded memory`, async (t) => {
  const upstream = connectH2(credentialsOf(stack.upstreamKubeconfig));
  const filler = 'x'.repeat(PAYLOAD_BYTES);
  for (let start = 0; start < OBJECTS; start += 100) {
    await Promise.all(
      Array.from({ length: Math.min(100, OBJECTS - start) }, (_, i) =>
        h2Request(upstream, 'POST', `/api/v1/namespaces/${NAMESPACE}/configmaps`, {
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ metadata: { name: `cm-${start + i}` }, data: { filler } }),
        }).then((a) => {
          if (a.status !== 201) throw new Error(`create failed: ${a.status} ${a.body}`);
        }),
      ),
    );
  }
  upstream.close();

  const gateway = connectH2(credentialsOf(stack.adminKubeconfig));
  // Warm up so the baseline includes tenantgate's steady state (TLS, pools, JIT).
  await h2Request(gateway, 'GET', `/api/v1/namespaces/${NAMESPACE}/configmaps?limit=50`);
  const before = stack.gatewayMemory();

  const started = Date.now();
  let firstByteAt = 0;
  let bytes = 0;
  let items = 0;
  // The last bytes of the previous chunk, too few to hold the marker: a marker cut by a chunk boundary still counts.
  let tail = Buffer.alloc(0);
  await new Promise<void>((resolve, reject) => {
    const stream = gateway.request({ ':path': `/api/v1/namespaces/${NAMESPACE}/configmaps`, accept: 'application/json' });
    stream.on('data', (chunk: Buffer) => {
      if (firstByteAt === 0) firstByteAt = Date.now();
      bytes += chunk.length;
      const seen = Buffer.concat([tail, chunk]);
      for (let i = seen.indexOf('"cm-'); i !== -1; i = seen.indexOf('"cm-', i + 1)) items++;
      tail = Buffer.from(seen.subarray(Math.max(0, seen.length - 3)));
    });
    stream.on('end', resolve);
    stream.on('error', reject);
  });
  gateway.close();
  const after = stack.gatewayMemory();
  const growth = after.peak - before.peak;
  t.equal(items, OBJECTS, 'every object arrived');
  t.ok(bytes > OBJECTS * PAYLOAD_BYTES, `the list is ${(bytes / 1e6).toFixed(1)} MB`);
  t.ok(growth < bytes / 4, `tenantgate's peak RSS grew ${(growth / 1e6).toFixed(1)} MB for a ${(bytes / 1e6).toFixed(1)} MB list`);
  t.comment(
    `list: ${(bytes / 1e6).toFixed(1)} MB in ${Date.now() - started} ms, first byte after ${firstByteAt - started} ms; RSS peak ${(before.peak / 1e6).toFixed(1)} -> ${(after.peak / 1e6).toFixed(1)} MB`,
  );
});

t.test('watch events arrive in order, and a closed client ends the upstream watch', async (t) => {
  await stack.kubectlDirect(['-n', NAMESPACE, 'create', 'configmap', 'counter', '--from-literal=n=0']);
  const baseline = await upstreamWatchers();
  const gateway = connectH2(credentialsOf(stack.adminKubeconfig));
  const watch = gateway.request({
    ':path': `/api/v1/namespaces/${NAMESPACE}/configmaps?watch=true&fieldSelector=metadata.name%3Dcounter`,
  });
  const values: string[] = [];
  let buffered = '';
  watch.setEncoding('utf8');
  watch.on('data', (chunk: string) => {
    buffered += chunk;
    let newline;
    while ((newline = buffered.indexOf('\n')) !== -1) {
      const event = JSON.parse(buffered.slice(0, newline)) as { type: string; object: { data: { n: string } } };
      buffered = buffered.slice(newline + 1);
      values.push(`${event.type}:${event.object.data.n}`);
    }
  });
  watch.on('error', () => {});
  await eventually('the watch to start', async () => values.length > 0);
  await eventually('the upstream to count the watch', async () => (await upstreamWatchers()) === baseline + 1);

  const updates = 30;
  for (let n = 1; n <= updates; n++) {
    const r = await stack.kubectlDirect(['-n', NAMESPACE, 'patch', 'configmap', 'counter', '--type=merge', '-p', JSON.stringify({ data: { n: String(n) } })]);
    if (r.code !== 0) throw new Error(r.stderr);
  }
  await eventually('every update to arrive', async () => values.length >= updates + 1);
  t.same(values, ['ADDED:0', ...Array.from({ length: updates }, (_, i) => `MODIFIED:${i + 1}`)], 'events in the order they were written');

  watch.close();
  gateway.close();
  await eventually('the upstream watch to end', async () => (await upstreamWatchers()) === baseline);
  t.pass('the upstream watch ended when the client went away');
});

// Lists above --list-offload-threshold are rewritten on a worker thread, and a tenant cannot tell: the same bytes as
// the same list rewritten inline, its own objects only, pages that chain, and a client that leaves takes its upstream
// request and its worker slot with it, and one that stops reading holds the upstream back. (Lists that break off
// mid-way: list-offload-faults.test.ts and test/unit/offload.test.ts.)
import type { ClientHttp2Session } from 'node:http2';
import t from 'tap';
import { connectH2, credentialsOf, h2Request, sumMetric } from '../helpers/http.ts';
import { spawnGateway, startStack, stopChild, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';

const THRESHOLD = 64 * 1024;
const OBJECTS = 300;
const FILLER = 'f'.repeat(4000);
/** Secrets of 900 KB in the namespace `big` of the first tenant: a list of about 24 MB, larger than every buffer on the way. */
const BIG_OBJECTS = 20;
const LIST = '/api/v1/namespaces/default/secrets';
/** Secrets are listed across namespaces with the tenant label upstream (ConfigMaps are merged per namespace). */
const LIST_ALL = '/api/v1/secrets';
const OFFLOADED = 'a list goes to a worker thread';

// Debug lines say when a list went to a worker: without them, "the same bytes" could pass with no worker involved.
process.env.TENANTGATE_LOG_LEVEL = 'debug';

interface Item {
  metadata: { name: string; namespace: string; annotations: { owner: string } };
}

let stack: Stack;
let inline: Awaited<ReturnType<typeof spawnGateway>>;
let alpha: TestTenant;
let beta: TestTenant;

t.before(async () => {
  stack = await startStack({ controllers: false, gatewayArgs: ['--list-offload-threshold', String(THRESHOLD)] });
  inline = await spawnGateway(stack.files, ['--confine-upstream-discovery', '--list-offload-threshold', '0']);
  delete process.env.TENANTGATE_LOG_LEVEL;
  alpha = await createTestTenant(stack, 'offl01');
  beta = await createTestTenant(stack, 'offl02');
  const made = await alpha.kubectl(['create', 'namespace', 'big']);
  if (made.code !== 0) throw new Error(made.stderr);
  const upstream = connectH2(credentialsOf(stack.upstreamKubeconfig));
  try {
    // Larger than every buffer between the upstream and the client (windows, streams, the worker's batches).
    for (let i = 0; i < BIG_OBJECTS; i++) {
      const answer = await h2Request(upstream, 'POST', `/api/v1/namespaces/${alpha.id}-big/secrets`, {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ metadata: { name: `big-${i}`, labels: { 'kubezoo.io/tenant': alpha.id } }, stringData: { filler: 'b'.repeat(900_000) } }),
      });
      if (answer.status !== 201) throw new Error(`create: ${answer.status} ${answer.body}`);
    }
    // The same names in both tenants; each object says whose it is.
    for (const tenant of [alpha.id, beta.id]) {
      for (let start = 0; start < OBJECTS; start += 50) {
        await Promise.all(
          Array.from({ length: 50 }, (_, i) =>
            h2Request(upstream, 'POST', `/api/v1/namespaces/${tenant}-default/secrets`, {
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({
                metadata: { name: `s-${start + i}`, labels: { 'kubezoo.io/tenant': tenant }, annotations: { owner: `tenant ${tenant}` } },
                stringData: { filler: FILLER },
              }),
            }).then((a) => {
              if (a.status !== 201) throw new Error(`create: ${a.status} ${a.body}`);
            }),
          ),
        );
      }
    }
  } finally {
    upstream.close();
  }
});
t.teardown(async () => {
  if (inline !== undefined) await stopChild(inline.child);
  await stack?.emptyOnSharedRig(['offl01-big', 'offl01-default', 'offl02-default'].map((namespace) => `/api/v1/namespaces/${namespace}/secrets`));
  await stack?.stop();
});

const offloadedSoFar = () => stack.gatewayLogs.filter((line) => line.includes(OFFLOADED)).length;

function sessionOf(tenant: TestTenant, server: string): ClientHttp2Session {
  return connectH2({ ...credentialsOf(tenant.kubeconfig), server });
}

async function list(session: ClientHttp2Session, path: string): Promise<string> {
  const answer = await h2Request(session, 'GET', path, { headers: { accept: 'application/json' } });
  if (answer.status !== 200) throw new Error(`${path}: ${answer.status} ${answer.body.slice(0, 300)}`);
  return answer.body;
}

t.test("a list on a worker is byte for byte the list rewritten inline, and holds only the tenant's objects", async (t) => {
  const pooled = sessionOf(alpha, stack.gatewayUrl);
  const direct = sessionOf(alpha, inline.url);
  t.teardown(() => {
    pooled.close();
    direct.close();
  });
  for (const path of [LIST, LIST_ALL]) {
    const before = offloadedSoFar();
    const first = await list(pooled, path);
    // Both at the same resourceVersion: the list's own resourceVersion moves with any write in the cluster.
    const resourceVersion = (JSON.parse(first) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
    const exact = `${path}?resourceVersion=${resourceVersion}&resourceVersionMatch=Exact`;
    const viaWorker = await list(pooled, exact);
    t.ok(offloadedSoFar() - before >= 2, `${path}: the list went to a worker`);
    t.ok(viaWorker.length > THRESHOLD, `${path}: ${viaWorker.length} bytes, above the threshold`);
    t.equal(viaWorker, await list(direct, exact), `${path}: the same bytes as inline`);
    const items = (JSON.parse(viaWorker) as { items: Item[] }).items.filter((item) => item.metadata.name.startsWith('s-'));
    t.equal(items.length, OBJECTS, `${path}: every one of the tenant's Secrets`);
    t.ok(
      items.every((item) => item.metadata.annotations.owner === `tenant ${alpha.id}` && item.metadata.namespace === 'default'),
      `${path}: none of ${beta.id}'s, though the names are the same`,
    );
    t.notOk(viaWorker.includes(beta.id), `${path}: not a byte of the other tenant's id`);
  }
});

t.test('pages of a list on a worker chain with their continue tokens, as inline', async (t) => {
  const pooled = sessionOf(beta, stack.gatewayUrl);
  const direct = sessionOf(beta, inline.url);
  t.teardown(() => {
    pooled.close();
    direct.close();
  });
  const names: string[] = [];
  let token = '';
  let pages = 0;
  const before = offloadedSoFar();
  do {
    const path = `${LIST}?limit=40${token === '' ? '' : `&continue=${encodeURIComponent(token)}`}`;
    const page = await list(pooled, path);
    const body = JSON.parse(page) as { metadata: { continue?: string }; items: Item[] };
    // The items as inline: a first page is served at the newest resourceVersion, which any write in the cluster moves
    // between the two requests (and its continue token with it); later pages are read at their token's.
    const inlineBody = JSON.parse(await list(direct, path)) as { items: Item[] };
    t.equal(JSON.stringify(body.items), JSON.stringify(inlineBody.items), `page ${++pages}: the same items as inline`);
    t.ok(
      body.items.every((item) => item.metadata.annotations.owner === `tenant ${beta.id}`),
      `page ${pages}: the tenant's objects only`,
    );
    names.push(...body.items.map((item) => item.metadata.name));
    token = body.metadata.continue ?? '';
  } while (token !== '' && pages < 20);
  t.ok(offloadedSoFar() - before >= pages - 1, 'the pages above the threshold went to a worker');
  t.equal(new Set(names.filter((name) => name.startsWith('s-'))).size, OBJECTS, `${pages} pages hold every Secret once`);
});

/** Executing requests upstream now (API Priority and Fairness), all priority levels. */
async function upstreamExecuting(upstream: ClientHttp2Session): Promise<number> {
  const metrics = await h2Request(upstream, 'GET', '/metrics');
  return sumMetric(metrics.body, 'apiserver_flowcontrol_current_executing_requests', {});
}

/** Reads the list's first bytes, then goes away. */
function leaveMidList(session: ClientHttp2Session, path: string): Promise<void> {
  return new Promise((resolve) => {
    const stream = session.request({ ':path': path, accept: 'application/json' });
    stream.once('data', () => stream.close(0x8)); // CANCEL
    stream.on('close', resolve);
    stream.on('error', () => {});
  });
}

t.test('clients that leave mid-list cancel their upstream requests and free their worker slots', async (t) => {
  const upstream = connectH2(credentialsOf(stack.upstreamKubeconfig));
  const pooled = sessionOf(alpha, stack.gatewayUrl);
  t.teardown(() => {
    upstream.close();
    pooled.close();
  });
  const idle = await upstreamExecuting(upstream);
  const before = offloadedSoFar();
  // More than the pool runs at once (2 threads x 16): leaked tasks would leave the next list waiting forever.
  for (let round = 0; round < 4; round++) await Promise.all(Array.from({ length: 10 }, () => leaveMidList(pooled, LIST_ALL)));
  t.ok(offloadedSoFar() - before >= 40, 'each of the 40 lists went to a worker');
  const deadline = Date.now() + 15_000;
  let executing = await upstreamExecuting(upstream);
  while (executing > idle && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    executing = await upstreamExecuting(upstream);
  }
  t.ok(executing <= idle, `no list left running upstream (${executing} executing, ${idle} before)`);
  const whole = await list(pooled, LIST_ALL);
  t.equal((JSON.parse(whole) as { items: unknown[] }).items.length >= OBJECTS, true, 'and a whole list still comes through a worker');
});

/** Upstream list bytes a tenantgate has taken in for `tenant` so far (its lists' rewriters' input). */
async function listBytesTaken(metricsUrl: string, tenant: TestTenant): Promise<number> {
  return sumMetric(await (await fetch(metricsUrl)).text(), 'tenantgate_rewrite_bytes_total', { tenant: tenant.id, kind: 'list' });
}

t.test('a client that stops reading holds the upstream back, inline and on a worker, and gets the whole list when it reads on', async (t) => {
  const bigList = '/api/v1/namespaces/big/secrets';
  for (const [way, url, metricsUrl] of [
    ['inline', inline.url, inline.metricsUrl],
    ['on a worker', stack.gatewayUrl, stack.metricsUrl],
  ] as const) {
    const session = sessionOf(alpha, url);
    t.teardown(() => session.close());
    const before = await listBytesTaken(metricsUrl, alpha);
    const chunks: Buffer[] = [];
    const stream = session.request({ ':path': bigList, accept: 'application/json' });
    const ended = new Promise<void>((resolve, reject) => {
      stream.on('end', resolve);
      stream.on('error', reject);
    });
    await new Promise<void>((resolve) =>
      stream.once('data', (chunk: Buffer) => {
        chunks.push(chunk);
        stream.pause();
        resolve();
      }),
    );
    // Items of 1.2 MB: a chunk inside one sends nothing, so only the output waiting for the client can hold the upstream.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const taken = (await listBytesTaken(metricsUrl, alpha)) - before;
    t.ok(taken < 6 * 1024 * 1024, `${way}: ${taken} bytes of the ${BIG_OBJECTS} x 1.2 MB list taken from the upstream while the client read nothing`);
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.resume();
    await ended;
    const items = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { items: Item[] }).items;
    t.equal(items.length, BIG_OBJECTS, `${way}: the whole list once the client reads on`);
  }
});

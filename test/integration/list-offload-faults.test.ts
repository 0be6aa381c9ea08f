// A list on a worker thread (JSON or protobuf) under faults, against the real rig: the upstream connection cut
// mid-list, the apiserver killed mid-list, clients that leave at any point of it (while chunks are in the worker).
// Whatever happens, the client's answer ends within seconds (cut, never completed as if whole), every worker task
// started ends, no request stays open upstream, and the next large list still goes through the pool. (A list the
// scanner cannot read mid-way: test/unit/offload.test.ts; TLS turns a corrupted byte on the wire into a cut connection.)
// Its own rig (not a shared one): it kills kube-apiserver mid-list.
import type { ClientHttp2Session } from 'node:http2';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { renderKubeconfig } from '../../lib/upstream/kubeconfig.ts';
import { connectH2, credentialsOf, h2Request, sumMetric } from '../helpers/http.ts';
import { cuttableRelay, type CuttableRelay } from '../helpers/relay.ts';
import { spawnGateway, startStack, stopChild, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';

const THRESHOLD = 64 * 1024;
/** ConfigMaps of 900 KB: a list of about 22 MB, many times what the buffers on the way hold. */
const OBJECTS = 24;
const VALUE_BYTES = 900_000;
const LIST = '/api/v1/namespaces/default/configmaps';
/** How long a client may wait for the end of a list whose upstream broke. */
const END_BOUND_MS = 10_000;
const OFFLOADED = 'a list goes to a worker thread';
/** The lists held mid-way when the fault strikes: JSON, and protobuf as client-go's controllers ask. */
const ENCODINGS = ['application/json', 'application/json', 'application/vnd.kubernetes.protobuf'];
const TASK_ENDED = 'a list rewrite on a worker ended';

process.env.TENANTGATE_LOG_LEVEL = 'debug';

let stack: Stack;
let alpha: TestTenant;
/** A second tenantgate whose upstream connection passes a relay the tests cut. */
let relayed: { relay: CuttableRelay; url: string; metricsUrl: string; logs: string[]; stop(): Promise<void> };
const sessions = new Set<ClientHttp2Session>();

t.before(async () => {
  stack = await startStack({
    rig: 'private',
    controllers: false,
    gatewayArgs: ['--list-offload-threshold', String(THRESHOLD), '--protobuf-list-offload-threshold', String(THRESHOLD)],
  });
  const relay = await cuttableRelay(stack.rig.server.replace('https:', 'http:'));
  const kubeconfig = join(stack.dir, 'relayed-upstream.kubeconfig');
  writeFileSync(kubeconfig, renderKubeconfig({ ...stack.rig.admin, server: `https://127.0.0.1:${relay.port}` }, 'relayed'), { mode: 0o600 });
  const gateway = await spawnGateway(stack.files, [
    '--confine-upstream-discovery',
    '--upstream-kubeconfig',
    kubeconfig,
    '--list-offload-threshold',
    String(THRESHOLD),
    '--protobuf-list-offload-threshold',
    String(THRESHOLD),
  ]);
  relayed = { relay, url: gateway.url, metricsUrl: gateway.metricsUrl, logs: gateway.logs, stop: () => stopChild(gateway.child) };
  delete process.env.TENANTGATE_LOG_LEVEL;
  alpha = await createTestTenant(stack, 'offf01');
  const upstream = connectH2(credentialsOf(stack.upstreamKubeconfig));
  try {
    await Promise.all(
      Array.from({ length: OBJECTS }, async (_, i) => {
        const answer = await h2Request(upstream, 'POST', `/api/v1/namespaces/${alpha.id}-default/configmaps`, {
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ metadata: { name: `big-${i}` }, data: { value: String(i % 10).repeat(VALUE_BYTES) } }),
        });
        if (answer.status !== 201) throw new Error(`create: ${answer.status} ${answer.body.slice(0, 300)}`);
      }),
    );
  } finally {
    upstream.close();
  }
});
t.teardown(async () => {
  // The tenantgates' warnings and their worker tasks' lines, when something failed.
  if (!t.passing()) for (const line of [...(stack?.gatewayLogs ?? []), ...(relayed?.logs ?? [])]) if (/"warn"|"error"|worker/.test(line)) t.comment(line);
  for (const session of sessions) session.destroy();
  relayed?.relay.close();
  await relayed?.stop();
  await stack?.stop();
});

function sessionAt(server: string): ClientHttp2Session {
  const session = connectH2({ ...credentialsOf(alpha.kubeconfig), server });
  sessions.add(session);
  session.on('close', () => sessions.delete(session));
  session.on('error', () => {});
  return session;
}

interface ListEnd {
  /** 'end': the body ended; 'error' / 'closed': the stream broke off. */
  how: 'end' | 'error' | 'closed';
  bytes: number;
  /** The body is a whole JSON list. */
  whole: boolean;
}

interface HeldList {
  /** Bytes read before the client paused. */
  received: number;
  resume(): void;
  leave(): void;
  ended: Promise<ListEnd>;
}

/** A list whose client reads its first bytes, then stops reading (the list is held mid-way in tenantgate). */
function heldList(session: ClientHttp2Session, path: string, accept = 'application/json'): Promise<HeldList> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':path': path, accept });
    const chunks: Buffer[] = [];
    let status = 0;
    const ended = new Promise<ListEnd>((resolveEnd) => {
      const finish = (how: ListEnd['how']) => {
        const body = Buffer.concat(chunks);
        // (A protobuf list is whole when all its bytes came: the list is the same size in either encoding, give or take.)
        let whole = accept !== 'application/json' && body.length >= OBJECTS * VALUE_BYTES;
        try {
          whole ||= Array.isArray((JSON.parse(body.toString('utf8')) as { items?: unknown }).items);
        } catch {
          // cut: not JSON
        }
        resolveEnd({ how, bytes: body.length, whole });
      };
      stream.on('end', () => finish('end'));
      stream.on('error', () => finish('error'));
      stream.on('close', () => finish('closed'));
    });
    stream.on('response', (headers) => (status = Number(headers[':status'])));
    stream.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      if (chunks.length === 1) {
        stream.pause();
        if (status !== 200) reject(new Error(`${path}: ${status}`));
        resolve({ received: chunk.length, resume: () => stream.resume(), leave: () => stream.close(0x8), ended });
      }
    });
    stream.on('error', reject);
  });
}

async function wholeList(session: ClientHttp2Session, path = LIST): Promise<number> {
  const answer = await h2Request(session, 'GET', path, { headers: { accept: 'application/json' } });
  if (answer.status !== 200) throw new Error(`${path}: ${answer.status} ${answer.body.slice(0, 300)}`);
  return (JSON.parse(answer.body) as { items: unknown[] }).items.length;
}

/** Resolves with `promise`'s value, or null after `ms`. */
function within<T>(promise: Promise<T>, ms: number): Promise<T | null> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([promise, new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), ms)))]).finally(() => clearTimeout(timer));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Worker tasks started and ended so far according to a tenantgate's debug lines, and those it says are open. */
function taskCounts(logs: string[]): { started: number; ended: number; open: number } {
  let started = 0;
  let ended = 0;
  let open = 0;
  for (const line of logs) {
    if (line.includes(OFFLOADED)) started++;
    if (line.includes(TASK_ENDED)) {
      ended++;
      open = (JSON.parse(line) as { open: number }).open;
    }
  }
  return { started, ended, open };
}

/** Every worker task a tenantgate started has ended (within a few seconds), and none is open. */
async function tasksAllEnded(t: Test, logs: string[], label: string): Promise<void> {
  const deadline = Date.now() + 5000;
  let counts = taskCounts(logs);
  while ((counts.ended < counts.started || counts.open !== 0) && Date.now() < deadline) {
    await sleep(100);
    counts = taskCounts(logs);
  }
  t.ok(counts.started > 0, `${label}: lists went to a worker (${counts.started})`);
  t.equal(counts.ended, counts.started, `${label}: every worker task ended (${counts.ended} of ${counts.started})`);
  t.equal(counts.open, 0, `${label}: none open`);
}

/** Requests holding a flow-control seat in a tenantgate now (a list that never ended would hold one). */
async function seatsHeld(metricsUrl: string): Promise<number> {
  return sumMetric(await (await fetch(metricsUrl)).text(), 'tenantgate_inflight_requests', {});
}

async function noSeatHeld(t: Test, metricsUrl: string, label: string): Promise<void> {
  const deadline = Date.now() + 5000;
  let held = await seatsHeld(metricsUrl);
  while (held > 0 && Date.now() < deadline) {
    await sleep(100);
    held = await seatsHeld(metricsUrl);
  }
  t.equal(held, 0, `${label}: no request left holding a seat`);
}

/** Executing requests upstream now (API Priority and Fairness), all priority levels. */
async function upstreamExecuting(): Promise<number> {
  const upstream = connectH2(credentialsOf(stack.upstreamKubeconfig));
  try {
    const metrics = await h2Request(upstream, 'GET', '/metrics');
    return sumMetric(metrics.body, 'apiserver_flowcontrol_current_executing_requests', {});
  } finally {
    upstream.close();
  }
}

/** The broken list's end as the client saw it: soon, and cut, not passed off as a whole list. */
function endsCut(t: Test, end: ListEnd | null, label: string): void {
  t.not(end, null, `${label}: the client's answer ended within ${END_BOUND_MS} ms`);
  if (end === null) return;
  t.notOk(end.whole, `${label}: cut (${end.how} after ${end.bytes} bytes), not a whole list`);
}

t.test("the upstream connection cut mid-list: the client's answer ends cut, the worker task ends, the next list goes through the pool", async (t) => {
  const session = sessionAt(relayed.url);
  t.equal(await wholeList(session), OBJECTS, 'a whole list through the relay first');
  const lists = await Promise.all(ENCODINGS.map((accept) => heldList(session, LIST, accept)));
  await sleep(300);
  relayed.relay.cut();
  for (const list of lists) list.resume();
  for (const [i, list] of lists.entries()) endsCut(t, await within(list.ended, END_BOUND_MS), `list ${i + 1} (${ENCODINGS[i]})`);
  t.ok(
    relayed.logs.some((line) => line.includes(OFFLOADED) && line.includes('protobuf-list')),
    'the protobuf list went to a worker too',
  );
  await tasksAllEnded(t, relayed.logs, 'after the cut');
  await noSeatHeld(t, relayed.metricsUrl, 'after the cut');
  await relayed.relay.mend();
  let items = 0;
  for (let attempt = 0; attempt < 20 && items === 0; attempt++) items = await wholeList(sessionAt(relayed.url)).catch(() => sleep(250).then(() => 0));
  t.equal(items, OBJECTS, 'once mended, a whole list through a worker again');
  await tasksAllEnded(t, relayed.logs, 'after the next list');
});

t.test('clients that leave mid-list, reading or paused, cancel their upstream requests and end their worker tasks', async (t) => {
  const idle = await upstreamExecuting();
  const session = sessionAt(stack.gatewayUrl);
  // Reading at full speed and leaving after some bytes: the moment falls while chunks are in the worker.
  const leaveAfter = [1, 100_000, 1_000_000, 3_000_000, 7_000_000, 12_000_000];
  const reading = leaveAfter.map(
    (bytes) =>
      new Promise<number>((resolve) => {
        const stream = session.request({ ':path': LIST, accept: 'application/json' });
        let received = 0;
        stream.on('data', (chunk: Buffer) => {
          received += chunk.length;
          if (received >= bytes && !stream.closed) stream.close(0x8);
        });
        stream.on('close', () => resolve(received));
        stream.on('error', () => {});
      }),
  );
  const paused = await Promise.all(Array.from({ length: 4 }, () => heldList(session, LIST)));
  await sleep(300);
  for (const list of paused) list.leave();
  const read = await within(Promise.all(reading), END_BOUND_MS);
  t.not(read, null, 'every reading client left');
  t.ok(
    read!.every((bytes) => bytes < OBJECTS * VALUE_BYTES),
    `each left before the end (${read!.join(', ')} bytes)`,
  );
  const deadline = Date.now() + 15_000;
  let executing = await upstreamExecuting();
  while (executing > idle && Date.now() < deadline) {
    await sleep(200);
    executing = await upstreamExecuting();
  }
  t.ok(executing <= idle, `no list left running upstream (${executing} executing, ${idle} before)`);
  await tasksAllEnded(t, stack.gatewayLogs, 'after the clients left');
  await noSeatHeld(t, stack.metricsUrl, 'after the clients left');
  t.equal(await wholeList(session), OBJECTS, 'and a whole list still comes through a worker');
});

t.test("the apiserver killed mid-list: the client's answer ends cut, the worker task ends, lists go through the pool once it is back", async (t) => {
  const session = sessionAt(stack.gatewayUrl);
  const lists = await Promise.all(ENCODINGS.map((accept) => heldList(session, LIST, accept)));
  await sleep(300);
  await stack.rig.stopApiserver('crash');
  for (const list of lists) list.resume();
  for (const [i, list] of lists.entries()) endsCut(t, await within(list.ended, END_BOUND_MS), `list ${i + 1} (${ENCODINGS[i]})`);
  await tasksAllEnded(t, stack.gatewayLogs, 'after the crash');
  await noSeatHeld(t, stack.metricsUrl, 'after the crash');
  await stack.rig.startApiserver();
  let items = 0;
  for (let attempt = 0; attempt < 40 && items === 0; attempt++) items = await wholeList(sessionAt(stack.gatewayUrl)).catch(() => sleep(250).then(() => 0));
  t.equal(items, OBJECTS, 'a whole list through a worker once the apiserver is back');
  await tasksAllEnded(t, stack.gatewayLogs, 'after the next list');
});

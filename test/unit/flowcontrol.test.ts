import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { FlowController } from '../../lib/flowcontrol/dispatcher.ts';
import type { FlowControlEvents, RejectionReason, SeatKind } from '../../lib/flowcontrol/events.ts';
import { DEFAULT_FLOW_CONTROL, FLOW_WEIGHT_ANNOTATION, limitsOf, MAX_WATCHES_ANNOTATION, type FlowControlOptions } from '../../lib/flowcontrol/limits.ts';
import { flowControl, isLongRunning, releaseStartSeat, seatKindOf } from '../../lib/flowcontrol/stage.ts';
import { Seat, SEAT_HELD, SEAT_QUEUED } from '../../lib/flowcontrol/tenant-flow.ts';
import type { Http1RequestContext } from '../../lib/request/context.ts';
import { RequestRunner } from '../../lib/request/pipeline.ts';
import { StatusError } from '../../lib/errors/status-error.ts';
import type { Tenant } from '../../lib/tenants/tenant.ts';
import { eventually } from '../helpers/kit.ts';

function tenant(name: string, annotations?: Record<string, string>): Tenant {
  return {
    apiVersion: 'tenant.kubezoo.io/v1alpha1',
    kind: 'Tenant',
    metadata: { name, uid: `uid-${name}`, resourceVersion: '1', creationTimestamp: '2026-01-01T00:00:00Z', annotations },
    spec: {},
  };
}

/** Records what flow control reports, in order. */
class Recorder implements FlowControlEvents {
  admissions: { tenant: string; kind: SeatKind; queuedSeconds: number }[] = [];
  rejections: { tenant: string; reason: RejectionReason }[] = [];
  releases = 0;
  admitted(tenant: string, kind: SeatKind, queuedSeconds: number) {
    this.admissions.push({ tenant, kind, queuedSeconds });
  }
  released() {
    this.releases++;
  }
  rejected(tenant: string, _kind: SeatKind, reason: RejectionReason) {
    this.rejections.push({ tenant, reason });
  }
}

function controllerWith(options: Partial<FlowControlOptions>, tenants: Record<string, Tenant> = {}) {
  const events = new Recorder();
  const controller = new FlowController({ ...DEFAULT_FLOW_CONTROL, ...options }, (id) => tenants[id], events);
  return { controller, events };
}

function seat(outcome: Seat | RejectionReason): Seat {
  if (!(outcome instanceof Seat)) throw new Error(`expected a seat, got ${outcome}`);
  return outcome;
}

t.test('max-requests-inflight: N is N read-only and N/2 mutating seats, R,M sets both, bad values leave the defaults', async (t) => {
  const defaults = { ...DEFAULT_FLOW_CONTROL, tenantMaxInflight: 7, tenantMaxMutatingInflight: 3 };
  const cases: [Record<string, string> | undefined, { readonly: number; mutating: number; weight: number }][] = [
    [undefined, { readonly: 7, mutating: 3, weight: 1 }],
    [{ 'tenant.kubezoo.io/max-requests-inflight': '10' }, { readonly: 10, mutating: 5, weight: 1 }],
    [{ 'tenant.kubezoo.io/max-requests-inflight': '1' }, { readonly: 1, mutating: 1, weight: 1 }],
    [{ 'tenant.kubezoo.io/max-requests-inflight': '12,2' }, { readonly: 12, mutating: 2, weight: 1 }],
    [{ 'tce.kubezoo/max-requests-inflight': '4' }, { readonly: 4, mutating: 2, weight: 1 }],
    [
      { 'tenant.kubezoo.io/max-requests-inflight': '6', 'tce.kubezoo/max-requests-inflight': '4' },
      { readonly: 6, mutating: 3, weight: 1 },
    ],
    [
      { 'tenant.kubezoo.io/max-requests-inflight': 'many', 'tce.kubezoo/max-requests-inflight': '4' },
      { readonly: 4, mutating: 2, weight: 1 },
    ],
    [{ [FLOW_WEIGHT_ANNOTATION]: '2.5' }, { readonly: 7, mutating: 3, weight: 2.5 }],
  ];
  for (const bad of ['', '0', '-1', '1.5', '1,2,3', '3,', 'ten', '99999999999999999999']) {
    cases.push([{ 'tenant.kubezoo.io/max-requests-inflight': bad }, { readonly: 7, mutating: 3, weight: 1 }]);
  }
  for (const bad of ['0', '-1', 'heavy', '1e9']) cases.push([{ [FLOW_WEIGHT_ANNOTATION]: bad }, { readonly: 7, mutating: 3, weight: 1 }]);
  for (const [annotations, expected] of cases)
    t.same(limitsOf(tenant('abc123', annotations), defaults), { ...expected, longRunning: defaults.tenantMaxWatches }, JSON.stringify(annotations));
});

t.test('max-watches: a positive integer caps open long-running requests, bad values leave --tenant-max-watches', async (t) => {
  const defaults = { ...DEFAULT_FLOW_CONTROL, tenantMaxWatches: 40 };
  t.equal(limitsOf(tenant('abc123'), defaults).longRunning, 40);
  t.equal(limitsOf(tenant('abc123', { [MAX_WATCHES_ANNOTATION]: '3' }), defaults).longRunning, 3);
  t.equal(limitsOf(tenant('abc123', { [MAX_WATCHES_ANNOTATION]: ' 2000 ' }), defaults).longRunning, 2000);
  for (const bad of ['', '0', '-1', '2.5', 'lots', '3,4', '99999999999999999999'])
    t.equal(limitsOf(tenant('abc123', { [MAX_WATCHES_ANNOTATION]: bad }), defaults).longRunning, 40, bad);
});

t.test('the watch cap: past it a long-running request is refused at once, never queued; a closed one frees its place', async (t) => {
  const tenants = { abc123: tenant('abc123', { [MAX_WATCHES_ANNOTATION]: '2', 'tenant.kubezoo.io/max-requests-inflight': '1' }), def456: tenant('def456') };
  const { controller, events } = controllerWith({}, tenants);
  const first = seat(controller.acquire('abc123', 'readonly', true));
  t.equal(first.state, SEAT_HELD);
  // The tenant's one read-only seat is held by the first watch while it starts: the second waits, and counts.
  const second = seat(controller.acquire('abc123', 'readonly', true));
  t.equal(second.state, SEAT_QUEUED);
  t.equal(controller.openLongRunning('abc123'), 2);
  t.equal(controller.acquire('abc123', 'readonly', true), 'watch-limit', 'the third is refused');
  t.same(events.rejections, [{ tenant: 'abc123', reason: 'watch-limit' }]);
  t.equal(controller.flowState('abc123')!.queued, 1, 'the refused one never queued');
  t.equal(seat(controller.acquire('def456', 'readonly', true)).state, SEAT_HELD, 'another tenant is unaffected');
  // Short requests are not capped by it (they wait for a seat as before).
  t.equal(seat(controller.acquire('abc123', 'readonly', false)).state, SEAT_QUEUED);
  // The first watch starts (its seat goes to the waiting one) and goes on: it still counts until it closes.
  controller.release(first);
  t.equal(second.state, SEAT_HELD);
  t.equal(controller.openLongRunning('abc123'), 2);
  t.equal(controller.acquire('abc123', 'readonly', true), 'watch-limit');
  controller.closed(first);
  controller.closed(first);
  t.equal(controller.openLongRunning('abc123'), 1, 'a closed watch stops counting, once');
  t.ok(seat(controller.acquire('abc123', 'readonly', true)), 'and a new one opens');
  // A raised annotation applies to the next request, without a restart.
  controller.tenantChanged({ type: 'MODIFIED', tenant: tenant('abc123', { [MAX_WATCHES_ANNOTATION]: '5' }) });
  t.ok(seat(controller.acquire('abc123', 'readonly', true)));
  t.equal(controller.openLongRunning('abc123'), 3);
});

t.test('requests are read-only or mutating by method; watches and logs hold a seat only while they start', async (t) => {
  t.equal(seatKindOf('GET'), 'readonly');
  t.equal(seatKindOf('HEAD'), 'readonly');
  for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) t.equal(seatKindOf(method), 'mutating');
  const longRunning = [
    '/api/v1/namespaces/default/pods?watch=true',
    '/api/v1/pods?labelSelector=a&watch=1',
    '/api/v1/watch/namespaces/default/pods',
    '/apis/apps/v1/namespaces/default/deployments?watch=true&resourceVersion=5',
    '/api/v1/namespaces/default/pods/web/log?follow=true',
    '/api/v1/namespaces/default/services/web/proxy/healthz',
  ];
  const short = [
    '/api/v1/namespaces/default/pods',
    '/api/v1/namespaces/default/pods/watch',
    '/api/v1/namespaces/default/configmaps/log',
    '/api/v1/pods?watch=false',
    '/apis/apps/v1/deployments?fieldSelector=watch%3Dtrue',
  ];
  for (const path of longRunning) t.ok(isLongRunning('GET', path), path);
  for (const path of short) t.notOk(isLongRunning('GET', path), path);
  t.notOk(isLongRunning('POST', longRunning[0]!), 'a POST is never a watch');
  // SPDY's exec, attach and port-forward are POSTs, and a proxied request can be any method: the apiserver counts
  // them as long-running whatever the method.
  for (const path of [
    '/api/v1/namespaces/default/pods/web/exec?command=sh&stdin=true',
    '/api/v1/namespaces/default/pods/web/attach',
    '/api/v1/namespaces/default/pods/web/portforward',
    '/api/v1/namespaces/default/services/web/proxy/x',
  ]) {
    t.ok(isLongRunning('POST', path), `POST ${path}`);
  }
  for (const path of [
    '/api/v1/namespaces/default/pods',
    '/api/v1/namespaces/default/pods/web/eviction',
    '/api/v1/namespaces/default/pods/web/log',
    '/api/v1/namespaces/default/configmaps/exec',
  ]) {
    t.notOk(isLongRunning('POST', path), `POST ${path}`);
  }
});

t.test('a tenant over its limit queues in order, and a full queue refuses with inflight-limit', async (t) => {
  const { controller, events } = controllerWith({ tenantQueueLength: 2 }, { noisy1: tenant('noisy1', { 'tenant.kubezoo.io/max-requests-inflight': '1' }) });
  const held = seat(controller.acquire('noisy1', 'readonly', false));
  const first = seat(controller.acquire('noisy1', 'readonly', false));
  const second = seat(controller.acquire('noisy1', 'readonly', false));
  t.equal(controller.acquire('noisy1', 'readonly', false), 'inflight-limit');
  t.same(events.rejections, [{ tenant: 'noisy1', reason: 'inflight-limit' }]);
  const order: Seat[] = [];
  first.decided = () => order.push(first);
  second.decided = () => order.push(second);
  controller.release(held);
  t.same(order, [first], 'the oldest waiter gets the freed seat');
  controller.release(first);
  t.same(order, [first, second]);
  controller.release(second);
  t.equal(controller.inflightTotal, 0);
  t.equal(events.releases, 3);
  // A mutating seat is counted apart: a tenant at its read-only limit may still write.
  const reads = seat(controller.acquire('noisy1', 'readonly', false));
  t.equal(reads.state, SEAT_HELD);
  t.equal(seat(controller.acquire('noisy1', 'mutating', false)).state, SEAT_HELD);
});

t.test('when tenantgate is saturated, queued tenants share seats by weight', async (t) => {
  const tenants = { heavy1: tenant('heavy1', { [FLOW_WEIGHT_ANNOTATION]: '3' }), light1: tenant('light1'), idle01: tenant('idle01') };
  const { controller, events } = controllerWith({ maxInflight: 2, tenantQueueLength: 1000 }, tenants);
  const running: Seat[] = [seat(controller.acquire('light1', 'readonly', false)), seat(controller.acquire('light1', 'readonly', false))];
  const waiting = new Map<Seat, string>();
  // light1 floods first, heavy1 comes later with fewer requests queued: arrival order must not decide.
  for (let i = 0; i < 300; i++) waiting.set(seat(controller.acquire('light1', 'readonly', false)), 'light1');
  for (let i = 0; i < 200; i++) waiting.set(seat(controller.acquire('heavy1', 'readonly', false)), 'heavy1');
  for (const [s] of waiting) s.decided = () => running.push(s);
  events.admissions.length = 0;
  for (let i = 0; i < 200; i++) controller.release(running.shift()!);
  const served = (id: string) => events.admissions.filter((a) => a.tenant === id).length;
  t.equal(served('heavy1') + served('light1'), 200);
  t.ok(Math.abs(served('heavy1') - 150) <= 3, `weight 3 against 1 gets three quarters of the seats: ${served('heavy1')} of 200`);
  // A tenant that was idle does not bank credit: it joins at the current virtual time and gets its share, no more.
  for (let i = 0; i < 50; i++) {
    const idle = seat(controller.acquire('idle01', 'readonly', false));
    idle.decided = () => running.push(idle);
  }
  events.admissions.length = 0;
  for (let i = 0; i < 50; i++) controller.release(running.shift()!);
  const idleServed = events.admissions.filter((a) => a.tenant === 'idle01').length;
  t.ok(idleServed >= 8 && idleServed <= 12, `weight 1 of 5 in total gets a fifth of 50 seats: ${idleServed}`);
  t.ok(events.admissions.every((a) => a.queuedSeconds >= 0));
});

t.test('a queue at the global budget refuses with queue-full; a wait past the bound refuses with queue-timeout', async (t) => {
  const { controller, events } = controllerWith({ maxInflight: 1, tenantQueueLength: 1, queueWaitMs: 40 });
  const held = seat(controller.acquire('abc123', 'readonly', false));
  const waiting = seat(controller.acquire('other1', 'mutating', false));
  t.equal(controller.acquire('other1', 'readonly', false), 'queue-full', 'the tenant has room of its own: tenantgate is what is full');
  const started = performance.now();
  const outcome = await new Promise<RejectionReason | null>((resolve) => (waiting.decided = resolve));
  t.equal(outcome, 'queue-timeout');
  t.ok(performance.now() - started >= 35, 'not before the bound');
  t.same(
    events.rejections.map((r) => r.reason),
    ['queue-full', 'queue-timeout'],
  );
  controller.release(held);
  t.equal(controller.inflightTotal, 0, 'a timed-out request never takes a seat');
  t.equal(seat(controller.acquire('other1', 'readonly', false)).state, SEAT_HELD, 'and the tenant is served again');
});

t.test("at the end of a shutdown's drain every waiting request is refused (shutting-down, a 503 with Retry-After); held seats stay", async (t) => {
  const { controller, events } = controllerWith({ tenantQueueLength: 10 }, { noisy1: tenant('noisy1', { 'tenant.kubezoo.io/max-requests-inflight': '1,1' }) });
  const held = [seat(controller.acquire('noisy1', 'readonly', false)), seat(controller.acquire('noisy1', 'mutating', false))];
  const waiting = [
    seat(controller.acquire('noisy1', 'readonly', false)),
    seat(controller.acquire('noisy1', 'mutating', false)),
    seat(controller.acquire('noisy1', 'readonly', false)),
  ];
  const outcomes: (RejectionReason | null)[] = [];
  for (const w of waiting) w.decided = (reason) => outcomes.push(reason);
  controller.refuseQueued('shutting-down');
  t.same(outcomes, ['shutting-down', 'shutting-down', 'shutting-down']);
  t.same(
    events.rejections.map((r) => r.reason),
    ['shutting-down', 'shutting-down', 'shutting-down'],
  );
  t.equal(controller.inflightTotal, 2, 'the requests that hold seats go on');
  // Through the stage: the request still waiting gets a 503 with Retry-After, not a 429.
  const waitingRequest = flowControl(controller)({
    identity: { tenant: 'noisy1' },
    method: 'GET',
    path: '/api/v1/namespaces/default/pods',
    seat: null,
  } as never);
  t.type(waitingRequest, Promise, 'it waits for a seat');
  controller.refuseQueued('shutting-down');
  const error = await (waitingRequest as Promise<boolean>).catch((e: unknown) => e);
  t.ok(
    error instanceof StatusError && error.code === 503 && error.reason === 'ServiceUnavailable' && error.details?.retryAfterSeconds === 1,
    `503 ServiceUnavailable, Retry-After 1: ${String(error)}`,
  );
  for (const h of held) controller.release(h);
  t.equal(controller.inflightTotal, 0, 'nothing refused took a seat');
});

t.test("a change to a Tenant's annotation applies at once; a deleted tenant's flow is dropped", async (t) => {
  const tenants: Record<string, Tenant> = { abc123: tenant('abc123', { 'tenant.kubezoo.io/max-requests-inflight': '1' }) };
  const { controller } = controllerWith({}, tenants);
  const held = seat(controller.acquire('abc123', 'readonly', false));
  const queued = seat(controller.acquire('abc123', 'readonly', false));
  let granted = false;
  queued.decided = (refusal) => (granted = refusal === null);
  tenants.abc123 = tenant('abc123', { 'tenant.kubezoo.io/max-requests-inflight': '3' });
  controller.tenantChanged({ type: 'MODIFIED', tenant: tenants.abc123 });
  t.ok(granted, 'a raised limit admits the waiting request at once');
  t.equal(controller.flowState('abc123')!.limits.readonly, 3);
  controller.tenantChanged({ type: 'MODIFIED', tenant: tenant('abc123', { 'tenant.kubezoo.io/max-requests-inflight': '2' }) });
  t.equal(seat(controller.acquire('abc123', 'readonly', false)).state, SEAT_QUEUED, 'a lowered limit queues the next one');
  controller.tenantChanged({ type: 'DELETED', tenant: tenants.abc123 });
  t.equal(controller.flowState('abc123'), undefined);
  controller.release(held);
  controller.release(queued);
  t.equal(controller.inflightTotal, 1, 'seats of the deleted tenant still come back (one request was still queued behind the lowered limit and took one)');
});

/** A real HTTP server whose pipeline is the flow-control stage, then a response held until `finish` is called. */
async function serverWithStage(controller: FlowController, tenantOf: (req: http.IncomingMessage) => string | null) {
  const pending: http.ServerResponse[] = [];
  const runner = new RequestRunner([
    { name: 'identity', run: (ctx) => ((ctx.identity = { user: 'u', groups: [], tenant: tenantOf((ctx as Http1RequestContext).req) }), false) },
    { name: 'flow control', run: flowControl(controller) },
    {
      name: 'hold the response',
      run: (ctx) => {
        const res = (ctx as Http1RequestContext).res;
        if (ctx.path.includes('watch=true')) {
          releaseStartSeat(ctx); // what the answer stage does when the upstream's headers arrive
          res.writeHead(200);
          res.write('{}\n');
        }
        pending.push(res);
        return true;
      },
    },
  ]);
  const server = http.createServer((req, res) => runner.request(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return { server, port, pending };
}

function get(
  port: number,
  path: string,
  tenantHeader: string,
): { req: http.ClientRequest; answer: Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> } {
  const req = http.get({ host: '127.0.0.1', port, path, headers: { 'x-tenant': tenantHeader }, agent: false });
  const answer = new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
    req.on('response', (res) => {
      let body = '';
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
  });
  return { req, answer };
}

const until = (condition: () => boolean, what: string) => eventually(what, condition, { withinMs: 3000, everyMs: 5 });

t.test('over a real socket: clients that reset mid-request give their seats back; 429 carries Retry-After', async (t) => {
  const tenants = { abc123: tenant('abc123', { 'tenant.kubezoo.io/max-requests-inflight': '2', [MAX_WATCHES_ANNOTATION]: '3' }) };
  const controller = new FlowController({ ...DEFAULT_FLOW_CONTROL, tenantQueueLength: 1, queueWaitMs: 2000 }, (id) => tenants[id as 'abc123']);
  const { server, port, pending } = await serverWithStage(controller, (req) => (req.headers['x-tenant'] === 'admin' ? null : String(req.headers['x-tenant'])));
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  for (let round = 0; round < 5; round++) {
    const clients = [get(port, '/api/v1/pods', 'abc123'), get(port, '/api/v1/pods', 'abc123'), get(port, '/api/v1/pods', 'abc123')];
    for (const c of clients) c.answer.catch(() => {});
    await until(() => controller.inflightTotal === 2 && controller.flowState('abc123')!.queuedReadonly.length === 1, 'two held and one queued');
    for (const c of clients) c.req.destroy(); // mid-request: no response yet, held or queued
    await until(() => controller.inflightTotal === 0 && controller.flowState('abc123')!.queued === 0, 'every seat back after the resets');
    pending.length = 0;
  }
  // Limit 2, queue 1: the fourth concurrent request is refused with a Status the client can act on.
  const held = [get(port, '/api/v1/pods', 'abc123'), get(port, '/api/v1/pods', 'abc123'), get(port, '/api/v1/pods', 'abc123')];
  for (const c of held) c.answer.catch(() => {});
  await until(() => controller.inflightTotal === 2, 'two held');
  const refused = await get(port, '/api/v1/pods', 'abc123').answer;
  t.equal(refused.status, 429);
  t.equal(refused.headers['retry-after'], '1');
  const status = JSON.parse(refused.body);
  t.match(status, { kind: 'Status', reason: 'TooManyRequests', code: 429, details: { retryAfterSeconds: 1 } });
  t.ok(new StatusError(429, 'TooManyRequests', '').code === status.code);
  // Administrators are exempt: they are not counted and never wait.
  const admin = get(port, '/api/v1/pods', 'admin');
  admin.answer.catch(() => {});
  await until(() => pending.length === 3, 'the administrator served at once');
  t.equal(controller.inflightTotal, 2);
  // A response that ends gives its seat to the queued request.
  pending[0]!.end('{}');
  await until(() => pending.length === 4, 'the queued request admitted');
  for (const res of pending) res.end('{}');
  await until(() => controller.inflightTotal === 0, 'all seats back');
  // Watches: their seat comes back once the response starts, while the watch goes on.
  const watches = [
    get(port, '/api/v1/pods?watch=true', 'abc123'),
    get(port, '/api/v1/pods?watch=true', 'abc123'),
    get(port, '/api/v1/pods?watch=true', 'abc123'),
  ];
  for (const w of watches) w.answer.catch(() => {});
  await until(() => pending.length === 7, 'three watches open');
  t.equal(controller.inflightTotal, 0, 'open watches hold no seats');
  // But they count against the tenant's max-watches (3): a fourth is refused at once with a Status to act on.
  const fourth = await get(port, '/api/v1/pods?watch=true', 'abc123').answer;
  t.equal(fourth.status, 429);
  t.equal(fourth.headers['retry-after'], '1');
  t.match(JSON.parse(fourth.body), { kind: 'Status', reason: 'TooManyRequests', code: 429, message: /max-watches/ });
  // The server ending a watch (upstream gone, timeout) frees its place, and a new watch opens.
  pending[4]!.end();
  await until(() => controller.openLongRunning('abc123') === 2, 'one watch ended');
  const reopened = get(port, '/api/v1/pods?watch=true', 'abc123');
  reopened.answer.catch(() => {});
  await until(() => pending.length === 8, 'a new watch open');
  t.equal(controller.openLongRunning('abc123'), 3);
  // Clients that go away mid-watch free theirs.
  for (const w of [...watches, reopened]) w.req.destroy();
  await until(() => controller.openLongRunning('abc123') === 0, 'every watch closed');
});

// The flow-control stage: a tenant's request takes a seat before it costs anything upstream, or waits, or gets 429;
// a watch or other long-running request also counts against the tenant's cap on open ones until its response closes.
// Never leaves a seat or a count behind: both are given back when the response closes, however the request ended.
import { identityOf, type RequestContext } from '../request/context.ts';
import { serviceUnavailable, tooManyRequests } from '../errors/status-error.ts';
import type { FlowController } from './dispatcher.ts';
import type { RejectionReason, SeatKind } from './events.ts';
import { SEAT_HELD, SEAT_QUEUED } from './tenant-flow.ts';

/** Requests the apiserver counts as long-running: a watch, and pods' and services' log, proxy, exec, attach, port-forward. */
const LONG_RUNNING =
  /^\/api(?:s\/[^/]+)?\/[^/]+\/watch\/|\/(?:pods|services|nodes)\/[^/?]+\/(?:log|proxy|exec|attach|portforward)(?:[/?]|$)|[?&]watch=(?:1|true)(?:&|$)/;

export function seatKindOf(method: string | undefined): SeatKind {
  return method === 'GET' || method === 'HEAD' || method === 'OPTIONS' ? 'readonly' : 'mutating';
}

/** Streams whatever the method: SPDY's exec, attach and port-forward are POSTs, a proxied request any method. */
const STREAMING_SUBRESOURCE = /^\/api\/v1\/namespaces\/[^/]+\/(?:pods\/[^/?]+\/(?:exec|attach|portforward|proxy)|services\/[^/?]+\/proxy)(?:[/?]|$)/;

/** True when the request holds its seat only until its response starts, and counts against the tenant's watch cap. */
export function isLongRunning(method: string | undefined, path: string): boolean {
  return method === 'GET' ? LONG_RUNNING.test(path) : STREAMING_SUBRESOURCE.test(path);
}

/** Gives back what the request holds once its exchange closed, however it ended (called once, at close). */
export function releaseSeat(ctx: RequestContext): void {
  const seat = ctx.seat;
  if (seat !== null) seat.owner.closed(seat);
}

/** A watch (or other long-running request) gives its seat back once its response starts: called as headers arrive. */
export function releaseStartSeat(ctx: RequestContext): void {
  const seat = ctx.seat;
  if (seat !== null && seat.startOnly && seat.state === SEAT_HELD) seat.owner.release(seat);
}

function refusal(reason: RejectionReason): Error {
  switch (reason) {
    case 'inflight-limit':
      return tooManyRequests(
        "too many requests in flight for this tenant: its limit is set by the Tenant's tenant.kubezoo.io/max-requests-inflight annotation",
      );
    case 'queue-full':
      return tooManyRequests("tenantgate is busy and too many of this tenant's requests are waiting");
    case 'queue-timeout':
      return tooManyRequests('the request waited too long for a seat');
    case 'watch-limit':
      return tooManyRequests(
        "too many watches and other long-running requests open for this tenant: its limit is set by the Tenant's tenant.kubezoo.io/max-watches annotation",
      );
    case 'shutting-down':
      // Never ran: the client sends it again, to another replica (this one no longer takes connections).
      return serviceUnavailable('tenantgate is shutting down; retry', { retryAfterSeconds: 1 });
  }
}

/**
 * `startsCheaply`: whether a request is a watch that costs no seat (the watch cache serves it); it then counts against
 * the tenant's open watches only.
 */
export function flowControl(
  controller: FlowController,
  startsCheaply: (ctx: RequestContext) => boolean = () => false,
): (ctx: RequestContext) => boolean | Promise<boolean> {
  return (ctx) => {
    const tenant = identityOf(ctx).tenant;
    // Administrators are exempt (like the apiserver's exempt priority level): they must be able to act, e.g. lower
    // a noisy tenant's limit, while tenants saturate tenantgate.
    if (tenant === null) return false;
    const method = ctx.method;
    const longRunning = isLongRunning(method, ctx.path);
    const seat =
      longRunning && startsCheaply(ctx) ? controller.acquireOpenOnly(tenant, seatKindOf(method)) : controller.acquire(tenant, seatKindOf(method), longRunning);
    if (typeof seat === 'string') throw refusal(seat);
    // Given back by releaseSeat when the exchange closes (request/pipeline.ts), or sooner for a long-running one.
    ctx.seat = seat;
    // Held, or none needed (a cheap watch start): on at once.
    if (seat.state !== SEAT_QUEUED) return false;
    return new Promise<boolean>((resolve, reject) => {
      seat.decided = (reason) => (reason === null ? resolve(false) : reject(refusal(reason)));
    });
  };
}

// Seats for tenants' requests: per-tenant limits, a budget for tenantgate as a whole, and fair queuing between
// tenants by weight (start-time fair queuing) when either is reached. Never lets a seat outlive its request.
import type { TenantId } from '../convert/prefix.ts';
import type { Tenant, TenantEvent, TenantStore } from '../tenants/tenant.ts';
import { IGNORE_FLOW_EVENTS, type FlowControlEvents, type RejectionReason, type SeatKind } from './events.ts';
import { limitsOf, type FlowControlOptions } from './limits.ts';
import { Seat, type SeatOwner, SEAT_DONE, SEAT_HELD, SEAT_QUEUED, TenantFlow } from './tenant-flow.ts';

export class FlowController implements SeatOwner {
  readonly options: FlowControlOptions;
  private readonly tenantOf: (id: TenantId) => Tenant | undefined;
  private readonly events: FlowControlEvents;
  private readonly flows = new Map<TenantId, TenantFlow>();
  /** Tenants with requests waiting, in the order they started waiting (ties of fair queuing go to the first). */
  private readonly backlogged = new Set<TenantFlow>();
  private inflight = 0;
  /** Fair queuing's clock: the start tag of the request dispatched last. */
  private virtualTime = 0;

  constructor(options: FlowControlOptions, tenantOf: (id: TenantId) => Tenant | undefined, events: FlowControlEvents = IGNORE_FLOW_EVENTS) {
    this.options = options;
    this.tenantOf = tenantOf;
    this.events = events;
    this.timedOut = this.timedOut.bind(this);
  }

  /** Seats held by tenants' requests now. */
  get inflightTotal(): number {
    return this.inflight;
  }

  /** The tenant's flow (made on its first request); undefined when it has none. */
  flowState(tenant: TenantId): TenantFlow | undefined {
    return this.flows.get(tenant);
  }

  /**
   * A seat for one request: held at once when the tenant and tenantgate have room and nobody of the tenant waits
   * before it, else queued (the caller waits for `decided`). A refusal is returned instead of a seat.
   */
  acquire(tenant: TenantId, kind: SeatKind, startOnly: boolean): Seat | RejectionReason {
    const flow = this.#flowOf(tenant);
    // The cap on open long-running requests is checked first: a watch past it is refused, never queued.
    if (startOnly && flow.openLongRunning >= flow.limits.longRunning) {
      this.events.rejected(tenant, kind, 'watch-limit');
      return 'watch-limit';
    }
    const seat = new Seat(this, flow, kind, startOnly);
    // Invariant kept by dispatch(): while tenantgate has room, nobody eligible waits; so a request that finds room
    // takes it without overtaking anyone but requests of its own tenant and kind, which it must not overtake.
    if (this.inflight < this.options.maxInflight && flow.hasRoom(kind) && flow.queueOf(kind).length === 0) {
      flow.take(kind);
      this.inflight++;
      this.events.admitted(tenant, kind, 0);
      this.countOpen(seat);
      return seat;
    }
    if (flow.queued >= this.options.tenantQueueLength) {
      const reason: RejectionReason = flow.hasRoom(kind) ? 'queue-full' : 'inflight-limit';
      this.events.rejected(tenant, kind, reason);
      return reason;
    }
    seat.state = SEAT_QUEUED;
    seat.enqueuedAt = performance.now();
    flow.queueOf(kind).push(seat);
    if (!this.backlogged.has(flow)) {
      // A tenant that was idle starts at the current virtual time: idling earns no credit over busy tenants.
      if (flow.tag < this.virtualTime) flow.tag = this.virtualTime;
      this.backlogged.add(flow);
    }
    seat.timer = setTimeout(this.timedOut, this.options.queueWaitMs, seat);
    this.countOpen(seat);
    return seat;
  }

  /**
   * A long-running request that takes no seat (a watch the watch cache serves: it costs the upstream nothing): it only
   * counts against the tenant's cap on open ones, until its response closes.
   */
  acquireOpenOnly(tenant: TenantId, kind: SeatKind): Seat | RejectionReason {
    const flow = this.#flowOf(tenant);
    if (flow.openLongRunning >= flow.limits.longRunning) {
      this.events.rejected(tenant, kind, 'watch-limit');
      return 'watch-limit';
    }
    const seat = new Seat(this, flow, kind, true);
    seat.state = SEAT_DONE;
    this.countOpen(seat);
    return seat;
  }

  #flowOf(tenant: TenantId): TenantFlow {
    let flow = this.flows.get(tenant);
    if (flow === undefined) {
      flow = new TenantFlow(tenant, limitsOf(this.tenantOf(tenant), this.options));
      this.flows.set(tenant, flow);
    }
    return flow;
  }

  /** Open long-running requests of the tenant now (watches, exec...), started or waiting for a seat. */
  openLongRunning(tenant: TenantId): number {
    return this.flows.get(tenant)?.openLongRunning ?? 0;
  }

  /** The request is done with its seat (response ended, client gone, or a watch's response started). */
  release(seat: Seat): void {
    if (seat.state === SEAT_QUEUED) {
      // The client went away while waiting: it leaves the queue and never takes a seat.
      this.leaveQueue(seat);
      return;
    }
    if (seat.state !== SEAT_HELD) return;
    seat.state = SEAT_DONE;
    seat.flow.give(seat.kind);
    this.inflight--;
    this.events.released(seat.flow.tenant, seat.kind);
    if (this.backlogged.size !== 0) this.dispatch();
  }

  /** The request's response closed: its seat goes back if still held, and a long-running request stops counting. */
  closed(seat: Seat): void {
    this.release(seat);
    if (!seat.countedOpen) return;
    seat.countedOpen = false;
    seat.flow.openLongRunning--;
  }

  private countOpen(seat: Seat): void {
    if (!seat.startOnly) return;
    seat.countedOpen = true;
    seat.flow.openLongRunning++;
  }

  /** Follows the tenants' changes: new limits apply at once, a deleted tenant's flow is forgotten. */
  follow(store: Pick<TenantStore, 'onChange'>): () => void {
    return store.onChange((event) => this.tenantChanged(event));
  }

  tenantChanged(event: TenantEvent): void {
    const id = event.tenant.metadata.name;
    if (event.type === 'DELETED') {
      // Requests under way keep their flow object and still release into it; a re-created tenant starts afresh.
      this.flows.delete(id);
      return;
    }
    const flow = this.flows.get(id);
    if (flow === undefined) return;
    flow.limits = limitsOf(event.tenant, this.options);
    if (this.backlogged.size !== 0) this.dispatch();
  }

  private timedOut(seat: Seat): void {
    if (seat.state !== SEAT_QUEUED) return;
    this.leaveQueue(seat);
    this.events.rejected(seat.flow.tenant, seat.kind, 'queue-timeout');
    seat.decided?.('queue-timeout');
  }

  /** Refuses every request still waiting for a seat (the drain of a shutdown is over): each gets its refusal now. */
  refuseQueued(reason: RejectionReason): void {
    for (const flow of [...this.backlogged]) {
      for (const seat of [...flow.queuedReadonly, ...flow.queuedMutating]) {
        this.leaveQueue(seat);
        this.events.rejected(flow.tenant, seat.kind, reason);
        seat.decided?.(reason);
      }
    }
  }

  private leaveQueue(seat: Seat): void {
    const queue = seat.flow.queueOf(seat.kind);
    const at = queue.indexOf(seat);
    if (at !== -1) queue.splice(at, 1);
    seat.state = SEAT_DONE;
    clearTimeout(seat.timer);
    if (seat.flow.queued === 0) this.backlogged.delete(seat.flow);
  }

  /** Gives free seats to waiting requests, the tenant with the smallest start tag first. */
  private dispatch(): void {
    while (this.inflight < this.options.maxInflight) {
      let flow: TenantFlow | null = null;
      let seat: Seat | null = null;
      for (const candidate of this.backlogged) {
        if (flow !== null && candidate.tag >= flow.tag) continue;
        const next = candidate.nextEligible();
        if (next === null) continue;
        flow = candidate;
        seat = next;
      }
      if (flow === null || seat === null) return;
      flow.queueOf(seat.kind).shift();
      if (flow.queued === 0) this.backlogged.delete(flow);
      this.virtualTime = flow.tag;
      flow.tag += 1 / flow.limits.weight;
      clearTimeout(seat.timer);
      seat.state = SEAT_HELD;
      flow.take(seat.kind);
      this.inflight++;
      this.events.admitted(flow.tenant, seat.kind, (performance.now() - seat.enqueuedAt) / 1000);
      seat.decided?.(null);
    }
  }
}

// One tenant's seats: how many it holds of each kind, its limits, and its requests waiting in arrival order.
// Never admits anything itself: the dispatcher decides; a flow only answers what is next and whether it may run.
import type { TenantId } from '../convert/prefix.ts';
import type { RejectionReason, SeatKind } from './events.ts';
import type { TenantLimits } from './limits.ts';

export const SEAT_QUEUED = 0;
export const SEAT_HELD = 1;
export const SEAT_DONE = 2;

/** Who gives seats out and takes them back. */
export interface SeatOwner {
  release(seat: Seat): void;
  /** The request's response closed, however it ended (done, client gone, upstream gone, timed out). */
  closed(seat: Seat): void;
}

/** The place one request takes (or waits for) in flow control; one per request, fixed shape. */
export class Seat {
  readonly owner: SeatOwner;
  readonly flow: TenantFlow;
  readonly kind: SeatKind;
  /** Watches and other long-running requests hold their seat only until their response starts. */
  readonly startOnly: boolean;
  /** True while a long-running request counts against its tenant's cap (from admission until its response closes). */
  countedOpen = false;
  state = SEAT_HELD;
  enqueuedAt = 0;
  timer: NodeJS.Timeout | undefined = undefined;
  /** Set while queued: told once whether the seat was granted (null) or refused. */
  decided: ((refusal: RejectionReason | null) => void) | undefined = undefined;

  constructor(owner: SeatOwner, flow: TenantFlow, kind: SeatKind, startOnly: boolean) {
    this.owner = owner;
    this.flow = flow;
    this.kind = kind;
    this.startOnly = startOnly;
  }
}

export class TenantFlow {
  readonly tenant: TenantId;
  limits: TenantLimits;
  inflightReadonly = 0;
  inflightMutating = 0;
  /** Long-running requests open now (watches, exec...), queued or started: counted until their responses close. */
  openLongRunning = 0;
  readonly queuedReadonly: Seat[] = [];
  readonly queuedMutating: Seat[] = [];
  /** Start tag of fair queuing: the virtual time at which this tenant's next queued request is due. */
  tag = 0;

  constructor(tenant: TenantId, limits: TenantLimits) {
    this.tenant = tenant;
    this.limits = limits;
  }

  hasRoom(kind: SeatKind): boolean {
    return kind === 'readonly' ? this.inflightReadonly < this.limits.readonly : this.inflightMutating < this.limits.mutating;
  }

  queueOf(kind: SeatKind): Seat[] {
    return kind === 'readonly' ? this.queuedReadonly : this.queuedMutating;
  }

  get queued(): number {
    return this.queuedReadonly.length + this.queuedMutating.length;
  }

  take(kind: SeatKind): void {
    if (kind === 'readonly') this.inflightReadonly++;
    else this.inflightMutating++;
  }

  give(kind: SeatKind): void {
    if (kind === 'readonly') this.inflightReadonly--;
    else this.inflightMutating--;
  }

  /** The oldest waiting request whose kind has room under the tenant's limits, or null. */
  nextEligible(): Seat | null {
    const readonly = this.inflightReadonly < this.limits.readonly ? this.queuedReadonly[0] : undefined;
    const mutating = this.inflightMutating < this.limits.mutating ? this.queuedMutating[0] : undefined;
    if (readonly === undefined) return mutating ?? null;
    if (mutating === undefined) return readonly;
    return mutating.enqueuedAt < readonly.enqueuedAt ? mutating : readonly;
  }
}

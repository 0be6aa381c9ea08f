// What flow control tells whoever watches it (metrics); calls are cheap and synchronous, and never throw.
import type { TenantId } from '../convert/prefix.ts';
export type SeatKind = 'readonly' | 'mutating';
/**
 * `watch-limit`: the tenant holds as many long-running requests (watches, exec...) as it may. `shutting-down`: still
 * waiting when this tenantgate's drain ended (lib/server/shutdown.ts).
 */
export type RejectionReason = 'inflight-limit' | 'queue-full' | 'queue-timeout' | 'watch-limit' | 'shutting-down';
export interface FlowControlEvents {
  admitted(tenant: TenantId, kind: SeatKind, queuedSeconds: number): void;
  released(tenant: TenantId, kind: SeatKind): void;
  rejected(tenant: TenantId, kind: SeatKind, reason: RejectionReason): void;
}
export const IGNORE_FLOW_EVENTS: FlowControlEvents = { admitted() {}, released() {}, rejected() {} };

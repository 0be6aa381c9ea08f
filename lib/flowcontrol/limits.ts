// A tenant's flow-control limits: tenantgate's defaults, overridden per tenant by the Tenant's annotations.
// Never throws on a bad annotation: it is ignored with a log line and the defaults apply.
import { log } from '../log.ts';
import { MAX_INFLIGHT_ANNOTATIONS, type Tenant } from '../tenants/tenant.ts';

/** Relative share of tenantgate's seats when it is saturated (default 1). */
export const FLOW_WEIGHT_ANNOTATION = 'tenant.kubezoo.io/flow-weight';
/** Open long-running requests (watches, exec, attach, port-forward, proxy, logs) the tenant may hold at once. */
export const MAX_WATCHES_ANNOTATION = 'tenant.kubezoo.io/max-watches';

export interface FlowControlOptions {
  /** Seats of tenantgate as a whole (tenants' non-watch requests and watch starts); administrators are exempt. */
  maxInflight: number;
  /** Default per-tenant seats for read-only requests (GET, HEAD, LIST, a watch while it starts). */
  tenantMaxInflight: number;
  /** Default per-tenant seats for mutating requests. */
  tenantMaxMutatingInflight: number;
  /** Requests one tenant may have waiting for a seat; one more is refused at once (429). */
  tenantQueueLength: number;
  /** Longest wait for a seat before a 429. */
  queueWaitMs: number;
  /** Default per-tenant cap on open long-running requests; one more is refused at once (429). */
  tenantMaxWatches: number;
}

export const DEFAULT_FLOW_CONTROL: FlowControlOptions = {
  maxInflight: 400,
  tenantMaxInflight: 50,
  tenantMaxMutatingInflight: 25,
  tenantQueueLength: 50,
  queueWaitMs: 5000,
  // A controller's informers hold one watch per kind: 1,000 is dozens of controllers and kubectl -w sessions of one
  // tenant, while bounding the upstream streams and rewriter buffers a single tenant can pin in tenantgate.
  tenantMaxWatches: 1000,
};

export interface TenantLimits {
  readonly: number;
  mutating: number;
  weight: number;
  /** Open long-running requests at once. */
  longRunning: number;
}

const MAX_WEIGHT = 1000;

function positiveInteger(text: string): number | null {
  if (!/^\s*\d+\s*$/.test(text)) return null;
  const n = Number(text);
  return Number.isSafeInteger(n) && n > 0 ? n : null;
}

/**
 * `max-requests-inflight`: KubeZoo's annotation is one number, the tenant's concurrency ("tokens in its bucket").
 * Here one number N means N read-only seats and N/2 (at least 1) mutating ones, the apiserver's own 2:1 split of
 * --max-requests-inflight and --max-mutating-requests-inflight; `R,M` sets both.
 */
export function parseMaxInflight(text: string): { readonly: number; mutating: number } | null {
  const parts = text.split(',');
  if (parts.length === 1) {
    const n = positiveInteger(parts[0]!);
    return n === null ? null : { readonly: n, mutating: Math.max(1, Math.floor(n / 2)) };
  }
  if (parts.length !== 2) return null;
  const readonly = positiveInteger(parts[0]!);
  const mutating = positiveInteger(parts[1]!);
  return readonly === null || mutating === null ? null : { readonly, mutating };
}

export function parseWeight(text: string): number | null {
  if (!/^\s*\d+(\.\d+)?\s*$/.test(text)) return null;
  const weight = Number(text);
  return weight > 0 && weight <= MAX_WEIGHT ? weight : null;
}

/** The limits of this tenant (undefined: an unknown tenant, who gets the defaults). */
export function limitsOf(tenant: Tenant | undefined, defaults: FlowControlOptions): TenantLimits {
  const limits: TenantLimits = {
    readonly: defaults.tenantMaxInflight,
    mutating: defaults.tenantMaxMutatingInflight,
    weight: 1,
    longRunning: defaults.tenantMaxWatches,
  };
  const annotations = tenant?.metadata.annotations;
  if (annotations === undefined) return limits;
  for (const key of MAX_INFLIGHT_ANNOTATIONS) {
    const value = annotations[key];
    if (value === undefined) continue;
    const parsed = parseMaxInflight(value);
    if (parsed === null) {
      log.warn('ignoring a bad flow-control annotation', {
        tenant: tenant!.metadata.name,
        annotation: key,
        value,
        expected: 'N or READONLY,MUTATING (positive integers)',
      });
      continue;
    }
    limits.readonly = parsed.readonly;
    limits.mutating = parsed.mutating;
    break; // tenantgate's own key wins over KubeZoo's
  }
  const weight = annotations[FLOW_WEIGHT_ANNOTATION];
  if (weight !== undefined) {
    const parsed = parseWeight(weight);
    if (parsed === null)
      log.warn('ignoring a bad flow-control annotation', {
        tenant: tenant!.metadata.name,
        annotation: FLOW_WEIGHT_ANNOTATION,
        value: weight,
        expected: `a number in (0, ${MAX_WEIGHT}]`,
      });
    else limits.weight = parsed;
  }
  const watches = annotations[MAX_WATCHES_ANNOTATION];
  if (watches !== undefined) {
    const parsed = positiveInteger(watches);
    if (parsed === null)
      log.warn('ignoring a bad flow-control annotation', {
        tenant: tenant!.metadata.name,
        annotation: MAX_WATCHES_ANNOTATION,
        value: watches,
        expected: 'a positive integer',
      });
    else limits.longRunning = parsed;
  }
  return limits;
}

// status.conditions of a Tenant, set the way Kubernetes controllers set theirs: one condition per type,
// lastTransitionTime moves only when the status changes. Never writes to a store: callers decide when to save.
import type { Tenant, TenantCondition, TenantStore } from './tenant.ts';

export function conditionOf(tenant: Tenant, type: string): TenantCondition | undefined {
  return tenant.status?.conditions?.find((condition) => condition.type === type);
}

/** Sets (or replaces) the condition of its type on `tenant`; returns false when nothing changed (no write needed). */
export function setCondition(tenant: Tenant, condition: Omit<TenantCondition, 'lastTransitionTime'>, now = new Date()): boolean {
  const status = (tenant.status ??= {});
  const conditions = (status.conditions ??= []);
  const index = conditions.findIndex((existing) => existing.type === condition.type);
  const existing = index === -1 ? undefined : conditions[index];
  if (existing !== undefined && existing.status === condition.status && existing.reason === condition.reason && existing.message === condition.message) {
    return false;
  }
  const lastTransitionTime =
    existing !== undefined && existing.status === condition.status ? existing.lastTransitionTime : now.toISOString().replace(/\.\d+Z$/, 'Z');
  const next: TenantCondition = { type: condition.type, status: condition.status, lastTransitionTime };
  if (condition.reason !== undefined) next.reason = condition.reason;
  if (condition.message !== undefined) next.message = condition.message;
  if (index === -1) conditions.push(next);
  else conditions[index] = next;
  return true;
}

export function isReady(tenant: Tenant): boolean {
  return conditionOf(tenant, 'Ready')?.status === 'True';
}

/**
 * The condition saying whether a tenant's birth state (built-in namespaces, roles and bindings, flow-control defaults,
 * Service default/kubernetes) is written upstream: a tenant is Ready at once and costs the upstream nothing until its
 * first request asks for objects (lifecycle.ts whenBorn).
 */
export const BIRTH_STATE_CONDITION = 'BuiltinsUpstream';

/** Whether the tenant's birth state is upstream; a tenant an older tenantgate made Ready (no such condition) has it. */
export function isBorn(tenant: Tenant): boolean {
  const birth = conditionOf(tenant, BIRTH_STATE_CONDITION);
  return birth === undefined ? isReady(tenant) : birth.status === 'True';
}

/**
 * Ready, as a Tenant is once stored (its credentials are issued by the Tenant API on request): set by its create, or
 * by the lifecycle for one stored otherwise. Its birth state deferred unless it has one. False when nothing changed.
 */
export function markCreated(tenant: Tenant): boolean {
  let changed = false;
  // (A tenant Ready without the condition is an older version's, born already.)
  if (conditionOf(tenant, BIRTH_STATE_CONDITION) === undefined && !isReady(tenant)) {
    changed = setCondition(tenant, {
      type: BIRTH_STATE_CONDITION,
      status: 'False',
      reason: 'Deferred',
      message: "written upstream on the tenant's first request",
    });
  }
  changed =
    setCondition(tenant, { type: 'Ready', status: 'True', reason: 'Created', message: 'stored; its credentials are issued by the Tenant API' }) || changed;
  if (tenant.status!.online === true) return changed;
  tenant.status!.online = true;
  return true;
}

/** Resolves once the store's tenant `id` is Ready (stored: its birth state is written on its first request). */
export function whenReady(store: Pick<TenantStore, 'get' | 'onChange'>, id: string, timeoutMs = 30_000): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (error?: Error) => {
      stop();
      clearTimeout(timer);
      if (error === undefined) resolve();
      else reject(error);
    };
    const stop = store.onChange((event) => {
      if (event.tenant.metadata.name === id && event.type !== 'DELETED' && isReady(event.tenant)) done();
    });
    const timer = setTimeout(() => done(new Error(`tenant ${id} was not Ready within ${timeoutMs} ms`)), timeoutMs);
    const now = store.get(id);
    if (now !== undefined && isReady(now)) done();
  });
}

// Which of the platform's priority classes a tenant's pods may take. Priority orders every tenant's pods against each
// other, so the platform's critical classes (above any class a user may define) are never a tenant's. Never allows them.
import { forbidden } from '../../errors/status-error.ts';

/** The apiserver's bound for a user-defined PriorityClass (HighestUserDefinablePriority): above it, only system classes. */
export const HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000;

/** The platform's critical classes: they preempt anything, the control plane's and nodes' own pods included. */
export const PLATFORM_CRITICAL_PRIORITY_CLASSES: ReadonlySet<string> = new Set(['system-node-critical', 'system-cluster-critical']);

/** The 403 for a pod naming a platform-critical class; nothing for any other value (the apiserver judges the rest). */
export function refusePlatformPriorityClass(priorityClassName: unknown): void {
  if (typeof priorityClassName !== 'string' || !PLATFORM_CRITICAL_PRIORITY_CLASSES.has(priorityClassName)) return;
  throw forbidden(
    `pods is forbidden: priority class ${JSON.stringify(priorityClassName)} is the platform's own: a tenant's pods may not take it (it would preempt every other tenant's)`,
    { kind: 'pods' },
  );
}

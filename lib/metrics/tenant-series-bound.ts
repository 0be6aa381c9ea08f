// Which tenants keep a `tenant` label value of their own: the first N tenant ids in name order; every other tenant
// is counted under `_other`. Never hands out more than N tenant label values, whatever ids callers present.
import type { TenantId } from '../convert/prefix.ts';

/** The label value of every tenant past the bound (and of ids no stored tenant has). */
export const OTHER_TENANTS = '_other';

export class TenantSeriesBound {
  readonly limit: number;
  #own = new Set<TenantId>();

  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 0) throw new RangeError(`the tenant series bound must be a non-negative integer, got ${limit}`);
    this.limit = limit;
  }

  /** Recomputes the bound from every stored tenant id, sorted by name; returns the ids that lost their own series. */
  update(sortedIds: readonly TenantId[]): TenantId[] {
    const next = new Set(sortedIds.slice(0, this.limit));
    const dropped: TenantId[] = [];
    for (const id of this.#own) if (!next.has(id)) dropped.push(id);
    this.#own = next;
    return dropped;
  }

  /** The tenant label value for a tenant id. */
  labelOf(id: TenantId): string {
    return this.#own.has(id) ? id : OTHER_TENANTS;
  }

  hasOwnSeries(id: TenantId): boolean {
    return this.#own.has(id);
  }
}

// Which tenants keep a `tenant` label value of their own: the first N tenant ids in name order; every other tenant
// is counted under `_other`. Never hands out more than N tenant label values, whatever ids callers present.
import type { TenantId } from '../convert/prefix.ts';

/** The label value of every tenant past the bound (and of ids no stored tenant has). */
export const OTHER_TENANTS = '_other';

export class TenantSeriesBound {
  readonly limit: number;
  #own = new Set<TenantId>();
  /** The same ids in name order. */
  #sorted: TenantId[] = [];

  constructor(limit: number) {
    if (!Number.isInteger(limit) || limit < 0) throw new RangeError(`the tenant series bound must be a non-negative integer, got ${limit}`);
    this.limit = limit;
  }

  /** Recomputes the bound from every stored tenant id, sorted by name; returns the ids that lost their own series. */
  update(sortedIds: readonly TenantId[]): TenantId[] {
    this.#sorted = sortedIds.slice(0, this.limit);
    const next = new Set(this.#sorted);
    const dropped: TenantId[] = [];
    for (const id of this.#own) if (!next.has(id)) dropped.push(id);
    this.#own = next;
    return dropped;
  }

  /**
   * Whether a tenant just added takes a series of its own (it sorts among the first N); without a sort of every
   * stored id (a burst of creations at 10,000 tenants spent milliseconds a create on it). Asked before `add`, which does the same.
   */
  wouldTake(id: TenantId): boolean {
    if (this.limit === 0 || this.#own.has(id)) return false;
    return this.#sorted.length < this.limit || id < this.#sorted.at(-1)!;
  }

  /** Takes the added tenant into the bound (see wouldTake); returns the id that lost its own series, if one did. */
  add(id: TenantId): TenantId[] {
    if (!this.wouldTake(id)) return [];
    const at = this.#sorted.findIndex((other) => other > id);
    this.#sorted.splice(at === -1 ? this.#sorted.length : at, 0, id);
    this.#own.add(id);
    if (this.#sorted.length <= this.limit) return [];
    const dropped = this.#sorted.pop()!;
    this.#own.delete(dropped);
    return [dropped];
  }

  /** The tenant label value for a tenant id. */
  labelOf(id: TenantId): string {
    return this.#own.has(id) ? id : OTHER_TENANTS;
  }

  hasOwnSeries(id: TenantId): boolean {
    return this.#own.has(id);
  }
}

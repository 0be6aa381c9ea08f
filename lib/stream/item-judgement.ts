// The verdict on one item (or watch event's object) from what the scanner noted of it: kept on the fast path,
// dropped, or given to the kind's rule. Pure: reads the notes and the bytes, never edits or emits anything.
import { indexWithin } from './json-skip.ts';
import { startsWith } from './byte-search.ts';
import { NAME_STRING, SPAN_CONDITIONS, SPAN_GENERATE_NAME, SPAN_OWNERS, type ItemNotes } from './item-notes.ts';
import type { TenantViewSpec } from './tenant-view-spec.ts';
import { PREFIX_LENGTH, tenantPrefix, toTenantName, type TenantId } from '../convert/prefix.ts';

/** Dropped: its name field is missing, not a string, empty or written twice, or the item is not an object. */
export const ITEM_UNCHECKED = 0;
/** Dropped: another tenant's or the platform's (its name lacks the tenant's prefix), or labelled for another tenant. */
export const ITEM_NOT_TENANTS = 1;
/** Kept on the fast path: its bytes but for the name's prefix (and the metadata edits, with tenantMetadata). */
export const ITEM_FAST = 2;
/** Kept on the fast path, but its name holds escapes: replaced by the tenant's name, decoded and written again. */
export const ITEM_FAST_RENAMED = 3;
/** The careful path: the kind's rule (rewriteItem) parses the item, and keeps and rewrites it, or drops it. */
export const ITEM_CAREFUL = 4;

/** What the judgement knows of the tenant and the kind, made once per scanner. */
export interface ItemRules {
  readonly tenant: TenantId;
  /** `<id>-`, which starts the name of every object of the tenant upstream. */
  readonly prefix: Buffer;
  readonly tenantBytes: Buffer;
  /** The tenant id as a JSON string: the value of the tenant label of the tenant's objects. */
  readonly tenantValue: Buffer;
  /** Whether the kind has a rule (rewriteItem): then an item takes the fast path only with tenantMetadata's leave. */
  readonly hasRule: boolean;
}

export function itemRulesOf(spec: TenantViewSpec): ItemRules {
  return {
    tenant: spec.tenant,
    prefix: Buffer.from(tenantPrefix(spec.tenant)),
    tenantBytes: Buffer.from(spec.tenant),
    tenantValue: Buffer.from(JSON.stringify(spec.tenant)),
    hasRule: spec.rewriteItem !== undefined,
  };
}

/**
 * The verdict (ITEM_x) on the item `item` noted in `buf`. `epoch`: the scan's (json-skip.ts), whose window of `buf`
 * serves the searches. Without a name field (`nameKey` null) the rule decides alone.
 */
export function judgeItem(item: ItemNotes, buf: Buffer, rules: ItemRules, epoch: number): number {
  if (item.nameKey !== null) {
    if (!item.isObject || item.ambiguous || item.nameState !== NAME_STRING) return ITEM_UNCHECKED;
    if (item.nameEscaped) {
      if (tenantNameJson(buf, item.nameStart, item.nameEnd, rules.tenant) === null) return ITEM_NOT_TENANTS;
    } else {
      const from = item.nameStart + 1;
      // The value must be longer than the prefix: "<id>-" alone names nothing.
      if (item.nameEnd - 1 - from <= PREFIX_LENGTH) return item.nameEnd - item.nameStart === 2 ? ITEM_UNCHECKED : ITEM_NOT_TENANTS;
      const prefix = rules.prefix;
      for (let k = 0; k < PREFIX_LENGTH; k++) if (buf[from + k] !== prefix[k]) return ITEM_NOT_TENANTS;
    }
  }
  if (!fastPathApplies(item, buf, rules, epoch)) return ITEM_CAREFUL;
  if (item.withMetadata && item.tenantLabelCount > 0 && (!item.tenantLabelIsString || !tenantLabelIsOurs(item, buf, rules))) return ITEM_NOT_TENANTS;
  return item.nameKey !== null && item.nameEscaped ? ITEM_FAST_RENAMED : ITEM_FAST;
}

/** The tenant's name, as JSON, of the escaped upstream name `buf[start, end)` (quotes included); null when not the tenant's. */
export function tenantNameJson(buf: Buffer, start: number, end: number, tenant: TenantId): Buffer | null {
  const upstream: unknown = JSON.parse(buf.toString('utf8', start, end));
  const name = typeof upstream === 'string' ? toTenantName(upstream, tenant) : null;
  return name === null ? null : Buffer.from(JSON.stringify(name));
}

/**
 * Whether an item that passed the name check may skip the rule. With tenantMetadata: unless the tenant's id
 * followed by '-' or ':' stands where the generic rule would un-prefix it (owner references, a cluster-scoped
 * object's generateName, status condition messages), or a marker of the kind stands in its spec.
 */
function fastPathApplies(item: ItemNotes, buf: Buffer, rules: ItemRules, epoch: number): boolean {
  if (!item.withMetadata) return !rules.hasRule;
  return (
    !item.markerFound &&
    !namesTenant(item, buf, rules, epoch, SPAN_OWNERS) &&
    !namesTenant(item, buf, rules, epoch, SPAN_CONDITIONS) &&
    !namesTenant(item, buf, rules, epoch, SPAN_GENERATE_NAME)
  );
}

/** Whether a noted member holds the tenant's id followed by '-' or ':'. */
function namesTenant(item: ItemNotes, buf: Buffer, rules: ItemRules, epoch: number, span: number): boolean {
  if (!item.spanHas(span)) return false;
  const id = rules.tenantBytes;
  const to = item.spanEnd[span]!;
  for (let i = indexWithin(epoch, buf, item.spanStart[span]!, to, id); i !== -1; i = indexWithin(epoch, buf, i + 1, to, id)) {
    const next = i + id.length < to ? buf[i + id.length] : -1;
    if (next === 0x2d /* - */ || next === 0x3a /* : */) return true;
  }
  return false;
}

function tenantLabelIsOurs(item: ItemNotes, buf: Buffer, rules: ItemRules): boolean {
  const from = item.tenantLabelStart;
  const to = item.tenantLabelEnd;
  if (item.tenantLabelEscaped) return JSON.parse(buf.toString('utf8', from, to)) === rules.tenant;
  const value = rules.tenantValue;
  return to - from === value.length && startsWith(buf, from, value);
}

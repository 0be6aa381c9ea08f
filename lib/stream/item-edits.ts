// The fast path's edits of an item kept by the judgement: its name's prefix cut (or its escaped name rewritten),
// and with tenantMetadata the tenant label, owners and field sets, as byte splices. Never emits an owner not the tenant's.
import { CHAR_CLASS, C_SPACE } from './json-tokens.ts';
import { indexByTail, openingQuote, plainStringEnd, startsWith, tailNeedle } from './byte-search.ts';
import { ITEM_FAST, tenantNameJson } from './item-judgement.ts';
import { SPAN_MANAGED_FIELDS, SPAN_OWNERS, type ItemNotes } from './item-notes.ts';
import type { TenantMetadataView } from './tenant-view-spec.ts';
import type { ViewOutput } from './view-output.ts';
import { PREFIX_LENGTH, TENANT_LABEL, type TenantId } from '../convert/prefix.ts';

const KEY_FIELDS_V1 = Buffer.from('"fieldsV1"');
const OWNER_HEAD = Buffer.from('{"apiVersion":"');
const OWNER_KIND = Buffer.from('","kind":"');
/**
 * How the tenant label appears in a managedFields field set (as a key, whose value is the empty set), searched for
 * by its tail: its head `"f:kube` starts almost every key there (measured: the whole needle 2.3x slower on
 * kube-controller-manager's field sets).
 */
const MANAGED_TENANT_LABEL = Buffer.from(`"f:${TENANT_LABEL}"`);
const MANAGED_TENANT_LABEL_NEEDLE = tailNeedle(MANAGED_TENANT_LABEL, 7);

/** The edits of the item at hand, kept by one scanner and reused (no arrays per item). */
export class FastEdits {
  private readonly tenant: TenantId;
  private readonly view: TenantMetadataView | null;
  // [from, to) replaced by `with` (null: removed), in document order.
  private readonly editFrom: number[] = [];
  private readonly editTo: number[] = [];
  private readonly editWith: (Buffer | null)[] = [];
  /** The rule's verdicts on owners by apiVersion and kind (see ownersAreTenants). */
  private readonly ownerVerdicts: { version: Buffer; kind: Buffer; verdict: boolean }[] = [];

  constructor(tenant: TenantId, view: TenantMetadataView | null) {
    this.tenant = tenant;
    this.view = view;
  }

  /**
   * The edits that turn an item judged ITEM_FAST or ITEM_FAST_RENAMED (`verdict`) into the tenant's view: the
   * name, and with tenantMetadata the label, owners and field sets. False when the rule says an owner is not the
   * tenant's: then the item is dropped. `epoch`: the scan's (json-skip.ts).
   */
  collect(item: ItemNotes, buf: Buffer, verdict: number, epoch: number): boolean {
    this.editFrom.length = this.editTo.length = this.editWith.length = 0;
    if (item.nameKey !== null) {
      if (verdict === ITEM_FAST) this.addEdit(item.nameStart + 1, item.nameStart + 1 + PREFIX_LENGTH, null);
      // (Decoded a second time, after the judgement's: names with escapes are never seen from kube-apiserver.)
      else this.addEdit(item.nameStart, item.nameEnd, tenantNameJson(buf, item.nameStart, item.nameEnd, this.tenant)!);
    }
    const view = this.view;
    if (view === null) return true;
    if (item.tenantLabelCount > 0) {
      // Removed with the labels map when it was the only label, as the rule does.
      if (item.labelEntries === 1) this.addMemberRemoval(buf, item.labelsKeyStart, item.labelsEnd);
      else this.addMemberRemoval(buf, item.tenantLabelKeyStart, item.tenantLabelEnd);
    }
    // Only the verdict counts: without the tenant's id in them (the judgement's), the rule has nothing to un-prefix.
    if (item.spanHas(SPAN_OWNERS) && !this.ownersAreTenants(buf, item.spanStart[SPAN_OWNERS]!, item.spanEnd[SPAN_OWNERS]!)) return false;
    if (item.spanHas(SPAN_MANAGED_FIELDS)) {
      const [from, to] = [item.spanStart[SPAN_MANAGED_FIELDS]!, item.spanEnd[SPAN_MANAGED_FIELDS]!];
      const cuts = managedFieldsCuts(buf, epoch, from, to);
      if (cuts !== null) for (let k = 0; k < cuts.length; k += 2) this.addEdit(cuts[k]!, cuts[k + 1]!, null);
      else {
        const entries = view.managedFields(JSON.parse(buf.toString('utf8', from, to)));
        this.addEdit(from, to, Buffer.from(JSON.stringify(entries)));
      }
    }
    return true;
  }

  /** Emits `buf[from, to)`, the item, with the collected edits applied. */
  emitEdited(output: ViewOutput, buf: Buffer, from: number, to: number): void {
    let at = from;
    for (let k = 0; k < this.editFrom.length; k++) {
      output.emit(buf, at, this.editFrom[k]!);
      const replacement = this.editWith[k];
      at = this.editTo[k]!;
      if (replacement !== null && replacement !== undefined) output.emitBytes(replacement, at);
    }
    output.emit(buf, at, to);
  }

  /**
   * The rule's verdict on ownerReferences [from, to) that hold no tenant id: then it turns on each owner's apiVersion
   * and kind alone (a cluster-scoped owner's name cannot be the tenant's), so verdicts are kept per pair, compared
   * in place (no string per item). The pairs are read from the form Go writes (`[{"apiVersion":"…","kind":"…",…}]`,
   * no escapes); any other form is parsed and given to the rule whole.
   */
  private ownersAreTenants(buf: Buffer, from: number, to: number): boolean {
    const parsed = (): boolean => this.view!.ownerReferences(JSON.parse(buf.toString('utf8', from, to))) !== null;
    if (buf[from] !== 0x5b /* [ */ || buf[to - 1] !== 0x5d /* ] */) return parsed();
    const view = new DataView(buf.buffer, buf.byteOffset, to);
    let at = from + 1;
    while (at < to - 1) {
      if (!startsWith(buf, at, OWNER_HEAD)) return parsed();
      const versionStart = at + OWNER_HEAD.length;
      const versionEnd = plainStringEnd(buf, view, versionStart, to);
      if (versionEnd < 0 || !startsWith(buf, versionEnd, OWNER_KIND)) return parsed();
      const kindStart = versionEnd + OWNER_KIND.length;
      const kindEnd = plainStringEnd(buf, view, kindStart, to);
      if (kindEnd < 0) return parsed();
      // The rest of the owner: strings without escapes and literals, up to its '}'.
      let i = kindEnd + 1;
      while (i < to) {
        const c = buf[i]!;
        if (c === 0x5c /* \\ */ || c === 0x7b /* { */ || c === 0x5b /* [ */) return parsed();
        if (c === 0x22) {
          i = plainStringEnd(buf, view, i + 1, to);
          if (i < 0) return parsed();
        } else if (c === 0x7d /* } */) break;
        i++;
      }
      if (i >= to) return parsed();
      if (!this.ownerVerdict(buf, versionStart, versionEnd, kindStart, kindEnd)) return false;
      at = i + 1;
      if (buf[at] === 0x2c /* , */) at++;
      else if (at !== to - 1) return parsed();
    }
    return true;
  }

  /** The rule's verdict on one owner of this apiVersion and kind, remembered per pair. */
  private ownerVerdict(buf: Buffer, versionStart: number, versionEnd: number, kindStart: number, kindEnd: number): boolean {
    for (const known of this.ownerVerdicts) {
      if (
        known.version.length === versionEnd - versionStart &&
        known.kind.length === kindEnd - kindStart &&
        startsWith(buf, versionStart, known.version) &&
        startsWith(buf, kindStart, known.kind)
      ) {
        return known.verdict;
      }
    }
    const owner = { apiVersion: buf.toString('latin1', versionStart, versionEnd), kind: buf.toString('latin1', kindStart, kindEnd), name: 'owner' };
    const verdict = this.view!.ownerReferences([owner]) !== null;
    // A handful of owner kinds per list; past 16 (never seen) the oldest is forgotten.
    if (this.ownerVerdicts.length === 16) this.ownerVerdicts.shift();
    this.ownerVerdicts.push({ version: Buffer.from(owner.apiVersion, 'latin1'), kind: Buffer.from(owner.kind, 'latin1'), verdict });
    return verdict;
  }

  /** Adds an edit, keeping the list in document order (members come in any order; there are a handful). */
  private addEdit(from: number, to: number, replacement: Buffer | null): void {
    const froms = this.editFrom;
    let k = froms.length;
    froms.push(from);
    this.editTo.push(to);
    this.editWith.push(replacement);
    for (; k > 0 && froms[k - 1]! > from; k--) {
      froms[k] = froms[k - 1]!;
      this.editTo[k] = this.editTo[k - 1]!;
      this.editWith[k] = this.editWith[k - 1]!;
      froms[k - 1] = from;
      this.editTo[k - 1] = to;
      this.editWith[k - 1] = replacement;
    }
  }

  /** Removes an object member [keyStart, valueEnd) with the comma after it, or else the one before it. */
  private addMemberRemoval(buf: Buffer, keyStart: number, valueEnd: number): void {
    let after = valueEnd;
    while (CHAR_CLASS[buf[after]!] === C_SPACE) after++;
    if (buf[after] === 0x2c /* , */) return this.addEdit(keyStart, after + 1, null);
    let before = keyStart - 1;
    while (CHAR_CLASS[buf[before]!] === C_SPACE) before--;
    this.addEdit(buf[before] === 0x2c ? before : keyStart, valueEnd, null);
  }
}

/**
 * Cuts (flat [from, to) pairs, in order) removing every `"f:kubezoo.io/tenant":{}` from managedFields, with the
 * field sets that held nothing else (fieldsV1 itself stays), as the rule does; null when the bytes are not the
 * plain compact shape kube-apiserver writes, or two cuts would share a comma: then the rule does it.
 */
function managedFieldsCuts(buf: Buffer, epoch: number, floor: number, end: number): number[] | null {
  const cuts: number[] = [];
  for (
    let at = indexByTail(epoch, buf, floor, end, MANAGED_TENANT_LABEL_NEEDLE);
    at !== -1;
    at = indexByTail(epoch, buf, at + 1, end, MANAGED_TENANT_LABEL_NEEDLE)
  ) {
    let from = at;
    let to = from + MANAGED_TENANT_LABEL.length;
    if (buf[to] !== 0x3a /* : */ || buf[to + 1] !== 0x7b /* { */ || buf[to + 2] !== 0x7d /* } */) return null;
    to += 3;
    for (;;) {
      const before = buf[from - 1];
      const after = buf[to];
      if (before === 0x2c /* , */) {
        cuts.push(from - 1, to);
        break;
      }
      if (before !== 0x7b /* { */) return null;
      if (after === 0x2c) {
        cuts.push(from, to + 1);
        break;
      }
      if (after !== 0x7d /* } */) return null;
      // The field set around it holds nothing else: it goes too, unless it is fieldsV1 itself.
      const keyClose = from - 3;
      if (buf[from - 2] !== 0x3a /* : */ || buf[keyClose] !== 0x22) return null;
      const keyStart = openingQuote(buf, keyClose, floor);
      if (keyStart < 0) return null;
      if (keyClose + 1 - keyStart === KEY_FIELDS_V1.length && buf.compare(KEY_FIELDS_V1, 0, KEY_FIELDS_V1.length, keyStart, keyClose + 1) === 0) {
        cuts.push(from, to);
        break;
      }
      from = keyStart;
      to++;
    }
  }
  for (let k = 2; k < cuts.length; k += 2) if (cuts[k]! < cuts[k - 1]!) return null;
  return cuts;
}

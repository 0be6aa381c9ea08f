// What becomes of an item or watch event once whole: judged, then sent as the tenant's view (edited on the fast path,
// or as the rule rewrote it) with the comma or newline that frames it, or dropped whole. Never sends part of an item.
import { ITEM_CAREFUL, ITEM_NOT_TENANTS, ITEM_UNCHECKED, itemRulesOf, judgeItem, type ItemRules } from './item-judgement.ts';
import { FastEdits } from './item-edits.ts';
import { NAME_MISSING, type ItemNotes } from './item-notes.ts';
import { TenantViewError, type ItemsOnly, type TenantViewSpec } from './tenant-view-spec.ts';
import type { ViewOutput } from './view-output.ts';

const TYPE_BOOKMARK = Buffer.from('BOOKMARK');
const TYPE_ERROR = Buffer.from('ERROR');
const COMMA = Buffer.from(',');
const NEWLINE = Buffer.from('\n');

/** One scanner's items and events, from their notes to its output; counts what it kept. */
export class ItemFraming {
  /** The items emitted so far (of the list; a single object counts as one). */
  keptItems = 0;
  /** The watch events emitted so far (bookmarks and errors included). */
  keptEvents = 0;
  /** A single object left out because its name field could not be checked (TenantViewScanner.objectUnchecked). */
  uncheckedObject = false;
  private readonly single: boolean;
  private readonly rules: ItemRules;
  private readonly item: ItemNotes;
  private readonly edits: FastEdits;
  private readonly output: ViewOutput;
  private readonly rewriteItem: ((item: any) => any) | undefined;
  private readonly rewriteStatus: ((status: any) => any) | undefined;
  /** Items only: how many items were sent before this list's (ItemsOnly). */
  private readonly itemsBefore: number;

  constructor(spec: TenantViewSpec, single: boolean, item: ItemNotes, output: ViewOutput, itemsOnly: ItemsOnly | undefined) {
    this.single = single;
    this.rules = itemRulesOf(spec);
    this.item = item;
    this.edits = new FastEdits(spec.tenant, spec.tenantMetadata ?? null);
    this.output = output;
    this.rewriteItem = spec.rewriteItem;
    this.rewriteStatus = spec.rewriteStatus;
    this.itemsBefore = itemsOnly?.itemsBefore ?? 0;
  }

  /** The list item (or single object) `buf[start, end)`, whole. `epoch`: the scan's (json-skip.ts). */
  listItem(buf: Buffer, epoch: number, start: number, end: number): void {
    const verdict = judgeItem(this.item, buf, this.rules, epoch);
    if (verdict === ITEM_UNCHECKED || verdict === ITEM_NOT_TENANTS) {
      if (verdict === ITEM_UNCHECKED && this.single) this.uncheckedObject = true;
      return;
    }
    const output = this.output;
    if (verdict !== ITEM_CAREFUL) {
      if (!this.edits.collect(this.item, buf, verdict, epoch)) return;
      if (this.keptItems + this.itemsBefore > 0) output.emitBytes(COMMA, start);
      this.edits.emitEdited(output, buf, start, end);
    } else {
      const item = this.rewritten(buf, start, end);
      if (item === null) return;
      if (this.keptItems + this.itemsBefore > 0) output.emitBytes(COMMA, end);
      output.emitBytes(item, end);
    }
    this.keptItems++;
  }

  /** The watch event `buf[start, end)`, whole. `base`: the offset of buf[0] in the stream, for errors. */
  watchEvent(buf: Buffer, epoch: number, base: number, start: number, end: number): void {
    const { item, output } = this;
    if (item.typeStart < 0) throw new TenantViewError('a watch event has no string "type"', base + start);
    if (item.objectStart < 0) throw new TenantViewError('a watch event has no "object"', base + start);
    const type = this.eventType(buf);
    if (type === TYPE_BOOKMARK && item.nameState === NAME_MISSING) {
      // A bookmark carries only a resourceVersion (and annotations): nothing of any tenant's. One that names
      // something (never seen from kube-apiserver) gets the check below like any event.
      output.emit(buf, start, end);
    } else if (type === TYPE_ERROR) {
      // An ERROR event's object is a Status, not a stored object.
      if (this.rewriteStatus === undefined) output.emit(buf, start, end);
      else {
        const status = JSON.stringify(this.rewriteStatus(JSON.parse(buf.toString('utf8', item.objectStart, item.objectEnd)))) as string | undefined;
        if (status === undefined) throw new TypeError('rewriteStatus returned undefined');
        output.emit(buf, start, item.objectStart);
        output.emitBytes(Buffer.from(status), item.objectEnd);
        output.emit(buf, item.objectEnd, end);
      }
    } else {
      const verdict = judgeItem(item, buf, this.rules, epoch);
      if (verdict === ITEM_UNCHECKED || verdict === ITEM_NOT_TENANTS) return;
      if (verdict !== ITEM_CAREFUL) {
        if (!this.edits.collect(item, buf, verdict, epoch)) return;
        this.edits.emitEdited(output, buf, start, end);
      } else {
        const object = this.rewritten(buf, item.objectStart, item.objectEnd);
        if (object === null) return;
        output.emit(buf, start, item.objectStart);
        output.emitBytes(object, item.objectEnd);
        output.emit(buf, item.objectEnd, end);
      }
    }
    output.emitBytes(NEWLINE, end);
    this.keptEvents++;
  }

  /** The rule's rewrite of `buf[from, to)`, or null to drop it. */
  private rewritten(buf: Buffer, from: number, to: number): Buffer | null {
    const result: unknown = this.rewriteItem!(JSON.parse(buf.toString('utf8', from, to)));
    if (result === null) return null;
    const json = JSON.stringify(result) as string | undefined;
    if (json === undefined) throw new TypeError('rewriteItem returned undefined (null drops an item)');
    return Buffer.from(json);
  }

  /** TYPE_BOOKMARK, TYPE_ERROR, or null for any other type (ADDED, MODIFIED, DELETED: the tenant check applies). */
  private eventType(buf: Buffer): Buffer | null {
    const item = this.item;
    let from = item.typeStart + 1;
    let to = item.typeEnd - 1;
    let text: Buffer = buf;
    if (item.typeEscaped) {
      text = Buffer.from(JSON.parse(buf.toString('utf8', item.typeStart, item.typeEnd)) as string);
      from = 0;
      to = text.length;
    }
    if (to - from === TYPE_BOOKMARK.length && text.compare(TYPE_BOOKMARK, 0, TYPE_BOOKMARK.length, from, to) === 0) return TYPE_BOOKMARK;
    if (to - from === TYPE_ERROR.length && text.compare(TYPE_ERROR, 0, TYPE_ERROR.length, from, to) === 0) return TYPE_ERROR;
    return null;
  }
}

// What the scanner notes of the item (or watch event) at hand: where its name field, labels and the members the
// fast path edits or searches stand, as offsets in the scanned bytes. Notes only: never judges or emits an item.
import { FOUND, ITEM_KEY, itemWalkKeys, walked, walkedAt } from './json-skip.ts';
import { indexByTail, startsWith, tailNeedle, type TailNeedle } from './byte-search.ts';
import type { TenantViewSpec } from './tenant-view-spec.ts';
import { TENANT_LABEL } from '../convert/prefix.ts';

// The role of a container, i.e. what its keys or elements mean to the rewriter. Almost every container is
// ROLE_OTHER, whose contents are scanned and copied without a look at any key: that is the fast path.
export const ROLE_OTHER = 0;
export const ROLE_LIST_TOP = 1; // depth 0 of a list response
export const ROLE_WATCH_TOP = 2; // depth 0 of a watch stream: a sequence of events
export const ROLE_LIST = 3; // the list object: looks for "items"
export const ROLE_ITEMS = 4; // the items array: each element is an item
export const ROLE_ITEM = 5; // an item, or a watch event's object: looks for "metadata"
export const ROLE_ITEM_METADATA = 6; // an item's own metadata: looks for the name field
export const ROLE_EVENT = 7; // a watch event: looks for "type" and "object"
export const ROLE_NON_OBJECT_ITEM = 8; // an array inside items: dropped when it ends
export const ROLE_LABELS = 9; // an item's metadata.labels: looks for the tenant label
export const ROLE_SPAN = 10; // a member whose bytes the fast path looks at once it is whole: only its end is noted
export const ROLE_SPEC = 11; // an item's spec: looks for the members the kind's markers are searched in
export const ROLE_MARKED = 12; // such a member: searched for the markers when it ends
export const ROLE_STATUS = 13; // an item's status: looks for "conditions"
export const ROLE_OBJECT_TOP = 14; // depth 0 of a single-object response: its one value is the item

// What the next value is, when it matters.
export const SLOT_NONE = 0;
export const SLOT_LIST = 1;
export const SLOT_EVENT = 2;
export const SLOT_ITEM = 3;
export const SLOT_ITEMS = 4;
export const SLOT_ITEM_METADATA = 5;
export const SLOT_NAME = 6;
export const SLOT_EVENT_TYPE = 7;
export const SLOT_EVENT_OBJECT = 8;
export const SLOT_LABELS = 9;
export const SLOT_TENANT_LABEL = 10;
export const SLOT_MANAGED_FIELDS = 11;
export const SLOT_OWNER_REFERENCES = 12;
export const SLOT_SPEC = 13;
export const SLOT_STATUS = 14;
export const SLOT_MARKED = 15;
export const SLOT_CONDITIONS = 16;
export const SLOT_GENERATE_NAME = 17;
export const SLOT_OBJECT = 18;

// The members whose extent the fast path notes (index into the span arrays).
export const SPAN_MANAGED_FIELDS = 0;
export const SPAN_OWNERS = 1;
export const SPAN_CONDITIONS = 2;
export const SPAN_MARKED = 3;
export const SPAN_GENERATE_NAME = 4;
export const SPAN_COUNT = 5;

// What was found at the name field of the current item.
export const NAME_MISSING = 0;
export const NAME_STRING = 1;
export const NAME_NOT_STRING = 2;

export const KEY_ITEMS = Buffer.from('items');
export const KEY_TYPE = Buffer.from('type');
export const KEY_OBJECT = Buffer.from('object');
const KEY_NAME = Buffer.from('name');
const KEY_METADATA = Buffer.from('metadata');
const KEY_LABELS = Buffer.from('labels');
const KEY_MANAGED_FIELDS = Buffer.from('managedFields');
const KEY_OWNER_REFERENCES = Buffer.from('ownerReferences');
const KEY_SPEC = Buffer.from('spec');
const KEY_STATUS = Buffer.from('status');
const KEY_CONDITIONS = Buffer.from('conditions');
const KEY_GENERATE_NAME = Buffer.from('generateName');
const KEY_TENANT_LABEL = Buffer.from(TENANT_LABEL);

/** walkItem()'s key tables by shape of scanner (name field, metadata or not, marked spec members): a handful. */
const ITEM_WALK_KEYS = new Map<string, Uint8Array | null>();

/** Whether the key whose quotes are at `start` and `close` is `key`. */
export function keyIs(buf: Buffer, start: number, close: number, escaped: boolean, key: Buffer): boolean {
  if (escaped) return JSON.parse(buf.toString('utf8', start, close + 1)) === key.toString();
  return close - start - 1 === key.length && startsWith(buf, start + 1, key);
}

/**
 * What ItemNotes.onKey() looks for, for walkItem(): the same keys in the same places. One table per shape of
 * scanner, shared: made and copied into the module once, not per scanner (a single object's scanner lives for one object).
 */
export function itemWalkKeysFor(nameKey: Buffer | null, withMetadata: boolean, markedKeys: readonly Buffer[]): Uint8Array | null {
  const shape = `${nameKey?.toString() ?? ''}|${withMetadata}|${markedKeys.join('|')}`;
  let keys = ITEM_WALK_KEYS.get(shape);
  if (keys === undefined) ITEM_WALK_KEYS.set(shape, (keys = newItemWalkKeys(nameKey, withMetadata, markedKeys)));
  return keys;
}

function newItemWalkKeys(nameKey: Buffer | null, withMetadata: boolean, markedKeys: readonly Buffer[]): Uint8Array | null {
  return itemWalkKeys({
    item: [
      ...(nameKey !== null ? [[KEY_METADATA, ITEM_KEY.metadata] as const] : []),
      ...(withMetadata ? [[KEY_SPEC, ITEM_KEY.spec] as const, [KEY_STATUS, ITEM_KEY.status] as const] : []),
    ],
    metadata: [
      ...(nameKey !== null ? [[nameKey, ITEM_KEY.nameField] as const] : []),
      ...(withMetadata
        ? [
            [KEY_LABELS, ITEM_KEY.labels] as const,
            [KEY_MANAGED_FIELDS, ITEM_KEY.managedFields] as const,
            [KEY_OWNER_REFERENCES, ITEM_KEY.ownerReferences] as const,
            ...(nameKey === KEY_NAME ? [[KEY_GENERATE_NAME, ITEM_KEY.generateName] as const] : []),
          ]
        : []),
    ],
    labels: withMetadata ? [[KEY_TENANT_LABEL, ITEM_KEY.tenantLabel] as const] : [],
    spec: markedKeys.map((key, k) => [key, ITEM_KEY.marked + k] as const),
    status: withMetadata ? [[KEY_CONDITIONS, ITEM_KEY.conditions] as const] : [],
  });
}

/**
 * The notes on the current item or watch event, kept by one scanner and reset at each (no object per item). The
 * scanner passes on the keys, values and containers inside an item's roles; walkItem()'s findings come in whole.
 * Offsets are in the scanner's bytes, moved down with them (shift).
 */
export class ItemNotes {
  /** The key of the name field proving an item the tenant's (`namespace` or `name`), or null: the rule decides. */
  readonly nameKey: Buffer | null;
  /** Whether the fast path edits the item's metadata (TenantViewSpec.tenantMetadata): then more members are noted. */
  readonly withMetadata: boolean;
  private readonly markedKeys: readonly Buffer[];
  private readonly markers: readonly (readonly TailNeedle[])[];

  isObject = false;
  /** A member the judgement turns on appears twice: JSON parsers disagree on which counts, so nothing is kept. */
  ambiguous = false;
  private metadataCount = 0;
  private nameCount = 0;
  nameState = NAME_MISSING;
  /** The name field's value, quotes included. */
  nameStart = -1;
  nameEnd = -1;
  nameEscaped = false;
  // A watch event's type and object.
  typeCount = 0;
  typeStart = -1;
  typeEnd = -1;
  typeEscaped = false;
  objectCount = 0;
  objectStart = -1;
  objectEnd = -1;
  // The metadata members the fast path edits (withMetadata only).
  private labelsCount = 0;
  labelsKeyStart = -1;
  labelsEnd = -1;
  labelEntries = 0;
  tenantLabelCount = 0;
  tenantLabelKeyStart = -1;
  tenantLabelStart = -1;
  tenantLabelEnd = -1;
  tenantLabelIsString = false;
  tenantLabelEscaped = false;
  private managedFieldsCount = 0;
  private ownersCount = 0;
  private specCount = 0;
  private statusCount = 0;
  private conditionsCount = 0;
  private generateNameCount = 0;
  // Where each noted member's value starts and ends; bit (1 << SPAN_x) of spansSeen once it has ended.
  readonly spanStart = new Int32Array(SPAN_COUNT);
  readonly spanEnd = new Int32Array(SPAN_COUNT);
  spansSeen = 0;
  private openSpan = 0; // the SPAN_x of the ROLE_SPAN container open now (they never nest)
  private markedMember = -1; // which of the kind's marked spec members is open now
  /** A marker of the kind stands in its marked spec members: the rule must see the item. */
  markerFound = false;

  constructor(nameKey: Buffer | null, withMetadata: boolean, markedKeys: readonly Buffer[], markers: readonly (readonly TailNeedle[])[]) {
    this.nameKey = nameKey;
    this.withMetadata = withMetadata;
    this.markedKeys = markedKeys;
    this.markers = markers;
  }

  /** The notes a scanner of `spec` keeps: which name field, and which members the fast path edits or searches. */
  static forSpec(spec: TenantViewSpec): ItemNotes {
    const nameKey = spec.nameField === null ? null : spec.nameField === 'name' ? KEY_NAME : Buffer.from(spec.nameField);
    const marked = Object.entries(spec.tenantMetadata?.slowPathMarkers ?? {});
    return new ItemNotes(
      nameKey,
      (spec.tenantMetadata ?? null) !== null,
      marked.map(([key]) => Buffer.from(key)),
      // Markers start with a quote and a letter: searched from their third byte.
      marked.map(([, markers]) => markers.map((marker) => tailNeedle(Buffer.from(marker), marker.length > 4 ? 2 : 0))),
    );
  }

  /** The keys walkItem() looks for in these items, or null: then the scanner walks them itself. */
  walkKeys(): Uint8Array | null {
    return itemWalkKeysFor(this.nameKey, this.withMetadata, this.markedKeys);
  }

  /** Forgets the last item: a new one (an object, or a value of another type) starts. */
  start(isObject: boolean): void {
    this.isObject = isObject;
    this.ambiguous = false;
    this.metadataCount = 0;
    this.nameCount = 0;
    this.nameState = NAME_MISSING;
    this.nameStart = this.nameEnd = -1;
    this.nameEscaped = false;
    this.typeCount = 0;
    this.typeStart = this.typeEnd = -1;
    this.typeEscaped = false;
    this.objectCount = 0;
    this.objectStart = this.objectEnd = -1;
    if (this.withMetadata) {
      this.labelsCount = this.labelEntries = this.tenantLabelCount = this.managedFieldsCount = this.ownersCount = 0;
      this.specCount = this.statusCount = this.conditionsCount = this.generateNameCount = this.spansSeen = 0;
      this.markerFound = false;
      this.tenantLabelIsString = false;
    }
  }

  /** A key inside one of the item's roles; returns the slot of its value (SLOT_NONE: not one noted). */
  onKey(role: number, buf: Buffer, start: number, close: number, escaped: boolean): number {
    switch (role) {
      case ROLE_ITEM:
        if (this.nameKey !== null && keyIs(buf, start, close, escaped, KEY_METADATA)) {
          if (++this.metadataCount > 1) this.ambiguous = true;
          return SLOT_ITEM_METADATA;
        }
        if (this.withMetadata) {
          if (keyIs(buf, start, close, escaped, KEY_SPEC)) {
            if (++this.specCount > 1) this.ambiguous = true;
            return SLOT_SPEC;
          }
          if (keyIs(buf, start, close, escaped, KEY_STATUS)) {
            if (++this.statusCount > 1) this.ambiguous = true;
            return SLOT_STATUS;
          }
        }
        return SLOT_NONE;
      case ROLE_ITEM_METADATA:
        if (keyIs(buf, start, close, escaped, this.nameKey!)) {
          if (++this.nameCount > 1) this.ambiguous = true;
          return SLOT_NAME;
        }
        if (this.withMetadata) {
          if (keyIs(buf, start, close, escaped, KEY_LABELS)) {
            if (++this.labelsCount > 1) this.ambiguous = true;
            this.labelsKeyStart = start;
            return SLOT_LABELS;
          }
          if (keyIs(buf, start, close, escaped, KEY_MANAGED_FIELDS)) {
            if (++this.managedFieldsCount > 1) this.ambiguous = true;
            return SLOT_MANAGED_FIELDS;
          }
          if (keyIs(buf, start, close, escaped, KEY_OWNER_REFERENCES)) {
            if (++this.ownersCount > 1) this.ambiguous = true;
            return SLOT_OWNER_REFERENCES;
          }
          if (this.nameKey === KEY_NAME && keyIs(buf, start, close, escaped, KEY_GENERATE_NAME)) {
            // The rule prefixes a cluster-scoped object's generateName (a namespaced one's stays as it is).
            if (++this.generateNameCount > 1) this.ambiguous = true;
            return SLOT_GENERATE_NAME;
          }
        }
        return SLOT_NONE;
      case ROLE_SPEC: {
        let slot = SLOT_NONE;
        for (let k = 0; k < this.markedKeys.length; k++) {
          if (keyIs(buf, start, close, escaped, this.markedKeys[k]!)) {
            this.markedMember = k;
            slot = SLOT_MARKED;
          }
        }
        return slot;
      }
      case ROLE_STATUS:
        if (keyIs(buf, start, close, escaped, KEY_CONDITIONS)) {
          if (++this.conditionsCount > 1) this.ambiguous = true;
          return SLOT_CONDITIONS;
        }
        return SLOT_NONE;
      case ROLE_LABELS:
        this.labelEntries++;
        if (keyIs(buf, start, close, escaped, KEY_TENANT_LABEL)) {
          if (++this.tenantLabelCount > 1) this.ambiguous = true;
          this.tenantLabelKeyStart = start;
          this.tenantLabelIsString = false;
          return SLOT_TENANT_LABEL;
        }
        return SLOT_NONE;
      default:
        return SLOT_NONE;
    }
  }

  /** A container opens as the value of one of the item's slots; returns its role. */
  onOpen(slot: number, isArray: boolean, at: number): number {
    switch (slot) {
      case SLOT_ITEM_METADATA:
        return isArray ? ROLE_OTHER : ROLE_ITEM_METADATA;
      case SLOT_NAME:
        this.nameState = NAME_NOT_STRING;
        return ROLE_OTHER;
      case SLOT_EVENT_TYPE:
        return ROLE_OTHER; // typeStart stays -1: rejected when the event ends
      case SLOT_LABELS:
        return isArray ? ROLE_OTHER : ROLE_LABELS;
      case SLOT_MANAGED_FIELDS:
        return isArray ? this.openSpanOf(SPAN_MANAGED_FIELDS, at) : ROLE_OTHER;
      case SLOT_OWNER_REFERENCES:
        return isArray ? this.openSpanOf(SPAN_OWNERS, at) : ROLE_OTHER;
      case SLOT_SPEC:
        return isArray || this.markedKeys.length === 0 ? ROLE_OTHER : ROLE_SPEC;
      case SLOT_MARKED:
        this.spanStart[SPAN_MARKED] = at;
        return ROLE_MARKED;
      case SLOT_STATUS:
        return isArray ? ROLE_OTHER : ROLE_STATUS;
      case SLOT_CONDITIONS:
        return this.openSpanOf(SPAN_CONDITIONS, at);
      case SLOT_GENERATE_NAME:
        return this.openSpanOf(SPAN_GENERATE_NAME, at);
      default:
        return ROLE_OTHER;
    }
  }

  private openSpanOf(span: number, at: number): number {
    this.spanStart[span] = at;
    this.openSpan = span;
    return ROLE_SPAN;
  }

  /** A scalar value [start, end) of one of the item's slots. */
  onScalar(slot: number, start: number, end: number, isString: boolean, escaped: boolean): void {
    switch (slot) {
      case SLOT_NAME:
        if (isString) {
          this.nameState = NAME_STRING;
          this.nameStart = start;
          this.nameEnd = end;
          this.nameEscaped = escaped;
        } else {
          this.nameState = NAME_NOT_STRING;
        }
        return;
      case SLOT_EVENT_TYPE:
        if (isString) {
          this.typeStart = start;
          this.typeEnd = end;
          this.typeEscaped = escaped;
        }
        return;
      case SLOT_GENERATE_NAME:
        this.spanStart[SPAN_GENERATE_NAME] = start;
        this.spanEnd[SPAN_GENERATE_NAME] = end;
        this.spansSeen |= 1 << SPAN_GENERATE_NAME;
        return;
      case SLOT_TENANT_LABEL:
        this.tenantLabelIsString = isString;
        this.tenantLabelStart = start;
        this.tenantLabelEnd = end;
        this.tenantLabelEscaped = escaped;
        return;
    }
  }

  /** A container of one of the item's roles closes at `end`. `epoch`: the scan's (json-skip.ts). */
  onClose(closed: number, buf: Buffer, epoch: number, end: number): void {
    switch (closed) {
      case ROLE_LABELS:
        this.labelsEnd = end;
        return;
      case ROLE_MARKED:
        this.searchMarkers(buf, epoch, this.markedMember, this.spanStart[SPAN_MARKED]!, end);
        return;
      case ROLE_SPAN:
        this.spanEnd[this.openSpan] = end;
        this.spansSeen |= 1 << this.openSpan;
        return;
    }
  }

  /** Takes what walkItem() noted of the item, as onKey(), onScalar() and onClose() would have while scanning it. */
  takeWalked(buf: Buffer, epoch: number): void {
    if (walked(FOUND.ambiguous) !== 0) this.ambiguous = true;
    this.nameState = walked(FOUND.nameState);
    if (this.nameState === NAME_STRING) {
      this.nameStart = walkedAt(FOUND.nameStart);
      this.nameEnd = walkedAt(FOUND.nameEnd);
      this.nameEscaped = walked(FOUND.nameEscaped) !== 0;
    }
    if (!this.withMetadata) return;
    this.tenantLabelCount = walked(FOUND.tenantLabelCount);
    if (this.tenantLabelCount > 0) {
      this.labelsKeyStart = walkedAt(FOUND.labelsKeyStart);
      this.labelsEnd = walkedAt(FOUND.labelsEnd);
      this.labelEntries = walked(FOUND.labelEntries);
      this.tenantLabelKeyStart = walkedAt(FOUND.tenantLabelKeyStart);
      this.tenantLabelIsString = walked(FOUND.tenantLabelIsString) !== 0;
      this.tenantLabelStart = walkedAt(FOUND.tenantLabelStart);
      this.tenantLabelEnd = walkedAt(FOUND.tenantLabelEnd);
      this.tenantLabelEscaped = walked(FOUND.tenantLabelEscaped) !== 0;
    }
    const spans = (this.spansSeen = walked(FOUND.spansSeen));
    for (let span = 0; span < SPAN_COUNT; span++) {
      if ((spans & (1 << span)) === 0) continue;
      this.spanStart[span] = walkedAt(FOUND.spanStart + span);
      this.spanEnd[span] = walkedAt(FOUND.spanEnd + span);
    }
    const marked = walked(FOUND.markedCount);
    for (let m = 0; m < marked && !this.markerFound; m++) {
      this.searchMarkers(buf, epoch, walked(FOUND.marked + 3 * m), walkedAt(FOUND.marked + 3 * m + 1), walkedAt(FOUND.marked + 3 * m + 2));
    }
  }

  /** Notes whether a marker of the kind's marked spec member `member` stands in `buf[from, to)`, its value. */
  private searchMarkers(buf: Buffer, epoch: number, member: number, from: number, to: number): void {
    for (const marker of this.markers[member]!) if (indexByTail(epoch, buf, from, to, marker) !== -1) this.markerFound = true;
  }

  spanHas(span: number): boolean {
    return (this.spansSeen & (1 << span)) !== 0;
  }

  /** The scanned bytes moved down by `by` (the scanner kept the item's start and dropped what came before). */
  shift(by: number): void {
    this.nameStart -= by;
    this.nameEnd -= by;
    this.typeStart -= by;
    this.typeEnd -= by;
    this.objectStart -= by;
    this.objectEnd -= by;
    this.labelsKeyStart -= by;
    this.labelsEnd -= by;
    this.tenantLabelKeyStart -= by;
    this.tenantLabelStart -= by;
    this.tenantLabelEnd -= by;
    for (let k = 0; k < SPAN_COUNT; k++) {
      this.spanStart[k]! -= by;
      this.spanEnd[k]! -= by;
    }
  }
}

// Rewrites upstream list and watch JSON, and single objects, into a tenant's view byte by byte, holding one item at most.
// Never emits an object outside the tenant's prefix, nor any byte of an item before the whole item has been checked.
import { performance } from 'node:perf_hooks';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import {
  FOUND,
  ITEM_CUT,
  ITEM_KEY,
  JSON_HEX_DIGITS,
  JSON_NUMBER_START,
  JSON_SIMPLE_ESCAPES,
  JSON_SPACE,
  containerEnd,
  indexWithin,
  itemWalkKeys,
  newSkipEpoch,
  walkItem,
  walked,
  walkedAt,
} from './json-skip.ts';
import { PREFIX_LENGTH, TENANT_LABEL, isTenantId, tenantPrefix, toTenantName, type TenantId } from '../convert/prefix.ts';

/**
 * What a tenant may see of a list or watch, and how its objects change on the way out.
 *
 * - `nameField: 'namespace'` (namespaced kinds): an item is kept only when its own top-level
 *   `metadata.namespace` is a string `<id>-<ns>` with a non-empty `<ns>`; the fast path then emits the item's
 *   bytes with just those 7 prefix bytes removed.
 * - `nameField: 'name'` (cluster-scoped tenant kinds, Namespaces): the same with `metadata.name`.
 * - `nameField: null`: no built-in check; only allowed with `rewriteItem`, which then decides alone (CRDs, whose
 *   names carry the prefix inside the group).
 * - `rewriteItem` (slow path, for kinds whose rules reach deep into the body): each item or watch object that
 *   passed the `nameField` check is JSON.parse'd, given to it as the upstream object, and its result
 *   JSON.stringify'd in its place; it returns `null` to drop the object. It must strip the prefix itself.
 * - `rewriteStatus`: applied to the `Status` object of watch `ERROR` events (default: unchanged bytes).
 * - `tenantMetadata` (with `rewriteItem`): the fast path for kinds whose rule touches only the object's own metadata.
 *   An item keeps its bytes but for the name prefix, the tenant label (an item labelled for another tenant is
 *   dropped), the tenant label's fields in managedFields, and ownerReferences; an item holding the tenant id
 *   followed by `-` or `:` anywhere but its name field, or any of the kind's markers, goes to `rewriteItem`.
 */
export interface TenantViewSpec {
  tenant: TenantId;
  nameField: 'namespace' | 'name' | null;
  rewriteItem?: ((item: any) => any) | undefined;
  rewriteStatus?: ((status: any) => any) | undefined;
  tenantMetadata?: TenantMetadataView | undefined;
  /** Largest unfinished item (or watch event, or list head before `items`) held from one chunk to the next. Default 16 MiB. */
  maxItemBytes?: number | undefined;
  /**
   * The group of the list's own apiVersion, upstream and as the tenant sees it, when they differ (kinds stored under
   * another group upstream): typed clients decode a list by it. Items are the rule's to map (`rewriteItem`).
   */
  listApiGroup?: { readonly upstream: string; readonly tenant: string } | undefined;
}

/**
 * One list of several merged into one (per-namespace lists): only the items are emitted, after `itemsBefore` items
 * already sent (so a comma leads the first); the list around them is kept for `envelope()`.
 */
export interface ItemsOnly {
  itemsBefore: number;
}

/** What the fast path asks of the kind's rule, for the parts of an item's metadata it does not edit in place. */
export interface TenantMetadataView {
  /** The tenant's view of `metadata.ownerReferences` (parsed), or null when an owner is not the tenant's. */
  ownerReferences(owners: unknown[]): unknown[] | null;
  /** The tenant's view of `metadata.managedFields` (parsed), for field sets the byte edit does not recognise. */
  managedFields(entries: unknown[]): unknown[];
  /**
   * By member of `spec`: byte strings that send an item holding any of them there to the slow path (fields deep in
   * the body the rule rewrites). Sound because kube-apiserver's encoder never escapes the characters of a key.
   */
  slowPathMarkers: { readonly [specMember: string]: readonly string[] };
}

/** The upstream response cannot be rewritten safely: malformed JSON, truncated, not a list, an odd watch event. */
export class TenantViewError extends Error {
  /** Byte offset in the upstream response where the problem was found. */
  readonly offset: number;

  constructor(message: string, offset: number) {
    super(`${message} (at byte ${offset} of the upstream response)`);
    this.name = 'TenantViewError';
    this.offset = offset;
  }
}

// Far above any object etcd accepts (1.5 MiB by default), far below what would hurt the process.
const DEFAULT_MAX_ITEM_BYTES = 16 * 1024 * 1024;

// Classes of the bytes outside strings that are neither structural nor quotes (the scan loop tests those directly).
const C_INVALID = 0;
const C_SPACE = 1;
const C_NUMBER = 2;
const C_LITERAL = 3;

const CHAR_CLASS = new Uint8Array(256).fill(C_INVALID);
for (const c of JSON_SPACE) CHAR_CLASS[c.charCodeAt(0)] = C_SPACE;
for (const c of JSON_NUMBER_START) CHAR_CLASS[c.charCodeAt(0)] = C_NUMBER;
for (const c of 'tfn') CHAR_CLASS[c.charCodeAt(0)] = C_LITERAL;

// Bytes that stop the scan inside a string: the closing quote, a backslash, or a control byte JSON forbids there.
const STRING_STOP = new Uint8Array(256);
for (let c = 0; c < 0x20; c++) STRING_STOP[c] = 1;
STRING_STOP[0x22] = 1;
STRING_STOP[0x5c] = 1;

const HEX = new Uint8Array(256);
for (const c of JSON_HEX_DIGITS) HEX[c.charCodeAt(0)] = 1;
const SIMPLE_ESCAPE = new Uint8Array(256);
for (const c of JSON_SIMPLE_ESCAPES) SIMPLE_ESCAPE[c.charCodeAt(0)] = 1;

// What the scanner expects next: a set of these bits, so each check is one test.
const ALLOW_VALUE = 1;
const ALLOW_KEY = 2;
const ALLOW_COLON = 4;
const ALLOW_COMMA = 8;
const ALLOW_CLOSE_ARRAY = 16;
const ALLOW_CLOSE_OBJECT = 32;
const EXPECT_VALUE = ALLOW_VALUE;
const EXPECT_VALUE_OR_CLOSE = ALLOW_VALUE | ALLOW_CLOSE_ARRAY; // after '['
const EXPECT_KEY_OR_CLOSE = ALLOW_KEY | ALLOW_CLOSE_OBJECT; // after '{'
const EXPECT_KEY = ALLOW_KEY; // after ',' in an object
const EXPECT_COLON = ALLOW_COLON;
const EXPECT_COMMA_OR_CLOSE = ALLOW_COMMA | ALLOW_CLOSE_ARRAY | ALLOW_CLOSE_OBJECT; // the stack says which bracket
const EXPECT_END = 0; // after a list's top-level object: only whitespace

// The role of a container, i.e. what its keys or elements mean to the rewriter. Almost every container is
// ROLE_OTHER, whose contents are scanned and copied without a look at any key: that is the fast path.
const ROLE_OTHER = 0;
const ROLE_LIST_TOP = 1; // depth 0 of a list response
const ROLE_WATCH_TOP = 2; // depth 0 of a watch stream: a sequence of events
const ROLE_LIST = 3; // the list object: looks for "items"
const ROLE_ITEMS = 4; // the items array: each element is an item
const ROLE_ITEM = 5; // an item, or a watch event's object: looks for "metadata"
const ROLE_ITEM_METADATA = 6; // an item's own metadata: looks for the name field
const ROLE_EVENT = 7; // a watch event: looks for "type" and "object"
const ROLE_NON_OBJECT_ITEM = 8; // an array inside items: dropped when it ends
const ROLE_LABELS = 9; // an item's metadata.labels: looks for the tenant label
const ROLE_SPAN = 10; // a member whose bytes the fast path looks at once it is whole: only its end is noted
const ROLE_SPEC = 11; // an item's spec: looks for the members the kind's markers are searched in
const ROLE_MARKED = 12; // such a member: searched for the markers when it ends
const ROLE_STATUS = 13; // an item's status: looks for "conditions"
const ROLE_OBJECT_TOP = 14; // depth 0 of a single-object response: its one value is the item

// What the next value is, when it matters.
const SLOT_NONE = 0;
const SLOT_LIST = 1;
const SLOT_EVENT = 2;
const SLOT_ITEM = 3;
const SLOT_ITEMS = 4;
const SLOT_ITEM_METADATA = 5;
const SLOT_NAME = 6;
const SLOT_EVENT_TYPE = 7;
const SLOT_EVENT_OBJECT = 8;
const SLOT_LABELS = 9;
const SLOT_TENANT_LABEL = 10;
const SLOT_MANAGED_FIELDS = 11;
const SLOT_OWNER_REFERENCES = 12;
const SLOT_SPEC = 13;
const SLOT_STATUS = 14;
const SLOT_MARKED = 15;
const SLOT_CONDITIONS = 16;
const SLOT_GENERATE_NAME = 17;
const SLOT_OBJECT = 18;

// The members whose extent the fast path notes (index into the span arrays).
const SPAN_MANAGED_FIELDS = 0;
const SPAN_OWNERS = 1;
const SPAN_CONDITIONS = 2;
const SPAN_MARKED = 3;
const SPAN_GENERATE_NAME = 4;
const SPAN_COUNT = 5;

// What was found at the name field of the current item.
const NAME_MISSING = 0;
const NAME_STRING = 1;
const NAME_NOT_STRING = 2;

const KEY_ITEMS = Buffer.from('items');
const KEY_METADATA = Buffer.from('metadata');
const KEY_NAME = Buffer.from('name');
const KEY_TYPE = Buffer.from('type');
const KEY_OBJECT = Buffer.from('object');
const KEY_LABELS = Buffer.from('labels');
const KEY_MANAGED_FIELDS = Buffer.from('managedFields');
const KEY_OWNER_REFERENCES = Buffer.from('ownerReferences');
const KEY_SPEC = Buffer.from('spec');
const KEY_STATUS = Buffer.from('status');
const KEY_CONDITIONS = Buffer.from('conditions');
const KEY_GENERATE_NAME = Buffer.from('generateName');
const KEY_TENANT_LABEL = Buffer.from(TENANT_LABEL);
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
const TYPE_BOOKMARK = Buffer.from('BOOKMARK');
const TYPE_ERROR = Buffer.from('ERROR');
const COMMA = Buffer.from(',');
const NEWLINE = Buffer.from('\n');
const EMPTY = Buffer.alloc(0);
/** walkItem()'s key tables by shape of scanner (name field, metadata or not, marked spec members): a handful. */
const ITEM_WALK_KEYS = new Map<string, Uint8Array | null>();
/** Bytes of a chunk first copied behind held bytes; doubled until the held item ends. */
const FIRST_PIECE = 4096;
/**
 * An item cut by the chunk's end is walked again whole with more bytes (walkItem) while this much of it has come;
 * past that, the scanner goes on through it here, so a big item is not walked again at every piece.
 */
const REWALK_LIMIT = 32 * 1024;

/**
 * For four bytes read little-endian: 0 when none ends a string's plain run (quote, backslash, control byte), else
 * a mask whose lowest set bit is in the first such byte. The classic "has a zero byte" and "has a byte below n"
 * tests; they can flag a byte above a true hit, never below one.
 */
function stringStopIn(x: number): number {
  const quote = x ^ 0x22222222;
  const backslash = x ^ 0x5c5c5c5c;
  return (((quote - 0x01010101) & ~quote) | ((backslash - 0x01010101) & ~backslash) | ((x - 0x20202020) & ~x)) & 0x80808080;
}

/**
 * The index of the first byte from `from` on that ends a string's plain run (quote, backslash, control byte), or
 * `end`. Four bytes at a time: string bodies are 80% of a Kubernetes object (measured: the whole scan ~8% faster);
 * two words per turn of the loop (measured: 0–5% more, in three alternating runs of the bench's pods).
 */
function plainRunEnd(buf: Buffer, view: DataView, from: number, end: number): number {
  let i = from;
  while (i + 8 <= end) {
    let stop = stringStopIn(view.getInt32(i, true));
    if (stop !== 0) return i + ((31 - Math.clz32(stop & -stop)) >> 3);
    stop = stringStopIn(view.getInt32(i + 4, true));
    if (stop !== 0) return i + 4 + ((31 - Math.clz32(stop & -stop)) >> 3);
    i += 8;
  }
  if (i + 4 <= end) {
    const stop = stringStopIn(view.getInt32(i, true));
    if (stop !== 0) return i + ((31 - Math.clz32(stop & -stop)) >> 3);
    i += 4;
  }
  while (i < end && STRING_STOP[buf[i]!] === 0) i++;
  return i;
}

/**
 * A needle searched by its tail: its first `head` bytes (a quote, a common letter) would stop the search at nearly
 * every string of the JSON around it.
 */
interface TailNeedle {
  whole: Buffer;
  head: number;
  tail: Buffer;
}

function tailNeedle(whole: Buffer, head: number): TailNeedle {
  return { whole, head, tail: whole.subarray(head) };
}

/** Where the whole needle starts in `buf[from, to)`; -1 when it is not there. `epoch`: the scan's (json-skip.ts). */
function indexByTail(epoch: number, buf: Buffer, from: number, to: number, needle: TailNeedle): number {
  for (let at = indexWithin(epoch, buf, from + needle.head, to, needle.tail); at !== -1; at = indexWithin(epoch, buf, at + 1, to, needle.tail)) {
    if (startsWith(buf, at - needle.head, needle.whole)) return at - needle.head;
  }
  return -1;
}

/**
 * The closing quote of a string whose body starts at `from`, before `to`; -1 at a backslash or a control byte, or
 * when there is none. plainRunEnd, not Buffer.indexOf: for the few bytes of an owner's fields the call into C++
 * cost more (measured).
 */
function plainStringEnd(buf: Buffer, view: DataView, from: number, to: number): number {
  const stop = plainRunEnd(buf, view, from, to);
  return stop < to && buf[stop] === 0x22 ? stop : -1;
}

/**
 * Whether `bytes` stand in `buf` at `at`. A loop, not Buffer.compare: these are short, and the call into C++ cost
 * more than the comparison (measured).
 */
function startsWith(buf: Buffer, at: number, bytes: Buffer): boolean {
  for (let k = 0; k < bytes.length; k++) if (buf[at + k] !== bytes[k]) return false;
  return true;
}

/** The opening quote of the JSON string whose closing quote is at `close` (searching no lower than `floor`), or -1. */
function openingQuote(buf: Buffer, close: number, floor: number): number {
  for (let i = close - 1; i >= floor; i--) {
    if (buf[i] !== 0x22) continue;
    let backslashes = 0;
    while (i - 1 - backslashes >= floor && buf[i - 1 - backslashes] === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return i;
  }
  return -1;
}

function describeByte(c: number): string {
  return c >= 0x20 && c < 0x7f ? `'${String.fromCharCode(c)}'` : `byte 0x${c.toString(16).padStart(2, '0')}`;
}

/**
 * The incremental rewriter under ListRewriter, WatchRewriter and objectToTenantBytes ('object': one object, judged
 * and edited as one list item, kept or not, as itemsKept tells): `write()` each chunk, then `finish()`; each returns
 * the bytes ready to send. A validating JSON scanner whose state survives chunk boundaries; it keeps in memory
 * only the current item (or watch event) and the chunk it is in. Containers it does not look into are skipped by
 * WebAssembly (json-skip.ts), which validates them as this scanner would. Throws TenantViewError, after which it is unusable.
 */
export class TenantViewScanner {
  private readonly watch: boolean;
  /** A single-object response ('object'): its top-level value is the one item, judged and edited as a list's. */
  private readonly single: boolean;
  /** What the response must be, for error messages: 'list' or 'object'. */
  private readonly expected: string;
  private readonly prefix: Buffer;
  private readonly tenant: TenantId;
  private readonly nameKey: Buffer | null;
  private readonly rewriteItem: ((item: any) => any) | undefined;
  private readonly rewriteStatus: ((status: any) => any) | undefined;
  private readonly maxItemBytes: number;
  private readonly tenantMetadata: TenantMetadataView | null;
  private readonly tenantBytes: Buffer;
  private readonly tenantValue: Buffer;
  private readonly markedKeys: Buffer[];
  private readonly markers: TailNeedle[][];
  /** `"apiVersion":"<upstream group>/` and its tenant form, when the list's apiVersion changes (spec.listApiGroup). */
  private readonly listApiVersion: { readonly upstream: Buffer; readonly tenant: Buffer } | null;

  // The bytes being scanned: the chunk itself, or `work` holding retained bytes followed by the chunk.
  private buf: Buffer = EMPTY;
  private end = 0;
  private work: Buffer = EMPTY;
  private retained = 0;
  /** Offset in the whole response of buf[0], for error messages. */
  private bufOffset = 0;
  private pos = 0;
  private failed: TenantViewError | null = null;
  /**
   * The bytes ready to send, copied in as they are emitted into one buffer per write(), sized for the held bytes
   * and the chunk: collecting the parts and concatenating them once cost about 1.7x as much (a pod list has ~45
   * parts per 64 KiB).
   */
  private out: Buffer = EMPTY;
  private outLength = 0;
  /** What this write() may emit, without edits that lengthen: the size of the buffer allocated at its first emit. */
  private outSizeHint = 0;
  /** Whether `out` is the chunk being scanned, whose bytes move down as they are emitted (writeOwned). */
  private inPlace = false;
  /** writeOwned(): what this write() emitted before it began writing over the chunk. */
  private readonly ownedParts: Buffer[] = [];
  /** Set while completing held bytes: scan() returns when the held item ends. */
  private stopAtUnitEnd = false;
  private stoppedAtUnitEnd = false;

  // Scanner state.
  private depth = 0;
  private stack = new Uint8Array(64); // role << 1 | isArray, per open container
  private expect = EXPECT_VALUE;
  private slot = SLOT_NONE;
  private sawValue = false;
  // A string cut by the end of a chunk.
  private inString = false;
  private stringStart = -1;
  private stringResume = -1; // where the scan goes on: the chunk's end, or the backslash of a cut escape
  private stringIsKey = false;
  private stringEscaped = false;

  // Output bookkeeping: bytes before `flushedUpTo` have been emitted or dropped.
  private flushedUpTo = 0;
  private sawItems = false;
  private inItems = false;
  private keptItems = 0;
  private keptEvents = 0;
  private uncheckedObject = false;

  // The current item (list) or event (watch).
  private unitStart = -1;
  private unitIsObject = false;
  private ambiguous = false;
  private metadataCount = 0;
  private nameCount = 0;
  private nameState = NAME_MISSING;
  private nameStart = -1;
  private nameEnd = -1;
  private nameEscaped = false;
  private typeCount = 0;
  private typeStart = -1;
  private typeEnd = -1;
  private typeEscaped = false;
  private objectCount = 0;
  private objectStart = -1;
  private objectEnd = -1;
  // The current item's metadata members the fast path edits (tenantMetadata only).
  private labelsCount = 0;
  private labelsKeyStart = -1;
  private labelsEnd = -1;
  private labelEntries = 0;
  private tenantLabelCount = 0;
  private tenantLabelKeyStart = -1;
  private tenantLabelStart = -1;
  private tenantLabelEnd = -1;
  private tenantLabelIsString = false;
  private tenantLabelEscaped = false;
  private managedFieldsCount = 0;
  private ownersCount = 0;
  private specCount = 0;
  private statusCount = 0;
  private conditionsCount = 0;
  private generateNameCount = 0;
  // Where each noted member's value starts and ends; bit (1 << SPAN_x) of spansSeen once it has ended.
  private readonly spanStart = new Int32Array(SPAN_COUNT);
  private readonly spanEnd = new Int32Array(SPAN_COUNT);
  private spansSeen = 0;
  private openSpan = 0; // the SPAN_x of the ROLE_SPAN container open now (they never nest)
  private markedMember = -1; // which of the kind's marked spec members is open now
  private markerFound = false;
  // The current unit's edits for the fast path: [from, to) replaced by `with` (null: removed), in document order.
  private editFrom: number[] = [];
  private editTo: number[] = [];
  private editWith: (Buffer | null)[] = [];
  /** The rule's verdicts on owners by apiVersion and kind (see ownersAreTenants). */
  private readonly ownerVerdicts: { version: Buffer; kind: Buffer; verdict: boolean }[] = [];

  /** The current scan's epoch for json-skip.ts: its window of `buf` serves the searches at the item's end too. */
  private skipEpoch = 0;
  /** The keys walkItem() looks for in this scanner's items, or null: then it walks them itself. */
  private readonly itemKeys: Uint8Array | null;

  /** Items only: the list around them, kept aside (ItemsOnly). */
  private readonly envelopeParts: Buffer[] | null;
  private readonly itemsBefore: number;

  constructor(kind: 'list' | 'watch' | 'object', spec: TenantViewSpec, itemsOnly?: ItemsOnly) {
    this.envelopeParts = itemsOnly === undefined ? null : [];
    this.itemsBefore = itemsOnly?.itemsBefore ?? 0;
    if (!isTenantId(spec.tenant)) throw new TypeError(`not a tenant id: ${JSON.stringify(spec.tenant)}`);
    if (spec.nameField === null && spec.rewriteItem === undefined) {
      throw new TypeError('nameField null needs rewriteItem: without either, every object would pass unchecked');
    }
    this.watch = kind === 'watch';
    this.single = kind === 'object';
    this.expected = this.single ? 'object' : 'list';
    this.tenant = spec.tenant;
    this.prefix = Buffer.from(tenantPrefix(spec.tenant));
    this.nameKey = spec.nameField === null ? null : spec.nameField === 'name' ? KEY_NAME : Buffer.from(spec.nameField);
    this.rewriteItem = spec.rewriteItem;
    this.rewriteStatus = spec.rewriteStatus;
    this.maxItemBytes = spec.maxItemBytes ?? DEFAULT_MAX_ITEM_BYTES;
    this.tenantMetadata = spec.tenantMetadata ?? null;
    // (Group names need no JSON escaping.)
    const apiVersionHead = (group: string) => Buffer.from(`"apiVersion":"${group}/`);
    this.listApiVersion =
      spec.listApiGroup === undefined ? null : { upstream: apiVersionHead(spec.listApiGroup.upstream), tenant: apiVersionHead(spec.listApiGroup.tenant) };
    if (this.tenantMetadata !== null && (spec.nameField === null || spec.rewriteItem === undefined)) {
      throw new TypeError('tenantMetadata needs a nameField and rewriteItem (for the items the fast path leaves to it)');
    }
    this.tenantBytes = Buffer.from(spec.tenant);
    this.tenantValue = Buffer.from(JSON.stringify(spec.tenant));
    const marked = Object.entries(this.tenantMetadata?.slowPathMarkers ?? {});
    this.markedKeys = marked.map(([key]) => Buffer.from(key));
    // Markers start with a quote and a letter: searched from their third byte.
    this.markers = marked.map(([, markers]) => markers.map((marker) => tailNeedle(Buffer.from(marker), marker.length > 4 ? 2 : 0)));
    this.itemKeys = this.itemWalkKeys();
  }

  /**
   * What onKey() looks for, for walkItem(): the same keys in the same places. One table per shape of scanner, shared:
   * made and copied into the module once, not per scanner (a single object's scanner lives for one object).
   */
  private itemWalkKeys(): Uint8Array | null {
    const withMetadata = this.tenantMetadata !== null;
    const nameKey = this.nameKey;
    const shape = `${nameKey?.toString() ?? ''}|${withMetadata}|${this.markedKeys.join('|')}`;
    let keys = ITEM_WALK_KEYS.get(shape);
    if (keys === undefined) ITEM_WALK_KEYS.set(shape, (keys = this.newItemWalkKeys(withMetadata, nameKey)));
    return keys;
  }

  private newItemWalkKeys(withMetadata: boolean, nameKey: Buffer | null): Uint8Array | null {
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
      spec: this.markedKeys.map((key, k) => [key, ITEM_KEY.marked + k] as const),
      status: withMetadata ? [[KEY_CONDITIONS, ITEM_KEY.conditions] as const] : [],
    });
  }

  /** Scans one chunk; returns the bytes that are ready to send (possibly none). */
  write(chunk: Buffer): Buffer {
    if (this.failed !== null) throw this.failed;
    if (chunk.length === 0) return EMPTY; // the held bytes were scanned as far as they go
    this.scanChunk(chunk, false);
    return this.takeOutput();
  }

  /**
   * write() for a chunk the caller gives up (an upstream response's): the bytes to send are moved down within the
   * chunk itself where it can, instead of copied into new memory, which cost a fifth to a third of the rewrite
   * (bench: rewrite). Returns them in up to two buffers: the end of an item the last chunk cut, then the chunk's.
   */
  writeOwned(chunk: Buffer): Buffer[] {
    if (this.failed !== null) throw this.failed;
    if (chunk.length === 0) return [];
    this.scanChunk(chunk, true);
    const last = this.takeOutput();
    if (last.length > 0) this.ownedParts.push(last);
    return this.ownedParts.splice(0);
  }

  private scanChunk(chunk: Buffer, owned: boolean): void {
    try {
      // Bytes held from the last chunk (an item it cut) are completed from this chunk's head, in growing pieces
      // copied after them; once nothing is held, the rest of the chunk is scanned where it lies. Copying the whole
      // chunk behind them copied nearly every byte a second time (bench: 38.8 of 38.9 MB; now 6.9 MB).
      this.outSizeHint = this.retained + chunk.length + 1024;
      let at = 0;
      for (let piece = FIRST_PIECE; this.retained > 0 && at < chunk.length; piece *= 2) {
        const to = Math.min(chunk.length, at + piece);
        this.reserveWork(this.retained + to - at);
        chunk.copy(this.work, this.retained, at, to);
        this.buf = this.work;
        this.end = this.retained + to - at;
        at = to;
        this.stopAtUnitEnd = true;
        this.scanAndFlush();
        this.stopAtUnitEnd = false;
        if (this.stoppedAtUnitEnd) {
          // The held item is whole: the piece's bytes after it are scanned again where they lie in the chunk.
          this.stoppedAtUnitEnd = false;
          at -= this.end - this.pos;
          this.end = this.pos;
        }
        this.retainTail();
      }
      if (at < chunk.length) {
        this.buf = at === 0 ? chunk : chunk.subarray(at);
        this.end = this.buf.length;
        if (owned) {
          // What the held item gave goes first, in a buffer of its own; the rest is written over the chunk.
          if (this.outLength > 0) this.ownedParts.push(this.takeOutput());
          this.out = this.buf;
          this.inPlace = true;
        }
        this.scanAndFlush();
        this.retainTail();
      }
    } catch (error) {
      throw this.fail(error);
    }
  }

  private scanAndFlush(): void {
    this.scan();
    this.flushBetweenItems();
  }

  /** Checks that the response ended where it may; returns the last bytes to send. */
  finish(): Buffer {
    if (this.failed !== null) throw this.failed;
    try {
      const at = this.bufOffset + this.pos;
      // A number or literal cut by the end is still held, from `pos` on.
      const pendingToken = this.pos < this.retained;
      if (!this.watch && !this.sawValue && !pendingToken)
        throw new TenantViewError(`the response is empty, not ${this.expected === 'list' ? 'a list' : 'an object'}`, at);
      if (!this.watch && !this.sawValue)
        throw new TenantViewError(`not ${this.expected === 'list' ? 'a list' : 'an object'}: the response is not a JSON object`, at);
      if (this.unitStart >= 0) throw new TenantViewError('the response ended inside an item', at);
      if (!this.watch && this.expect !== EXPECT_END) throw new TenantViewError(`the response ended before the ${this.expected} did`, at);
      if (this.inString || pendingToken || this.depth > 0) throw new TenantViewError('the response ended inside a JSON value', at);
      this.flushBetweenItems();
      return this.takeOutput();
    } catch (error) {
      throw this.fail(error);
    }
  }

  private fail(error: unknown): TenantViewError {
    this.outLength = 0;
    this.failed =
      error instanceof TenantViewError
        ? error
        : new TenantViewError(`rewriting failed: ${error instanceof Error ? error.message : String(error)}`, this.bufOffset + this.pos);
    return this.failed;
  }

  private malformed(what: string, at: number): TenantViewError {
    return new TenantViewError(`malformed JSON: ${what}`, this.bufOffset + at);
  }

  /** The bytes emitted since the last call: the rest of the buffer they are in is not used again. */
  private takeOutput(): Buffer {
    this.inPlace = false;
    if (this.outLength === 0) {
      this.out = EMPTY;
      return EMPTY;
    }
    const out = this.out.subarray(0, this.outLength);
    this.out = EMPTY;
    this.outLength = 0;
    return out;
  }

  /** Makes room for `size` more bytes of output (in new memory: this also ends writing over the chunk). */
  private reserveOut(size: number): void {
    if (this.outLength + size <= this.out.length && !this.inPlace) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.outLength + size, this.out.length * 2, this.outSizeHint));
    this.out.copy(bigger, 0, 0, this.outLength);
    this.out = bigger;
    this.inPlace = false;
  }

  private emit(from: number, to: number): void {
    if (to > from) this.append(this.buf, from, to);
  }

  /**
   * Emits bytes that are not the scanned bytes at hand (a comma, a newline, a replacement). `next`: the index of
   * the first scanned byte any later emit of this write() reads; over the chunk, the bytes must end before it.
   */
  private emitBytes(bytes: Buffer, next: number): void {
    if (this.inPlace && this.outLength + bytes.length > next) this.reserveOut(bytes.length);
    this.append(bytes, 0, bytes.length);
  }

  private append(source: Buffer, from: number, to: number): void {
    if (this.inPlace) {
      if (source === this.out && this.outLength <= from) {
        // Over the chunk: the bytes move down (or stay where they are).
        if (this.outLength !== from) this.out.copyWithin(this.outLength, from, to);
        this.outLength += to - from;
        return;
      }
      if (source === this.out) this.reserveOut(to - from);
    }
    if (this.outLength + to - from > this.out.length) this.reserveOut(Math.max(to - from, this.outSizeHint - this.outLength));
    if (to - from > 16) this.outLength += source.copy(this.out, this.outLength, from, to);
    else {
      // A comma, a newline, a short gap between edits: a loop costs less than the call into C++ (measured).
      const out = this.out;
      let at = this.outLength;
      for (let i = from; i < to; i++) out[at++] = source[i]!;
      this.outLength = at;
    }
  }

  /** Outside items, list bytes (kind, apiVersion, the list's metadata, the brackets) go out as soon as they are scanned. */
  private flushBetweenItems(): void {
    if (this.watch) {
      if (this.unitStart < 0) this.flushedUpTo = this.safeEnd();
      return;
    }
    // Nothing goes out before "items" is seen: an object that is not a list must not leak.
    if (!this.sawItems || this.inItems || this.unitStart >= 0) return;
    const to = this.safeEnd();
    this.emitEnvelope(this.flushedUpTo, to);
    this.flushedUpTo = to;
  }

  /**
   * The list's own bytes (all but the items): emitted, or kept aside for envelope(). The head (up to `"items":[`) comes
   * here whole, where the apiserver writes the list's apiVersion (first of its sorted keys, or before the items when
   * it streams the collection): replaced there when the tenant's differs.
   */
  private emitEnvelope(from: number, to: number): void {
    const replace = this.listApiVersion;
    const at = replace === null || to - from < replace.upstream.length ? -1 : this.buf.subarray(from, to).indexOf(replace.upstream);
    if (at >= 0) {
      const end = from + at + replace!.upstream.length;
      this.emitEnvelopePart(from, from + at);
      if (this.envelopeParts === null) this.emitBytes(replace!.tenant, end);
      else this.envelopeParts.push(replace!.tenant);
      this.emitEnvelopePart(end, to);
      return;
    }
    this.emitEnvelopePart(from, to);
  }

  private emitEnvelopePart(from: number, to: number): void {
    if (this.envelopeParts === null) this.emit(from, to);
    else if (to > from) this.envelopeParts.push(Buffer.from(this.buf.subarray(from, to)));
  }

  /** Items only, once finished: the list without its items (`"items":[]`), e.g. for its metadata. */
  envelope(): Buffer {
    return Buffer.concat(this.envelopeParts ?? []);
  }

  /** The items emitted so far. */
  get itemsKept(): number {
    return this.keptItems;
  }

  /**
   * A single object ('object') left out because its name field could not be checked: missing, not a non-empty string,
   * or written twice (ambiguous). Not a stored object of the kind (a Status, a Table, a list) or an odd one: where
   * the parser and the rule would decide otherwise, the caller asks them instead.
   */
  get objectUnchecked(): boolean {
    return this.uncheckedObject;
  }

  /** The watch events emitted so far (bookmarks and errors included). */
  get eventsKept(): number {
    return this.keptEvents;
  }

  /** Where the bytes scanned so far stop, short of a token cut by the chunk's end. */
  private safeEnd(): number {
    return this.inString ? this.stringStart : this.pos;
  }

  private retainTail(): void {
    let from: number;
    if (this.unitStart >= 0) from = this.unitStart;
    // (A single object emits nothing but itself: the whitespace around it is not held.)
    else if (!this.watch && !this.single && !this.sawItems) from = this.flushedUpTo;
    else from = this.safeEnd();
    const keep = this.end - from;
    if (keep > this.maxItemBytes) {
      throw new TenantViewError(`an item is larger than ${this.maxItemBytes} bytes`, this.bufOffset + from);
    }
    if (keep > 0) {
      if (this.buf === this.work) this.work.copyWithin(0, from, this.end);
      else {
        this.reserveWork(keep);
        this.buf.copy(this.work, 0, from, this.end);
      }
    } else if (this.work.length > 4 * 1024 * 1024) {
      this.work = EMPTY; // a huge item is gone: give its memory back
    }
    this.retained = keep;
    this.bufOffset += from;
    this.buf = EMPTY;
    this.end = 0;
    this.pos -= from;
    this.stringStart -= from;
    this.stringResume -= from;
    this.flushedUpTo = this.flushedUpTo > from ? this.flushedUpTo - from : 0;
    if (this.unitStart >= 0) {
      this.unitStart -= from;
      this.nameStart -= from;
      this.nameEnd -= from;
      this.typeStart -= from;
      this.typeEnd -= from;
      this.objectStart -= from;
      this.objectEnd -= from;
      this.labelsKeyStart -= from;
      this.labelsEnd -= from;
      this.tenantLabelKeyStart -= from;
      this.tenantLabelStart -= from;
      this.tenantLabelEnd -= from;
      for (let k = 0; k < SPAN_COUNT; k++) {
        this.spanStart[k]! -= from;
        this.spanEnd[k]! -= from;
      }
    }
  }

  /** Makes `work` hold at least `size` bytes, keeping its first `retained` bytes. */
  private reserveWork(size: number): void {
    if (this.work.length >= size) return;
    const bigger = Buffer.allocUnsafe(Math.max(size, this.work.length * 2, 64 * 1024));
    this.work.copy(bigger, 0, 0, this.retained);
    this.work = bigger;
  }

  private scan(): void {
    const buf = this.buf;
    const end = this.end;
    let pos = this.pos;
    let depth = this.depth;
    let expect = this.expect;
    let stack = this.stack;
    const topRole = this.watch ? ROLE_WATCH_TOP : this.single ? ROLE_OBJECT_TOP : ROLE_LIST_TOP;
    const afterTopValue = this.watch ? EXPECT_VALUE : EXPECT_END;
    let role = depth > 0 ? stack[depth - 1]! >> 1 : topRole;
    // What a ',' leads to in the current container: a value in an array, a key in an object.
    let afterComma = depth > 0 && (stack[depth - 1]! & 1) === 1 ? EXPECT_VALUE : EXPECT_KEY;
    const view = new DataView(buf.buffer, buf.byteOffset, end);
    const epoch = (this.skipEpoch = newSkipEpoch());
    // Containers opening before this are scanned here, not skipped: a skip that stopped short got this far (so a
    // cut or malformed container costs one skip, not one per level of nesting).
    let skipFloor = 0;

    if (this.inString) {
      const close = this.scanString(buf, view, this.stringResume, end);
      if (close < 0) {
        this.pos = end;
        return;
      }
      this.inString = false;
      pos = close + 1;
      if (this.stringIsKey) {
        expect = EXPECT_COLON;
        if (role !== ROLE_OTHER) this.onKey(role, this.stringStart, close, this.stringEscaped);
      } else {
        if (role !== ROLE_OTHER) {
          const slot = this.takeSlot(role);
          if (slot !== SLOT_NONE) this.onScalar(slot, this.stringStart, pos, true, this.stringEscaped);
        }
        expect = depth === 0 ? afterTopValue : EXPECT_COMMA_OR_CLOSE;
      }
    }

    // The loop is shaped for speed (measured): strings first and scanned inline, the ':' after a key and the ','
    // after a value taken without another turn, and the rewriter's hooks only in containers that are not ROLE_OTHER.
    while (pos < end) {
      const c = buf[pos]!;

      if (c === 0x22 /* " */) {
        const isKey = (expect & ALLOW_KEY) !== 0;
        if (!isKey && (expect & ALLOW_VALUE) === 0) throw this.malformed('unexpected string', pos);
        let close = plainRunEnd(buf, view, pos + 1, end);
        let escaped = false;
        if (close >= end || buf[close] !== 0x22) {
          this.stringEscaped = false;
          close = this.scanString(buf, view, close, end);
          if (close < 0) {
            // Cut by the chunk's end: go on inside the string with the next chunk.
            this.inString = true;
            this.stringStart = pos;
            this.stringIsKey = isKey;
            pos = end;
            break;
          }
          escaped = this.stringEscaped;
        }
        if (isKey) {
          if (role !== ROLE_OTHER) this.onKey(role, pos, close, escaped);
          pos = close + 1;
          if (pos < end && buf[pos] === 0x3a /* : */) {
            pos++;
            expect = EXPECT_VALUE;
            if (role === ROLE_OTHER) {
              // Runs of "key":"value", members of an object nobody looks into, in one turn (measured: the whole
              // scan ~8% faster). Anything else (another value, an escape, the chunk's end) leaves pos and expect
              // where the general path takes over.
              for (;;) {
                if (!(pos < end && buf[pos] === 0x22)) break;
                const valueClose = plainRunEnd(buf, view, pos + 1, end);
                if (!(valueClose < end && buf[valueClose] === 0x22)) break;
                pos = valueClose + 1;
                expect = EXPECT_COMMA_OR_CLOSE;
                if (!(pos < end && buf[pos] === 0x2c /* , */)) break;
                pos++;
                expect = EXPECT_KEY;
                if (!(pos < end && buf[pos] === 0x22)) break;
                const keyClose = plainRunEnd(buf, view, pos + 1, end);
                if (!(keyClose < end && buf[keyClose] === 0x22)) break;
                pos = keyClose + 1;
                expect = EXPECT_COLON;
                if (!(pos < end && buf[pos] === 0x3a /* : */)) break;
                pos++;
                expect = EXPECT_VALUE;
              }
            }
          } else {
            expect = EXPECT_COLON;
          }
          continue;
        }
        if (role !== ROLE_OTHER) {
          const slot = this.takeSlot(role);
          if (slot !== SLOT_NONE) this.onScalar(slot, pos, close + 1, true, escaped);
        }
        pos = close + 1;
        if (depth === 0) expect = afterTopValue;
        else if (pos < end && buf[pos] === 0x2c /* , */) {
          pos++;
          expect = afterComma;
        } else {
          expect = EXPECT_COMMA_OR_CLOSE;
        }
        continue;
      }

      if (c === 0x2c /* , */) {
        if ((expect & ALLOW_COMMA) === 0) throw this.malformed(`unexpected ','`, pos);
        expect = afterComma;
        pos++;
        continue;
      }

      if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
        const isArray = c === 0x5d ? 1 : 0;
        if (depth === 0 || (afterComma === EXPECT_VALUE ? 1 : 0) !== isArray || (expect & (isArray === 1 ? ALLOW_CLOSE_ARRAY : ALLOW_CLOSE_OBJECT)) === 0) {
          throw this.malformed(`unexpected ${describeByte(c)}`, pos);
        }
        const closed = role;
        depth--;
        if (depth > 0) {
          const parent = stack[depth - 1]!;
          role = parent >> 1;
          afterComma = (parent & 1) === 1 ? EXPECT_VALUE : EXPECT_KEY;
        } else {
          role = topRole;
        }
        pos++;
        if (closed !== ROLE_OTHER) {
          this.pos = pos;
          this.onClose(closed, role, pos);
          if (this.stopAtUnitEnd && this.unitStart < 0) {
            this.stoppedAtUnitEnd = true;
            expect = depth === 0 ? afterTopValue : EXPECT_COMMA_OR_CLOSE;
            break;
          }
        }
        if (depth === 0) expect = afterTopValue;
        else if (pos < end && buf[pos] === 0x2c /* , */) {
          pos++;
          expect = afterComma;
        } else {
          expect = EXPECT_COMMA_OR_CLOSE;
        }
        continue;
      }

      if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
        if ((expect & ALLOW_VALUE) === 0) {
          throw this.malformed(expect === EXPECT_END ? `data after the end of the ${this.expected}` : `unexpected ${describeByte(c)}`, pos);
        }
        const isArray = c === 0x5b;
        let newRole = ROLE_OTHER;
        if (role !== ROLE_OTHER) {
          this.pos = pos;
          newRole = this.onOpen(this.takeSlot(role), isArray, pos);
        }
        // An item (or a watch event's object) is walked whole by WebAssembly, which notes the members onKey()
        // would; otherwise (escaped keys, malformed or huge items) it is scanned here.
        if (newRole === ROLE_ITEM && this.itemKeys !== null) {
          const after = walkItem(epoch, buf, end, pos, this.itemKeys);
          if (after >= 0) {
            this.takeWalkedItem();
            pos = after;
            this.pos = pos;
            this.onClose(ROLE_ITEM, role, pos);
            if (this.stopAtUnitEnd && this.unitStart < 0) {
              this.stoppedAtUnitEnd = true;
              expect = depth === 0 ? afterTopValue : EXPECT_COMMA_OR_CLOSE;
              break;
            }
            // (At depth 0, a single object's: nothing but whitespace may follow.)
            if (depth === 0) expect = afterTopValue;
            else if (pos < end && buf[pos] === 0x2c /* , */) {
              pos++;
              expect = afterComma;
            } else {
              expect = EXPECT_COMMA_OR_CLOSE;
            }
            continue;
          }
          if (after === ITEM_CUT && end - pos < REWALK_LIMIT) {
            // Walked again from its '{' with the next chunk; a watch object's slot is taken again then.
            if (role === ROLE_EVENT) this.slot = SLOT_EVENT_OBJECT;
            break;
          }
        }
        // A container nobody looks into is skipped whole by WebAssembly, when it lies in the bytes at hand and is
        // valid; otherwise it is scanned here, up to where the skip stopped.
        if (newRole === ROLE_OTHER && pos >= skipFloor) {
          const after = containerEnd(epoch, buf, end, pos);
          if (after >= 0) {
            pos = after;
            expect = depth === 0 ? afterTopValue : EXPECT_COMMA_OR_CLOSE;
            continue;
          }
          skipFloor = -1 - after;
        }
        if (depth === stack.length) {
          const deeper = new Uint8Array(stack.length * 2);
          deeper.set(stack);
          this.stack = stack = deeper;
        }
        stack[depth++] = (newRole << 1) | (isArray ? 1 : 0);
        role = newRole;
        afterComma = isArray ? EXPECT_VALUE : EXPECT_KEY;
        expect = isArray ? EXPECT_VALUE_OR_CLOSE : EXPECT_KEY_OR_CLOSE;
        pos++;
        continue;
      }

      if (c === 0x3a /* : */) {
        if ((expect & ALLOW_COLON) === 0) throw this.malformed(`unexpected ':'`, pos);
        expect = EXPECT_VALUE;
        pos++;
        continue;
      }

      const kind = CHAR_CLASS[c];
      if (kind === C_SPACE) {
        pos++;
        continue;
      }
      if (kind !== C_NUMBER && kind !== C_LITERAL) throw this.malformed(`unexpected ${describeByte(c)}`, pos);
      if ((expect & ALLOW_VALUE) === 0) {
        throw this.malformed(expect === EXPECT_END ? `data after the end of the ${this.expected}` : `unexpected ${describeByte(c)}`, pos);
      }
      const tokenEnd = kind === C_NUMBER ? this.scanNumber(buf, pos, end) : this.scanLiteral(buf, pos, end);
      if (tokenEnd < 0) {
        // Cut by the chunk's end: scan the whole token again with the next chunk.
        break;
      }
      if (role !== ROLE_OTHER) {
        const slot = this.takeSlot(role);
        if (slot !== SLOT_NONE) this.onScalar(slot, pos, tokenEnd, false, false);
      }
      pos = tokenEnd;
      expect = depth === 0 ? afterTopValue : EXPECT_COMMA_OR_CLOSE;
    }
    this.pos = pos;
    this.depth = depth;
    this.expect = expect;
  }

  /**
   * Scans a string's body from `from`; returns the index of its closing quote, or -1 when the chunk ends first
   * (then stringResume is where to go on: the chunk's end or a cut escape). Sets stringEscaped on a backslash.
   */
  private scanString(buf: Buffer, view: DataView, from: number, end: number): number {
    let i = from;
    for (;;) {
      i = plainRunEnd(buf, view, i, end);
      if (i >= end) {
        this.stringResume = i;
        return -1;
      }
      const c = buf[i]!;
      if (c === 0x22) return i;
      if (c !== 0x5c) throw this.malformed(`control ${describeByte(c)} inside a string`, i);
      this.stringEscaped = true;
      if (i + 1 >= end) {
        this.stringResume = i;
        return -1;
      }
      const e = buf[i + 1]!;
      if (SIMPLE_ESCAPE[e] === 1) {
        i += 2;
      } else if (e === 0x75 /* u */) {
        if (i + 6 > end) {
          this.stringResume = i;
          return -1;
        }
        if (HEX[buf[i + 2]!]! & HEX[buf[i + 3]!]! & HEX[buf[i + 4]!]! & HEX[buf[i + 5]!]!) i += 6;
        else throw this.malformed('bad \\u escape', i);
      } else {
        throw this.malformed(`bad escape \\${String.fromCharCode(e)}`, i);
      }
    }
  }

  /** Returns the end of the number at `from`, -1 when the chunk may cut it; throws on a malformed number. */
  private scanNumber(buf: Buffer, from: number, end: number): number {
    let i = from;
    if (buf[i] === 0x2d) i++;
    if (i >= end) return -1;
    let c = buf[i]!;
    if (c === 0x30) i++;
    else if (c >= 0x31 && c <= 0x39) {
      i++;
      while (i < end && (c = buf[i]!) >= 0x30 && c <= 0x39) i++;
    } else throw this.malformed('bad number', from);
    if (i >= end) return -1;
    c = buf[i]!;
    if (c === 0x2e) {
      i++;
      const digits = i;
      while (i < end && (c = buf[i]!) >= 0x30 && c <= 0x39) i++;
      if (i >= end) return -1;
      if (i === digits) throw this.malformed('bad number', from);
      c = buf[i]!;
    }
    if (c === 0x65 || c === 0x45) {
      i++;
      if (i >= end) return -1;
      c = buf[i]!;
      if (c === 0x2b || c === 0x2d) i++;
      const digits = i;
      while (i < end && (c = buf[i]!) >= 0x30 && c <= 0x39) i++;
      if (i >= end) return -1;
      if (i === digits) throw this.malformed('bad number', from);
    }
    return i;
  }

  private scanLiteral(buf: Buffer, from: number, end: number): number {
    const c = buf[from]!;
    const word = c === 0x74 ? 'true' : c === 0x66 ? 'false' : 'null';
    for (let k = 1; k < word.length; k++) {
      if (from + k >= end) return -1;
      if (buf[from + k] !== word.charCodeAt(k)) throw this.malformed('bad literal', from);
    }
    return from + word.length;
  }

  /** The meaning of the value starting now inside a container with this role. */
  private takeSlot(role: number): number {
    if (role === ROLE_ITEMS) return SLOT_ITEM;
    if (role === ROLE_LIST_TOP) return SLOT_LIST;
    if (role === ROLE_WATCH_TOP) return SLOT_EVENT;
    if (role === ROLE_OBJECT_TOP) return SLOT_OBJECT;
    const slot = this.slot;
    this.slot = SLOT_NONE;
    return slot;
  }

  private keyIs(start: number, close: number, escaped: boolean, key: Buffer): boolean {
    if (escaped) return JSON.parse(this.buf.toString('utf8', start, close + 1)) === key.toString();
    return close - start - 1 === key.length && startsWith(this.buf, start + 1, key);
  }

  private onKey(role: number, start: number, close: number, escaped: boolean): void {
    switch (role) {
      case ROLE_LIST:
        if (this.keyIs(start, close, escaped, KEY_ITEMS)) this.slot = SLOT_ITEMS;
        return;
      case ROLE_ITEM:
        if (this.nameKey !== null && this.keyIs(start, close, escaped, KEY_METADATA)) {
          if (++this.metadataCount > 1) this.ambiguous = true;
          this.slot = SLOT_ITEM_METADATA;
        } else if (this.tenantMetadata !== null) {
          if (this.keyIs(start, close, escaped, KEY_SPEC)) {
            if (++this.specCount > 1) this.ambiguous = true;
            this.slot = SLOT_SPEC;
          } else if (this.keyIs(start, close, escaped, KEY_STATUS)) {
            if (++this.statusCount > 1) this.ambiguous = true;
            this.slot = SLOT_STATUS;
          }
        }
        return;
      case ROLE_ITEM_METADATA:
        if (this.keyIs(start, close, escaped, this.nameKey!)) {
          if (++this.nameCount > 1) this.ambiguous = true;
          this.slot = SLOT_NAME;
        } else if (this.tenantMetadata !== null) {
          if (this.keyIs(start, close, escaped, KEY_LABELS)) {
            if (++this.labelsCount > 1) this.ambiguous = true;
            this.labelsKeyStart = start;
            this.slot = SLOT_LABELS;
          } else if (this.keyIs(start, close, escaped, KEY_MANAGED_FIELDS)) {
            if (++this.managedFieldsCount > 1) this.ambiguous = true;
            this.slot = SLOT_MANAGED_FIELDS;
          } else if (this.keyIs(start, close, escaped, KEY_OWNER_REFERENCES)) {
            if (++this.ownersCount > 1) this.ambiguous = true;
            this.slot = SLOT_OWNER_REFERENCES;
          } else if (this.nameKey === KEY_NAME && this.keyIs(start, close, escaped, KEY_GENERATE_NAME)) {
            // The rule prefixes a cluster-scoped object's generateName (a namespaced one's stays as it is).
            if (++this.generateNameCount > 1) this.ambiguous = true;
            this.slot = SLOT_GENERATE_NAME;
          }
        }
        return;
      case ROLE_SPEC:
        for (let k = 0; k < this.markedKeys.length; k++) {
          if (this.keyIs(start, close, escaped, this.markedKeys[k]!)) {
            this.markedMember = k;
            this.slot = SLOT_MARKED;
          }
        }
        return;
      case ROLE_STATUS:
        if (this.keyIs(start, close, escaped, KEY_CONDITIONS)) {
          if (++this.conditionsCount > 1) this.ambiguous = true;
          this.slot = SLOT_CONDITIONS;
        }
        return;
      case ROLE_LABELS:
        this.labelEntries++;
        if (this.keyIs(start, close, escaped, KEY_TENANT_LABEL)) {
          if (++this.tenantLabelCount > 1) this.ambiguous = true;
          this.tenantLabelKeyStart = start;
          this.tenantLabelIsString = false;
          this.slot = SLOT_TENANT_LABEL;
        }
        return;
      case ROLE_EVENT:
        if (this.keyIs(start, close, escaped, KEY_TYPE)) {
          if (++this.typeCount > 1) throw new TenantViewError('a watch event has two "type" keys', this.bufOffset + start);
          this.slot = SLOT_EVENT_TYPE;
        } else if (this.keyIs(start, close, escaped, KEY_OBJECT)) {
          if (++this.objectCount > 1) throw new TenantViewError('a watch event has two "object" keys', this.bufOffset + start);
          this.slot = SLOT_EVENT_OBJECT;
        }
        return;
    }
  }

  private startUnit(at: number, isObject: boolean): void {
    this.unitStart = at;
    this.unitIsObject = isObject;
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
    if (this.tenantMetadata !== null) {
      this.labelsCount = this.labelEntries = this.tenantLabelCount = this.managedFieldsCount = this.ownersCount = 0;
      this.specCount = this.statusCount = this.conditionsCount = this.generateNameCount = this.spansSeen = 0;
      this.markerFound = false;
      this.tenantLabelIsString = false;
    }
    // Separators and whitespace before an item are not copied: the comma is re-added when the item is kept.
    this.flushedUpTo = at;
  }

  /** A container opens as the value of a slot; returns its role. */
  private onOpen(slot: number, isArray: boolean, at: number): number {
    switch (slot) {
      case SLOT_LIST:
        if (isArray) throw new TenantViewError('not a list: the response is a JSON array', this.bufOffset + at);
        this.sawValue = true;
        return ROLE_LIST;
      case SLOT_EVENT:
        if (isArray) throw new TenantViewError('a watch event is not a JSON object', this.bufOffset + at);
        this.startUnit(at, true);
        return ROLE_EVENT;
      case SLOT_ITEM:
        this.startUnit(at, !isArray);
        return isArray ? ROLE_NON_OBJECT_ITEM : ROLE_ITEM;
      case SLOT_OBJECT:
        if (isArray) throw new TenantViewError('not an object: the response is a JSON array', this.bufOffset + at);
        this.sawValue = true;
        this.startUnit(at, true);
        return ROLE_ITEM;
      case SLOT_ITEMS:
        if (!isArray) throw new TenantViewError('not a list: "items" is not an array', this.bufOffset + at);
        // The list's head (kind, apiVersion, metadata, "items":[) is known safe now: send it.
        this.sawItems = true;
        this.inItems = true;
        this.keptItems = 0;
        this.emitEnvelope(this.flushedUpTo, at + 1);
        this.flushedUpTo = at + 1;
        return ROLE_ITEMS;
      case SLOT_ITEM_METADATA:
        return isArray ? ROLE_OTHER : ROLE_ITEM_METADATA;
      case SLOT_NAME:
        this.nameState = NAME_NOT_STRING;
        return ROLE_OTHER;
      case SLOT_EVENT_TYPE:
        return ROLE_OTHER; // typeStart stays -1: rejected when the event ends
      case SLOT_EVENT_OBJECT:
        if (isArray) throw new TenantViewError('a watch event\'s "object" is not a JSON object', this.bufOffset + at);
        this.objectStart = at;
        return ROLE_ITEM;
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

  /** Takes what walkItem() noted of the item, as onKey(), onScalar() and onClose() would have while scanning it. */
  private takeWalkedItem(): void {
    if (walked(FOUND.ambiguous) !== 0) this.ambiguous = true;
    this.nameState = walked(FOUND.nameState);
    if (this.nameState === NAME_STRING) {
      this.nameStart = walkedAt(FOUND.nameStart);
      this.nameEnd = walkedAt(FOUND.nameEnd);
      this.nameEscaped = walked(FOUND.nameEscaped) !== 0;
    }
    if (this.tenantMetadata === null) return;
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
      this.searchMarkers(walked(FOUND.marked + 3 * m), walkedAt(FOUND.marked + 3 * m + 1), walkedAt(FOUND.marked + 3 * m + 2));
    }
  }

  /** Notes whether a marker of the kind's marked spec member `member` stands in `buf[from, to)`, its value. */
  private searchMarkers(member: number, from: number, to: number): void {
    for (const marker of this.markers[member]!) if (indexByTail(this.skipEpoch, this.buf, from, to, marker) !== -1) this.markerFound = true;
  }

  private openSpanOf(span: number, at: number): number {
    this.spanStart[span] = at;
    this.openSpan = span;
    return ROLE_SPAN;
  }

  private spanHas(span: number): boolean {
    return (this.spansSeen & (1 << span)) !== 0;
  }

  /** A scalar value [start, end) of a slot. */
  private onScalar(slot: number, start: number, end: number, isString: boolean, escaped: boolean): void {
    switch (slot) {
      case SLOT_LIST:
        throw new TenantViewError('not a list: the response is not a JSON object', this.bufOffset + start);
      case SLOT_EVENT:
        throw new TenantViewError('a watch event is not a JSON object', this.bufOffset + start);
      case SLOT_OBJECT:
        throw new TenantViewError('not an object: the response is not a JSON object', this.bufOffset + start);
      case SLOT_ITEM:
        // Not an object, so it has no metadata: dropped.
        this.startUnit(start, false);
        this.finishListItem(end);
        return;
      case SLOT_ITEMS:
        // Go encodes an empty slice as null: a list without items.
        if (this.buf[start] !== 0x6e /* n */) throw new TenantViewError('not a list: "items" is not an array', this.bufOffset + start);
        this.sawItems = true;
        return;
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
      case SLOT_EVENT_OBJECT:
        throw new TenantViewError('a watch event\'s "object" is not a JSON object', this.bufOffset + start);
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

  private onClose(closed: number, parent: number, end: number): void {
    switch (closed) {
      case ROLE_LIST:
        if (!this.sawItems) throw new TenantViewError('not a list: the response has no "items"', this.bufOffset + end);
        return;
      case ROLE_ITEMS:
        this.inItems = false;
        return;
      case ROLE_ITEM:
        // A single object is judged and edited as a list item (it is the first, so no comma leads it).
        if (parent === ROLE_ITEMS || parent === ROLE_OBJECT_TOP) this.finishListItem(end);
        else if (parent === ROLE_EVENT) this.objectEnd = end;
        return;
      case ROLE_NON_OBJECT_ITEM:
        this.finishListItem(end);
        return;
      case ROLE_EVENT:
        this.finishWatchEvent(end);
        return;
      case ROLE_LABELS:
        this.labelsEnd = end;
        return;
      case ROLE_MARKED:
        this.searchMarkers(this.markedMember, this.spanStart[SPAN_MARKED]!, end);
        return;
      case ROLE_SPAN:
        this.spanEnd[this.openSpan] = end;
        this.spansSeen |= 1 << this.openSpan;
        return;
    }
  }

  /**
   * Decides the item's fate by its name field: -1 drop it, 0 keep it but its name needs decoding (escapes),
   * 1 keep it by cutting the 7 prefix bytes after the value's opening quote.
   */
  private nameVerdict(): number {
    if (this.nameKey === null) return 1;
    if (!this.unitIsObject || this.ambiguous || this.nameState !== NAME_STRING) return -1;
    if (this.nameEscaped) return 0;
    const from = this.nameStart + 1;
    // The value must be longer than the prefix: "<id>-" alone names nothing.
    if (this.nameEnd - 1 - from <= PREFIX_LENGTH) return -1;
    const buf = this.buf;
    const prefix = this.prefix;
    for (let k = 0; k < PREFIX_LENGTH; k++) if (buf[from + k] !== prefix[k]) return -1;
    return 1;
  }

  /** The tenant's name of an escaped upstream name as JSON, or null when it is not the tenant's. */
  private decodedTenantName(): Buffer | null {
    const upstream: unknown = JSON.parse(this.buf.toString('utf8', this.nameStart, this.nameEnd));
    const name = typeof upstream === 'string' ? toTenantName(upstream, this.tenant) : null;
    return name === null ? null : Buffer.from(JSON.stringify(name));
  }

  /**
   * Whether an item that passed the name check may skip the rule. With tenantMetadata: unless the tenant's id
   * followed by '-' or ':' stands where the generic rule would un-prefix it (owner references, a cluster-scoped
   * object's generateName, status condition messages), or a marker of the kind stands in its spec.
   */
  private fastPathApplies(): boolean {
    if (this.tenantMetadata === null) return this.rewriteItem === undefined;
    return !this.markerFound && !this.namesTenant(SPAN_OWNERS) && !this.namesTenant(SPAN_CONDITIONS) && !this.namesTenant(SPAN_GENERATE_NAME);
  }

  /** Whether a noted member holds the tenant's id followed by '-' or ':'. */
  private namesTenant(span: number): boolean {
    if (!this.spanHas(span)) return false;
    const { buf, tenantBytes: id } = this;
    const to = this.spanEnd[span]!;
    for (let i = indexWithin(this.skipEpoch, buf, this.spanStart[span]!, to, id); i !== -1; i = indexWithin(this.skipEpoch, buf, i + 1, to, id)) {
      const next = i + id.length < to ? buf[i + id.length] : -1;
      if (next === 0x2d /* - */ || next === 0x3a /* : */) return true;
    }
    return false;
  }

  /**
   * The edits that turn the unit into the tenant's view on the fast path (verdict from nameVerdict): the name,
   * and with tenantMetadata the label, owners and field sets. False when the object is not the tenant's.
   */
  private collectFastEdits(verdict: number): boolean {
    this.editFrom.length = this.editTo.length = this.editWith.length = 0;
    if (this.nameKey !== null) {
      if (verdict === 1) this.addEdit(this.nameStart + 1, this.nameStart + 1 + PREFIX_LENGTH, null);
      else {
        const name = this.decodedTenantName();
        if (name === null) return false;
        this.addEdit(this.nameStart, this.nameEnd, name);
      }
    }
    const view = this.tenantMetadata;
    if (view === null) return true;
    if (this.tenantLabelCount > 0) {
      if (!this.tenantLabelIsString || !this.tenantLabelIsOurs()) return false;
      // Removed with the labels map when it was the only label, as the rule does.
      if (this.labelEntries === 1) this.addMemberRemoval(this.labelsKeyStart, this.labelsEnd);
      else this.addMemberRemoval(this.tenantLabelKeyStart, this.tenantLabelEnd);
    }
    // Only the verdict counts: without the tenant's id in them (fastPathApplies), the rule has nothing to un-prefix.
    if (this.spanHas(SPAN_OWNERS) && !this.ownersAreTenants(this.spanStart[SPAN_OWNERS]!, this.spanEnd[SPAN_OWNERS]!)) return false;
    if (this.spanHas(SPAN_MANAGED_FIELDS)) {
      const [from, to] = [this.spanStart[SPAN_MANAGED_FIELDS]!, this.spanEnd[SPAN_MANAGED_FIELDS]!];
      const cuts = this.managedFieldsCuts(from, to);
      if (cuts !== null) for (let k = 0; k < cuts.length; k += 2) this.addEdit(cuts[k]!, cuts[k + 1]!, null);
      else {
        const entries = view.managedFields(JSON.parse(this.buf.toString('utf8', from, to)));
        this.addEdit(from, to, Buffer.from(JSON.stringify(entries)));
      }
    }
    return true;
  }

  /**
   * The rule's verdict on ownerReferences [from, to) that hold no tenant id: then it turns on each owner's apiVersion
   * and kind alone (a cluster-scoped owner's name cannot be the tenant's), so verdicts are kept per pair, compared
   * in place (no string per item). The pairs are read from the form Go writes (`[{"apiVersion":"…","kind":"…",…}]`,
   * no escapes); any other form is parsed and given to the rule whole.
   */
  private ownersAreTenants(from: number, to: number): boolean {
    const buf = this.buf;
    const parsed = (): boolean => this.tenantMetadata!.ownerReferences(JSON.parse(buf.toString('utf8', from, to))) !== null;
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
      if (!this.ownerVerdict(versionStart, versionEnd, kindStart, kindEnd)) return false;
      at = i + 1;
      if (buf[at] === 0x2c /* , */) at++;
      else if (at !== to - 1) return parsed();
    }
    return true;
  }

  /** The rule's verdict on one owner of this apiVersion and kind, remembered per pair. */
  private ownerVerdict(versionStart: number, versionEnd: number, kindStart: number, kindEnd: number): boolean {
    const buf = this.buf;
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
    const verdict = this.tenantMetadata!.ownerReferences([owner]) !== null;
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
  private addMemberRemoval(keyStart: number, valueEnd: number): void {
    const buf = this.buf;
    let after = valueEnd;
    while (CHAR_CLASS[buf[after]!] === C_SPACE) after++;
    if (buf[after] === 0x2c /* , */) return this.addEdit(keyStart, after + 1, null);
    let before = keyStart - 1;
    while (CHAR_CLASS[buf[before]!] === C_SPACE) before--;
    this.addEdit(buf[before] === 0x2c ? before : keyStart, valueEnd, null);
  }

  private tenantLabelIsOurs(): boolean {
    const { buf, tenantLabelStart: from, tenantLabelEnd: to } = this;
    if (this.tenantLabelEscaped) return JSON.parse(buf.toString('utf8', from, to)) === this.tenant;
    const value = this.tenantValue;
    return to - from === value.length && startsWith(buf, from, value);
  }

  /**
   * Cuts (flat [from, to) pairs, in order) removing every `"f:kubezoo.io/tenant":{}` from managedFields, with the
   * field sets that held nothing else (fieldsV1 itself stays), as the rule does; null when the bytes are not the
   * plain compact shape kube-apiserver writes, or two cuts would share a comma: then the rule does it.
   */
  private managedFieldsCuts(floor: number, end: number): number[] | null {
    const buf = this.buf;
    const cuts: number[] = [];
    for (
      let at = indexByTail(this.skipEpoch, buf, floor, end, MANAGED_TENANT_LABEL_NEEDLE);
      at !== -1;
      at = indexByTail(this.skipEpoch, buf, at + 1, end, MANAGED_TENANT_LABEL_NEEDLE)
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

  /** Emits [from, to) of the unit with the collected edits applied. */
  private emitEdited(from: number, to: number): void {
    let at = from;
    for (let k = 0; k < this.editFrom.length; k++) {
      this.emit(at, this.editFrom[k]!);
      const replacement = this.editWith[k];
      at = this.editTo[k]!;
      if (replacement !== null && replacement !== undefined) this.emitBytes(replacement, at);
    }
    this.emit(at, to);
  }

  /** The caller's rewrite of [from, to), or null to drop it. */
  private rewritten(from: number, to: number): Buffer | null {
    const result: unknown = this.rewriteItem!(JSON.parse(this.buf.toString('utf8', from, to)));
    if (result === null) return null;
    const json = JSON.stringify(result) as string | undefined;
    if (json === undefined) throw new TypeError('rewriteItem returned undefined (null drops an item)');
    return Buffer.from(json);
  }

  private finishListItem(end: number): void {
    const start = this.unitStart;
    this.unitStart = -1;
    this.flushedUpTo = end;
    const verdict = this.nameVerdict();
    if (verdict < 0) {
      if (this.single && this.nameKey !== null && (this.ambiguous || this.nameState !== NAME_STRING || this.nameEnd - this.nameStart === 2)) {
        this.uncheckedObject = true;
      }
      return;
    }
    if (this.fastPathApplies()) {
      if (!this.collectFastEdits(verdict)) return;
      if (this.keptItems + this.itemsBefore > 0) this.emitBytes(COMMA, start);
      this.emitEdited(start, end);
    } else {
      if (verdict === 0 && this.decodedTenantName() === null) return;
      const item = this.rewritten(start, end);
      if (item === null) return;
      if (this.keptItems + this.itemsBefore > 0) this.emitBytes(COMMA, end);
      this.emitBytes(item, end);
    }
    this.keptItems++;
  }

  private finishWatchEvent(end: number): void {
    const start = this.unitStart;
    this.unitStart = -1;
    this.flushedUpTo = end;
    if (this.typeStart < 0) throw new TenantViewError('a watch event has no string "type"', this.bufOffset + start);
    if (this.objectStart < 0) throw new TenantViewError('a watch event has no "object"', this.bufOffset + start);
    const type = this.eventType();
    if (type === TYPE_BOOKMARK && this.nameState === NAME_MISSING) {
      // A bookmark carries only a resourceVersion (and annotations): nothing of any tenant's. One that names
      // something (never seen from kube-apiserver) gets the check below like any event.
      this.emit(start, end);
    } else if (type === TYPE_ERROR) {
      // An ERROR event's object is a Status, not a stored object.
      if (this.rewriteStatus === undefined) this.emit(start, end);
      else {
        const status = JSON.stringify(this.rewriteStatus(JSON.parse(this.buf.toString('utf8', this.objectStart, this.objectEnd)))) as string | undefined;
        if (status === undefined) throw new TypeError('rewriteStatus returned undefined');
        this.emit(start, this.objectStart);
        this.emitBytes(Buffer.from(status), this.objectEnd);
        this.emit(this.objectEnd, end);
      }
    } else {
      const verdict = this.nameVerdict();
      if (verdict < 0) return;
      if (this.fastPathApplies()) {
        if (!this.collectFastEdits(verdict)) return;
        this.emitEdited(start, end);
      } else {
        if (verdict === 0 && this.decodedTenantName() === null) return;
        const object = this.rewritten(this.objectStart, this.objectEnd);
        if (object === null) return;
        this.emit(start, this.objectStart);
        this.emitBytes(object, this.objectEnd);
        this.emit(this.objectEnd, end);
      }
    }
    this.emitBytes(NEWLINE, end);
    this.keptEvents++;
  }

  /** TYPE_BOOKMARK, TYPE_ERROR, or null for any other type (ADDED, MODIFIED, DELETED: the tenant check applies). */
  private eventType(): Buffer | null {
    const buf = this.buf;
    let from = this.typeStart + 1;
    let to = this.typeEnd - 1;
    let text: Buffer = buf;
    if (this.typeEscaped) {
      text = Buffer.from(JSON.parse(buf.toString('utf8', this.typeStart, this.typeEnd)) as string);
      from = 0;
      to = text.length;
    }
    if (to - from === TYPE_BOOKMARK.length && text.compare(TYPE_BOOKMARK, 0, TYPE_BOOKMARK.length, from, to) === 0) return TYPE_BOOKMARK;
    if (to - from === TYPE_ERROR.length && text.compare(TYPE_ERROR, 0, TYPE_ERROR.length, from, to) === 0) return TYPE_ERROR;
    return null;
  }
}

/**
 * Fails `transform` when the stream piped into it closes before its end. Node's HTTP/2 client stream, when its
 * session's socket closes (the apiserver killed, the connection cut), ends its readable side with bytes still buffered
 * and is destroyed: it never emits 'end', and stream.pipeline waits for that 'end' (an ended source that closes early
 * is not an error to it), so the client's answer would hang, with its worker task and flow-control seat.
 */
export function failWhenSourceCut(transform: Transform): void {
  transform.once('pipe', (source: Readable) => {
    source.once('close', () => {
      if (!source.readableEnded && !transform.destroyed) transform.destroy(new Error('the upstream answer broke off before its end'));
    });
  });
}

/**
 * A Transform over one TenantViewScanner: upstream bytes in, the tenant's view out, with backpressure. It counts what
 * passed and the time spent scanning (two clock reads per chunk), for metrics and the request log.
 */
class TenantViewTransform extends Transform {
  readonly scanner: TenantViewScanner;
  bytesIn = 0;
  bytesOut = 0;
  scanSeconds = 0;

  constructor(kind: 'list' | 'watch', spec: TenantViewSpec, itemsOnly?: ItemsOnly) {
    super();
    this.scanner = new TenantViewScanner(kind, spec, itemsOnly);
    failWhenSourceCut(this);
  }

  get eventsOut(): number {
    return this.scanner.eventsKept;
  }

  // (A paused client holds the upstream back here at most one item late: Transform holds back the write that
  // pushed while the output is full, and chunks inside an item push nothing until the item ends.)
  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytesIn += chunk.length;
    pushThrough(this, this.scanner, chunk, callback);
  }

  override _flush(callback: TransformCallback): void {
    pushThrough(this, this.scanner, null, callback);
  }
}

/** A list response (`{"kind":"...List","metadata":{...},"items":[...]}`) in, the tenant's view of it out. */
export class ListRewriter extends TenantViewTransform {
  constructor(spec: TenantViewSpec, itemsOnly?: ItemsOnly) {
    super('list', spec, itemsOnly);
  }
}

/** A JSON watch stream (one event per line) in, the tenant's events out, one per line. */
export class WatchRewriter extends TenantViewTransform {
  constructor(spec: TenantViewSpec) {
    super('watch', spec);
  }
}

/**
 * Whether the output is built over a chunk written to the stream (writeOwned): when the chunk is at least a quarter
 * of the memory it lies in. An HTTP/2 DATA frame is a view into the session's read buffer, shared with other streams
 * (measured: 16 KiB frames in 32-64 KiB buffers, a 300-byte event in a 33 KB one), which the output then keeps
 * alive until it is sent: for a watch's small events, longer than the events themselves.
 */
function outputOverChunk(chunk: Buffer): boolean {
  return chunk.length * 4 >= chunk.buffer.byteLength;
}

/** Rewrites a chunk written to the stream (the stream's own from then on) or, with null, ends. */
function pushThrough(stream: TenantViewTransform, scanner: TenantViewScanner, chunk: Buffer | null, callback: TransformCallback): void {
  let out: Buffer | Buffer[];
  const started = performance.now();
  try {
    out = chunk === null ? scanner.finish() : outputOverChunk(chunk) ? scanner.writeOwned(chunk) : scanner.write(chunk);
  } catch (error) {
    callback(error as Error);
    return;
  } finally {
    stream.scanSeconds += (performance.now() - started) / 1000;
  }
  if (Array.isArray(out)) for (const part of out) pushOut(stream, part);
  else pushOut(stream, out);
  callback();
}

function pushOut(stream: TenantViewTransform, out: Buffer): void {
  stream.bytesOut += out.length;
  if (out.length > 0) stream.push(out);
}

/** The tenant's view of a whole list response held in memory. Throws TenantViewError. */
export function rewriteListBuffer(upstream: Buffer, spec: TenantViewSpec): Buffer {
  return rewriteWhole(new TenantViewScanner('list', spec), upstream);
}

/** The tenant's view of a whole JSON watch stream held in memory. Throws TenantViewError. */
export function rewriteWatchBuffer(upstream: Buffer, spec: TenantViewSpec): Buffer {
  return rewriteWhole(new TenantViewScanner('watch', spec), upstream);
}

function rewriteWhole(scanner: TenantViewScanner, upstream: Buffer): Buffer {
  const body = scanner.write(upstream);
  const tail = scanner.finish();
  return tail.length === 0 ? body : Buffer.concat([body, tail]);
}

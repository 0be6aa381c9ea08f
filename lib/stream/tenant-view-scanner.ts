// The incremental scanner that turns upstream list and watch JSON, and single objects, into a tenant's view, holding
// one item at most: it drives the tokenizer, notes each item, judges it, and frames what is kept. Never emits an
// object outside the tenant's prefix, nor any byte of an item before the whole item has been checked.
import { ITEM_CUT, containerEnd, newSkipEpoch, walkItem } from './json-skip.ts';
import {
  ALLOW_CLOSE_ARRAY,
  ALLOW_CLOSE_OBJECT,
  ALLOW_COLON,
  ALLOW_COMMA,
  ALLOW_KEY,
  ALLOW_VALUE,
  CHAR_CLASS,
  C_LITERAL,
  C_NUMBER,
  C_SPACE,
  EXPECT_COLON,
  EXPECT_COMMA_OR_CLOSE,
  EXPECT_END,
  EXPECT_KEY,
  EXPECT_KEY_OR_CLOSE,
  EXPECT_VALUE,
  EXPECT_VALUE_OR_CLOSE,
  describeByte,
  malformedJson,
  plainRunEnd,
  scanLiteral,
  scanNumber,
  scanStringRest,
} from './json-tokens.ts';
import {
  ItemNotes,
  KEY_ITEMS,
  KEY_OBJECT,
  KEY_TYPE,
  keyIs,
  ROLE_EVENT,
  ROLE_ITEM,
  ROLE_ITEMS,
  ROLE_LIST,
  ROLE_LIST_TOP,
  ROLE_NON_OBJECT_ITEM,
  ROLE_OBJECT_TOP,
  ROLE_OTHER,
  ROLE_WATCH_TOP,
  SLOT_EVENT,
  SLOT_EVENT_OBJECT,
  SLOT_EVENT_TYPE,
  SLOT_ITEM,
  SLOT_ITEMS,
  SLOT_LIST,
  SLOT_NONE,
  SLOT_OBJECT,
} from './item-notes.ts';
import { ItemFraming } from './item-framing.ts';
import { ViewOutput, listApiVersionOf } from './view-output.ts';
import { TenantViewError, type ItemsOnly, type TenantViewSpec } from './tenant-view-spec.ts';
import { isTenantId } from '../convert/prefix.ts';

// Far above any object etcd accepts (1.5 MiB by default), far below what would hurt the process.
const DEFAULT_MAX_ITEM_BYTES = 16 * 1024 * 1024;

const EMPTY = Buffer.alloc(0);
/** Bytes of a chunk first copied behind held bytes; doubled until the held item ends. */
const FIRST_PIECE = 4096;
/**
 * An item cut by the chunk's end is walked again whole with more bytes (walkItem) while this much of it has come;
 * past that, the scanner goes on through it here, so a big item is not walked again at every piece.
 */
const REWALK_LIMIT = 32 * 1024;

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
  private readonly maxItemBytes: number;
  /** What is noted of the item at hand; what becomes of it once whole; where what is kept goes. */
  private readonly item: ItemNotes;
  private readonly framing: ItemFraming;
  private readonly output: ViewOutput;

  // The bytes being scanned: the chunk itself, or `work` holding retained bytes followed by the chunk.
  private buf: Buffer = EMPTY;
  private end = 0;
  private work: Buffer = EMPTY;
  private retained = 0;
  /** Offset in the whole response of buf[0], for error messages. */
  private bufOffset = 0;
  private pos = 0;
  private failed: TenantViewError | null = null;
  /** Set while completing held bytes: scan() returns when the held item ends. */
  private stopAtUnitEnd = false;
  private stoppedAtUnitEnd = false;

  // Tokenizer state.
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

  // Framing: bytes before `flushedUpTo` have been emitted or dropped.
  private flushedUpTo = 0;
  private sawItems = false;
  private inItems = false;
  /** Where the current item (list) or event (watch) starts, or -1 between them. */
  private unitStart = -1;

  /** The current scan's epoch for json-skip.ts: its window of `buf` serves the searches at the item's end too. */
  private skipEpoch = 0;
  /** The keys walkItem() looks for in this scanner's items, or null: then it walks them itself. */
  private readonly itemKeys: Uint8Array | null;

  constructor(kind: 'list' | 'watch' | 'object', spec: TenantViewSpec, itemsOnly?: ItemsOnly) {
    if (!isTenantId(spec.tenant)) throw new TypeError(`not a tenant id: ${JSON.stringify(spec.tenant)}`);
    if (spec.nameField === null && spec.rewriteItem === undefined) {
      throw new TypeError('nameField null needs rewriteItem: without either, every object would pass unchecked');
    }
    this.watch = kind === 'watch';
    this.single = kind === 'object';
    this.expected = this.single ? 'object' : 'list';
    this.maxItemBytes = spec.maxItemBytes ?? DEFAULT_MAX_ITEM_BYTES;
    if ((spec.tenantMetadata ?? null) !== null && (spec.nameField === null || spec.rewriteItem === undefined)) {
      throw new TypeError('tenantMetadata needs a nameField and rewriteItem (for the items the fast path leaves to it)');
    }
    this.item = ItemNotes.forSpec(spec);
    this.output = new ViewOutput(listApiVersionOf(spec.listApiGroup), itemsOnly);
    this.framing = new ItemFraming(spec, this.single, this.item, this.output, itemsOnly);
    this.itemKeys = this.item.walkKeys();
  }

  /** Scans one chunk; returns the bytes that are ready to send (possibly none). */
  write(chunk: Buffer): Buffer {
    if (this.failed !== null) throw this.failed;
    if (chunk.length === 0) return EMPTY; // the held bytes were scanned as far as they go
    this.scanChunk(chunk, false);
    return this.output.take();
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
    return this.output.takeParts();
  }

  private scanChunk(chunk: Buffer, owned: boolean): void {
    try {
      // Bytes held from the last chunk (an item it cut) are completed from this chunk's head, in growing pieces
      // copied after them; once nothing is held, the rest of the chunk is scanned where it lies. Copying the whole
      // chunk behind them copied nearly every byte a second time (bench: 38.8 of 38.9 MB; now 6.9 MB).
      this.output.sizeHint = this.retained + chunk.length + 1024;
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
        if (owned) this.output.overChunk(this.buf);
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
      return this.output.take();
    } catch (error) {
      throw this.fail(error);
    }
  }

  private fail(error: unknown): TenantViewError {
    this.output.discard();
    this.failed =
      error instanceof TenantViewError
        ? error
        : new TenantViewError(`rewriting failed: ${error instanceof Error ? error.message : String(error)}`, this.bufOffset + this.pos);
    return this.failed;
  }

  private malformed(what: string, at: number): TenantViewError {
    return malformedJson(what, this.bufOffset + at);
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
    this.output.emitEnvelope(this.buf, this.flushedUpTo, to);
    this.flushedUpTo = to;
  }

  /** Items only, once finished: the list without its items (`"items":[]`), e.g. for its metadata. */
  envelope(): Buffer {
    return this.output.envelope();
  }

  /** The items emitted so far. */
  get itemsKept(): number {
    return this.framing.keptItems;
  }

  /**
   * A single object ('object') left out because its name field could not be checked: missing, not a non-empty string,
   * or written twice (ambiguous). Not a stored object of the kind (a Status, a Table, a list) or an odd one: where
   * the parser and the rule would decide otherwise, the caller asks them instead.
   */
  get objectUnchecked(): boolean {
    return this.framing.uncheckedObject;
  }

  /** The watch events emitted so far (bookmarks and errors included). */
  get eventsKept(): number {
    return this.framing.keptEvents;
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
      this.item.shift(from);
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
      let close = plainRunEnd(buf, view, this.stringResume, end);
      if (close >= end || buf[close] !== 0x22) {
        if (close < end) this.stringEscaped = true; // a backslash: a control byte throws
        close = scanStringRest(buf, view, close, end, this.bufOffset);
        if (close < 0) {
          this.stringResume = -1 - close;
          this.pos = end;
          return;
        }
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
          escaped = close < end; // a backslash: a control byte throws
          close = scanStringRest(buf, view, close, end, this.bufOffset);
          if (close < 0) {
            // Cut by the chunk's end: go on inside the string with the next chunk.
            this.inString = true;
            this.stringStart = pos;
            this.stringIsKey = isKey;
            this.stringResume = -1 - close;
            this.stringEscaped = escaped;
            pos = end;
            break;
          }
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
            this.item.takeWalked(buf, epoch);
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
      const tokenEnd = kind === C_NUMBER ? scanNumber(buf, pos, end, this.bufOffset) : scanLiteral(buf, pos, end, this.bufOffset);
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

  // The hooks of the roles that frame items (the list, its items, watch events) are here; those inside an item
  // are the notes' (ItemNotes).

  private onKey(role: number, start: number, close: number, escaped: boolean): void {
    const item = this.item;
    if (role === ROLE_LIST) {
      if (keyIs(this.buf, start, close, escaped, KEY_ITEMS)) this.slot = SLOT_ITEMS;
    } else if (role === ROLE_EVENT) {
      if (keyIs(this.buf, start, close, escaped, KEY_TYPE)) {
        if (++item.typeCount > 1) throw new TenantViewError('a watch event has two "type" keys', this.bufOffset + start);
        this.slot = SLOT_EVENT_TYPE;
      } else if (keyIs(this.buf, start, close, escaped, KEY_OBJECT)) {
        if (++item.objectCount > 1) throw new TenantViewError('a watch event has two "object" keys', this.bufOffset + start);
        this.slot = SLOT_EVENT_OBJECT;
      }
    } else {
      const slot = item.onKey(role, this.buf, start, close, escaped);
      if (slot !== SLOT_NONE) this.slot = slot;
    }
  }

  private startUnit(at: number, isObject: boolean): void {
    this.unitStart = at;
    this.item.start(isObject);
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
        this.framing.keptItems = 0;
        this.output.emitEnvelope(this.buf, this.flushedUpTo, at + 1);
        this.flushedUpTo = at + 1;
        return ROLE_ITEMS;
      case SLOT_EVENT_OBJECT:
        if (isArray) throw new TenantViewError('a watch event\'s "object" is not a JSON object', this.bufOffset + at);
        this.item.objectStart = at;
        return ROLE_ITEM;
      default:
        return this.item.onOpen(slot, isArray, at);
    }
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
      case SLOT_EVENT_OBJECT:
        throw new TenantViewError('a watch event\'s "object" is not a JSON object', this.bufOffset + start);
      default:
        this.item.onScalar(slot, start, end, isString, escaped);
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
        else if (parent === ROLE_EVENT) this.item.objectEnd = end;
        return;
      case ROLE_NON_OBJECT_ITEM:
        this.finishListItem(end);
        return;
      case ROLE_EVENT:
        this.finishWatchEvent(end);
        return;
      default:
        this.item.onClose(closed, this.buf, this.skipEpoch, end);
    }
  }

  private finishListItem(end: number): void {
    const start = this.unitStart;
    this.unitStart = -1;
    this.flushedUpTo = end;
    this.framing.listItem(this.buf, this.skipEpoch, start, end);
  }

  private finishWatchEvent(end: number): void {
    const start = this.unitStart;
    this.unitStart = -1;
    this.flushedUpTo = end;
    this.framing.watchEvent(this.buf, this.skipEpoch, this.bufOffset, start, end);
  }
}

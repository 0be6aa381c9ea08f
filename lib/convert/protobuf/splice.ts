// Allocation-free wire tools for the hot path of protobuf answers: a reusable field scanner, a list of splices over one
// source buffer (deletions and re-encoded heads) and an output buffer written once per chunk. Never judges an object;
// never accepts bytes the MessageEdit parser would refuse (anything it is unsure of is reported, for the careful path).
import { LENGTH_DELIMITED, varintAt, varintEnd } from './wire.ts';

/** The read position of `shortVarintAt` (a module variable: no object per varint). */
let position = 0;

/**
 * The varint at `at` (before `to`) when it is at most 5 bytes (tags and lengths below 2^35), leaving `position` after
 * it; -1 when cut off or longer: the careful path decides then.
 */
function shortVarintAt(bytes: Buffer, at: number, to: number): number {
  const value = varintAt(bytes, at, to);
  if (value < 0 || varintEnd - at > 5) return -1;
  position = varintEnd;
  return value;
}

/** Bytes of `value` as a varint. */
export function varintSize(value: number): number {
  if (value < 0x80) return 1;
  if (value < 0x4000) return 2;
  if (value < 0x200000) return 3;
  if (value < 0x10000000) return 4;
  let size = 5;
  for (let rest = Math.floor(value / 0x800000000); rest > 0; rest = Math.floor(rest / 0x80)) size++;
  return size;
}

/** Bytes of a length-delimited field's head (tag and length), encoded minimally. */
export function headSize(number: number, length: number): number {
  return varintSize(number * 8 + LENGTH_DELIMITED) + varintSize(length);
}

/** `single` found the field more than once or with another wire type than length-delimited. */
export const ANOMALY = -2;

/** The fields of one message, as offsets in parallel arrays reused from message to message of a level. */
export class FieldScan {
  count = 0;
  number = new Int32Array(32);
  wireType = new Int32Array(32);
  start = new Int32Array(32);
  valueStart = new Int32Array(32);
  end = new Int32Array(32);

  /** Reads the fields of `bytes` in [from, to); false on anything the careful parser would refuse or this one does not read. */
  scan(bytes: Buffer, from: number, to: number): boolean {
    let n = 0;
    let at = from;
    while (at < to) {
      const start = at;
      let tag = bytes[at]!;
      if (tag < 0x80) at++;
      else {
        tag = shortVarintAt(bytes, at, to);
        // Field numbers up to MAX_FIELD_NUMBER: tags below 2^32, where `>>>` and `&` read the number and wire type.
        if (tag < 0 || tag > 0xffffffff) return false;
        at = position;
      }
      const number = tag >>> 3;
      const wireType = tag & 7;
      if (number < 1) return false;
      let valueStart = at;
      if (wireType === LENGTH_DELIMITED) {
        if (at >= to) return false;
        let length = bytes[at]!;
        if (length < 0x80) valueStart = at + 1;
        else {
          length = shortVarintAt(bytes, at, to);
          if (length < 0) return false;
          valueStart = position;
        }
        if (length > to - valueStart) return false;
        at = valueStart + length;
      } else if (wireType === 0) {
        let k = 0;
        while (k < 10 && at + k < to && bytes[at + k]! >= 0x80) k++;
        if (k === 10 || at + k >= to) return false;
        at += k + 1;
      } else if (wireType === 1) {
        if (to - at < 8) return false;
        at += 8;
      } else if (wireType === 5) {
        if (to - at < 4) return false;
        at += 4;
      } else return false;
      if (n === this.number.length) this.grow();
      this.number[n] = number;
      this.wireType[n] = wireType;
      this.start[n] = start;
      this.valueStart[n] = valueStart;
      this.end[n] = at;
      n++;
    }
    this.count = n;
    return true;
  }

  /** The index of the one length-delimited field `number`, -1 when absent, ANOMALY when repeated or of another wire type. */
  single(number: number): number {
    let found = -1;
    for (let i = 0; i < this.count; i++) {
      if (this.number[i] !== number) continue;
      if (found !== -1 || this.wireType[i] !== LENGTH_DELIMITED) return ANOMALY;
      found = i;
    }
    return found;
  }

  /** Whether every occurrence of `number` is length-delimited (what MessageEdit.all demands before it reads any). */
  allDelimited(number: number): boolean {
    for (let i = 0; i < this.count; i++) if (this.number[i] === number && this.wireType[i] !== LENGTH_DELIMITED) return false;
    return true;
  }

  private grow(): void {
    const size = this.number.length * 2;
    for (const key of ['number', 'wireType', 'start', 'valueStart', 'end'] as const) {
      const larger = new Int32Array(size);
      larger.set(this[key]);
      this[key] = larger;
    }
  }
}

export function isAsciiRange(bytes: Buffer, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (bytes[i]! >= 0x80) return false;
  return true;
}

/** Whether bytes[from, to) equal `value`. */
export function rangeEquals(bytes: Buffer, from: number, to: number, value: Buffer): boolean {
  if (to - from !== value.length) return false;
  for (let i = 0; i < value.length; i++) if (bytes[from + i] !== value[i]) return false;
  return true;
}

/** Where `needle` first occurs wholly inside bytes[from, to), or -1. */
export function rangeIndexOf(bytes: Buffer, needle: Buffer, from: number, to: number): number {
  if (to - from < needle.length) return -1;
  // Bounded by a view when the rest of the buffer is longer than the range: indexOf knows no end.
  if (bytes.length - to > to - from) {
    const at = bytes.subarray(from, to).indexOf(needle);
    return at === -1 ? -1 : from + at;
  }
  const at = bytes.indexOf(needle, from);
  return at !== -1 && at + needle.length <= to ? at : -1;
}

/**
 * Where `needle` first occurs wholly inside bytes[from, to), as rangeIndexOf, remembering the occurrence found: ranges
 * asked in order (the items of a chunk) search each byte of their buffer once, with no view allocated (fast when the
 * needle's first byte is rare: the native search finds it by memchr). The buffer is held until `forget`, which must
 * come before its bytes change (the streams forget after each buffer).
 */
export class ForwardSearch {
  private readonly needle: Buffer;
  private bytes: Buffer | undefined;
  /** No occurrence starts in [searchedFrom, found) of `bytes`; `found` is one, or -1: none from searchedFrom on. */
  private searchedFrom = 0;
  private found = -1;

  constructor(needle: Buffer) {
    this.needle = needle;
  }

  indexIn(bytes: Buffer, from: number, to: number): number {
    const length = this.needle.length;
    if (to - from < length) return -1;
    if (bytes !== this.bytes || from < this.searchedFrom || (this.found !== -1 && this.found < from)) {
      this.bytes = bytes;
      this.searchedFrom = from;
      this.found = bytes.indexOf(this.needle, from);
    }
    const found = this.found;
    return found !== -1 && found + length <= to ? found : -1;
  }

  forget(): void {
    this.bytes = undefined;
  }
}

/**
 * Where `needle` first occurs wholly inside bytes[from, to), as rangeIndexOf, by Horspool's skips in JavaScript: no
 * view and no native call, for short ranges searched for a long needle whose bytes are few of the text's (most steps
 * skip the needle's length).
 */
export class SkipSearch {
  private readonly needle: Buffer;
  /** How far the window moves when its last byte is this one. */
  private readonly shift = new Uint8Array(256);

  constructor(needle: Buffer) {
    if (needle.length === 0 || needle.length > 255) throw new RangeError('SkipSearch: a needle of 1 to 255 bytes');
    this.needle = needle;
    const last = needle.length - 1;
    this.shift.fill(needle.length);
    for (let k = 0; k < last; k++) this.shift[needle[k]!] = last - k;
  }

  indexIn(bytes: Buffer, from: number, to: number): number {
    const needle = this.needle;
    const last = needle.length - 1;
    const lastByte = needle[last]!;
    const shift = this.shift;
    for (let at = from + last; at < to; at += shift[bytes[at]!]!) {
      if (bytes[at] !== lastByte) continue;
      const start = at - last;
      let k = 0;
      while (k < last && bytes[start + k] === needle[k]) k++;
      if (k === last) return start;
    }
    return -1;
  }
}

/** Whether `needle` occurs wholly inside bytes[from, to). */
export function rangeIncludes(bytes: Buffer, needle: Buffer, from: number, to: number): boolean {
  return rangeIndexOf(bytes, needle, from, to) !== -1;
}

const DELETE = 0;
const HEAD = 1;
const HEAD_STRING = 2;

/**
 * Edits of one source buffer, each a range replaced by nothing, by a length-delimited head (tag and new length) or by a
 * whole string field (head and ASCII text): what a tenant view does to an object (names shortened, entries and bytes
 * cut). Reused item after item; `reset` before each.
 */
export class Splices {
  count = 0;
  private start = new Int32Array(32);
  private end = new Int32Array(32);
  private kind = new Int32Array(32);
  private number = new Int32Array(32);
  private length = new Int32Array(32);
  private text: (string | undefined)[] = [];

  reset(): void {
    this.count = 0;
  }

  /** Back to `count` splices (the ones added since are inside a range now deleted whole). */
  truncate(count: number): void {
    this.count = count;
  }

  /** Replaces splice `index` (a placeholder pushed to keep the splices in order) by a head, as `head`. */
  setHead(index: number, start: number, end: number, number: number, length: number): void {
    this.start[index] = start;
    this.end[index] = end;
    this.kind[index] = HEAD;
    this.number[index] = number;
    this.length[index] = length;
    this.text[index] = undefined;
  }

  delete(start: number, end: number): void {
    this.push(start, end, DELETE, 0, 0, undefined);
  }

  /** Replaces the head at [start, end) by field `number`'s minimal head for a payload of `length` bytes. */
  head(start: number, end: number, number: number, length: number): void {
    this.push(start, end, HEAD, number, length, undefined);
  }

  /** Replaces the field at [start, end) by string field `number` holding `text` (ASCII). */
  stringField(start: number, end: number, number: number, text: string): void {
    this.push(start, end, HEAD_STRING, number, text.length, text);
  }

  /** Writes bytes[from, to) with the splices (all inside it) applied. */
  writeTo(out: Output, bytes: Buffer, from: number, to: number): void {
    this.sort();
    let at = from;
    for (let i = 0; i < this.count; i++) {
      const start = this.start[i]!;
      out.copy(bytes, at, start);
      const kind = this.kind[i];
      if (kind !== DELETE) {
        out.head(this.number[i]!, this.length[i]!);
        if (kind === HEAD_STRING) out.latin1(this.text[i]!);
      }
      at = this.end[i]!;
    }
    out.copy(bytes, at, to);
  }

  private push(start: number, end: number, kind: number, number: number, length: number, text: string | undefined): void {
    const n = this.count;
    if (n === this.start.length) this.grow();
    this.start[n] = start;
    this.end[n] = end;
    this.kind[n] = kind;
    this.number[n] = number;
    this.length[n] = length;
    this.text[n] = text;
    this.count = n + 1;
  }

  /** By start (insertion sort: a handful of splices, mostly in order already). */
  private sort(): void {
    for (let i = 1; i < this.count; i++) {
      const start = this.start[i]!;
      if (start >= this.start[i - 1]!) continue;
      const end = this.end[i]!;
      const kind = this.kind[i]!;
      const number = this.number[i]!;
      const length = this.length[i]!;
      const text = this.text[i];
      let j = i - 1;
      for (; j >= 0 && this.start[j]! > start; j--) {
        this.start[j + 1] = this.start[j]!;
        this.end[j + 1] = this.end[j]!;
        this.kind[j + 1] = this.kind[j]!;
        this.number[j + 1] = this.number[j]!;
        this.length[j + 1] = this.length[j]!;
        this.text[j + 1] = this.text[j];
      }
      this.start[j + 1] = start;
      this.end[j + 1] = end;
      this.kind[j + 1] = kind;
      this.number[j + 1] = number;
      this.length[j + 1] = length;
      this.text[j + 1] = text;
    }
  }

  private grow(): void {
    const size = this.start.length * 2;
    for (const key of ['start', 'end', 'kind', 'number', 'length'] as const) {
      const larger = new Int32Array(size);
      larger.set(this[key]);
      this[key] = larger;
    }
  }
}

/** Copies up to this many bytes byte by byte. */
const SHORT_COPY = 48;

/**
 * An output buffer filled front to back, grown (copied) when a write does not fit; `take` hands out what was written.
 * A slab output (`slab` > 0) hands out successive slices of one buffer (`takeSlice`) and starts a new buffer when one is
 * full: a handed-out slice is never written again (its reader keeps it), and a chunk's output costs no allocation.
 */
export class Output {
  buffer: Buffer;
  /** Where the output starts (after room kept free in front) and where the next byte goes. */
  base: number;
  position: number;
  /** Room kept free in front of `base` (moved along when the buffer grows). */
  private readonly room: number;
  private readonly slab: number;

  /** `slab`: the size of a slab output's buffers (0: a single output, grown by doubling). */
  constructor(capacity: number, base = 0, slab = 0) {
    this.buffer = Buffer.allocUnsafe(Math.max(capacity, base + 16));
    this.base = base;
    this.position = base;
    this.room = base;
    this.slab = slab;
  }

  get length(): number {
    return this.position - this.base;
  }

  ensure(bytes: number): void {
    if (this.position + bytes <= this.buffer.length) return;
    // Only what was not handed out moves: from the room in front of `base` on.
    const from = this.base - this.room;
    const live = this.position - from;
    // A slab grows to `slab` by steps, so a short answer does not take a whole slab.
    const size = this.slab > 0 ? Math.min(this.slab, this.buffer.length * 4) : this.buffer.length * 2;
    const larger = Buffer.allocUnsafe(Math.max(size, live + bytes));
    this.buffer.copy(larger, 0, from, this.position);
    this.buffer = larger;
    this.base -= from;
    this.position = live;
  }

  /** source[from, to). */
  copy(source: Buffer, from: number, to: number): void {
    if (to <= from) return;
    this.ensure(to - from);
    if (to - from > SHORT_COPY) {
      this.position += source.copy(this.buffer, this.position, from, to);
      return;
    }
    // A few bytes between two splices: a loop is cheaper than the native call.
    const buffer = this.buffer;
    let at = this.position;
    for (let i = from; i < to; i++) buffer[at++] = source[i]!;
    this.position = at;
  }

  bytes(source: Buffer): void {
    this.copy(source, 0, source.length);
  }

  byte(value: number): void {
    this.ensure(1);
    this.buffer[this.position++] = value;
  }

  uint32(value: number): void {
    this.ensure(4);
    const buffer = this.buffer;
    const at = this.position;
    buffer[at] = value >>> 24;
    buffer[at + 1] = value >>> 16;
    buffer[at + 2] = value >>> 8;
    buffer[at + 3] = value;
    this.position = at + 4;
  }

  varint(value: number): void {
    this.ensure(10);
    const buffer = this.buffer;
    let at = this.position;
    // Integer arithmetic below 2^31 (lengths, tags): no float division.
    if (value < 0x80000000) {
      while (value >= 0x80) {
        buffer[at++] = (value & 0x7f) | 0x80;
        value >>>= 7;
      }
      buffer[at++] = value;
      this.position = at;
      return;
    }
    while (value >= 0x80) {
      buffer[at++] = (value % 0x80) | 0x80;
      value = Math.floor(value / 0x80);
    }
    buffer[at++] = value;
    this.position = at;
  }

  /** A length-delimited field's head: tag and length. */
  head(number: number, length: number): void {
    this.varint(number * 8 + LENGTH_DELIMITED);
    this.varint(length);
  }

  latin1(text: string): void {
    this.ensure(text.length);
    this.position += this.buffer.write(text, this.position, 'latin1');
  }

  zeros(count: number): void {
    this.ensure(count);
    this.buffer.fill(0, this.position, this.position + count);
    this.position += count;
  }

  /** What was written; the buffer is not written again. */
  take(): Buffer {
    return this.buffer.subarray(this.base, this.position);
  }

  /** Drops what was written since the last slice (a write that failed part way): it is never handed out. */
  dropUnsliced(): void {
    this.position = this.base;
  }

  /** What was written since the last slice; later writes go after it (a slab output). */
  takeSlice(): Buffer {
    const slice = this.buffer.subarray(this.base, this.position);
    this.base = this.position;
    return slice;
  }
}

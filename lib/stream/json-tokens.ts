// The JSON tokenizer under the tenant view's scanner: byte classes, what may come next, and the scans of strings,
// numbers and literals, resumable at a chunk's end. Validates as JSON.parse would; never decides what a token means.
import { JSON_HEX_DIGITS, JSON_NUMBER_START, JSON_SIMPLE_ESCAPES, JSON_SPACE } from './json-skip.ts';
import { TenantViewError } from './tenant-view-spec.ts';

// Classes of the bytes outside strings that are neither structural nor quotes (the scan loop tests those directly).
export const C_INVALID = 0;
export const C_SPACE = 1;
export const C_NUMBER = 2;
export const C_LITERAL = 3;

export const CHAR_CLASS = new Uint8Array(256).fill(C_INVALID);
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
export const ALLOW_VALUE = 1;
export const ALLOW_KEY = 2;
export const ALLOW_COLON = 4;
export const ALLOW_COMMA = 8;
export const ALLOW_CLOSE_ARRAY = 16;
export const ALLOW_CLOSE_OBJECT = 32;
export const EXPECT_VALUE = ALLOW_VALUE;
export const EXPECT_VALUE_OR_CLOSE = ALLOW_VALUE | ALLOW_CLOSE_ARRAY; // after '['
export const EXPECT_KEY_OR_CLOSE = ALLOW_KEY | ALLOW_CLOSE_OBJECT; // after '{'
export const EXPECT_KEY = ALLOW_KEY; // after ',' in an object
export const EXPECT_COLON = ALLOW_COLON;
export const EXPECT_COMMA_OR_CLOSE = ALLOW_COMMA | ALLOW_CLOSE_ARRAY | ALLOW_CLOSE_OBJECT; // the stack says which bracket
export const EXPECT_END = 0; // after a list's top-level object: only whitespace

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
export function plainRunEnd(buf: Buffer, view: DataView, from: number, end: number): number {
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

export function describeByte(c: number): string {
  return c >= 0x20 && c < 0x7f ? `'${String.fromCharCode(c)}'` : `byte 0x${c.toString(16).padStart(2, '0')}`;
}

/** `offset`: in the whole upstream response. */
export function malformedJson(what: string, offset: number): TenantViewError {
  return new TenantViewError(`malformed JSON: ${what}`, offset);
}

/**
 * Scans the rest of a string's body from `from`, where its plain run stopped (at a backslash, a control byte or the
 * chunk's end) or where a cut string goes on; returns the index of its closing quote, or `-1 - resume` when the
 * chunk ends first (`resume`: where to go on, the chunk's end or a cut escape). `base`: the offset of buf[0].
 */
export function scanStringRest(buf: Buffer, view: DataView, from: number, end: number, base: number): number {
  let i = from;
  for (;;) {
    i = plainRunEnd(buf, view, i, end);
    if (i >= end) return -1 - i;
    const c = buf[i]!;
    if (c === 0x22) return i;
    if (c !== 0x5c) throw malformedJson(`control ${describeByte(c)} inside a string`, base + i);
    if (i + 1 >= end) return -1 - i;
    const e = buf[i + 1]!;
    if (SIMPLE_ESCAPE[e] === 1) {
      i += 2;
    } else if (e === 0x75 /* u */) {
      if (i + 6 > end) return -1 - i;
      if (HEX[buf[i + 2]!]! & HEX[buf[i + 3]!]! & HEX[buf[i + 4]!]! & HEX[buf[i + 5]!]!) i += 6;
      else throw malformedJson('bad \\u escape', base + i);
    } else {
      throw malformedJson(`bad escape \\${String.fromCharCode(e)}`, base + i);
    }
  }
}

/** Returns the end of the number at `from`, -1 when the chunk may cut it; throws on a malformed number. */
export function scanNumber(buf: Buffer, from: number, end: number, base: number): number {
  let i = from;
  if (buf[i] === 0x2d) i++;
  if (i >= end) return -1;
  let c = buf[i]!;
  if (c === 0x30) i++;
  else if (c >= 0x31 && c <= 0x39) {
    i++;
    while (i < end && (c = buf[i]!) >= 0x30 && c <= 0x39) i++;
  } else throw malformedJson('bad number', base + from);
  if (i >= end) return -1;
  c = buf[i]!;
  if (c === 0x2e) {
    i++;
    const digits = i;
    while (i < end && (c = buf[i]!) >= 0x30 && c <= 0x39) i++;
    if (i >= end) return -1;
    if (i === digits) throw malformedJson('bad number', base + from);
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
    if (i === digits) throw malformedJson('bad number', base + from);
  }
  return i;
}

/** Returns the end of the literal (true, false, null) at `from`, -1 when the chunk may cut it; throws on another word. */
export function scanLiteral(buf: Buffer, from: number, end: number, base: number): number {
  const c = buf[from]!;
  const word = c === 0x74 ? 'true' : c === 0x66 ? 'false' : 'null';
  for (let k = 1; k < word.length; k++) {
    if (from + k >= end) return -1;
    if (buf[from + k] !== word.charCodeAt(k)) throw malformedJson('bad literal', base + from);
  }
  return from + word.length;
}

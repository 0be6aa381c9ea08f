// Where a JSON container ends, found by WebAssembly with SIMD (json-skip.wat): the rewriter's way past the containers
// whose contents it neither edits nor looks at, most of an object's bytes. It validates as the JavaScript scanner
// does, faster than a JavaScript loop can merely read the bytes (measured on the bench's pods: 1.3-1.5 GB/s against
// 0.4-0.9 GB/s for such a loop, bench: rewrite). The same module walks a whole list item, noting where the members
// the rewriter edits or checks stand (walkItem), so that an item costs one call instead of one per member.
import { readFileSync, statSync } from 'node:fs';

// TypeScript declares WebAssembly only in its DOM library, which this project does not load: the part used here.
declare const WebAssembly: {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: Record<string, unknown> };
};
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}

const WASM = new URL('./json-skip.wasm', import.meta.url);
const WAT = new URL('./json-skip.wat', import.meta.url);

/** Where the module's memory holds the needle for find(), and how long it may be. */
const NEEDLE = 512;
const MAX_NEEDLE = 512;
/** Where it holds the keys item() looks for, and what item() found (json-skip.wat says the layout of both). */
const ITEM_KEYS = 1024;
const ITEM_KEYS_BYTES = 512;
const ITEM_FOUND = 1536;
/** The module's memory: byte classes, a needle, the item keys and findings, then the bytes to scan from here on. */
const BASE = 2048;
/** Bytes of the scanned buffer copied into the module's memory at a time: containers longer than half are scanned in JavaScript. */
const WINDOW = 256 * 1024;

/** JSON's bytes, for both scanners (this one and json-tokens.ts), so that they accept the same input. */
export const JSON_SPACE = ' \t\n\r';
export const JSON_NUMBER_START = '-0123456789';
export const JSON_HEX_DIGITS = '0123456789abcdefABCDEF';
/** The letters after a backslash, but for `u`. */
export const JSON_SIMPLE_ESCAPES = '"\\/bfnrt';

// Byte classes outside strings, in the order of the br_table in json-skip.wat.
const BYTE_CLASSES: [bytes: string, byteClass: number][] = [
  [JSON_SPACE, 1],
  ['"', 2],
  [',', 3],
  [':', 4],
  ['{', 5],
  ['[', 6],
  ['}', 7],
  [']', 8],
  [JSON_NUMBER_START, 9],
  ['t', 10],
  ['f', 11],
  ['n', 12],
];
const HEX_DIGIT = 1;
const SIMPLE_ESCAPE = 2;

interface JsonSkip {
  skip(at: number, end: number): number;
  item(at: number, end: number): number;
  find(from: number, to: number, length: number): number;
  memory: WasmMemory;
}

function load(): JsonSkip {
  let wasm: Buffer;
  try {
    wasm = readFileSync(WASM);
  } catch {
    throw new Error(`${WASM.pathname} is missing: run npm run build, which assembles it from json-skip.wat`);
  }
  // Beside its source (tests, bench), the binary must be as new as the text: an edit not yet assembled would not run.
  const source = statSync(WAT, { throwIfNoEntry: false });
  if (source !== undefined && source.mtimeMs > statSync(WASM).mtimeMs) {
    throw new Error(`${WASM.pathname} is older than json-skip.wat: run npm run build`);
  }
  const instance = new WebAssembly.Instance(new WebAssembly.Module(wasm), {});
  const memory = instance.exports.memory as WasmMemory;
  const bytes = new Uint8Array(memory.buffer);
  for (const [chars, byteClass] of BYTE_CLASSES) for (const char of chars) bytes[char.charCodeAt(0)] = byteClass;
  for (const char of JSON_HEX_DIGITS) bytes[256 + char.charCodeAt(0)]! |= HEX_DIGIT;
  for (const char of JSON_SIMPLE_ESCAPES) bytes[256 + char.charCodeAt(0)]! |= SIMPLE_ESCAPE;
  const { skip, item, find } = instance.exports as unknown as JsonSkip;
  return { skip, item, find, memory };
}

const { skip, item, find, memory } = load();
let bytes = new Uint8Array(memory.buffer);
let found = new Int32Array(memory.buffer, ITEM_FOUND, 128);
// The window of the scanned buffer now in memory: buf[windowStart, windowEnd) at BASE, copied under windowEpoch.
let windowEpoch = 0;
let windowStart = 0;
let windowEnd = 0;
let epochs = 0;
/** The needle now at NEEDLE (needles are constants of the scanners: compared by identity). */
let loadedNeedle: Uint8Array | null = null;
/** The item keys now at ITEM_KEYS (each scanner's own, made once: compared by identity). */
let loadedItemKeys: Uint8Array | null = null;
/** Indexes in memory of the window's bytes are the buffer's plus this. */
let shift = 0;

/**
 * A new epoch for one scan of one buffer. A window copied under another epoch is copied again: the buffer may since
 * hold other bytes, or another scanner may have copied its own.
 */
export function newSkipEpoch(): number {
  return ++epochs;
}

/**
 * The index after the bracket that closes the container opening at `buf[at]`, when the container lies before `end`
 * and is valid JSON. Otherwise `-1 - stop`: the caller scans up to `stop` itself, where the bytes are malformed or
 * nest more than 63 deep, or where they (or the window) end.
 */
export function containerEnd(epoch: number, buf: Uint8Array, end: number, at: number): number {
  windowAt(epoch, buf, end, at);
  const after = skip(at + shift, windowEnd + shift);
  return after >= 0 ? after - shift : after + shift;
}

/** Makes the window hold `buf` from `at` on (up to WINDOW bytes of it, before `end`). */
function windowAt(epoch: number, buf: Uint8Array, end: number, at: number): void {
  if (windowEpoch === epoch && at >= windowStart && (at + WINDOW / 2 <= windowEnd || windowEnd >= end)) return;
  const to = Math.min(end, at + WINDOW);
  if (BASE + to - at > bytes.length) {
    memory.grow(Math.ceil((BASE + to - at - bytes.length) / 65536));
    bytes = new Uint8Array(memory.buffer);
    found = new Int32Array(memory.buffer, ITEM_FOUND, 128);
  }
  bytes.set(buf.subarray(at, to), BASE);
  windowEpoch = epoch;
  windowStart = at;
  windowEnd = to;
  shift = BASE - windowStart;
}

/** The levels of an item walkItem() looks into, in the order of json-skip.wat. */
export const ITEM_LEVELS = ['item', 'metadata', 'labels', 'spec', 'status'] as const;
/** What walkItem() notes for each key it looks for (json-skip.wat's ids). */
export const ITEM_KEY = {
  metadata: 1,
  spec: 2,
  status: 3,
  nameField: 4,
  labels: 5,
  managedFields: 6,
  ownerReferences: 7,
  generateName: 8,
  tenantLabel: 9,
  conditions: 10,
  /** Plus the index of a spec member with markers. */
  marked: 16,
} as const;
/** Where walkItem() leaves what it found: read with walked() (numbers) and walkedAt() (indexes in the buffer). */
export const FOUND = {
  ambiguous: 0,
  nameState: 1,
  nameStart: 2,
  nameEnd: 3,
  nameEscaped: 4,
  labelsKeyStart: 5,
  labelsEnd: 6,
  labelEntries: 7,
  tenantLabelCount: 8,
  tenantLabelKeyStart: 9,
  tenantLabelStart: 10,
  tenantLabelEnd: 11,
  tenantLabelIsString: 12,
  tenantLabelEscaped: 13,
  spansSeen: 14,
  /** Plus the span (0 managedFields, 1 ownerReferences, 2 conditions, 4 generateName). */
  spanStart: 15,
  spanEnd: 20,
  markedCount: 25,
  /** Plus 3 * m: the marked member's index, start and end. */
  marked: 26,
} as const;

/**
 * The keys walkItem() looks for at each level (ITEM_LEVELS) in the module's form, made once per scanner; null when
 * they do not fit, and then the scanner walks its items itself. Only the bytes used: they are copied into the
 * module whenever another scanner walks an item (with many watches, at nearly every event).
 */
export function itemWalkKeys(levels: Record<(typeof ITEM_LEVELS)[number], readonly (readonly [key: Uint8Array, id: number])[]>): Uint8Array | null {
  const table = new Uint8Array(ITEM_KEYS_BYTES);
  const addresses = new DataView(table.buffer);
  let at = 4 * (ITEM_LEVELS.length + 1);
  for (const [index, level] of ITEM_LEVELS.entries()) {
    addresses.setInt32(4 * (index + 1), ITEM_KEYS + at, true);
    for (const [key, id] of levels[level]) {
      if (key.length === 0 || key.length > 255 || id > 255 || at + 2 + key.length + 1 > table.length) return null;
      table[at] = key.length;
      table[at + 1] = id;
      table.set(key, at + 2);
      at += 2 + key.length;
    }
    table[at++] = 0;
    if (at > table.length) return null;
  }
  return table.subarray(0, at);
}

/** walkItem(): the bytes end inside the item; it is walked again whole once more of it has come. */
export const ITEM_CUT = -2;

/**
 * The index after the '}' closing the list item (or watch object) opening at `buf[at]`, its members noted (FOUND),
 * when it is valid JSON, lies in the window, and no key walked into holds an escape. ITEM_CUT when `buf` ends first;
 * otherwise -1, and the caller walks the item itself.
 */
export function walkItem(epoch: number, buf: Uint8Array, end: number, at: number, keys: Uint8Array): number {
  windowAt(epoch, buf, end, at);
  if (loadedItemKeys !== keys) {
    bytes.set(keys, ITEM_KEYS);
    loadedItemKeys = keys;
  }
  const after = item(at + shift, windowEnd + shift);
  if (after >= 0) return after - shift;
  return after === ITEM_CUT && windowEnd === end ? ITEM_CUT : -1;
}

/** A number walkItem() found: FOUND's counts and flags. */
export function walked(slot: number): number {
  return found[slot]!;
}

/** An index walkItem() found, in the buffer it walked. */
export function walkedAt(slot: number): number {
  return found[slot]! - shift;
}

/**
 * Where `needle` first stands wholly inside `buf[from, to)`, or -1: searched by WebAssembly in the window when the
 * window holds those bytes (an item's members, right after their skip), else by Buffer.indexOf. The needle must
 * not change once searched for.
 */
export function indexWithin(epoch: number, buf: Buffer, from: number, to: number, needle: Buffer): number {
  if (windowEpoch === epoch && from >= windowStart && to <= windowEnd && needle.length > 0 && needle.length <= MAX_NEEDLE) {
    if (loadedNeedle !== needle) {
      bytes.set(needle, NEEDLE);
      loadedNeedle = needle;
    }
    const at = find(from + shift, to + shift, needle.length);
    return at < 0 ? -1 : at - shift;
  }
  if (to - from < needle.length) return -1;
  const at = buf.subarray(from, to).indexOf(needle);
  return at < 0 ? -1 : from + at;
}

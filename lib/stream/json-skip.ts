// Where a JSON container ends, found by WebAssembly with SIMD (json-skip.wat): the rewriter's way past the containers
// whose contents it neither edits nor looks at, most of an object's bytes. It validates as the JavaScript scanner
// does, faster than a JavaScript loop can merely read the bytes (measured on the bench's pods: 1.3-1.5 GB/s against
// 0.4-0.9 GB/s for such a loop, bench: rewrite).
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
/** The module's memory: byte classes, a needle, then the bytes to scan from here on. */
const BASE = 1024;
/** Bytes of the scanned buffer copied into the module's memory at a time: containers longer than half are scanned in JavaScript. */
const WINDOW = 256 * 1024;

/** JSON's bytes, for both scanners (this one and tenant-view.ts's), so that they accept the same input. */
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
  return { skip: instance.exports.skip as JsonSkip['skip'], find: instance.exports.find as JsonSkip['find'], memory };
}

const { skip, find, memory } = load();
let bytes = new Uint8Array(memory.buffer);
// The window of the scanned buffer now in memory: buf[windowStart, windowEnd) at BASE, copied under windowEpoch.
let windowEpoch = 0;
let windowStart = 0;
let windowEnd = 0;
let epochs = 0;
/** The needle now at NEEDLE (needles are constants of the scanners: compared by identity). */
let loadedNeedle: Uint8Array | null = null;

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
  if (windowEpoch !== epoch || at < windowStart || (at + WINDOW / 2 > windowEnd && windowEnd < end)) {
    const to = Math.min(end, at + WINDOW);
    if (BASE + to - at > bytes.length) {
      memory.grow(Math.ceil((BASE + to - at - bytes.length) / 65536));
      bytes = new Uint8Array(memory.buffer);
    }
    bytes.set(buf.subarray(at, to), BASE);
    windowEpoch = epoch;
    windowStart = at;
    windowEnd = to;
  }
  // Indexes in memory are the buffer's plus `shift`.
  const shift = BASE - windowStart;
  const after = skip(at + shift, windowEnd + shift);
  return after >= 0 ? after - shift : after + shift;
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
    const shift = BASE - windowStart;
    const at = find(from + shift, to + shift, needle.length);
    return at < 0 ? -1 : at - shift;
  }
  if (to - from < needle.length) return -1;
  const at = buf.subarray(from, to).indexOf(needle);
  return at < 0 ? -1 : from + at;
}

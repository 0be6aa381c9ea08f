// Small searches and comparisons over an item's bytes, for the judgement and the fast path's edits: short enough
// that a loop beats a call into C++ (measured), or searched by WebAssembly in the scan's window (json-skip.ts).
import { indexWithin } from './json-skip.ts';
import { plainRunEnd } from './json-tokens.ts';

/**
 * A needle searched by its tail: its first `head` bytes (a quote, a common letter) would stop the search at nearly
 * every string of the JSON around it.
 */
export interface TailNeedle {
  whole: Buffer;
  head: number;
  tail: Buffer;
}

export function tailNeedle(whole: Buffer, head: number): TailNeedle {
  return { whole, head, tail: whole.subarray(head) };
}

/** Where the whole needle starts in `buf[from, to)`; -1 when it is not there. `epoch`: the scan's (json-skip.ts). */
export function indexByTail(epoch: number, buf: Buffer, from: number, to: number, needle: TailNeedle): number {
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
export function plainStringEnd(buf: Buffer, view: DataView, from: number, to: number): number {
  const stop = plainRunEnd(buf, view, from, to);
  return stop < to && buf[stop] === 0x22 ? stop : -1;
}

/**
 * Whether `bytes` stand in `buf` at `at`. A loop, not Buffer.compare: these are short, and the call into C++ cost
 * more than the comparison (measured).
 */
export function startsWith(buf: Buffer, at: number, bytes: Buffer): boolean {
  for (let k = 0; k < bytes.length; k++) if (buf[at + k] !== bytes[k]) return false;
  return true;
}

/** The opening quote of the JSON string whose closing quote is at `close` (searching no lower than `floor`), or -1. */
export function openingQuote(buf: Buffer, close: number, floor: number): number {
  for (let i = close - 1; i >= floor; i--) {
    if (buf[i] !== 0x22) continue;
    let backslashes = 0;
    while (i - 1 - backslashes >= floor && buf[i - 1 - backslashes] === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return i;
  }
  return -1;
}

// The Kubernetes protobuf wire primitives every protobuf module here shares: wire types, the `k8s\0` envelope magic,
// the one varint reader and varint writing, strict UTF-8, the one 400 for a malformed body and the one 415 for an unconverted one. Knows no message: never interprets a field itself.
import { badRequest, unsupportedMediaType, type StatusError } from '../../errors/status-error.ts';

export const VARINT = 0;
export const FIXED64 = 1;
export const LENGTH_DELIMITED = 2;
export const FIXED32 = 5;
/** The envelope's magic bytes; a runtime.Unknown follows. */
export const MAGIC = Buffer.from('k8s\0', 'latin1');
/** Fatal: a string that is not UTF-8 is refused, never read with replacement characters the apiserver would not see. */
export const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export function malformed(what: string, why: string): StatusError {
  return badRequest(`the protobuf request body is malformed: ${what}: ${why}`);
}

/** A body whose conversion in protobuf is not written (a kind, a version, a rule's output): 415, send it as JSON. */
export function unsupported(what: string): StatusError {
  return unsupportedMediaType(`tenantgate cannot convert ${what} sent as protobuf; send it as JSON (application/json)`);
}

/** Appends `value` (a safe non-negative integer) as a varint. */
export function pushVarint(out: number[], value: number): void {
  while (value >= 0x80) {
    out.push((value % 0x80) | 0x80);
    value = Math.floor(value / 0x80);
  }
  out.push(value);
}

/** `varintAt`'s answer when the bytes end before the varint does. */
export const VARINT_CUT = -1;
/** `varintAt`'s answer for a varint longer than the 10 bytes of a 64-bit value. */
export const VARINT_TOO_LONG = -2;

/** Where the varint `varintAt` read last ends (a module variable: no object per varint on the hot paths). */
export let varintEnd = 0;

/**
 * The one varint reader: the varint at `at` of `bytes`, read no further than `end`, leaving `varintEnd` after it; or
 * VARINT_CUT or VARINT_TOO_LONG. What those mean is each caller's policy: a 400 for a request body, a 502 for an
 * upstream answer, "wait for more bytes" on a stream, "leave it to the careful path" on the fast one. The value is
 * exact below 2^53 (tags, lengths, every count); a larger one, which only an int64 field holds, is read exactly by
 * `varintBitsAt` once this reader has found it whole. Integer arithmetic for up to 4 bytes (2^28): no float on the
 * common sizes.
 */
export function varintAt(bytes: Buffer, at: number, end: number): number {
  if (at >= end) return VARINT_CUT;
  let byte = bytes[at]!;
  if (byte < 0x80) {
    varintEnd = at + 1;
    return byte;
  }
  let value = byte & 0x7f;
  for (let i = 1, shift = 7; i < 4; i++, shift += 7) {
    if (at + i >= end) return VARINT_CUT;
    byte = bytes[at + i]!;
    value |= (byte & 0x7f) << shift;
    if (byte < 0x80) {
      varintEnd = at + i + 1;
      return value;
    }
  }
  for (let i = 4, scale = 0x10000000; i < 10; i++, scale *= 0x80) {
    if (at + i >= end) return VARINT_CUT;
    byte = bytes[at + i]!;
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) {
      varintEnd = at + i + 1;
      return value;
    }
  }
  return VARINT_TOO_LONG;
}

/** Every bit of the varint `varintAt` found whole at `at` (before `varintEnd`), as an unsigned 64-bit value. */
export function varintBitsAt(bytes: Buffer, at: number, until: number): bigint {
  let value = 0n;
  for (let i = at, shift = 0n; i < until; i++, shift += 7n) value |= BigInt(bytes[i]! & 0x7f) << shift;
  return BigInt.asUintN(64, value);
}

// The Kubernetes protobuf wire primitives every protobuf module here shares: wire types, the `k8s\0` envelope magic,
// varint writing, strict UTF-8 and the one 400 for a malformed body. Knows no message: never interprets a field itself.
import { badRequest, type StatusError } from '../errors/status-error.ts';

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

/** Appends `value` (a safe non-negative integer) as a varint. */
export function pushVarint(out: number[], value: number): void {
  while (value >= 0x80) {
    out.push((value % 0x80) | 0x80);
    value = Math.floor(value / 0x80);
  }
  out.push(value);
}

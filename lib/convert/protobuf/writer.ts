// Writes protobuf fields into one growing buffer: the one writer of messages (the JSON → protobuf encoders of OpenAPI v2,
// the built-in kinds and PartialObjectMetadata) and of the heads the careful path puts beside payloads; splices of
// upstream bytes are splice.ts's Output. Knows no message: never decides a field number or which fields to write.
import { FIXED64, LENGTH_DELIMITED, VARINT } from './wire.ts';

/** A growing buffer; a nested message's length is written in front of it once it is known. */
export class ProtobufWriter {
  private buffer: Buffer;
  private position = 0;
  private readonly float = new DataView(new ArrayBuffer(8));

  constructor(capacity = 1024) {
    this.buffer = Buffer.allocUnsafe(Math.max(capacity, 64));
  }

  private reserve(bytes: number): void {
    if (this.position + bytes <= this.buffer.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buffer.length * 2, this.position + bytes));
    this.buffer.copy(grown, 0, 0, this.position);
    this.buffer = grown;
  }

  /** A non-negative integer below 2^53. */
  private varint(value: number): void {
    this.reserve(10);
    while (value >= 0x80) {
      this.buffer[this.position++] = (value % 0x80) | 0x80;
      value = Math.floor(value / 0x80);
    }
    this.buffer[this.position++] = value;
  }

  /** A field's tag alone (its payload written by the caller). */
  tag(number: number, wireType: number): void {
    this.varint(number * 8 + wireType);
  }

  string(number: number, value: string): void {
    this.tag(number, LENGTH_DELIMITED);
    if (value.length < 43) {
      // At most 126 bytes: the length fits in the one byte written after the text.
      this.reserve(1 + value.length * 3);
      const length = this.buffer.write(value, this.position + 1, 'utf8');
      this.buffer[this.position] = length;
      this.position += 1 + length;
      return;
    }
    const length = Buffer.byteLength(value, 'utf8');
    this.varint(length);
    this.reserve(length);
    this.position += this.buffer.write(value, this.position, 'utf8');
  }

  /** A `bytes` field. */
  bytesField(number: number, value: Uint8Array): void {
    this.tag(number, LENGTH_DELIMITED);
    this.varint(value.length);
    this.raw(value);
  }

  /** Bytes as they are, outside any field (an envelope's magic, a frame's head). */
  raw(value: Uint8Array): void {
    this.reserve(value.length);
    this.buffer.set(value, this.position);
    this.position += value.length;
  }

  bool(number: number, value: boolean): void {
    this.tag(number, VARINT);
    this.varint(value ? 1 : 0);
  }

  double(number: number, value: number): void {
    this.tag(number, FIXED64);
    this.float.setFloat64(0, value, true);
    this.reserve(8);
    for (let i = 0; i < 8; i++) this.buffer[this.position++] = this.float.getUint8(i);
  }

  /** An int32 or int64 field of a safe integer (negatives as Go writes them: ten bytes of two's complement). */
  int(number: number, value: number): void {
    if (value >= 0) {
      this.tag(number, VARINT);
      this.varint(value);
    } else this.int64(number, BigInt(value));
  }

  int64(number: number, value: bigint): void {
    this.tag(number, VARINT);
    let rest = BigInt.asUintN(64, value); // negatives as ten bytes of two's complement
    this.reserve(10);
    while (rest >= 0x80n) {
      this.buffer[this.position++] = Number(rest & 0x7fn) | 0x80;
      rest >>= 7n;
    }
    this.buffer[this.position++] = Number(rest);
  }

  /** The tag and length of a length-delimited field whose payload of `length` bytes the caller sends after these bytes. */
  head(number: number, length: number): void {
    this.tag(number, LENGTH_DELIMITED);
    this.varint(length);
  }

  /** Starts a length-delimited field; returns where its length goes. */
  begin(number: number): number {
    this.tag(number, LENGTH_DELIMITED);
    this.reserve(1);
    return this.position++;
  }

  /** Whether nothing was written since `begin` returned `start`. */
  isEmptySince(start: number): boolean {
    return this.position === start + 1;
  }

  /** Takes back everything written from `mark` on (a position `length` gave). */
  truncate(mark: number): void {
    this.position = mark;
  }

  get length(): number {
    return this.position;
  }

  /** Ends the field `begin` started: one byte was kept for its length, a longer length moves the body up. */
  end(start: number): void {
    const length = this.position - start - 1;
    if (length < 0x80) {
      this.buffer[start] = length;
      return;
    }
    let size = 1;
    for (let rest = length; rest >= 0x80; rest = Math.floor(rest / 0x80)) size++;
    this.reserve(size - 1);
    this.buffer.copyWithin(start + size, start + 1, this.position);
    this.position += size - 1;
    let rest = length;
    for (let at = start; rest >= 0x80; at++) {
      this.buffer[at] = (rest % 0x80) | 0x80;
      rest = Math.floor(rest / 0x80);
    }
    this.buffer[start + size - 1] = rest;
  }

  /** What was written (a view of the writer's buffer: copy it to keep it past the writer's next use). */
  bytes(): Buffer {
    return this.buffer.subarray(0, this.position);
  }
}

/** The writer of short pieces: written, copied out, reused (it never holds more than the piece being made). */
const PIECES = new ProtobufWriter(64);

/** A length-delimited field's tag and length as a Buffer of its own, for a caller that puts the payload beside it. */
export function lengthDelimitedHead(number: number, length: number): Buffer {
  PIECES.truncate(0);
  PIECES.head(number, length);
  return Buffer.from(PIECES.bytes());
}

/** A field's tag as a Buffer of its own (a field to search for, or to write by hand). */
export function tagBytes(number: number, wireType: number): Buffer {
  PIECES.truncate(0);
  PIECES.tag(number, wireType);
  return Buffer.from(PIECES.bytes());
}

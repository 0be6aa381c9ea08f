// One protobuf message read into its fields and rewritten: fields replaced, removed or added, every other field copied
// byte for byte (the careful path of both directions). Never lets a field it reads through in a form the apiserver
// could read differently: duplicated singular fields, unexpected wire types, groups and out-of-range field numbers are
// refused (400).
import { FIXED32, FIXED64, LENGTH_DELIMITED, malformed, utf8, VARINT, VARINT_CUT, VARINT_TOO_LONG, varintAt, varintEnd } from './wire.ts';
import type { Json } from '../rules/rule.ts';
import { lengthDelimitedHead } from './writer.ts';

export const EMPTY = Buffer.alloc(0);
/** Larger field numbers would be truncated by the apiserver's int32 field number into another field. */
const MAX_FIELD_NUMBER = 2 ** 29 - 1;

export interface Field {
  readonly number: number;
  readonly wireType: number;
  /** Offsets in the message: the whole field from its tag, and the payload of a length-delimited field. */
  readonly start: number;
  readonly valueStart: number;
  readonly end: number;
}

/** The varint at `at.pos`, moving it past; a body whose varint is cut off or too long is a 400. */
function readVarint(bytes: Buffer, at: { pos: number }, what: string): number {
  const value = varintAt(bytes, at.pos, bytes.length);
  if (value === VARINT_CUT) throw malformed(what, 'a varint is cut off');
  if (value === VARINT_TOO_LONG) throw malformed(what, 'a varint is longer than 10 bytes');
  at.pos = varintEnd;
  return value;
}

export function parseFields(bytes: Buffer, what: string): Field[] {
  const fields: Field[] = [];
  const at = { pos: 0 };
  const skip = (length: number) => {
    if (length > bytes.length - at.pos) throw malformed(what, 'a field runs past the end of its message');
    at.pos += length;
  };
  while (at.pos < bytes.length) {
    const start = at.pos;
    const tag = readVarint(bytes, at, what);
    const number = Math.floor(tag / 8);
    const wireType = tag % 8;
    if (number < 1 || number > MAX_FIELD_NUMBER) throw malformed(what, `field number ${number} is out of range`);
    let valueStart = at.pos;
    if (wireType === VARINT) readVarint(bytes, at, what);
    else if (wireType === FIXED64) skip(8);
    else if (wireType === FIXED32) skip(4);
    else if (wireType === LENGTH_DELIMITED) {
      const length = readVarint(bytes, at, what);
      valueStart = at.pos;
      skip(length);
    } else throw malformed(what, `field ${number} has wire type ${wireType}, which Kubernetes does not use`);
    fields.push({ number, wireType, start, valueStart, end: at.pos });
  }
  return fields;
}

export function lengthDelimited(number: number, payload: Buffer): Buffer {
  return Buffer.concat([lengthDelimitedHead(number, payload.length), payload]);
}

/** A map<string, string> entry (labels, matchLabels): key = 1, value = 2. */
export function stringEntry(key: string, value: string): Buffer {
  return Buffer.concat([lengthDelimited(1, Buffer.from(key)), lengthDelimited(2, Buffer.from(value))]);
}

/** One message being rewritten: fields replaced, removed or added; every other field copied byte for byte. */
export class MessageEdit {
  readonly bytes: Buffer;
  readonly what: string;
  readonly fields: readonly Field[];
  /** A replaced field's new bytes (its head and payload, or nothing when removed). */
  private readonly replaced = new Map<Field, readonly Buffer[]>();
  private readonly added: { number: number; bytes: readonly Buffer[] }[] = [];

  constructor(bytes: Buffer, what: string) {
    this.bytes = bytes;
    this.what = what;
    this.fields = parseFields(bytes, what);
  }

  /** Every occurrence of a length-delimited field (repeated and map fields). */
  all(number: number, name: string): Field[] {
    const found: Field[] = [];
    for (const field of this.fields) {
      if (field.number !== number) continue;
      if (field.wireType !== LENGTH_DELIMITED) throw malformed(this.what, `${name} (field ${number}) has wire type ${field.wireType}`);
      found.push(field);
    }
    return found;
  }

  /** The one occurrence of a singular length-delimited field, or undefined. */
  single(number: number, name: string): Field | undefined {
    let found: Field | undefined;
    let count = 0;
    for (const field of this.fields) {
      if (field.number !== number) continue;
      if (field.wireType !== LENGTH_DELIMITED) throw malformed(this.what, `${name} (field ${number}) has wire type ${field.wireType}`);
      found ??= field;
      count++;
    }
    if (count > 1) throw malformed(this.what, `${name} (field ${number}) appears ${count} times`);
    return found;
  }

  payload(field: Field): Buffer {
    return this.bytes.subarray(field.valueStart, field.end);
  }

  string(field: Field | undefined, name: string): string {
    if (field === undefined) return '';
    // Names are ASCII: read as latin1 (the same characters), far cheaper than a decoder call for a short string.
    if (isAscii(this.bytes, field.valueStart, field.end)) return this.bytes.toString('latin1', field.valueStart, field.end);
    try {
      return utf8.decode(this.payload(field));
    } catch {
      throw malformed(this.what, `${name} is not valid UTF-8`);
    }
  }

  /** A singular string field ('' when absent). */
  stringOf(number: number, name: string): string {
    return this.string(this.single(number, name), name);
  }

  replace(field: Field, payload: Buffer): void {
    this.replaced.set(field, [lengthDelimitedHead(field.number, payload.length), payload]);
  }

  /** Replaces a field's payload by `parts` in order (a sub-message's finishParts), without joining them. */
  replaceParts(field: Field, parts: readonly Buffer[]): void {
    let length = 0;
    for (const part of parts) length += part.length;
    this.replaced.set(field, [lengthDelimitedHead(field.number, length), ...parts]);
  }

  replaceString(field: Field, value: string): void {
    this.replace(field, Buffer.from(value));
  }

  /** Rewrites a field's payload; a rewrite that returns its argument changes nothing. */
  rewrite(field: Field, rewrite: (payload: Buffer) => Buffer): void {
    const payload = this.payload(field);
    const result = rewrite(payload);
    if (result !== payload) this.replace(field, result);
  }

  /** Puts a sub-message edited on its own back into its field, when it changed. */
  replaceMessage(field: Field, message: MessageEdit): void {
    const rewritten = message.finish();
    if (rewritten !== message.bytes) this.replace(field, rewritten);
  }

  remove(field: Field): void {
    this.replaced.set(field, []);
  }

  /** Replaces every occurrence of a repeated field by `payloads`, written where the first was (added when none was). */
  replaceAll(fields: readonly Field[], number: number, payloads: readonly Buffer[]): void {
    const [first, ...rest] = fields;
    if (first === undefined) {
      for (const payload of payloads) this.add(number, payload);
      return;
    }
    this.replaced.set(
      first,
      payloads.flatMap((payload) => [lengthDelimitedHead(number, payload.length), payload]),
    );
    for (const field of rest) this.remove(field);
  }

  /** Adds a field before the first one with a higher number (after its kind, as encoders order them). */
  add(number: number, payload: Buffer): void {
    this.added.push({ number, bytes: [lengthDelimitedHead(number, payload.length), payload] });
  }

  /** Whether anything was replaced, removed or added. */
  get changed(): boolean {
    return this.replaced.size > 0 || this.added.length > 0;
  }

  /**
   * The rewritten message as pieces, in order (runs of unchanged fields as one slice of the original): for a caller
   * that writes them on without joining them first. The original bytes alone when nothing changed.
   */
  finishParts(): Buffer[] {
    if (!this.changed) return [this.bytes];
    const added = this.added.length < 2 ? this.added : [...this.added].sort((a, b) => a.number - b.number);
    const parts: Buffer[] = [];
    let next = 0;
    /** Start of the run of unchanged fields not yet pushed, or -1. */
    let runStart = -1;
    let runEnd = 0;
    const flushRun = () => {
      if (runStart >= 0) parts.push(this.bytes.subarray(runStart, runEnd));
      runStart = -1;
    };
    for (const field of this.fields) {
      while (next < added.length && added[next]!.number < field.number) {
        flushRun();
        parts.push(...added[next++]!.bytes);
      }
      const replacement = this.replaced.get(field);
      if (replacement === undefined) {
        if (runStart < 0) runStart = field.start;
        runEnd = field.end;
        continue;
      }
      flushRun();
      parts.push(...replacement);
    }
    flushRun();
    while (next < added.length) parts.push(...added[next++]!.bytes);
    return parts;
  }

  /** The rewritten message; the very same Buffer when nothing changed. */
  finish(): Buffer {
    if (!this.changed) return this.bytes;
    return Buffer.concat(this.finishParts());
  }
}

function isAscii(bytes: Buffer, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (bytes[i]! >= 0x80) return false;
  return true;
}

/** The singular string fields `numbers` of a message, by name ('' when absent): a JSON object for a JSON rule to map. */
export function readStrings<K extends string>(edit: MessageEdit, numbers: Readonly<Record<K, number>>): Record<K, string> {
  const values = {} as Record<K, string>;
  for (const key of Object.keys(numbers) as K[]) values[key] = edit.stringOf(numbers[key], key);
  return values;
}

/** Writes back the string fields a JSON rule changed in `after` (a field absent before is added). */
export function writeStrings<K extends string>(edit: MessageEdit, numbers: Readonly<Record<K, number>>, before: Record<K, string>, after: Json): void {
  for (const key of Object.keys(numbers) as K[]) {
    const value = after[key];
    if (typeof value !== 'string' || value === before[key]) continue;
    const field = edit.single(numbers[key], key);
    if (field === undefined) edit.add(numbers[key], Buffer.from(value));
    else edit.replaceString(field, value);
  }
}

/** Sets a repeated string field to `values`: element by element when the count is kept, else all rewritten in order. */
export function writeRepeatedStrings(edit: MessageEdit, number: number, fields: readonly Field[], values: readonly string[]): void {
  if (values.length !== fields.length) {
    edit.replaceAll(
      fields,
      number,
      values.map((value) => Buffer.from(value)),
    );
    return;
  }
  fields.forEach((field, i) => {
    if (edit.string(field, `field ${number}`) !== values[i]) edit.replaceString(field, values[i]!);
  });
}

/** A step of a field path: a field number, or '*' after a repeated field's number (every element). */
export type Step = number | '*';

/** Rewrites every message found at `path` (length-delimited fields all the way); absent steps are skipped. */
export function rewriteAt(bytes: Buffer, path: readonly Step[], what: string, visit: (message: Buffer) => Buffer, from = 0): Buffer {
  if (from === path.length) return visit(bytes);
  const number = path[from] as number;
  const repeated = path[from + 1] === '*';
  const edit = new MessageEdit(bytes, what);
  const name = `field ${path.slice(0, from + 1).join('.')}`;
  const fields = repeated ? edit.all(number, name) : [edit.single(number, name)];
  for (const field of fields) {
    if (field !== undefined) edit.rewrite(field, (payload) => rewriteAt(payload, path, what, visit, from + (repeated ? 2 : 1)));
  }
  return edit.finish();
}

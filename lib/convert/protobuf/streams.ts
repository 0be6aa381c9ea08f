// Protobuf lists and watch streams of the upstream as the tenant reads them, converted as their bytes arrive, object by
// object (to-tenant.ts). Never emits a byte of an item or event before the whole of it has been judged.
import { badGateway, type StatusError } from '../../errors/status-error.ts';
import type { KindRow } from '../kinds.ts';
import { bodyPartsToTenant, checkSupported, joined, objectPartsToTenant, protobufStatusToTenant } from './to-tenant.ts';
import { ANOMALY, FieldScan, headSize, isAsciiRange, Output, rangeEquals, Splices, varintSize } from './splice.ts';
import { LENGTH_DELIMITED, MAGIC, VARINT_TOO_LONG, varintAt, varintEnd } from './wire.ts';
import { tagBytes } from './writer.ts';
import type { ConvertContext } from '../rules/rule.ts';
import type { StatusScope } from '../status.ts';
import { EMPTY, MessageEdit } from './message-edit.ts';
import { parseEnvelope } from './envelope.ts';

import { CAREFUL_PATH, fastViewOf, NOT_THE_TENANTS_OBJECT, objectSplices, type FastView } from './fast-view.ts';
import { forgetSearchedBuffer } from './pod-spec.ts';
import { fromUpstream } from './conversion.ts';
import { OBJECT_META } from './field-numbers.ts';

// ---- lists, fed in chunks ----

/** Largest object held at once, as the JSON rewriter's default (lib/stream/tenant-view-scanner.ts). */
const DEFAULT_MAX_ITEM_BYTES = 16 * 1024 * 1024;
/**
 * A streamed list's raw length is written before its items are converted: it is declared as the upstream's plus
 * PADDING_RESERVE, and the bytes the tenant view saves (prefixes, labels, dropped items) are filled by fields of this
 * number, which no List message has and every protobuf decoder skips as unknown (Go's generated Unmarshal, prost):
 * sent along the items once PADDING_FLUSH_BYTES are saved, and the rest at the list's end. A tenant view is never
 * longer than the upstream object (the rules only remove prefixes, labels and objects); one that is fails the list (502).
 */
const PADDING_FIELD = 2 ** 29 - 1;
const PADDING_TAG = tagBytes(PADDING_FIELD, LENGTH_DELIMITED);
/** The smallest padding field: its tag and a zero length. */
export const PADDING_RESERVE = PADDING_TAG.length + 1;

/** A streamed list pads as soon as this much was saved: the padding is sent along the items, never built at the end. */
export const PADDING_FLUSH_BYTES = 4096;

/** Writes the head (tag and length) of a padding field of exactly `size` bytes (size ≥ PADDING_RESERVE); returns how many zeros follow. */
function writePaddingHead(out: Output, size: number): number {
  for (let i = 0; i < PADDING_TAG.length; i++) out.byte(PADDING_TAG[i]!);
  const rest = size - PADDING_TAG.length;
  // No minimal varint fits some sizes (129: 128 takes two bytes, 127 one): a five-byte one always does, its zero
  // groups carrying continuation bits (decoders read it as the value).
  const lengthBytes = rest <= 128 ? 1 : 5;
  const zeros = rest - lengthBytes;
  let value = zeros;
  for (let i = 0; i < lengthBytes; i++) {
    const group = value % 128;
    value = Math.floor(value / 128);
    out.byte(i < lengthBytes - 1 ? group | 0x80 : group);
  }
  return zeros;
}

/** Writes a field that takes exactly `size` bytes: tag, length, zeros. */
function writePadding(out: Output, size: number): void {
  out.zeros(writePaddingHead(out, size));
}

/** Zeros a padding field's pieces are cut from (a longer field takes several). */
const ZEROS = Buffer.alloc(64 * 1024);

/** The same field as pieces, for writers that send buffers rather than fill an Output (merged lists). */
export function padding(size: number): Buffer[] {
  const head = new Output(16);
  const zeros = writePaddingHead(head, size);
  const parts = [head.take()];
  for (let left = zeros; left > 0; left -= ZEROS.length) parts.push(ZEROS.subarray(0, Math.min(left, ZEROS.length)));
  return parts;
}

/** Reads a varint at `at` of `bytes` up to `end`, leaving `varintEnd` after it; -1 when it is not whole yet. */
function peekVarint(bytes: Buffer, at: number, end: number): number {
  const value = varintAt(bytes, at, end);
  if (value === VARINT_TOO_LONG) throw upstreamMalformed('a varint is longer than 10 bytes');
  return value;
}

export function upstreamMalformed(why: string): StatusError {
  return badGateway(`the upstream's protobuf answer is malformed: ${why}`);
}

/** One field's head: its number, wire type and, for a length-delimited one, its payload's length. */
export interface FieldHead {
  readonly number: number;
  readonly wireType: number;
  /** Bytes of the head (tag and length). */
  readonly size: number;
  /** The payload's length (length-delimited), or the bytes of the whole value (varint, fixed). */
  readonly length: number;
}

/** A FieldHead filled in place, field after field (no object per field). */
class ReusedFieldHead implements FieldHead {
  number = 0;
  wireType = 0;
  size = 0;
  length = 0;
}

/** The head of the field at `at`, or undefined while bytes are missing; a varint field's value counts as its payload. */
export function peekFieldHead(bytes: Buffer, at: number, end: number): FieldHead | undefined {
  const head = new ReusedFieldHead();
  return readFieldHead(bytes, at, end, head) ? head : undefined;
}

/** peekFieldHead into `head`; false while bytes are missing. */
function readFieldHead(bytes: Buffer, at: number, end: number, head: ReusedFieldHead): boolean {
  const tag = peekVarint(bytes, at, end);
  if (tag < 0) return false;
  const tagEnd = varintEnd;
  const number = Math.floor(tag / 8);
  const wireType = tag % 8;
  if (number < 1 || number > 2 ** 29 - 1) throw upstreamMalformed(`field number ${number} is out of range`);
  head.number = number;
  head.wireType = wireType;
  head.size = tagEnd - at;
  switch (wireType) {
    case LENGTH_DELIMITED: {
      const length = peekVarint(bytes, tagEnd, end);
      if (length < 0) return false;
      head.size = varintEnd - at;
      head.length = length;
      return true;
    }
    case 0: {
      if (peekVarint(bytes, tagEnd, end) < 0) return false;
      head.length = varintEnd - tagEnd;
      return true;
    }
    case 1:
      head.length = 8;
      return true;
    case 5:
      head.length = 4;
      return true;
    default:
      throw upstreamMalformed(`field ${number} has wire type ${wireType}, which Kubernetes does not use`);
  }
}

export interface ProtobufListOptions {
  /** Largest item (or other field) held from one chunk to the next; larger → 502. Default 16 MiB. */
  readonly maxItemBytes?: number;
  /**
   * Lists up to this many bytes are held whole and sent with their exact length; longer ones stream, padded (see
   * PADDING_FIELD). Default 4 MiB.
   */
  readonly holdListBytes?: number;
}

const DEFAULT_HOLD_LIST_BYTES = 4 * 1024 * 1024;
/** Buffers the output of a list is sliced from: one allocation for several chunks rather than one per chunk. */
const LIST_SLAB_BYTES = 256 * 1024;
/**
 * The output every watch (of this thread) is sliced from, so an idle watch holds no buffer of its own. Writes are
 * synchronous and each ends by taking its slice or dropping what it wrote, so no write ever sees another's bytes.
 */
const WATCH_OUTPUT = new Output(64 * 1024, 0, 64 * 1024);
/** Unknown.raw = 2, length-delimited. */
const RAW_TAG = 2 * 8 + LENGTH_DELIMITED;
/** Room kept in front of a held list for its head (raw's tag and length), written once its length is known. */
const HELD_HEAD_ROOM = 6;
/** Splices of the item (or event) being converted: one at a time, never across a `write`. */
const SPLICES = new Splices();

/**
 * The bytes of a stream not consumed yet, kept between writes: a field (or frame) whose head is known is completed in a
 * buffer of its size (`carry`), never by joining whole chunks; a head cut off waits in `tail`, joined to the next chunk.
 */
abstract class ChunkedInput {
  private tail: Buffer = EMPTY;
  private carry: Buffer | undefined;
  private carryFill = 0;
  /** Set by `consume` when it stops before a field or frame whose size it knows: that size. */
  protected needed = 0;

  /** Consumes whole fields or frames of bytes from `at` on, writing what they become; returns where it stopped. */
  protected abstract consume(bytes: Buffer, at: number): number;

  protected feed(chunk: Buffer): void {
    try {
      this.feedBytes(chunk);
    } finally {
      forgetSearchedBuffer(); // the caller may reuse the chunk for other bytes
    }
  }

  private feedBytes(chunk: Buffer): void {
    let bytes = chunk;
    let at = 0;
    if (this.carry !== undefined) {
      const carry = this.carry;
      const copied = chunk.copy(carry, this.carryFill, 0, Math.min(chunk.length, carry.length - this.carryFill));
      this.carryFill += copied;
      if (this.carryFill < carry.length) return;
      this.carry = undefined;
      this.needed = 0;
      if (this.consume(carry, 0) !== carry.length) throw new Error('a carried field was not consumed whole');
      at = copied;
    } else if (this.tail.length > 0) {
      bytes = Buffer.concat([this.tail, chunk]);
      this.tail = EMPTY;
    }
    this.needed = 0;
    at = this.consume(bytes, at);
    if (at === bytes.length) return;
    if (this.needed > bytes.length - at) {
      this.carry = Buffer.allocUnsafe(this.needed);
      this.carryFill = bytes.copy(this.carry, 0, at);
    } else {
      this.tail = Buffer.from(bytes.subarray(at));
    }
  }

  /** Whether bytes of a field or frame are waiting for the rest. */
  protected get waiting(): boolean {
    return this.tail.length > 0 || this.carry !== undefined;
  }

  /** Bytes waiting (for the output's size). */
  protected get waitingBytes(): number {
    return this.carry?.length ?? this.tail.length;
  }
}

/**
 * The one reader of an upstream `<Kind>List` answer in protobuf (`k8s\0` + runtime.Unknown { typeMeta = 1, raw = 2: the
 * list { metadata = 1, items = 2 }, contentEncoding = 3, contentType = 4 }) fed in chunks: it checks the framing and
 * the list's version and hands each whole field to its subclass — the envelope's, the list's metadata and each item —
 * holding one field at most. What becomes of them (a rewritten answer, a merged list's page) is the subclass's.
 */
export abstract class ProtobufListReader extends ChunkedInput {
  protected readonly row: KindRow;
  protected readonly ctx: ConvertContext;
  protected readonly apiVersion: string;
  private readonly maxItemBytes: number;
  protected magicSeen = false;
  /** Bytes of the list (the envelope's raw) not yet consumed; -1 outside it. */
  protected rawLeft = -1;
  protected rawDone = false;
  /** The head of the field being read (listField's `head`: valid during the call). */
  private readonly head = new ReusedFieldHead();

  /** `apiVersion`: the list's, as asked of the upstream (the envelope's is checked against it). */
  constructor(row: KindRow, ctx: ConvertContext, apiVersion: string, maxItemBytes = DEFAULT_MAX_ITEM_BYTES) {
    super();
    checkSupported(row, apiVersion);
    this.row = row;
    this.ctx = ctx;
    this.apiVersion = apiVersion;
    this.maxItemBytes = maxItemBytes;
  }

  /** The magic `k8s\0` was read. */
  protected magic(): void {}
  /** A field of the envelope outside the list (typeMeta, contentEncoding, contentType) at bytes[from, to). */
  protected envelopeField(_bytes: Buffer, _from: number, _to: number): void {}
  /** The list (the envelope's raw) starts; `length`: its bytes. */
  protected abstract rawStarted(length: number): void;
  /** The list's field at bytes[from, to), its payload from `payload` on (`head.number` 1: ListMeta, 2: an item). */
  protected abstract listField(bytes: Buffer, from: number, payload: number, to: number, head: FieldHead): void;
  /** The list's last byte was read. */
  protected abstract rawEnded(): void;

  /** The answer ended: one cut off, before or inside its list, is the upstream's fault. */
  protected finishInput(): void {
    if (this.rawLeft === 0) this.endRaw();
    if (!this.magicSeen || this.waiting || this.rawLeft > 0) throw upstreamMalformed('the list is cut off');
  }

  protected consume(bytes: Buffer, start: number): number {
    let at = start;
    if (!this.magicSeen) {
      if (bytes.length - at < MAGIC.length) return at;
      if (!bytes.subarray(at, at + MAGIC.length).equals(MAGIC)) throw upstreamMalformed('it does not start with "k8s\\x00"');
      this.magicSeen = true;
      this.magic();
      at += MAGIC.length;
    }
    for (;;) {
      if (this.rawLeft === 0) this.endRaw();
      const inRaw = this.rawLeft > 0;
      const end = inRaw ? Math.min(bytes.length, at + this.rawLeft) : bytes.length;
      const head = this.head;
      if (at >= end || !readFieldHead(bytes, at, end, head)) {
        if (inRaw && end - at >= this.rawLeft) throw upstreamMalformed('a field of the list runs past its end');
        return at;
      }
      const whole = head.size + (head.wireType === 0 ? 0 : head.length);
      if (inRaw && whole > this.rawLeft) throw upstreamMalformed('a field of the list runs past its end');
      if (!inRaw && head.number === 2 && head.wireType === LENGTH_DELIMITED && !this.rawDone) {
        this.rawLeft = head.length;
        this.rawStarted(head.length);
        at += head.size;
        continue;
      }
      if (whole > this.maxItemBytes) throw badGateway(`an item of the upstream's protobuf list is larger than ${this.maxItemBytes} bytes`);
      if (at + whole > bytes.length) {
        this.needed = whole; // the rest of this field has not arrived yet
        return at;
      }
      const fieldStart = at;
      at += whole;
      if (!inRaw) {
        if (head.number === 1) this.checkTypeMeta(bytes.subarray(fieldStart + head.size, at));
        this.envelopeField(bytes, fieldStart, at);
        continue;
      }
      this.rawLeft -= whole;
      this.listField(bytes, fieldStart, fieldStart + head.size, at, head);
    }
  }

  private endRaw(): void {
    this.rawEnded();
    this.rawLeft = -1;
    this.rawDone = true;
  }

  /** The items' field numbers are those of the version asked for: a list of another is refused, never misread. */
  private checkTypeMeta(typeMeta: Buffer): void {
    const listApiVersion = fromUpstream(() => new MessageEdit(typeMeta, 'typeMeta').stringOf(1, 'apiVersion'));
    if (listApiVersion !== '' && listApiVersion !== this.apiVersion && this.row.tenancy !== 'shared-read-only') {
      throw badGateway(`the upstream answered a list of ${listApiVersion} where ${this.apiVersion} was asked for`);
    }
  }
}

/**
 * A `<Kind>List` answer rewritten as its bytes arrive: `write` returns what can be sent so far, `finish` the rest. The
 * list message (metadata = 1: ListMeta, passed on as the JSON path passes it, continue token and remainingItemCount
 * included; items = 2) is converted item by item, items not the tenant's dropped; the envelope's other fields pass as
 * they came. The envelope's raw length comes before the items: a list up to holdListBytes is held (converted) and sent
 * with its exact length; a longer one streams holding one item at most, its length declared up front and what the
 * tenant view saves padded (PADDING_FIELD): memory stays bounded (an item, the chunk it came in, a padding of at most
 * an item), the bytes on the wire are the upstream's.
 */
export class ProtobufListToTenant extends ProtobufListReader {
  /** Items kept and dropped so far. */
  kept = 0;
  dropped = 0;

  private readonly holdListBytes: number;
  private readonly fast: FastView | null;
  /** Bytes emitted inside the list, and the length declared for it (streaming). */
  private rawEmitted = 0;
  private rawDeclared = 0;
  /** The converted list while it is held (short lists), after HELD_HEAD_ROOM; undefined when streaming. */
  private held: Output | undefined;
  /** What the writes return, slice after slice (see Output). */
  private readonly slab = new Output(64, 0, LIST_SLAB_BYTES);
  /** What the current write returns: the slab, or the held list once it is whole. */
  private out: Output = this.slab;

  constructor(row: KindRow, ctx: ConvertContext, apiVersion: string, options: ProtobufListOptions = {}) {
    super(row, ctx, apiVersion, options.maxItemBytes);
    this.holdListBytes = options.holdListBytes ?? DEFAULT_HOLD_LIST_BYTES;
    this.fast = fastViewOf(row, ctx);
  }

  write(chunk: Buffer): Buffer {
    // Room for what the chunk consumes, plus padding of what earlier chunks saved, in the slab (one slab for many chunks).
    if (this.held === undefined) this.slab.ensure(chunk.length + this.waitingBytes + PADDING_FLUSH_BYTES + 64);
    this.feed(chunk);
    return this.taken();
  }

  finish(): Buffer {
    this.finishInput();
    return this.taken();
  }

  private taken(): Buffer {
    const out = this.out === this.slab ? this.slab.takeSlice() : this.out.take();
    this.out = this.slab;
    return out.length === 0 ? EMPTY : out;
  }

  protected override magic(): void {
    this.out.bytes(MAGIC);
  }

  protected override envelopeField(bytes: Buffer, from: number, to: number): void {
    this.out.copy(bytes, from, to); // typeMeta, contentEncoding, contentType: as they came
  }

  protected listField(bytes: Buffer, from: number, payload: number, to: number, head: FieldHead): void {
    const target = this.held ?? this.out;
    if (head.number === 2 && head.wireType === LENGTH_DELIMITED) this.rawEmitted += this.item(bytes, payload, to, target);
    else {
      target.copy(bytes, from, to); // the list's metadata: as it came
      this.rawEmitted += to - from;
    }
    if (this.held !== undefined) return;
    const saved = this.rawDeclared - PADDING_RESERVE - this.rawLeft - this.rawEmitted;
    if (saved < 0) throw badGateway("a tenant view of the upstream's protobuf list came out longer than the list");
    if (saved >= PADDING_FLUSH_BYTES) {
      writePadding(this.out, saved);
      this.rawEmitted += saved;
    }
  }

  protected rawStarted(length: number): void {
    if (length <= this.holdListBytes) {
      this.held = new Output(HELD_HEAD_ROOM + length, HELD_HEAD_ROOM);
      return;
    }
    this.rawDeclared = length + PADDING_RESERVE;
    this.out.byte(RAW_TAG);
    this.out.varint(this.rawDeclared);
  }

  protected rawEnded(): void {
    const held = this.held;
    if (held !== undefined) {
      // The head goes in the room kept in front: the held list is sent as it is, not copied again.
      held.base = HELD_HEAD_ROOM - 1 - varintSize(this.rawEmitted);
      const end = held.position;
      held.position = held.base;
      held.byte(RAW_TAG);
      held.varint(this.rawEmitted);
      held.position = end;
      if (this.out.length === 0) this.out = held;
      else this.out.bytes(held.take());
    } else writePadding(this.out, this.rawDeclared - this.rawEmitted);
    this.held = undefined;
  }

  /** One item (items = 2) at bytes[from, to) written converted, with its field head, to `target`: the bytes written (0: not the tenant's). */
  private item(bytes: Buffer, from: number, to: number, target: Output): number {
    const splices = SPLICES;
    splices.reset();
    const delta = this.fast === null ? CAREFUL_PATH : objectSplices(bytes, from, to, this.fast, splices);
    if (delta === NOT_THE_TENANTS_OBJECT) {
      this.dropped++;
      return 0;
    }
    const before = target.position;
    if (delta !== CAREFUL_PATH) {
      this.kept++;
      target.head(2, to - from + delta);
      splices.writeTo(target, bytes, from, to);
      return target.position - before;
    }
    const parts = objectPartsToTenant(bytes.subarray(from, to), this.row, this.ctx);
    if (parts === null) {
      this.dropped++;
      return 0;
    }
    this.kept++;
    let length = 0;
    for (const part of parts) length += part.length;
    target.head(2, length);
    for (const part of parts) target.bytes(part);
    return target.position - before;
  }
}

/** The whole list at once (the same bytes as fed in any pieces to ProtobufListToTenant). */
export function protobufListToTenant(body: Buffer, row: KindRow, ctx: ConvertContext, apiVersion: string, options?: ProtobufListOptions): Buffer {
  const list = new ProtobufListToTenant(row, ctx, apiVersion, options);
  return Buffer.concat([list.write(body), list.finish()]);
}

// ---- watch streams: frames of a 4-byte big-endian length and a meta/v1 WatchEvent ----

/** WatchEvent: type = 1, object = 2 (RawExtension: raw = 1, the object as `k8s\0` + runtime.Unknown). */
const WATCH_EVENT = { type: 1, object: 2 } as const;
const RAW_EXTENSION_RAW = 1;
const FRAME_HEAD = 4;

/**
 * One watch event (the message of a frame, without its length) as the tenant sees it, or null to drop it, as the
 * JSON WatchRewriter does: ADDED, MODIFIED, DELETED of an object not the tenant's are dropped; a BOOKMARK whose object
 * names nothing (only a resourceVersion and annotations) passes as it is; an ERROR's Status is converted.
 */
export function protobufWatchEventToTenant(event: Buffer, row: KindRow, ctx: ConvertContext, scope?: StatusScope): Buffer | null {
  const parts = watchEventPartsToTenant(event, row, ctx, scope);
  return parts === null ? null : joined(parts);
}

/** protobufWatchEventToTenant in pieces: `[event]` when unchanged. */
function watchEventPartsToTenant(event: Buffer, row: KindRow, ctx: ConvertContext, scope: StatusScope | undefined): Buffer[] | null {
  const edit = fromUpstream(() => new MessageEdit(event, 'watch event'));
  const type = fromUpstream(() => edit.stringOf(WATCH_EVENT.type, 'type'));
  const objectField = fromUpstream(() => edit.single(WATCH_EVENT.object, 'object'));
  if (objectField === undefined) throw upstreamMalformed('a watch event has no object');
  const extension = fromUpstream(() => new MessageEdit(edit.payload(objectField), 'watch event object'));
  const rawField = fromUpstream(() => extension.single(RAW_EXTENSION_RAW, 'raw'));
  if (rawField === undefined) throw upstreamMalformed('a watch event has no object');
  const body = extension.payload(rawField);
  let converted: Buffer[] | null;
  if (type === 'ERROR') converted = [protobufStatusToTenant(body, ctx.tenant, scope)];
  else if (type === 'BOOKMARK' && bookmarkNamesNothing(body)) converted = [body];
  else converted = bodyPartsToTenant(body, row, ctx, scope);
  if (converted === null) return null;
  if (converted.length === 1 && converted[0] === body) return [event];
  extension.replaceParts(rawField, converted);
  edit.replaceParts(objectField, extension.finishParts());
  return edit.finishParts();
}

/** A bookmark's object carries only a resourceVersion and annotations: no name, no namespace. */
function bookmarkNamesNothing(body: Buffer): boolean {
  return fromUpstream(() => {
    const { edit, rawField } = parseEnvelope(body);
    if (rawField === undefined) return true;
    const object = new MessageEdit(edit.payload(rawField), 'object');
    const meta = object.single(1, 'metadata');
    if (meta === undefined) return true;
    const metadata = new MessageEdit(object.payload(meta), 'metadata');
    return metadata.stringOf(OBJECT_META.name, 'name') === '' && metadata.stringOf(OBJECT_META.namespace, 'namespace') === '';
  });
}

/**
 * A protobuf watch stream (application/vnd.kubernetes.protobuf;stream=watch) rewritten as its bytes arrive: each frame
 * is held whole (up to maxItemBytes), converted by protobufWatchEventToTenant and written with its new length.
 */
export class ProtobufWatchToTenant extends ChunkedInput {
  /** Events kept (bookmarks and errors included) and dropped so far. */
  kept = 0;
  dropped = 0;

  private readonly row: KindRow;
  private readonly ctx: ConvertContext;
  private readonly scope: StatusScope | undefined;
  private readonly maxItemBytes: number;
  private readonly fast: FastView | null;
  /** The envelope's kind and apiVersion of the objects the fast path converts (a shared kind: any ASCII apiVersion). */
  private readonly kindBytes: Buffer;
  private readonly apiVersionBytes: Buffer;
  /** What the writes return, slice after slice (see Output). */
  private readonly out = WATCH_OUTPUT;

  /** `apiVersion`: the watched objects', as asked of the upstream (each object's envelope is checked against it). */
  constructor(row: KindRow, ctx: ConvertContext, apiVersion: string, options: ProtobufListOptions & { readonly scope?: StatusScope } = {}) {
    super();
    checkSupported(row, apiVersion);
    this.row = row;
    this.ctx = ctx;
    this.scope = options.scope;
    this.maxItemBytes = options.maxItemBytes ?? DEFAULT_MAX_ITEM_BYTES;
    this.fast = row.kind === '' ? null : fastViewOf(row, ctx);
    this.kindBytes = Buffer.from(row.kind);
    this.apiVersionBytes = Buffer.from(row.group === '' ? 'v1' : `${row.group}/v1`);
  }

  write(chunk: Buffer): Buffer {
    this.out.dropUnsliced();
    this.out.ensure(chunk.length + this.waitingBytes + 64);
    try {
      this.feed(chunk);
    } catch (error) {
      this.out.dropUnsliced();
      throw error;
    }
    const out = this.out.takeSlice();
    return out.length === 0 ? EMPTY : out;
  }

  /** The stream ended: a frame cut off is the upstream's fault. */
  finish(): Buffer {
    if (this.waiting) throw upstreamMalformed('a watch event is cut off');
    return EMPTY;
  }

  protected consume(bytes: Buffer, start: number): number {
    let at = start;
    while (bytes.length - at >= FRAME_HEAD) {
      const length = bytes[at]! * 0x1000000 + ((bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!);
      if (length > this.maxItemBytes) throw badGateway(`a watch event of the upstream is larger than ${this.maxItemBytes} bytes`);
      if (bytes.length - at - FRAME_HEAD < length) {
        this.needed = FRAME_HEAD + length;
        return at;
      }
      this.frame(bytes, at, at + FRAME_HEAD + length);
      at += FRAME_HEAD + length;
    }
    return at;
  }

  /** One frame at bytes[from, to) written converted (or not at all: an event of an object not the tenant's). */
  private frame(bytes: Buffer, from: number, to: number): void {
    const splices = SPLICES;
    splices.reset();
    const delta = this.fast === null ? CAREFUL_PATH : this.eventSplices(bytes, from + FRAME_HEAD, to, this.fast, splices);
    if (delta === NOT_THE_TENANTS_OBJECT) {
      this.dropped++;
      return;
    }
    const out = this.out;
    if (delta !== CAREFUL_PATH) {
      this.kept++;
      if (splices.count === 0) {
        out.copy(bytes, from, to);
        return;
      }
      out.uint32(to - from - FRAME_HEAD + delta);
      splices.writeTo(out, bytes, from + FRAME_HEAD, to);
      return;
    }
    const event = bytes.subarray(from + FRAME_HEAD, to);
    const converted = watchEventPartsToTenant(event, this.row, this.ctx, this.scope);
    if (converted === null) {
      this.dropped++;
      return;
    }
    this.kept++;
    if (converted.length === 1 && converted[0] === event) {
      out.copy(bytes, from, to);
      return;
    }
    let convertedLength = 0;
    for (const part of converted) convertedLength += part.length;
    out.uint32(convertedLength);
    for (const part of converted) out.bytes(part);
  }

  /**
   * watchEventPartsToTenant of an ADDED, MODIFIED or DELETED event of an object of the kind, as splices (see
   * objectSplices): its object's and the three heads around it; CAREFUL_PATH for every other event and anything unusual.
   */
  private eventSplices(bytes: Buffer, from: number, to: number, view: FastView, splices: Splices): number {
    const event = EVENT_FIELDS;
    if (!event.scan(bytes, from, to)) return CAREFUL_PATH;
    const type = event.single(WATCH_EVENT.type);
    if (type < 0 || !isObjectEventType(bytes, event.valueStart[type]!, event.end[type]!)) return CAREFUL_PATH;
    const object = event.single(WATCH_EVENT.object);
    if (object < 0) return CAREFUL_PATH;
    const extension = EXTENSION_FIELDS;
    const extensionFrom = event.valueStart[object]!;
    const extensionTo = event.end[object]!;
    if (!extension.scan(bytes, extensionFrom, extensionTo)) return CAREFUL_PATH;
    const raw = extension.single(RAW_EXTENSION_RAW);
    if (raw < 0) return CAREFUL_PATH;
    // The object's envelope, as parseEnvelope reads it.
    const bodyFrom = extension.valueStart[raw]!;
    const bodyTo = extension.end[raw]!;
    if (bodyTo - bodyFrom <= MAGIC.length || !rangeEquals(bytes, bodyFrom, bodyFrom + MAGIC.length, MAGIC)) return CAREFUL_PATH;
    const envelope = ENVELOPE_FIELDS;
    if (!envelope.scan(bytes, bodyFrom + MAGIC.length, bodyTo)) return CAREFUL_PATH;
    const typeMeta = envelope.single(1);
    const objectField = envelope.single(2);
    const contentEncoding = envelope.single(3);
    if (typeMeta < 0 || objectField < 0 || contentEncoding === ANOMALY || envelope.single(4) === ANOMALY) return CAREFUL_PATH;
    if (contentEncoding >= 0 && envelope.end[contentEncoding]! > envelope.valueStart[contentEncoding]!) return CAREFUL_PATH;
    const meta = TYPE_META_FIELDS;
    if (!meta.scan(bytes, envelope.valueStart[typeMeta]!, envelope.end[typeMeta]!)) return CAREFUL_PATH;
    const apiVersion = meta.single(1);
    const kind = meta.single(2);
    if (apiVersion < 0 || kind < 0 || !rangeEquals(bytes, meta.valueStart[kind]!, meta.end[kind]!, this.kindBytes)) return CAREFUL_PATH;
    const apiVersionFrom = meta.valueStart[apiVersion]!;
    const apiVersionTo = meta.end[apiVersion]!;
    if (view.shared ? !isAsciiRange(bytes, apiVersionFrom, apiVersionTo) : !rangeEquals(bytes, apiVersionFrom, apiVersionTo, this.apiVersionBytes))
      return CAREFUL_PATH;
    const objectFrom = envelope.valueStart[objectField]!;
    const objectTo = envelope.end[objectField]!;
    // Placeholders for the three heads around the object, outermost first: the splices stay in order, none sorted.
    const mark = splices.count;
    splices.delete(event.start[object]!, event.start[object]!);
    splices.delete(extension.start[raw]!, extension.start[raw]!);
    splices.delete(envelope.start[objectField]!, envelope.start[objectField]!);
    const delta = objectSplices(bytes, objectFrom, objectTo, view, splices);
    if (delta === CAREFUL_PATH || delta === NOT_THE_TENANTS_OBJECT) return delta;
    if (splices.count === mark + 3) {
      splices.truncate(mark);
      return delta;
    }
    // The heads around the object, written anew as MessageEdit writes a replaced field's.
    const objectLength = objectTo - objectFrom + delta;
    const bodyLength = bodyTo - bodyFrom - (objectTo - envelope.start[objectField]!) + headSize(2, objectLength) + objectLength;
    const extensionLength = extensionTo - extensionFrom - (bodyTo - extension.start[raw]!) + headSize(RAW_EXTENSION_RAW, bodyLength) + bodyLength;
    const eventLength = to - from - (extensionTo - event.start[object]!) + headSize(WATCH_EVENT.object, extensionLength) + extensionLength;
    splices.setHead(mark, event.start[object]!, extensionFrom, WATCH_EVENT.object, extensionLength);
    splices.setHead(mark + 1, extension.start[raw]!, bodyFrom, RAW_EXTENSION_RAW, bodyLength);
    splices.setHead(mark + 2, envelope.start[objectField]!, objectFrom, 2, objectLength);
    return eventLength - (to - from);
  }
}

const EVENT_FIELDS = new FieldScan();
const EXTENSION_FIELDS = new FieldScan();
const ENVELOPE_FIELDS = new FieldScan();
const TYPE_META_FIELDS = new FieldScan();
const OBJECT_EVENT_TYPES = ['ADDED', 'MODIFIED', 'DELETED'].map((type) => Buffer.from(type));

/** An event of an object (not a BOOKMARK, not an ERROR, nothing else). */
function isObjectEventType(bytes: Buffer, from: number, to: number): boolean {
  for (let i = 0; i < OBJECT_EVENT_TYPES.length; i++) if (rangeEquals(bytes, from, to, OBJECT_EVENT_TYPES[i]!)) return true;
  return false;
}

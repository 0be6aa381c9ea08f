// Protobuf lists and watch streams of the upstream as the tenant reads them, converted as their bytes arrive, object by
// object (protobuf-response.ts). Never emits a byte of an item or event before the whole of it has been judged.
import { badGateway, type StatusError } from '../errors/status-error.ts';
import type { KindRow } from './kinds.ts';
import { EMPTY, META, MessageEdit, parseEnvelope } from './protobuf.ts';
import { bodyPartsToTenant, checkSupported, fromUpstream, joined, objectPartsToTenant, protobufStatusToTenant } from './protobuf-response.ts';
import { LENGTH_DELIMITED, MAGIC, pushVarint } from './protobuf-wire.ts';
import type { ConvertContext } from './rules/rule.ts';
import type { StatusScope } from './status.ts';

// ---- lists, fed in chunks ----

/** Largest object held at once, as the JSON rewriter's default (lib/stream/tenant-view.ts). */
const DEFAULT_MAX_ITEM_BYTES = 16 * 1024 * 1024;
/**
 * A streamed list's raw length is written before its items are converted: it is declared as the upstream's plus
 * PADDING_RESERVE, and the bytes the tenant view saves (prefixes, labels, dropped items) are filled by fields of this
 * number, which no List message has and every protobuf decoder skips as unknown (Go's generated Unmarshal, prost):
 * sent along the items once PADDING_FLUSH_BYTES are saved, and the rest at the list's end. A tenant view is never
 * longer than the upstream object (the rules only remove prefixes, labels and objects); one that is fails the list (502).
 */
const PADDING_FIELD = 2 ** 29 - 1;
const PADDING_TAG: readonly number[] = (() => {
  const tag: number[] = [];
  pushVarint(tag, PADDING_FIELD * 8 + LENGTH_DELIMITED);
  return tag;
})();
/** The smallest padding field: its tag and a zero length. */
export const PADDING_RESERVE = PADDING_TAG.length + 1;

function varintBytes(value: number): Buffer {
  const out: number[] = [];
  pushVarint(out, value);
  return Buffer.from(out);
}

/** Zeros every padding field's payload is cut from (a padding field longer than this takes several slices). */
const ZEROS = Buffer.alloc(64 * 1024);
/** A streamed list pads as soon as this much was saved: the padding is sent along the items, never built at the end. */
export const PADDING_FLUSH_BYTES = 4096;

/** A field that takes exactly `size` bytes (size ≥ PADDING_RESERVE): tag, length, zeros, in pieces. */
export function padding(size: number): Buffer[] {
  const rest = size - PADDING_TAG.length;
  // No minimal varint fits some sizes (129: 128 takes two bytes, 127 one): a five-byte one always does.
  const lengthBytes = rest <= 128 ? 1 : 5;
  let length = rest - lengthBytes;
  const parts = [Buffer.from([...PADDING_TAG, ...paddedVarint(length, lengthBytes)])];
  for (; length > 0; length -= ZEROS.length) parts.push(ZEROS.subarray(0, Math.min(length, ZEROS.length)));
  return parts;
}

/** `value` as a varint of exactly `bytes` bytes (continuation bits on zero groups: decoders read it as the value). */
function paddedVarint(value: number, bytes: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < bytes; i++) {
    const group = value % 128;
    value = Math.floor(value / 128);
    out.push(i < bytes - 1 ? group | 0x80 : group);
  }
  return out;
}

/** Reads a varint at `at` of `bytes` up to `end`; undefined when it is not whole yet. */
function peekVarint(bytes: Buffer, at: number, end: number): { value: number; next: number } | undefined {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < 10; i++) {
    if (at + i >= end) return undefined;
    const byte = bytes[at + i]!;
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return { value, next: at + i + 1 };
    scale *= 128;
  }
  throw badGateway("the upstream's protobuf answer is malformed: a varint is longer than 10 bytes");
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

/** The head of the field at `at`, or undefined while bytes are missing; a varint field's value counts as its payload. */
export function peekFieldHead(bytes: Buffer, at: number, end: number): FieldHead | undefined {
  const tag = peekVarint(bytes, at, end);
  if (tag === undefined) return undefined;
  const number = Math.floor(tag.value / 8);
  const wireType = tag.value % 8;
  if (number < 1 || number > 2 ** 29 - 1) throw upstreamMalformed(`field number ${number} is out of range`);
  switch (wireType) {
    case LENGTH_DELIMITED: {
      const length = peekVarint(bytes, tag.next, end);
      if (length === undefined) return undefined;
      return { number, wireType, size: length.next - at, length: length.value };
    }
    case 0: {
      const value = peekVarint(bytes, tag.next, end);
      if (value === undefined) return undefined;
      return { number, wireType, size: tag.next - at, length: value.next - tag.next };
    }
    case 1:
      return { number, wireType, size: tag.next - at, length: 8 };
    case 5:
      return { number, wireType, size: tag.next - at, length: 4 };
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
/** What a dropped item leaves in the list. */
const DROPPED: { readonly parts: readonly Buffer[]; readonly length: number } = { parts: [], length: 0 };
/** Unknown.raw = 2, length-delimited. */
const RAW_TAG = Buffer.from([2 * 8 + LENGTH_DELIMITED]);

/**
 * A `<Kind>List` answer (`k8s\0` + runtime.Unknown { typeMeta = 1, raw = 2: the list, contentEncoding = 3, contentType = 4 })
 * rewritten as its bytes arrive: `write` returns what can be sent so far, `finish` the rest. The list message
 * (metadata = 1: ListMeta, passed on as the JSON path passes it, continue token and remainingItemCount included;
 * items = 2) is converted item by item, items not the tenant's dropped. The envelope's raw length comes before the
 * items: a list up to holdListBytes is held (converted) and sent with its exact length; a longer one streams holding
 * one item at most, its length declared up front and what the tenant view saves padded (PADDING_FIELD): memory stays
 * bounded (an item, the chunk it came in, a padding of at most an item), the bytes on the wire are the upstream's.
 */
export class ProtobufListToTenant {
  /** Items kept and dropped so far. */
  kept = 0;
  dropped = 0;

  private readonly row: KindRow;
  private readonly ctx: ConvertContext;
  private readonly apiVersion: string;
  private readonly maxItemBytes: number;
  private readonly holdListBytes: number;
  /** Bytes received and not yet consumed. */
  private pending: Buffer = EMPTY;
  private magicSeen = false;
  /** Bytes of the list (the envelope's raw) not yet consumed; -1 outside it. */
  private rawLeft = -1;
  /** Bytes emitted inside the list, and the length declared for it (streaming). */
  private rawEmitted = 0;
  private rawDeclared = 0;
  private rawDone = false;
  /** The converted list while it is held (short lists); undefined when streaming. */
  private held: Buffer[] | undefined;

  /** `apiVersion`: the list's, as asked of the upstream (the envelope's is checked against it). */
  constructor(row: KindRow, ctx: ConvertContext, apiVersion: string, options: ProtobufListOptions = {}) {
    checkSupported(row, apiVersion);
    this.apiVersion = apiVersion;
    this.row = row;
    this.ctx = ctx;
    this.maxItemBytes = options.maxItemBytes ?? DEFAULT_MAX_ITEM_BYTES;
    this.holdListBytes = options.holdListBytes ?? DEFAULT_HOLD_LIST_BYTES;
  }

  write(chunk: Buffer): Buffer {
    const bytes = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const out: Buffer[] = [];
    let at = 0;
    if (!this.magicSeen) {
      if (bytes.length < MAGIC.length) {
        this.pending = bytes;
        return EMPTY;
      }
      if (!bytes.subarray(0, MAGIC.length).equals(MAGIC)) throw upstreamMalformed('it does not start with "k8s\\x00"');
      this.magicSeen = true;
      out.push(MAGIC);
      at = MAGIC.length;
    }
    for (;;) {
      if (this.rawLeft === 0) this.endRaw(out);
      const inRaw = this.rawLeft > 0;
      const end = inRaw ? Math.min(bytes.length, at + this.rawLeft) : bytes.length;
      const head = at < end ? peekFieldHead(bytes, at, end) : undefined;
      if (head === undefined) {
        if (inRaw && end - at >= this.rawLeft) throw upstreamMalformed('a field of the list runs past its end');
        break;
      }
      const whole = head.size + (head.wireType === 0 ? 0 : head.length);
      if (inRaw && whole > this.rawLeft) throw upstreamMalformed('a field of the list runs past its end');
      if (!inRaw && head.number === 2 && head.wireType === LENGTH_DELIMITED && !this.rawDone) {
        this.startRaw(head.length, out);
        at += head.size;
        continue;
      }
      if (whole > this.maxItemBytes) throw badGateway(`an item of the upstream's protobuf list is larger than ${this.maxItemBytes} bytes`);
      if (at + whole > bytes.length) break; // the rest of this field has not arrived yet
      const field = bytes.subarray(at, at + whole);
      at += whole;
      if (!inRaw) {
        if (head.number === 1) this.checkTypeMeta(field.subarray(head.size));
        out.push(field); // typeMeta, contentEncoding, contentType: as they came
        continue;
      }
      this.rawLeft -= whole;
      const isItem = head.number === 2 && head.wireType === LENGTH_DELIMITED;
      const item = isItem ? (this.item(field.subarray(head.size)) ?? DROPPED) : { parts: [field], length: field.length };
      this.rawEmitted += item.length;
      // (What is held is copied: the caller's chunk may be reused once write returns.)
      if (this.held !== undefined) {
        this.held.push(...item.parts.map((part) => (part.buffer === bytes.buffer ? Buffer.from(part) : part)));
        continue;
      }
      const saved = this.rawDeclared - PADDING_RESERVE - this.rawLeft - this.rawEmitted;
      if (saved < 0) throw badGateway("a tenant view of the upstream's protobuf list came out longer than the list");
      out.push(...item.parts);
      if (saved >= PADDING_FLUSH_BYTES) {
        out.push(...padding(saved));
        this.rawEmitted += saved;
      }
    }
    this.pending = at === bytes.length ? EMPTY : Buffer.from(bytes.subarray(at));
    return out.length === 1 ? out[0]! : Buffer.concat(out);
  }

  finish(): Buffer {
    const out: Buffer[] = [];
    if (this.rawLeft === 0) this.endRaw(out);
    if (!this.magicSeen || this.pending.length > 0 || this.rawLeft > 0) throw upstreamMalformed('the list is cut off');
    return Buffer.concat(out);
  }

  /** The items' field numbers are those of the version asked for: a list of another is refused, never misread. */
  private checkTypeMeta(typeMeta: Buffer): void {
    const listApiVersion = fromUpstream(() => new MessageEdit(typeMeta, 'typeMeta').stringOf(1, 'apiVersion'));
    if (listApiVersion !== '' && listApiVersion !== this.apiVersion && this.row.tenancy !== 'shared-read-only') {
      throw badGateway(`the upstream answered a list of ${listApiVersion} where ${this.apiVersion} was asked for`);
    }
  }

  private startRaw(length: number, out: Buffer[]): void {
    this.rawLeft = length;
    if (length <= this.holdListBytes) {
      this.held = [];
      return;
    }
    this.rawDeclared = length + PADDING_RESERVE;
    out.push(RAW_TAG, varintBytes(this.rawDeclared));
  }

  private endRaw(out: Buffer[]): void {
    if (this.held !== undefined) out.push(RAW_TAG, varintBytes(this.rawEmitted), ...this.held);
    else out.push(...padding(this.rawDeclared - this.rawEmitted));
    this.held = undefined;
    this.rawLeft = -1;
    this.rawDone = true;
  }

  /** One item (items = 2) converted: its field head and message, in pieces; null when it is not the tenant's. */
  private item(raw: Buffer): { readonly parts: readonly Buffer[]; readonly length: number } | null {
    const parts = objectPartsToTenant(raw, this.row, this.ctx);
    if (parts === null) {
      this.dropped++;
      return null;
    }
    this.kept++;
    let length = 0;
    for (const part of parts) length += part.length;
    const head: number[] = [];
    pushVarint(head, 2 * 8 + LENGTH_DELIMITED);
    pushVarint(head, length);
    parts.unshift(Buffer.from(head));
    return { parts, length: length + head.length };
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

function frameHead(length: number): Buffer {
  const head = Buffer.allocUnsafe(FRAME_HEAD);
  head.writeUInt32BE(length);
  return head;
}

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
    return metadata.stringOf(META.name, 'name') === '' && metadata.stringOf(META.namespace, 'namespace') === '';
  });
}

/**
 * A protobuf watch stream (application/vnd.kubernetes.protobuf;stream=watch) rewritten as its bytes arrive: each frame
 * is held whole (up to maxItemBytes), converted by protobufWatchEventToTenant and written with its new length.
 */
export class ProtobufWatchToTenant {
  /** Events kept (bookmarks and errors included) and dropped so far. */
  kept = 0;
  dropped = 0;

  private readonly row: KindRow;
  private readonly ctx: ConvertContext;
  private readonly scope: StatusScope | undefined;
  private readonly maxItemBytes: number;
  private pending: Buffer = EMPTY;

  /** `apiVersion`: the watched objects', as asked of the upstream (each object's envelope is checked against it). */
  constructor(row: KindRow, ctx: ConvertContext, apiVersion: string, options: ProtobufListOptions & { readonly scope?: StatusScope } = {}) {
    checkSupported(row, apiVersion);
    this.row = row;
    this.ctx = ctx;
    this.scope = options.scope;
    this.maxItemBytes = options.maxItemBytes ?? DEFAULT_MAX_ITEM_BYTES;
  }

  write(chunk: Buffer): Buffer {
    const bytes = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const out: Buffer[] = [];
    let at = 0;
    while (bytes.length - at >= FRAME_HEAD) {
      const length = bytes.readUInt32BE(at);
      if (length > this.maxItemBytes) throw badGateway(`a watch event of the upstream is larger than ${this.maxItemBytes} bytes`);
      if (bytes.length - at - FRAME_HEAD < length) break;
      const event = bytes.subarray(at + FRAME_HEAD, at + FRAME_HEAD + length);
      at += FRAME_HEAD + length;
      const converted = watchEventPartsToTenant(event, this.row, this.ctx, this.scope);
      if (converted === null) {
        this.dropped++;
        continue;
      }
      this.kept++;
      if (converted.length === 1 && converted[0] === event) {
        out.push(bytes.subarray(at - FRAME_HEAD - length, at));
        continue;
      }
      let convertedLength = 0;
      for (const part of converted) convertedLength += part.length;
      out.push(frameHead(convertedLength), ...converted);
    }
    this.pending = at === bytes.length ? EMPTY : Buffer.from(bytes.subarray(at));
    return out.length === 1 ? out[0]! : Buffer.concat(out);
  }

  /** The stream ended: a frame cut off is the upstream's fault. */
  finish(): Buffer {
    if (this.pending.length > 0) throw upstreamMalformed('a watch event is cut off');
    return EMPTY;
  }
}

// Protobuf answers tenantgate makes itself, for clients that prefer protobuf: Status errors, empty lists, and a list
// merged from upstream pages (its head, its ListMeta, the pages' items converted one by one). Never writes a byte of
// an upstream object the engine (protobuf-response.ts) has not converted and judged the tenant's.
import type { KindRow } from './kinds.ts';
import { EMPTY, MessageEdit } from './protobuf.ts';
import { encodeMessage, encodeObject } from './protobuf-encode.ts';
import { checkSupported, fromUpstream, objectPartsToTenant } from './protobuf-response.ts';
import { peekFieldHead, upstreamMalformed } from './protobuf-streams.ts';
import { ProtobufWriter } from './protobuf-writer.ts';
import { LENGTH_DELIMITED, MAGIC, pushVarint, VARINT } from './protobuf-wire.ts';
import type { ConvertContext, Json } from './rules/rule.ts';

// ---- writing: Status and ListMeta by the schema-driven encoder; the envelope of any kind's list by its writer

const LIST_META = 'k8s.io.apimachinery.pkg.apis.meta.v1.ListMeta';

export interface ListMetaJson {
  resourceVersion?: string;
  continue?: string;
  remainingItemCount?: number;
}

/** A list's metadata field (metadata = 1, a ListMeta). */
export function listMetaField(metadata: ListMetaJson): Buffer {
  const out = new ProtobufWriter(64);
  out.bytesField(1, encodeMessage(LIST_META, metadata as Json));
  return Buffer.from(out.bytes());
}

/**
 * `k8s\0` + runtime.Unknown { typeMeta = 1 { apiVersion = 1, kind = 2 }, raw = 2 } up to raw's payload, which holds
 * `rawLength` bytes the caller writes after these. Any kind's: a list is written here whatever the schema holds.
 */
export function protobufListHead(apiVersion: string, kind: string, rawLength: number): Buffer {
  const out = new ProtobufWriter(64);
  out.raw(MAGIC);
  const typeMeta = out.begin(1);
  out.string(1, apiVersion);
  out.string(2, kind);
  out.end(typeMeta);
  out.head(2, rawLength);
  return Buffer.from(out.bytes());
}

/** A `<Kind>List` without items, as the apiserver answers a list that finds nothing. */
export function protobufEmptyList(apiVersion: string, kind: string, metadata: ListMetaJson): Buffer {
  const meta = listMetaField(metadata);
  return Buffer.concat([protobufListHead(apiVersion, kind, meta.length), meta]);
}

/** A Status (the JSON of status-error.ts) as the apiserver's protobuf body. */
export function protobufStatus(status: object): Buffer {
  return encodeObject('v1', 'Status', status as Json);
}

// ---- reading: one upstream page of a list, item by item

/** One item of a list converted: its field (items = 2) head and message in pieces, and their length. */
export interface ConvertedItem {
  readonly parts: readonly Buffer[];
  readonly length: number;
}

/**
 * One upstream protobuf list page (`k8s\0` + runtime.Unknown { typeMeta = 1, raw = 2: the list { metadata = 1,
 * items = 2 } }) read as its bytes arrive: its list message's length and ListMeta as soon as they came (the apiserver
 * writes metadata before items), then each item converted to the tenant's view (items not the tenant's dropped).
 * Holds at most one field (an item) and the chunk it came in.
 */
export class ProtobufListPage {
  /** The list message's length (-1 until its head arrived), and its ListMeta (null until it arrived). */
  rawLength = -1;
  listMeta: { resourceVersion: string; continue: string; bytes: number } | null = null;
  /** Items kept and the bytes they take converted; the upstream bytes of every item field read. */
  kept = 0;
  keptBytes = 0;
  upstreamItemBytes = 0;

  private readonly row: KindRow;
  private readonly ctx: ConvertContext;
  private readonly apiVersion: string;
  private readonly maxItemBytes: number;
  /** Bytes received and not yet read, in the chunks they came in; `needed`: how many the field they start needs (0: unknown). */
  private pending: Buffer[] = [];
  private pendingLength = 0;
  private needed = 0;
  private magicSeen = false;
  /** Bytes of the list message not yet read; -1 before it, and after it (then rawDone). */
  private rawLeft = -1;
  private rawDone = false;

  constructor(row: KindRow, ctx: ConvertContext, apiVersion: string, maxItemBytes = 16 * 1024 * 1024) {
    checkSupported(row, apiVersion);
    this.row = row;
    this.ctx = ctx;
    this.apiVersion = apiVersion;
    this.maxItemBytes = maxItemBytes;
  }

  /** The items converted out of `chunk` (with what came before it). */
  write(chunk: Buffer): ConvertedItem[] {
    const items: ConvertedItem[] = [];
    // A large item comes in many chunks: they are joined once it is whole, not once per chunk.
    if (this.pendingLength + chunk.length < this.needed) {
      this.pending.push(chunk);
      this.pendingLength += chunk.length;
      return items;
    }
    const bytes = this.pendingLength === 0 ? chunk : Buffer.concat([...this.pending, chunk]);
    this.pending = [];
    this.pendingLength = 0;
    this.needed = 0;
    let at = 0;
    if (!this.magicSeen) {
      if (bytes.length < MAGIC.length) {
        this.keep(bytes, 0, MAGIC.length);
        return items;
      }
      if (!bytes.subarray(0, MAGIC.length).equals(MAGIC)) throw upstreamMalformed('it does not start with "k8s\\x00"');
      this.magicSeen = true;
      at = MAGIC.length;
    }
    for (;;) {
      if (this.rawLeft === 0) {
        this.rawLeft = -1;
        this.rawDone = true;
      }
      const inRaw = this.rawLeft > 0;
      const end = inRaw ? Math.min(bytes.length, at + this.rawLeft) : bytes.length;
      const head = at < end ? peekFieldHead(bytes, at, end) : undefined;
      if (head === undefined) {
        if (inRaw && end - at >= this.rawLeft) throw upstreamMalformed('a field of the list runs past its end');
        break;
      }
      const whole = head.size + (head.wireType === VARINT ? 0 : head.length);
      if (inRaw && whole > this.rawLeft) throw upstreamMalformed('a field of the list runs past its end');
      if (!inRaw && head.number === 2 && head.wireType === LENGTH_DELIMITED && !this.rawDone) {
        this.rawLeft = head.length;
        this.rawLength = head.length;
        at += head.size;
        continue;
      }
      if (whole > this.maxItemBytes) throw upstreamMalformed(`an item of the list is larger than ${this.maxItemBytes} bytes`);
      if (at + whole > bytes.length) {
        this.needed = whole; // the rest of this field has not arrived yet
        break;
      }
      const field = bytes.subarray(at, at + whole);
      at += whole;
      if (!inRaw) {
        if (head.number === 1) this.checkTypeMeta(field.subarray(head.size));
        continue; // typeMeta, contentEncoding, contentType: the merged list writes its own
      }
      this.rawLeft -= whole;
      if (head.number === 1 && head.wireType === LENGTH_DELIMITED) this.readListMeta(field.subarray(head.size), whole);
      else if (head.number === 2 && head.wireType === LENGTH_DELIMITED) {
        this.upstreamItemBytes += whole;
        const item = this.item(field.subarray(head.size));
        if (item !== null) items.push(item);
      }
    }
    this.keep(bytes, at, this.needed);
    return items;
  }

  /** Keeps `bytes` from `at` for the next chunk; `needed` of them make the next field whole (0: not known yet). */
  private keep(bytes: Buffer, at: number, needed: number): void {
    if (at < bytes.length) {
      this.pending = [bytes.subarray(at)];
      this.pendingLength = bytes.length - at;
    }
    this.needed = needed;
  }

  /** The page ended: a page cut off is the upstream's fault. */
  finish(): void {
    if (this.rawLeft === 0) this.rawDone = true;
    if (!this.magicSeen || this.pendingLength > 0 || !this.rawDone) throw upstreamMalformed('the list is cut off');
  }

  private checkTypeMeta(typeMeta: Buffer): void {
    const listApiVersion = fromUpstream(() => new MessageEdit(typeMeta, 'typeMeta').stringOf(1, 'apiVersion'));
    if (listApiVersion !== '' && listApiVersion !== this.apiVersion) throw upstreamMalformed(`a list of ${listApiVersion} came where ${this.apiVersion} was asked for`);
  }

  private readListMeta(payload: Buffer, whole: number): void {
    const meta = fromUpstream(() => new MessageEdit(payload, 'listMeta'));
    this.listMeta = { resourceVersion: fromUpstream(() => meta.stringOf(2, 'resourceVersion')), continue: fromUpstream(() => meta.stringOf(3, 'continue')), bytes: whole };
  }

  private item(raw: Buffer): ConvertedItem | null {
    const parts = objectPartsToTenant(raw, this.row, this.ctx);
    if (parts === null) return null;
    let length = 0;
    for (const part of parts) length += part.length;
    const head: number[] = [];
    pushVarint(head, 2 * 8 + LENGTH_DELIMITED);
    pushVarint(head, length);
    this.kept++;
    this.keptBytes += length + head.length;
    return { parts: [Buffer.from(head), ...parts], length: length + head.length };
  }
}

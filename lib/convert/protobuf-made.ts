// Protobuf answers tenantgate makes itself, for clients that prefer protobuf: Status errors, empty lists, and a list
// merged from upstream pages (its head, its ListMeta, the pages' items converted one by one). Never writes a byte of
// an upstream object the engine (protobuf-response.ts) has not converted and judged the tenant's.
import type { KindRow } from './kinds.ts';
import { EMPTY, lengthDelimited, MessageEdit } from './protobuf.ts';
import { checkSupported, fromUpstream, objectPartsToTenant } from './protobuf-response.ts';
import { peekFieldHead, upstreamMalformed, varintBytes } from './protobuf-streams.ts';
import { LENGTH_DELIMITED, MAGIC, pushVarint, VARINT } from './protobuf-wire.ts';
import type { ConvertContext } from './rules/rule.ts';

// ---- writing: the few messages tenantgate makes, field by field (k8s.io/apimachinery meta/v1 and runtime generated.proto)

function stringField(number: number, value: unknown): Buffer {
  return typeof value === 'string' && value !== '' ? lengthDelimited(number, Buffer.from(value, 'utf8')) : EMPTY;
}

/** An int32/int64 field; negative values (never in what tenantgate makes) are left out rather than mis-encoded. */
function integerField(number: number, value: unknown): Buffer {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) return EMPTY;
  const bytes: number[] = [];
  pushVarint(bytes, number * 8 + VARINT);
  pushVarint(bytes, value);
  return Buffer.from(bytes);
}

/** runtime.Unknown { typeMeta = 1 { apiVersion = 1, kind = 2 } } without its raw: what precedes raw = 2 in an answer. */
function typeMetaField(apiVersion: string, kind: string): Buffer {
  return lengthDelimited(1, Buffer.concat([stringField(1, apiVersion), stringField(2, kind)]));
}

/** A whole answer: `k8s\0` + runtime.Unknown { typeMeta, raw = the message }. */
function envelope(apiVersion: string, kind: string, message: Buffer): Buffer {
  return Buffer.concat([MAGIC, typeMetaField(apiVersion, kind), lengthDelimited(2, message)]);
}

export interface ListMetaJson {
  resourceVersion?: string;
  continue?: string;
  remainingItemCount?: number;
}

/** A list's metadata field (metadata = 1): ListMeta { selfLink = 1, resourceVersion = 2, continue = 3, remainingItemCount = 4 }. */
export function listMetaField(metadata: ListMetaJson): Buffer {
  return lengthDelimited(1, Buffer.concat([stringField(2, metadata.resourceVersion), stringField(3, metadata.continue), integerField(4, metadata.remainingItemCount)]));
}

/** A `<Kind>List` without items, as the apiserver answers a list that finds nothing. */
export function protobufEmptyList(apiVersion: string, kind: string, metadata: ListMetaJson): Buffer {
  return envelope(apiVersion, kind, listMetaField(metadata));
}

interface StatusJson {
  status?: unknown;
  message?: unknown;
  reason?: unknown;
  code?: unknown;
  details?: { name?: unknown; group?: unknown; kind?: unknown; uid?: unknown; retryAfterSeconds?: unknown; causes?: unknown } | undefined;
}

/**
 * A Status (the JSON of status-error.ts) as the apiserver's protobuf: Status { metadata = 1, status = 2, message = 3,
 * reason = 4, details = 5 { name = 1, group = 2, kind = 3, causes = 4 { reason = 1, message = 2, field = 3 },
 * retryAfterSeconds = 5, uid = 6 }, code = 6 }.
 */
export function protobufStatus(status: StatusJson): Buffer {
  const parts = [lengthDelimited(1, EMPTY), stringField(2, status.status), stringField(3, status.message), stringField(4, status.reason)];
  const details = status.details;
  if (details !== undefined) {
    const causes = Array.isArray(details.causes) ? details.causes : [];
    const detailParts = [stringField(1, details.name), stringField(2, details.group), stringField(3, details.kind)];
    for (const cause of causes) detailParts.push(lengthDelimited(4, Buffer.concat([stringField(1, cause?.reason), stringField(2, cause?.message), stringField(3, cause?.field)])));
    detailParts.push(integerField(5, details.retryAfterSeconds), stringField(6, details.uid));
    parts.push(lengthDelimited(5, Buffer.concat(detailParts)));
  }
  parts.push(integerField(6, status.code));
  return envelope('v1', 'Status', Buffer.concat(parts));
}

/** The head of a list whose list message (raw) is `rawLength` bytes: magic, typeMeta, raw's tag and length. */
export function protobufListHead(apiVersion: string, kind: string, rawLength: number): Buffer {
  return Buffer.concat([MAGIC, typeMetaField(apiVersion, kind), Buffer.from([2 * 8 + LENGTH_DELIMITED]), varintBytes(rawLength)]);
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
  private pending: Buffer = EMPTY;
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
    const bytes = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    const items: ConvertedItem[] = [];
    let at = 0;
    if (!this.magicSeen) {
      if (bytes.length < MAGIC.length) {
        this.pending = bytes;
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
      if (at + whole > bytes.length) break; // the rest of this field has not arrived yet
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
    this.pending = at === bytes.length ? EMPTY : Buffer.from(bytes.subarray(at));
    return items;
  }

  /** The page ended: a page cut off is the upstream's fault. */
  finish(): void {
    if (this.rawLeft === 0) this.rawDone = true;
    if (!this.magicSeen || this.pending.length > 0 || !this.rawDone) throw upstreamMalformed('the list is cut off');
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

// Protobuf answers tenantgate makes itself, for clients that prefer protobuf: Status errors, empty lists, and a list
// merged from upstream pages (its head, its ListMeta, the pages' items converted one by one). Never writes a byte of
// an upstream object the engine (to-tenant.ts) has not converted and judged the tenant's.
import { encodeMessage, encodeObject } from './encode.ts';
import { objectPartsToTenant } from './to-tenant.ts';
import { ProtobufListReader, upstreamMalformed, type FieldHead } from './streams.ts';
import { lengthDelimitedHead, ProtobufWriter } from './writer.ts';
import { LENGTH_DELIMITED, MAGIC } from './wire.ts';
import type { Json } from '../rules/rule.ts';
import { MessageEdit } from './message-edit.ts';
import { fromUpstream } from './conversion.ts';

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
 * One upstream protobuf list page read as its bytes arrive (ProtobufListReader: the one reader of a protobuf list's
 * fields): its list message's length and ListMeta as soon as they came (the apiserver writes metadata before items),
 * then each item converted to the tenant's view (items not the tenant's dropped). Holds at most one field (an item).
 */
export class ProtobufListPage extends ProtobufListReader {
  /** The list message's length (-1 until its head arrived), and its ListMeta (null until it arrived). */
  rawLength = -1;
  listMeta: { resourceVersion: string; continue: string; bytes: number } | null = null;
  /** Items kept and the bytes they take converted; the upstream bytes of every item field read. */
  kept = 0;
  keptBytes = 0;
  upstreamItemBytes = 0;

  /** What the current write returns. */
  private items: ConvertedItem[] = [];

  /** The items converted out of `chunk` (with what came before it). */
  write(chunk: Buffer): ConvertedItem[] {
    this.items = [];
    this.feed(chunk);
    return this.items;
  }

  /** The page ended: a page cut off, or one without its list, is the upstream's fault. */
  finish(): void {
    this.finishInput();
    if (!this.rawDone) throw upstreamMalformed('the list is cut off');
  }

  protected rawStarted(length: number): void {
    this.rawLength = length;
  }

  protected rawEnded(): void {}

  protected listField(bytes: Buffer, from: number, payload: number, to: number, head: FieldHead): void {
    if (head.wireType !== LENGTH_DELIMITED) return;
    if (head.number === 1) this.readListMeta(bytes.subarray(payload, to), to - from);
    else if (head.number === 2) {
      this.upstreamItemBytes += to - from;
      const item = this.item(bytes.subarray(payload, to));
      if (item !== null) this.items.push(item);
    }
  }

  private readListMeta(payload: Buffer, whole: number): void {
    const meta = fromUpstream(() => new MessageEdit(payload, 'listMeta'));
    this.listMeta = {
      resourceVersion: fromUpstream(() => meta.stringOf(2, 'resourceVersion')),
      continue: fromUpstream(() => meta.stringOf(3, 'continue')),
      bytes: whole,
    };
  }

  private item(raw: Buffer): ConvertedItem | null {
    const parts = objectPartsToTenant(raw, this.row, this.ctx);
    if (parts === null) return null;
    let length = 0;
    for (const part of parts) length += part.length;
    const head = lengthDelimitedHead(2, length);
    this.kept++;
    this.keptBytes += length + head.length;
    return { parts: [head, ...parts], length: length + head.length };
  }
}

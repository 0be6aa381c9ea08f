// The bytes the tenant view sends: copied into one buffer per write(), or moved down within a chunk the caller gave
// up; and the list's own bytes (its envelope), with its apiVersion changed when the tenant's differs. Never judges.
import type { ItemsOnly } from './tenant-view-spec.ts';

const EMPTY = Buffer.alloc(0);

/** `"apiVersion":"<upstream group>/` and its tenant form, when the list's apiVersion changes (spec.listApiGroup). */
export interface ListApiVersion {
  readonly upstream: Buffer;
  readonly tenant: Buffer;
}

export function listApiVersionOf(listApiGroup: { readonly upstream: string; readonly tenant: string } | undefined): ListApiVersion | null {
  if (listApiGroup === undefined) return null;
  // (Group names need no JSON escaping.)
  const apiVersionHead = (group: string) => Buffer.from(`"apiVersion":"${group}/`);
  return { upstream: apiVersionHead(listApiGroup.upstream), tenant: apiVersionHead(listApiGroup.tenant) };
}

/** The output of one scanner: what each write() emits, taken at its end. */
export class ViewOutput {
  /**
   * The bytes ready to send, copied in as they are emitted into one buffer per write(), sized for the held bytes
   * and the chunk: collecting the parts and concatenating them once cost about 1.7x as much (a pod list has ~45
   * parts per 64 KiB).
   */
  private out: Buffer = EMPTY;
  private outLength = 0;
  /** What this write() may emit, without edits that lengthen: the size of the buffer allocated at its first emit. */
  sizeHint = 0;
  /** Whether `out` is the chunk being scanned, whose bytes move down as they are emitted (writeOwned). */
  private inPlace = false;
  /** writeOwned(): what this write() emitted before it began writing over the chunk. */
  private readonly ownedParts: Buffer[] = [];
  private readonly listApiVersion: ListApiVersion | null;
  /** Items only: the list around them, kept aside (ItemsOnly). */
  private readonly envelopeParts: Buffer[] | null;

  constructor(listApiVersion: ListApiVersion | null, itemsOnly: ItemsOnly | undefined) {
    this.listApiVersion = listApiVersion;
    this.envelopeParts = itemsOnly === undefined ? null : [];
  }

  /** The bytes emitted since the last call: the rest of the buffer they are in is not used again. */
  take(): Buffer {
    this.inPlace = false;
    if (this.outLength === 0) {
      this.out = EMPTY;
      return EMPTY;
    }
    const out = this.out.subarray(0, this.outLength);
    this.out = EMPTY;
    this.outLength = 0;
    return out;
  }

  /** writeOwned(), at its end: the parts emitted, in order (what came before the chunk, then the chunk's). */
  takeParts(): Buffer[] {
    const last = this.take();
    if (last.length > 0) this.ownedParts.push(last);
    return this.ownedParts.splice(0);
  }

  /** From now on the output is written over `chunk`, being scanned; what was emitted before goes first, on its own. */
  overChunk(chunk: Buffer): void {
    if (this.outLength > 0) this.ownedParts.push(this.take());
    this.out = chunk;
    this.inPlace = true;
  }

  /** Drops what was emitted and not taken (the scan failed). */
  discard(): void {
    this.outLength = 0;
  }

  /** Makes room for `size` more bytes of output (in new memory: this also ends writing over the chunk). */
  private reserve(size: number): void {
    if (this.outLength + size <= this.out.length && !this.inPlace) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.outLength + size, this.out.length * 2, this.sizeHint));
    this.out.copy(bigger, 0, 0, this.outLength);
    this.out = bigger;
    this.inPlace = false;
  }

  /** Emits the scanned bytes `buf[from, to)`. */
  emit(buf: Buffer, from: number, to: number): void {
    if (to > from) this.append(buf, from, to);
  }

  /**
   * Emits bytes that are not the scanned bytes at hand (a comma, a newline, a replacement). `next`: the index of
   * the first scanned byte any later emit of this write() reads; over the chunk, the bytes must end before it.
   */
  emitBytes(bytes: Buffer, next: number): void {
    if (this.inPlace && this.outLength + bytes.length > next) this.reserve(bytes.length);
    this.append(bytes, 0, bytes.length);
  }

  private append(source: Buffer, from: number, to: number): void {
    if (this.inPlace) {
      if (source === this.out && this.outLength <= from) {
        // Over the chunk: the bytes move down (or stay where they are).
        if (this.outLength !== from) this.out.copyWithin(this.outLength, from, to);
        this.outLength += to - from;
        return;
      }
      if (source === this.out) this.reserve(to - from);
    }
    if (this.outLength + to - from > this.out.length) this.reserve(Math.max(to - from, this.sizeHint - this.outLength));
    if (to - from > 16) this.outLength += source.copy(this.out, this.outLength, from, to);
    else {
      // A comma, a newline, a short gap between edits: a loop costs less than the call into C++ (measured).
      const out = this.out;
      let at = this.outLength;
      for (let i = from; i < to; i++) out[at++] = source[i]!;
      this.outLength = at;
    }
  }

  /**
   * The list's own bytes `buf[from, to)` (all but the items): emitted, or kept aside for envelope(). The head (up to
   * `"items":[`) comes here whole, where the apiserver writes the list's apiVersion (first of its sorted keys, or
   * before the items when it streams the collection): replaced there when the tenant's differs.
   */
  emitEnvelope(buf: Buffer, from: number, to: number): void {
    const replace = this.listApiVersion;
    const at = replace === null || to - from < replace.upstream.length ? -1 : buf.subarray(from, to).indexOf(replace.upstream);
    if (at >= 0) {
      const end = from + at + replace!.upstream.length;
      this.emitEnvelopePart(buf, from, from + at);
      if (this.envelopeParts === null) this.emitBytes(replace!.tenant, end);
      else this.envelopeParts.push(replace!.tenant);
      this.emitEnvelopePart(buf, end, to);
      return;
    }
    this.emitEnvelopePart(buf, from, to);
  }

  private emitEnvelopePart(buf: Buffer, from: number, to: number): void {
    if (this.envelopeParts === null) this.emit(buf, from, to);
    else if (to > from) this.envelopeParts.push(Buffer.from(buf.subarray(from, to)));
  }

  /** Items only, once finished: the list without its items (`"items":[]`), e.g. for its metadata. */
  envelope(): Buffer {
    return Buffer.concat(this.envelopeParts ?? []);
  }
}

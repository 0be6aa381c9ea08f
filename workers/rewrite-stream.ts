// A piscina task: one large list answer (JSON or protobuf) rewritten into a tenant's view as its chunks arrive over a
// MessagePort, each chunk answered with the bytes ready to send. Never holds more than the chunks it was sent and the
// item they cut.
import type { MessagePort } from 'node:worker_threads';
import type { KindRow } from '../lib/convert/kinds.ts';
import type { TenantId } from '../lib/convert/prefix.ts';
import { ProtobufListToTenant } from '../lib/convert/protobuf/streams.ts';
import { convertContextOf } from '../lib/convert/tenant-context.ts';
import { TenantViewScanner } from '../lib/stream/tenant-view.ts';
import { tenantViewSpecOf } from '../lib/stream/view-spec.ts';
import { DiscoveryCache, type DiscoveryTables } from '../lib/upstream/discovery.ts';

/** What the worker needs to make the same converter as the event loop's (TenantConversions.viewSpecOf). */
export interface RewriteStreamTask {
  /** The answer's encoding. */
  kind: 'json-list' | 'protobuf-list';
  tenant: TenantId;
  row: KindRow;
  /** protobuf-list: the list's apiVersion, as asked of the upstream. */
  apiVersion?: string;
  discovery: DiscoveryTables;
  webhookUrlHosts: ReadonlySet<string> | undefined;
  /** Chunks in (RewriteInput), the tenant's bytes out (RewriteOutput); the main thread closes it to cancel. */
  port: MessagePort;
}

/** Main thread → worker: a chunk of the upstream answer (moved, not copied), or null at its end. */
export type RewriteInput = Uint8Array | null;

/**
 * Worker → main thread: for each input in order, the bytes ready to send, in order, moved (most lie in the input's own
 * memory, rewritten in place, which goes back with them); or the error that ends the answer.
 */
export type RewriteOutput = { out: Uint8Array[]; last: boolean; scanSeconds: number } | { error: string };

/** A converter of one answer: the chunk is the converter's from then on; gives the parts ready to send. */
interface OwnedConverter {
  write(chunk: Buffer): Buffer[];
  finish(): Buffer[];
  /** Whether parts lying in a chunk's memory may move with it (the converter keeps no view of a chunk it was given). */
  readonly keepsNoChunk: boolean;
}

function converterOf(task: RewriteStreamTask): OwnedConverter {
  const convert = convertContextOf(task.tenant, DiscoveryCache.ofTables(task.discovery), task.webhookUrlHosts);
  if (task.kind === 'protobuf-list') {
    // (Its pending bytes are views of the chunks it was given: those stay here, what it sends is copied.)
    const list = new ProtobufListToTenant(task.row, convert, task.apiVersion!);
    return { write: (chunk) => [list.write(chunk)], finish: () => [list.finish()], keepsNoChunk: false };
  }
  // The scanner copies the item a chunk cuts into its own memory and writes the rest over the chunk.
  const scanner = new TenantViewScanner('list', tenantViewSpecOf(task.row, convert));
  return { write: (chunk) => scanner.writeOwned(chunk), finish: () => [scanner.finish()], keepsNoChunk: true };
}

/** Resolves when the answer has been rewritten to its end, ended in error, or been cancelled (port closed). */
export default function rewriteStream(task: RewriteStreamTask): Promise<void> {
  const { port } = task;
  return new Promise((resolve) => {
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      port.removeAllListeners();
      resolve();
    };
    port.on('close', end);
    let converter: OwnedConverter;
    try {
      converter = converterOf(task);
    } catch (error) {
      port.postMessage({ error: (error as Error).message } satisfies RewriteOutput);
      end();
      return;
    }
    port.on('message', (input: RewriteInput) => {
      if (ended) return;
      const started = performance.now();
      try {
        const chunk = input === null ? null : Buffer.from(input.buffer, input.byteOffset, input.byteLength);
        const parts = chunk === null ? converter.finish() : converter.write(chunk);
        const { out, transfer } = movable(parts, converter.keepsNoChunk ? chunk : null);
        const answer: RewriteOutput = { out, last: input === null, scanSeconds: (performance.now() - started) / 1000 };
        port.postMessage(answer, transfer);
        if (input === null) end();
      } catch (error) {
        port.postMessage({ error: (error as Error).message } satisfies RewriteOutput);
        end();
      }
    });
  });
}

/**
 * The parts as they can be moved to the main thread: those in `chunk`'s memory (the converter keeps none of it) or in
 * memory of their own move with it; the others (views of memory the converter keeps, or of Node's shared pool of small
 * buffers) are copied, together, into one buffer of their own.
 */
function movable(parts: Buffer[], chunk: Buffer | null): { out: Uint8Array[]; transfer: ArrayBuffer[] } {
  const out: Uint8Array[] = [];
  const transfer = new Set<ArrayBuffer>();
  let copied: Buffer[] = [];
  const flushCopied = () => {
    if (copied.length === 0) return;
    const joined = ownedJoin(copied);
    out.push(joined);
    transfer.add(joined.buffer as ArrayBuffer);
    copied = [];
  };
  for (const part of parts) {
    if (part.length === 0) continue;
    const memory = part.buffer as ArrayBuffer;
    const own = chunk !== null && memory === chunk.buffer;
    // Larger than the pool's slab: allocated for this part alone (Buffer.allocUnsafe of a big size), the converter's
    // output that it let go of.
    if (own || (chunk !== null && memory.byteLength > Buffer.poolSize && memory.byteLength - part.byteLength < memory.byteLength / 2)) {
      flushCopied();
      out.push(part);
      transfer.add(memory);
    } else copied.push(part);
  }
  flushCopied();
  return { out, transfer: [...transfer] };
}

/** The parts in one buffer that owns its memory (so it can be moved; Buffer.concat may hand out pooled memory). */
function ownedJoin(parts: Buffer[]): Buffer {
  let length = 0;
  for (const part of parts) length += part.length;
  const out = Buffer.allocUnsafeSlow(length);
  let at = 0;
  for (const part of parts) at += part.copy(out, at);
  return out;
}

// A piscina task: one large list answer rewritten into a tenant's view as its chunks arrive over a MessagePort, each
// chunk answered with the bytes ready to send. Never holds more than the chunks it was sent and the item they cut.
import type { MessagePort } from 'node:worker_threads';
import type { KindRow } from '../lib/convert/kinds.ts';
import type { TenantId } from '../lib/convert/prefix.ts';
import { convertContextOf } from '../lib/request/tenant-conversions.ts';
import { TenantViewScanner } from '../lib/stream/tenant-view.ts';
import { tenantViewSpecOf } from '../lib/stream/view-spec.ts';
import { DiscoveryCache, type DiscoveryTables } from '../lib/upstream/discovery.ts';

/** What the worker needs to make the same view spec as the event loop's (TenantConversions.viewSpecOf). */
export interface RewriteStreamTask {
  /** The answer's encoding; protobuf lists will be a second kind over the same channel. */
  kind: 'json-list';
  tenant: TenantId;
  row: KindRow;
  discovery: DiscoveryTables;
  webhookUrlHosts: ReadonlySet<string> | undefined;
  /** Chunks in (RewriteInput), the tenant's bytes out (RewriteOutput); the main thread closes it to cancel. */
  port: MessagePort;
}

/** Main thread → worker: a chunk of the upstream answer (moved, not copied), or null at its end. */
export type RewriteInput = Uint8Array | null;

/** Worker → main thread: for each input in order, the bytes ready to send; or the error that ends the answer. */
export type RewriteOutput = { out: Uint8Array; last: boolean; scanSeconds: number } | { error: string };

const EMPTY = new Uint8Array(0);

/** Resolves when the answer has been rewritten to its end, ended in error, or been cancelled (port closed). */
export default function rewriteStream(task: RewriteStreamTask): Promise<void> {
  const { port } = task;
  const convert = convertContextOf(task.tenant, DiscoveryCache.ofTables(task.discovery), task.webhookUrlHosts);
  const scanner = new TenantViewScanner('list', tenantViewSpecOf(task.row, convert));
  return new Promise((resolve) => {
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      port.removeAllListeners();
      resolve();
    };
    port.on('close', end);
    port.on('message', (input: RewriteInput) => {
      if (ended) return;
      const started = performance.now();
      try {
        const parts = input === null ? [scanner.finish()] : scanner.writeOwned(Buffer.from(input.buffer, input.byteOffset, input.byteLength));
        const out = ownedJoin(parts);
        const answer: RewriteOutput = { out, last: input === null, scanSeconds: (performance.now() - started) / 1000 };
        port.postMessage(answer, out.byteLength === 0 ? [] : [out.buffer as ArrayBuffer]);
        if (input === null) end();
      } catch (error) {
        port.postMessage({ error: (error as Error).message } satisfies RewriteOutput);
        end();
      }
    });
  });
}

/** The parts in one buffer that owns its memory (so it can be moved; Buffer.concat may hand out pooled memory). */
function ownedJoin(parts: Buffer[]): Uint8Array {
  let length = 0;
  for (const part of parts) length += part.length;
  if (length === 0) return EMPTY;
  const out = Buffer.allocUnsafeSlow(length);
  let at = 0;
  for (const part of parts) at += part.copy(out, at);
  return out;
}

// Reading a whole body (a request's, or an upstream answer to convert whole), bounded so a huge one cannot
// exhaust memory; and the upstream's error answer as the tenant's Status error.
import type { Readable } from 'node:stream';
import type { TenantId } from '../convert/prefix.ts';
import { statusToTenant } from '../convert/status.ts';
import { StatusError, type StatusReason } from '../server/status.ts';

/** The whole body; `tooLarge()` is the rejection once it passes `limit` bytes (the stream is destroyed). */
export function readBody(stream: Readable, limit: number, tooLarge: () => Error): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        stream.destroy();
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    });
    stream.on('end', () => resolve(Buffer.concat(chunks, size)));
    stream.on('error', reject);
  });
}

/** An upstream error answer (a Status, parsed or not) as the StatusError the tenant gets, in its own names. */
export function tenantStatusError(status: number, body: unknown, tenant: TenantId): StatusError {
  const view = statusToTenant(typeof body === 'object' && body !== null ? body : {}, tenant) as { reason?: string; message?: string; details?: unknown };
  // The upstream's reason is one of metav1's, relayed as it is.
  return new StatusError(status, (view.reason ?? 'InternalError') as StatusReason, view.message ?? `the upstream answered ${status}`, view.details as never);
}

// Reading a whole body (a request's, or an upstream answer to convert whole), bounded so a huge one cannot
// exhaust memory; and the upstream's error answer as the tenant's Status error.
import type { Readable } from 'node:stream';
import type { TenantId } from '../convert/prefix.ts';
import { statusToTenant, stripTenantPrefixes } from '../convert/status.ts';
import { reasonOfCode, StatusError, type StatusReason } from '../errors/status-error.ts';

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
    // One chunk (a small body, an object's answer) is the body: no copy.
    stream.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)));
    stream.on('error', reject);
  });
}

/** Longest plain-text error answer relayed as a Status message (the apiserver's are one line: `404 page not found`). */
const MAX_TEXT_MESSAGE = 1024;

/**
 * An upstream error answer as the StatusError the tenant gets, in its own names, with the upstream's code: a Status
 * (parsed or not), or plain text (the mux's `404 page not found` for a path nothing serves) as the message.
 */
export function tenantStatusError(status: number, body: unknown, tenant: TenantId): StatusError {
  if (typeof body === 'string' || Buffer.isBuffer(body)) {
    const text = String(body).slice(0, MAX_TEXT_MESSAGE).trim();
    return new StatusError(status, reasonOfCode(status), text === '' ? `the upstream answered ${status}` : stripTenantPrefixes(text, tenant));
  }
  const view = statusToTenant(typeof body === 'object' && body !== null ? body : {}, tenant) as { reason?: string; message?: string; details?: unknown };
  // The upstream's reason is one of metav1's, relayed as it is.
  return new StatusError(
    status,
    (view.reason ?? reasonOfCode(status)) as StatusReason,
    view.message ?? `the upstream answered ${status}`,
    view.details as never,
  );
}

// Waiting for a response body to take more bytes, for answers written in pieces (lists tenantgate writes itself).
// Never waits for ever: a response that closes instead ends the wait.
import type { Writable } from 'node:stream';

/** Resolves true once `out` drained, false when it closed first (the client went away). */
export function drained(out: Writable): Promise<boolean> {
  if (out.destroyed) return Promise.resolve(false);
  return new Promise((resolve) => {
    const settle = () => {
      out.off('drain', settle);
      out.off('close', settle);
      resolve(!out.destroyed);
    };
    out.on('drain', settle);
    out.on('close', settle);
  });
}

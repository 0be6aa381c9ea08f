// Bounds how fast one client connection may cancel streams it opened (HTTP/2 rapid reset, CVE-2023-44487):
// each cancelled stream already cost an upstream request, so a flood of them ends the connection.
import http2, { type ServerHttp2Session, type ServerHttp2Stream } from 'node:http2';
import { log } from '../log.ts';

const { NGHTTP2_ENHANCE_YOUR_CALM } = http2.constants;

export interface ResetBudget {
  /** Cancellations allowed at once. */
  burst: number;
  /** Cancellations earned back per second. */
  perSecond: number;
}

export const DEFAULT_RESET_BUDGET: ResetBudget = { burst: 200, perSecond: 50 };

/** Watches a session's streams and ends the session with ENHANCE_YOUR_CALM once the client spends its budget. */
export function limitStreamResets(session: ServerHttp2Session, budget: ResetBudget = DEFAULT_RESET_BUDGET): void {
  let closing = false;
  let tokens = budget.burst;
  let refilledAt = Date.now();
  session.on('stream', (stream: ServerHttp2Stream) => {
    // 'aborted': the client reset the stream before tenantgate finished answering it.
    stream.once('aborted', () => {
      if (closing) return;
      const now = Date.now();
      tokens = Math.min(budget.burst, tokens + ((now - refilledAt) / 1000) * budget.perSecond);
      refilledAt = now;
      if (--tokens >= 0) return;
      closing = true;
      log.warn('closing a connection that cancels streams too fast', { remoteAddress: session.socket?.remoteAddress });
      session.goaway(NGHTTP2_ENHANCE_YOUR_CALM);
      // Let the GOAWAY frame out, then cut the connection (session.destroy() alone leaves the TLS socket open).
      setImmediate(() => {
        session.socket?.destroy();
        session.destroy();
      });
    });
  });
}

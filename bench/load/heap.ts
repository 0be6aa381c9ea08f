// tenantgate's heap after a full collection, read through the inspector of a process started with
// `--inspect=127.0.0.1:0`: what a count of tenants or watchers holds, without the garbage a plain RSS reading
// includes. Loopback only; one short WebSocket session per reading.

/** The inspector's address from the process's stderr ("Debugger listening on ws://127.0.0.1:PORT/ID"); null without one. */
export function inspectorUrlOf(lines: readonly string[]): string | null {
  for (const line of lines) {
    const match = /Debugger listening on (ws:\/\/127\.0\.0\.1:\d+\/[0-9a-f-]+)/.exec(line);
    if (match !== null) return match[1]!;
  }
  return null;
}

/** Node flags for the process to read: its inspector on loopback, any free port. */
export const INSPECTOR_FLAGS = ['--inspect=127.0.0.1:0'];

export interface HeapReading {
  /** V8 heap in use after a full collection. */
  heapUsedBytes: number;
  /** Memory outside V8's heap that JavaScript objects hold (Buffers). */
  externalBytes: number;
  rssBytes: number;
}

const TIMEOUT_MS = 30_000;

/** Collects garbage in the inspected process (twice: weak references go in the second), then reads its memory. */
export async function heapAfterCollection(url: string): Promise<HeapReading> {
  const socket = new WebSocket(url);
  const pending = new Map<number, (result: unknown) => void>();
  let nextId = 1;
  const timer = setTimeout(() => socket.close(), TIMEOUT_MS);
  try {
    await new Promise<void>((resolve, reject) => {
      socket.addEventListener('open', () => resolve(), { once: true });
      socket.addEventListener('error', () => reject(new Error(`inspector ${url}: cannot connect`)), { once: true });
    });
    const closed = new Promise<never>((_resolve, reject) =>
      socket.addEventListener('close', () => reject(new Error(`inspector ${url}: closed`)), { once: true }),
    );
    socket.addEventListener('message', (event) => {
      const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown };
      if (message.id !== undefined) pending.get(message.id)?.(message.result);
    });
    const call = (method: string, params: unknown = {}) =>
      Promise.race([
        new Promise<unknown>((resolve) => {
          const id = nextId++;
          pending.set(id, resolve);
          socket.send(JSON.stringify({ id, method, params }));
        }),
        closed,
      ]);
    await call('HeapProfiler.collectGarbage');
    await call('HeapProfiler.collectGarbage');
    const answer = (await call('Runtime.evaluate', { expression: 'JSON.stringify(process.memoryUsage())', returnByValue: true })) as {
      result?: { value?: string };
    };
    const usage = JSON.parse(answer.result?.value ?? '{}') as { heapUsed?: number; external?: number; rss?: number };
    if (usage.heapUsed === undefined) throw new Error(`inspector ${url}: no memory usage in the answer`);
    return { heapUsedBytes: usage.heapUsed, externalBytes: usage.external ?? 0, rssBytes: usage.rss ?? 0 };
  } finally {
    clearTimeout(timer);
    socket.close();
  }
}

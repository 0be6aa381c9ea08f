// Open-loop load at a fixed rate, for latency at rest: requests leave on a schedule whatever the answers (as
// controllers' reconciles and kubectl arrive), and each one's time to the end of its answer is kept. HTTP/2 over one
// session, as client-go sends; HTTP/1.1 over keep-alive connections, a new one only while all are busy. Bounded in
// count; loopback only.
import http2 from 'node:http2';
import https from 'node:https';
import { performance } from 'node:perf_hooks';

export type PacedProtocol = 'http1' | 'http2';

export interface PacedLoad {
  /** The whole URL of the GET. */
  url: string;
  protocol: PacedProtocol;
  headers: Record<string, string>;
  /** The CA that signed the server's certificate. */
  caPem: string | Buffer;
  ratePerSecond: number;
  requests: number;
  /** Sent one at a time before the schedule starts (TLS, JIT, caches), not counted. */
  warmUp?: number;
}

export interface PacedRun {
  /** Each 2xx request's time from leaving to the end of its answer, ms. */
  latenciesMs: number[];
  non2xx: number;
  /** How late the client sent, ms: its own timer's lag, which every target meets alike (p99). */
  sendLagP99Ms: number;
}

/** How long a paced run may take beyond its schedule before it is cut short. */
const SLACK_MS = 30_000;
const DEFAULT_WARM_UP = 50;

type Send = () => Promise<{ status: number; ms: number }>;

function http2Sender(load: PacedLoad): { send: Send; close(): void } {
  const url = new URL(load.url);
  const session = http2.connect(url.origin, { ca: load.caPem });
  session.on('error', () => {});
  const path = url.pathname + url.search;
  const send: Send = () =>
    new Promise((resolve, reject) => {
      const started = performance.now();
      const stream = session.request({ ':path': path, ...load.headers }, { endStream: true });
      let status = 0;
      stream.on('response', (headers) => (status = Number(headers[':status'])));
      stream.on('data', () => {});
      stream.on('end', () => resolve({ status, ms: performance.now() - started }));
      stream.on('error', reject);
    });
  return { send, close: () => session.close() };
}

function http1Sender(load: PacedLoad): { send: Send; close(): void } {
  const url = new URL(load.url);
  // lifo: the connection used last goes first, so at rest one connection carries everything, as a client's would.
  const agent = new https.Agent({ keepAlive: true, maxSockets: 16, scheduling: 'lifo', ca: load.caPem });
  const send: Send = () =>
    new Promise((resolve, reject) => {
      const started = performance.now();
      const request = https.request({ host: url.hostname, port: url.port, path: url.pathname + url.search, headers: load.headers, agent }, (answer) => {
        answer.on('data', () => {});
        answer.on('end', () => resolve({ status: answer.statusCode ?? 0, ms: performance.now() - started }));
        answer.on('error', reject);
      });
      request.on('error', reject);
      request.end();
    });
  return { send, close: () => agent.destroy() };
}

/** `requests` GETs sent at `ratePerSecond` on a fixed schedule (open loop), after a warm-up one at a time. */
export async function pacedLoad(load: PacedLoad): Promise<PacedRun> {
  const sender = load.protocol === 'http2' ? http2Sender(load) : http1Sender(load);
  try {
    for (let i = 0; i < (load.warmUp ?? DEFAULT_WARM_UP); i++) await sender.send();
    const latenciesMs: number[] = [];
    const lagsMs: number[] = [];
    const answers: Promise<void>[] = [];
    const intervalMs = 1000 / load.ratePerSecond;
    const start = performance.now();
    const deadline = start + load.requests * intervalMs + SLACK_MS;
    for (let i = 0; i < load.requests; i++) {
      const due = start + i * intervalMs;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      lagsMs.push(Math.max(0, performance.now() - due));
      answers.push(
        sender.send().then(
          ({ status, ms }) => {
            if (status >= 200 && status < 300) latenciesMs.push(ms);
          },
          () => {},
        ),
      );
    }
    let timer: NodeJS.Timeout | undefined;
    const cut = new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, deadline - performance.now()))));
    await Promise.race([Promise.all(answers), cut]);
    clearTimeout(timer);
    lagsMs.sort((a, b) => a - b);
    // Not answered 2xx: refused, failed, or still out when the run was cut.
    return { latenciesMs, non2xx: load.requests - latenciesMs.length, sendLagP99Ms: lagsMs[Math.floor(lagsMs.length * 0.99)] ?? 0 };
  } finally {
    sender.close();
  }
}

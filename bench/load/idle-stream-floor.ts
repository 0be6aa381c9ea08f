// node:http2's own memory per idle open stream: the floor under tenantgate's RSS per idle watcher. A bare node:http2
// TLS server (bench/bare-http2.ts, mode hold-stream) answers each request with its headers and one event and keeps the
// stream open, as a watch does; the same sessions and streams as the watch fan-out are opened on it, and its memory is
// read after a forced full collection before and after the streams. Loopback only, bounded in count and time.
import type { ChildProcess } from 'node:child_process';
import http2, { type ClientHttp2Session } from 'node:http2';
import { stopChild } from '../../test/helpers/stack.ts';
import { spawnBare } from './bare-server.ts';
import { heapAfterCollection, INSPECTOR_FLAGS, inspectorUrlOf, type HeapReading } from './heap.ts';
import { runBounded } from './run-bounded.ts';

const OPEN_TIMEOUT_MS = 30_000;
const CONCURRENCY = 64;
const SETTLE_MS = 2_000;

export interface IdleStreamFloor {
  streams: number;
  rssPerStreamAfterGcBytes: number;
  heapUsedPerStreamAfterGcBytes: number;
  externalPerStreamAfterGcBytes: number;
}

function connect(url: string, caPem: string): Promise<ClientHttp2Session> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(url, { ca: caPem });
    session.once('error', reject);
    session.once('remoteSettings', () => {
      session.off('error', reject);
      session.on('error', () => {});
      resolve(session);
    });
  });
}

/** Opens one stream and waits for its first event, as a watcher waits for its initial state. */
function hold(session: ClientHttp2Session): Promise<void> {
  return new Promise((resolve, reject) => {
    const stream = session.request({ ':path': '/api/v1/namespaces/default/configmaps?watch=1', accept: 'application/json' });
    const timer = setTimeout(() => reject(new Error(`no first event within ${OPEN_TIMEOUT_MS / 1000} s`)), OPEN_TIMEOUT_MS);
    stream.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    stream.once('data', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/**
 * `sessions` sessions with `streamsPerSession` idle streams each on a bare node:http2 server with the serving
 * certificate `certFile`/`keyFile` (trusted by `caPem`); its memory per stream after a forced full collection.
 */
export async function idleStreamFloor(options: {
  certFile: string;
  keyFile: string;
  caPem: string;
  sessions: number;
  streamsPerSession: number;
}): Promise<IdleStreamFloor> {
  let child: ChildProcess | null = null;
  const sessions: ClientHttp2Session[] = [];
  try {
    const bare = await spawnBare('hold-stream', [options.certFile, options.keyFile], INSPECTOR_FLAGS);
    child = bare.child;
    const { url, stderr } = bare;
    const inspector = inspectorUrlOf(stderr);
    if (inspector === null) throw new Error(`bare hold-stream server: no inspector address in ${stderr.join(' ')}`);
    sessions.push(...(await runBounded(options.sessions, CONCURRENCY, () => connect(url, options.caPem))));
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const withSessions: HeapReading = await heapAfterCollection(inspector);
    const streams = options.sessions * options.streamsPerSession;
    await runBounded(streams, CONCURRENCY, (index) => hold(sessions[index % sessions.length]!));
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const withStreams = await heapAfterCollection(inspector);
    const per = (field: keyof HeapReading) => Math.round((withStreams[field] - withSessions[field]) / streams);
    return {
      streams,
      rssPerStreamAfterGcBytes: per('rssBytes'),
      heapUsedPerStreamAfterGcBytes: per('heapUsedBytes'),
      externalPerStreamAfterGcBytes: per('externalBytes'),
    };
  } finally {
    for (const session of sessions) session.destroy();
    if (child !== null) await stopChild(child);
  }
}

// The event loop's share of a list's rewrite, inline and on a worker thread, measured in memory (no network): the
// list goes through the rewriter in 16 KiB chunks (an HTTP/2 DATA frame's size) and the event loop's busy time is read.
// Fast-path kinds (ConfigMaps: bytes edited in place) and slow-path ones (RoleBindings: each item parsed by its rule).
import { performance } from 'node:perf_hooks';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { kindOf, type KindRow } from '../../lib/convert/kinds.ts';
import { listRewriter, setListOffloadThreshold } from '../../lib/request/offload.ts';
import { convertContextOf } from '../../lib/convert/tenant-context.ts';
import { tenantViewSpecOf } from '../../lib/stream/view-spec.ts';
import { DiscoveryCache } from '../../lib/upstream/discovery.ts';

const CHUNK = 16 * 1024;
const TENANT = 'loud01';

export const FAST_ROW: KindRow = kindOf('', 'configmaps')!;
export const SLOW_ROW: KindRow = kindOf('rbac.authorization.k8s.io', 'rolebindings')!;

/** An upstream list of about `bytes` of ConfigMaps (fast path) or RoleBindings (slow path), in the tenant's namespace. */
export function upstreamList(row: KindRow, bytes: number): Buffer {
  const items: string[] = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const metadata = {
      name: `item-${i}`,
      namespace: `${TENANT}-default`,
      uid: `uid-${i}`,
      resourceVersion: String(1000 + i),
      labels: { 'kubezoo.io/tenant': TENANT },
    };
    const item =
      row === FAST_ROW
        ? { metadata, data: { value: 'v'.repeat(16 * 1024) } }
        : {
            metadata,
            roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'reader' },
            subjects: Array.from({ length: 100 }, (_, s) => ({ kind: 'ServiceAccount', name: `sa-${s}`, namespace: `${TENANT}-default` })),
          };
    const json = JSON.stringify(item);
    items.push(json);
    size += json.length + 1;
  }
  const kind = row === FAST_ROW ? 'ConfigMapList' : 'RoleBindingList';
  return Buffer.from(`{"kind":"${kind}","apiVersion":"v1","metadata":{"resourceVersion":"42"},"items":[${items.join(',')}]}`);
}

function discovery(): DiscoveryCache {
  return DiscoveryCache.ofTables({
    scopes: new Map([
      ['/configmaps', 'Namespaced'],
      ['rbac.authorization.k8s.io/rolebindings', 'Namespaced'],
      ['rbac.authorization.k8s.io/roles', 'Namespaced'],
      ['/serviceaccounts', 'Namespaced'],
    ]),
    kindScopes: new Map([
      ['/ConfigMap', 'Namespaced'],
      ['rbac.authorization.k8s.io/Role', 'Namespaced'],
      ['/ServiceAccount', 'Namespaced'],
    ]),
    resourcesByVersion: new Map(),
  });
}

export interface MemoryRun {
  /** Wall time of the whole list. */
  ms: number;
  /** Time the event loop was busy meanwhile (everything else waits for it). */
  loopBusyMs: number;
  /** The longest the event loop was held at once (a timer's lateness, 1 ms resolution). */
  longestBlockMs: number;
  outBytes: number;
}

/** One pass of `list` through the rewriter at `threshold` (0: inline; 1: always a worker). */
export async function rewriteOnce(row: KindRow, list: Buffer, threshold: number): Promise<MemoryRun> {
  setListOffloadThreshold(threshold);
  const cache = discovery();
  const convert = convertContextOf(TENANT, cache, undefined);
  const rewriter = listRewriter({ row, convert, discovery: cache, spec: tenantViewSpecOf(row, convert), declaredLength: null });
  let outBytes = 0;
  // Chunks arrive one per turn of the event loop, as from a socket: other work can run between them.
  let offset = 0;
  const source = new Readable({
    read() {
      setImmediate(() => {
        const at = offset;
        offset += CHUNK;
        this.push(at < list.length ? list.subarray(at, at + CHUNK) : null);
      });
    },
  });
  let longest = 0;
  let expected = performance.now() + 1;
  const probe = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - expected);
    expected = now + 1;
  }, 1);
  const before = performance.eventLoopUtilization();
  const started = performance.now();
  await pipeline(
    source,
    rewriter,
    new Writable({
      write(chunk: Buffer, _e, done) {
        outBytes += chunk.length;
        done();
      },
    }),
  );
  const ms = performance.now() - started;
  const busy = performance.eventLoopUtilization(before);
  clearInterval(probe);
  return { ms, loopBusyMs: busy.active, longestBlockMs: Math.max(0, longest), outBytes };
}

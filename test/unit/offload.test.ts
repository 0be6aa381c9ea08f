// Documents converted on a worker thread come back exactly as the inline conversion makes them, and a broken one
// comes back as the Status error the inline conversion would throw.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { openapiV2ToTenant } from '../../lib/convert/openapi.ts';
import { openapiV2ToProtobuf } from '../../lib/convert/protobuf/openapi-v2.ts';
import { closeOffload, convertOffThread } from '../../lib/request/offload.ts';
import { StatusError } from '../../lib/errors/status-error.ts';
import { Readable, type Transform, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { kindOf } from '../../lib/convert/kinds.ts';
import { LIST_OFFLOAD_MEASURED_BYTES, listRewriter, openStreamRewrites, protobufListRewriter, setListOffloadThreshold } from '../../lib/request/offload.ts';
import { encodeBody, goModuleCache, loadProtoMessages } from '../helpers/k8s-proto.ts';
import { serveFlagsParser } from '../helpers/serve-config.ts';
import { convertContextOf } from '../../lib/convert/tenant-context.ts';
import { SizeRoutedListRewriter } from '../../lib/stream/offloaded-list.ts';
import { rewriteListBuffer } from '../../lib/stream/tenant-view.ts';
import { tenantViewSpecOf } from '../../lib/stream/view-spec.ts';
import { DiscoveryCache } from '../../lib/upstream/discovery.ts';

/**
 * Waits for every worker task to have ended, up to 10 s: the assertions after it are that they end (none leaks), and a
 * loaded machine (CI runs three test files at once) may schedule the worker threads' last messages a second late.
 */
async function rewritesEnded(): Promise<void> {
  for (let wait = 0; wait < 500 && openStreamRewrites() > 0; wait++) await new Promise((resolve) => setTimeout(resolve, 20));
}

const FIXTURE = readFileSync(new URL('../fixtures/openapi-v2.json', import.meta.url));
t.teardown(() => closeOffload());

t.test("the worker's view of an OpenAPI v2 document is the inline one", async (t) => {
  const inline = JSON.stringify(openapiV2ToTenant(JSON.parse(FIXTURE.toString('utf8')), 'alpha1'));
  const body = Buffer.from(FIXTURE); // its own memory: moved to the worker, not copied
  const viaWorker = await convertOffThread({ kind: 'openapi-v2', tenant: 'alpha1', body, protobuf: false });
  t.equal(viaWorker.toString('utf8'), inline);
  const small = Buffer.from('{"swagger":"2.0","paths":{}}'); // a pooled Buffer: copied, the pool's memory stays
  await convertOffThread({ kind: 'openapi-v2', tenant: 'alpha1', body: small, protobuf: false });
  t.equal(small.toString(), '{"swagger":"2.0","paths":{}}', 'a Buffer sharing pooled memory is still readable afterwards');
  const protobuf = await convertOffThread({ kind: 'openapi-v2', tenant: 'alpha1', body: Buffer.from(FIXTURE), protobuf: true });
  t.same(protobuf, openapiV2ToProtobuf(JSON.parse(inline)), 'and as protobuf, the inline encoding of the same view');
});

t.test('a broken document is a 502 Status, not a crash of the worker', async (t) => {
  for (const broken of ['not json', '{"swagger":"2.0"}']) {
    const error = await convertOffThread({ kind: 'openapi-v2', tenant: 'alpha1', body: Buffer.from(broken), protobuf: false }).catch((e: unknown) => e);
    t.ok(error instanceof StatusError && error.code === 502, `${broken}: ${(error as Error).message}`);
  }
});

// ---- lists rewritten on a worker thread as they stream

/** A ConfigMap list upstream: tenant alpha1's items, another tenant's with the same names, and an owner reference. */
function upstreamConfigMapList(count: number): Buffer {
  const items: object[] = [];
  for (let i = 0; i < count; i++) {
    for (const tenant of ['alpha1', 'beta22']) {
      items.push({
        metadata: {
          name: `cm-${i}`,
          namespace: `${tenant}-default`,
          labels: { 'kubezoo.io/tenant': tenant },
          ownerReferences: i % 7 === 0 ? [{ apiVersion: 'v1', kind: 'Namespace', name: `${tenant}-default`, uid: 'u' }] : undefined,
        },
        data: { value: 'x'.repeat(i % 300) + '"\\u00e9' },
      });
    }
  }
  return Buffer.from(JSON.stringify({ kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: '42' }, items }));
}

const CONFIGMAPS = kindOf('', 'configmaps')!;

function discoveryOfRig(): DiscoveryCache {
  return DiscoveryCache.ofTables({
    scopes: new Map([
      ['/configmaps', 'Namespaced'],
      ['/namespaces', 'Cluster'],
    ]),
    kindScopes: new Map([
      ['/ConfigMap', 'Namespaced'],
      ['/Namespace', 'Cluster'],
    ]),
    resourcesByVersion: new Map([['/v1', ['configmaps', 'namespaces']]]),
  });
}

/** The list's view through listRewriter at `threshold`, fed in pieces of `piece` bytes, and whether it went to a worker. */
async function throughRewriter(
  upstream: Buffer,
  threshold: number,
  piece: number,
  declaredLength: number | null = null,
): Promise<{ view: Buffer; offloaded: boolean }> {
  setListOffloadThreshold(threshold);
  const discovery = discoveryOfRig();
  const convert = convertContextOf('alpha1', discovery, undefined);
  const rewriter = listRewriter({ row: CONFIGMAPS, convert, discovery, spec: tenantViewSpecOf(CONFIGMAPS, convert), declaredLength });
  const pieces: Buffer[] = [];
  for (let at = 0; at < upstream.length; at += piece) pieces.push(upstream.subarray(at, at + piece));
  const out: Buffer[] = [];
  await pipeline(
    Readable.from(pieces),
    rewriter,
    new Writable({
      write(chunk, _e, done) {
        out.push(chunk);
        done();
      },
    }),
  );
  return { view: Buffer.concat(out), offloaded: rewriter instanceof SizeRoutedListRewriter && rewriter.offloaded };
}

t.test('a list rewritten on a worker is byte for byte the inline view, however it is cut', async (t) => {
  const upstream = upstreamConfigMapList(400);
  const inline = rewriteListBuffer(upstream, tenantViewSpecOf(CONFIGMAPS, convertContextOf('alpha1', discoveryOfRig(), undefined)));
  t.notOk(inline.includes('beta22'), "the other tenant's items are not in the view");
  for (const [threshold, piece, declared, offloaded] of [
    [0, 16384, null, false],
    [1, 16384, null, true],
    [1, 7, null, true],
    [100_000, 16384, null, true],
    [100_000, 1000, upstream.length, true],
    [upstream.length + 1, 16384, null, false],
    [upstream.length + 1, 16384, upstream.length, false],
  ] as const) {
    const result = await throughRewriter(upstream, threshold, piece, declared);
    t.equal(result.offloaded, offloaded, `threshold ${threshold}, pieces of ${piece}, Content-Length ${declared}: offloaded ${offloaded}`);
    t.ok(result.view.equals(inline), 'the same bytes');
  }
  // (A task ends a moment after its last answer reaches the event loop.)
  await rewritesEnded();
  t.equal(openStreamRewrites(), 0, 'every worker task ended');
});

t.test('a broken list fails the stream as inline, and a list abandoned mid-way frees its worker task', async (t) => {
  const upstream = upstreamConfigMapList(400);
  const broken = Buffer.concat([upstream.subarray(0, 200_000), Buffer.from('}garbage')]);
  const error = await throughRewriter(broken, 1, 16384).catch((e: unknown) => e);
  t.match(error, { message: /./ }, `the pipeline fails: ${(error as Error).message}`);
  t.throws(() => rewriteListBuffer(broken, tenantViewSpecOf(CONFIGMAPS, convertContextOf('alpha1', discoveryOfRig(), undefined))), 'as inline');

  setListOffloadThreshold(1);
  const discovery = discoveryOfRig();
  const convert = convertContextOf('alpha1', discovery, undefined);
  for (let i = 0; i < 40; i++) {
    const rewriter = listRewriter({ row: CONFIGMAPS, convert, discovery, spec: tenantViewSpecOf(CONFIGMAPS, convert), declaredLength: null });
    rewriter.write(upstream.subarray(0, 100_000));
    await new Promise((resolve) => setTimeout(resolve, 5));
    rewriter.destroy();
  }
  await rewritesEnded();
  t.equal(openStreamRewrites(), 0, 'every abandoned task ended (more than the pool runs at once)');
  const after = await throughRewriter(upstream, 1, 16384);
  t.ok(after.offloaded, 'and the next large list still goes to a worker');
});

t.test('a client that stops reading stops the list on a worker within a few batches, not at its end', async (t) => {
  const upstream = upstreamConfigMapList(12000); // several MB
  setListOffloadThreshold(1);
  const discovery = discoveryOfRig();
  const convert = convertContextOf('alpha1', discovery, undefined);
  const rewriter = listRewriter({
    row: CONFIGMAPS,
    convert,
    discovery,
    spec: tenantViewSpecOf(CONFIGMAPS, convert),
    declaredLength: null,
  }) as SizeRoutedListRewriter;
  const pieces: Buffer[] = [];
  for (let at = 0; at < upstream.length; at += 16384) pieces.push(upstream.subarray(at, at + 16384));
  const source = Readable.from(pieces);
  source.pipe(rewriter); // and nobody reads the rewriter's output
  await new Promise((resolve) => setTimeout(resolve, 1000));
  t.ok(rewriter.offloaded, 'the list went to a worker');
  t.ok(upstream.length > 4 * 1024 * 1024, `the list is ${upstream.length} bytes`);
  t.ok(rewriter.bytesIn < 2 * 1024 * 1024, `${rewriter.bytesIn} bytes taken from upstream while the client read nothing`);
  rewriter.destroy();
  source.destroy();
});

// ---- protobuf lists on a worker thread

const PODS = kindOf('', 'pods')!;

/** A PodList in protobuf: tenant alpha1's pods and another tenant's with the same names, `count` of each. */
function upstreamPodList(count: number): Buffer {
  const messages = loadProtoMessages(goModuleCache() ?? '');
  const items: object[] = [];
  for (let i = 0; i < count; i++) {
    for (const tenant of ['alpha1', 'beta22']) {
      items.push({
        metadata: { name: `pod-${i}`, namespace: `${tenant}-default`, labels: { 'kubezoo.io/tenant': tenant, app: 'x'.repeat(i % 200) } },
        spec: { containers: [{ name: 'main', image: 'registry.example/app:1', args: ['--tenant', tenant] }], serviceAccountName: 'default' },
      });
    }
  }
  return encodeBody(messages, 'k8s.io.api.core.v1.PodList', { apiVersion: 'v1', kind: 'PodList', metadata: { resourceVersion: '42' }, items });
}

/** The protobuf list's view through protobufListRewriter at `threshold`, fed in pieces of `piece` bytes. */
async function throughProtobufRewriter(upstream: Buffer, threshold: number, piece: number): Promise<{ view: Buffer; offloaded: boolean }> {
  setListOffloadThreshold(threshold);
  const discovery = DiscoveryCache.ofTables({
    scopes: new Map([['/pods', 'Namespaced']]),
    kindScopes: new Map([['/Pod', 'Namespaced']]),
    resourcesByVersion: new Map([['/v1', ['pods']]]),
  });
  const rewriter = protobufListRewriter({
    row: PODS,
    convert: convertContextOf('alpha1', discovery, undefined),
    discovery,
    apiVersion: 'v1',
    declaredLength: null,
  });
  const pieces: Buffer[] = [];
  for (let at = 0; at < upstream.length; at += piece) pieces.push(upstream.subarray(at, at + piece));
  const out: Buffer[] = [];
  await pipeline(
    Readable.from(pieces),
    rewriter,
    new Writable({
      write(chunk, _e, done) {
        out.push(chunk);
        done();
      },
    }),
  );
  return { view: Buffer.concat(out), offloaded: rewriter instanceof SizeRoutedListRewriter && rewriter.offloaded };
}

t.test(
  'a protobuf list rewritten on a worker is byte for byte the inline view, however it is cut',
  { skip: goModuleCache() === undefined ? 'no Go module cache' : false },
  async (t) => {
    // Large enough to stream (past the engine's 4 MiB held whole) and small enough to be held.
    for (const count of [300, 12000]) {
      const upstream = upstreamPodList(count);
      const inline = await throughProtobufRewriter(upstream, 0, 16384);
      t.notOk(inline.offloaded, `${count} pods: threshold 0 stays inline`);
      t.notOk(inline.view.includes('beta22'), `${count} pods: the other tenant's pods are not in the view`);
      for (const piece of [16384, 1000]) {
        const viaWorker = await throughProtobufRewriter(upstream, 1, piece);
        t.ok(viaWorker.offloaded, `${count} pods (${upstream.length} bytes), pieces of ${piece}: on a worker`);
        t.ok(viaWorker.view.equals(inline.view), 'the same bytes as inline');
      }
    }
    const broken = Buffer.concat([upstreamPodList(300).subarray(0, 30_000), Buffer.from([0xff, 0xff, 0xff])]);
    const error = await throughProtobufRewriter(broken, 1, 16384).catch((e: unknown) => e);
    t.match(error, { message: /./ }, `a broken protobuf list fails the stream: ${(error as Error).message}`);
    await rewritesEnded();
    t.equal(openStreamRewrites(), 0, 'every worker task ended');
  },
);

t.test('JSON and protobuf lists go to the pool by thresholds of their own; by default a protobuf list stays inline', async (t) => {
  const parse = serveFlagsParser(t);
  const defaults = parse([]);
  t.equal(defaults.listOffloadThresholdBytes, LIST_OFFLOAD_MEASURED_BYTES, 'JSON lists: the measured threshold');
  t.equal(defaults.protobufListOffloadThresholdBytes, 0, 'protobuf lists: never');
  t.equal(parse(['--protobuf-list-offload-threshold', '2097152']).protobufListOffloadThresholdBytes, 2097152);
  t.throws(() => parse(['--protobuf-list-offload-threshold', '-1']), /protobuf-list-offload-threshold/, 'a negative threshold is refused by name');

  // A declared 64 MiB list of each encoding, under the defaults and then the other way round.
  const discovery = DiscoveryCache.ofTables({
    scopes: new Map([
      ['/pods', 'Namespaced'],
      ['/configmaps', 'Namespaced'],
    ]),
    kindScopes: new Map(),
    resourcesByVersion: new Map([['/v1', ['pods', 'configmaps']]]),
  });
  const convert = convertContextOf('alpha1', discovery, undefined);
  const declaredLength = 64 * 2 ** 20;
  // (A rewriter bound for the pool starts its worker task at once: destroyed here, which cancels it.)
  const pooled = (rewriter: Transform) => (rewriter.destroy(), rewriter instanceof SizeRoutedListRewriter);
  const ways = () => ({
    json: pooled(listRewriter({ row: CONFIGMAPS, convert, discovery, spec: tenantViewSpecOf(CONFIGMAPS, convert), declaredLength })),
    protobuf: pooled(protobufListRewriter({ row: PODS, convert, discovery, apiVersion: 'v1', declaredLength })),
  });
  setListOffloadThreshold(defaults.listOffloadThresholdBytes!, defaults.protobufListOffloadThresholdBytes);
  t.same(ways(), { json: true, protobuf: false }, 'defaults: the JSON list may go to the pool, the protobuf one stays inline');
  setListOffloadThreshold(0, 1024);
  t.same(ways(), { json: false, protobuf: true }, 'each threshold governs its own encoding only');
});

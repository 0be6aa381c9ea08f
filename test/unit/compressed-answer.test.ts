// The gzip writer of answers: the apiserver's threshold, the head sent once decided, every byte once, in order.
import { Writable } from 'node:stream';
import { gunzipSync } from 'node:zlib';
import t from 'tap';
import { acceptsGzip, GZIP_THRESHOLD_BYTES, GzipOut } from '../../lib/request/compressed-answer.ts';

/** A slow client, and what the writer released the head with. */
function client() {
  const received: Buffer[] = [];
  const to = new Writable({
    highWaterMark: 1024,
    write(chunk: Buffer, _encoding, callback) {
      received.push(chunk);
      setImmediate(callback);
    },
  });
  const heads: { compressed: boolean; length: number }[] = [];
  const out = new GzipOut(to, (compressed, length) => heads.push({ compressed, length }));
  return { to, out, received, heads };
}

async function writeAll(out: Writable, bytes: Buffer, chunk: number): Promise<void> {
  for (let at = 0; at < bytes.length; at += chunk) if (!out.write(bytes.subarray(at, at + chunk))) await new Promise((resolve) => out.once('drain', resolve));
  await new Promise<void>((resolve) => out.end(resolve));
}

t.test('an answer under the threshold goes whole, with its length; one at it or past goes compressed, every byte once', async (t) => {
  for (const [size, chunk, compressed] of [
    [GZIP_THRESHOLD_BYTES - 1, 1000, false],
    [GZIP_THRESHOLD_BYTES, 1000, true],
    [GZIP_THRESHOLD_BYTES * 5 + 17, 4096, true],
    [0, 1, false],
  ] as const) {
    const bytes = Buffer.from(Array.from({ length: size }, (_, i) => String.fromCharCode(97 + ((i * 7) % 26))).join(''));
    const { out, received, heads, to } = client();
    await writeAll(out, bytes, chunk);
    await new Promise((resolve) => (to.writableFinished ? resolve(null) : to.once('finish', resolve)));
    t.same(heads, [{ compressed, length: compressed ? 0 : size }], `${size} bytes: head released once`);
    const sent = Buffer.concat(received);
    t.ok((compressed ? gunzipSync(sent) : sent).equals(bytes), `${size} bytes: the same bytes, in order`);
  }
});

t.test('after passThrough (a head that went at once), bytes go as written', async (t) => {
  const { out, received, heads, to } = client();
  out.passThrough();
  const bytes = Buffer.alloc(GZIP_THRESHOLD_BYTES * 2, 'x');
  await writeAll(out, bytes, 8192);
  await new Promise((resolve) => (to.writableFinished ? resolve(null) : to.once('finish', resolve)));
  t.same(heads, []);
  t.ok(Buffer.concat(received).equals(bytes));
});

t.test('Accept-Encoding: gzip by name or *, unless its q is 0', async (t) => {
  for (const [header, takes] of [
    ['gzip', true],
    ['gzip, deflate', true],
    ['deflate, GZIP;q=0.5', true],
    ['*', true],
    ['gzip;q=0', false],
    ['identity', false],
    ['br', false],
    [undefined, false],
  ] as const) {
    t.equal(acceptsGzip(header), takes, String(header));
  }
});

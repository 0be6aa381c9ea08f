import t from 'tap';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { createCertificateAuthority, issueCertificate } from '../../lib/auth/pki.ts';
import { UpstreamPool } from '../../lib/upstream/pool.ts';

/** An HTTP/2 server that answers every request with headers and then holds the stream open, like a watch. */
async function watchLikeServer(maxConcurrentStreams: number) {
  const ca = createCertificateAuthority('pool-test-ca');
  const serving = issueCertificate(ca, { commonName: 'upstream', ipAddresses: ['127.0.0.1'], usage: 'server' });
  const client = issueCertificate(ca, { commonName: 'tenantgate', usage: 'client' });
  const server = http2.createSecureServer({ cert: serving.certPem, key: serving.keyPem, settings: { maxConcurrentStreams } });
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (session) => sessions.add(session));
  server.on('stream', (stream) => {
    stream.respond({ ':status': 200 });
    stream.write('{"type":"BOOKMARK"}\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    credentials: { server: `https://127.0.0.1:${port}`, caPem: ca.certPem, certPem: client.certPem, keyPem: client.keyPem },
    sessions,
    close: () =>
      new Promise<void>((resolve) => {
        for (const session of sessions) session.destroy();
        server.close(() => resolve());
      }),
  };
}

function answered(pool: UpstreamPool, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const stream = pool.request('GET', path, {}, true);
    const timer = setTimeout(() => reject(new Error(`${path}: no answer within 5 s`)), 5000);
    stream.once('response', (headers) => {
      clearTimeout(timer);
      resolve(Number(headers[':status']));
    });
    stream.once('error', reject);
  });
}

t.test('long-lived streams past 32 sessions × the upstream stream limit are all answered: a watch never waits for a slot', async (t) => {
  // 2 streams per connection: 70 watches need 35 sessions, more than the pool's old cap of 32.
  const upstream = await watchLikeServer(2);
  const pool = new UpstreamPool(upstream.credentials);
  t.teardown(async () => {
    pool.close();
    await upstream.close();
  });
  await answered(pool, '/watch/first'); // the pool learns the server's limit
  const statuses = await Promise.all(Array.from({ length: 69 }, (_, i) => answered(pool, `/watch/${i}`)));
  t.same(new Set(statuses), new Set([200]), 'no stream refused or left waiting');
  t.equal(pool.activeStreams, 70);
  t.ok(upstream.sessions.size >= 35, `${upstream.sessions.size} upstream connections carry 70 streams at 2 each`);
});

t.test('a burst of watches on a session whose SETTINGS have not arrived stays within the limit the last session learned', async (t) => {
  const upstream = await watchLikeServer(3);
  const pool = new UpstreamPool(upstream.credentials);
  t.teardown(async () => {
    pool.close();
    await upstream.close();
  });
  await Promise.all(Array.from({ length: 3 }, (_, i) => answered(pool, `/first/${i}`)));
  // The first session is full: every stream of this burst goes to sessions that are still connecting.
  const statuses = await Promise.all(Array.from({ length: 12 }, (_, i) => answered(pool, `/burst/${i}`)));
  t.same(new Set(statuses), new Set([200]));
  t.equal(upstream.sessions.size, 5);
});

t.test('a configured session cap is kept: past it, streams share the least busy session', async (t) => {
  const upstream = await watchLikeServer(100);
  const pool = new UpstreamPool(upstream.credentials, { maxSessions: 2, maxStreamsPerSession: 3 });
  t.teardown(async () => {
    pool.close();
    await upstream.close();
  });
  await Promise.all(Array.from({ length: 10 }, (_, i) => answered(pool, `/watch/${i}`)));
  t.equal(upstream.sessions.size, 2);
});

import t from 'tap';
import { checksText, HealthChecks, parseChecks, verboseHealth } from '../../lib/request/health.ts';
import type { RequestContext } from '../../lib/request/context.ts';
import type { UpstreamPool } from '../../lib/upstream/pool.ts';

const UPSTREAM_READY = '[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]informer-sync ok\n[+]poststarthook/start-apiextensions-informers ok\nreadyz check passed\n';

t.test('a verbose answer lists the upstream’s checks, then tenantgate’s own, with one verdict', async (t) => {
  t.strictSame(verboseHealth('readyz', null, { status: 200, text: UPSTREAM_READY }), {
    status: 200,
    text: '[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]informer-sync ok\n[+]poststarthook/start-apiextensions-informers ok\n[+]upstream ok\nreadyz check passed\n',
  });
  const live = verboseHealth('livez', null, { status: 200, text: '[+]ping ok\n[+]etcd ok\nlivez check passed\n' });
  t.strictSame(live, { status: 200, text: '[+]ping ok\n[+]etcd ok\nlivez check passed\n' }, 'liveness has no upstream check of tenantgate’s');
});

t.test('not ready or healthy when the upstream is not; live whenever tenantgate answers', async (t) => {
  const failing = { status: 500, text: '[+]ping ok\n[-]etcd failed: reason withheld\nhealthz check failed\n' };
  const healthz = verboseHealth('healthz', null, failing);
  t.equal(healthz.status, 503);
  t.match(healthz.text, /^\[\+\]ping ok\n\[-\]etcd failed: reason withheld\n\[\+\]upstream ok\nhealthz check failed\n$/);
  const unreachable = verboseHealth('readyz', 'connect ECONNREFUSED', { problem: 'connect ECONNREFUSED' });
  t.strictSame(unreachable, { status: 503, text: '[+]ping ok\n[-]upstream failed: connect ECONNREFUSED\nreadyz check failed\n' });
  const live = verboseHealth('livez', null, { status: 500, text: '[+]ping ok\n[-]etcd failed: reason withheld\nlivez check failed\n' });
  t.equal(live.status, 200, 'a restart of tenantgate would not mend the upstream');
  t.match(live.text, /\[-\]etcd failed: reason withheld\nlivez check passed\n$/, 'the upstream’s failing check still listed');
});

t.test('a short answer is ok or says why not', async (t) => {
  t.equal(checksText(null), 'ok');
  t.equal(checksText('timed out'), 'upstream not ready: timed out');
});

t.test('exclusions are applied by tenantgate as the apiserver applies them: marked, not counted, unknown ones warned of', async (t) => {
  const failing = { status: 500, text: '[+]ping ok\n[-]etcd failed: reason withheld\n[+]log ok\nreadyz check failed\n' };
  const excluded = verboseHealth('readyz', null, failing, new Set(['etcd', 'nosuch']));
  t.equal(excluded.status, 200, 'the only failing check was excluded');
  t.equal(
    excluded.text,
    '[+]ping ok\n[+]etcd excluded: ok\n[+]log ok\n[+]upstream ok\nwarn: some health checks cannot be excluded: no matches for "nosuch"\nreadyz check passed\n',
  );
  const notReady = verboseHealth('readyz', 'upstream /readyz answered 500', failing, new Set(['etcd', 'upstream']));
  t.equal(notReady.status, 200, "tenantgate's own check can be excluded too");
  t.match(notReady.text, /\[\+\]upstream excluded: ok\n/);
  t.equal(verboseHealth('readyz', null, { status: 403, text: '{"kind":"Status"}' }).status, 503, 'an upstream answer that is no list of checks is no pass');
});

t.test('the check lines of a verbose answer', async (t) => {
  t.strictSame(parseChecks('[+]ping ok\n[-]poststarthook/x failed: reason withheld\nwarn: y\nreadyz check failed\n'), [
    { check: 'ping', passed: true, outcome: 'ok' },
    { check: 'poststarthook/x', passed: false, outcome: 'failed: reason withheld' },
  ]);
});

t.test('once shutting down, /readyz fails at once without asking the upstream; /livez still passes', async (t) => {
  let upstreamAsked = 0;
  const pool = { authorization: undefined, request: () => (upstreamAsked++, { setTimeout() {}, on() {} }) } as unknown as UpstreamPool;
  const health = new HealthChecks(pool);
  const ask = (path: string) =>
    new Promise<{ status: number; text: string }>((resolve) => {
      const [pathname, query = ''] = path.split('?');
      const ctx = {
        pathname,
        query: new URLSearchParams(query),
        answer: (status: number, _headers: unknown, text: string) => resolve({ status, text }),
      } as unknown as RequestContext;
      t.ok(health.serve(ctx), `${path} is a health check`);
    });
  t.same(await ask('/readyz/shutdown'), { status: 200, text: 'ok' }, 'not shutting down yet');
  health.shutdownStarted();
  t.same(await ask('/readyz'), { status: 503, text: 'shutting down' });
  t.same(await ask('/readyz?verbose'), { status: 503, text: '[+]ping ok\n[-]shutdown failed: shutting down\nreadyz check failed\n' });
  t.same(await ask('/readyz/shutdown'), { status: 503, text: 'shutting down' });
  t.equal(upstreamAsked, 0, 'the upstream was not asked');
  t.same(await ask('/livez/ping'), { status: 200, text: 'ok' }, 'alive: a restart is not what it needs');
});

// Tenants' OpenAPI v2 views kept under the upstream's ETag: each tenant's own validator, bounded by bytes, and
// If-None-Match read as HTTP reads it.
import t from 'tap';
import { ifNoneMatchHolds, TenantOpenApiV2Cache, tenantEtagOf } from '../../lib/request/openapi-v2-cache.ts';

t.test('a view is kept per tenant and form, and only for the upstream ETag it was converted from', async (t) => {
  const cache = new TenantOpenApiV2Cache();
  const kept = cache.put('alpha1', false, '"U1"', Buffer.from('alpha json'));
  t.equal(cache.upstreamEtagOf('alpha1', false), '"U1"');
  t.equal(cache.get('alpha1', false, '"U1"'), kept);
  t.equal(cache.get('alpha1', false, '"U2"'), undefined, 'another upstream document: converted again');
  t.equal(cache.get('alpha1', true, '"U1"'), undefined, 'the protobuf form is kept apart');
  t.equal(cache.get('bravo1', false, '"U1"'), undefined, 'another tenant never gets it');
});

t.test("ETags differ by tenant, form and upstream document, and never equal the upstream's", async (t) => {
  const etags = new Set([
    tenantEtagOf('alpha1', false, '"U1"'),
    tenantEtagOf('bravo1', false, '"U1"'),
    tenantEtagOf('alpha1', true, '"U1"'),
    tenantEtagOf('alpha1', false, '"U2"'),
    '"U1"',
  ]);
  t.equal(etags.size, 5);
  t.match(tenantEtagOf('alpha1', false, '"U1"'), /^"[0-9A-F]{32}"$/);
});

t.test('bounded by bytes: the least recently used views go first', async (t) => {
  const cache = new TenantOpenApiV2Cache(10);
  cache.put('a00001', false, 'e', Buffer.alloc(4));
  cache.put('b00001', false, 'e', Buffer.alloc(4));
  cache.get('a00001', false, 'e');
  cache.put('c00001', false, 'e', Buffer.alloc(4));
  t.ok(cache.get('a00001', false, 'e'), 'used recently: kept');
  t.equal(cache.get('b00001', false, 'e'), undefined, 'least recently used: dropped');
  t.ok(cache.get('c00001', false, 'e'));
  t.ok(cache.put('d00001', false, 'e', Buffer.alloc(11)).body.length === 11, 'a view larger than the bound is answered');
  t.equal(cache.get('d00001', false, 'e'), undefined, 'but not kept');
});

t.test('If-None-Match: lists, weak validators and *', async (t) => {
  t.ok(ifNoneMatchHolds('"A"', '"A"'));
  t.ok(ifNoneMatchHolds('"X", W/"A"', '"A"'));
  t.ok(ifNoneMatchHolds('*', '"A"'));
  t.notOk(ifNoneMatchHolds('"B"', '"A"'));
  t.notOk(ifNoneMatchHolds(undefined, '"A"'));
});

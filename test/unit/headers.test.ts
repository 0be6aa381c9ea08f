import type { IncomingHttpHeaders } from 'node:http2';
import t from 'tap';
import { clientResponseHeaders, tenantResponseHeaders, upstreamRequestHeaders } from '../../lib/upstream/headers.ts';

const alice = { user: 'alice', groups: ['dev', 'ops'] };

t.test('a client cannot choose whom tenantgate impersonates', async (t) => {
  const out = upstreamRequestHeaders(
    {
      ':method': 'GET',
      ':path': '/api',
      'impersonate-user': 'admin',
      'impersonate-group': 'system:masters',
      'impersonate-extra-scopes': 'all',
      'impersonate-uid': '1',
      'x-remote-user': 'admin',
      'x-remote-group': 'system:masters',
      'x-remote-extra-foo': 'bar',
      authorization: 'Bearer stolen',
      accept: 'application/json',
    },
    alice,
    {},
  );
  t.same(out, { accept: 'application/json', 'impersonate-user': 'alice', 'impersonate-group': ['dev', 'ops'] });
});

t.test("headers named in Connection are dropped, but never tenantgate's own impersonation", async (t) => {
  // capsule-proxy's advisory: "Connection: Impersonate-User" made the proxy drop its own header.
  const out = upstreamRequestHeaders(
    { connection: 'Impersonate-User, X-Custom', 'x-custom': '1', 'keep-alive': 'timeout=5', 'content-type': 'application/json' },
    alice,
    {},
  );
  t.equal(out['impersonate-user'], 'alice');
  t.equal(out['x-custom'], undefined);
  t.equal(out['keep-alive'], undefined);
  t.equal(out.connection, undefined);
  t.equal(out['content-type'], 'application/json');
});

t.test("the upstream token replaces the client's credentials", async (t) => {
  const out = upstreamRequestHeaders({ authorization: 'Bearer client' }, alice, { authorization: 'Bearer proxy' });
  t.equal(out.authorization, 'Bearer proxy');
});

t.test('extra values are impersonated with percent-encoded keys', async (t) => {
  const out = upstreamRequestHeaders({}, { user: 'u', groups: [], extra: { 'example.com/tenant': ['abc123'] } }, {});
  t.same(out['impersonate-extra-example.com%2Ftenant'], ['abc123']);
  t.equal(out['impersonate-group'], undefined, 'no empty group header');
});

t.test('hop-by-hop and pseudo headers do not reach the client', async (t) => {
  const out = clientResponseHeaders({
    ':status': 200,
    'content-type': 'application/json',
    connection: 'keep-alive',
    'transfer-encoding': 'chunked',
    'audit-id': 'x',
  } as unknown as IncomingHttpHeaders);
  t.same(out, { 'content-type': 'application/json', 'audit-id': 'x' });
});

t.test("a tenant's requests carry no conditions: the upstream's validators are shared by all tenants' views", async (t) => {
  const conditions = {
    'if-none-match': '"E"',
    'if-modified-since': 'Tue, 01 Jan 2030 00:00:00 GMT',
    'if-match': '"E"',
    'if-unmodified-since': 'x',
    'if-range': '"E"',
  };
  const tenant = upstreamRequestHeaders(
    { accept: 'application/json', ...conditions },
    { user: 'abc123-alice', groups: [], extra: { tenant: ['abc123'] }, tenant: 'abc123' },
    {},
  );
  t.same(
    Object.keys(tenant).filter((name) => name.startsWith('if-')),
    [],
    'dropped for a tenant',
  );
  t.equal(tenant.accept, 'application/json');
  const admin = upstreamRequestHeaders({ ...conditions }, alice, {});
  t.equal(admin['if-none-match'], '"E"', "an administrator's conditions pass: it sees the upstream as it is");
});

t.test('a tenant sees no upstream flow-control UIDs, and warnings in its own names', async (t) => {
  const out = tenantResponseHeaders(
    {
      ':status': 200,
      'content-type': 'application/json',
      'x-kubernetes-pf-flowschema-uid': 'f1',
      'x-kubernetes-pf-prioritylevel-uid': 'p1',
      warning: '299 - "configmap abc123-shop/settings is deprecated"',
    } as unknown as IncomingHttpHeaders,
    'abc123',
  );
  t.same(out, { 'content-type': 'application/json', warning: '299 - "configmap shop/settings is deprecated"' });
  const admin = clientResponseHeaders({ 'x-kubernetes-pf-flowschema-uid': 'f1' } as unknown as IncomingHttpHeaders);
  t.equal(admin['x-kubernetes-pf-flowschema-uid'], 'f1', 'an administrator still sees them');
});

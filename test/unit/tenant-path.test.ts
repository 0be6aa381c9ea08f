// A tenant's own server URL, `/tenants/<id>`: split off before any stage reads the path, and served only to that
// tenant's identities.
import t from 'tap';
import { confirmPathTenant } from '../../lib/request/pipeline.ts';
import { splitTenantPath, tenantServerUrl } from '../../lib/request/tenant-path.ts';
import { StatusError } from '../../lib/errors/status-error.ts';
import { RecordingContext } from '../helpers/recording-context.ts';

t.test('the target under a tenant path, split; any other target left alone', async (t) => {
  t.same(splitTenantPath('/tenants/abc123/api/v1/namespaces?limit=1'), { tenant: 'abc123', target: '/api/v1/namespaces?limit=1' });
  t.same(splitTenantPath('/tenants/abc123'), { tenant: 'abc123', target: '/' }, 'the bare URL is the root');
  t.same(splitTenantPath('/tenants/abc123?timeout=32s'), { tenant: 'abc123', target: '/?timeout=32s' });
  t.same(splitTenantPath('/tenants/abc123//api'), { tenant: 'abc123', target: '//api' }, 'what follows is validated as any target is');
  t.same(splitTenantPath('/tenants/ab%2Fc/api'), { tenant: 'ab%2Fc', target: '/api' }, 'the segment as sent, never decoded');
  for (const target of ['/api/v1/namespaces', '/tenants', '/tenants/', '/tenants/?x=1', '/tenantsabc/api', '/apis/tenant.kubezoo.io/v1alpha1/tenants']) {
    t.equal(splitTenantPath(target), null, target);
  }
});

t.test("a kubeconfig's URL: tenantgate's address and the tenant's path", async (t) => {
  t.equal(tenantServerUrl('https://127.0.0.1:8443', 'abc123'), 'https://127.0.0.1:8443/tenants/abc123');
  t.equal(tenantServerUrl('https://tenantgate.example.com/', 'abc123'), 'https://tenantgate.example.com/tenants/abc123', 'one slash');
});

t.test("the context reads the target below the tenant path; only the tenant's identities pass", async (t) => {
  const alice = { user: 'alice', groups: ['system:authenticated'], tenant: 'abc123' };
  const own = new RecordingContext('GET', '/tenants/abc123/api/v1/namespaces/default?resourceVersion=0', { identity: alice });
  t.equal(own.path, '/api/v1/namespaces/default?resourceVersion=0');
  t.equal(own.pathname, '/api/v1/namespaces/default');
  t.equal(own.query.get('resourceVersion'), '0');
  t.equal(own.pathTenant, 'abc123');
  t.equal(confirmPathTenant(own), false, 'its own tenant: passed on');
  t.equal(confirmPathTenant(new RecordingContext('GET', '/api/v1/namespaces', { identity: alice })), false, 'the bare address: passed on');
  const refusals = [
    new RecordingContext('GET', '/tenants/xyz789/api/v1/namespaces', { identity: alice }),
    new RecordingContext('GET', '/tenants/abc123/api', { identity: { user: 'admin', groups: ['system:masters'], tenant: null } }),
    new RecordingContext('GET', '/tenants/ABC123/api', { identity: alice }),
  ];
  for (const ctx of refusals) {
    try {
      confirmPathTenant(ctx);
      t.fail(`${ctx.pathTenant}: passed`);
    } catch (error) {
      t.ok(error instanceof StatusError && error.code === 403, `${ctx.pathTenant} for ${ctx.identity?.user}: 403`);
      t.match((error as StatusError).message, `may not use the server URL of tenant "${ctx.pathTenant}"`);
    }
  }
});

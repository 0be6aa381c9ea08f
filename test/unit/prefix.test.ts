// The prefix codec: a tenant's names to upstream names and back, and which tenant an upstream name's prefix names.
import t from 'tap';
import { tenantOfUpstreamName, toTenantName, toUpstreamName } from '../../lib/convert/prefix.ts';

t.test("a tenant's name and its upstream name map both ways, and only under the tenant's exact prefix", async (t) => {
  t.equal(toUpstreamName('default', 'abc123'), 'abc123-default');
  t.equal(toTenantName('abc123-default', 'abc123'), 'default');
  t.equal(toTenantName('abc124-default', 'abc123'), null, "another tenant's");
  t.equal(toTenantName('abc123default', 'abc123'), null, 'no dash after the id');
  t.equal(toTenantName('abc123-', 'abc123'), null, 'nothing after the prefix');
});

t.test('tenantOfUpstreamName: the id an upstream name is prefixed with, if it is a tenant id', async (t) => {
  t.equal(tenantOfUpstreamName('abc123-kube-system'), 'abc123');
  t.equal(tenantOfUpstreamName('kube-system'), undefined, 'a platform namespace');
  // A prefix is no proof: an operator's `calico-system` reads as tenant calico's, so callers check the tenant label too.
  t.equal(tenantOfUpstreamName('calico-system'), 'calico', 'six id characters and a dash name a tenant, owner or not');
  t.equal(tenantOfUpstreamName('abc12-x'), undefined, 'five characters');
  t.equal(tenantOfUpstreamName('ABC123-x'), undefined, 'not an id: ids are lower case');
  t.equal(tenantOfUpstreamName('abc123-'), undefined, 'nothing after the prefix');
  t.equal(tenantOfUpstreamName(undefined), undefined);
});

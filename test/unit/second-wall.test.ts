import t from 'tap';
import { isTenantId } from '../../lib/convert/prefix.ts';
import { isDiscoveryDocumentPath } from '../../lib/convert/request.ts';
import { TENANT_CONFINEMENT, TENANT_CONFINEMENT_OBJECTS } from '../../lib/tenants/confinement-policy.ts';
import { confinedDiscoveryBinding, SYSTEM_DISCOVERY_SUBJECTS } from '../../lib/tenants/discovery-confinement.ts';
import { keptObjectDiffers } from '../../lib/tenants/kept-objects.ts';
import { dropImpersonation } from '../../lib/upstream/headers.ts';
import { serveFlagsParser } from '../helpers/serve-config.ts';

t.test("no tenant can name tenantgate's admission policy: its name has no tenant's <id>- prefix", async (t) => {
  t.notOk(isTenantId(TENANT_CONFINEMENT.slice(0, 6)) && TENANT_CONFINEMENT[6] === '-');
  t.match(TENANT_CONFINEMENT, /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'a DNS subdomain, as admission policies must be named');
  for (const { object } of TENANT_CONFINEMENT_OBJECTS) t.equal(object.metadata.name, TENANT_CONFINEMENT);
});

t.test('tenantgate reads for tenants with its own identity only exact discovery and OpenAPI documents', async (t) => {
  const documents = [
    '/api',
    '/api/v1',
    '/apis',
    '/apis/apps',
    '/apis/apps/v1',
    '/apis/abc123-example.com/v1alpha1',
    '/openapi/v2',
    '/openapi/v3',
    '/openapi/v3/api/v1',
    '/openapi/v3/apis/apps/v1',
  ];
  for (const path of documents) t.ok(isDiscoveryDocumentPath(path), path);
  const others = [
    '/api/v1/secrets',
    '/api/v1/namespaces/abc123-default/configmaps',
    '/apis/apps/v1/deployments',
    '/apis/..',
    '/apis/.example.com/v1',
    '/openapi/v3/apis/abc123-example.com/v1?/x',
    '/openapi/v3/apis/x%3F/v1',
    '/openapi/v3/apis/x/v1/../../../api/v1/secrets',
    '/apis/apps/v1\n',
    '/version',
    '/healthz',
    '/openapi/v3/apis/apps',
    '/apis/Apps/v1',
    '',
  ];
  for (const path of others) t.notOk(isDiscoveryDocumentPath(path), JSON.stringify(path));
  const headers = {
    accept: 'application/json',
    authorization: 'Bearer own',
    'impersonate-user': 'abc123-admin',
    'impersonate-group': ['abc123:x'],
    'impersonate-extra-tenant': 'abc123',
  };
  dropImpersonation(headers);
  t.same(headers, { accept: 'application/json', authorization: 'Bearer own' }, "tenantgate's own credentials, nobody impersonated");
});

t.test('a kept object differs when anyone adds, changes or removes an owned field', async (t) => {
  const kept = confinedDiscoveryBinding(['tenantgate']);
  const canonical = JSON.parse(JSON.stringify(kept.object)) as Record<string, any>;
  const stored = () => {
    const copy = JSON.parse(JSON.stringify(canonical)) as Record<string, any>;
    copy.metadata.resourceVersion = '42';
    copy.metadata.labels = { 'kubernetes.io/bootstrapping': 'rbac-defaults' };
    return copy;
  };
  t.notOk(keptObjectDiffers(kept, canonical, stored()), 'unowned metadata (resourceVersion, other labels) is not a difference');
  const widened = stored();
  widened.subjects.push({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:authenticated' });
  t.ok(keptObjectDiffers(kept, canonical, widened), 'a subject added');
  const autoupdated = stored();
  delete autoupdated.metadata.annotations;
  t.ok(keptObjectDiffers(kept, canonical, autoupdated), 'the autoupdate annotation removed');
  const narrowed = stored();
  narrowed.subjects.pop();
  t.ok(keptObjectDiffers(kept, canonical, narrowed), 'a subject removed');
  t.same(
    kept.object.subjects,
    [...SYSTEM_DISCOVERY_SUBJECTS, { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'tenantgate' }],
    "the system identities, and tenantgate's own user",
  );
  t.notOk(
    (kept.object.subjects as { name: string }[]).some(
      (s) => s.name === 'system:authenticated' || s.name === 'system:serviceaccounts' || s.name === 'system:unauthenticated',
    ),
    'no group a tenant identity is in',
  );
});

t.test('serve flags: webhook URL hosts and upstream discovery confinement', async (t) => {
  const parse = serveFlagsParser(t);
  t.same(parse([]).tenantWebhookUrlHosts, [], 'no host by default');
  t.equal(parse([]).confineUpstreamDiscovery, false, 'opt-in');
  t.same(parse(['--tenant-webhook-url-hosts', 'Hooks.example.com, 10.0.0.9,,']).tenantWebhookUrlHosts, ['hooks.example.com', '10.0.0.9']);
  t.equal(parse(['--confine-upstream-discovery']).confineUpstreamDiscovery, true);
  process.env.TENANTGATE_CONFINE_UPSTREAM_DISCOVERY = 'true';
  t.teardown(() => delete process.env.TENANTGATE_CONFINE_UPSTREAM_DISCOVERY);
  t.equal(parse([]).confineUpstreamDiscovery, true, 'TENANTGATE_CONFINE_UPSTREAM_DISCOVERY');
});

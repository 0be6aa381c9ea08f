// The tenant's view of discovery, on documents captured from a 1.36 kube-apiserver (test/fixtures/discovery-*.json, trimmed).
import { readFileSync } from 'node:fs';
import t from 'tap';
import { discoveryToTenant } from '../../lib/convert/discovery.ts';

const fixture = (name: string): any => JSON.parse(readFileSync(new URL(`../fixtures/${name}`, import.meta.url), 'utf8'));

t.test('legacy APIResourceList: hidden kinds absent, shared kinds read-only, nodes/proxy too', async (t) => {
  const view = discoveryToTenant(fixture('discovery-api-v1.json'), 'alpha1') as { resources: { name: string; verbs: string[] }[] };
  const verbs = Object.fromEntries(view.resources.map((r) => [r.name, r.verbs]));
  t.same(verbs.nodes, ['get', 'list', 'watch']);
  t.same(verbs['nodes/status'], ['get']);
  t.equal(verbs['nodes/proxy'], undefined, 'nodes/proxy is not advertised: tenants are refused it');
  t.equal(verbs.componentstatuses, undefined);
  t.ok(verbs['pods/exec']?.includes('create'));
});

t.test('legacy: a tenant\'s CRD group is un-prefixed, another tenant\'s is not found', async (t) => {
  const list = {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: 'alpha1-example.com/v1',
    resources: [{ name: 'widgets', singularName: 'widget', namespaced: true, kind: 'Widget', verbs: ['get', 'list'] }],
  };
  t.match(discoveryToTenant(structuredClone(list), 'alpha1'), { groupVersion: 'example.com/v1', resources: [{ name: 'widgets' }] });
  t.equal(discoveryToTenant(structuredClone(list), 'bravo2'), null);
  const groups = discoveryToTenant(
    {
      kind: 'APIGroupList',
      groups: ['alpha1-example.com', 'bravo2-example.com', 'example.org', 'flowcontrol.apiserver.k8s.io', 'apps'].map((name) => ({
        name,
        versions: [{ groupVersion: `${name}/v1`, version: 'v1' }],
        preferredVersion: { groupVersion: `${name}/v1`, version: 'v1' },
      })),
    },
    'alpha1',
  ) as { groups: { name: string; preferredVersion: { groupVersion: string } }[] };
  t.same(groups.groups.map((g) => [g.name, g.preferredVersion.groupVersion]), [['example.com', 'example.com/v1'], ['apps', 'apps/v1']]);
  t.throws(() => discoveryToTenant({ kind: 'APIGroupList', groups: 'x' }, 'alpha1'), { code: 502, reason: 'InternalError' });
});

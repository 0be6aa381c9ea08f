// The tenant's view of discovery, legacy and aggregated (apidiscovery.k8s.io/v2), on documents captured from a
// 1.36 kube-apiserver (test/fixtures/discovery-*.json, trimmed): tenants alpha1 and bravo2 each created the CRD
// widgets.example.com (status and scale subresources); an administrator created gadgets.example.org for nobody.
import { readFileSync } from 'node:fs';
import t from 'tap';
import { aggregatedDiscoveryToTenant, discoveryToTenant, isAggregatedDiscoveryJson, storageVersionHash } from '../../lib/convert/discovery.ts';

const fixture = (name: string): any => JSON.parse(readFileSync(new URL(`../fixtures/${name}`, import.meta.url), 'utf8'));

interface Resource {
  resource: string;
  verbs: string[];
  responseKind?: { group: string; version: string; kind: string };
  subresources?: { subresource: string; verbs: string[]; responseKind?: { group: string } }[];
}
interface Group {
  metadata: { name?: string };
  versions: { version: string; resources: Resource[] }[];
}

function aggregated(name: string, tenant: string): Group[] {
  return (aggregatedDiscoveryToTenant(fixture(name), tenant) as { items: Group[] }).items;
}
const groupNames = (groups: Group[]) => groups.map((group) => group.metadata.name ?? '');
const resourceOf = (groups: Group[], group: string, resource: string) =>
  groups
    .find((g) => (g.metadata.name ?? '') === group)
    ?.versions.flatMap((v) => v.resources)
    .find((r) => r.resource === resource);

t.test("aggregated: each tenant sees its own CRD group without the prefix, and never the other tenant's", async (t) => {
  for (const [tenant, other] of [
    ['alpha1', 'bravo2'],
    ['bravo2', 'alpha1'],
  ] as const) {
    const groups = aggregated('discovery-apis-v2.json', tenant);
    t.ok(groupNames(groups).includes('example.com'), `${tenant} sees example.com`);
    t.notOk(
      groupNames(groups).some((name) => name.includes('-example.com')),
      `${tenant} sees no prefixed group`,
    );
    t.notMatch(JSON.stringify(groups), new RegExp(`${other}|${tenant}-`), `${tenant}'s view names neither ${other} nor its own prefix`);
    const widgets = resourceOf(groups, 'example.com', 'widgets')!;
    t.same(widgets.responseKind, { group: 'example.com', version: 'v1', kind: 'Widget' });
    t.same(
      widgets.subresources?.map((s) => [s.subresource, s.responseKind?.group]),
      [
        ['status', 'example.com'],
        ['scale', 'autoscaling'],
      ],
      "the status subresource answers with the tenant's group, scale with autoscaling's",
    );
    t.same(widgets.verbs.sort(), ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'], 'its own kinds keep every verb');
  }
});

t.test('aggregated: custom groups of nobody are not shown', async (t) => {
  const groups = aggregated('discovery-apis-v2.json', 'alpha1');
  t.notOk(groupNames(groups).includes('example.org'));
  t.notMatch(JSON.stringify(groups), /example\.org|Gadget/);
});

t.test('aggregated: hidden groups and kinds are absent, groups left without resources too', async (t) => {
  const groups = aggregated('discovery-apis-v2.json', 'alpha1');
  t.notOk(groupNames(groups).includes('flowcontrol.tenantgate.kubezoo.io'), "the group of tenantgate's own CRDs (where tenants' FlowSchemas are kept)");
  t.ok(resourceOf(groups, 'flowcontrol.apiserver.k8s.io', 'flowschemas'), "flow control is the tenant's");
  t.same(
    resourceOf(groups, 'flowcontrol.apiserver.k8s.io', 'flowschemas')!.subresources?.map((s) => s.subresource),
    ['status'],
    'with its status subresource',
  );
  t.ok(resourceOf(groups, 'certificates.k8s.io', 'certificatesigningrequests'), "CSRs are the tenant's own");
  t.equal(resourceOf(groups, 'storage.k8s.io', 'volumeattachments'), undefined, 'a hidden kind in a visible group');
  t.ok(resourceOf(groups, 'apps', 'deployments'), 'tenant kinds stay');
  const core = aggregated('discovery-api-v2.json', 'alpha1');
  t.equal(resourceOf(core, '', 'componentstatuses'), undefined);
  t.equal(core[0]!.metadata.name, undefined, 'the core group keeps its nameless metadata');
});

t.test('aggregated: shared kinds are read-only, their unreadable subresources absent', async (t) => {
  const core = aggregated('discovery-api-v2.json', 'alpha1');
  const nodes = resourceOf(core, '', 'nodes')!;
  t.same(nodes.verbs, ['get', 'list', 'watch']);
  t.same(
    nodes.subresources,
    [{ subresource: 'status', responseKind: { group: '', version: '', kind: 'Node' }, verbs: ['get'] }],
    'nodes/proxy is gone, nodes/status readable',
  );
  const storageClasses = resourceOf(aggregated('discovery-apis-v2.json', 'alpha1'), 'storage.k8s.io', 'storageclasses')!;
  t.same(storageClasses.verbs, ['get', 'list', 'watch']);
  const pods = resourceOf(core, '', 'pods')!;
  t.ok(
    pods.subresources?.some((s) => s.subresource === 'exec' && s.verbs.includes('create')),
    'a tenant kind keeps pods/exec',
  );
});

t.test("aggregated: a version with nothing visible is dropped, the group's others stay in order", async (t) => {
  const doc = fixture('discovery-apis-v2.json');
  const storage = doc.items.find((group: Group) => group.metadata.name === 'storage.k8s.io');
  const v1 = storage.versions[0];
  storage.versions = [{ ...v1, version: 'v1beta9', resources: v1.resources.filter((r: Resource) => r.resource === 'volumeattachments') }, v1];
  const view = (aggregatedDiscoveryToTenant(doc, 'alpha1') as { items: Group[] }).items.find((group) => group.metadata.name === 'storage.k8s.io')!;
  t.same(
    view.versions.map((v) => v.version),
    ['v1'],
    'the first version left is the preferred one',
  );
});

t.test('aggregated: a malformed document is a Status error, malformed entries are skipped', async (t) => {
  for (const body of [null, 'text', { kind: 'APIGroupDiscoveryList' }, { items: {} }]) {
    t.throws(() => aggregatedDiscoveryToTenant(body, 'alpha1'), { code: 502, reason: 'InternalError' }, JSON.stringify(body));
  }
  const view = aggregatedDiscoveryToTenant(
    {
      items: [
        null,
        7,
        { versions: 'x' },
        { metadata: { name: 5 }, versions: [{ version: 'v1', resources: [{ resource: 'pods', verbs: ['get'] }] }] },
        { metadata: {}, versions: [null, { version: 'v1', resources: [1, { verbs: ['get'] }, { resource: 'nodes', verbs: 'all' }] }] },
      ],
    },
    'alpha1',
  );
  t.same(view, { items: [] }, 'nothing usable, nothing shown, nothing thrown');
});

t.test('legacy APIResourceList: hidden kinds absent, shared kinds read-only, nodes/proxy too', async (t) => {
  const view = discoveryToTenant(fixture('discovery-api-v1.json'), 'alpha1') as { resources: { name: string; verbs: string[] }[] };
  const verbs = Object.fromEntries(view.resources.map((r) => [r.name, r.verbs]));
  t.same(verbs.nodes, ['get', 'list', 'watch']);
  t.same(verbs['nodes/status'], ['get']);
  t.equal(verbs['nodes/proxy'], undefined, 'nodes/proxy is not advertised: tenants are refused it');
  t.equal(verbs.componentstatuses, undefined);
  t.ok(verbs['pods/exec']?.includes('create'));
});

t.test("legacy: a tenant's CRD group is un-prefixed, another tenant's is not found", async (t) => {
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
      groups: [
        'alpha1-example.com',
        'bravo2-example.com',
        'example.org',
        'apiregistration.k8s.io',
        'flowcontrol.tenantgate.kubezoo.io',
        'flowcontrol.apiserver.k8s.io',
        'apps',
      ].map((name) => ({
        name,
        versions: [{ groupVersion: `${name}/v1`, version: 'v1' }],
        preferredVersion: { groupVersion: `${name}/v1`, version: 'v1' },
      })),
    },
    'alpha1',
  ) as { groups: { name: string; preferredVersion: { groupVersion: string } }[] };
  t.same(
    groups.groups.map((g) => [g.name, g.preferredVersion.groupVersion]),
    [
      ['example.com', 'example.com/v1'],
      ['apiregistration.k8s.io', 'apiregistration.k8s.io/v1'],
      ['flowcontrol.apiserver.k8s.io', 'flowcontrol.apiserver.k8s.io/v1'],
      ['apps', 'apps/v1'],
    ],
    "other tenants' and nobody's groups and the group of tenantgate's own CRDs are absent; flow control and APIServices are there",
  );
  t.throws(() => discoveryToTenant({ kind: 'APIGroupList', groups: 'x' }, 'alpha1'), { code: 502, reason: 'InternalError' });
});

t.test("legacy: a tenant's custom resource has the storageVersionHash of its own group, from its storage version", async (t) => {
  t.equal(
    storageVersionHash('', 'v1', 'Pod'),
    fixture('discovery-api-v1.json').resources.find((r: { name: string }) => r.name === 'pods').storageVersionHash,
    'as the apiserver computes it',
  );
  // The storage version is v1 while the list is v2's: found among the group's versions.
  const list = (version: string) => ({
    kind: 'APIResourceList',
    groupVersion: `alpha1-example.com/${version}`,
    resources: [
      { name: 'widgets', namespaced: true, kind: 'Widget', verbs: ['get'], storageVersionHash: storageVersionHash('alpha1-example.com', 'v1', 'Widget') },
      { name: 'widgets/status', namespaced: true, kind: 'Widget', verbs: ['get'] },
    ],
  });
  const view = (version: string, versions: string[]) =>
    (
      discoveryToTenant(
        list(version),
        'alpha1',
        () => true,
        null,
        () => versions,
      ) as { resources: { storageVersionHash?: string }[] }
    ).resources;
  t.equal(view('v2', ['v2', 'v1'])[0]!.storageVersionHash, storageVersionHash('example.com', 'v1', 'Widget'));
  t.equal(view('v1', [])[0]!.storageVersionHash, storageVersionHash('example.com', 'v1', 'Widget'), "the list's own version first");
  t.notOk('storageVersionHash' in view('v2', ['v2'])[0]!, "left out when no version known matches: never the upstream's");
  t.notOk('storageVersionHash' in view('v1', [])[1]!, 'subresources have none');
  const apps = {
    kind: 'APIResourceList',
    groupVersion: 'apps/v1',
    resources: [{ name: 'deployments', namespaced: true, kind: 'Deployment', verbs: ['get'], storageVersionHash: 'abc=' }],
  };
  t.equal(
    (discoveryToTenant(apps, 'alpha1') as { resources: { storageVersionHash: string }[] }).resources[0]!.storageVersionHash,
    'abc=',
    'built-in groups as they are',
  );
});

t.test('the Accept media ranges that ask aggregated discovery as JSON', async (t) => {
  for (const range of [
    'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
    ' application/json; as=APIGroupDiscoveryList; v=v2; g=apidiscovery.k8s.io',
    'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer',
    'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0.9',
  ]) {
    t.ok(isAggregatedDiscoveryJson(range), range);
  }
  for (const range of [
    'application/json',
    'application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList',
    'application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList',
    'application/json;as=Table;v=v1;g=meta.k8s.io',
    '*/*',
  ]) {
    t.notOk(isAggregatedDiscoveryJson(range), range);
  }
});

t.test('/api and API groups name tenantgate as the server address, never the upstream', async (t) => {
  const upstreamAddress = [{ clientCIDR: '0.0.0.0/0', serverAddress: '10.0.0.1:6443' }];
  const versions = { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: upstreamAddress };
  t.same(discoveryToTenant(structuredClone(versions), 'alpha1', undefined, '127.0.0.1:7443'), {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '127.0.0.1:7443' }],
  });
  t.same(discoveryToTenant(structuredClone(versions), 'alpha1'), { kind: 'APIVersions', versions: ['v1'] }, 'no address known: none shown');
  const group = { kind: 'APIGroup', name: 'apps', versions: [{ groupVersion: 'apps/v1', version: 'v1' }], serverAddressByClientCIDRs: upstreamAddress };
  const view = discoveryToTenant(structuredClone(group), 'alpha1', undefined, 'gate.example:443') as { serverAddressByClientCIDRs: unknown };
  t.same(view.serverAddressByClientCIDRs, [{ clientCIDR: '0.0.0.0/0', serverAddress: 'gate.example:443' }]);
  const list = discoveryToTenant({ kind: 'APIGroupList', groups: [group] }, 'alpha1') as { groups: object[] };
  t.notOk(JSON.stringify(list).includes('10.0.0.1'), 'no upstream address in the group list');
});

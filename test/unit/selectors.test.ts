import t from 'tap';
import { escapeFieldSelectorValue, mergeLabelSelector, parseFieldSelector, parseLabelSelector, rewriteFieldSelector } from '../../lib/convert/selectors.ts';

const tenant = 'abc123';
const pods = { clusterScoped: false, resource: 'pods' };
const namespaces = { clusterScoped: true, resource: 'namespaces' };
const clusterRoles = { clusterScoped: true, resource: 'clusterroles' };
const events = { clusterScoped: false, resource: 'events' };

t.test('field selectors parse as apimachinery parses them', async (t) => {
  t.same(parseFieldSelector(''), []);
  t.same(parseFieldSelector('a=b'), [{ field: 'a', operator: '=', value: 'b', raw: 'a=b' }]);
  t.same(
    parseFieldSelector('a==b,c!=d,,e='),
    [
      { field: 'a', operator: '==', value: 'b', raw: 'a==b' },
      { field: 'c', operator: '!=', value: 'd', raw: 'c!=d' },
      { field: 'e', operator: '=', value: '', raw: 'e=' },
    ],
    'empty terms are skipped, an empty value is a value',
  );
  t.same(parseFieldSelector('a=x\\,y\\=z\\\\'), [{ field: 'a', operator: '=', value: 'x,y=z\\', raw: 'a=x\\,y\\=z\\\\' }], 'escapes');
  t.same(parseFieldSelector(' a = b '), [{ field: ' a ', operator: '=', value: ' b ', raw: ' a = b ' }], 'nothing is trimmed');
  t.same(parseFieldSelector('a==b')[0]?.operator, '==', '`==` is one operator, not `=` and a value `=b`');
});

t.test('invalid field selectors are a 400 with a clear message', async (t) => {
  for (const [selector, message] of [
    ['a', /can't understand 'a'/],
    ['a=b,c', /can't understand 'c'/],
    ['a=b=c', /unescaped character in value: '='/],
    ['a!==b', /unescaped character in value: '='/],
    ['a=b\\', /invalid escape sequence: \\$/],
    ['a=b\\x', /invalid escape sequence: \\x/],
  ] as const) {
    t.throws(() => parseFieldSelector(selector), { code: 400, reason: 'BadRequest', message }, selector);
    t.throws(() => rewriteFieldSelector(selector, tenant, pods), { code: 400 }, `rewrite ${selector}`);
  }
});

t.test('EscapeValue round-trips any value', async (t) => {
  for (const value of ['', 'plain', 'a,b', 'a=b', 'a\\b', '\\,=', '==', 'ü,ö']) {
    const [term] = parseFieldSelector('f=' + escapeFieldSelectorValue(value));
    t.equal(term?.value, value, JSON.stringify(value));
  }
});

t.test('namespace values are prefixed, whatever the resource', async (t) => {
  for (const [selector, scope, expected] of [
    ['metadata.namespace=default', pods, 'metadata.namespace=abc123-default'],
    ['metadata.namespace==default', pods, 'metadata.namespace==abc123-default'],
    ['metadata.namespace!=kube-system', pods, 'metadata.namespace!=abc123-kube-system'],
    ['metadata.namespace=default', clusterRoles, 'metadata.namespace=abc123-default'],
    ['involvedObject.namespace=default,involvedObject.name=web', events, 'involvedObject.namespace=abc123-default,involvedObject.name=web'],
    ['regarding.namespace=default', events, 'regarding.namespace=abc123-default'],
    ['related.namespace=default', events, 'related.namespace=abc123-default'],
    ['spec.nodeName=node-1,status.phase=Running', pods, 'spec.nodeName=node-1,status.phase=Running'],
    ['spec.serviceAccountName=builder', pods, 'spec.serviceAccountName=builder'],
    ['metadata.name=web', pods, 'metadata.name=web'],
    ['', pods, ''],
  ] as const) {
    t.equal(rewriteFieldSelector(selector, tenant, scope), expected, selector);
  }
});

t.test('metadata.name is prefixed for cluster-scoped resources and namespaces', async (t) => {
  t.equal(rewriteFieldSelector('metadata.name=reader', tenant, clusterRoles), 'metadata.name=abc123-reader');
  t.equal(rewriteFieldSelector('metadata.name!=reader', tenant, clusterRoles), 'metadata.name!=abc123-reader');
  t.equal(rewriteFieldSelector('metadata.name=default', tenant, namespaces), 'metadata.name=abc123-default');
  t.equal(
    rewriteFieldSelector('metadata.name=default', tenant, { clusterScoped: false, resource: 'namespaces' }),
    'metadata.name=abc123-default',
    'namespaces even if the caller calls them namespaced',
  );
  t.equal(rewriteFieldSelector('status.phase=Active,metadata.name=dev', tenant, namespaces), 'status.phase=Active,metadata.name=abc123-dev');
});

t.test("a value that looks like another tenant's name is prefixed again: it names the tenant's own object", async (t) => {
  t.equal(rewriteFieldSelector('metadata.namespace=def456-default', tenant, pods), 'metadata.namespace=abc123-def456-default');
  t.equal(rewriteFieldSelector('metadata.namespace=abc123-default', tenant, pods), 'metadata.namespace=abc123-abc123-default');
  t.equal(rewriteFieldSelector('metadata.name=def456-reader', tenant, clusterRoles), 'metadata.name=abc123-def456-reader');
});

t.test('escaped characters survive the rewrite; an escaped comma is no way to smuggle a term', async (t) => {
  t.equal(rewriteFieldSelector('metadata.namespace=a\\,metadata.namespace\\=x', tenant, pods), 'metadata.namespace=abc123-a\\,metadata.namespace\\=x');
  t.equal(rewriteFieldSelector('spec.nodeName=a\\,b', tenant, pods), 'spec.nodeName=a\\,b', 'untouched terms stay as written');
  t.equal(rewriteFieldSelector('metadata.namespace=a,,spec.nodeName=n', tenant, pods), 'metadata.namespace=abc123-a,spec.nodeName=n');
});

t.test('field names are matched exactly, as the apiserver matches them', async (t) => {
  // " metadata.namespace" is not metadata.namespace upstream either (it is refused there as unknown)
  t.equal(rewriteFieldSelector(' metadata.namespace=x', tenant, pods), ' metadata.namespace=x');
  t.equal(rewriteFieldSelector('Metadata.Namespace=x', tenant, pods), 'Metadata.Namespace=x');
});

t.test('an empty namespace stays empty: it means "no namespace" for cluster-scoped objects', async (t) => {
  t.equal(rewriteFieldSelector('metadata.namespace=', tenant, pods), 'metadata.namespace=');
  t.equal(
    rewriteFieldSelector('involvedObject.name=pv1,involvedObject.namespace=,involvedObject.kind=PersistentVolume,involvedObject.uid=u', tenant, events),
    'involvedObject.name=pv1,involvedObject.namespace=,involvedObject.kind=PersistentVolume,involvedObject.uid=u',
  );
});

t.test('kubectl describe of a cluster-scoped tenant object finds its events', async (t) => {
  const prefixedKinds = new Set(['PersistentVolume', 'ClusterRole', 'Namespace']);
  const scope = { ...events, isPrefixedClusterKind: (kind: string) => prefixedKinds.has(kind) };
  t.equal(
    rewriteFieldSelector('involvedObject.name=pv1,involvedObject.namespace=,involvedObject.kind=PersistentVolume,involvedObject.uid=u', tenant, scope),
    'involvedObject.name=abc123-pv1,involvedObject.namespace=,involvedObject.kind=PersistentVolume,involvedObject.uid=u',
  );
  t.equal(
    rewriteFieldSelector('involvedObject.name=node-1,involvedObject.namespace=,involvedObject.kind=Node', tenant, scope),
    'involvedObject.name=node-1,involvedObject.namespace=,involvedObject.kind=Node',
    'shared nodes keep their names',
  );
  t.equal(rewriteFieldSelector('regarding.name=dev,regarding.kind=Namespace', tenant, scope), 'regarding.name=abc123-dev,regarding.kind=Namespace');
  t.equal(rewriteFieldSelector('involvedObject.name=web', tenant, scope), 'involvedObject.name=web', 'no kind: a namespaced object');
  t.equal(
    rewriteFieldSelector('involvedObject.name=x,involvedObject.kind=PersistentVolume,involvedObject.kind=Pod', tenant, scope),
    'involvedObject.name=x,involvedObject.kind=PersistentVolume,involvedObject.kind=Pod',
    'contradicting kinds: nothing to prefix for',
  );
});

t.test('label selectors parse as labels.Parse parses them', async (t) => {
  t.same(parseLabelSelector(''), []);
  t.same(parseLabelSelector('  '), []);
  t.same(parseLabelSelector('app=web'), [{ key: 'app', operator: '=', values: ['web'] }]);
  t.same(parseLabelSelector('app == web , tier!=db'), [
    { key: 'app', operator: '==', values: ['web'] },
    { key: 'tier', operator: '!=', values: ['db'] },
  ]);
  t.same(parseLabelSelector('x in (foo,,baz),y,z notin ()'), [
    { key: 'x', operator: 'in', values: ['foo', '', 'baz'] },
    { key: 'y', operator: 'exists', values: [] },
    { key: 'z', operator: 'notin', values: [''] },
  ]);
  t.same(parseLabelSelector('!example.com/legacy'), [{ key: 'example.com/legacy', operator: '!', values: [] }]);
  t.same(parseLabelSelector('in in (in, notin)'), [{ key: 'in', operator: 'in', values: ['in', 'notin'] }], 'keywords as key and values');
  t.same(parseLabelSelector('a=,b'), [
    { key: 'a', operator: '=', values: [''] },
    { key: 'b', operator: 'exists', values: [] },
  ]);
  t.same(parseLabelSelector('replicas>1,age<10'), [
    { key: 'replicas', operator: 'gt', values: ['1'] },
    { key: 'age', operator: 'lt', values: ['10'] },
  ]);
  t.same(parseLabelSelector('a in (,b)'), [{ key: 'a', operator: 'in', values: ['', 'b'] }]);
  t.same(parseLabelSelector('a in (b,)'), [{ key: 'a', operator: 'in', values: ['b', ''] }]);
});

t.test('invalid label selectors are a 400', async (t) => {
  for (const selector of [
    ',',
    'a,',
    ',a',
    'a=b c',
    'a in',
    'a in (',
    'a in (b',
    'a in (b c)',
    'a in b',
    '!a=b',
    '!',
    '=b',
    'a=(b)',
    'a>b',
    'a>',
    'a>99999999999999999999',
    'a=b=c',
    'Bad Key=x',
    '-a=b',
    'a/b/c=d',
    '/a=b',
    'Example.com/a=b',
    'a=-b',
    'a=' + 'x'.repeat(64),
    'x'.repeat(64),
    'a=b\0',
    'a=b\0,c',
  ]) {
    t.throws(() => parseLabelSelector(selector), { code: 400, reason: 'BadRequest', message: /invalid label selector/ }, JSON.stringify(selector));
  }
});

t.test("the tenant's label requirement is merged with the client's selector", async (t) => {
  t.equal(mergeLabelSelector(null, tenant), 'kubezoo.io/tenant=abc123');
  t.equal(mergeLabelSelector('', tenant), 'kubezoo.io/tenant=abc123');
  t.equal(mergeLabelSelector(' ', tenant), 'kubezoo.io/tenant=abc123');
  t.equal(mergeLabelSelector('app=web', tenant), 'kubezoo.io/tenant=abc123,app=web');
  t.equal(mergeLabelSelector('app in (web,api),!legacy', tenant), 'kubezoo.io/tenant=abc123,app in (web,api),!legacy');
  t.equal(mergeLabelSelector('a=', tenant), 'kubezoo.io/tenant=abc123,a=');
  t.equal(mergeLabelSelector('kubezoo.io/tenantx=1', tenant), 'kubezoo.io/tenant=abc123,kubezoo.io/tenantx=1', 'only the exact key is reserved');
  // whatever the client writes, the merged selector parses and keeps the tenant's requirement
  for (const client of ['app=web', 'a in (b,c)', 'x', '!y', 'a>1', 'a notin ()']) {
    const merged = parseLabelSelector(mergeLabelSelector(client, tenant));
    t.same(merged[0], { key: 'kubezoo.io/tenant', operator: '=', values: ['abc123'] }, client);
  }
});

t.test('a client selector that mentions kubezoo.io/tenant is refused: the label is reserved', async (t) => {
  for (const client of [
    'kubezoo.io/tenant=def456',
    'kubezoo.io/tenant==abc123',
    'kubezoo.io/tenant!=abc123',
    'kubezoo.io/tenant',
    '!kubezoo.io/tenant',
    'kubezoo.io/tenant in (abc123,def456)',
    'kubezoo.io/tenant notin (def456)',
    'app=web, kubezoo.io/tenant=def456',
    ' kubezoo.io/tenant =abc123',
  ]) {
    t.throws(() => mergeLabelSelector(client, tenant), { code: 400, reason: 'BadRequest', message: 'the label kubezoo.io/tenant is reserved' }, client);
  }
});

t.test("a NUL cannot cut off the tenant's requirement upstream", async (t) => {
  // the apiserver's lexer stops at NUL: "x=y\0,kubezoo.io/tenant=..." would select every tenant's objects
  t.throws(() => mergeLabelSelector('x=y\0', tenant), { code: 400 });
  t.throws(() => mergeLabelSelector('\0', tenant), { code: 400 });
});

t.test('generated selectors: every term survives a merge and a parse', async (t) => {
  const keys = ['app', 'example.com/tier', 'a.b-c_d', 'in', 'notin', 'x9'];
  const values = ['', 'web', 'v1.2', 'a_b', 'in'];
  let seed = 7;
  const pick = <T>(list: readonly T[]): T => list[(seed = (seed * 1103515245 + 12345) % 2147483648) % list.length]!;
  for (let n = 0; n < 200; n++) {
    const requirements: string[] = [];
    const count = 1 + (n % 4);
    for (let i = 0; i < count; i++) {
      const key = pick(keys);
      const form = pick(['=', '==', '!=', 'in', 'notin', 'exists', '!']);
      if (form === 'exists') requirements.push(key);
      else if (form === '!') requirements.push('!' + key);
      else if (form === 'in' || form === 'notin') requirements.push(`${key} ${form} (${pick(values)},${pick(values)})`);
      else requirements.push(key + form + pick(values));
    }
    const selector = requirements.join(pick([',', ', ', ' ,']));
    const parsed = parseLabelSelector(selector);
    t.equal(parsed.length, count, selector);
    t.equal(parseLabelSelector(mergeLabelSelector(selector, tenant)).length, count + 1, `merged ${selector}`);
  }
});

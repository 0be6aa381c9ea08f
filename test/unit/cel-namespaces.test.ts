import t from 'tap';
import { seededRandom } from '../../bench/k8s-payloads.ts';
import { celNamespacesInTextToTenant, celNamespacesToTenant, celNamespacesToUpstream } from '../../lib/convert/rules/cel-namespaces.ts';

const SEED = Number(process.env.FUZZ_SEED ?? 20261126);
const random = seededRandom(SEED);
const int = (n: number) => Math.floor(random() * n);
const pick = <T>(values: readonly T[]): T => values[int(values.length)]!;

const strip = (path: string) => `${path}.substring(${path}.size() < 7 ? 0 : 7)`;

t.test('the namespace paths read the name without the prefix upstream', async (t) => {
  const cases: [string, string][] = [
    ["namespaceObject.metadata.name == 'team'", `${strip('namespaceObject.metadata.name')} == 'team'`],
    [
      "object.metadata.namespace == 'team' && oldObject.metadata.namespace == 'team'",
      `${strip('object.metadata.namespace')} == 'team' && ${strip('oldObject.metadata.namespace')} == 'team'`,
    ],
    ["'in ' + request.namespace", `'in ' + ${strip('request.namespace')}`],
    ['[request.namespace]', `[${strip('request.namespace')}]`],
    ['!request.namespace.startsWith("kube-")', `!${strip('request.namespace')}.startsWith("kube-")`],
    [
      'Object{metadata: Object.metadata{labels: {"ns": object.metadata.namespace}}}',
      `Object{metadata: Object.metadata{labels: {"ns": ${strip('object.metadata.namespace')}}}}`,
    ],
  ];
  for (const [tenant, upstream] of cases) {
    t.equal(celNamespacesToUpstream(tenant), upstream, tenant);
    t.equal(celNamespacesToTenant(upstream), tenant, `${tenant}: back`);
  }
});

t.test('only whole member paths outside literals, comments and has() are rewritten', async (t) => {
  const unchanged = [
    'object.metadata.namespaceX == "a"',
    'object.metadata.namespace_2',
    'myobject.metadata.namespace',
    'params.object.metadata.namespace',
    'object.metadata.namespaces',
    'Object.metadata.namespace',
    'request.namespaced',
    'request.name == "x"',
    'request.userInfo.username.startsWith("system:")',
    'object.metadata.name',
    "'object.metadata.namespace'",
    '"request.namespace == \\"x\\""',
    "r'namespaceObject.metadata.name\\'",
    "'''\nobject.metadata.namespace\n'''",
    'b"request.namespace"',
    'true // request.namespace is not read here',
    'has(object.metadata.namespace)',
    'has( request.namespace )',
    'has(oldObject.metadata.namespace) && true',
  ];
  for (const expression of unchanged) {
    t.equal(celNamespacesToUpstream(expression), expression, expression);
    t.equal(celNamespacesToTenant(expression), expression, `${expression}: back`);
  }
  t.equal(
    celNamespacesToUpstream("has(object.metadata.namespace) && object.metadata.namespace == 'team'"),
    `has(object.metadata.namespace) && ${strip('object.metadata.namespace')} == 'team'`,
    'the path after has() is still rewritten',
  );
  t.equal(celNamespacesToUpstream('x.has(request.namespace)'), `x.has(${strip('request.namespace')})`, 'a method named has is not the macro');
  t.equal(celNamespacesToUpstream("'a\\'' + request.namespace"), `'a\\'' + ${strip('request.namespace')}`, 'an escaped quote does not end the literal');
  t.equal(celNamespacesToUpstream("r'a\\' + request.namespace"), `r'a\\' + ${strip('request.namespace')}`, 'a raw literal ends at its quote');
});

t.test('text already in the rewritten form reads back as written', async (t) => {
  for (const path of ['namespaceObject.metadata.name', 'object.metadata.namespace', 'oldObject.metadata.namespace', 'request.namespace']) {
    const written = `${strip(path)} == 'team'`;
    t.not(celNamespacesToUpstream(written), written);
    t.equal(celNamespacesToTenant(celNamespacesToUpstream(written)), written, path);
  }
});

const PIECES = [
  'namespaceObject.metadata.name',
  'object.metadata.namespace',
  'oldObject.metadata.namespace',
  'request.namespace',
  'object.metadata.namespaceX',
  'xobject.metadata.namespace',
  '.',
  '_',
  'has(',
  'has (',
  ' has(',
  '(',
  ')',
  ' ',
  '\n',
  '\\',
  "'",
  '"',
  "'''",
  '"""',
  'r',
  'R',
  'b',
  '//',
  '/',
  ' == ',
  "'team'",
  '.substring(',
  '.size() < 7 ? 0 : 7)',
  '7',
  'a',
  'é',
  strip('namespaceObject.metadata.name'),
  strip('object.metadata.namespace'),
  strip('oldObject.metadata.namespace'),
  strip('request.namespace'),
];

t.test(`generated expressions read back byte for byte (seed ${SEED})`, async (t) => {
  let rewritten = 0;
  let failures = 0;
  for (let i = 0; i < 20000; i++) {
    const expression = Array.from({ length: 1 + int(12) }, () => pick(PIECES)).join('');
    const upstream = celNamespacesToUpstream(expression);
    if (upstream !== expression) rewritten++;
    const back = celNamespacesToTenant(upstream);
    if (back !== expression && failures++ < 5) t.equal(back, expression, JSON.stringify(expression));
  }
  t.equal(failures, 0, 'every generated expression reads back as written');
  t.ok(rewritten > 5000, `${rewritten} of 20000 rewritten`);
});

t.test('a message quoting a rewritten expression reads as the tenant wrote it, whatever quotes surround it', async (t) => {
  t.equal(
    celNamespacesInTextToTenant(`can't: failed expression: ${strip('object.metadata.namespace')} == 'team' && ${strip('request.namespace')} != ''`),
    "can't: failed expression: object.metadata.namespace == 'team' && request.namespace != ''",
  );
  t.equal(celNamespacesInTextToTenant('nothing to do'), 'nothing to do');
});

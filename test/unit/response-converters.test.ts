// The table of response converters: which one answers which upstream answer (responseConverterFor), and what a client
// sees from each. No server and no rig: a stream stands in for the upstream's answer, the client's answer is recorded.
import { PassThrough } from 'node:stream';
import t from 'tap';
import { AccessReviews } from '../../lib/auth/access-review.ts';
import type { Identity } from '../../lib/auth/identity.ts';
import { kindOf } from '../../lib/convert/kinds.ts';
import { partialObjectMetadataListToProtobuf } from '../../lib/convert/protobuf/partial-metadata.ts';
import { TENANT_LABEL } from '../../lib/convert/prefix.ts';
import { encodeObject } from '../../lib/convert/protobuf/encode.ts';
import { notFound } from '../../lib/errors/status-error.ts';
import { parseRequestInfo } from '../../lib/convert/request-info.ts';
import { RESPONSE_CONVERTERS, responseConverterFor, type UpstreamAnswer } from '../../lib/request/answers.ts';
import { prepareUpstreamRequestStage } from '../../lib/request/open-upstream.ts';
import { freePort } from '../../lib/rig/harness.ts';
import { TenantConversions } from '../../lib/request/tenant-conversions.ts';
import { sendStatus } from '../../lib/request/status.ts';
import { DiscoveryCache } from '../../lib/upstream/discovery.ts';
import { UpstreamPool } from '../../lib/upstream/pool.ts';
import { RecordingContext } from '../helpers/recording-context.ts';
import { PROTOBUF_MEDIA_TYPE } from '../../lib/convert/protobuf/envelope.ts';

// A loopback port nothing listens on: no converter tested here asks the upstream anything.
const pool = new UpstreamPool({ server: `https://127.0.0.1:${await freePort()}` });
t.teardown(() => pool.close());
const conversions = new TenantConversions({
  pool,
  discovery: new DiscoveryCache(pool),
  access: new AccessReviews(
    () => Promise.reject(new Error('no access review is expected here')),
    () => Promise.reject(new Error('no access review is expected here')),
  ),
});

const alice: Identity = { user: 'alice', groups: [], tenant: 'abc123' };
const administrator: Identity = { user: 'ops', groups: ['system:masters'], tenant: null };
const TABLE_ACCEPT = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json';
const METADATA_PROTOBUF_ACCEPT = 'application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';

/** A tenant's request as classified (real request info, the table's own row). */
/** What client-go sends with ContentType protobuf. */
const PROTOBUF_ACCEPT = 'application/vnd.kubernetes.protobuf, application/json';

function tenantRequest(method: string, path: string, headers: Record<string, string> = {}): RecordingContext {
  const ctx = new RecordingContext(method, path, { identity: alice, headers });
  ctx.converts = true;
  ctx.info = parseRequestInfo(method, ctx.pathname, ctx.query);
  ctx.row = ctx.info.isResourceRequest ? (kindOf(ctx.info.apiGroup, ctx.info.resource) ?? null) : null;
  return ctx;
}

function administratorRequest(method: string, path: string): RecordingContext {
  return new RecordingContext(method, path, { identity: administrator });
}

/** The upstream's answer: its head now, its body as a stream that already holds `body`. */
function upstreamAnswer(status: number, body: unknown = '', headers: Record<string, string> = {}): UpstreamAnswer {
  const contentType = headers['content-type'] ?? (body === '' ? '' : 'application/json');
  const stream = new PassThrough();
  stream.end(typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body));
  // (Node gives :status as a number, which IncomingHttpHeaders does not type.)
  const head = { ':status': status, 'content-type': contentType, ...headers } as unknown as UpstreamAnswer['headers'];
  return { status, headers: head, contentType, body: stream as never };
}

/** What the client gets: the converter the table picks answers, and its refusal becomes a Status (as the stage does). */
async function answered(ctx: RecordingContext, answer: UpstreamAnswer): Promise<RecordingContext> {
  try {
    await responseConverterFor(ctx, answer).answer(ctx, answer, conversions);
  } catch (error) {
    sendStatus(ctx, error);
  }
  await ctx.ended();
  return ctx;
}

const configMap = (namespace: string, name: string, tenant?: string) => ({
  kind: 'ConfigMap',
  apiVersion: 'v1',
  metadata: { name, namespace, ...(tenant === undefined ? {} : { labels: { [TENANT_LABEL]: tenant } }) },
  data: { key: 'value' },
});

t.test('responseConverterFor picks, for each answer, the converter that answers it', async (t) => {
  const cases: [string, () => RecordingContext, UpstreamAnswer, string][] = [
    [
      "an administrator's answer, whatever it is",
      () => administratorRequest('GET', '/api/v1/namespaces/default/configmaps'),
      upstreamAnswer(200, { items: [] }),
      'pass-through',
    ],
    [
      "an administrator's error",
      () => administratorRequest('GET', '/api/v1/namespaces/default/configmaps/x'),
      upstreamAnswer(404, { kind: 'Status' }),
      'pass-through',
    ],
    [
      "a tenant's watch answered 200 in JSON",
      () => tenantRequest('GET', '/api/v1/namespaces/default/configmaps?watch=true'),
      upstreamAnswer(200, '', { 'content-type': 'application/json' }),
      'watch stream',
    ],
    [
      'a watch of Tables, event by event',
      () => tenantRequest('GET', '/api/v1/namespaces/default/pods?watch=true', { accept: TABLE_ACCEPT }),
      upstreamAnswer(200, '', { 'content-type': 'application/json;as=Table;v=v1;g=meta.k8s.io' }),
      'watch stream',
    ],
    ['a list answered 200 in JSON', () => tenantRequest('GET', '/api/v1/namespaces/default/configmaps'), upstreamAnswer(200, { items: [] }), 'list stream'],
    [
      'a list of Tables',
      () => tenantRequest('GET', '/api/v1/namespaces/default/configmaps', { accept: TABLE_ACCEPT }),
      upstreamAnswer(200, {}, { 'content-type': 'application/json;as=Table;v=v1;g=meta.k8s.io' }),
      'Table',
    ],
    ['a get of a Table', () => tenantRequest('GET', '/api/v1/namespaces/default/configmaps/x', { accept: TABLE_ACCEPT }), upstreamAnswer(200, {}), 'Table'],
    ['a list answered 404', () => tenantRequest('GET', '/api/v1/namespaces/default/configmaps'), upstreamAnswer(404, { kind: 'Status' }), 'Status'],
    ['a get answered 404', () => tenantRequest('GET', '/api/v1/namespaces/default/configmaps/x'), upstreamAnswer(404, { kind: 'Status' }), 'Status'],
    ['a watch refused 410', () => tenantRequest('GET', '/api/v1/namespaces/default/configmaps?watch=true'), upstreamAnswer(410, { kind: 'Status' }), 'Status'],
    [
      'a Table asked for, answered 404',
      () => tenantRequest('GET', '/api/v1/namespaces/default/configmaps/x', { accept: TABLE_ACCEPT }),
      upstreamAnswer(404, { kind: 'Status' }),
      'Status',
    ],
    ['a discovery document', () => tenantRequest('GET', '/apis'), upstreamAnswer(200, {}), 'discovery and OpenAPI'],
    ['a discovery document unchanged (304)', () => tenantRequest('GET', '/api'), upstreamAnswer(304), 'discovery and OpenAPI'],
    ['OpenAPI v3', () => tenantRequest('GET', '/openapi/v3/apis/apps/v1'), upstreamAnswer(200, {}), 'discovery and OpenAPI'],
    ['OpenAPI v3 a group does not serve (404)', () => tenantRequest('GET', '/openapi/v3/apis/example.com/v1'), upstreamAnswer(404), 'Status'],
    ['OpenAPI v2', () => tenantRequest('GET', '/openapi/v2'), upstreamAnswer(200, {}), 'OpenAPI v2 (offloaded when large)'],
    [
      "OpenAPI v2 unchanged (304 to tenantgate's own conditional request)",
      () => tenantRequest('GET', '/openapi/v2'),
      upstreamAnswer(304),
      'OpenAPI v2 (offloaded when large)',
    ],
    ['OpenAPI v2 refused', () => tenantRequest('GET', '/openapi/v2'), upstreamAnswer(503, { kind: 'Status' }), 'Status'],
    ['a get', () => tenantRequest('GET', '/api/v1/namespaces/default/configmaps/x'), upstreamAnswer(200, {}), 'object'],
    ['a create', () => tenantRequest('POST', '/api/v1/namespaces/default/configmaps'), upstreamAnswer(201, {}), 'object'],
    [
      'a deletecollection (a list answered whole)',
      () => tenantRequest('DELETE', '/api/v1/namespaces/default/configmaps'),
      upstreamAnswer(200, { items: [] }),
      'object',
    ],
    [
      'a watch asked in protobuf, answered in protobuf',
      () => tenantRequest('GET', '/api/v1/namespaces/default/configmaps?watch=true', { accept: PROTOBUF_ACCEPT }),
      upstreamAnswer(200, '', { 'content-type': 'application/vnd.kubernetes.protobuf;stream=watch' }),
      'protobuf watch stream',
    ],
    [
      'a list asked in protobuf, answered in protobuf',
      () => tenantRequest('GET', '/api/v1/namespaces/default/configmaps', { accept: PROTOBUF_ACCEPT }),
      upstreamAnswer(200, '', { 'content-type': 'application/vnd.kubernetes.protobuf' }),
      'protobuf list stream',
    ],
    [
      'a list asked in protobuf, answered in JSON (the apiserver chose JSON)',
      () => tenantRequest('GET', '/api/v1/namespaces/default/configmaps', { accept: PROTOBUF_ACCEPT }),
      upstreamAnswer(200, { items: [] }),
      'list stream',
    ],
    [
      'a list of PartialObjectMetadata asked in protobuf',
      () => tenantRequest('GET', '/api/v1/namespaces/default/configmaps', { accept: METADATA_PROTOBUF_ACCEPT }),
      upstreamAnswer(200, { items: [] }),
      'object',
    ],
  ];
  for (const [answerName, request, answer, converter] of cases) t.equal(responseConverterFor(request(), answer).name, converter, answerName);
  t.same(
    new Set(cases.map(([, , , converter]) => converter)),
    new Set(RESPONSE_CONVERTERS.map((converter) => converter.name)),
    'every converter of the table answers one of these',
  );
});

t.test("pass-through: an administrator gets the upstream's bytes unchanged, hop-by-hop headers dropped", async (t) => {
  const bytes = JSON.stringify({ kind: 'ConfigMapList', items: [configMap('abc123-default', 'x', 'abc123'), configMap('xyz789-default', 'y', 'xyz789')] });
  const ctx = await answered(
    administratorRequest('GET', '/api/v1/configmaps'),
    upstreamAnswer(200, bytes, { 'content-type': 'application/json', connection: 'keep-alive', 'audit-id': 'a1' }),
  );
  t.equal(ctx.statusCode, 200);
  t.equal(ctx.text, bytes);
  t.equal(ctx.sentHeaders!['audit-id'], 'a1');
  t.equal(ctx.sentHeaders!.connection, undefined);
  t.equal(ctx.sentHeaders![':status'], undefined);
});

t.test("list stream: items of other tenants are dropped, the tenant's in its own names", async (t) => {
  const list = {
    kind: 'ConfigMapList',
    apiVersion: 'v1',
    metadata: { resourceVersion: '7' },
    items: [configMap('abc123-default', 'mine'), configMap('xyz789-default', 'theirs'), configMap('abc123-dev', 'also-mine')],
  };
  const ctx = await answered(tenantRequest('GET', '/api/v1/namespaces/default/configmaps'), upstreamAnswer(200, list));
  t.equal(ctx.statusCode, 200);
  const view = ctx.json;
  t.same(
    view.items.map((item: any) => `${item.metadata.namespace}/${item.metadata.name}`),
    ['default/mine', 'dev/also-mine'],
  );
  t.equal(view.metadata.resourceVersion, '7');
  t.notMatch(ctx.text, /xyz789|abc123/);
  t.equal(ctx.sentHeaders!['content-length'], undefined, 'the length changed: none is sent');
});

t.test("watch stream: events of other tenants' objects are dropped, the tenant's in its own names", async (t) => {
  const events = [
    { type: 'ADDED', object: configMap('abc123-default', 'mine') },
    { type: 'ADDED', object: configMap('xyz789-default', 'theirs') },
    { type: 'MODIFIED', object: configMap('abc123-default', 'mine') },
  ]
    .map((event) => JSON.stringify(event) + '\n')
    .join('');
  const ctx = await answered(
    tenantRequest('GET', '/api/v1/namespaces/default/configmaps?watch=true'),
    upstreamAnswer(200, events, { 'content-type': 'application/json' }),
  );
  const seen = ctx.text
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));
  t.same(
    seen.map((event) => `${event.type} ${event.object.metadata.namespace}/${event.object.metadata.name}`),
    ['ADDED default/mine', 'MODIFIED default/mine'],
  );
  t.notMatch(ctx.text, /xyz789/);
});

t.test("Table: rows of other tenants' objects are dropped, names in the tenant's view", async (t) => {
  const row = (namespace: string, name: string) => ({
    cells: [name, namespace],
    object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: { name, namespace } },
  });
  const table = {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion: '9' },
    columnDefinitions: [{ name: 'Name' }, { name: 'Namespace' }],
    rows: [row('abc123-default', 'mine'), row('xyz789-default', 'theirs')],
  };
  const ctx = await answered(
    tenantRequest('GET', '/api/v1/configmaps', { accept: TABLE_ACCEPT }),
    upstreamAnswer(200, table, { 'content-type': 'application/json;as=Table;v=v1;g=meta.k8s.io' }),
  );
  t.equal(ctx.statusCode, 200);
  t.same(
    ctx.json.rows.map((r: any) => r.cells),
    [['mine', 'default']],
  );
  t.notMatch(ctx.text, /xyz789|abc123/);
});

t.test("Status: the upstream's error keeps its code and reason, its message in the tenant's names", async (t) => {
  const status = {
    kind: 'Status',
    apiVersion: 'v1',
    status: 'Failure',
    code: 404,
    reason: 'NotFound',
    message: 'namespaces "abc123-dev" not found',
    details: { name: 'abc123-dev', kind: 'namespaces' },
  };
  const ctx = await answered(tenantRequest('GET', '/api/v1/namespaces/dev'), upstreamAnswer(404, status));
  t.equal(ctx.statusCode, 404);
  t.match(ctx.json, { kind: 'Status', code: 404, reason: 'NotFound', message: 'namespaces "dev" not found', details: { name: 'dev' } });
  t.notMatch(ctx.text, /abc123/);
  const forbidden = {
    kind: 'Status',
    code: 403,
    reason: 'Forbidden',
    message: 'clusterroles.rbac.authorization.k8s.io "abc123-view" is forbidden: User "abc123-alice" cannot get resource "clusterroles"',
  };
  const refused = await answered(tenantRequest('GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles/view'), upstreamAnswer(403, forbidden));
  t.equal(refused.statusCode, 403);
  t.equal(refused.json.message, 'clusterroles.rbac.authorization.k8s.io "view" is forbidden: User "alice" cannot get resource "clusterroles"');
  const plain = await answered(
    tenantRequest('GET', '/api/v1/namespaces/default/configmaps/x'),
    upstreamAnswer(404, '404 page not found', { 'content-type': 'text/plain' }),
  );
  t.match(plain.json, { kind: 'Status', code: 404, reason: 'NotFound', message: '404 page not found' }, 'plain text becomes a Status with its code');
});

t.test("discovery and OpenAPI: another tenant's groups are not listed, the tenant's own without its prefix", async (t) => {
  const group = (name: string) => ({
    name,
    versions: [{ groupVersion: `${name}/v1`, version: 'v1' }],
    preferredVersion: { groupVersion: `${name}/v1`, version: 'v1' },
  });
  const groups = { kind: 'APIGroupList', apiVersion: 'v1', groups: [group('apps'), group('abc123-example.com'), group('xyz789-example.com')] };
  const ctx = await answered(tenantRequest('GET', '/apis'), upstreamAnswer(200, groups));
  t.equal(ctx.statusCode, 200);
  t.same(
    ctx.json.groups.map((g: any) => g.name),
    ['apps', 'example.com'],
  );
  t.notMatch(ctx.text, /xyz789|abc123/);
  const unchanged = await answered(tenantRequest('GET', '/api'), upstreamAnswer(304));
  t.equal(unchanged.statusCode, 304, 'an empty answer goes as it is');
  t.equal(unchanged.text, '');
});

t.test("OpenAPI v2: the view is kept under the upstream's ETag; tenantgate's 304 upstream answers it again, with the tenant's own ETag", async (t) => {
  const prepare = prepareUpstreamRequestStage(conversions);
  const doc = { swagger: '2.0', info: { title: 'Kubernetes', version: 'v1.36.3' }, paths: {}, definitions: {} };
  const first = tenantRequest('GET', '/openapi/v2');
  prepare(first);
  t.equal(first.upstreamHeaders!['if-none-match'], undefined, 'nothing kept yet: an unconditional request');
  await answered(first, upstreamAnswer(200, doc, { 'content-type': 'application/json', etag: '"upstream-1"' }));
  t.equal(first.statusCode, 200);
  const tenantEtag = first.sentHeaders!.etag;
  t.ok(typeof tenantEtag === 'string' && tenantEtag !== '"upstream-1"', "the tenant's own ETag, never the upstream's");
  const again = tenantRequest('GET', '/openapi/v2');
  prepare(again);
  t.equal(again.upstreamHeaders!['if-none-match'], '"upstream-1"', 'tenantgate revalidates the view it keeps');
  await answered(again, upstreamAnswer(304, '', { etag: '"upstream-1"' }));
  t.equal(again.statusCode, 200);
  t.equal(again.text, first.text, 'the kept view');
  t.equal(again.sentHeaders!.etag, tenantEtag);
  const other = tenantRequest('GET', '/openapi/v2');
  other.identity = { user: 'bob', groups: [], tenant: 'xyz789' };
  prepare(other);
  t.equal(other.upstreamHeaders!['if-none-match'], undefined, "another tenant's request is not answered from this tenant's view");
  const unasked = tenantRequest('GET', '/openapi/v2');
  await answered(unasked, upstreamAnswer(304));
  t.equal(unasked.statusCode, 502, "a 304 to a request tenantgate did not make conditional is the upstream's fault");
});

t.test("object: the tenant's object in its own names; another tenant's is not found", async (t) => {
  const mine = await answered(tenantRequest('GET', '/api/v1/namespaces/default/configmaps/x'), upstreamAnswer(200, configMap('abc123-default', 'x', 'abc123')));
  t.equal(mine.statusCode, 200);
  t.same(mine.json.metadata, { name: 'x', namespace: 'default' }, 'namespace unprefixed, the tenant label gone');
  const theirs = await answered(
    tenantRequest('GET', '/api/v1/namespaces/default/configmaps/x'),
    upstreamAnswer(200, configMap('xyz789-default', 'x', 'xyz789')),
  );
  t.equal(theirs.statusCode, 404);
  t.match(theirs.json, { kind: 'Status', code: 404, reason: 'NotFound', message: 'configmaps "x" not found' });
  t.notMatch(theirs.text, /xyz789/);
  const labelled = await answered(
    tenantRequest('GET', '/api/v1/namespaces/default/configmaps/x'),
    upstreamAnswer(200, configMap('abc123-default', 'x', 'xyz789')),
  );
  t.equal(labelled.statusCode, 404, "in the tenant's namespace but labelled as another tenant's: not found either");
});

t.test("object: a list answered whole keeps only the tenant's items", async (t) => {
  const list = { kind: 'ConfigMapList', apiVersion: 'v1', metadata: {}, items: [configMap('abc123-default', 'mine'), configMap('xyz789-default', 'theirs')] };
  const ctx = await answered(tenantRequest('DELETE', '/api/v1/namespaces/default/configmaps'), upstreamAnswer(200, list));
  t.same(
    ctx.json.items.map((item: any) => item.metadata.name),
    ['mine'],
  );
});

t.test("object: PartialObjectMetadata asked in protobuf is the protobuf of the tenant's view", async (t) => {
  const meta = (namespace: string, name: string) => ({ kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: { name, namespace } });
  const list = {
    kind: 'PartialObjectMetadataList',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion: '3' },
    items: [meta('abc123-default', 'mine'), meta('xyz789-default', 'theirs')],
  };
  const ctx = await answered(
    tenantRequest('GET', '/api/v1/namespaces/default/configmaps', { accept: METADATA_PROTOBUF_ACCEPT }),
    upstreamAnswer(200, list, { 'content-type': 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1' }),
  );
  t.equal(ctx.statusCode, 200);
  t.equal(ctx.sentHeaders!['content-type'], PROTOBUF_MEDIA_TYPE);
  const expected = partialObjectMetadataListToProtobuf({
    kind: 'PartialObjectMetadataList',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion: '3' },
    items: [meta('default', 'mine')],
  });
  t.same(Buffer.concat(ctx.chunks), expected);
});

t.test("object: a write asked in protobuf is answered in protobuf, in the tenant's names; another tenant's is not found", async (t) => {
  const body = (namespace: string, tenant: string) => encodeObject('v1', 'ConfigMap', configMap(namespace, 'x', tenant));
  for (const [method, path, status] of [
    ['POST', '/api/v1/namespaces/default/configmaps', 201],
    ['PUT', '/api/v1/namespaces/default/configmaps/x', 200],
    ['PATCH', '/api/v1/namespaces/default/configmaps/x', 200],
    ['DELETE', '/api/v1/namespaces/default/configmaps/x', 200],
  ] as const) {
    const ctx = await answered(
      tenantRequest(method, path, { accept: PROTOBUF_ACCEPT }),
      upstreamAnswer(status, body('abc123-default', 'abc123'), { 'content-type': PROTOBUF_MEDIA_TYPE }),
    );
    t.equal(ctx.statusCode, status, `${method}: ${status}`);
    t.equal(ctx.sentHeaders!['content-type'], PROTOBUF_MEDIA_TYPE, `${method}: protobuf`);
    t.same(
      Buffer.concat(ctx.chunks),
      encodeObject('v1', 'ConfigMap', { ...configMap('default', 'x'), metadata: { name: 'x', namespace: 'default' } }),
      `${method}: the tenant's view`,
    );
  }
  const theirs = await answered(
    tenantRequest('PUT', '/api/v1/namespaces/default/configmaps/x', { accept: PROTOBUF_ACCEPT }),
    upstreamAnswer(200, body('abc123-default', 'xyz789'), { 'content-type': PROTOBUF_MEDIA_TYPE }),
  );
  t.equal(theirs.statusCode, 404, "labelled as another tenant's: not found");
  t.equal(theirs.sentHeaders!['content-type'], PROTOBUF_MEDIA_TYPE, 'the Status in protobuf');
});

t.test('a Status tenantgate makes is protobuf to a protobuf client of a protobuf answer, JSON otherwise', async (t) => {
  const cases: [string, () => RecordingContext, string][] = [
    ["a protobuf client's get", () => tenantRequest('GET', '/api/v1/namespaces/default/configmaps/x', { accept: PROTOBUF_ACCEPT }), PROTOBUF_MEDIA_TYPE],
    ["a protobuf client's create", () => tenantRequest('POST', '/api/v1/namespaces/default/configmaps', { accept: PROTOBUF_ACCEPT }), PROTOBUF_MEDIA_TYPE],
    ["a JSON client's get", () => tenantRequest('GET', '/api/v1/namespaces/default/configmaps/x'), 'application/json'],
    ["a Table's client (kubectl get)", () => tenantRequest('GET', '/api/v1/namespaces/default/configmaps', { accept: TABLE_ACCEPT }), 'application/json'],
    [
      "a protobuf client's scale",
      () => tenantRequest('GET', '/apis/apps/v1/namespaces/default/deployments/x/scale', { accept: PROTOBUF_ACCEPT }),
      'application/json',
    ],
    ['an administrator', () => administratorRequest('GET', '/api/v1/namespaces/default/configmaps/x'), 'application/json'],
  ];
  for (const [what, request, contentType] of cases) {
    const ctx = request();
    sendStatus(ctx, notFound('configmaps "x" not found'));
    await ctx.ended();
    t.equal(ctx.sentHeaders!['content-type'], contentType, what);
    if (contentType === PROTOBUF_MEDIA_TYPE)
      t.same(
        Buffer.concat(ctx.chunks),
        encodeObject('v1', 'Status', notFound('configmaps "x" not found').toJSON() as Record<string, unknown>),
        `${what}: the Status`,
      );
  }
});

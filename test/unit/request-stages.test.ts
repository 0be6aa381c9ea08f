// What each stage of the request pipeline decides from a request's context: resolve tenant, classify, admit, authorize
// reads at the cluster scope, upgrade, prepare upstream request, list across namespaces, convert request body, open
// upstream and answer. No server and no rig: an upstream that is never there (an unused loopback port) or a stream
// standing in for the upstream's answer.
import { PassThrough } from 'node:stream';
import t from 'tap';
import { AccessReviews, type AccessQuestion } from '../../lib/auth/access-review.ts';
import type { Identity } from '../../lib/auth/identity.ts';
import { TENANT_LABEL } from '../../lib/convert/prefix.ts';
import { StatusError } from '../../lib/errors/status-error.ts';
import { answerStage } from '../../lib/request/answers.ts';
import { listAcrossNamespacesStage } from '../../lib/request/merged-list.ts';
import { openUpstreamStage, prepareUpstreamRequestStage } from '../../lib/request/open-upstream.ts';
import { admit, authorizeClusterScopeReads, classify, discoverKind, resolve } from '../../lib/request/pipeline.ts';
import type { Stage } from '../../lib/request/stage.ts';
import { convertRequestBodyStage, MAX_REQUEST_BODY_BYTES } from '../../lib/request/request-body.ts';
import { freePort } from '../../lib/rig/harness.ts';
import { TenantConversions } from '../../lib/request/tenant-conversions.ts';
import { upgradeStage } from '../../lib/request/upgrade.ts';
import { MemoryTenantStore } from '../../lib/tenants/memory-store.ts';
import { TENANT_API_VERSION } from '../../lib/tenants/tenant.ts';
import { DiscoveryCache } from '../../lib/upstream/discovery.ts';
import { UpstreamPool } from '../../lib/upstream/pool.ts';
import { RecordingContext, type RecordingOptions } from '../helpers/recording-context.ts';

// A loopback port nothing listens on: the two tests of an unreachable upstream fail there at once; no other goes there.
const UPSTREAM = { server: `https://127.0.0.1:${await freePort()}`, token: 'tenantgate-token' };
const pool = new UpstreamPool(UPSTREAM);
t.teardown(() => pool.close());
const discovery = new DiscoveryCache(pool);
/** Access reviews answered from `allowed`, the upstream's and the tenant RBAC's alike; every question asked is kept. */
function accessReviews(allowed: (question: AccessQuestion) => boolean): { access: AccessReviews; asked: AccessQuestion[] } {
  const asked: AccessQuestion[] = [];
  const access = new AccessReviews(
    async (question) => (asked.push(question), allowed(question)),
    async (_tenant, q) => {
      const { verb = '', group = '', resource = '', name } = q.resourceAttributes ?? {};
      const question: AccessQuestion = {
        user: q.user,
        groups: [...q.groups],
        resourceAttributes: { verb, group, resource, namespace: '', ...(name === undefined ? {} : { name }) },
      };
      asked.push(question);
      return { allowed: allowed(question), reason: '' };
    },
  );
  return { access, asked };
}
const noReviews = accessReviews(() => {
  throw new Error('no access review is expected here');
});
const conversions = new TenantConversions({ pool, discovery, access: noReviews.access });

const store = new MemoryTenantStore();
const tenantA = await store.create({ apiVersion: TENANT_API_VERSION, kind: 'Tenant', metadata: { name: 'abc123' }, spec: {} });
const alice: Identity = { user: 'alice', groups: ['team'], tenant: 'abc123', proof: { kind: 'token', tenantUid: tenantA.metadata.uid } };
const administrator: Identity = { user: 'ops', groups: ['system:masters'], tenant: null };

/** Runs a stage that must decide at once (no promise). */
function runNow(stage: Stage['run'], ctx: RecordingContext): boolean {
  const outcome = stage(ctx);
  if (typeof outcome !== 'boolean') throw new Error('the stage did not decide synchronously');
  return outcome;
}

/** The StatusError a stage throws or rejects with. */
async function refusalOf(stage: Stage['run'], ctx: RecordingContext): Promise<StatusError> {
  try {
    await stage(ctx);
  } catch (error) {
    if (error instanceof StatusError) return error;
    throw error;
  }
  throw new Error('the stage did not refuse the request');
}

const resolveStage = resolve(store, false);
const classifyStage = classify;
const discoverKindStage = discoverKind(discovery);

/** A tenant's request as the stages before the tail leave it: resolved, classified and admitted. */
function tenantRequest(method: string, path: string, options: RecordingOptions = {}): RecordingContext {
  const ctx = new RecordingContext(method, path, { identity: alice, ...options });
  runNow(resolveStage, ctx);
  runNow(classifyStage, ctx);
  runNow(discoverKindStage, ctx);
  runNow(admit, ctx);
  return ctx;
}

/** An administrator's request as far as "resolve tenant". */
function administratorRequest(method: string, path: string, options: RecordingOptions = {}): RecordingContext {
  const ctx = new RecordingContext(method, path, { identity: administrator, ...options });
  runNow(resolveStage, ctx);
  return ctx;
}

const prepare = prepareUpstreamRequestStage(conversions);
const TABLE_ACCEPT = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';

t.test('resolve tenant', async (t) => {
  t.test('a tenant whose tenant exists is converted; an administrator is not', async (t) => {
    t.equal(tenantRequest('GET', '/api/v1/namespaces').converts, true);
    t.equal(administratorRequest('GET', '/api/v1/namespaces').converts, false);
  });
  t.test("with conversion off (--passthrough) a tenant's request passes through", async (t) => {
    const ctx = new RecordingContext('GET', '/api/v1/namespaces', { identity: alice });
    t.equal(runNow(resolve(store, true), ctx), false);
    t.equal(ctx.converts, false);
  });
  t.test('an identity of a tenant that does not exist, or of another incarnation, is 401', async (t) => {
    for (const identity of [
      { ...alice, tenant: 'xyz789' },
      { ...alice, proof: { kind: 'token' as const, tenantUid: 'an-older-uid' } },
    ]) {
      const refusal = await refusalOf(resolveStage, new RecordingContext('GET', '/api/v1/namespaces', { identity }));
      t.equal(refusal.code, 401);
    }
  });
});

t.test('classify', async (t) => {
  t.test('passes requests that are not converted on without classifying them', async (t) => {
    const ctx = administratorRequest('GET', '/api/v1/namespaces/default/configmaps/x');
    t.equal(runNow(classifyStage, ctx), false);
    t.equal(ctx.info, null);
    t.equal(ctx.row, null);
  });
  t.test("a tenant's request gets its request info and its kind's row", async (t) => {
    const ctx = tenantRequest('GET', '/api/v1/namespaces/default/configmaps/x');
    t.match(ctx.info, { verb: 'get', namespace: 'default', resource: 'configmaps', name: 'x' });
    t.match(ctx.row, { resource: 'configmaps', scope: 'Namespaced', tenancy: 'tenant' });
    t.equal(ctx.asTenantgate, false);
  });
  t.test('classifies every request at once, asking nothing of upstream discovery (flow control reads it next)', async (t) => {
    const builtin = new RecordingContext('GET', '/api/v1/namespaces/default/pods?watch=1', { identity: alice });
    runNow(resolveStage, builtin);
    t.equal(runNow(classifyStage, builtin), false);
    t.match(builtin.info, { verb: 'watch', resource: 'pods' });
    t.match(builtin.row, { resource: 'pods' }, "a built-in kind's row at once");
    t.equal(runNow(discoverKindStage, builtin), false, 'and discovery has nothing to add');
    const custom = new RecordingContext('GET', '/apis/example.com/v1/namespaces/default/widgets', { identity: alice });
    runNow(resolveStage, custom);
    t.equal(runNow(classifyStage, custom), false);
    t.match(custom.info, { verb: 'list', apiGroup: 'example.com', resource: 'widgets' });
    t.equal(custom.row, null, "a custom resource's scope is discovery's, after flow control");
    const asked = discoverKindStage(custom);
    t.type(asked, Promise, 'which asks the upstream');
    await t.rejects(asked as Promise<boolean>, 'here, an upstream that is not there');
  });
  t.test('a discovery document is read as tenantgate; a non-resource path no tenant may read is 404', async (t) => {
    const ctx = tenantRequest('GET', '/api');
    t.equal(ctx.row, null);
    t.equal(ctx.asTenantgate, true);
    const ctx2 = new RecordingContext('GET', '/metrics', { identity: alice });
    runNow(resolveStage, ctx2);
    t.equal((await refusalOf(classifyStage, ctx2)).code, 404);
  });
});

t.test('admit', async (t) => {
  t.test('a hidden kind does not exist for a tenant (404)', async (t) => {
    const ctx = new RecordingContext('GET', '/api/v1/componentstatuses', { identity: alice });
    runNow(resolveStage, ctx);
    runNow(classifyStage, ctx);
    t.equal((await refusalOf(admit, ctx)).code, 404);
  });
  t.test('a shared kind is read-only: a read passes, a write is 403', async (t) => {
    t.equal(tenantRequest('GET', '/api/v1/nodes').row?.tenancy, 'shared-read-only');
    const ctx = new RecordingContext('DELETE', '/api/v1/nodes/node-1', { identity: alice });
    runNow(resolveStage, ctx);
    runNow(classifyStage, ctx);
    const refusal = await refusalOf(admit, ctx);
    t.equal(refusal.code, 403);
    t.match(refusal.message, /read-only/);
  });
  t.test("discovery and administrators' requests pass", async (t) => {
    t.equal(runNow(admit, tenantRequest('GET', '/api')), false);
    t.equal(runNow(admit, administratorRequest('DELETE', '/api/v1/nodes/node-1')), false);
  });
});

t.test('authorize reads at the cluster scope', async (t) => {
  t.test("a list across namespaces the tenant's RBAC allows is made as tenantgate, after one decision of its RBAC at the cluster scope", async (t) => {
    const { access, asked } = accessReviews(() => true);
    const ctx = tenantRequest('GET', '/api/v1/pods');
    t.equal(await authorizeClusterScopeReads(access)(ctx), false);
    t.equal(ctx.asTenantgate, true);
    t.equal(asked.length, 1);
    t.match(asked[0]!.resourceAttributes, { verb: 'list', resource: 'pods', namespace: '' });
  });
  t.test("one the tenant's RBAC refuses is the apiserver's 403, in the tenant's names", async (t) => {
    const { access } = accessReviews(() => false);
    const refusal = await refusalOf(authorizeClusterScopeReads(access), tenantRequest('GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles/view'));
    t.equal(refusal.code, 403);
    t.match(refusal.message, /clusterroles\.rbac\.authorization\.k8s\.io "view" is forbidden: User "alice" cannot get/);
    t.notMatch(refusal.message, /abc123/);
  });
  t.test("reads in a namespace and writes are left to the upstream's RBAC: nothing is asked", async (t) => {
    const { access, asked } = accessReviews(() => true);
    for (const [method, path] of [
      ['GET', '/api/v1/namespaces/default/pods'],
      ['POST', '/api/v1/namespaces/default/pods'],
      ['DELETE', '/apis/rbac.authorization.k8s.io/v1/clusterroles/view'],
    ] as const) {
      const ctx = tenantRequest(method, path);
      t.equal(runNow(authorizeClusterScopeReads(access), ctx), false, `${method} ${path}`);
      t.equal(ctx.asTenantgate, false);
    }
    t.equal(runNow(authorizeClusterScopeReads(access), administratorRequest('GET', '/api/v1/pods')), false, 'nor for administrators');
    t.equal(asked.length, 0);
  });
});

t.test('upgrade', async (t) => {
  const upgrade = upgradeStage(UPSTREAM);
  const upgradeHeaders = { upgrade: 'SPDY/3.1', connection: 'Upgrade' };
  const carrying = { socket: new PassThrough(), head: Buffer.alloc(0) };
  t.test('a request without Upgrade passes on', async (t) => {
    t.equal(runNow(upgrade, tenantRequest('POST', '/api/v1/namespaces/default/pods/web/exec?command=ls')), false);
  });
  t.test("a tenant's POST with Upgrade that is no exec, attach, port-forward or proxy is 400", async (t) => {
    const ctx = tenantRequest('POST', '/api/v1/namespaces/default/configmaps', { headers: upgradeHeaders, upgrade: carrying });
    const refusal = await refusalOf(upgrade, ctx);
    t.equal(refusal.code, 400);
    t.match(refusal.message, /exec, attach, port-forward and proxy/);
  });
  t.test("a tenant's GET with Upgrade of anything else goes on as a plain request", async (t) => {
    const ctx = tenantRequest('GET', '/api/v1/namespaces/default/configmaps/x', { headers: upgradeHeaders, upgrade: carrying });
    t.equal(runNow(upgrade, ctx), false);
  });
});

t.test('prepare upstream request', async (t) => {
  t.test(
    "a tenant's get goes to its prefixed namespace as the tenant's prefixed user and groups, protobuf asked as the client prefers, no tenant extra",
    async (t) => {
      const ctx = tenantRequest('GET', '/api/v1/namespaces/default/configmaps/x', {
        headers: {
          accept: 'application/vnd.kubernetes.protobuf,application/json',
          'accept-encoding': 'gzip',
          authorization: 'Bearer the-clients-token',
          'impersonate-user': 'someone-else',
        },
      });
      t.equal(runNow(prepare, ctx), false);
      t.equal(ctx.upstreamMethod, 'GET');
      t.equal(ctx.upstreamTarget, '/api/v1/namespaces/abc123-default/configmaps/x');
      const headers = ctx.upstreamHeaders!;
      t.equal(headers['impersonate-user'], 'abc123-alice');
      t.same(headers['impersonate-group'], ['abc123:team', 'abc123:system:authenticated']);
      t.equal(headers['impersonate-extra-tenant'], undefined, 'a read carries only what RBAC reads');
      t.equal(headers.accept, 'application/vnd.kubernetes.protobuf, application/json', 'a client that prefers protobuf: protobuf asked, converted on the wire');
      t.equal(headers['accept-encoding'], undefined, 'answers are rewritten: they must arrive uncompressed');
      t.equal(headers.authorization, 'Bearer tenantgate-token', "tenantgate's credentials, never the client's");
    },
  );
  t.test(
    "a protobuf client's writes are asked in protobuf where the answer is the object (or a Status); a scale, a CRD's write, a Table in JSON",
    async (t) => {
      const accept = 'application/vnd.kubernetes.protobuf, application/json';
      const cases: [string, string, boolean][] = [
        ['POST', '/api/v1/namespaces/default/configmaps', true],
        ['PUT', '/api/v1/namespaces/default/configmaps/x', true],
        ['PATCH', '/api/v1/namespaces/default/configmaps/x', true],
        ['DELETE', '/api/v1/namespaces/default/configmaps/x', true],
        ['PATCH', '/api/v1/namespaces/default/pods/x/status', true],
        ['PUT', '/api/v1/namespaces/x/finalize', true],
        ['GET', '/apis/apps/v1/namespaces/default/deployments/x/scale', false],
        ['PATCH', '/apis/apps/v1/namespaces/default/deployments/x/scale', false],
        ['DELETE', '/api/v1/namespaces/default/configmaps', false],
        ['POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', false],
        ['GET', '/api/v1/configmaps', true],
      ];
      for (const [method, path, protobuf] of cases) {
        const ctx = tenantRequest(method, path, { headers: { accept } });
        runNow(prepare, ctx);
        t.equal(String(ctx.upstreamHeaders!.accept).trim(), protobuf ? accept : 'application/json', `${method} ${path}: ${protobuf ? 'protobuf' : 'JSON'}`);
      }
    },
  );
  t.test("a cluster-scoped object's name is prefixed; a namespace is its own prefixed name", async (t) => {
    const role = tenantRequest('GET', '/apis/rbac.authorization.k8s.io/v1/clusterroles/view');
    runNow(prepare, role);
    t.equal(role.upstreamTarget, '/apis/rbac.authorization.k8s.io/v1/clusterroles/abc123-view');
    const namespace = tenantRequest('GET', '/api/v1/namespaces/default');
    runNow(prepare, namespace);
    t.equal(namespace.upstreamTarget, '/api/v1/namespaces/abc123-default');
  });
  t.test('a create carries the tenant extra the admission policy reads', async (t) => {
    const ctx = tenantRequest('POST', '/api/v1/namespaces/default/configmaps', {
      body: '{}',
      headers: { 'content-type': 'application/json', 'content-length': '2' },
    });
    runNow(prepare, ctx);
    t.equal(ctx.upstreamTarget, '/api/v1/namespaces/abc123-default/configmaps');
    t.same(ctx.upstreamHeaders!['impersonate-extra-tenant'], ['abc123']);
    t.equal(ctx.upstreamHeaders!['impersonate-user'], 'abc123-alice');
    t.equal(ctx.upstreamHeaders!['content-length'], undefined, 'the converted body has its own length');
  });
  t.test("a list across namespaces is narrowed to the tenant's label", async (t) => {
    const ctx = tenantRequest('GET', '/api/v1/pods?labelSelector=app%3Dweb');
    runNow(prepare, ctx);
    const query = new URL(ctx.upstreamTarget, 'https://upstream').searchParams;
    t.equal(query.get('labelSelector'), `${TENANT_LABEL}=abc123,app=web`);
  });
  t.test("a Table asks the upstream for what the kind's rule must see, and leaves the shared empty query of other requests empty", async (t) => {
    const table = tenantRequest('GET', '/api/v1/namespaces/default/pods', { headers: { accept: TABLE_ACCEPT } });
    const other = tenantRequest('GET', '/api/v1/namespaces/default/configmaps');
    runNow(prepare, table);
    t.equal(new URL(table.upstreamTarget, 'https://upstream').searchParams.get('includeObject'), 'Object', "pods' rule reads the whole object");
    t.equal(table.rowObjects, 'Metadata', 'cut back to what the client asked for (the default)');
    t.equal(table.query.toString(), '');
    t.equal(other.query.toString(), '', "the other request's query is still empty");
    runNow(prepare, other);
    t.equal(other.upstreamTarget, '/api/v1/namespaces/abc123-default/configmaps');
    const none = tenantRequest('GET', '/api/v1/namespaces/default/configmaps?includeObject=None', { headers: { accept: TABLE_ACCEPT } });
    runNow(prepare, none);
    t.equal(
      new URL(none.upstreamTarget, 'https://upstream').searchParams.get('includeObject'),
      'Metadata',
      'None is asked as Metadata so each row can still be checked',
    );
    t.equal(none.rowObjects, 'None');
    t.equal(none.query.get('includeObject'), 'None', "the client's own query is not rewritten");
  });
  t.test('a discovery document is asked as tenantgate: no impersonation at all', async (t) => {
    const ctx = tenantRequest('GET', '/api');
    runNow(prepare, ctx);
    t.equal(ctx.upstreamTarget, '/api');
    t.same(
      Object.keys(ctx.upstreamHeaders!).filter((name) => name.startsWith('impersonate-')),
      [],
    );
  });
  t.test("an administrator's request keeps its target and headers", async (t) => {
    const accept = 'application/vnd.kubernetes.protobuf,application/json';
    const ctx = administratorRequest('GET', '/api/v1/namespaces/abc123-default/configmaps/x?resourceVersion=0', {
      headers: { accept, 'accept-encoding': 'gzip' },
    });
    t.equal(runNow(prepare, ctx), false);
    t.equal(ctx.upstreamTarget, '/api/v1/namespaces/abc123-default/configmaps/x?resourceVersion=0');
    t.equal(ctx.upstreamHeaders!.accept, accept);
    t.equal(ctx.upstreamHeaders!['accept-encoding'], 'gzip');
    t.equal(ctx.upstreamHeaders!['impersonate-user'], 'ops');
  });
});

t.test('list across namespaces', async (t) => {
  const stage = listAcrossNamespacesStage(conversions);
  t.test('leaves every other request to the one upstream request', async (t) => {
    for (const path of [
      '/api/v1/namespaces/default/configmaps',
      '/api/v1/pods',
      '/api/v1/namespaces/default/configmaps/x',
      '/api/v1/configmaps?watch=true',
      '/api',
    ]) {
      const ctx = tenantRequest('GET', path);
      runNow(prepare, ctx);
      t.equal(runNow(stage, ctx), false, path);
    }
    t.equal(runNow(stage, administratorRequest('GET', '/api/v1/configmaps')), false, "an administrator's list across namespaces");
  });
  t.test('takes a list without a namespace of a kind listed namespace by namespace (its upstream unreachable here: 503)', async (t) => {
    const ctx = tenantRequest('GET', '/api/v1/configmaps');
    runNow(prepare, ctx);
    t.equal(runNow(stage, ctx), true);
    await ctx.ended();
    t.equal(ctx.statusCode, 503);
    t.equal(ctx.json.kind, 'Status');
  });
});

t.test('convert request body', async (t) => {
  const stage = convertRequestBodyStage(conversions);
  const prepared = (method: string, path: string, body?: string, contentType = 'application/json') => {
    const ctx = tenantRequest(method, path, body === undefined ? {} : { body, headers: { 'content-type': contentType } });
    runNow(prepare, ctx);
    return ctx;
  };
  t.test('requests without a body pass on at once', async (t) => {
    for (const path of ['/api/v1/namespaces/default/configmaps/x', '/api/v1/namespaces/default/configmaps?watch=true']) {
      const ctx = prepared('GET', path);
      t.equal(stage(ctx), false, path);
      t.equal(ctx.upstreamBody, null);
    }
    t.equal(
      stage(administratorRequest('POST', '/api/v1/namespaces/default/configmaps', { body: '{}' })),
      false,
      "an administrator's body streams through unread",
    );
  });
  t.test("a create's body gets the prefixed namespace and the tenant label", async (t) => {
    const ctx = prepared(
      'POST',
      '/api/v1/namespaces/default/configmaps',
      JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'default', labels: { app: 'web' } }, data: { a: 'b' } }),
    );
    t.equal(await stage(ctx), false);
    const body = JSON.parse(String(ctx.upstreamBody));
    t.equal(body.metadata.namespace, 'abc123-default');
    t.same(body.metadata.labels, { app: 'web', [TENANT_LABEL]: 'abc123' });
    t.same(body.data, { a: 'b' });
    t.equal(ctx.upstreamHeaders!['content-type'], 'application/json');
  });
  t.test("a create that names another tenant in the label gets its own tenant's", async (t) => {
    const ctx = prepared(
      'POST',
      '/api/v1/namespaces/default/configmaps',
      JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', labels: { [TENANT_LABEL]: 'xyz789' } } }),
    );
    await stage(ctx);
    t.equal(JSON.parse(String(ctx.upstreamBody)).metadata.labels[TENANT_LABEL], 'abc123');
  });
  t.test('a patch that sets or removes the tenant label is refused (422)', async (t) => {
    for (const labels of [{ [TENANT_LABEL]: 'xyz789' }, null]) {
      const ctx = prepared('PATCH', '/api/v1/namespaces/default/configmaps/x', JSON.stringify({ metadata: { labels } }), 'application/merge-patch+json');
      const refusal = await refusalOf(stage, ctx);
      t.equal(refusal.code, 422, JSON.stringify(labels));
      t.equal(refusal.reason, 'Invalid');
    }
    const jsonPatch = prepared(
      'PATCH',
      '/apis/apps/v1/namespaces/default/deployments/web/scale',
      JSON.stringify([{ op: 'replace', path: `/metadata/labels/${TENANT_LABEL.replace('/', '~1')}`, value: 'xyz789' }]),
      'application/json-patch+json',
    );
    t.equal((await refusalOf(stage, jsonPatch)).code, 422, 'nor through a JSON patch of a subresource');
  });
  t.test('a body over 3 MiB is 413', async (t) => {
    const ctx = prepared('POST', '/api/v1/namespaces/default/configmaps', 'x'.repeat(MAX_REQUEST_BODY_BYTES + 1));
    const refusal = await refusalOf(stage, ctx);
    t.equal(refusal.code, 413);
    t.equal(ctx.upstreamBody, null);
  });
  t.test('a body that is not JSON is 400', async (t) => {
    t.equal((await refusalOf(stage, prepared('POST', '/api/v1/namespaces/default/configmaps', '{"metadata":'))).code, 400);
  });
});

/** A pool that hands out one stream standing in for the upstream's answer, and keeps what was asked of it. */
function standInPool(): { pool: UpstreamPool; upstream: PassThrough; requests: { method: string; path: string; endStream: boolean }[] } {
  const upstream = new PassThrough();
  const requests: { method: string; path: string; endStream: boolean }[] = [];
  const request = (method: string, path: string, _headers: unknown, endStream: boolean) => (requests.push({ method, path, endStream }), upstream);
  return { pool: { request, authorization: undefined } as unknown as UpstreamPool, upstream, requests };
}

t.test('open upstream', async (t) => {
  t.test('an upstream that cannot be reached is a 503 Status', async (t) => {
    const ctx = tenantRequest('GET', '/api/v1/namespaces/default/configmaps/x');
    runNow(prepare, ctx);
    t.equal(runNow(openUpstreamStage(conversions), ctx), false);
    t.ok(ctx.upstream !== null);
    await ctx.ended();
    t.equal(ctx.statusCode, 503);
    t.match(ctx.json, { kind: 'Status', code: 503, reason: 'ServiceUnavailable' });
  });
  t.test('the request goes with its converted body, or ends with its head when there is none', async (t) => {
    const stand = standInPool();
    const local = new TenantConversions({ pool: stand.pool, discovery, access: noReviews.access });
    const ctx = tenantRequest('POST', '/api/v1/namespaces/default/configmaps', {
      body: JSON.stringify({ metadata: { name: 'x' } }),
      headers: { 'content-type': 'application/json' },
    });
    runNow(prepareUpstreamRequestStage(local), ctx);
    await convertRequestBodyStage(local)(ctx);
    t.equal(runNow(openUpstreamStage(local), ctx), false);
    const sent: Buffer[] = [];
    for await (const chunk of stand.upstream) sent.push(chunk);
    t.same(stand.requests, [{ method: 'POST', path: '/api/v1/namespaces/abc123-default/configmaps', endStream: false }]);
    t.same(JSON.parse(Buffer.concat(sent).toString()).metadata, { name: 'x', labels: { [TENANT_LABEL]: 'abc123' } });
    const get = tenantRequest('GET', '/api/v1/namespaces/default/configmaps/x');
    const stand2 = standInPool();
    runNow(prepare, get);
    runNow(openUpstreamStage(new TenantConversions({ pool: stand2.pool, discovery, access: noReviews.access })), get);
    t.same(stand2.requests, [{ method: 'GET', path: '/api/v1/namespaces/abc123-default/configmaps/x', endStream: true }]);
  });
});

t.test('answer', async (t) => {
  t.test("answers once the upstream's head arrives, with the tenant's view of the object", async (t) => {
    const stand = standInPool();
    const local = new TenantConversions({ pool: stand.pool, discovery, access: noReviews.access });
    const ctx = tenantRequest('GET', '/api/v1/namespaces/default/configmaps/x');
    runNow(prepareUpstreamRequestStage(local), ctx);
    runNow(openUpstreamStage(local), ctx);
    t.equal(runNow(answerStage(local), ctx), true, "the pipeline ends here: the answer comes with the upstream's head");
    t.equal(ctx.headersSent, false);
    stand.upstream.emit('response', { ':status': 200, 'content-type': 'application/json' });
    stand.upstream.end(
      JSON.stringify({ kind: 'ConfigMap', apiVersion: 'v1', metadata: { name: 'x', namespace: 'abc123-default', labels: { [TENANT_LABEL]: 'abc123' } } }),
    );
    await ctx.ended();
    t.equal(ctx.statusCode, 200);
    t.equal(ctx.upstreamStatus, 200);
    t.same(ctx.json.metadata, { name: 'x', namespace: 'default' });
  });
});

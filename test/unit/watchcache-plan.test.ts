// Which tenant requests the watch cache answers, and which go upstream as before: it answers only what it can answer
// exactly as the apiserver would (JSON, parameters it understands, reads that may be served from a cache).
import t from 'tap';
import { kindOf } from '../../lib/convert/kinds.ts';
import { parseRequestInfo } from '../../lib/convert/request-info.ts';
import type { UpstreamPool } from '../../lib/upstream/pool.ts';
import { acceptsPlainJson, cacheEncodingOf } from '../../lib/watchcache/encodings.ts';
import { cachedResourcesOf, WatchCache } from '../../lib/watchcache/watch-cache.ts';
import { standInWatchCache, TENANT_NAMESPACES, upstreamConfigMap } from '../helpers/watch-cache-stand-in.ts';

const stand = await standInWatchCache(
  ['configmaps', 'pods', 'namespaces'],
  { ...TENANT_NAMESPACES, '/api/v1/configmaps': [upstreamConfigMap('abcdef', 'default', 'a', 90)] },
  100,
);
t.teardown(() => stand.stop());

/** The plan for GET `target` (path and query, tenant names) with `accept`. */
function planOf(target: string, accept?: string, watchCache: WatchCache = stand.watchCache) {
  const url = new URL(target, 'https://tenantgate');
  const info = parseRequestInfo('GET', url.pathname, url.searchParams);
  return watchCache.planOf(info, kindOf(info.apiGroup, info.resource) ?? null, 'abcdef', url.searchParams, accept);
}

const CM = '/api/v1/namespaces/default/configmaps';

t.test('served from the cache: watches of every resourceVersion form, and lists that allow a cached answer', async (t) => {
  for (const target of [
    `${CM}?watch=1`,
    `${CM}?watch=true&resourceVersion=0`,
    `${CM}?watch=1&resourceVersion=95&allowWatchBookmarks=true&timeoutSeconds=30`,
    `${CM}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=100&allowWatchBookmarks=true`,
    `${CM}?watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&resourceVersion=0`,
    `${CM}?watch=1&labelSelector=app%3Dx&fieldSelector=metadata.name%3Da`,
    '/api/v1/configmaps?watch=1&fieldSelector=metadata.namespace%3Ddefault',
    '/api/v1/namespaces?watch=1&resourceVersion=0',
    '/api/v1/namespaces/default/pods?watch=1&fieldSelector=spec.nodeName%3Dn1%2Cstatus.phase%3DPending',
    `${CM}?resourceVersion=0`,
    `${CM}?resourceVersion=0&limit=2`,
    `${CM}?resourceVersion=50&resourceVersionMatch=NotOlderThan`,
    `${CM}?resourceVersion=50`,
    `${CM}?limit=2&continue=tgwc.abc`,
    '/api/v1/configmaps?resourceVersion=0&labelSelector=app',
    `${CM}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`,
    '/api/v1/namespaces?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true',
  ]) {
    t.ok(planOf(target), target);
  }
  for (const accept of [undefined, '', 'application/json', '*/*', 'application/json, */*', 'application/*', 'Application/JSON;charset=utf-8']) {
    t.ok(planOf(`${CM}?watch=1`, accept), `Accept ${JSON.stringify(accept)}`);
  }
});

t.test('what the plan reads off the request', async (t) => {
  const watch = planOf(`${CM}?watch=1&resourceVersion=95&allowWatchBookmarks=true&timeoutSeconds=30&labelSelector=app%3Dx`)!;
  t.equal(watch.watch, true);
  t.equal(watch.resourceVersion, '95');
  t.equal(watch.bookmarks, true);
  t.equal(watch.timeoutSeconds, 30);
  t.equal(watch.sendInitialEvents, null);
  t.equal(watch.selection.namespace, 'default');
  t.equal(watch.selection.everything, false);
  t.equal(watch.cache.path, '/api/v1/configmaps');
  const watchList = planOf(`${CM}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=100&allowWatchBookmarks=1`)!;
  t.equal(watchList.sendInitialEvents, true);
  t.equal(watchList.bookmarks, true, 'booleans as Go parses them (1)');
  t.equal(watchList.resourceVersionMatch, 'NotOlderThan');
  const list = planOf(`${CM}?resourceVersion=0&limit=2`)!;
  t.equal(list.watch, false);
  t.equal(list.limit, 2);
  t.equal(list.timeoutSeconds, 0, 'no timeout given: the default');
  t.equal(planOf('/api/v1/configmaps?watch=1')!.selection.namespace, null, 'all namespaces');
  t.equal(planOf('/api/v1/namespaces?watch=1')!.selection.namespace, null, 'a cluster-scoped kind');
  t.equal(planOf(`${CM}?limit=2&continue=tgwc.abc`)!.continueToken, 'tgwc.abc');
  t.equal(
    planOf(`${CM}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true`)!.consistentInitialState,
    true,
    'a watch-list of one namespace without resourceVersion: its initial state from one consistent upstream list',
  );
  t.equal(watchList.consistentInitialState, false, 'with a resourceVersion: from the cache');
  t.same(planOf('/api/v1/configmaps?watch=1')!.selection.across?.tenant, 'abcdef', "across namespaces: the tenant's labelled namespaces only");
  t.equal(planOf(`${CM}?watch=1`)!.selection.across, null, 'one namespace: its RBAC decides');
});

t.test('sent upstream: what the cache cannot answer exactly as the apiserver', async (t) => {
  const upstream: [string, string, string?][] = [
    [`${CM}`, 'a consistent list (resourceVersion unset)'],
    [`${CM}?limit=2`, 'a consistent list with a limit'],
    [`${CM}?resourceVersion=50&resourceVersionMatch=Exact`, 'Exact: a past state the cache does not keep'],
    [`${CM}?resourceVersion=0&resourceVersionMatch=Bogus`, "an unknown resourceVersionMatch (the apiserver's 422)"],
    [`${CM}?limit=2&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ`, "the apiserver's own continue token"],
    [`${CM}?resourceVersion=0&limit=2&continue=tgwc.abc`, "a continue token with a resourceVersion (the apiserver's 400)"],
    [`${CM}?watch=1&continue=tgwc.abc`, 'a watch with a continue token'],
    [
      '/api/v1/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true',
      "a watch-list across namespaces without resourceVersion: a consistent read of every tenant's objects",
    ],
    [`${CM}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=100`, "a watch-list without bookmarks (the apiserver's 422)"],
    [`${CM}?watch=1&sendInitialEvents=true&resourceVersion=100&allowWatchBookmarks=true`, "a watch-list without NotOlderThan (the apiserver's 422)"],
    [`${CM}?watch=1&sendInitialEvents=false&resourceVersion=0`, "sendInitialEvents=false without NotOlderThan (the apiserver's 422)"],
    [`${CM}?watch=1&resourceVersionMatch=NotOlderThan&resourceVersion=0`, "resourceVersionMatch on a plain watch (the apiserver's 400)"],
    [`${CM}?resourceVersion=0&sendInitialEvents=true`, 'sendInitialEvents on a list'],
    [`${CM}?watch=1&allowWatchBookmarks=yes`, 'a boolean Go would refuse'],
    [`${CM}?watch=1&resourceVersion=abc`, 'a resourceVersion that is no number'],
    [`${CM}?watch=1&resourceVersion=-1`, 'a negative resourceVersion'],
    [`${CM}?watch=1&resourceVersion=1234567890123456`, "a resourceVersion past the cache's range"],
    [`${CM}?watch=1&timeoutSeconds=1.5`, 'a timeout that is no whole number'],
    [`${CM}?resourceVersion=0&limit=-1`, 'a negative limit'],
    [`${CM}?watch=1&pretty=true`, 'a parameter the cache does not know'],
    [`${CM}?watch=1&labelSelector=kubezoo.io%2Ftenant%3Dzyxwvu`, 'a selector on the tenant label'],
    [`${CM}?watch=1&labelSelector=app%20in%20(`, 'a label selector that does not parse'],
    [`${CM}?watch=1&fieldSelector=data.x%3Dy`, 'a field configmaps do not offer'],
    [`${CM}/a`, 'a get'],
    ['/api/v1/watch/namespaces/default/configmaps/a', 'the legacy watch of one object'],
    ['/api/v1/namespaces/default/pods/p/status', 'a subresource'],
    ['/apis/apps/v1/namespaces/default/controllerrevisions?watch=1', 'a resource the cache does not keep'],
    ['/apis/apps/v1/namespaces/default/deployments?watch=1', 'a resource it keeps only when configured (not here)'],
    ['/api/v1/namespaces/default/secrets?watch=1', 'idem'],
  ];
  for (const [target, why] of upstream) t.equal(planOf(target), null, `${why}: ${target}`);
  for (const accept of [
    'application/json;as=Table;v=v1;g=meta.k8s.io, application/json',
    'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1',
    'application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1',
    'application/yaml',
    'text/plain',
  ]) {
    t.equal(planOf(`${CM}?watch=1`, accept), null, `Accept ${accept}`);
    t.equal(planOf(`${CM}?resourceVersion=0`, accept), null, `Accept ${accept} (list)`);
  }
  const notStarted = new WatchCache(
    cachedResourcesOf(['configmaps']),
    {
      request: () => {
        throw new Error('not started');
      },
    } as unknown as UpstreamPool,
    () => {
      throw new Error('no tenant');
    },
  );
  t.equal(planOf(`${CM}?watch=1`, undefined, notStarted), null, 'a resource whose first list is not in yet');
});

t.test('clients that prefer protobuf (client-go controllers) are served from the cache in protobuf; JSON clients in JSON', async (t) => {
  for (const accept of [
    'application/vnd.kubernetes.protobuf',
    'application/vnd.kubernetes.protobuf, application/json',
    'application/vnd.kubernetes.protobuf;stream=watch',
    'application/vnd.kubernetes.protobuf;type=watch, application/json',
  ]) {
    t.equal(planOf(`${CM}?watch=1`, accept)?.encoding, 'protobuf', `watch, Accept ${accept}`);
    t.equal(planOf(`${CM}?resourceVersion=0&limit=2`, accept)?.encoding, 'protobuf', `list, Accept ${accept}`);
    t.equal(planOf('/api/v1/namespaces?watch=1', accept)?.encoding, 'protobuf', `a cluster-scoped kind, Accept ${accept}`);
  }
  for (const accept of [undefined, 'application/json', 'application/json, application/vnd.kubernetes.protobuf', '*/*']) {
    t.equal(planOf(`${CM}?watch=1`, accept)?.encoding, 'json', `Accept ${accept}`);
  }
});

t.test('a list with a resourceVersion and a limit but no resourceVersionMatch is an Exact read for the apiserver', async (t) => {
  // The apiserver answers the state at that resourceVersion (or 410); the cache only keeps its newest state.
  t.equal(planOf(`${CM}?resourceVersion=50&limit=2`), null, 'upstream');
  t.ok(planOf(`${CM}?resourceVersion=50`), 'without a limit it is NotOlderThan: the cache may answer');
  t.ok(planOf(`${CM}?resourceVersion=0&limit=2`), 'resourceVersion=0 with a limit: any state, the cache may answer');
});

t.test('acceptsPlainJson: the client takes plain JSON objects first', async (t) => {
  for (const accept of [
    undefined,
    '',
    'application/json',
    'APPLICATION/JSON',
    'application/json; charset=utf-8',
    '*/*',
    'application/*',
    'application/json, application/vnd.kubernetes.protobuf',
  ]) {
    t.equal(acceptsPlainJson(accept), true, JSON.stringify(accept));
  }
  for (const accept of [
    'application/vnd.kubernetes.protobuf',
    'application/vnd.kubernetes.protobuf, application/json',
    'application/json;as=Table;v=v1;g=meta.k8s.io',
    'application/json;as=Table;v=v1;g=meta.k8s.io, application/json',
    'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io',
    'application/yaml',
    'application/cbor',
    'text/html, application/json',
  ]) {
    t.equal(acceptsPlainJson(accept), false, accept);
  }
});

t.test("a tenant's custom resource asked for protobuf first: JSON, as the apiserver (no protobuf for custom resources) answers", async (t) => {
  const widget = kindOf('example.com', 'widgets', 'Namespaced', 'Widget')!;
  const encodingOf = (accept: string | undefined) => cacheEncodingOf(accept, widget, 'example.com/v1', 'Widget');
  for (const accept of [
    'application/vnd.kubernetes.protobuf, application/json',
    'application/vnd.kubernetes.protobuf,application/json;charset=utf-8',
    'application/vnd.kubernetes.protobuf, */*',
    'application/json',
  ]) {
    t.equal(encodingOf(accept), 'json', `Accept ${accept}`);
  }
  for (const [accept, why] of [
    ['application/vnd.kubernetes.protobuf', "protobuf only: the apiserver's 406, from the upstream"],
    ['application/vnd.kubernetes.protobuf;stream=watch', 'idem'],
    ['application/vnd.kubernetes.protobuf, application/yaml', 'YAML next: the apiserver answers YAML'],
    ['application/vnd.kubernetes.protobuf, application/json;as=Table;v=v1;g=meta.k8s.io', 'a Table next'],
    ['application/vnd.kubernetes.protobuf;q=0.5, application/json;q=0.9', "quality values reorder the apiserver's choice"],
  ]) {
    t.equal(encodingOf(accept), null, `${why}: Accept ${accept}`);
  }
  const stored = kindOf('flowcontrol.apiserver.k8s.io', 'flowschemas')!;
  t.ok(stored.upstreamGroup, 'FlowSchemas are stored as custom resources');
  t.equal(
    cacheEncodingOf('application/vnd.kubernetes.protobuf, application/json', stored, 'flowcontrol.apiserver.k8s.io/v1', 'FlowSchema'),
    null,
    'a built-in kind stored as a custom resource is protobuf to the tenant: not JSON from the cache',
  );
});

// A tenant's own PriorityClasses beside the platform's (rules/priority-classes.ts): `<id>-<name>` upstream, labelled,
// its globalDefault kept in an annotation; a name is the platform's when the tenant may use a platform class of that
// name, its own otherwise; its pods' priorityClassName maps both ways in JSON, in the byte-level list path and in
// protobuf (held lists, their fast path included); another tenant's classes are never seen.
import { Readable } from 'node:stream';
import t from 'tap';
import { kindOf, type KindRow } from '../../lib/convert/kinds.ts';
import { protobufBodyToUpstream } from '../../lib/convert/protobuf/to-upstream.ts';
import { protobufListToTenant } from '../../lib/convert/protobuf/streams.ts';
import { upstreamResourceTarget } from '../../lib/convert/request.ts';
import { parseRequestInfo } from '../../lib/convert/request-info.ts';
import { objectToTenant, objectToUpstream, type ConvertContext } from '../../lib/convert/rules/index.ts';
import { ListRewriter } from '../../lib/stream/tenant-view.ts';
import { tenantViewSpecOf } from '../../lib/stream/view-spec.ts';
import { decodeBody, encodeBody, goModuleCache, loadProtoMessages } from '../helpers/k8s-proto.ts';
import { thrownStatus } from '../helpers/status-error.ts';

type Json = Record<string, any>;

const TENANT = 'abc123';
const OTHER = 'zzz999';
const PLATFORM = new Set(['tg-low', 'tg-hidden', 'system-node-critical', 'system-cluster-critical']);
const ALLOWED = new Set(['tg-low']);
const contextOf = (tenant: string, band = { min: -100, max: 500 }, ownDefault?: string, own: ReadonlySet<string> = new Set()): ConvertContext => ({
  tenant,
  scopeOf: () => undefined,
  kindScope: () => undefined,
  allowsPlatformClass: (resource, name) => resource !== 'priorityclasses' || ALLOWED.has(name),
  defaultPlatformClass: (resource) => (resource === 'priorityclasses' ? ownDefault : undefined),
  // As TenantClasses answers: the platform's when usable, or hidden and not shadowed by a class of the tenant's own.
  priorityClasses: { isPlatformClass: (name) => PLATFORM.has(name) && (ALLOWED.has(name) || !own.has(name)), band: () => band },
});
const ctx = contextOf(TENANT);
const row = (group: string, resource: string) => kindOf(group, resource) as KindRow;
const PRIORITY_CLASSES = row('scheduling.k8s.io', 'priorityclasses');
const PODS = row('', 'pods');
const priorityClass = (name: string, value: number, extra: Json = {}) => ({
  apiVersion: 'scheduling.k8s.io/v1',
  kind: 'PriorityClass',
  metadata: { name },
  value,
  ...extra,
});
const pod = (priorityClassName?: string) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', namespace: 'default' },
  spec: { containers: [{ name: 'c', image: 'x' }], ...(priorityClassName !== undefined && { priorityClassName }) },
});

t.test("a tenant's own class: prefixed and labelled upstream, its globalDefault an annotation; back as it wrote it", async (t) => {
  const upstream = objectToUpstream(priorityClass('mine', 100, { globalDefault: true, description: 'd' }), ctx, PRIORITY_CLASSES) as Json;
  t.equal(upstream.metadata.name, `${TENANT}-mine`);
  t.equal(upstream.metadata.labels['kubezoo.io/tenant'], TENANT);
  t.equal(upstream.metadata.annotations['tenantgate.kubezoo.io/global-default'], 'true');
  t.notOk('globalDefault' in upstream, "never the upstream's global default");
  const view = objectToTenant(structuredClone(upstream), ctx, PRIORITY_CLASSES) as Json;
  t.same(view, priorityClass('mine', 100, { globalDefault: true, description: 'd' }), 'the tenant reads back what it wrote');
  t.equal(objectToTenant(structuredClone(upstream), contextOf(OTHER), PRIORITY_CLASSES), null, 'another tenant never sees it');
  const generated = objectToUpstream({ ...priorityClass('', 1), metadata: { generateName: 'gen-' } }, ctx, PRIORITY_CLASSES) as Json;
  t.equal(generated.metadata.generateName, `${TENANT}-gen-`);
});

t.test("the platform's classes: read as they are when allowed, hidden otherwise, never written", async (t) => {
  t.same(objectToTenant(priorityClass('tg-low', 5), ctx, PRIORITY_CLASSES), priorityClass('tg-low', 5));
  t.equal(objectToTenant(priorityClass('tg-hidden', 5), ctx, PRIORITY_CLASSES), null);
  t.equal(thrownStatus(() => objectToUpstream(priorityClass('tg-low', 1), ctx, PRIORITY_CLASSES)).code, 409, 'a name the platform uses is taken');
  const hiddenName = objectToUpstream(priorityClass('tg-hidden', 1), ctx, PRIORITY_CLASSES) as Json;
  t.equal(hiddenName.metadata.name, `${TENANT}-tg-hidden`, 'a platform class it cannot see is a free name to it');
  const withoutClasses: ConvertContext = { tenant: TENANT, scopeOf: () => undefined, kindScope: () => undefined };
  t.equal(
    thrownStatus(() => objectToUpstream(priorityClass('mine', 1), withoutClasses, PRIORITY_CLASSES)).code,
    403,
    'without the class watch, no classes of its own',
  );
  const info = (method: string, path: string) => parseRequestInfo(method, path, new URLSearchParams());
  t.equal(
    thrownStatus(() =>
      upstreamResourceTarget(info('DELETE', '/apis/scheduling.k8s.io/v1/priorityclasses/tg-low'), PRIORITY_CLASSES, new URLSearchParams(), TENANT, ctx),
    ).code,
    403,
  );
  t.equal(
    thrownStatus(() =>
      upstreamResourceTarget(info('DELETE', '/apis/scheduling.k8s.io/v1/priorityclasses/tg-hidden'), PRIORITY_CLASSES, new URLSearchParams(), TENANT, ctx),
    ).code,
    404,
    'a hidden one is not found',
  );
  t.equal(
    upstreamResourceTarget(info('DELETE', '/apis/scheduling.k8s.io/v1/priorityclasses/mine'), PRIORITY_CLASSES, new URLSearchParams(), TENANT, ctx),
    `/apis/scheduling.k8s.io/v1/priorityclasses/${TENANT}-mine`,
  );
  t.equal(
    upstreamResourceTarget(info('GET', '/apis/scheduling.k8s.io/v1/priorityclasses/tg-low'), PRIORITY_CLASSES, new URLSearchParams(), TENANT, ctx),
    '/apis/scheduling.k8s.io/v1/priorityclasses/tg-low',
  );
  t.equal(
    decodeURIComponent(
      upstreamResourceTarget(
        info('GET', '/apis/scheduling.k8s.io/v1/priorityclasses'),
        PRIORITY_CLASSES,
        new URLSearchParams({ fieldSelector: 'metadata.name=mine' }),
        TENANT,
        ctx,
      ),
    ),
    `/apis/scheduling.k8s.io/v1/priorityclasses?fieldSelector=metadata.name=${TENANT}-mine`,
  );
  t.match(
    decodeURIComponent(
      upstreamResourceTarget(info('DELETE', '/apis/scheduling.k8s.io/v1/priorityclasses'), PRIORITY_CLASSES, new URLSearchParams(), TENANT, ctx),
    ),
    `labelSelector=kubezoo.io/tenant=${TENANT}`,
    'a deletecollection reaches only its own',
  );
});

t.test("its band bounds its own classes' values", async (t) => {
  t.equal(thrownStatus(() => objectToUpstream(priorityClass('big', 501), ctx, PRIORITY_CLASSES)).code, 403);
  t.equal(thrownStatus(() => objectToUpstream(priorityClass('low', -101), ctx, PRIORITY_CLASSES)).code, 403);
  t.equal((objectToUpstream(priorityClass('edge', 500), ctx, PRIORITY_CLASSES) as Json).value, 500, 'both ends included');
});

t.test('a patch turning globalDefault off removes the annotation; an update carries it whole', async (t) => {
  const patch = objectToUpstream({ globalDefault: false }, ctx, PRIORITY_CLASSES, 'patch') as Json;
  t.same(patch.metadata.annotations, { 'tenantgate.kubezoo.io/global-default': null });
  const update = objectToUpstream(priorityClass('mine', 1, { globalDefault: false }), ctx, PRIORITY_CLASSES, 'update') as Json;
  t.notOk(update.metadata.annotations, 'no annotation on a whole object');
});

t.test("a pod's priorityClassName: its own class prefixed, the platform's as it is; back without the prefix", async (t) => {
  t.equal((objectToUpstream(pod('mine'), ctx, PODS) as Json).spec.priorityClassName, `${TENANT}-mine`);
  t.equal((objectToUpstream(pod('tg-low'), ctx, PODS) as Json).spec.priorityClassName, 'tg-low');
  t.equal(thrownStatus(() => objectToUpstream(pod('system-node-critical'), ctx, PODS)).code, 403, 'a critical class is refused');
  t.match(
    thrownStatus(() => objectToUpstream(pod('tg-hidden'), ctx, PODS)).message,
    /not one of the priority classes this tenant may use/,
    'so is a platform class it may not use',
  );
  const shadowing = contextOf(TENANT, undefined, undefined, new Set(['tg-hidden']));
  t.equal(
    (objectToUpstream(pod('tg-hidden'), shadowing, PODS) as Json).spec.priorityClassName,
    `${TENANT}-tg-hidden`,
    'unless it has a class of its own of that name',
  );
  const template = objectToUpstream(
    { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' }, spec: { template: { spec: pod('tg-hidden').spec } } },
    ctx,
    row('apps', 'deployments'),
  ) as Json;
  t.equal(template.spec.template.spec.priorityClassName, 'tg-hidden', "a template naming it keeps the platform's name: the upstream refuses its pods");
  const deployment = objectToUpstream(
    { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' }, spec: { template: { spec: pod('mine').spec } } },
    ctx,
    row('apps', 'deployments'),
  ) as Json;
  t.equal(deployment.spec.template.spec.priorityClassName, `${TENANT}-mine`, "a template's too");
  const withDefault = objectToUpstream(pod(), contextOf(TENANT, undefined, 'mine'), PODS) as Json;
  t.equal(withDefault.spec.priorityClassName, `${TENANT}-mine`, 'its own default, prefixed');
  const upstream = { ...pod(`${TENANT}-mine`), metadata: { name: 'p', namespace: `${TENANT}-default`, labels: { 'kubezoo.io/tenant': TENANT } } };
  t.equal((objectToTenant(structuredClone(upstream), ctx, PODS) as Json).spec.priorityClassName, 'mine');
});

t.test('a pod list through the byte-level rewriter names its own classes as the tenant does', async (t) => {
  const item = (name: string, priorityClassName: string) => ({
    metadata: { name, namespace: `${TENANT}-default`, labels: { 'kubezoo.io/tenant': TENANT } },
    spec: { priorityClassName, containers: [] },
  });
  const list = { kind: 'PodList', apiVersion: 'v1', metadata: {}, items: [item('a', `${TENANT}-mine`), item('b', 'tg-low')] };
  const bytes = Buffer.from(JSON.stringify(list));
  for (const [what, chunks] of [
    ['whole', [bytes]],
    ['byte by byte', [...bytes].map((byte) => Buffer.from([byte]))],
  ] as const) {
    const out: Buffer[] = [];
    for await (const chunk of Readable.from(chunks).pipe(new ListRewriter(tenantViewSpecOf(PODS, ctx)))) out.push(chunk as Buffer);
    t.same(
      JSON.parse(Buffer.concat(out).toString()).items.map((i: Json) => i.spec.priorityClassName),
      ['mine', 'tg-low'],
      what,
    );
  }
});

const moduleCache = goModuleCache();
t.test(
  'in protobuf: a pod body upstream, a pod list back (fast path and careful path)',
  { skip: moduleCache === undefined ? 'the Go module cache with k8s.io/api is not on this machine: build the rig first (npm run rig)' : false },
  async (t) => {
    const messages = loadProtoMessages(moduleCache!);
    const options = { verb: 'create', subresource: '', version: 'v1', allowsPlatformClass: ctx.allowsPlatformClass, priorityClasses: ctx.priorityClasses };
    const up = (name: string) =>
      decodeBody(
        messages,
        'k8s.io.api.core.v1.Pod',
        protobufBodyToUpstream(encodeBody(messages, 'k8s.io.api.core.v1.Pod', pod(name)), PODS, TENANT, options),
      ) as Json;
    t.equal(up('mine').spec.priorityClassName, `${TENANT}-mine`);
    t.equal(up('tg-low').spec.priorityClassName, 'tg-low');
    t.equal(thrownStatus(() => up('system-cluster-critical')).code, 403);
    const item = (name: string, priorityClassName: string, affinity = false) => ({
      metadata: { name, namespace: `${TENANT}-default`, labels: { 'kubezoo.io/tenant': TENANT } },
      spec: {
        priorityClassName,
        containers: [{ name: 'c', image: 'x' }],
        ...(affinity && {
          affinity: { podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: 'k', namespaces: [`${TENANT}-default`] }] } },
        }),
      },
    });
    const body = encodeBody(messages, 'k8s.io.api.core.v1.PodList', {
      apiVersion: 'v1',
      kind: 'PodList',
      metadata: { resourceVersion: '1' },
      items: [item('a', `${TENANT}-mine`), item('b', 'tg-low'), item('c', `${TENANT}-mine`, true), item('d', `${OTHER}-theirs`)],
    });
    const view = decodeBody(messages, 'k8s.io.api.core.v1.PodList', protobufListToTenant(body, PODS, ctx, 'v1')) as Json;
    t.same(
      view.items.map((i: Json) => i.spec.priorityClassName),
      ['mine', 'tg-low', 'mine', `${OTHER}-theirs`],
    );
  },
);

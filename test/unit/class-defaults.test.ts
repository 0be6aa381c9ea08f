// A tenant's default classes (Tenant spec.<kind>Classes.default) fill what its objects leave unset, in JSON and
// protobuf alike: pods and every template of pods, claims and claim templates, Ingresses; never a class it named,
// never a claim's explicit "" (no class), never an Ingress classed by the older annotation, never a patch. Its views
// of the classes show its default as the default.
import t from 'tap';
import { kindOf, type KindRow } from '../../lib/convert/kinds.ts';
import { protobufBodyToUpstream } from '../../lib/convert/protobuf/to-upstream.ts';
import { objectToTenant, objectToUpstream, type ConvertContext } from '../../lib/convert/rules/index.ts';
import { tableToTenant } from '../../lib/convert/table.ts';
import { encodeBody, decodeBody, goModuleCache, loadProtoMessages } from '../helpers/k8s-proto.ts';

type Json = Record<string, any>;

const TENANT = 'abc123';
const DEFAULTS: Record<string, string> = { priorityclasses: 'tenant-low', runtimeclasses: 'gvisor', storageclasses: 'gold', ingressclasses: 'internal' };
const ctx: ConvertContext = { tenant: TENANT, scopeOf: () => undefined, kindScope: () => undefined, defaultPlatformClass: (resource) => DEFAULTS[resource] };
const row = (group: string, resource: string) => kindOf(group, resource) as KindRow;

const container = { name: 'main', image: 'nginx' };
const podSpec = (extra: Json = {}) => ({ containers: [container], ...extra });
const ephemeral = (storageClassName?: string | null) => ({
  name: 'scratch',
  ephemeral: {
    volumeClaimTemplate: {
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, ...(storageClassName !== undefined && { storageClassName }) },
    },
  },
});
const claimSpec = (extra: Json = {}) => ({ accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } }, ...extra });

t.test("a pod naming no class gets the tenant's defaults; a class it names stays", async (t) => {
  const pod = objectToUpstream(
    { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'default' }, spec: podSpec({ volumes: [ephemeral()] }) },
    ctx,
    row('', 'pods'),
  ) as Json;
  t.equal(pod.spec.priorityClassName, 'tenant-low');
  t.equal(pod.spec.runtimeClassName, 'gvisor');
  t.equal(pod.spec.volumes[0].ephemeral.volumeClaimTemplate.spec.storageClassName, 'gold', "its ephemeral volume's claim too");
  const named = objectToUpstream(
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'p', namespace: 'default' },
      spec: podSpec({ priorityClassName: 'high', runtimeClassName: 'runc', volumes: [ephemeral('')] }),
    },
    ctx,
    row('', 'pods'),
  ) as Json;
  t.equal(named.spec.priorityClassName, 'high');
  t.equal(named.spec.runtimeClassName, 'runc');
  t.equal(named.spec.volumes[0].ephemeral.volumeClaimTemplate.spec.storageClassName, '', 'an explicit "" (no class) stays');
  const empty = objectToUpstream(
    { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: podSpec({ priorityClassName: '', runtimeClassName: null }) },
    ctx,
    row('', 'pods'),
  ) as Json;
  t.equal(empty.spec.priorityClassName, 'tenant-low', 'priorityClassName "" is unset, as the Priority plugin reads it');
  t.equal(empty.spec.runtimeClassName, 'gvisor', 'null is unset');
});

t.test('every kind that templates pods or claims gets them in its templates', async (t) => {
  const template = { metadata: { labels: { app: 'a' } }, spec: podSpec() };
  const deployment = objectToUpstream(
    { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' }, spec: { template } },
    ctx,
    row('apps', 'deployments'),
  ) as Json;
  t.equal(deployment.spec.template.spec.priorityClassName, 'tenant-low', 'Deployment');
  const cronJob = objectToUpstream(
    {
      apiVersion: 'batch/v1',
      kind: 'CronJob',
      metadata: { name: 'c' },
      spec: { schedule: '* * * * *', jobTemplate: { spec: { template: structuredClone(template) } } },
    },
    ctx,
    row('batch', 'cronjobs'),
  ) as Json;
  t.equal(cronJob.spec.jobTemplate.spec.template.spec.runtimeClassName, 'gvisor', 'CronJob');
  const statefulSet = objectToUpstream(
    {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: { name: 's' },
      spec: {
        template: structuredClone(template),
        volumeClaimTemplates: [
          { metadata: { name: 'data' }, spec: claimSpec() },
          { metadata: { name: 'logs' }, spec: claimSpec({ storageClassName: 'silver' }) },
        ],
      },
    },
    ctx,
    row('apps', 'statefulsets'),
  ) as Json;
  t.equal(statefulSet.spec.template.spec.priorityClassName, 'tenant-low', 'StatefulSet: its pods');
  t.same(
    statefulSet.spec.volumeClaimTemplates.map((claim: Json) => claim.spec.storageClassName),
    ['gold', 'silver'],
    'and its claim templates (a class named stays)',
  );
  const podTemplate = objectToUpstream(
    { apiVersion: 'v1', kind: 'PodTemplate', metadata: { name: 'pt' }, template: structuredClone(template) },
    ctx,
    row('', 'podtemplates'),
  ) as Json;
  t.equal(podTemplate.template.spec.priorityClassName, 'tenant-low', 'PodTemplate');
  const claim = objectToUpstream(
    { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'c' }, spec: claimSpec() },
    ctx,
    row('', 'persistentvolumeclaims'),
  ) as Json;
  t.equal(claim.spec.storageClassName, 'gold', 'PersistentVolumeClaim');
});

t.test('an Ingress gets the default class unless the older annotation names one', async (t) => {
  const ingress = (annotations?: Json) => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name: 'i', ...(annotations && { annotations }) },
    spec: { defaultBackend: { service: { name: 's', port: { number: 80 } } } },
  });
  t.equal((objectToUpstream(ingress(), ctx, row('networking.k8s.io', 'ingresses')) as Json).spec.ingressClassName, 'internal');
  t.equal(
    (objectToUpstream(ingress({ 'kubernetes.io/ingress.class': 'nginx' }), ctx, row('networking.k8s.io', 'ingresses')) as Json).spec.ingressClassName,
    undefined,
  );
});

t.test('a patch is never defaulted, nor is anything without a default', async (t) => {
  const patch = objectToUpstream({ spec: { template: { spec: { containers: [container] } } } }, ctx, row('apps', 'deployments'), 'patch') as Json;
  t.equal(patch.spec.template.spec.priorityClassName, undefined, "a field the patch leaves out is not the tenant's to default");
  const none: ConvertContext = { ...ctx, defaultPlatformClass: () => undefined };
  const pod = objectToUpstream({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: podSpec() }, none, row('', 'pods')) as Json;
  t.notOk('priorityClassName' in pod.spec || 'runtimeClassName' in pod.spec, "no default: the upstream's own applies");
});

const moduleCache = goModuleCache();
t.test(
  'in protobuf too',
  { skip: moduleCache === undefined ? 'the Go module cache with k8s.io/api is not on this machine: build the rig first (npm run rig)' : false },
  async (t) => {
    const messages = loadProtoMessages(moduleCache!);
    const options = { verb: 'create', subresource: '', version: 'v1', defaultPlatformClass: ctx.defaultPlatformClass };
    const convert = (type: string, rowOf: KindRow, object: Json, extra: Json = {}) =>
      decodeBody(messages, type, protobufBodyToUpstream(encodeBody(messages, type, object), rowOf, TENANT, { ...options, ...extra })) as Json;

    const pod = convert('k8s.io.api.core.v1.Pod', row('', 'pods'), {
      metadata: { name: 'p', namespace: 'default' },
      spec: podSpec({ volumes: [ephemeral()] }),
    });
    t.equal(pod.spec.priorityClassName, 'tenant-low');
    t.equal(pod.spec.runtimeClassName, 'gvisor');
    t.equal(pod.spec.volumes[0].ephemeral.volumeClaimTemplate.spec.storageClassName, 'gold');
    const named = convert('k8s.io.api.core.v1.Pod', row('', 'pods'), {
      metadata: { name: 'p' },
      spec: podSpec({ priorityClassName: 'high', volumes: [ephemeral('')] }),
    });
    t.equal(named.spec.priorityClassName, 'high', 'a class named stays');
    t.equal(named.spec.volumes[0].ephemeral.volumeClaimTemplate.spec.storageClassName ?? '', '', 'an explicit "" stays');

    const deployment = convert(
      'k8s.io.api.apps.v1.Deployment',
      row('apps', 'deployments'),
      { metadata: { name: 'd' }, spec: { template: { metadata: { labels: { app: 'a' } }, spec: podSpec() } } },
      { version: 'v1' },
    );
    t.equal(deployment.spec.template.spec.priorityClassName, 'tenant-low', "a Deployment's template");
    const statefulSet = convert('k8s.io.api.apps.v1.StatefulSet', row('apps', 'statefulsets'), {
      metadata: { name: 's' },
      spec: { template: { spec: podSpec() }, volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: claimSpec() }] },
    });
    t.equal(statefulSet.spec.volumeClaimTemplates[0].spec.storageClassName, 'gold', "a StatefulSet's claim templates");
    const claim = convert('k8s.io.api.core.v1.PersistentVolumeClaim', row('', 'persistentvolumeclaims'), { metadata: { name: 'c' }, spec: claimSpec() });
    t.equal(claim.spec.storageClassName, 'gold', 'a PVC');
    const ingress = (annotations?: Json) => ({
      metadata: { name: 'i', ...(annotations && { annotations }) },
      spec: { defaultBackend: { service: { name: 's', port: { number: 80 } } } },
    });
    t.equal(convert('k8s.io.api.networking.v1.Ingress', row('networking.k8s.io', 'ingresses'), ingress()).spec.ingressClassName, 'internal', 'an Ingress');
    t.equal(
      convert('k8s.io.api.networking.v1.Ingress', row('networking.k8s.io', 'ingresses'), ingress({ 'kubernetes.io/ingress.class': 'nginx' })).spec
        .ingressClassName,
      undefined,
      'not one classed by the annotation',
    );
    const status = convert('k8s.io.api.core.v1.Pod', row('', 'pods'), { metadata: { name: 'p' }, spec: podSpec() }, { verb: 'update', subresource: 'status' });
    t.equal(status.spec.priorityClassName ?? '', '', 'a status write is not defaulted');
  },
);

t.test("the tenant's view marks its default class as the default, and no other (objects and Tables)", async (t) => {
  const priorityRow = row('scheduling.k8s.io', 'priorityclasses');
  const storageRow = row('storage.k8s.io', 'storageclasses');
  const view = (object: Json, kind: KindRow, context: ConvertContext = ctx) => objectToTenant(structuredClone(object), context, kind) as Json;
  const platformDefault = { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: 'platform-default' }, value: 10, globalDefault: true };
  const tenantLow = { apiVersion: 'scheduling.k8s.io/v1', kind: 'PriorityClass', metadata: { name: 'tenant-low' }, value: 5 };
  t.equal(view(platformDefault, priorityRow).globalDefault, undefined, "the platform's globalDefault is not the tenant's");
  t.equal(view(tenantLow, priorityRow).globalDefault, true, 'its own default is');
  const noDefaults: ConvertContext = { ...ctx, defaultPlatformClass: () => undefined };
  t.equal(view(platformDefault, priorityRow, noDefaults).globalDefault, true, "a tenant without a default sees the platform's");
  const annotated = (name: string, isDefault: boolean) => ({
    apiVersion: 'storage.k8s.io/v1',
    kind: 'StorageClass',
    metadata: { name, ...(isDefault && { annotations: { 'storageclass.kubernetes.io/is-default-class': 'true' } }) },
    provisioner: 'example.com/none',
  });
  t.same(view(annotated('standard', true), storageRow).metadata.annotations, undefined, "the platform's default StorageClass is not marked");
  t.same(view(annotated('gold', false), storageRow).metadata.annotations, { 'storageclass.kubernetes.io/is-default-class': 'true' }, "the tenant's is");

  const table = (rows: Json[]) => ({
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    columnDefinitions: [{ name: 'Name' }, { name: 'Provisioner' }],
    rows,
  });
  const storageTable = tableToTenant(
    table([
      { cells: ['standard (default)', 'example.com/none'], object: annotated('standard', true) },
      { cells: ['gold', 'example.com/none'], object: annotated('gold', false) },
    ]) as any,
    ctx,
    storageRow,
  ) as Json;
  t.same(
    storageTable.rows.map((r: Json) => r.cells[0]),
    ['standard', 'gold (default)'],
    'kubectl get storageclass: "(default)" after the tenant\'s',
  );
  const priorityTable = tableToTenant(
    {
      kind: 'Table',
      apiVersion: 'meta.k8s.io/v1',
      columnDefinitions: [{ name: 'Name' }, { name: 'Value' }, { name: 'Global-Default' }],
      rows: [
        { cells: ['platform-default', 10, true], object: platformDefault },
        { cells: ['tenant-low', 5, false], object: tenantLow },
      ],
    } as any,
    ctx,
    priorityRow,
  ) as Json;
  t.same(
    priorityTable.rows.map((r: Json) => r.cells[2]),
    [false, true],
    'kubectl get priorityclass: the Global-Default column',
  );
});

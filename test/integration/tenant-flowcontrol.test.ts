// FlowSchemas and PriorityLevelConfigurations through a tenant (issue 14 item 4): every API operation works as on a
// real cluster with kubectl, client-node and protobuf bodies (what client-go's typed clients send), while upstream they
// are tenantgate's custom resources: no real FlowSchema or priority level ever appears, and another tenant with the
// same names sees and touches nothing.
import { TENANT_CLUSTER_SCOPE_GROUP } from '../../lib/auth/impersonation.ts';
import * as k8s from '@kubernetes/client-node';
import type { ClientHttp2Session } from 'node:http2';
import t from 'tap';
import { connectH2, credentialsOf, h2Request } from '../helpers/http.ts';
import { encodeBody, goModuleCache, loadProtoMessages, type ProtoMessages } from '../helpers/k8s-proto.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';
import { eventually, succeeded } from '../helpers/kit.ts';

type Json = Record<string, any>;

const GROUP = 'flowcontrol.apiserver.k8s.io';
const STORED = 'flowcontrol.tenantgate.kubezoo.io';
const PROTOBUF = 'application/vnd.kubernetes.protobuf';
/** What client-go's typed clients ask for. */
const TYPED_ACCEPT = `${PROTOBUF}, application/json`;
const FS_PATH = `/apis/${GROUP}/v1/flowschemas`;
const PL_PATH = `/apis/${GROUP}/v1/prioritylevelconfigurations`;

let stack: Stack;
let alpha: TestTenant;
let bravo: TestTenant;
let alphaSession: ClientHttp2Session;
let bravoSession: ClientHttp2Session;
let messages: ProtoMessages;
/** The upstream's own FlowSchemas and priority levels (name → uid) before any tenant request. */
let realBefore: Map<string, string>;

async function realFlowControlObjects(): Promise<Map<string, string>> {
  const objects = new Map<string, string>();
  for (const resource of ['flowschemas', 'prioritylevelconfigurations']) {
    const list = JSON.parse(await succeeded(stack.kubectlDirect(['get', '--raw', `/apis/${GROUP}/v1/${resource}`]), `upstream ${resource}`));
    for (const item of list.items) objects.set(`${resource}/${item.metadata.name}`, item.metadata.uid);
  }
  return objects;
}

async function storedUpstream(resource: string): Promise<Json[]> {
  return JSON.parse(await succeeded(stack.kubectlDirect(['get', '--raw', `/apis/${STORED}/v1/${resource}`]), `upstream ${resource}.${STORED}`)).items;
}

const flowSchema = (name: string, precedence: number, user = 'bob') => ({
  apiVersion: `${GROUP}/v1`,
  kind: 'FlowSchema',
  metadata: { name, labels: { team: 'a' } },
  spec: {
    priorityLevelConfiguration: { name: 'slow' },
    matchingPrecedence: precedence,
    distinguisherMethod: { type: 'ByUser' },
    rules: [{ subjects: [{ kind: 'User', user: { name: user } }], nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }] }],
  },
});
const priorityLevel = (name: string, shares: number) => ({
  apiVersion: `${GROUP}/v1`,
  kind: 'PriorityLevelConfiguration',
  metadata: { name, labels: { team: 'a' } },
  spec: { type: 'Limited', limited: { nominalConcurrencyShares: shares, lendablePercent: 0, limitResponse: { type: 'Reject' } } },
});

t.before(async () => {
  const moduleCache = goModuleCache();
  if (moduleCache === undefined) throw new Error('the Go module cache of the rig is missing: npm run rig');
  messages = loadProtoMessages(moduleCache);
  stack = await startStack({ controllers: false });
  realBefore = await realFlowControlObjects();
  alpha = await createTestTenant(stack, 'fcalfa');
  bravo = await createTestTenant(stack, 'fcbrav');
  alphaSession = connectH2(credentialsOf(alpha.kubeconfig));
  bravoSession = connectH2(credentialsOf(bravo.kubeconfig));
});
t.teardown(async () => {
  alphaSession?.close();
  bravoSession?.close();
  await stack?.stop();
});

t.test("discovery shows flowcontrol.apiserver.k8s.io with both resources and their status, never tenantgate's group", async (t) => {
  const resources = JSON.parse(await succeeded(alpha.kubectl(['get', '--raw', `/apis/${GROUP}/v1`]), 'APIResourceList'));
  t.same(resources.resources.map((r: Json) => r.name).sort(), [
    'flowschemas',
    'flowschemas/status',
    'prioritylevelconfigurations',
    'prioritylevelconfigurations/status',
  ]);
  t.same(resources.resources.find((r: Json) => r.name === 'flowschemas').verbs.sort(), [
    'create',
    'delete',
    'deletecollection',
    'get',
    'list',
    'patch',
    'update',
    'watch',
  ]);
  const apiResources = await succeeded(alpha.kubectl(['api-resources', '--api-group', GROUP, '-o', 'name']), 'api-resources');
  t.same(apiResources.trim().split('\n').sort(), [`flowschemas.${GROUP}`, `prioritylevelconfigurations.${GROUP}`]);
  for (const path of ['/apis', '/openapi/v2', '/openapi/v3']) {
    const doc = await succeeded(alpha.kubectl(['get', '--raw', path]), path);
    t.notMatch(doc, STORED, `${path}: no trace of tenantgate's group`);
  }
  t.match(await succeeded(alpha.kubectl(['get', '--raw', '/apis']), '/apis'), GROUP);
  const aggregated = await h2Request(alphaSession, 'GET', '/apis', {
    headers: { accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList' },
  });
  const group = aggregated.json().items.find((item: Json) => item.metadata.name === GROUP);
  t.same(
    group?.versions[0].resources.map((r: Json) => [r.resource, r.subresources?.map((s: Json) => s.subresource)]),
    [
      ['flowschemas', ['status']],
      ['prioritylevelconfigurations', ['status']],
    ],
    'aggregated discovery',
  );
  t.notMatch(aggregated.body, STORED);
  const v3 = await h2Request(alphaSession, 'GET', `/openapi/v3/apis/${GROUP}/v1`, { headers: { accept: 'application/json' } });
  t.equal(v3.status, 200);
  t.ok(v3.json().components.schemas[`io.k8s.api.flowcontrol.v1.FlowSchema`], "the tenant's OpenAPI has the built-in schemas");
  t.equal((await h2Request(alphaSession, 'GET', `/apis/${STORED}/v1/flowschemas`)).status, 404, "tenantgate's group is not found");
  t.equal((await h2Request(alphaSession, 'GET', `/openapi/v3/apis/${STORED}/v1`)).status, 404);
});

t.test("a tenant is born with the upstream's mandatory configuration (exempt, catch-all), as copies that steer nothing", async (t) => {
  for (const resource of ['flowschemas', 'prioritylevelconfigurations']) {
    for (const name of ['exempt', 'catch-all']) {
      const mine = JSON.parse(await succeeded(alpha.kubectl(['get', resource, name, '-o', 'json']), `${resource}/${name}`));
      const real = JSON.parse(await succeeded(stack.kubectlDirect(['get', '--raw', `/apis/${GROUP}/v1/${resource}/${name}`]), 'upstream'));
      t.equal(mine.apiVersion, `${GROUP}/v1`);
      t.same(mine.spec, real.spec, `${resource}/${name}: the upstream's spec`);
      t.not(mine.metadata.uid, real.metadata.uid, "a copy, not the upstream's object");
    }
  }
  t.match(
    await succeeded(alpha.kubectl(['get', 'flowschemas']), 'get'),
    /\nexempt\s+exempt\s+1\s+/,
    'kubectl get flowschemas lists it as on any cluster (an absent column is blank, not <none>)',
  );
});

t.test('kubectl: apply, get (the built-in columns), strategic and merge patches, status, delete', async (t) => {
  const manifest = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [priorityLevel('slow', 5), flowSchema('bobs', 500)] });
  await succeeded(alpha.kubectl(['apply', '-f', '-'], { input: manifest }), 'apply');
  const table = await succeeded(alpha.kubectl(['get', 'flowschemas']), 'get flowschemas');
  t.match(table, /^NAME\s+PRIORITYLEVEL\s+MATCHINGPRECEDENCE\s+DISTINGUISHERMETHOD\s+AGE/);
  t.match(table, /\nbobs\s+slow\s+500\s+ByUser\s+/);
  t.match(
    await succeeded(alpha.kubectl(['get', 'prioritylevelconfigurations', 'slow']), 'get plc'),
    /NAME\s+TYPE\s+NOMINALCONCURRENCYSHARES[\s\S]*\nslow\s+Limited\s+5\s/,
  );

  await succeeded(alpha.kubectl(['patch', 'flowschema', 'bobs', '-p', '{"spec":{"matchingPrecedence":600}}']), 'strategic patch');
  await succeeded(alpha.kubectl(['patch', 'flowschema', 'bobs', '--type', 'merge', '-p', '{"metadata":{"annotations":{"patched":"yes"}}}']), 'merge patch');
  for (const type of ['First', 'Second']) {
    await succeeded(
      alpha.kubectl([
        'patch',
        'flowschema',
        'bobs',
        '--subresource',
        'status',
        '-p',
        JSON.stringify({ status: { conditions: [{ type, status: 'True', reason: 'Test' }] } }),
      ]),
      `status ${type}`,
    );
  }
  await succeeded(
    alpha.kubectl(['patch', 'flowschema', 'bobs', '--subresource', 'status', '-p', '{"status":{"conditions":[{"type":"First","status":"False"}]}}']),
    'status First again',
  );
  const bobs = JSON.parse(await succeeded(alpha.kubectl(['get', 'flowschema', 'bobs', '-o', 'json']), 'get -o json'));
  t.equal(bobs.apiVersion, `${GROUP}/v1`);
  t.equal(bobs.spec.matchingPrecedence, 600);
  t.equal(bobs.metadata.annotations.patched, 'yes');
  t.same(
    bobs.status.conditions.map((c: Json) => [c.type, c.status]),
    [
      ['First', 'False'],
      ['Second', 'True'],
    ],
    'strategic status patches merge conditions by type, as the apiserver does',
  );
  t.notOk('kubezoo.io/tenant' in bobs.metadata.labels, 'the tenant label is not shown');
  const refused = await alpha.kubectl(['patch', 'flowschema', 'bobs', '-p', '{"spec":{"$retainKeys":["rules"]}}']);
  t.not(refused.code, 0);
  t.match(refused.stderr, /\$retainKeys is not supported/, 'a strategic directive is refused with a reason');

  const upstream = (await storedUpstream('flowschemas')).find((item) => item.metadata.name === 'fcalfa-bobs');
  t.ok(upstream, "upstream: tenantgate's custom resource fcalfa-bobs");
  t.equal(upstream?.metadata.labels['kubezoo.io/tenant'], 'fcalfa');
  t.equal(upstream?.spec.priorityLevelConfiguration.name, 'slow', "references stay in the tenant's words");
  t.notOk((await realFlowControlObjects()).has('flowschemas/fcalfa-bobs'), 'and no real FlowSchema');

  const conflict = await alpha.kubectl(['apply', '--server-side', '--field-manager', 'ssa-test', '-f', '-'], {
    input: JSON.stringify(flowSchema('bobs', 650)),
  });
  t.match(
    conflict.stderr,
    /conflict with "kubectl-patch" using flowcontrol\.apiserver\.k8s\.io\/v1: \.spec\.matchingPrecedence/,
    "server-side apply conflicts as on a real cluster, in the tenant's group",
  );
  await succeeded(
    alpha.kubectl(['apply', '--server-side', '--force-conflicts', '--field-manager', 'ssa-test', '-f', '-'], {
      input: JSON.stringify(flowSchema('bobs', 650)),
    }),
    'server-side apply',
  );
  const applied = JSON.parse(await succeeded(alpha.kubectl(['get', 'flowschema', 'bobs', '-o', 'json', '--show-managed-fields']), 'get after apply'));
  t.equal(applied.spec.matchingPrecedence, 650, 'server-side apply');
  t.ok(
    applied.metadata.managedFields.some((entry: Json) => entry.manager === 'ssa-test' && entry.apiVersion === `${GROUP}/v1`),
    "its field manager, in the tenant's group",
  );

  await succeeded(alpha.kubectl(['delete', 'flowschema', 'bobs']), 'delete');
  t.match(
    (await alpha.kubectl(['get', 'flowschema', 'bobs'])).stderr,
    /flowschemas\.flowcontrol\.apiserver\.k8s\.io "bobs" not found/,
    "not found, in the tenant's group and name",
  );
});

t.test("the real kind validates and defaults a tenant's object (a dry run upstream, as tenantgate), in the tenant's names", async (t) => {
  const invalid = await alpha.kubectl(['create', '-f', '-'], { input: JSON.stringify(flowSchema('too-high', 20000)) });
  t.not(invalid.code, 0, 'refused');
  t.match(
    invalid.stderr,
    /FlowSchema "too-high" is invalid: spec\.matchingPrecedence: Invalid value: 20000: must not be greater than 10000/,
    "with the apiserver's message",
  );
  t.notMatch(invalid.stderr, /tenantgate|fcalfa/, "naming nothing of tenantgate's");
  t.not((await alpha.kubectl(['get', 'flowschema', 'too-high'])).code, 0, 'and not stored');

  const defaults = {
    ...priorityLevel('queued', 3),
    spec: { type: 'Limited', limited: { limitResponse: { type: 'Queue', queuing: {} } } },
  };
  await succeeded(alpha.kubectl(['create', '-f', '-'], { input: JSON.stringify(defaults) }), 'create with defaults to fill');
  const queued = JSON.parse(await succeeded(alpha.kubectl(['get', 'prioritylevelconfiguration', 'queued', '-o', 'json']), 'get'));
  t.same(
    queued.spec.limited,
    { nominalConcurrencyShares: 30, lendablePercent: 0, limitResponse: { type: 'Queue', queuing: { queues: 64, handSize: 8, queueLengthLimit: 50 } } },
    "the real kind's defaults",
  );
  const bare = { ...flowSchema('bare', 1), spec: { priorityLevelConfiguration: { name: 'queued' } } };
  await succeeded(alpha.kubectl(['create', '-f', '-'], { input: JSON.stringify(bare) }), 'create a bare FlowSchema');
  t.equal(
    JSON.parse(await succeeded(alpha.kubectl(['get', 'flowschema', 'bare', '-o', 'json']), 'get')).spec.matchingPrecedence,
    1000,
    'matchingPrecedence defaulted',
  );
  const strict = await h2Request(alphaSession, 'POST', `${FS_PATH}?fieldValidation=Strict`, {
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...flowSchema('strict', 5), spec: { ...flowSchema('strict', 5).spec, unknownField: true } }),
  });
  t.equal(strict.status, 400, 'fieldValidation=Strict reports an unknown field, as the apiserver does');
  t.match(strict.json().message, /unknown field "spec.unknownField"/);
  await succeeded(alpha.kubectl(['delete', 'flowschema', 'bare']), 'cleanup');
  await succeeded(alpha.kubectl(['delete', 'prioritylevelconfiguration', 'queued']), 'cleanup');
});

t.test('protobuf bodies as typed clients send them: create, update, status update, delete; every answer is JSON', async (t) => {
  const send = async (method: string, path: string, message: string, object: Json) => {
    const answer = await h2Request(alphaSession, method, path, {
      headers: { 'content-type': PROTOBUF, accept: TYPED_ACCEPT },
      body: encodeBody(messages, message, object),
    });
    t.match(answer.headers['content-type'], /^application\/json/, `${method} ${path}: the upstream answered JSON, which the client reads`);
    return answer;
  };
  const created = await send('POST', PL_PATH, 'k8s.io.api.flowcontrol.v1.PriorityLevelConfiguration', {
    ...priorityLevel('', 2),
    metadata: { generateName: 'pb-', labels: { via: 'protobuf' } },
  });
  t.equal(created.status, 201, created.body.slice(0, 300));
  const plc = created.json();
  t.match(plc, {
    apiVersion: `${GROUP}/v1`,
    kind: 'PriorityLevelConfiguration',
    metadata: { name: /^pb-/, labels: { via: 'protobuf' } },
    spec: { limited: { nominalConcurrencyShares: 2, lendablePercent: 0 } },
  });
  const name = plc.metadata.name as string;

  const updated = await send('PUT', `${PL_PATH}/${name}`, 'k8s.io.api.flowcontrol.v1.PriorityLevelConfiguration', {
    ...plc,
    metadata: { ...plc.metadata, annotations: { updated: 'true' } },
    spec: { ...plc.spec, limited: { ...plc.spec.limited, nominalConcurrencyShares: 6 } },
  });
  t.equal(updated.status, 200, updated.body.slice(0, 300));
  t.equal(updated.json().spec.limited.nominalConcurrencyShares, 6);
  t.equal(updated.json().metadata.annotations.updated, 'true');

  const current = updated.json();
  const status = await send('PUT', `${PL_PATH}/${name}/status`, 'k8s.io.api.flowcontrol.v1.PriorityLevelConfiguration', {
    ...current,
    status: { conditions: [{ type: 'StatusUpdateFailed', status: 'False', reason: 'E2E', message: 'Set from a test' }] },
  });
  t.equal(status.status, 200, status.body.slice(0, 300));
  t.equal(status.json().status.conditions[0].type, 'StatusUpdateFailed');

  const fs = await send('POST', FS_PATH, 'k8s.io.api.flowcontrol.v1.FlowSchema', flowSchema('pb-fs', 10000, 'example-e2e-non-existent-user'));
  t.equal(fs.status, 201, fs.body.slice(0, 300));
  t.match(fs.json().spec, { matchingPrecedence: 10000, rules: [{ subjects: [{ kind: 'User', user: { name: 'example-e2e-non-existent-user' } }] }] });

  // DeleteOptions as protobuf (client-go's Delete): the custom resource takes them.
  const deleteOptions = encodeBody(messages, 'k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions', {
    apiVersion: 'v1',
    kind: 'DeleteOptions',
    propagationPolicy: 'Background',
  });
  for (const path of [`${PL_PATH}/${name}`, `${FS_PATH}/pb-fs`]) {
    const deleted = await h2Request(alphaSession, 'DELETE', path, { headers: { 'content-type': PROTOBUF, accept: TYPED_ACCEPT }, body: deleteOptions });
    t.equal(deleted.status, 200, `${path}: ${deleted.body.slice(0, 200)}`);
    t.equal((await h2Request(alphaSession, 'GET', path)).status, 404);
  }
  const wrongKind = await h2Request(alphaSession, 'POST', FS_PATH, {
    headers: { 'content-type': PROTOBUF },
    body: encodeBody(messages, 'k8s.io.api.flowcontrol.v1.PriorityLevelConfiguration', priorityLevel('x', 1)),
  });
  t.equal(wrongKind.status, 400, 'a priority level sent to flowschemas');
  t.equal(wrongKind.json().kind, 'Status');
});

t.test('client-node: create, get, list by label, watch from the list, patch, replace, status, delete, deletecollection', async (t) => {
  const kc = new k8s.KubeConfig();
  kc.loadFromFile(alpha.kubeconfig);
  const api = kc.makeApiClient(k8s.FlowcontrolApiserverV1Api);
  const label = 'example-e2e-fs-label=abc';
  const template = { ...flowSchema('', 10000), metadata: { generateName: 'e2e-example-fs-', labels: { 'example-e2e-fs-label': 'abc' } } };
  const made: k8s.V1FlowSchema[] = [];
  for (let i = 0; i < 3; i++) made.push(await api.createFlowSchema({ body: template as k8s.V1FlowSchema }));
  const name = made[2]!.metadata!.name!;
  const read = await api.readFlowSchema({ name });
  t.equal(read.metadata?.uid, made[2]!.metadata?.uid);
  const list = await api.listFlowSchema({ labelSelector: label });
  t.equal(list.items.length, 3);
  t.equal(list.apiVersion, `${GROUP}/v1`, "the list is in the tenant's group");

  const events: { type: string; annotations: Record<string, string> }[] = [];
  const watching = await new k8s.Watch(kc).watch(
    FS_PATH,
    { resourceVersion: list.metadata?.resourceVersion, labelSelector: label },
    (type, object: k8s.V1FlowSchema) => {
      if (object.apiVersion !== `${GROUP}/v1`) events.push({ type: 'WRONG-API-VERSION ' + object.apiVersion, annotations: {} });
      events.push({ type, annotations: object.metadata?.annotations ?? {} });
    },
    () => {},
  );
  const patched = await api.patchFlowSchema(
    { name, body: { metadata: { annotations: { patched: 'true' } }, spec: { matchingPrecedence: 9999 } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );
  t.equal(patched.spec?.matchingPrecedence, 9999);
  t.ok(Number(patched.metadata?.resourceVersion) > Number(made[2]!.metadata?.resourceVersion), 'a larger resourceVersion');
  const current = await api.readFlowSchema({ name });
  current.metadata!.annotations = { ...current.metadata!.annotations, updated: 'true' };
  current.spec!.matchingPrecedence = 9000;
  const replaced = await api.replaceFlowSchema({ name, body: current });
  t.equal(replaced.spec?.matchingPrecedence, 9000);
  const deadline = Date.now() + 10_000;
  while (!events.some((e) => e.annotations.patched === 'true') && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
  watching.abort();
  t.ok(
    events.length >= 1 && events.every((e) => e.type === 'MODIFIED'),
    `only MODIFIED events from the list's resourceVersion: ${events.map((e) => e.type).join(',')}`,
  );
  t.ok(
    events.some((e) => e.annotations.patched === 'true'),
    'the patch was seen',
  );

  const statusPatched = await api.patchFlowSchemaStatus(
    { name, body: { status: { conditions: [{ type: 'PatchStatusFailed', status: 'False', reason: 'e2e' }] } } },
    k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
  );
  t.ok(statusPatched.status?.conditions?.some((c) => c.type === 'PatchStatusFailed'));
  const forStatus = await api.readFlowSchema({ name });
  forStatus.status = {
    conditions: [...(forStatus.status?.conditions ?? []), { type: 'StatusUpdateFailed', status: 'False', reason: 'E2E', message: 'Set from an e2e test' }],
  };
  const statusUpdated = await api.replaceFlowSchemaStatus({ name, body: forStatus });
  t.ok(statusUpdated.status?.conditions?.some((c) => c.type === 'StatusUpdateFailed'));
  const statusRead = await api.readFlowSchemaStatus({ name });
  t.equal(statusRead.metadata?.uid, made[2]!.metadata?.uid);

  await api.deleteFlowSchema({ name });
  await t.rejects(api.readFlowSchema({ name }), { code: 404 });
  t.equal((await api.listFlowSchema({ labelSelector: label })).items.length, 2);
  await api.deleteCollectionFlowSchema({ labelSelector: label });
  t.equal((await api.listFlowSchema({ labelSelector: label })).items.length, 0);
});

t.test("tenant B with the same names sees and touches nothing of A's", async (t) => {
  const manifest = (owner: string) =>
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: [
        { ...priorityLevel('shared', 3), metadata: { name: 'shared', labels: { owner } } },
        { ...flowSchema('shared', 700), metadata: { name: 'shared', labels: { owner } } },
      ],
    });
  await succeeded(alpha.kubectl(['apply', '-f', '-'], { input: manifest('alpha') }), 'alpha apply');
  await succeeded(bravo.kubectl(['apply', '-f', '-'], { input: manifest('bravo') }), 'bravo apply');
  for (const [tenant, owner] of [
    [alpha, 'alpha'],
    [bravo, 'bravo'],
  ] as const) {
    for (const resource of ['flowschemas', 'prioritylevelconfigurations']) {
      const list = JSON.parse(await succeeded(tenant.kubectl(['get', resource, '-l', 'owner', '-o', 'json']), `${owner} list`));
      t.same(
        list.items.map((i: Json) => [i.metadata.name, i.metadata.labels.owner]),
        [['shared', owner]],
        `${owner}'s ${resource}: its own only`,
      );
      t.equal(JSON.parse(await succeeded(tenant.kubectl(['get', resource, 'shared', '-o', 'json']), `${owner} get`)).metadata.labels.owner, owner);
    }
  }
  const other = await h2Request(bravoSession, 'GET', `${FS_PATH}/fcalfa-shared`);
  t.equal(other.status, 404, "B cannot name A's by its upstream name");
  const listed = await h2Request(bravoSession, 'GET', `${FS_PATH}?fieldSelector=metadata.name%3Dfcalfa-shared`);
  t.same(listed.json().items, [], 'nor select it by field');
  const protobufB = await h2Request(bravoSession, 'GET', `${FS_PATH}/shared`, { headers: { accept: TYPED_ACCEPT } });
  t.equal(protobufB.json().metadata.labels.owner, 'bravo', 'asking for protobuf first, B reads its own (as JSON)');

  // B's watch, deletecollection and delete reach nothing of A's.
  const watch = h2Request(bravoSession, 'GET', `${FS_PATH}?watch=true&timeoutSeconds=2`);
  await succeeded(alpha.kubectl(['annotate', 'flowschema', 'shared', 'seen=by-alpha']), 'alpha annotates');
  t.notMatch((await watch).body, /alpha|fcalfa/, "B's watch carries no event of A's");
  await succeeded(bravo.kubectl(['delete', 'flowschemas', '--all']), 'bravo deletes all its flowschemas');
  await succeeded(bravo.kubectl(['delete', 'prioritylevelconfiguration', 'shared']), 'bravo deletes its priority level');
  for (const resource of ['flowschemas', 'prioritylevelconfigurations']) {
    t.equal(
      JSON.parse(await succeeded(alpha.kubectl(['get', resource, 'shared', '-o', 'json']), 'alpha still has it')).metadata.labels.owner,
      'alpha',
      `A's ${resource} stay`,
    );
  }
  const upstreamNames = (await storedUpstream('flowschemas')).map((item) => item.metadata.name);
  t.ok(upstreamNames.includes('fcalfa-shared') && !upstreamNames.includes('fcbrav-shared'), "upstream: A's custom resource stays, B's is gone");
});

t.test('the second wall: upstream, a tenant identity writes stored kinds only under its prefix, and never the real kinds', async (t) => {
  // Straight at the upstream, as tenantgate impersonates a tenant's admin (raw requests: upstream discovery is not a
  // tenant identity's to read, so kubectl would stop before sending anything).
  const upstream = connectH2(credentialsOf(stack.upstreamKubeconfig));
  t.teardown(() => upstream.close());
  const asTenantIdentity = (id: string, method: string, path: string, body?: Json) =>
    h2Request(upstream, method, path, {
      headers: {
        'impersonate-user': `${id}-admin`,
        // (At the cluster scope a tenant admin carries tenantgate's group too: its rights there come from it.)
        'impersonate-group': [`${id}:system:authenticated`, TENANT_CLUSTER_SCOPE_GROUP],
        'impersonate-extra-tenant': id,
        'content-type': 'application/json',
        accept: 'application/json',
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  const planted = await asTenantIdentity('fcbrav', 'POST', `/apis/${STORED}/v1/flowschemas`, {
    ...flowSchema('fcalfa-planted', 1),
    apiVersion: `${STORED}/v1`,
    metadata: { name: 'fcalfa-planted', labels: { 'kubezoo.io/tenant': 'fcalfa' } },
  });
  t.equal(planted.status, 403, "B's identity cannot create a stored FlowSchema in A's prefix");
  t.match(planted.json().message, /tenantgate: tenant fcbrav may write only in its own namespaces and names/);
  const deleting = await asTenantIdentity('fcbrav', 'DELETE', `/apis/${STORED}/v1/flowschemas/fcalfa-shared`);
  t.equal(deleting.status, 403, "nor delete A's");
  const own = await asTenantIdentity('fcbrav', 'POST', `/apis/${STORED}/v1/prioritylevelconfigurations?dryRun=All`, {
    ...priorityLevel('fcbrav-own', 1),
    apiVersion: `${STORED}/v1`,
  });
  t.equal(own.status, 201, `in its own prefix it may (the policy is no blanket refusal): ${own.body.slice(0, 200)}`);
  const real = await asTenantIdentity('fcalfa', 'POST', `/apis/${GROUP}/v1/flowschemas`, flowSchema('fcalfa-real', 1));
  t.equal(real.status, 403, "A's identity cannot create a real FlowSchema, even in its prefix");
  t.match(real.json().message, /cannot create resource "flowschemas" in API group "flowcontrol.apiserver.k8s.io"/);
});

t.test("the upstream's real FlowSchemas and priority levels are untouched, and no new one ever appeared", async (t) => {
  const after = await realFlowControlObjects();
  t.same([...after.keys()].sort(), [...realBefore.keys()].sort(), 'the same objects');
  for (const [name, uid] of realBefore) t.equal(after.get(name), uid, `${name}: the same object`);
  t.ok(realBefore.has('flowschemas/exempt') && realBefore.has('prioritylevelconfigurations/catch-all'), 'the mandatory configuration is there to compare with');
  // Two groups serve `flowschemas` upstream now: kubectl picks the built-in one, as administrators expect.
  const adminView = await succeeded(stack.kubectlDirect(['get', 'flowschemas', '-o', 'name']), 'kubectl get flowschemas upstream');
  t.match(adminView, /^flowschema\.flowcontrol\.apiserver\.k8s\.io\/exempt$/m);
  t.notMatch(adminView, /fcalfa|tenantgate/, "an administrator's kubectl get flowschemas shows the real ones only");
});

t.test("deleting a tenant removes its FlowSchemas and priority levels upstream, and nobody else's", async (t) => {
  const charlie = await createTestTenant(stack, 'fcchar');
  await succeeded(
    charlie.kubectl(['apply', '-f', '-'], {
      input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [priorityLevel('shared', 1), flowSchema('shared', 800)] }),
    }),
    'charlie apply',
  );
  const names = async () =>
    [...(await storedUpstream('flowschemas')), ...(await storedUpstream('prioritylevelconfigurations'))].map((item) => item.metadata.name as string);
  t.ok((await names()).includes('fcchar-shared'));
  await succeeded(stack.kubectl(['delete', 'tenant', 'fcchar', '--wait=false']), 'delete tenant');
  await eventually("fcchar's stored objects gone", async () => !(await names()).some((name) => name.startsWith('fcchar-')));
  t.same((await names()).filter((name) => name === 'fcalfa-shared').length, 2, "alpha's FlowSchema and priority level of the same name stay");
});

t.test('tenantgate puts its CRDs back when an administrator deletes one upstream', async (t) => {
  const crd = `flowschemas.${STORED}`;
  await succeeded(stack.kubectlDirect(['delete', 'crd', crd]), 'delete the CRD');
  await eventually('the CRD back and established', async () => {
    const r = await stack.kubectlDirect(['get', 'crd', crd, '-o', 'json']);
    return r.code === 0 && JSON.parse(r.stdout).status?.conditions?.some((c: Json) => c.type === 'Established' && c.status === 'True');
  });
  await eventually(
    'the tenant can create a FlowSchema again',
    async () => (await alpha.kubectl(['apply', '-f', '-'], { input: JSON.stringify(flowSchema('again', 900)) })).code === 0,
  );
  t.match(await succeeded(alpha.kubectl(['get', 'flowschema', 'again', '-o', 'name']), 'get'), 'flowschema.flowcontrol.apiserver.k8s.io/again');
});

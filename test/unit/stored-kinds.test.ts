// Tenants' FlowSchemas and PriorityLevelConfigurations, kept upstream as tenantgate's custom resources: the group
// mapping both ways (paths, bodies, lists, RBAC, Status, discovery), the protobuf decoder (field numbers checked against
// generated.proto, objects encoded from it), strategic merge patches turned into merge patches, and the CRDs kept.
import { Readable } from 'node:stream';
import t from 'tap';
import { kindOf, kindOfUpstream, STORED_FLOWCONTROL_GROUP, STORED_RBAC_GROUP, type KindRow } from '../../lib/convert/kinds.ts';
import { TENANT_LABEL } from '../../lib/convert/prefix.ts';
import { DECODED_KINDS, protobufObjectToJson, type DecodedMessage } from '../../lib/convert/protobuf/decode.ts';
import { parseRequestInfo } from '../../lib/convert/request-info.ts';
import { upstreamNonResourcePath, upstreamResourceTarget } from '../../lib/convert/request.ts';
import {
  apiGroupToTenant,
  apiGroupToUpstream,
  checkNameFits,
  nameMappingOfRow,
  nameToTenant,
  nameToUpstream,
  objectToTenant,
  objectToUpstream,
  RULES,
  stripTenantPrefixes,
  type ConvertContext,
} from '../../lib/convert/rules/index.ts';
import { statusToTenant } from '../../lib/convert/status.ts';
import { strategicToMergePatch, touchesMergeLists } from '../../lib/convert/strategic-merge.ts';
import { visibleGroup } from '../../lib/convert/visibility.ts';
import { ListRewriter } from '../../lib/stream/tenant-view.ts';
import { tenantViewSpecOf } from '../../lib/stream/view-spec.ts';
import { ownershipOf } from '../../lib/tenants/cleanup.ts';
import { STORED_KIND_CRDS, tenantCopyOf } from '../../lib/tenants/stored-kinds.ts';
import { TENANT_CLUSTER_ROLE } from '../../lib/tenants/bootstrap.ts';
import { encodeBody, goModuleCache, loadProtoMessages, type ProtoMessages } from '../helpers/k8s-proto.ts';
import { thrownStatus } from '../helpers/status-error.ts';

const TENANT = 'abc123';
const REAL = 'flowcontrol.apiserver.k8s.io';
const ctx: ConvertContext = { tenant: TENANT, scopeOf: () => undefined, kindScope: () => undefined };
const flowSchemas = kindOf(REAL, 'flowschemas')!;
const priorityLevels = kindOf(REAL, 'prioritylevelconfigurations')!;

const moduleCache = goModuleCache();
const NEEDS_PROTO = {
  skip: moduleCache === undefined ? 'the Go module cache with k8s.io/api v0.36.3 is not on this machine: build the rig first (npm run rig)' : false,
};
const messages: ProtoMessages = moduleCache === undefined ? new Map() : loadProtoMessages(moduleCache);

t.test("both kinds are the tenant's, kept under tenantgate's group upstream; that group is nobody's to see", async (t) => {
  for (const row of [flowSchemas, priorityLevels]) {
    t.match(row, { tenancy: 'tenant', scope: 'Cluster', rule: 'custom-resource', listPath: 'label-filter', upstreamGroup: STORED_FLOWCONTROL_GROUP });
    t.equal(kindOfUpstream(STORED_FLOWCONTROL_GROUP, row.resource), row, `${row.resource}: tenantgate's custom resources hold the tenant's objects`);
    t.equal(kindOfUpstream(REAL, row.resource), undefined, `${row.resource}: the real ones hold none`);
  }
  t.equal(ownershipOf(STORED_FLOWCONTROL_GROUP, 'flowschemas', TENANT), 'prefix', "a deleted tenant's stored FlowSchemas go by prefix");
  t.equal(
    ownershipOf(REAL, 'flowschemas', TENANT),
    'prefix-and-label',
    'a real FlowSchema named abc123-x is never deleted with tenant abc123 (unless it carries its label)',
  );
  t.equal(kindOf(STORED_FLOWCONTROL_GROUP, 'flowschemas'), undefined, "a tenant naming tenantgate's group finds nothing");
  t.equal(visibleGroup(STORED_FLOWCONTROL_GROUP, TENANT), null);
  t.equal(visibleGroup(REAL, TENANT), REAL);
  const grants = TENANT_CLUSTER_ROLE.rules.filter((rule) => rule.apiGroups.includes(STORED_FLOWCONTROL_GROUP) || rule.apiGroups.includes(REAL));
  t.same(
    grants,
    [
      {
        apiGroups: [STORED_FLOWCONTROL_GROUP],
        resources: ['flowschemas', 'flowschemas/status', 'prioritylevelconfigurations', 'prioritylevelconfigurations/status'],
        verbs: ['*'],
      },
    ],
    'tenant identities are granted the custom resources, never the real kinds',
  );
});

t.test('groups map both ways wherever the tenant names a resource, never in discovery paths', async (t) => {
  const cases: [string, string, string, string][] = [
    // [tenant group, resource, upstream group for it, why]
    [REAL, 'flowschemas', STORED_FLOWCONTROL_GROUP, 'stored kinds'],
    ['rbac.authorization.k8s.io', 'clusterrolebindings', STORED_RBAC_GROUP, 'a stored kind of a group whose other kinds are real'],
    ['rbac.authorization.k8s.io', 'roles', 'rbac.authorization.k8s.io', 'a real kind of that group'],
    ['apps', 'deployments', 'apps', 'other built-in groups'],
    ['example.com', 'widgets', 'abc123-example.com', 'a tenant CRD group'],
    ['', 'pods', '', 'core'],
    ['*', '*', '*', 'wildcard'],
  ];
  for (const [group, resource, upstream, why] of cases) {
    t.equal(apiGroupToUpstream(group, TENANT, resource), upstream, `${why}: up`);
    t.equal(apiGroupToTenant(upstream, TENANT), group, `${why}: down`);
  }
  t.equal(apiGroupToTenant(REAL, TENANT), REAL, 'the real group reads as itself');
  const target = (method: string, path: string, query = '') => {
    const q = new URLSearchParams(query);
    const info = parseRequestInfo(method, path, q);
    return upstreamResourceTarget(info, kindOf(info.apiGroup, info.resource)!, q, TENANT);
  };
  t.equal(target('GET', `/apis/${REAL}/v1/flowschemas/x`), `/apis/${STORED_FLOWCONTROL_GROUP}/v1/flowschemas/abc123-x`);
  t.equal(
    target('PUT', `/apis/${REAL}/v1/prioritylevelconfigurations/x/status`),
    `/apis/${STORED_FLOWCONTROL_GROUP}/v1/prioritylevelconfigurations/abc123-x/status`,
  );
  t.equal(
    decodeURIComponent(target('GET', `/apis/${REAL}/v1/flowschemas`, 'labelSelector=a%3Db&watch=true&resourceVersion=5')),
    `/apis/${STORED_FLOWCONTROL_GROUP}/v1/flowschemas?labelSelector=${TENANT_LABEL}=${TENANT},a=b&watch=true&resourceVersion=5`,
    'lists and watches filtered by the tenant label',
  );
  t.equal(
    decodeURIComponent(target('DELETE', `/apis/${REAL}/v1/flowschemas`, 'labelSelector=a%3Db')),
    `/apis/${STORED_FLOWCONTROL_GROUP}/v1/flowschemas?labelSelector=${TENANT_LABEL}=${TENANT},a=b`,
    'deletecollection too',
  );
  for (const path of [`/apis/${REAL}`, `/apis/${REAL}/v1`, `/openapi/v3/apis/${REAL}/v1`])
    t.equal(upstreamNonResourcePath(path, TENANT), path, `${path}: the built-in group's own document`);
});

t.test(
  "objects: apiVersion in tenantgate's group upstream, the tenant's back; names prefixed, label forced; references left as the tenant wrote them",
  async (t) => {
    const tenantView = {
      apiVersion: `${REAL}/v1`,
      kind: 'FlowSchema',
      metadata: { name: 'fs', labels: { app: 'x' }, managedFields: [{ manager: 'kubectl', apiVersion: `${REAL}/v1`, operation: 'Update' }] },
      spec: {
        priorityLevelConfiguration: { name: 'global-default' },
        matchingPrecedence: 500,
        rules: [
          {
            subjects: [
              { kind: 'User', user: { name: 'bob' } },
              { kind: 'ServiceAccount', serviceAccount: { namespace: 'ns', name: 'sa' } },
            ],
          },
        ],
      },
    };
    const upstream = objectToUpstream(structuredClone(tenantView), ctx, flowSchemas);
    t.same(upstream, {
      apiVersion: `${STORED_FLOWCONTROL_GROUP}/v1`,
      kind: 'FlowSchema',
      metadata: {
        name: 'abc123-fs',
        labels: { app: 'x', [TENANT_LABEL]: TENANT },
        managedFields: [{ manager: 'kubectl', apiVersion: `${STORED_FLOWCONTROL_GROUP}/v1`, operation: 'Update' }],
      },
      spec: tenantView.spec,
    });
    t.same(objectToTenant(structuredClone(upstream), ctx, flowSchemas), tenantView);
    const otherTenants = { ...structuredClone(upstream), metadata: { name: 'xyz789-fs', labels: { [TENANT_LABEL]: 'xyz789' } } };
    t.equal(objectToTenant(otherTenants, ctx, flowSchemas), null, "another tenant's");
    t.equal(
      objectToTenant({ apiVersion: `${STORED_FLOWCONTROL_GROUP}/v1`, kind: 'FlowSchema', metadata: { name: 'exempt' } }, ctx, flowSchemas),
      null,
      'a name outside the prefix',
    );
    t.equal(RULES[flowSchemas.rule].toTenant({ apiVersion: 'xyz789-example.com/v1' }, ctx), null, "an apiVersion of another tenant's group");
    const status = statusToTenant(
      {
        kind: 'Status',
        code: 404,
        reason: 'NotFound',
        message: `flowschemas.${STORED_FLOWCONTROL_GROUP} "abc123-fs" not found`,
        details: { name: 'abc123-fs', group: STORED_FLOWCONTROL_GROUP, kind: 'flowschemas' },
      },
      TENANT,
    );
    t.same(status.details, { name: 'fs', group: REAL, kind: 'flowschemas' });
    t.equal(status.message, `flowschemas.${REAL} "fs" not found`);
  },
);

t.test("a list streamed from upstream carries the tenant's apiVersion, on the list and on every item", async (t) => {
  const item = (name: string, tenant: string) => ({
    apiVersion: `${STORED_FLOWCONTROL_GROUP}/v1`,
    kind: 'PriorityLevelConfiguration',
    metadata: { name, labels: { [TENANT_LABEL]: tenant } },
    spec: { type: 'Limited' },
  });
  const upstream = JSON.stringify({
    apiVersion: `${STORED_FLOWCONTROL_GROUP}/v1`,
    items: [item('abc123-a', TENANT), item('xyz789-b', 'xyz789')],
    kind: 'PriorityLevelConfigurationList',
    metadata: { resourceVersion: '42' },
  });
  for (const size of [1, 7, 64, upstream.length]) {
    const chunks: Buffer[] = [];
    for (let at = 0; at < upstream.length; at += size) chunks.push(Buffer.from(upstream.slice(at, at + size)));
    const out: Buffer[] = [];
    for await (const chunk of Readable.from(chunks).pipe(new ListRewriter(tenantViewSpecOf(priorityLevels, ctx)))) out.push(chunk as Buffer);
    const list = JSON.parse(Buffer.concat(out).toString());
    t.equal(list.apiVersion, `${REAL}/v1`, `chunks of ${size}: the list`);
    t.same(
      list.items.map((i: any) => [i.apiVersion, i.metadata.name]),
      [[`${REAL}/v1`, 'a']],
      `chunks of ${size}: the tenant's items only`,
    );
  }
});

// ---- protobuf ----

const FLOW_SCHEMA = 'k8s.io.api.flowcontrol.v1.FlowSchema';
const PRIORITY_LEVEL = 'k8s.io.api.flowcontrol.v1.PriorityLevelConfiguration';
const MESSAGE_OF: Record<string, string> = {
  [`${REAL}/FlowSchema`]: FLOW_SCHEMA,
  [`${REAL}/PriorityLevelConfiguration`]: PRIORITY_LEVEL,
  'rbac.authorization.k8s.io/ClusterRoleBinding': 'k8s.io.api.rbac.v1.ClusterRoleBinding',
};

t.test(
  'every field number the decoder reads is the one of generated.proto (k8s.io/api flowcontrol/v1, rbac/v1, apimachinery meta/v1 v0.36.3)',
  NEEDS_PROTO,
  async (t) => {
    let checked = 0;
    const scalarOf: Record<string, string[]> = {
      string: ['string'],
      int32: ['int32'],
      int64: ['int64'],
      bool: ['bool'],
      time: ['k8s.io.apimachinery.pkg.apis.meta.v1.Time'],
      fieldsV1: ['k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1'],
    };
    const check = (schema: DecodedMessage, message: string, path: string): void => {
      const fields = messages.get(message);
      if (fields === undefined) throw new Error(`no message ${message}`);
      for (const [name, field] of Object.entries(schema)) {
        const proto = fields.get(name);
        t.ok(proto, `${path}.${name} is a field of ${message}`);
        if (proto === undefined) continue;
        t.equal(field.number, proto.number, `${path}.${name} = ${proto.number}`);
        t.equal(field.repeated === true || field.map === true, proto.repeated, `${path}.${name}: repeated as in the .proto`);
        checked++;
        if (field.map === true) t.equal(proto.mapValue, 'string', `${path}.${name} is a map<string, string>`);
        else if (typeof field.type === 'string') t.ok(scalarOf[field.type]!.includes(proto.type), `${path}.${name}: ${field.type} is ${proto.type}`);
        else check(field.type, proto.type, `${path}.${name}`);
      }
    };
    for (const [key, { apiVersion, message }] of DECODED_KINDS) {
      t.equal(apiVersion, `${key.split('/')[0]}/v1`);
      check(message, MESSAGE_OF[key]!, key);
    }
    t.ok(checked > 70, `${checked} field numbers checked`);
  },
);

const metadata = {
  name: 'fs',
  generateName: 'e2e-',
  uid: '7d3c1d6e-0000-4000-8000-000000000001',
  resourceVersion: '1234',
  generation: 3,
  creationTimestamp: '2026-11-26T01:02:03Z',
  labels: { app: 'x', 'example-e2e-fs-label': 'abcdefgh' },
  annotations: { patched: 'true' },
  finalizers: ['example.com/keep'],
  ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: 'u-1', controller: false, blockOwnerDeletion: true }],
  managedFields: [
    {
      manager: 'e2e.test',
      operation: 'Update',
      apiVersion: `${REAL}/v1`,
      time: '2026-11-26T01:02:03Z',
      fieldsType: 'FieldsV1',
      fieldsV1: { 'f:spec': { 'f:matchingPrecedence': {} } },
    },
  ],
};

/** Objects as Go's JSON writes them (no zero scalars but pointers'), encoded from generated.proto and decoded back. */
const ROUND_TRIPS: [string, KindRow, string, Record<string, unknown>][] = [
  [
    'the e2e FlowSchema, updated after a get (metadata in full)',
    flowSchemas,
    FLOW_SCHEMA,
    {
      apiVersion: `${REAL}/v1`,
      kind: 'FlowSchema',
      metadata,
      spec: {
        priorityLevelConfiguration: { name: 'global-default' },
        matchingPrecedence: 10000,
        distinguisherMethod: { type: 'ByUser' },
        rules: [
          {
            subjects: [
              { kind: 'User', user: { name: 'example-e2e-non-existent-user' } },
              { kind: 'Group', group: { name: 'system:authenticated' } },
              { kind: 'ServiceAccount', serviceAccount: { namespace: 'kube-system', name: '*' } },
            ],
            resourceRules: [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'], clusterScope: true, namespaces: ['*'] }],
            nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }],
          },
        ],
      },
      status: {
        conditions: [
          {
            type: 'Dangling',
            status: 'False',
            lastTransitionTime: '2026-11-26T01:02:04Z',
            reason: 'Found',
            message: 'This FlowSchema references the PriorityLevelConfiguration object named "global-default" and it exists',
          },
        ],
      },
    },
  ],
  [
    'a limited priority level: zero percentages are set, not absent',
    priorityLevels,
    PRIORITY_LEVEL,
    {
      apiVersion: `${REAL}/v1`,
      kind: 'PriorityLevelConfiguration',
      metadata: { generateName: 'e2e-example-pl-', labels: { 'example-e2e-pl-label': 'x' } },
      spec: {
        type: 'Limited',
        limited: {
          nominalConcurrencyShares: 2,
          lendablePercent: 0,
          borrowingLimitPercent: 0,
          limitResponse: { type: 'Queue', queuing: { queues: 64, handSize: 8, queueLengthLimit: 50 } },
        },
      },
      status: {},
    },
  ],
  [
    'an exempt priority level',
    priorityLevels,
    PRIORITY_LEVEL,
    {
      apiVersion: `${REAL}/v1`,
      kind: 'PriorityLevelConfiguration',
      metadata: { name: 'exempt' },
      spec: { type: 'Exempt', exempt: { nominalConcurrencyShares: 0, lendablePercent: 0 } },
    },
  ],
];

t.test('a protobuf object decodes to the JSON Go writes for it', NEEDS_PROTO, async (t) => {
  for (const [behaviour, row, message, object] of ROUND_TRIPS) {
    const body = encodeBody(messages, message, object);
    t.same(protobufObjectToJson(body, row, 'v1'), object, behaviour);
  }
  const { apiVersion: _a, kind: _k, ...withoutType } = ROUND_TRIPS[2]![3];
  const bare = encodeBody(messages, PRIORITY_LEVEL, withoutType);
  t.match(
    protobufObjectToJson(bare, priorityLevels, 'v1'),
    { apiVersion: `${REAL}/v1`, kind: 'PriorityLevelConfiguration' },
    "no apiVersion in the envelope: the path's version",
  );
  const zeroTime = encodeBody(messages, FLOW_SCHEMA, {
    apiVersion: `${REAL}/v1`,
    kind: 'FlowSchema',
    metadata: { name: 'z', creationTimestamp: '0001-01-01T00:00:00Z' },
  });
  t.same(protobufObjectToJson(zeroTime, flowSchemas, 'v1').metadata, { name: 'z' }, "the zero time is no time (null in Go's JSON)");
});

t.test('protobuf bodies the decoder refuses: another kind or version (400, 415), malformed bytes (400)', NEEDS_PROTO, async (t) => {
  const good = encodeBody(messages, FLOW_SCHEMA, { apiVersion: `${REAL}/v1`, kind: 'FlowSchema', metadata: { name: 'x' }, spec: { matchingPrecedence: 5 } });
  const refusals: [string, Buffer, KindRow, string, number][] = [
    ['a FlowSchema sent to priority levels', good, priorityLevels, 'v1', 400],
    [
      'an older version',
      encodeBody(messages, FLOW_SCHEMA, { apiVersion: `${REAL}/v1beta3`, kind: 'FlowSchema', metadata: { name: 'x' } }),
      flowSchemas,
      'v1',
      415,
    ],
    ['not protobuf at all', Buffer.from('{"kind":"FlowSchema"}'), flowSchemas, 'v1', 400],
    ['cut short', good.subarray(0, good.length - 3), flowSchemas, 'v1', 400],
    ['a kind the decoder does not know', good, kindOf('', 'configmaps')!, 'v1', 415],
  ];
  for (const [behaviour, body, row, version, code] of refusals) t.equal(thrownStatus(() => protobufObjectToJson(body, row, version))?.code, code, behaviour);
  // A string field carrying a varint, and a singular field twice: never read as something else.
  const raw = (bytes: number[]) => Buffer.concat([Buffer.from('k8s\0', 'latin1'), Buffer.from([0x12, bytes.length, ...bytes])]);
  t.equal(thrownStatus(() => protobufObjectToJson(raw([0x0a, 0x02, 0x08, 0x01]), flowSchemas, 'v1'))?.code, 400, 'metadata.name as a varint');
  t.equal(thrownStatus(() => protobufObjectToJson(raw([0x12, 0x02, 0x10, 0x05, 0x12, 0x02, 0x10, 0x06]), flowSchemas, 'v1'))?.code, 400, 'spec twice');
  t.same(
    protobufObjectToJson(raw([0xf8, 0x01, 0x07, 0x12, 0x02, 0x10, 0x05]), flowSchemas, 'v1').spec,
    { matchingPrecedence: 5 },
    'an unknown field is skipped, as Go skips it',
  );
});

// ---- strategic merge patches ----

t.test('a strategic merge patch becomes the merge patch doing the same; directives are refused', async (t) => {
  const same: unknown[] = [
    { metadata: { annotations: { patched: 'true' } }, spec: { matchingPrecedence: 9999 } },
    { spec: { rules: [{ subjects: [{ kind: 'User', user: { name: 'a' } }] }] } },
    { spec: { distinguisherMethod: null } },
  ];
  for (const patch of same) {
    t.notOk(touchesMergeLists(flowSchemas, patch));
    t.same(strategicToMergePatch(flowSchemas, patch), patch, `atomic lists: ${JSON.stringify(patch)}`);
  }
  const current = {
    metadata: { name: 'fs', resourceVersion: '77' },
    status: {
      conditions: [
        { type: 'Dangling', status: 'False', reason: 'Found' },
        { type: 'Other', status: 'True' },
      ],
    },
  };
  const patch = {
    status: {
      conditions: [
        { type: 'Dangling', status: 'True', reason: null },
        { type: 'New', status: 'False' },
      ],
    },
  };
  t.ok(touchesMergeLists(flowSchemas, patch));
  t.same(
    strategicToMergePatch(flowSchemas, patch, current),
    {
      status: {
        conditions: [
          { type: 'Dangling', status: 'True' },
          { type: 'Other', status: 'True' },
          { type: 'New', status: 'False' },
        ],
      },
      metadata: { resourceVersion: '77' },
    },
    'conditions merge by type with what is there, guarded by its resourceVersion',
  );
  for (const directive of [
    { $patch: 'replace' },
    { spec: { $retainKeys: ['rules'] } },
    { status: { conditions: [{ type: 'x', $patch: 'delete' }] } },
    { '$setElementOrder/conditions': [] },
  ]) {
    const refusal = thrownStatus(() => strategicToMergePatch(flowSchemas, directive, current));
    t.equal(refusal?.code, 415, JSON.stringify(directive));
    t.match(refusal?.message, /merge patch/);
  }
  t.equal(
    thrownStatus(() => strategicToMergePatch(flowSchemas, { status: { conditions: [{ status: 'x' }] } }, current))?.code,
    400,
    'a condition without its merge key',
  );
  t.equal(thrownStatus(() => strategicToMergePatch(flowSchemas, [1], current))?.code, 400, 'not an object');
  t.equal(thrownStatus(() => strategicToMergePatch(kindOf('', 'configmaps')!, {}, current))?.code, 415, 'a kind without known merge lists');
});

t.test("the CRDs kept upstream: cluster-scoped, tenantgate's group, the built-in kinds' names, status subresource, preserved fields", async (t) => {
  t.same(
    STORED_KIND_CRDS.map(({ object }) => object.metadata.name),
    [`clusterrolebindings.${STORED_RBAC_GROUP}`, `flowschemas.${STORED_FLOWCONTROL_GROUP}`, `prioritylevelconfigurations.${STORED_FLOWCONTROL_GROUP}`],
  );
  const [bindings, ...flowControl] = STORED_KIND_CRDS.map(({ object }) => object as any);
  // A ClusterRoleBinding has no spec nor status: its own fields, kept as given; no status subresource.
  t.equal(bindings.spec.group, STORED_RBAC_GROUP);
  t.equal(bindings.spec.scope, 'Cluster');
  t.same(bindings.spec.names, {
    plural: 'clusterrolebindings',
    singular: 'clusterrolebinding',
    kind: 'ClusterRoleBinding',
    listKind: 'ClusterRoleBindingList',
  });
  t.same(
    bindings.spec.versions.map((v: any) => [v.name, v.served, v.storage, v.subresources]),
    [['v1', true, true, undefined]],
  );
  t.same(bindings.spec.versions[0].schema.openAPIV3Schema.properties, {
    roleRef: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
    subjects: { type: 'array', items: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
  });
  for (const crd of flowControl) {
    t.equal(crd.spec.group, STORED_FLOWCONTROL_GROUP);
    t.equal(crd.spec.scope, 'Cluster');
    t.equal(crd.spec.names.listKind, `${crd.spec.names.kind}List`);
    t.same(
      crd.spec.versions.map((v: any) => [v.name, v.served, v.storage, v.subresources]),
      [['v1', true, true, { status: {} }]],
    );
    const properties = crd.spec.versions[0].schema.openAPIV3Schema.properties;
    t.same(properties.spec, { type: 'object', 'x-kubernetes-preserve-unknown-fields': true });
    t.same(properties.status, { type: 'object', 'x-kubernetes-preserve-unknown-fields': true });
    t.match(crd.spec.versions[0].additionalPrinterColumns.at(-1), { name: 'Age' });
  }
  for (const { collection } of STORED_KIND_CRDS) t.equal(collection, '/apis/apiextensions.k8s.io/v1/customresourcedefinitions');
});

t.test("a tenant's copy of the upstream's mandatory configuration: its spec and annotations, under the prefix, labelled, in tenantgate's group", async (t) => {
  const exempt = {
    apiVersion: `${REAL}/v1`,
    kind: 'PriorityLevelConfiguration',
    metadata: {
      name: 'exempt',
      uid: 'u',
      resourceVersion: '5',
      annotations: { 'apf.kubernetes.io/autoupdate-spec': 'true' },
      managedFields: [{ manager: 'api-priority-and-fairness-config-producer-v1' }],
    },
    spec: { type: 'Exempt', exempt: { nominalConcurrencyShares: 0, lendablePercent: 0 } },
    status: { conditions: [] },
  };
  const copy = tenantCopyOf(exempt, priorityLevels, TENANT);
  t.same(copy, {
    apiVersion: `${STORED_FLOWCONTROL_GROUP}/v1`,
    kind: 'PriorityLevelConfiguration',
    metadata: { name: 'abc123-exempt', labels: { [TENANT_LABEL]: TENANT }, annotations: { 'apf.kubernetes.io/autoupdate-spec': 'true' } },
    spec: exempt.spec,
  });
  t.match(
    objectToTenant(structuredClone(copy), ctx, priorityLevels),
    { apiVersion: `${REAL}/v1`, metadata: { name: 'exempt' } },
    'the tenant sees it as its own exempt',
  );
});

t.test("a stored ClusterRoleBinding's name is a DNS subdomain upstream, any name the tenant may give read back as given", async (t) => {
  const row = kindOf('rbac.authorization.k8s.io', 'clusterrolebindings')!;
  const cases: [string, string][] = [
    // [tenant name, upstream name]
    ['readers', 'abc123-readers'],
    ['a.b-c', 'abc123-a.b-c'],
    ['system:discovery', `abc123-tghex-${Buffer.from('system:discovery').toString('hex')}`],
    ['Upper', `abc123-tghex-${Buffer.from('Upper').toString('hex')}`],
    ['tghex-00', `abc123-tghex-${Buffer.from('tghex-00').toString('hex')}`],
    ['.dot', `abc123-tghex-${Buffer.from('.dot').toString('hex')}`],
  ];
  for (const [name, upstream] of cases) {
    t.equal(nameToUpstream(nameMappingOfRow(row), name, TENANT), upstream, `${name}: up`);
    t.equal(nameToTenant(nameMappingOfRow(row), upstream, TENANT), name, `${name}: down`);
  }
  t.equal(nameToTenant(nameMappingOfRow(row), 'xyz789-readers', TENANT), null, "another tenant's is none of this one's");
  t.equal(nameToTenant(nameMappingOfRow(row), 'abc123-tghex-zz', TENANT), null, "a malformed encoding reads as nobody's");
  t.equal(
    stripTenantPrefixes(`clusterrolebindings.rbac.authorization.k8s.io "abc123-tghex-${Buffer.from('a:b').toString('hex')}" not found`, TENANT),
    'clusterrolebindings.rbac.authorization.k8s.io "a:b" not found',
    'messages name it as the tenant does',
  );
  t.throws(() => checkNameFits(row, 'x:'.repeat(70)), { code: 422 }, 'too long once encoded: refused before the upstream');
  t.doesNotThrow(() => checkNameFits(row, 'x'.repeat(240)), 'a plain name keeps the usual limit');
});

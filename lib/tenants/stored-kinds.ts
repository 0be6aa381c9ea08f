// The CRDs tenantgate keeps upstream for tenant kinds the upstream must never act on (the table's upstreamGroup):
// tenants' FlowSchemas and PriorityLevelConfigurations live there as custom resources, which APF never reads, and
// their ClusterRoleBindings, which the RBAC authorizer never scans.
// Never defines a built-in group or a group under any tenant's prefix; the schema leaves spec and status as given.
import { KINDS, kindOf, type KindRow } from '../convert/kinds.ts';
import { TENANT_LABEL, toUpstreamName, type TenantId } from '../convert/prefix.ts';
import { upstreamJson } from '../upstream/client.ts';
import type { UpstreamPool } from '../upstream/pool.ts';
import type { UpstreamObject } from './bootstrap.ts';
import type { KeptObject } from './kept-objects.ts';

/** The one version every stored kind is served at, the built-in kind's (flowcontrol.apiserver.k8s.io/v1, rbac.authorization.k8s.io/v1). */
const STORED_VERSION = 'v1';

interface PrinterColumn {
  name: string;
  type: string;
  jsonPath: string;
  priority?: number;
}

const age: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };

/** The built-in kinds' own table columns (kubectl get), as the apiserver's printers show them. */
const PRINTER_COLUMNS: Readonly<Record<string, readonly PrinterColumn[]>> = {
  FlowSchema: [
    { name: 'PriorityLevel', type: 'string', jsonPath: '.spec.priorityLevelConfiguration.name' },
    { name: 'MatchingPrecedence', type: 'integer', jsonPath: '.spec.matchingPrecedence' },
    { name: 'DistinguisherMethod', type: 'string', jsonPath: '.spec.distinguisherMethod.type' },
    age,
  ],
  PriorityLevelConfiguration: [
    { name: 'Type', type: 'string', jsonPath: '.spec.type' },
    { name: 'NominalConcurrencyShares', type: 'integer', jsonPath: '.spec.limited.nominalConcurrencyShares' },
    { name: 'Queues', type: 'integer', jsonPath: '.spec.limited.limitResponse.queuing.queues' },
    { name: 'HandSize', type: 'integer', jsonPath: '.spec.limited.limitResponse.queuing.handSize' },
    { name: 'QueueLengthLimit', type: 'integer', jsonPath: '.spec.limited.limitResponse.queuing.queueLengthLimit' },
    age,
  ],
  // The cells the apiserver's printer writes (`ClusterRole/<name>`, subjects joined) are no JSONPath's: tenantgate
  // writes them from each row's object (convert/table.ts); these columns give the Table its shape.
  ClusterRoleBinding: [
    { name: 'Role', type: 'string', jsonPath: '.roleRef.name' },
    age,
    { name: 'Users', type: 'string', jsonPath: '.subjects', priority: 1 },
    { name: 'Groups', type: 'string', jsonPath: '.subjects', priority: 1 },
    { name: 'ServiceAccounts', type: 'string', jsonPath: '.subjects', priority: 1 },
  ],
};

const PRESERVED = { type: 'object', 'x-kubernetes-preserve-unknown-fields': true };
const PRESERVED_LIST = { type: 'array', items: PRESERVED };

/** The top-level fields of a stored kind's objects besides metadata: the built-in kind's own, kept as given. */
const STORED_FIELDS: Readonly<Record<string, Readonly<Record<string, unknown>>>> = {
  ClusterRoleBinding: { roleRef: PRESERVED, subjects: PRESERVED_LIST },
};
const SPEC_AND_STATUS = { spec: PRESERVED, status: PRESERVED };

export const CRD_COLLECTION = '/apis/apiextensions.k8s.io/v1/customresourcedefinitions';

/** The CRD a stored kind's objects are kept under: same plural, kind and scope as the built-in kind, in its upstream group. */
export function storedKindCrd(row: KindRow & { upstreamGroup: string }) {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${row.resource}.${row.upstreamGroup}` },
    spec: {
      group: row.upstreamGroup,
      scope: row.scope,
      names: { plural: row.resource, singular: row.kind.toLowerCase(), kind: row.kind, listKind: `${row.kind}List` },
      versions: [
        {
          name: STORED_VERSION,
          served: true,
          storage: true,
          schema: { openAPIV3Schema: { type: 'object', properties: STORED_FIELDS[row.kind] ?? SPEC_AND_STATUS } },
          ...(row.subresources.includes('status') ? { subresources: { status: {} } } : {}),
          additionalPrinterColumns: PRINTER_COLUMNS[row.kind] ?? [age],
        },
      ],
    },
  };
}

const STORED_ROWS = KINDS.filter((row): row is KindRow & { upstreamGroup: string } => row.upstreamGroup !== undefined);

/** The stored kinds' CRDs, for the ObjectKeeper: created on start and put back when deleted or changed. */
export const STORED_KIND_CRDS: readonly KeptObject[] = STORED_ROWS.map((row) => ({ collection: CRD_COLLECTION, object: storedKindCrd(row) }));

const ESTABLISHED_POLL_MS = 100;

/**
 * Resolves once every stored kind's CRD is Established (its objects served), or after `timeoutMs` (the keeper goes on
 * trying; tenants get 404 for those kinds meanwhile). A CRD just created is served within a moment.
 */
export async function storedKindsEstablished(pool: UpstreamPool, timeoutMs = 10_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (const { object } of STORED_KIND_CRDS) {
    for (;;) {
      const crd = await upstreamJson(pool, 'GET', `${CRD_COLLECTION}/${encodeURIComponent(object.metadata.name)}`);
      const conditions: { type?: string; status?: string }[] = crd.status === 200 ? (crd.body?.status?.conditions ?? []) : [];
      if (conditions.some((condition) => condition.type === 'Established' && condition.status === 'True')) break;
      if (Date.now() >= deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, ESTABLISHED_POLL_MS));
    }
  }
  return true;
}

/**
 * Creates those of the stored kinds' CRDs that are missing and waits until they are served: a tenant's built-in
 * ClusterRoleBindings live in one, so the lifecycle needs them even where no gateway keeps them (ObjectKeeper).
 */
export async function ensureStoredKindCrds(pool: UpstreamPool): Promise<boolean> {
  for (const { collection, object } of STORED_KIND_CRDS) {
    const created = await upstreamJson(pool, 'POST', collection, object);
    if (created.status !== 201 && created.status !== 409) throw new Error(`creating ${object.metadata.name} answered ${created.status}`);
  }
  return storedKindsEstablished(pool);
}

// ---- what a cluster has at birth: the mandatory API Priority and Fairness configuration ----

const FLOWCONTROL = 'flowcontrol.apiserver.k8s.io';

/**
 * The objects every kube-apiserver makes and keeps (its "mandatory" configuration): a tenant is born with copies, so
 * its cluster lists them as any does. Like every tenant FlowSchema, they steer nothing.
 */
export const MANDATORY_FLOW_CONTROL: readonly { resource: string; name: string }[] = [
  { resource: 'prioritylevelconfigurations', name: 'exempt' },
  { resource: 'prioritylevelconfigurations', name: 'catch-all' },
  { resource: 'flowschemas', name: 'exempt' },
  { resource: 'flowschemas', name: 'catch-all' },
];

/** The tenant's copy of one of the upstream's own objects (as read from it): its spec and annotations, under the prefix. */
export function tenantCopyOf(
  upstreamObject: { metadata?: { name?: string; annotations?: Record<string, string> }; spec?: unknown },
  row: KindRow,
  tenant: TenantId,
): UpstreamObject {
  const { name = '', annotations } = upstreamObject.metadata ?? {};
  return {
    apiVersion: `${row.upstreamGroup ?? row.group}/${STORED_VERSION}`,
    kind: row.kind,
    metadata: { name: toUpstreamName(name, tenant), labels: { [TENANT_LABEL]: tenant }, ...(annotations === undefined ? {} : { annotations }) },
    spec: upstreamObject.spec,
  };
}

/** One of the upstream's mandatory objects as read from it, with the tenant kind it is copied as. */
export interface MandatoryObject {
  row: KindRow;
  object: { metadata?: { name?: string; annotations?: Record<string, string> }; spec?: unknown };
}

/** The upstream's mandatory configuration (none when its API Priority and Fairness is off): read once, copied into every tenant. */
export async function readMandatoryFlowControl(pool: UpstreamPool): Promise<MandatoryObject[]> {
  const read: MandatoryObject[] = [];
  for (const { resource, name } of MANDATORY_FLOW_CONTROL) {
    const real = await upstreamJson(pool, 'GET', `/apis/${FLOWCONTROL}/${STORED_VERSION}/${resource}/${name}`);
    if (real.status === 404) continue;
    if (real.status !== 200) throw new Error(`reading the upstream's ${resource}/${name} answered ${real.status}`);
    read.push({ row: kindOf(FLOWCONTROL, resource)!, object: real.body });
  }
  return read;
}

/**
 * Creates the tenant's copies of the upstream's mandatory configuration, leaving alone any the tenant already has: what
 * it changes is its own, as on a cluster whose administrator set `apf.kubernetes.io/autoupdate-spec: "false"`.
 */
export async function ensureTenantFlowControlDefaults(pool: UpstreamPool, tenant: TenantId, mandatory: readonly MandatoryObject[]): Promise<void> {
  await Promise.all(
    mandatory.map(async ({ row, object }) => {
      const copy = tenantCopyOf(object, row, tenant);
      const created = await upstreamJson(pool, 'POST', `/apis/${row.upstreamGroup}/${STORED_VERSION}/${row.resource}`, copy);
      // tenantgate's CRDs not served (a lifecycle run without the gateway that keeps them): nothing to copy into.
      if (created.status === 404) return;
      if (created.status !== 201 && created.status !== 409) throw new Error(`creating ${row.resource}/${copy.metadata.name} answered ${created.status}`);
    }),
  );
}

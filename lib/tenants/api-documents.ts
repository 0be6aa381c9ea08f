// What the Tenant API says about itself: discovery (legacy and aggregated v2), its OpenAPI v3 document, and the
// Table `kubectl get tenants` prints. Pure data from the Tenant type; never served to tenants (only administrators).
import { createHash } from 'node:crypto';
import type { RowObjects } from '../convert/table.ts';
import { PLATFORM_CLASS_FIELDS, TENANT_API_VERSION, TENANT_GROUP, TENANT_VERSION, type Tenant } from './tenant.ts';

export const TENANT_RESOURCE = 'tenants';
const OBJECT_VERBS = ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'];
const STATUS_VERBS = ['get', 'patch', 'update'];
const KUBECONFIG_VERBS = ['get'];

export function apiGroup(): object {
  const version = { groupVersion: TENANT_API_VERSION, version: TENANT_VERSION };
  return { kind: 'APIGroup', apiVersion: 'v1', name: TENANT_GROUP, versions: [version], preferredVersion: version };
}

export function apiResourceList(): object {
  const entry = (name: string, singularName: string, verbs: string[]) => ({ name, singularName, namespaced: false, kind: 'Tenant', verbs });
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: TENANT_API_VERSION,
    resources: [
      entry(TENANT_RESOURCE, 'tenant', OBJECT_VERBS),
      entry(`${TENANT_RESOURCE}/status`, '', STATUS_VERBS),
      entry(`${TENANT_RESOURCE}/kubeconfig`, '', KUBECONFIG_VERBS),
    ],
  };
}

/** The group's entry in an aggregated (apidiscovery.k8s.io/v2) APIGroupDiscoveryList. */
export function aggregatedDiscoveryGroup(): object {
  const responseKind = { group: TENANT_GROUP, version: TENANT_VERSION, kind: 'Tenant' };
  return {
    metadata: { name: TENANT_GROUP, creationTimestamp: null },
    versions: [
      {
        version: TENANT_VERSION,
        freshness: 'Current',
        resources: [
          {
            resource: TENANT_RESOURCE,
            responseKind,
            scope: 'Cluster',
            singularResource: 'tenant',
            verbs: OBJECT_VERBS,
            subresources: [
              { subresource: 'status', responseKind, verbs: STATUS_VERBS },
              { subresource: 'kubeconfig', responseKind: { group: '', version: '', kind: '' }, verbs: KUBECONFIG_VERBS },
            ],
          },
        ],
      },
    ],
  };
}

const META = 'io.k8s.apimachinery.pkg.apis.meta.v1';
const TENANT_SCHEMA = 'io.kubezoo.tenant.v1alpha1.Tenant';
const ref = (name: string) => ({ allOf: [{ $ref: `#/components/schemas/${name}` }] });
const text = (description: string) => ({ type: 'string', description });
const stringMap = (description: string) => ({ type: 'object', description, additionalProperties: { type: 'string', default: '' } });

const GVK = { group: TENANT_GROUP, version: TENANT_VERSION, kind: 'Tenant' };
/** An operation as the apiserver describes it; kubectl explain finds a resource's schema through its GET. */
const operation = (action: string, schema: string, description: string) => ({
  description,
  'x-kubernetes-action': action,
  'x-kubernetes-group-version-kind': GVK,
  responses: { '200': { description: 'OK', content: { 'application/json': { schema: { $ref: `#/components/schemas/${schema}` } } } } },
});

/** The OpenAPI v3 document of tenant.kubezoo.io/v1alpha1: what `kubectl explain tenant` reads. */
export const OPENAPI_V3_DOCUMENT = JSON.stringify({
  openapi: '3.0.0',
  info: { title: 'tenantgate', version: TENANT_VERSION },
  paths: {
    [`/apis/${TENANT_API_VERSION}/${TENANT_RESOURCE}`]: {
      get: operation('list', `${TENANT_SCHEMA}List`, 'list or watch tenants'),
      post: operation('post', TENANT_SCHEMA, 'create a tenant'),
    },
    [`/apis/${TENANT_API_VERSION}/${TENANT_RESOURCE}/{name}`]: {
      get: operation('get', TENANT_SCHEMA, 'read a tenant'),
      put: operation('put', TENANT_SCHEMA, 'replace a tenant'),
      patch: operation('patch', TENANT_SCHEMA, 'partially update a tenant'),
      delete: operation('delete', TENANT_SCHEMA, 'mark a tenant for deletion'),
      parameters: [{ name: 'name', in: 'path', required: true, description: 'the tenant id', schema: { type: 'string' } }],
    },
  },
  components: {
    schemas: {
      [TENANT_SCHEMA]: {
        type: 'object',
        description:
          'A tenant: one cluster of its own, served by tenantgate in front of the shared kube-apiserver. The name is the tenant id: exactly 6 characters of [a-z0-9].',
        properties: {
          apiVersion: text('APIVersion defines the versioned schema of this representation of an object.'),
          kind: text('Kind is a string value representing the REST resource this object represents.'),
          metadata: { ...ref(`${META}.ObjectMeta`), default: {}, description: 'Standard object metadata; metadata.name is the tenant id.' },
          spec: {
            type: 'object',
            description: 'What the tenant is given.',
            properties: {
              id: { type: 'integer', format: 'int64', description: "KubeZoo's numeric tenant id, kept as given; never used to route requests." },
              ...Object.fromEntries(
                Object.entries(PLATFORM_CLASS_FIELDS).map(([field, kind]) => [
                  field,
                  {
                    type: 'object',
                    description: `The platform's ${kind.resource} the tenant may use (listed, matched by the selector, or its default); unset: all${kind.resource === 'priorityclasses' ? ' but system-node-critical and system-cluster-critical' : ''}.`,
                    properties: {
                      allowed: { type: 'array', description: 'Class names.', items: { type: 'string', default: '' } },
                      selector: {
                        type: 'object',
                        description: 'A label selector (matchLabels, matchExpressions) over the classes.',
                        'x-kubernetes-preserve-unknown-fields': true,
                      },
                      ...(field !== 'deviceClasses' && {
                        default: {
                          type: 'string',
                          description: "The class the tenant's objects get when they name none (their templates' too), instead of the platform's default.",
                        },
                      }),
                      ...(field === 'priorityClasses' && {
                        band: {
                          type: 'object',
                          description:
                            "The values the tenant's own PriorityClasses may take, both ends included; unset ends: the lowest int32, and just below the lowest platform class the tenant may not use (at most 1000000000).",
                          properties: { min: { type: 'integer', format: 'int32' }, max: { type: 'integer', format: 'int32' } },
                        },
                      }),
                    },
                  },
                ]),
              ),
              quota: {
                type: 'object',
                description: 'Limits on what the tenant may use.',
                properties: { hard: stringMap('Hard limits by resource name (as in a ResourceQuota), e.g. cpu: "4".') },
              },
            },
          },
          status: {
            type: 'object',
            description: 'What tenantgate observed of the tenant.',
            properties: {
              online: { type: 'boolean', description: 'True once the tenant is stored and served.' },
              quota: {
                type: 'object',
                description: "spec.quota.hard as enforced, and its use summed over all the tenant's namespaces.",
                properties: { hard: stringMap('The limits in force.'), used: stringMap('What the tenant uses of each, over all its namespaces.') },
              },
              conditions: {
                type: 'array',
                description:
                  'Progress of setup and deletion: Ready; BuiltinsUpstream (its built-in namespaces, roles and Service, written upstream on its first request); Terminating.',
                items: {
                  type: 'object',
                  required: ['type', 'status'],
                  properties: {
                    type: text('Type of condition.'),
                    status: text('True, False or Unknown.'),
                    reason: text('A machine-readable reason for the last transition.'),
                    message: text('A human-readable message about the last transition.'),
                    lastTransitionTime: { type: 'string', format: 'date-time', description: 'When the condition last changed.' },
                  },
                },
              },
            },
          },
        },
        'x-kubernetes-group-version-kind': [{ group: TENANT_GROUP, kind: 'Tenant', version: TENANT_VERSION }],
      },
      [`${TENANT_SCHEMA}List`]: {
        type: 'object',
        description: 'A list of tenants.',
        required: ['items'],
        properties: {
          apiVersion: text('APIVersion defines the versioned schema of this representation of an object.'),
          kind: text('Kind is a string value representing the REST resource this object represents.'),
          items: { type: 'array', items: ref(TENANT_SCHEMA) },
          metadata: { ...ref(`${META}.ListMeta`), default: {} },
        },
        'x-kubernetes-group-version-kind': [{ group: TENANT_GROUP, kind: 'TenantList', version: TENANT_VERSION }],
      },
      [`${META}.ObjectMeta`]: {
        type: 'object',
        description: 'Standard object metadata.',
        properties: {
          name: text('The tenant id.'),
          uid: text('Unique in time and space, set by tenantgate.'),
          resourceVersion: text('Version of the object, for optimistic concurrency.'),
          generation: { type: 'integer', format: 'int64', description: 'Sequence number of changes to the spec.' },
          creationTimestamp: { type: 'string', format: 'date-time', description: 'When the tenant was created.' },
          deletionTimestamp: {
            type: 'string',
            format: 'date-time',
            description: 'When deletion was asked; the tenant is removed once its upstream objects are gone.',
          },
          labels: stringMap('Labels to organize and select tenants.'),
          annotations: stringMap('Annotations, e.g. tenant.kubezoo.io/max-requests-inflight.'),
          finalizers: {
            type: 'array',
            items: { type: 'string', default: '' },
            description: 'Must be empty before the tenant is removed; tenantgate keeps tenant.kubezoo.io/cleanup until the upstream objects are gone.',
          },
        },
      },
      [`${META}.ListMeta`]: {
        type: 'object',
        description: 'Standard list metadata.',
        properties: { resourceVersion: text('Version of the list, to watch from.'), continue: text('Not used: tenants are listed whole.') },
      },
    },
  },
});

/** The document's hash, as the apiserver puts it in the v3 index so clients may cache the document. */
export const OPENAPI_V3_HASH = createHash('sha512').update(OPENAPI_V3_DOCUMENT).digest('hex').toUpperCase();
export const OPENAPI_V3_PATH = `apis/${TENANT_GROUP}/${TENANT_VERSION}`;

/** Ready, Terminating, NotReady, or Pending until the lifecycle has said anything. */
export function tenantPhase(tenant: Tenant): string {
  if (tenant.metadata.deletionTimestamp !== undefined) return 'Terminating';
  const ready = tenant.status?.conditions?.find((condition) => condition.type === 'Ready');
  if (ready?.status === 'True' || (ready === undefined && tenant.status?.online === true)) return 'Ready';
  if (ready?.status === 'False' || tenant.status?.online === false) return 'NotReady';
  return 'Pending';
}

/** Kubernetes' duration.HumanDuration: "45s", "3m20s", "5h10m", "12d", "2y30d". */
export function humanDuration(milliseconds: number): string {
  const seconds = Math.max(0, Math.floor(milliseconds / 1000));
  const minutes = Math.floor(seconds / 60);
  const hours = Math.floor(minutes / 60);
  const days = Math.floor(hours / 24);
  const years = Math.floor(days / 365);
  if (minutes < 2) return `${seconds}s`;
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (hours < 3) return `${minutes}m`;
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (days < 8) return hours % 24 === 0 ? `${days}d` : `${days}d${hours % 24}h`;
  if (days < 365 * 2) return `${days}d`;
  if (years < 8) return days % 365 === 0 ? `${years}y` : `${years}y${days % 365}d`;
  return `${years}y`;
}

const COLUMNS = [
  { name: 'Name', type: 'string', format: 'name', description: 'The tenant id.', priority: 0 },
  { name: 'Status', type: 'string', format: '', description: 'Ready, NotReady, Pending or Terminating.', priority: 0 },
  { name: 'Age', type: 'string', format: '', description: 'Time since the tenant was created.', priority: 0 },
];

/** A meta.k8s.io/v1 Table of tenants; `withColumns: false` leaves the definitions out (watch events after the first). */
export function tenantTable(tenants: Tenant[], resourceVersion: string, rowObjects: RowObjects, withColumns = true, now = Date.now()): object {
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion },
    columnDefinitions: withColumns ? COLUMNS : [],
    rows: tenants.map((tenant) => {
      const row: Record<string, unknown> = {
        cells: [tenant.metadata.name, tenantPhase(tenant), humanDuration(now - Date.parse(tenant.metadata.creationTimestamp))],
      };
      if (rowObjects === 'Object') row.object = tenant;
      else if (rowObjects === 'Metadata') row.object = { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: tenant.metadata };
      return row;
    }),
  };
}

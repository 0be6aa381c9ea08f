// The tenant's view of the upstream's protobuf answers of one object or a Status, at the wire level as to-upstream.ts
// converts request bodies: what objectToTenant decides and makes of the object (lists and watches: streams.ts).
// Never returns an object, nor any byte of one, that is not the tenant's: each object is whole and judged first.
import { PLATFORM_CLASS_RESOURCES } from '../rules/platform-classes.ts';
import { priorityClassNameToTenant } from '../rules/priority-classes.ts';
import { badGateway, StatusError } from '../../errors/status-error.ts';
import { isBuiltinGroup, type KindRow } from '../kinds.ts';
import { PREFIX_LENGTH, TENANT_LABEL, toTenantName, type TenantId } from '../prefix.ts';
import { ANOMALY, FieldScan, ForwardSearch, headSize, isAsciiRange, rangeEquals, rangeIncludes, SkipSearch, type Splices } from './splice.ts';
import { LENGTH_DELIMITED, MAGIC } from './wire.ts';
import { RULES } from '../rules/index.ts';
import { apiVersionToTenant, groupOfApiVersion } from '../rules/api-groups.ts';
import { namespaceSelectorToTenant } from '../rules/label-selectors.ts';
import { managedFieldsToTenant } from '../rules/managed-fields.ts';
import { nameMappingOfRow, namespaceToTenant, nameToTenant } from '../rules/names.ts';
import { ownerReferencesToTenant } from '../rules/references.ts';
import { nameMappingOfKind } from '../rules/referents.ts';
import type { ConvertContext, Json, KindRule } from '../rules/rule.ts';
import { statusToTenant, stripTenantPrefixes, type StatusScope } from '../status.ts';
import { EMPTY, MessageEdit, readStrings, rewriteAt, stringEntry, writeStrings } from './message-edit.ts';
import { parseEnvelope } from './envelope.ts';
import { readSkeleton, wireKeyed, wireMap, wireMessage, wireMessages, wireString, wireStrings, writeSkeleton, type WireSchema } from './skeleton.ts';
import { AFFINITY_TERMS, EPHEMERAL_CLAIM_TEMPLATES, TEMPLATES, TERM, type ProtobufTemplates } from './pod-spec.ts';
import { LABEL_SELECTOR, SKELETON_ROWS } from './kind-schemas.ts';
import { MANAGED_FIELDS_API_VERSION, META, NAMESPACE_NAME_LABEL_BYTES, OWNER, TENANT_LABEL_BYTES } from './object-meta.ts';

// ---- judging: an object found not to be the tenant's anywhere deep in it ----

/** Thrown from deep in a rewrite (visitors of rewriteAt) when the object is not the tenant's; caught at the object. */
class NotTheTenants {}
const NOT_THE_TENANTS = new NotTheTenants();
function notTheTenants(): never {
  throw NOT_THE_TENANTS;
}

/**
 * A malformed answer of the upstream is the upstream's fault (502), never the client's: the 400 (malformed) and 415
 * (a contentEncoding, a rule's output that cannot be written) the wire machinery of to-upstream.ts throws for bodies.
 */
export function fromUpstream<T>(convert: () => T): T {
  try {
    return convert();
  } catch (error) {
    if (error instanceof StatusError && error.code >= 400 && error.code < 500) {
      throw badGateway(`the upstream's protobuf answer cannot be converted: ${error.message.replace(/^the protobuf request body is malformed: /, '')}`);
    }
    throw error;
  }
}

// ---- metadata (the generic rule, rules/generic.ts) ----

const TENANT_LABEL_FIELD = Buffer.from('f:' + TENANT_LABEL);
/** The tenant label as a key of a field set, and its compact value. */
const TENANT_LABEL_KEY = Buffer.from(`"f:${TENANT_LABEL}":{}`);
const COMMA = 0x2c;
const OPEN = 0x7b;
const CLOSE = 0x7d;

/** The tenant label's field in field sets: a few hundred bytes of JSON each, searched in place (SkipSearch). */
const TENANT_LABEL_FIELD_SEARCH = new SkipSearch(TENANT_LABEL_FIELD);
const QUOTE = 0x22;
/** What follows the field in its key: `":{}`. */
const TENANT_LABEL_KEY_END = TENANT_LABEL_KEY.subarray(1 + TENANT_LABEL_FIELD.length);

/** Forgets the buffer the searches last read: call before its bytes may change, or to let it go. */
export function forgetSearchedBuffer(): void {
  AFFINITY_TAG_SEARCH.forget();
  EPHEMERAL_TAG_SEARCH.forget();
}

/** The offsets fieldSetCuts found, written over from the start each call (no allocation once grown): read them first. */
const FIELD_SET_CUTS: number[] = [];

/**
 * Where a field set (compact JSON, as the apiserver writes it) at bytes[from, to) has its `"f:kubezoo.io/tenant":{}`
 * members from `searchFrom` on, as pairs of offsets of `bytes` to cut (each with its comma) in FIELD_SET_CUTS: their
 * count, or -1 when one is not between a comma and another member (the set it empties goes too, as managed-fields.ts
 * forgets it: then the set is parsed) or the bytes are not of that shape.
 */
function fieldSetCuts(bytes: Buffer, from: number, to: number, searchFrom = from): number {
  const cuts = FIELD_SET_CUTS;
  let count = 0;
  const search = TENANT_LABEL_FIELD_SEARCH;
  // Each member is the field between a quote and `":{}`: the field's occurrences wholly inside [searchFrom + 1, to - 4).
  const fieldTo = to - TENANT_LABEL_KEY_END.length;
  for (let field = search.indexIn(bytes, searchFrom + 1, fieldTo); field !== -1; field = search.indexIn(bytes, field + 1, fieldTo)) {
    const at = field - 1;
    const end = at + TENANT_LABEL_KEY.length;
    if (bytes[at] !== QUOTE || !rangeEquals(bytes, end - TENANT_LABEL_KEY_END.length, end, TENANT_LABEL_KEY_END)) continue;
    const before = at > from ? bytes[at - 1] : -1;
    const after = end < to ? bytes[end] : -1;
    if (before === COMMA && (after === COMMA || after === CLOSE)) {
      cuts[count++] = at - 1;
      cuts[count++] = end;
    } else if (before === OPEN && after === COMMA) {
      cuts[count++] = at;
      cuts[count++] = end + 1;
    } else return -1;
    if (count > 2 && cuts[count - 2]! < cuts[count - 3]!) return -1;
  }
  return count;
}

/** A field set without its `"f:kubezoo.io/tenant":{}` members (fieldSetCuts), or null. */
function fieldSetWithoutTenantLabel(set: Buffer): Buffer | null {
  const count = fieldSetCuts(set, 0, set.length);
  if (count === -1) return null;
  const cuts = FIELD_SET_CUTS;
  const parts: Buffer[] = [];
  let from = 0;
  for (let k = 0; k < count; k += 2) {
    parts.push(set.subarray(from, cuts[k]));
    from = cuts[k + 1]!;
  }
  parts.push(set.subarray(from));
  return Buffer.concat(parts);
}

/** The same through managed-fields.ts, for field sets of any shape. */
function parsedFieldSetWithoutTenantLabel(text: string, tenant: TenantId): Buffer {
  let set: unknown;
  try {
    set = JSON.parse(text);
  } catch {
    throw badGateway("the upstream's protobuf answer is malformed: a managedFields entry's fieldsV1 is not JSON");
  }
  managedFieldsToTenant({ managedFields: [{ fieldsV1: set }] }, tenant);
  return Buffer.from(JSON.stringify(set));
}
/** FieldsV1 { raw = 1 }: a managedFields entry's field set, itself JSON. */
const MANAGED_FIELDS_FIELDS_V1 = 7;

/** Removes the tenant label entry from a map<string, string> field; another tenant's label: not the tenant's. */
function removeTenantEntryWire(edit: MessageEdit, number: number, name: string, tenant: TenantId): void {
  for (const field of edit.all(number, name)) {
    const payload = edit.payload(field);
    if (keyIsNot(payload, TENANT_LABEL_BYTES)) continue;
    const entry = new MessageEdit(payload, `${edit.what}.${name}`);
    const key = entry.single(1, 'key');
    if (key === undefined || !entry.payload(key).equals(TENANT_LABEL_BYTES)) continue;
    if (entry.stringOf(2, 'value') !== tenant) notTheTenants();
    edit.remove(field);
  }
}

/**
 * True when a map entry surely has another key than `key`: it starts with its key (field 1) of a one-byte length, as
 * encoders write entries, and that key differs. False when it might be `key` (then the entry is parsed).
 */
function keyIsNot(entry: Buffer, key: Buffer): boolean {
  if (entry.length < 2 || entry[0] !== 0x0a || entry[1]! >= 0x80 || entry[1]! + 2 > entry.length) return false;
  const length = entry[1]!;
  return length !== key.length || entry.compare(key, 0, key.length, 2, 2 + length) !== 0;
}

function ownerReferencesToTenantWire(edit: MessageEdit, ctx: ConvertContext): void {
  const fields = edit.all(META.ownerReferences, 'ownerReferences');
  if (fields.length === 0) return;
  const entries = fields.map((field) => new MessageEdit(edit.payload(field), `${edit.what}.ownerReferences`));
  const before = entries.map((entry) => readStrings(entry, OWNER));
  const after: Json[] = before.map((owner) => ({ ...owner }));
  if (!ownerReferencesToTenant({ ownerReferences: after }, ctx)) notTheTenants();
  entries.forEach((entry, i) => {
    writeStrings(entry, OWNER, before[i]!, after[i]!);
    edit.replaceMessage(fields[i]!, entry);
  });
}

/** managedFields: apiVersions of the tenant's groups, and the tenant label's fields forgotten (managed-fields.ts). */
function managedFieldsToTenantWire(edit: MessageEdit, tenant: TenantId): void {
  for (const field of edit.all(META.managedFields, 'managedFields')) {
    edit.rewrite(field, (payload) => {
      const entry = new MessageEdit(payload, `${edit.what}.managedFields`);
      const apiVersionField = entry.single(MANAGED_FIELDS_API_VERSION, 'apiVersion');
      if (apiVersionField !== undefined) {
        const apiVersion = entry.string(apiVersionField, 'apiVersion');
        const mine = apiVersionToTenant(apiVersion, tenant) ?? apiVersion;
        if (mine !== apiVersion) entry.replaceString(apiVersionField, mine);
      }
      const fieldsV1 = entry.single(MANAGED_FIELDS_FIELDS_V1, 'fieldsV1');
      if (fieldsV1 !== undefined && entry.payload(fieldsV1).includes(TENANT_LABEL_FIELD)) {
        entry.rewrite(fieldsV1, (fields) => {
          const holder = new MessageEdit(fields, `${entry.what}.fieldsV1`);
          const raw = holder.single(1, 'raw');
          if (raw === undefined) return fields;
          holder.replace(raw, fieldSetWithoutTenantLabel(holder.payload(raw)) ?? parsedFieldSetWithoutTenantLabel(holder.string(raw, 'fieldsV1'), tenant));
          return holder.finish();
        });
      }
      return entry.finish();
    });
  }
}

/** The object's own metadata as the generic rule (and the namespace rule's label) leaves it, as an edit; throws when not the tenant's. */
function objectMetaToTenant(meta: Buffer, row: KindRow, ctx: ConvertContext): MessageEdit {
  const { tenant } = ctx;
  const edit = new MessageEdit(meta, 'metadata');
  if (row.scope === 'Namespaced') {
    const field = edit.single(META.namespace, 'namespace');
    const namespace = edit.string(field, 'namespace');
    if (field !== undefined && namespace !== '') edit.replaceString(field, namespaceToTenant(namespace, tenant) ?? notTheTenants());
  } else {
    const mapping = nameMappingOfRow(row);
    const field = edit.single(META.name, 'name');
    const name = edit.string(field, 'name');
    if (field !== undefined && name !== '') edit.replaceString(field, nameToTenant(mapping, name, tenant) ?? notTheTenants());
    const generateNameField = edit.single(META.generateName, 'generateName');
    const generateName = edit.string(generateNameField, 'generateName');
    if (generateNameField !== undefined && generateName !== '' && mapping === 'prefix') {
      const mine = toTenantName(generateName, tenant);
      if (mine !== null) edit.replaceString(generateNameField, mine);
    }
  }
  removeTenantEntryWire(edit, META.labels, 'labels', tenant);
  if (row.rule === 'namespace') namespaceNameLabelToTenant(edit, tenant);
  ownerReferencesToTenantWire(edit, ctx);
  managedFieldsToTenantWire(edit, tenant);
  return edit;
}

/** A Namespace's `kubernetes.io/metadata.name` label follows its name (rules/namespace.ts). */
function namespaceNameLabelToTenant(edit: MessageEdit, tenant: TenantId): void {
  for (const field of edit.all(META.labels, 'labels')) {
    if (keyIsNot(edit.payload(field), NAMESPACE_NAME_LABEL_BYTES)) continue;
    const entry = new MessageEdit(edit.payload(field), `${edit.what}.labels`);
    const key = entry.single(1, 'key');
    if (key === undefined || !entry.payload(key).equals(NAMESPACE_NAME_LABEL_BYTES)) continue;
    const value = entry.stringOf(2, 'value');
    if (value !== '') edit.replace(field, stringEntry(NAMESPACE_NAME_LABEL_BYTES.toString(), namespaceToTenant(value, tenant) ?? notTheTenants()));
  }
}

/**
 * Status conditions whose messages the generic rule strips of the tenant's prefixes, by `<group>/<kind>`: the object's
 * status field, its conditions field, a condition's message field (k8s.io/api, apiextensions generated.proto v0.36,
 * checked by the unit test); null for a kind without conditions. A kind of neither kind is answered in JSON.
 */
export const STATUS_CONDITIONS: ReadonlyMap<string, readonly [status: number, conditions: number, message: number] | null> = new Map([
  ['/Namespace', [3, 2, 6]],
  ['/Pod', [3, 2, 6]],
  ['/PersistentVolumeClaim', [3, 4, 6]],
  ['/ReplicationController', [3, 6, 5]],
  ['/Service', [3, 2, 6]],
  ['apps/Deployment', [3, 6, 5]],
  ['apps/ReplicaSet', [3, 6, 5]],
  ['apps/DaemonSet', [3, 10, 5]],
  ['apps/StatefulSet', [3, 10, 5]],
  ['batch/Job', [3, 1, 6]],
  ['admissionregistration.k8s.io/ValidatingAdmissionPolicy', [3, 3, 6]],
  ['certificates.k8s.io/CertificateSigningRequest', [3, 1, 3]],
  ['apiextensions.k8s.io/CustomResourceDefinition', [3, 1, 5]],
  ['policy/PodDisruptionBudget', [3, 7, 6]],
  ...(
    [
      '/ConfigMap',
      '/Secret',
      '/ServiceAccount',
      '/LimitRange',
      '/PodTemplate',
      '/Endpoints',
      '/Event',
      '/PersistentVolume',
      '/ResourceQuota',
      'apps/ControllerRevision',
      'batch/CronJob',
      'discovery.k8s.io/EndpointSlice',
      'events.k8s.io/Event',
      'networking.k8s.io/NetworkPolicy',
      'networking.k8s.io/Ingress',
      'rbac.authorization.k8s.io/Role',
      'rbac.authorization.k8s.io/ClusterRole',
      'rbac.authorization.k8s.io/RoleBinding',
      'admissionregistration.k8s.io/ValidatingWebhookConfiguration',
      'admissionregistration.k8s.io/MutatingWebhookConfiguration',
      'admissionregistration.k8s.io/MutatingAdmissionPolicy',
      'admissionregistration.k8s.io/ValidatingAdmissionPolicyBinding',
      'admissionregistration.k8s.io/MutatingAdmissionPolicyBinding',
      'resource.k8s.io/ResourceClaimTemplate',
      'resource.k8s.io/ResourceClaim',
      'coordination.k8s.io/Lease',
    ] as const
  ).map((key) => [key, null] as const),
]);

/** A status message's conditions (`path`: see STATUS_CONDITIONS) with their messages stripped of the tenant's prefixes. */
function conditionMessagesToTenant(status: Buffer, path: readonly [number, number, number], tenant: TenantId): Buffer {
  const [, conditions, message] = path;
  return rewriteAt(status, [conditions, '*'], 'status', (condition) => {
    const edit = new MessageEdit(condition, 'status.conditions');
    const field = edit.single(message, 'message');
    const text = edit.string(field, 'message');
    if (field === undefined || text === '') return condition;
    const mine = stripTenantPrefixes(text, tenant);
    if (mine !== text) edit.replaceString(field, mine);
    return edit.finish();
  });
}

// ---- pod specs and templates (rules/workloads.ts) ----

/** Removes the tenant label from a template's metadata (metadata = 1), and the metadata once nothing else is in it. */
function unlabelTemplate(template: Buffer, tenant: TenantId, what: string): Buffer {
  const edit = new MessageEdit(template, what);
  const meta = edit.single(1, 'metadata');
  if (meta === undefined) return template;
  const metaEdit = new MessageEdit(edit.payload(meta), `${what}.metadata`);
  removeTenantEntryWire(metaEdit, META.labels, 'labels', tenant);
  const rewritten = metaEdit.finish();
  if (rewritten.length === 0) edit.remove(meta);
  else if (rewritten !== metaEdit.bytes) edit.replace(meta, rewritten);
  return edit.finish();
}

function namespaceSelectorToTenantWire(selector: Buffer, tenant: TenantId): Buffer {
  const json = readSkeleton(selector, LABEL_SELECTOR, 'namespaceSelector');
  if (!namespaceSelectorToTenant(json, tenant)) notTheTenants();
  return writeSkeleton(selector, LABEL_SELECTOR, json, 'namespaceSelector');
}

function affinityTermToTenant(term: Buffer, tenant: TenantId): Buffer {
  const edit = new MessageEdit(term, 'pod affinity term');
  for (const field of edit.all(TERM.namespaces, 'namespaces')) {
    const namespace = edit.string(field, 'namespaces');
    const mine = namespaceToTenant(namespace, tenant) ?? notTheTenants();
    if (mine !== namespace) edit.replaceString(field, mine);
  }
  const selector = edit.single(TERM.namespaceSelector, 'namespaceSelector');
  if (selector !== undefined) edit.rewrite(selector, (payload) => namespaceSelectorToTenantWire(payload, tenant));
  return edit.finish();
}

/** Paths below PodSpec.affinity (18) and below one Volume (volumes = 1): the spec is parsed once, not once per path. */
const AFFINITY_TERMS_IN_AFFINITY = AFFINITY_TERMS.map((path) => path.slice(1));
const EPHEMERAL_CLAIM_TEMPLATE_IN_VOLUME = EPHEMERAL_CLAIM_TEMPLATES.slice(2);
/** The tag of PodSpec.affinity (18, length-delimited): a spec without these bytes has no affinity. */
const AFFINITY_TAG = Buffer.from([(18 * 8 + LENGTH_DELIMITED) | 0x80, 1]);
/** The tag of VolumeSource.ephemeral (29, length-delimited): a volume without these bytes has none. */
const EPHEMERAL_TAG = Buffer.from([(29 * 8 + LENGTH_DELIMITED) | 0x80, 1]);

/** The tag of PodSpec.priorityClassName (24, length-delimited): a spec without these bytes names no class. */
const PRIORITY_CLASS_TAG = Buffer.from([(24 * 8 + LENGTH_DELIMITED) | 0x80, 1]);
const PRIORITY_CLASS_NAME = 24;

/** The same tags searched in the fast path's buffers (their first bytes, not ASCII, are rare: see ForwardSearch). */
const AFFINITY_TAG_SEARCH = new ForwardSearch(AFFINITY_TAG);
const EPHEMERAL_TAG_SEARCH = new ForwardSearch(EPHEMERAL_TAG);
const PRIORITY_CLASS_TAG_SEARCH = new ForwardSearch(PRIORITY_CLASS_TAG);

function podSpecToTenant(spec: Buffer, tenant: TenantId): Buffer {
  // Most pods have none of them: their spec (containers and all) is not parsed at all.
  if (!spec.includes(AFFINITY_TAG) && !spec.includes(EPHEMERAL_TAG) && !spec.includes(PRIORITY_CLASS_TAG)) return spec;
  const edit = new MessageEdit(spec, 'pod spec');
  // The tenant's own priority class (rules/priority-classes.ts) without its prefix; the platform's as it is.
  const priorityClass = edit.single(PRIORITY_CLASS_NAME, 'priorityClassName');
  if (priorityClass !== undefined) {
    const name = edit.string(priorityClass, 'priorityClassName');
    const mine = priorityClassNameToTenant(name, tenant);
    if (mine !== name) edit.replaceString(priorityClass, mine);
  }
  const affinity = edit.single(18, 'affinity');
  if (affinity !== undefined) {
    edit.rewrite(affinity, (payload) => {
      let result = payload;
      for (const path of AFFINITY_TERMS_IN_AFFINITY) result = rewriteAt(result, path, 'pod spec', (term) => affinityTermToTenant(term, tenant));
      return result;
    });
  }
  for (const volume of edit.all(1, 'volumes')) {
    if (!edit.payload(volume).includes(EPHEMERAL_TAG)) continue; // no VolumeSource.ephemeral (29) in it
    edit.rewrite(volume, (payload) =>
      rewriteAt(payload, EPHEMERAL_CLAIM_TEMPLATE_IN_VOLUME, 'pod spec', (template) => unlabelTemplate(template, tenant, 'volumeClaimTemplate')),
    );
  }
  return edit.finish();
}

/** The templates and pod specs of `templates` in the object's field 2 (every path starts there). */
function templatesToTenant(spec: Buffer, templates: ProtobufTemplates, tenant: TenantId): Buffer {
  let result = spec;
  for (const path of templates.labelled) result = rewriteAt(result, path.slice(1), 'object', (template) => unlabelTemplate(template, tenant, 'template'));
  for (const path of templates.podSpecs) result = rewriteAt(result, path.slice(1), 'object', (podSpec) => podSpecToTenant(podSpec, tenant));
  return result;
}

// ---- every other kind: the fields its JSON rule's toTenant reads, as a skeleton mapped by the rule itself ----

/** rbac/v1 PolicyRule apiGroups = 2, resources = 3, resourceNames = 4; ClusterRole aggregationRule = 3 → clusterRoleSelectors = 1. */
const ROLE: WireSchema = {
  metadata: wireMessage(1, { labels: wireMap(META.labels) }),
  rules: wireMessages(2, { apiGroups: wireStrings(2), resources: wireStrings(3), resourceNames: wireStrings(4) }),
};
const CLUSTER_ROLE: WireSchema = { ...ROLE, aggregationRule: wireMessage(3, { clusterRoleSelectors: wireMessages(1, LABEL_SELECTOR) }) };
/** RoleBinding: subjects = 2 (kind = 1, apiGroup = 2, name = 3, namespace = 4), roleRef = 3 (apiGroup = 1, kind = 2, name = 3). */
const BINDING: WireSchema = {
  metadata: wireMessage(1, { name: wireString(META.name) }),
  subjects: wireMessages(2, { kind: wireString(1), apiGroup: wireString(2), name: wireString(3), namespace: wireString(4) }),
  roleRef: wireMessage(3, { apiGroup: wireString(1), kind: wireString(2), name: wireString(3) }),
};
/** What toTenant reads beyond what toUpstream maps: event texts (core message = 4, events.k8s.io note = 10), a CSR's extra (spec = 2 → extra = 6). */
const TENANT_ONLY_FIELDS: ReadonlyMap<string, (schema: WireSchema) => WireSchema> = new Map<string, (schema: WireSchema) => WireSchema>([
  ['/Event', (schema: WireSchema) => ({ ...schema, message: wireString(4) })],
  ['events.k8s.io/Event', (schema: WireSchema) => ({ ...schema, note: wireString(10) })],
  [
    'certificates.k8s.io/CertificateSigningRequest',
    (schema: WireSchema) => {
      const spec = schema.spec!;
      if (spec.type !== 'message') throw new TypeError('a CSR spec is a message');
      return { ...schema, spec: wireMessage(spec.number, { ...spec.schema, extra: wireKeyed(6) }) };
    },
  ],
]);

/** Kinds beyond metadata and templates, by `<group>/<kind>`: the rule and the skeleton it reads. */
const SKELETONS: ReadonlyMap<string, { readonly rule: KindRule; readonly schema: WireSchema }> = new Map([
  ...SKELETON_ROWS.map(([key, , rule, schema]) => [key, { rule, schema: TENANT_ONLY_FIELDS.get(key)?.(schema) ?? schema }] as const),
  ['rbac.authorization.k8s.io/Role', { rule: RULES.role, schema: ROLE }],
  ['rbac.authorization.k8s.io/ClusterRole', { rule: RULES.role, schema: CLUSTER_ROLE }],
  ['rbac.authorization.k8s.io/RoleBinding', { rule: RULES.binding, schema: BINDING }],
]);

/** Rules that touch nothing but metadata (and status condition messages). */
const METADATA_RULES = new Set(['generic', 'namespace']);

const keyOf = (row: KindRow) => `${row.group}/${row.kind}`;

/** The one version of each tenant kind converted here: its group's v1 (the .proto the unit test reads for it). */
function convertedApiVersion(row: KindRow): string {
  return row.group === '' ? 'v1' : `${row.group}/v1`;
}

/**
 * Whether the tenant view of `row`'s objects in `apiVersion` is made here: shared kinds read as they are (any
 * version), and the tenant's built-in kinds in the version whose every converted field has known field numbers.
 * Others (reviews, nodes, APIServices, custom resources, other versions) are answered in JSON: ask the upstream for
 * protobuf only when this is true.
 */
export function protobufResponseSupported(row: KindRow, apiVersion: string): boolean {
  // Kept upstream as custom resources (the table's upstreamGroup): the upstream answers them in JSON only.
  if (row.tenancy === 'hidden' || row.upstreamGroup !== undefined) return false;
  // (The platform's class kinds are filtered per tenant by their names: answered in JSON, where objectToTenant runs.)
  if (row.tenancy === 'shared-read-only') return row.rule === 'shared' && !PLATFORM_CLASS_RESOURCES.has(row.resource);
  const key = keyOf(row);
  if (!STATUS_CONDITIONS.has(key) || apiVersion !== convertedApiVersion(row)) return false;
  return METADATA_RULES.has(row.rule) || SKELETONS.has(key) || TEMPLATES.has(key);
}

/** 502 unless protobufResponseSupported: the field numbers would be another version's. */
export function checkSupported(row: KindRow, apiVersion: string): void {
  if (!protobufResponseSupported(row, apiVersion)) {
    throw badGateway(`tenantgate does not convert ${row.kind || row.resource} ${apiVersion} objects from protobuf; they are asked for as JSON`);
  }
}

/** The tenant view of an object as pieces in order (the object itself when unchanged); throws NOT_THE_TENANTS. */
function objectToTenantParts(raw: Buffer, row: KindRow, ctx: ConvertContext): Buffer[] {
  if (row.tenancy === 'shared-read-only') return [raw]; // the shared rule: read as it is
  const key = keyOf(row);
  const { tenant } = ctx;
  // The generic rule first, then the kind's own: the order of objectToTenant (a CRD's rule reads its tenant name).
  const edit = new MessageEdit(raw, 'object');
  const meta = edit.single(1, 'metadata');
  if (meta !== undefined) {
    const metaEdit = objectMetaToTenant(edit.payload(meta), row, ctx);
    if (metaEdit.changed) {
      const parts = metaEdit.finishParts();
      if (parts.every((part) => part.length === 0))
        edit.remove(meta); // a review's metadata held nothing but the label
      else edit.replaceParts(meta, parts);
    }
  }
  const conditions = STATUS_CONDITIONS.get(key);
  if (conditions != null) {
    const status = edit.single(conditions[0], 'status');
    if (status !== undefined && edit.payload(status).includes(tenant))
      edit.rewrite(status, (payload) => conditionMessagesToTenant(payload, conditions, tenant));
  }
  const templates = SKELETONS.has(key) ? undefined : TEMPLATES.get(key);
  if (templates !== undefined) {
    // Every template and pod spec is under the object's field 2 (spec, or a PodTemplate's template): one edit for all.
    const spec = edit.single(2, 'spec');
    if (spec !== undefined) edit.rewrite(spec, (payload) => templatesToTenant(payload, templates, tenant));
  }
  const skeleton = SKELETONS.get(key);
  if (skeleton === undefined) return edit.finishParts();
  const result = edit.finish();
  const json = readSkeleton(result, skeleton.schema, 'object');
  if (skeleton.rule.toTenant(json, ctx) === null) notTheTenants();
  return [writeSkeleton(result, skeleton.schema, json, 'object')];
}

/**
 * The tenant's view of one upstream object's message (the `raw` of its runtime.Unknown envelope), or null when the
 * object (or anything it refers to) is not the tenant's: exactly what objectToTenant decides and makes of it. Untouched
 * fields are copied byte for byte; the very same Buffer comes back when nothing changed. `apiVersion`: the object's
 * (its envelope's, or its list's). Throws a StatusError: 502 for malformed bytes or what protobufResponseSupported refuses.
 */
export function protobufObjectToTenant(raw: Buffer, row: KindRow, ctx: ConvertContext, apiVersion: string): Buffer | null {
  checkSupported(row, apiVersion);
  const parts = objectPartsToTenant(raw, row, ctx);
  return parts === null ? null : parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}

/** protobufObjectToTenant as pieces (for lists, which write them on as they are); the kind is known to be supported. */
export function objectPartsToTenant(raw: Buffer, row: KindRow, ctx: ConvertContext): Buffer[] | null {
  try {
    return fromUpstream(() => objectToTenantParts(raw, row, ctx));
  } catch (error) {
    if (error === NOT_THE_TENANTS) return null;
    throw error;
  }
}

// ---- the common object, fast: its tenant view as splices of its bytes (splice.ts) ----

/** What objectSplices returns instead of a length change: the object is not the tenant's; ask objectPartsToTenant. */
export const NOT_THE_TENANTS_OBJECT = -0x7fffffff;
export const CAREFUL_PATH = 0x7fffffff;

/** How objectSplices treats a kind's objects: built once per list or watch. */
export interface FastView {
  readonly ctx: ConvertContext;
  readonly tenant: Buffer;
  /** A shared kind: its objects are read as they are. */
  readonly shared: boolean;
  /** The status field, its conditions and a condition's message (STATUS_CONDITIONS); null: none. */
  readonly status: readonly [status: number, conditions: number, message: number] | null;
  /** Field 2 is a PodSpec (a Pod). */
  readonly podSpec: boolean;
  /** Owner kinds seen that the tenant view leaves as they are (isPlainOwner): apiVersion and kind, pair after pair. */
  readonly plainOwners: Buffer[];
}

/**
 * The fast view of `row`'s objects: shared kinds, and the tenant's namespaced kinds whose rule touches only metadata
 * and status condition messages, or a pod's spec; null for every other kind (converted by objectPartsToTenant).
 */
export function fastViewOf(row: KindRow, ctx: ConvertContext): FastView | null {
  const tenant = Buffer.from(ctx.tenant);
  if (row.tenancy === 'shared-read-only') return { ctx, tenant, shared: true, status: null, podSpec: false, plainOwners: [] };
  const key = keyOf(row);
  if (row.scope !== 'Namespaced' || row.rule === 'namespace' || SKELETONS.has(key) || !STATUS_CONDITIONS.has(key)) return null;
  const templates = TEMPLATES.get(key);
  const podSpec = templates !== undefined && templates.labelled.length === 0 && templates.podSpecs.length === 1 && templates.podSpecs[0]!.join() === '2';
  if (templates !== undefined && !podSpec) return null;
  return { ctx, tenant, shared: false, status: STATUS_CONDITIONS.get(key) ?? null, podSpec, plainOwners: [] };
}

const OWNER_NUMBERS = [OWNER.kind, OWNER.name, OWNER.apiVersion] as const;
const OBJECT_FIELDS = new FieldScan();
const META_FIELDS = new FieldScan();
const ENTRY_FIELDS = new FieldScan();
const HOLDER_FIELDS = new FieldScan();
const STATUS_FIELDS = new FieldScan();
const CONDITION_FIELDS = new FieldScan();
const SPEC_FIELDS = new FieldScan();
const VOLUME_FIELDS = new FieldScan();
const VOLUME_SOURCE_FIELDS = new FieldScan();

/**
 * The tenant view of the object at bytes[from, to) as splices added to `splices`, returning how much longer it gets
 * (negative: shorter); NOT_THE_TENANTS_OBJECT when it is not the tenant's; CAREFUL_PATH for anything this does not
 * read exactly as objectPartsToTenant would (a malformed or unusual message, a rule that would change more): then
 * objectPartsToTenant decides, with the splices added since discarded by the caller. Same bytes as objectPartsToTenant.
 */
export function objectSplices(bytes: Buffer, from: number, to: number, view: FastView, splices: Splices): number {
  if (view.shared) return 0;
  const object = OBJECT_FIELDS;
  if (!object.scan(bytes, from, to)) return CAREFUL_PATH;
  // In objectToTenantParts' order: metadata, status conditions, the pod spec.
  const meta = object.single(1);
  if (meta === ANOMALY) return CAREFUL_PATH;
  let delta = 0;
  if (meta >= 0) {
    delta = metaSplices(bytes, object.start[meta]!, object.valueStart[meta]!, object.end[meta]!, view, splices);
    if (delta === CAREFUL_PATH || delta === NOT_THE_TENANTS_OBJECT) return delta;
  }
  if (view.status !== null) {
    const status = object.single(view.status[0]);
    if (status === ANOMALY) return CAREFUL_PATH;
    if (status >= 0) {
      const statusFrom = object.valueStart[status]!;
      const statusTo = object.end[status]!;
      // A walk of the conditions' messages rather than a search of the whole status for the tenant (what
      // objectToTenantParts checks first): measured faster, allocates no view, and goes careful at least as often.
      if (statusNeedsCare(bytes, statusFrom, statusTo, view.status, view.tenant)) return CAREFUL_PATH;
    }
  }
  if (view.podSpec) {
    const spec = object.single(2);
    if (spec === ANOMALY) return CAREFUL_PATH;
    if (spec >= 0) {
      const specFrom = object.valueStart[spec]!;
      const specTo = object.end[spec]!;
      // podSpecToTenant's own test first: a spec without either tag's bytes is left as it is. One that has them
      // (a length of 146 or 234 will do) is walked: most are still left as they are.
      const hasTags =
        AFFINITY_TAG_SEARCH.indexIn(bytes, specFrom, specTo) !== -1 ||
        EPHEMERAL_TAG_SEARCH.indexIn(bytes, specFrom, specTo) !== -1 ||
        PRIORITY_CLASS_TAG_SEARCH.indexIn(bytes, specFrom, specTo) !== -1;
      if (hasTags && podSpecNeedsCare(bytes, specFrom, specTo, view.tenant)) return CAREFUL_PATH;
    }
  }
  return delta;
}

/**
 * Whether a status could have a condition message naming the tenant (what conditionMessagesToTenant rewrites), or is
 * read differently by it: then the careful path converts it. Reads the fields instead of searching all its bytes.
 */
function statusNeedsCare(bytes: Buffer, from: number, to: number, path: readonly [number, number, number], tenant: Buffer): boolean {
  const status = STATUS_FIELDS;
  const conditions = path[1];
  const message = path[2];
  if (!status.scan(bytes, from, to) || !status.allDelimited(conditions)) return true;
  const condition = CONDITION_FIELDS;
  for (let i = 0; i < status.count; i++) {
    if (status.number[i] !== conditions) continue;
    if (!condition.scan(bytes, status.valueStart[i]!, status.end[i]!)) return true;
    const field = condition.single(message);
    if (field === ANOMALY) return true;
    if (field < 0) continue;
    const messageFrom = condition.valueStart[field]!;
    const messageTo = condition.end[field]!;
    if (!isAsciiRange(bytes, messageFrom, messageTo) || rangeIncludes(bytes, tenant, messageFrom, messageTo)) return true;
  }
  return false;
}

/**
 * Whether a pod spec has an affinity (18), a volume with an ephemeral source (volumes = 1 → volumeSource = 2 →
 * ephemeral = 29) or a priority class (24) naming the tenant, what podSpecToTenant rewrites, or is read differently
 * by it: then the careful path converts it.
 */
function podSpecNeedsCare(bytes: Buffer, from: number, to: number, tenant: Buffer): boolean {
  const spec = SPEC_FIELDS;
  if (!spec.scan(bytes, from, to) || spec.single(18) !== -1 || !spec.allDelimited(1)) return true;
  // A priority class of the tenant's own (`<id>-<name>`), or one not read as ASCII.
  const priorityClass = spec.single(PRIORITY_CLASS_NAME);
  if (priorityClass === ANOMALY) return true;
  if (priorityClass >= 0) {
    const nameFrom = spec.valueStart[priorityClass]!;
    const nameTo = spec.end[priorityClass]!;
    if (!isAsciiRange(bytes, nameFrom, nameTo) || rangeIncludes(bytes, tenant, nameFrom, nameTo)) return true;
  }
  const volume = VOLUME_FIELDS;
  for (let i = 0; i < spec.count; i++) {
    if (spec.number[i] !== 1) continue;
    if (!volume.scan(bytes, spec.valueStart[i]!, spec.end[i]!)) return true;
    const source = volume.single(2);
    if (source === ANOMALY) return true;
    if (source < 0) continue;
    if (!VOLUME_SOURCE_FIELDS.scan(bytes, volume.valueStart[source]!, volume.end[source]!) || VOLUME_SOURCE_FIELDS.single(29) !== -1) return true;
  }
  return false;
}

/** A string field of `fields` ('' when absent), or undefined when it is not ASCII (the careful path decodes it). */
function asciiString(bytes: Buffer, fields: FieldScan, index: number): string | undefined {
  if (index < 0) return '';
  const from = fields.valueStart[index]!;
  const to = fields.end[index]!;
  return isAsciiRange(bytes, from, to) ? bytes.toString('latin1', from, to) : undefined;
}

/** objectMetaToTenant as splices (a namespaced kind); see objectSplices. */
function metaSplices(bytes: Buffer, start: number, valueStart: number, end: number, view: FastView, splices: Splices): number {
  const meta = META_FIELDS;
  if (!meta.scan(bytes, valueStart, end)) return CAREFUL_PATH;
  const { ctx } = view;
  // A placeholder for the metadata's own head, first of its splices (they stay in order).
  const mark = splices.count;
  splices.delete(start, start);
  let delta = 0;
  const namespace = meta.single(META.namespace);
  if (namespace === ANOMALY) return CAREFUL_PATH;
  if (namespace >= 0 && meta.end[namespace]! > meta.valueStart[namespace]!) {
    const fieldStart = meta.start[namespace]!;
    const textFrom = meta.valueStart[namespace]!;
    const textTo = meta.end[namespace]!;
    if (!isAsciiRange(bytes, textFrom, textTo)) return CAREFUL_PATH;
    if (view.tenant.length === PREFIX_LENGTH - 1) {
      // namespaceToTenant on the bytes (toTenantName: `<tenant>-` cut off), written as a new head and the prefix cut.
      const isTheTenants =
        textTo - textFrom > PREFIX_LENGTH &&
        bytes[textFrom + PREFIX_LENGTH - 1] === 0x2d &&
        rangeEquals(bytes, textFrom, textFrom + view.tenant.length, view.tenant);
      if (!isTheTenants) return NOT_THE_TENANTS_OBJECT;
      const length = textTo - textFrom - PREFIX_LENGTH;
      splices.head(fieldStart, textFrom, META.namespace, length);
      splices.delete(textFrom, textFrom + PREFIX_LENGTH);
      delta += headSize(META.namespace, length) + length - (textTo - fieldStart);
    } else {
      const mine = namespaceToTenant(bytes.toString('latin1', textFrom, textTo), ctx.tenant);
      if (mine === null) return NOT_THE_TENANTS_OBJECT;
      splices.stringField(fieldStart, textTo, META.namespace, mine);
      delta += headSize(META.namespace, mine.length) + mine.length - (textTo - fieldStart);
    }
  }
  const entry = ENTRY_FIELDS;
  // Labels: the tenant's label removed; another tenant's: not the tenant's.
  if (!meta.allDelimited(META.labels)) return CAREFUL_PATH;
  for (let i = 0; i < meta.count; i++) {
    if (meta.number[i] !== META.labels) continue;
    const from = meta.valueStart[i]!;
    const to = meta.end[i]!;
    if (keyIsNotAt(bytes, from, to, TENANT_LABEL_BYTES)) continue;
    if (!entry.scan(bytes, from, to)) return CAREFUL_PATH;
    const key = entry.single(1);
    if (key === ANOMALY) return CAREFUL_PATH;
    if (key < 0 || !rangeEquals(bytes, entry.valueStart[key]!, entry.end[key]!, TENANT_LABEL_BYTES)) continue;
    const value = entry.single(2);
    if (value === ANOMALY) return CAREFUL_PATH;
    if (value >= 0 && !isAsciiRange(bytes, entry.valueStart[value]!, entry.end[value]!)) return CAREFUL_PATH;
    if (value < 0 || !rangeEquals(bytes, entry.valueStart[value]!, entry.end[value]!, view.tenant)) return NOT_THE_TENANTS_OBJECT;
    splices.delete(meta.start[i]!, to);
    delta -= to - meta.start[i]!;
  }
  // Owner references: read, judged and mapped by the JSON rule; one it would change goes the careful path.
  if (!meta.allDelimited(META.ownerReferences)) return CAREFUL_PATH;
  let before: string[] | undefined;
  for (let i = 0; i < meta.count; i++) {
    if (meta.number[i] !== META.ownerReferences) continue;
    if (!entry.scan(bytes, meta.valueStart[i]!, meta.end[i]!)) return CAREFUL_PATH;
    if (isPlainOwner(bytes, entry, view)) continue; // as it is, and the tenant's, whatever its name
    before ??= [];
    for (const number of OWNER_NUMBERS) {
      const text = asciiString(bytes, entry, entry.single(number));
      if (text === undefined || entry.single(number) === ANOMALY) return CAREFUL_PATH;
      before.push(text);
    }
  }
  if (before !== undefined) {
    const after: Json[] = [];
    for (let k = 0; k < before.length; k += 3) after.push({ kind: before[k]!, name: before[k + 1]!, apiVersion: before[k + 2]! });
    if (!ownerReferencesToTenant({ ownerReferences: after }, ctx)) return NOT_THE_TENANTS_OBJECT;
    for (let k = 0; k < after.length; k++) {
      const owner = after[k]!;
      if (owner.kind !== before[3 * k] || owner.name !== before[3 * k + 1] || owner.apiVersion !== before[3 * k + 2]) return CAREFUL_PATH;
    }
  }
  // managedFields: apiVersions of the tenant's groups go the careful path; the tenant label's fields are cut out.
  if (!meta.allDelimited(META.managedFields)) return CAREFUL_PATH;
  const holder = HOLDER_FIELDS;
  for (let i = 0; i < meta.count; i++) {
    if (meta.number[i] !== META.managedFields) continue;
    const entryFrom = meta.valueStart[i]!;
    const entryTo = meta.end[i]!;
    if (!entry.scan(bytes, entryFrom, entryTo)) return CAREFUL_PATH;
    const apiVersionField = entry.single(MANAGED_FIELDS_API_VERSION);
    if (apiVersionField === ANOMALY) return CAREFUL_PATH;
    if (apiVersionField >= 0 && !isCoreApiVersion(bytes, entry.valueStart[apiVersionField]!, entry.end[apiVersionField]!)) {
      const apiVersion = asciiString(bytes, entry, apiVersionField);
      if (apiVersion === undefined || (apiVersionToTenant(apiVersion, ctx.tenant) ?? apiVersion) !== apiVersion) return CAREFUL_PATH;
    }
    const fieldsV1 = entry.single(MANAGED_FIELDS_FIELDS_V1);
    if (fieldsV1 === ANOMALY) return CAREFUL_PATH;
    if (fieldsV1 < 0) continue;
    const holderFrom = entry.valueStart[fieldsV1]!;
    const holderTo = entry.end[fieldsV1]!;
    const labelField = TENANT_LABEL_FIELD_SEARCH.indexIn(bytes, holderFrom, holderTo);
    if (labelField === -1) continue;
    if (!holder.scan(bytes, holderFrom, holderTo)) return CAREFUL_PATH;
    const raw = holder.single(1);
    if (raw === ANOMALY) return CAREFUL_PATH;
    if (raw < 0) continue;
    const rawFrom = holder.valueStart[raw]!;
    const rawTo = holder.end[raw]!;
    // No member of the tenant label starts before the first `f:kubezoo.io/tenant` (but for its quote).
    const count = fieldSetCuts(bytes, rawFrom, rawTo, Math.max(rawFrom, labelField - 1));
    if (count === -1) return CAREFUL_PATH;
    const cuts = FIELD_SET_CUTS;
    let cut = 0;
    for (let k = 0; k < count; k += 2) cut += cuts[k + 1]! - cuts[k]!;
    // Every head around the cut is written anew (minimal, as MessageEdit writes a replaced field's); splices in order.
    const rawLength = rawTo - rawFrom - cut;
    const holderLength = holderTo - holderFrom - (rawTo - holder.start[raw]!) + headSize(1, rawLength) + rawLength;
    const entryLength = entryTo - entryFrom - (holderTo - entry.start[fieldsV1]!) + headSize(MANAGED_FIELDS_FIELDS_V1, holderLength) + holderLength;
    splices.head(meta.start[i]!, entryFrom, META.managedFields, entryLength);
    splices.head(entry.start[fieldsV1]!, holderFrom, MANAGED_FIELDS_FIELDS_V1, holderLength);
    splices.head(holder.start[raw]!, rawFrom, 1, rawLength);
    for (let k = 0; k < count; k += 2) splices.delete(cuts[k]!, cuts[k + 1]!);
    delta += headSize(META.managedFields, entryLength) + entryLength - (entryTo - meta.start[i]!);
  }
  if (splices.count === mark + 1) {
    splices.truncate(mark);
    return 0;
  }
  const length = end - valueStart + delta;
  if (length === 0) {
    splices.truncate(mark);
    splices.delete(start, end);
    return start - end;
  }
  splices.setHead(mark, start, valueStart, 1, length);
  return headSize(1, length) + length - (end - start);
}

/**
 * Whether the owner reference `entry` is one ownerReferencesToTenant leaves as it is and judges the tenant's whatever
 * its name: an owner of a built-in group's kind whose name is not mapped ('plain', as a ReplicaSet's). Known kinds are
 * kept by the view (byte comparisons: no strings per owner); every other owner is read as strings by the caller.
 */
function isPlainOwner(bytes: Buffer, entry: FieldScan, view: FastView): boolean {
  const apiVersion = entry.single(OWNER.apiVersion);
  const kind = entry.single(OWNER.kind);
  const name = entry.single(OWNER.name);
  if (apiVersion < 0 || kind < 0 || name === ANOMALY) return false;
  if (name >= 0 && !isAsciiRange(bytes, entry.valueStart[name]!, entry.end[name]!)) return false;
  const apiVersionFrom = entry.valueStart[apiVersion]!;
  const apiVersionTo = entry.end[apiVersion]!;
  const kindFrom = entry.valueStart[kind]!;
  const kindTo = entry.end[kind]!;
  const known = view.plainOwners;
  for (let k = 0; k < known.length; k += 2) {
    if (rangeEquals(bytes, apiVersionFrom, apiVersionTo, known[k]!) && rangeEquals(bytes, kindFrom, kindTo, known[k + 1]!)) return true;
  }
  if (known.length >= 2 * MAX_PLAIN_OWNERS || !isAsciiRange(bytes, apiVersionFrom, apiVersionTo) || !isAsciiRange(bytes, kindFrom, kindTo)) return false;
  const apiVersionText = bytes.toString('latin1', apiVersionFrom, apiVersionTo);
  const kindText = bytes.toString('latin1', kindFrom, kindTo);
  if (apiVersionText === '' || kindText === '' || !isBuiltinGroup(groupOfApiVersion(apiVersionText))) return false;
  if (apiVersionToTenant(apiVersionText, view.ctx.tenant) !== apiVersionText) return false;
  if ((nameMappingOfKind(apiVersionText, kindText, view.ctx) ?? 'plain') !== 'plain') return false;
  known.push(Buffer.from(apiVersionText, 'latin1'), Buffer.from(kindText, 'latin1'));
  return true;
}

/** Owner kinds a view keeps (a list's owners are of a few kinds). */
const MAX_PLAIN_OWNERS = 8;

/** An ASCII apiVersion without a group (`v1`): every tenant reads it as it is (apiVersionToTenant). */
function isCoreApiVersion(bytes: Buffer, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (bytes[i] === 0x2f /* '/' */ || bytes[i]! >= 0x80) return false;
  return true;
}

/** keyIsNot on bytes[from, to) of a larger buffer. */
function keyIsNotAt(bytes: Buffer, from: number, to: number, key: Buffer): boolean {
  if (to - from < 2 || bytes[from] !== 0x0a || bytes[from + 1]! >= 0x80 || bytes[from + 1]! + 2 > to - from) return false;
  return !rangeEquals(bytes, from + 2, from + 2 + bytes[from + 1]!, key);
}

// ---- the envelope, and Status ----

/** meta/v1 Status: message = 3, details = 5 → name = 1, group = 2, kind = 3, causes = 4 (message = 2, field = 3). */
const STATUS: WireSchema = {
  message: wireString(3),
  details: wireMessage(5, {
    name: wireString(1),
    group: wireString(2),
    kind: wireString(3),
    causes: wireMessages(4, { message: wireString(2), field: wireString(3) }),
  }),
};

/** The skeletons read at field numbers, by `<group>/<kind>` (and `Status`): what the unit test checks against generated.proto. */
export const RESPONSE_SCHEMAS: ReadonlyMap<string, WireSchema> = new Map([
  ...[...SKELETONS].map(([key, { schema }]) => [key, schema] as const),
  ['Status', STATUS],
]);

/** A Status message as the tenant reads it (status.ts's statusToTenant: names in its message and details unprefixed). */
function statusMessageToTenant(status: Buffer, tenant: TenantId, scope: StatusScope | undefined): Buffer {
  if (!status.includes(tenant)) return status;
  const json = readSkeleton(status, STATUS, 'Status');
  return writeSkeleton(status, STATUS, statusToTenant(json, tenant, scope) as Json, 'Status');
}

/** Replaces the envelope's raw by `converted` (the same body when unchanged). */
function withRaw(body: Buffer, envelope: ReturnType<typeof parseEnvelope>, raw: Buffer, converted: Buffer): Buffer {
  if (converted === raw) return body;
  const { edit, rawField } = envelope;
  if (rawField === undefined) edit.add(2, converted);
  else edit.replace(rawField, converted);
  return Buffer.concat([MAGIC, edit.finish()]);
}

/** The tenant's view of an upstream Status answer (`k8s\0` + runtime.Unknown of kind Status). */
export function protobufStatusToTenant(body: Buffer, tenant: TenantId, scope?: StatusScope): Buffer {
  return fromUpstream(() => {
    const envelope = parseEnvelope(body);
    const raw = envelope.rawField === undefined ? EMPTY : envelope.edit.payload(envelope.rawField);
    return withRaw(body, envelope, raw, statusMessageToTenant(raw, tenant, scope));
  });
}

/**
 * The tenant's view of a whole protobuf answer of one object (`k8s\0` + runtime.Unknown): a Status converted as
 * protobufStatusToTenant, an object of `row`'s kind as protobufObjectToTenant (null: not the tenant's, answered as the
 * JSON path answers it). The envelope's apiVersion and kind stay: built-in kinds keep theirs (custom resources are JSON).
 */
export function protobufBodyToTenant(body: Buffer, row: KindRow, ctx: ConvertContext, scope?: StatusScope): Buffer | null {
  const parts = bodyPartsToTenant(body, row, ctx, scope);
  return parts === null ? null : joined(parts);
}

export function joined(parts: readonly Buffer[]): Buffer {
  return parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}

/** protobufBodyToTenant in pieces: `[body]` when unchanged. */
export function bodyPartsToTenant(body: Buffer, row: KindRow, ctx: ConvertContext, scope: StatusScope | undefined): Buffer[] | null {
  const envelope = fromUpstream(() => parseEnvelope(body));
  if (envelope.kind === 'Status') return [protobufStatusToTenant(body, ctx.tenant, scope)];
  if (envelope.kind !== row.kind) throw badGateway(`the upstream answered a ${envelope.kind || 'message without a kind'} where ${row.kind} was asked for`);
  checkSupported(row, envelope.apiVersion);
  const { edit, rawField } = envelope;
  const raw = rawField === undefined ? EMPTY : edit.payload(rawField);
  const parts = objectPartsToTenant(raw, row, ctx);
  if (parts === null) return null;
  if (parts.length === 1 && parts[0] === raw) return [body];
  if (rawField === undefined) edit.add(2, joined(parts));
  else edit.replaceParts(rawField, parts);
  return [MAGIC, ...edit.finishParts()];
}

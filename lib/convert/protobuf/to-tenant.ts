// The tenant's view of the upstream's protobuf answers of one object or a Status, at the wire level as to-upstream.ts
// converts request bodies: what objectToTenant decides and makes of the object (lists and watches: streams.ts; the
// common object, fast: fast-view.ts; the rules: object-meta.ts, pod-spec.ts, kind-schemas.ts).
// Never returns an object, nor any byte of one, that is not the tenant's: each object is whole and judged first.
import { PLATFORM_CLASS_RESOURCES } from '../rules/platform-classes.ts';
import { badGateway } from '../../errors/status-error.ts';
import { KINDS, protobufApiVersion, type KindRow, type ProtobufColumn } from '../kinds.ts';
import type { TenantId } from '../prefix.ts';
import { MAGIC } from './wire.ts';
import { RULES } from '../rules/index.ts';
import type { ConvertContext, Json, KindRule } from '../rules/rule.ts';
import { statusToTenant, stripTenantPrefixes, type StatusScope } from '../status.ts';
import { EMPTY, MessageEdit, rewriteAt } from './message-edit.ts';
import { parseEnvelope } from './envelope.ts';
import { readSkeleton, writeSkeleton, type WireSchema } from './skeleton.ts';
import { templatesToTenant } from './pod-spec.ts';
import { METADATA_RULES, SKELETON_ROWS, TENANT_ONLY_FIELDS, ROLE, CLUSTER_ROLE, BINDING, STATUS } from './kind-schemas.ts';
import { objectMetaToTenant } from './object-meta.ts';
import { notTheTenants, fromUpstream, NOT_THE_TENANTS } from './conversion.ts';

/**
 * The kinds answered in protobuf, by `<group>/<kind>`, and their status conditions (the conditions column of the table
 * of kinds): what the unit test checks against generated.proto.
 */
export const STATUS_CONDITIONS: ReadonlyMap<string, ProtobufColumn['conditions']> = new Map(
  KINDS.flatMap((row) => (row.protobuf === undefined ? [] : [[keyOf(row), row.protobuf.conditions] as const])),
);

/** A status message's conditions (`path`: KindRow.protobuf.conditions) with their messages stripped of the tenant's prefixes. */
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

/** Kinds beyond metadata and templates, by `<group>/<kind>`: the rule and the skeleton it reads. */
export const SKELETONS: ReadonlyMap<string, { readonly rule: KindRule; readonly schema: WireSchema }> = new Map([
  ...SKELETON_ROWS.map(([key, , rule, schema]) => [key, { rule, schema: TENANT_ONLY_FIELDS.get(key)?.(schema) ?? schema }] as const),
  ['rbac.authorization.k8s.io/Role', { rule: RULES.role, schema: ROLE }],
  ['rbac.authorization.k8s.io/ClusterRole', { rule: RULES.role, schema: CLUSTER_ROLE }],
  ['rbac.authorization.k8s.io/RoleBinding', { rule: RULES.binding, schema: BINDING }],
]);

/** A kind's key in the protobuf tables: `<group>/<kind>`. */
export function keyOf(row: KindRow): string {
  return `${row.group}/${row.kind}`;
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
  if (row.protobuf === undefined || apiVersion !== protobufApiVersion(row)) return false;
  return METADATA_RULES.has(row.rule) || SKELETONS.has(keyOf(row)) || row.protobuf.templates !== undefined;
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
  const conditions = row.protobuf?.conditions;
  if (conditions != null) {
    const status = edit.single(conditions[0], 'status');
    if (status !== undefined && edit.payload(status).includes(tenant))
      edit.rewrite(status, (payload) => conditionMessagesToTenant(payload, conditions, tenant));
  }
  const templates = SKELETONS.has(key) ? undefined : row.protobuf?.templates;
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

// ---- the envelope, and Status ----

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

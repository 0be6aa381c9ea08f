// The common object's tenant view, fast: as splices of its bytes (splice.ts), with no object, string or closure per
// object on the way. Never decides what the careful path (to-tenant.ts) would not: anything it does not read exactly
// as objectPartsToTenant would goes the careful path, which then decides.
import { isBuiltinGroup, type KindRow } from '../kinds.ts';
import { PREFIX_LENGTH } from '../prefix.ts';
import { ANOMALY, FieldScan, headSize, isAsciiRange, rangeEquals, rangeIncludes, type Splices } from './splice.ts';
import { apiVersionToTenant, groupOfApiVersion } from '../rules/api-groups.ts';
import { namespaceToTenant } from '../rules/names.ts';
import { ownerReferencesToTenant } from '../rules/references.ts';
import { nameMappingOfKind } from '../rules/referents.ts';
import type { ConvertContext, Json } from '../rules/rule.ts';
import { podSpecNeedsCare } from './pod-spec.ts';
import { TENANT_LABEL_BYTES, TENANT_LABEL_FIELD_SEARCH, fieldSetCuts, FIELD_SET_CUTS } from './object-meta.ts';
import { keyOf, SKELETONS } from './to-tenant.ts';
import { OWNER_REFERENCE, OBJECT_META, MANAGED_FIELDS_ENTRY } from './field-numbers.ts';

/** What objectSplices returns instead of a length change: the object is not the tenant's; ask objectPartsToTenant. */
export const NOT_THE_TENANTS_OBJECT = -0x7fffffff;
export const CAREFUL_PATH = 0x7fffffff;

/** How objectSplices treats a kind's objects: built once per list or watch. */
export interface FastView {
  readonly ctx: ConvertContext;
  readonly tenant: Buffer;
  /** A shared kind: its objects are read as they are. */
  readonly shared: boolean;
  /** The status field, its conditions and a condition's message (KindRow.protobuf.conditions); null: none. */
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
  const { protobuf } = row;
  if (row.scope !== 'Namespaced' || row.rule === 'namespace' || SKELETONS.has(keyOf(row)) || protobuf === undefined) return null;
  const templates = protobuf.templates;
  const podSpec = templates !== undefined && templates.labelled.length === 0 && templates.podSpecs.length === 1 && templates.podSpecs[0]!.join() === '2';
  if (templates !== undefined && !podSpec) return null;
  return { ctx, tenant, shared: false, status: protobuf.conditions, podSpec, plainOwners: [] };
}

const OWNER_NUMBERS = [OWNER_REFERENCE.kind, OWNER_REFERENCE.name, OWNER_REFERENCE.apiVersion] as const;
const OBJECT_FIELDS = new FieldScan();
const META_FIELDS = new FieldScan();
const ENTRY_FIELDS = new FieldScan();
const HOLDER_FIELDS = new FieldScan();
const STATUS_FIELDS = new FieldScan();
const CONDITION_FIELDS = new FieldScan();

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
      if (podSpecNeedsCare(bytes, specFrom, specTo, view.tenant)) return CAREFUL_PATH;
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
  const namespace = meta.single(OBJECT_META.namespace);
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
      splices.head(fieldStart, textFrom, OBJECT_META.namespace, length);
      splices.delete(textFrom, textFrom + PREFIX_LENGTH);
      delta += headSize(OBJECT_META.namespace, length) + length - (textTo - fieldStart);
    } else {
      const mine = namespaceToTenant(bytes.toString('latin1', textFrom, textTo), ctx.tenant);
      if (mine === null) return NOT_THE_TENANTS_OBJECT;
      splices.stringField(fieldStart, textTo, OBJECT_META.namespace, mine);
      delta += headSize(OBJECT_META.namespace, mine.length) + mine.length - (textTo - fieldStart);
    }
  }
  const entry = ENTRY_FIELDS;
  // Labels: the tenant's label removed; another tenant's: not the tenant's.
  if (!meta.allDelimited(OBJECT_META.labels)) return CAREFUL_PATH;
  for (let i = 0; i < meta.count; i++) {
    if (meta.number[i] !== OBJECT_META.labels) continue;
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
  if (!meta.allDelimited(OBJECT_META.ownerReferences)) return CAREFUL_PATH;
  let before: string[] | undefined;
  for (let i = 0; i < meta.count; i++) {
    if (meta.number[i] !== OBJECT_META.ownerReferences) continue;
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
  if (!meta.allDelimited(OBJECT_META.managedFields)) return CAREFUL_PATH;
  const holder = HOLDER_FIELDS;
  for (let i = 0; i < meta.count; i++) {
    if (meta.number[i] !== OBJECT_META.managedFields) continue;
    const entryFrom = meta.valueStart[i]!;
    const entryTo = meta.end[i]!;
    if (!entry.scan(bytes, entryFrom, entryTo)) return CAREFUL_PATH;
    const apiVersionField = entry.single(MANAGED_FIELDS_ENTRY.apiVersion);
    if (apiVersionField === ANOMALY) return CAREFUL_PATH;
    if (apiVersionField >= 0 && !isCoreApiVersion(bytes, entry.valueStart[apiVersionField]!, entry.end[apiVersionField]!)) {
      const apiVersion = asciiString(bytes, entry, apiVersionField);
      if (apiVersion === undefined || (apiVersionToTenant(apiVersion, ctx.tenant) ?? apiVersion) !== apiVersion) return CAREFUL_PATH;
    }
    const fieldsV1 = entry.single(MANAGED_FIELDS_ENTRY.fieldsV1);
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
    const entryLength = entryTo - entryFrom - (holderTo - entry.start[fieldsV1]!) + headSize(MANAGED_FIELDS_ENTRY.fieldsV1, holderLength) + holderLength;
    splices.head(meta.start[i]!, entryFrom, OBJECT_META.managedFields, entryLength);
    splices.head(entry.start[fieldsV1]!, holderFrom, MANAGED_FIELDS_ENTRY.fieldsV1, holderLength);
    splices.head(holder.start[raw]!, rawFrom, 1, rawLength);
    for (let k = 0; k < count; k += 2) splices.delete(cuts[k]!, cuts[k + 1]!);
    delta += headSize(OBJECT_META.managedFields, entryLength) + entryLength - (entryTo - meta.start[i]!);
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
  const apiVersion = entry.single(OWNER_REFERENCE.apiVersion);
  const kind = entry.single(OWNER_REFERENCE.kind);
  const name = entry.single(OWNER_REFERENCE.name);
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

// ObjectMeta at the wire level, both directions, as the generic rule maps it (rules/generic.ts): names prefixed or
// unprefixed, the tenant label forced or removed, owner references and managed fields mapped by the JSON rules. Never
// lets another tenant's metadata through: a label, name or owner not the tenant's throws notTheTenants.
import { badGateway } from '../../errors/status-error.ts';
import { type KindRow, carriesTenantLabel, isTenantCrdGroup } from '../kinds.ts';
import { TENANT_LABEL, toTenantName, type TenantId, toUpstreamName } from '../prefix.ts';
import { rangeEquals, SkipSearch } from './splice.ts';
import { unsupported } from './wire.ts';
import { apiVersionToTenant, groupOfApiVersion, apiVersionToUpstream } from '../rules/api-groups.ts';
import { NAMESPACE_NAME_LABEL } from '../rules/label-selectors.ts';
import { managedFieldsToTenant } from '../rules/managed-fields.ts';
import { nameMappingOfRow, namespaceToTenant, nameToTenant, checkNameFits, checkNamespaceFits, nameToUpstream, namespaceToUpstream } from '../rules/names.ts';
import { ownerReferencesToTenant, ownerReferencesToUpstream } from '../rules/references.ts';
import type { ConvertContext, Json } from '../rules/rule.ts';
import { EMPTY, MessageEdit, readStrings, stringEntry, writeStrings } from './message-edit.ts';
import { aggregationKeyToUpstream } from '../rules/rbac.ts';
import { type Conversion, notTheTenants } from './conversion.ts';
import { OWNER_REFERENCE, OBJECT_META, MANAGED_FIELDS_ENTRY } from './field-numbers.ts';

// ---- toward the upstream: labels forced, names prefixed ----

export const TENANT_LABEL_BYTES = Buffer.from(TENANT_LABEL);
export const NAMESPACE_NAME_LABEL_BYTES = Buffer.from(NAMESPACE_NAME_LABEL);

/** OwnerReference: the fields the JSON rule maps (uid, controller and blockOwnerDeletion are copied). */
const OWNER = { kind: OWNER_REFERENCE.kind, name: OWNER_REFERENCE.name, apiVersion: OWNER_REFERENCE.apiVersion };

/**
 * Forces `kubezoo.io/tenant=<id>` into a map<string, string> field (labels, matchLabels): every entry with that key is
 * dropped and the right one added. `renamed` maps the value of one other key (the namespace name label).
 */
export function forceTenantEntry(
  edit: MessageEdit,
  number: number,
  name: string,
  tenant: TenantId,
  renamed?: (value: string) => string,
  renameKey?: (key: string) => string,
): void {
  for (const field of edit.all(number, name)) {
    const entry = new MessageEdit(edit.payload(field), `${edit.what}.${name}`);
    const keyField = entry.single(1, 'key');
    const valueField = entry.single(2, 'value');
    const key = keyField === undefined ? EMPTY : entry.payload(keyField);
    if (key.equals(TENANT_LABEL_BYTES)) edit.remove(field);
    else if (renamed !== undefined && key.equals(NAMESPACE_NAME_LABEL_BYTES)) {
      const value = entry.string(valueField, NAMESPACE_NAME_LABEL);
      const mapped = renamed(value);
      if (mapped !== value) edit.replace(field, stringEntry(NAMESPACE_NAME_LABEL, mapped));
    } else if (renameKey !== undefined) {
      const keyText = entry.string(keyField, 'key');
      const mapped = renameKey(keyText);
      if (mapped !== keyText) edit.replace(field, stringEntry(mapped, entry.string(valueField, keyText)));
    }
  }
  edit.add(number, stringEntry(TENANT_LABEL, tenant));
}

/** Labels only: the metadata of a pod or claim template. */
function labelMeta(meta: Buffer, tenant: TenantId, what: string): Buffer {
  const edit = new MessageEdit(meta, what);
  forceTenantEntry(edit, OBJECT_META.labels, 'labels', tenant);
  return edit.finish();
}

/** A template (metadata = 1): the tenant label forced into its metadata, created when absent. */
export function labelTemplate(template: Buffer, tenant: TenantId, what: string): Buffer {
  const edit = new MessageEdit(template, what);
  const meta = edit.single(1, 'metadata');
  if (meta === undefined) edit.add(1, labelMeta(EMPTY, tenant, `${what}.metadata`));
  else edit.rewrite(meta, (payload) => labelMeta(payload, tenant, `${what}.metadata`));
  return edit.finish();
}

/** Owner references, converted by the very rule JSON bodies take (same mapping, same 422 for unknown owner kinds). */
function ownerReferencesToUpstreamWire(edit: MessageEdit, conversion: Conversion): void {
  const fields = edit.all(OBJECT_META.ownerReferences, 'ownerReferences');
  if (fields.length === 0) return;
  const what = `${edit.what}.ownerReferences`;
  const entries = fields.map((field) => new MessageEdit(edit.payload(field), what));
  const before = entries.map((entry) => readStrings(entry, OWNER));
  const { tenant, kindScope } = conversion;
  if (kindScope === undefined && before.some((owner) => isTenantCrdGroup(groupOfApiVersion(owner.apiVersion)))) {
    throw unsupported('an owner reference to a custom resource');
  }
  const after: Json[] = before.map((owner) => ({ ...owner }));
  const ctx: ConvertContext = { tenant, scopeOf: () => undefined, kindScope: kindScope ?? (() => undefined) };
  ownerReferencesToUpstream({ ownerReferences: after }, ctx);
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]!;
    writeStrings(entry, OWNER, before[i]!, after[i]!);
    edit.replaceMessage(fields[i]!, entry);
  }
}

function managedFieldsToUpstreamWire(edit: MessageEdit, tenant: TenantId, kind: string): void {
  for (const field of edit.all(OBJECT_META.managedFields, 'managedFields')) {
    const entry = new MessageEdit(edit.payload(field), `${edit.what}.managedFields`);
    const apiVersionField = entry.single(MANAGED_FIELDS_ENTRY.apiVersion, 'apiVersion');
    const apiVersion = entry.string(apiVersionField, 'apiVersion');
    const upstream = apiVersionToUpstream(apiVersion, tenant, kind);
    if (apiVersionField === undefined || upstream === apiVersion) continue;
    entry.replaceString(apiVersionField, upstream);
    edit.replace(field, entry.finish());
  }
}

/**
 * The names of an object's metadata, as the JSON generic rule maps them: namespace (namespaced kinds), name and
 * generateName (the tenant's cluster-scoped kinds); too long once prefixed → 422.
 */
export function metaNamesToUpstream(edit: MessageEdit, conversion: Conversion, generateName: boolean): void {
  const { row, tenant } = conversion;
  const nameField = edit.single(OBJECT_META.name, 'name');
  const name = edit.string(nameField, 'name');
  if (row.scope === 'Namespaced') {
    const namespaceField = edit.single(OBJECT_META.namespace, 'namespace');
    const namespace = edit.string(namespaceField, 'namespace');
    if (namespaceField !== undefined && namespace !== '') {
      checkNamespaceFits(row, name, namespace);
      edit.replaceString(namespaceField, namespaceToUpstream(namespace, tenant));
    }
    return;
  }
  const mapping = nameMappingOfRow(row);
  if (nameField !== undefined && name !== '') {
    checkNameFits(row, name);
    edit.replaceString(nameField, nameToUpstream(mapping, name, tenant));
  }
  if (!generateName || mapping !== 'prefix') return;
  const generateNameField = edit.single(OBJECT_META.generateName, 'generateName');
  const prefix = edit.string(generateNameField, 'generateName');
  // The apiserver truncates a long generateName itself, keeping the prefix at its start.
  if (generateNameField !== undefined && prefix !== '') edit.replaceString(generateNameField, toUpstreamName(prefix, tenant));
}

/** A whole object's metadata: names, owner references, managed fields' apiVersions, the tenant label. */
export function objectMetaToUpstream(meta: Buffer, conversion: Conversion): Buffer {
  const { row, tenant } = conversion;
  const edit = new MessageEdit(meta, 'metadata');
  metaNamesToUpstream(edit, conversion, true);
  ownerReferencesToUpstreamWire(edit, conversion);
  // A Namespace's `kubernetes.io/metadata.name` label follows its name (the namespace rule).
  const renamed = row.rule === 'namespace' ? (value: string) => (value === '' ? value : namespaceToUpstream(value, tenant)) : undefined;
  // A ClusterRole's aggregate-to-* labels take the tenant's key (the role rule).
  const renameKey = row.rule === 'role' ? (key: string) => aggregationKeyToUpstream(key, tenant) : undefined;
  if (carriesTenantLabel(row)) forceTenantEntry(edit, OBJECT_META.labels, 'labels', tenant, renamed, renameKey);
  managedFieldsToUpstreamWire(edit, tenant, row.kind);
  return edit.finish();
}

// ---- toward the tenant: labels removed, names unprefixed; another tenant's throws notTheTenants ----

export const TENANT_LABEL_FIELD = Buffer.from('f:' + TENANT_LABEL);
/** The tenant label as a key of a field set, and its compact value. */
const TENANT_LABEL_KEY = Buffer.from(`"f:${TENANT_LABEL}":{}`);
export const COMMA = 0x2c;
const OPEN = 0x7b;
const CLOSE = 0x7d;

/** The tenant label's field in field sets: a few hundred bytes of JSON each, searched in place (SkipSearch). */
export const TENANT_LABEL_FIELD_SEARCH = new SkipSearch(TENANT_LABEL_FIELD);
export const QUOTE = 0x22;
/** What follows the field in its key: `":{}`. */
const TENANT_LABEL_KEY_END = TENANT_LABEL_KEY.subarray(1 + TENANT_LABEL_FIELD.length);

/** The offsets fieldSetCuts found, written over from the start each call (no allocation once grown): read them first. */
export const FIELD_SET_CUTS: number[] = [];

/**
 * Where a field set (compact JSON, as the apiserver writes it) at bytes[from, to) has its `"f:kubezoo.io/tenant":{}`
 * members from `searchFrom` on, as pairs of offsets of `bytes` to cut (each with its comma) in FIELD_SET_CUTS: their
 * count, or -1 when one is not between a comma and another member (the set it empties goes too, as managed-fields.ts
 * forgets it: then the set is parsed) or the bytes are not of that shape.
 */
export function fieldSetCuts(bytes: Buffer, from: number, to: number, searchFrom = from): number {
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
/** FieldsV1 { raw = 1 } (written by hand: the schema holds it as JSON): a managedFields entry's field set. */

/** Removes the tenant label entry from a map<string, string> field; another tenant's label: not the tenant's. */
export function removeTenantEntryWire(edit: MessageEdit, number: number, name: string, tenant: TenantId): void {
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
export function keyIsNot(entry: Buffer, key: Buffer): boolean {
  if (entry.length < 2 || entry[0] !== 0x0a || entry[1]! >= 0x80 || entry[1]! + 2 > entry.length) return false;
  const length = entry[1]!;
  return length !== key.length || entry.compare(key, 0, key.length, 2, 2 + length) !== 0;
}

function ownerReferencesToTenantWire(edit: MessageEdit, ctx: ConvertContext): void {
  const fields = edit.all(OBJECT_META.ownerReferences, 'ownerReferences');
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
  for (const field of edit.all(OBJECT_META.managedFields, 'managedFields')) {
    edit.rewrite(field, (payload) => {
      const entry = new MessageEdit(payload, `${edit.what}.managedFields`);
      const apiVersionField = entry.single(MANAGED_FIELDS_ENTRY.apiVersion, 'apiVersion');
      if (apiVersionField !== undefined) {
        const apiVersion = entry.string(apiVersionField, 'apiVersion');
        const mine = apiVersionToTenant(apiVersion, tenant) ?? apiVersion;
        if (mine !== apiVersion) entry.replaceString(apiVersionField, mine);
      }
      const fieldsV1 = entry.single(MANAGED_FIELDS_ENTRY.fieldsV1, 'fieldsV1');
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
export function objectMetaToTenant(meta: Buffer, row: KindRow, ctx: ConvertContext): MessageEdit {
  const { tenant } = ctx;
  const edit = new MessageEdit(meta, 'metadata');
  if (row.scope === 'Namespaced') {
    const field = edit.single(OBJECT_META.namespace, 'namespace');
    const namespace = edit.string(field, 'namespace');
    if (field !== undefined && namespace !== '') edit.replaceString(field, namespaceToTenant(namespace, tenant) ?? notTheTenants());
  } else {
    const mapping = nameMappingOfRow(row);
    const field = edit.single(OBJECT_META.name, 'name');
    const name = edit.string(field, 'name');
    if (field !== undefined && name !== '') edit.replaceString(field, nameToTenant(mapping, name, tenant) ?? notTheTenants());
    const generateNameField = edit.single(OBJECT_META.generateName, 'generateName');
    const generateName = edit.string(generateNameField, 'generateName');
    if (generateNameField !== undefined && generateName !== '' && mapping === 'prefix') {
      const mine = toTenantName(generateName, tenant);
      if (mine !== null) edit.replaceString(generateNameField, mine);
    }
  }
  removeTenantEntryWire(edit, OBJECT_META.labels, 'labels', tenant);
  if (row.rule === 'namespace') namespaceNameLabelToTenant(edit, tenant);
  ownerReferencesToTenantWire(edit, ctx);
  managedFieldsToTenantWire(edit, tenant);
  return edit;
}

/** A Namespace's `kubernetes.io/metadata.name` label follows its name (rules/namespace.ts). */
function namespaceNameLabelToTenant(edit: MessageEdit, tenant: TenantId): void {
  for (const field of edit.all(OBJECT_META.labels, 'labels')) {
    if (keyIsNot(edit.payload(field), NAMESPACE_NAME_LABEL_BYTES)) continue;
    const entry = new MessageEdit(edit.payload(field), `${edit.what}.labels`);
    const key = entry.single(1, 'key');
    if (key === undefined || !entry.payload(key).equals(NAMESPACE_NAME_LABEL_BYTES)) continue;
    const value = entry.stringOf(2, 'value');
    if (value !== '') edit.replace(field, stringEntry(NAMESPACE_NAME_LABEL_BYTES.toString(), namespaceToTenant(value, tenant) ?? notTheTenants()));
  }
}

// ObjectMeta at the wire level, both directions, as the generic rule maps it (rules/generic.ts): names prefixed or
// unprefixed, the tenant label forced or removed, owner references and managed fields mapped by the JSON rules. Never
// lets another tenant's metadata through: a label, name or owner not the tenant's throws notTheTenants.
import { carriesTenantLabel, isTenantCrdGroup } from '../kinds.ts';
import { TENANT_LABEL, toUpstreamName, type TenantId } from '../prefix.ts';
import { apiVersionToUpstream, groupOfApiVersion } from '../rules/api-groups.ts';
import { NAMESPACE_NAME_LABEL } from '../rules/label-selectors.ts';
import { checkNameFits, checkNamespaceFits, nameMappingOfRow, nameToUpstream, namespaceToUpstream } from '../rules/names.ts';
import { aggregationKeyToUpstream } from '../rules/rbac.ts';
import { ownerReferencesToUpstream } from '../rules/references.ts';
import type { ConvertContext, Json } from '../rules/rule.ts';
import { unsupported } from './wire.ts';
import { MessageEdit, EMPTY, stringEntry, readStrings, writeStrings } from './message-edit.ts';
import type { Conversion } from './conversion.ts';

// ---- labels and ObjectMeta ----

export const TENANT_LABEL_BYTES = Buffer.from(TENANT_LABEL);
export const NAMESPACE_NAME_LABEL_BYTES = Buffer.from(NAMESPACE_NAME_LABEL);

/** ObjectMeta (k8s.io/apimachinery pkg/apis/meta/v1/generated.proto). */
export const META = { name: 1, generateName: 2, namespace: 3, labels: 11, ownerReferences: 13, managedFields: 17 } as const;
/** OwnerReference: kind = 1, name = 3, apiVersion = 5. ManagedFieldsEntry: apiVersion = 3. */
export const OWNER = { kind: 1, name: 3, apiVersion: 5 } as const;
export const MANAGED_FIELDS_API_VERSION = 3;

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
  forceTenantEntry(edit, META.labels, 'labels', tenant);
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
  const fields = edit.all(META.ownerReferences, 'ownerReferences');
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
  for (const field of edit.all(META.managedFields, 'managedFields')) {
    const entry = new MessageEdit(edit.payload(field), `${edit.what}.managedFields`);
    const apiVersionField = entry.single(MANAGED_FIELDS_API_VERSION, 'apiVersion');
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
  const nameField = edit.single(META.name, 'name');
  const name = edit.string(nameField, 'name');
  if (row.scope === 'Namespaced') {
    const namespaceField = edit.single(META.namespace, 'namespace');
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
  const generateNameField = edit.single(META.generateName, 'generateName');
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
  if (carriesTenantLabel(row)) forceTenantEntry(edit, META.labels, 'labels', tenant, renamed, renameKey);
  managedFieldsToUpstreamWire(edit, tenant, row.kind);
  return edit.finish();
}

// What the list and watch rewriter does for one kind, from the table of kinds and the rules: which name field
// proves an item the tenant's, and whether an item may take the byte-level fast path or goes through the rule.
import type { KindRow } from '../convert/kinds.ts';
import { apiGroupToUpstream, BYTE_LEVEL_RULES, objectToTenant, type ConvertContext } from '../convert/rules/index.ts';
import type { TenantId } from '../convert/prefix.ts';
import { managedFieldsToTenant } from '../convert/rules/managed-fields.ts';
import { ownerReferencesToTenant } from '../convert/rules/references.ts';
import { statusToTenant } from '../convert/status.ts';
import { isTable, tableToTenant, type RowObjects } from '../convert/table.ts';
import type { TenantMetadataView, TenantViewSpec } from './tenant-view.ts';

/**
 * The rewriter's spec for lists and watches of `row` as `convert.tenant` sees them. `tableRows`: a watch whose
 * events carry Tables (kubectl get --watch), whose rows the table rule checks one by one, with these row objects.
 */
export function tenantViewSpecOf(row: KindRow, convert: ConvertContext, tableRows: RowObjects | null = null): TenantViewSpec {
  const rewriteItem = (item: any) => (isTable(item) ? tableEventToTenant(item) : objectToTenant(item, convert, row));
  // A watch event whose rows were all another tenant's is dropped whole: not even its timing is the tenant's.
  const tableEventToTenant = (table: any) => {
    const view = tableToTenant(table, convert, row, tableRows ?? 'Object');
    return Array.isArray(table.rows) && table.rows.length > 0 && view.rows.length === 0 ? null : view;
  };
  const rewriteStatus = (status: any) => statusToTenant(status, convert.tenant);
  if (row.tenancy !== 'tenant' || tableRows !== null) return { tenant: convert.tenant, nameField: null, rewriteItem, rewriteStatus };
  const nameField = nameFieldOf(row);
  const tenantMetadata = metadataOnly(row) ? metadataView(convert, slowPathMarkersOf(row, convert)) : undefined;
  return { tenant: convert.tenant, nameField, rewriteItem, rewriteStatus, tenantMetadata, listApiGroup: listApiGroupOf(row, convert.tenant) };
}

/**
 * Whether the rewriter converts objects of `row` at byte level (tenantMetadata), leaving to the rule only the odd
 * object that holds one of the kind's markers: a tenant kind with a name field whose rule touches nothing but the
 * object's own metadata and status messages. Other kinds' objects are each parsed and given to their rule.
 */
export function metadataOnly(row: KindRow): boolean {
  return row.tenancy === 'tenant' && nameFieldOf(row) !== null && BYTE_LEVEL_RULES[row.rule] !== undefined;
}

/** The metadata member that proves a tenant kind's object the tenant's; none for CRDs (the prefix is inside the group). */
function nameFieldOf(row: KindRow): TenantViewSpec['nameField'] {
  return row.scope === 'Namespaced' ? 'namespace' : row.rule === 'crd' ? null : 'name';
}

/**
 * A stored kind's list is `<upstreamGroup>/<version>` upstream and `<group>/<version>` to the tenant; a list of the
 * tenant's custom resources is in its CRD's group, prefixed upstream (`<id>-example.com/v1`).
 */
function listApiGroupOf(row: KindRow, tenant: TenantId): TenantViewSpec['listApiGroup'] {
  if (row.upstreamGroup !== undefined) return { upstream: row.upstreamGroup, tenant: row.group };
  if (row.rule !== 'custom-resource') return undefined;
  const upstream = apiGroupToUpstream(row.group, tenant, row.resource);
  return upstream === row.group ? undefined : { upstream, tenant: row.group };
}

/**
 * The kind's markers; a pod's also sends one whose priority class is the tenant's own (`<id>-<name>` upstream, which
 * its rule maps back: rules/priority-classes.ts) to the rule.
 */
function slowPathMarkersOf(row: KindRow, convert: ConvertContext): TenantMetadataView['slowPathMarkers'] {
  const markers = BYTE_LEVEL_RULES[row.rule]!;
  return row.rule === 'pod' ? { ...markers, priorityClassName: [`"${convert.tenant}-`] } : markers;
}

function metadataView(convert: ConvertContext, markers: TenantMetadataView['slowPathMarkers']): TenantMetadataView {
  return {
    ownerReferences(owners) {
      const metadata = { ownerReferences: owners };
      return ownerReferencesToTenant(metadata, convert) ? metadata.ownerReferences : null;
    },
    managedFields(entries) {
      const metadata = { managedFields: entries };
      managedFieldsToTenant(metadata, convert.tenant);
      return metadata.managedFields;
    },
    slowPathMarkers: markers,
  };
}

// The tenant's view of a meta.k8s.io Table (what `kubectl get` asks for): rows of objects that are not the
// tenant's are dropped; each row's object is converted by its kind's rule, and its cells lose the tenant's prefix
// (names, namespaces, roles and subjects the printers show).
import type { KindRow } from './kinds.ts';
import { stripTenantPrefixes } from './status.ts';
import { objectToTenant, type ConvertContext } from './rules/index.ts';

/** What a client asked a Table's rows to carry (`includeObject`). */
export type RowObjects = 'Object' | 'Metadata' | 'None';

interface TableRow {
  cells?: unknown[];
  object?: { metadata?: { name?: string; namespace?: string } } | null;
}

interface Table {
  kind: 'Table';
  rows?: TableRow[] | null;
}

export function isTable(body: unknown): body is Table {
  return typeof body === 'object' && body !== null && (body as { kind?: unknown }).kind === 'Table';
}

/**
 * Which row objects the client asked for; sets the upstream query's `includeObject` to what the kind's rule must see
 * to decide whether a row is the tenant's: the whole object, or for the generic rule its metadata. So `None` is asked
 * upstream as `Metadata`, every row is still checked, and the objects are dropped before the tenant sees them.
 */
export function rowObjectsFor(upstreamQuery: URLSearchParams, row: KindRow): RowObjects {
  const asked = upstreamQuery.get('includeObject');
  const rowObjects: RowObjects = asked === 'Object' || asked === 'None' ? asked : 'Metadata';
  if (row.rule !== 'generic') upstreamQuery.set('includeObject', 'Object');
  else if (rowObjects === 'None') upstreamQuery.set('includeObject', 'Metadata');
  return rowObjects;
}

/**
 * The tenant's view of a Table of `row`'s kind: rows whose object the rule refuses are dropped (a row without an
 * object, unchecked, too), and each object is cut back to what the client asked for (`rowObjects`).
 */
export function tableToTenant<T extends Table>(table: T, convert: ConvertContext, row: KindRow, rowObjects: RowObjects = 'Object'): T {
  if (!Array.isArray(table.rows)) return table;
  const tenant = convert.tenant;
  const rows: TableRow[] = [];
  for (const tableRow of table.rows) {
    if (tableRow.object === undefined || tableRow.object === null) continue; // a row we cannot check is a row we do not show
    const upstreamMeta = tableRow.object.metadata ?? {};
    const upstreamName = upstreamMeta.name;
    const upstreamNamespace = upstreamMeta.namespace;
    const converted = objectToTenant(tableRow.object, convert, row);
    if (converted === null) continue;
    const meta = (converted as TableRow['object'])?.metadata ?? {};
    const cells = tableRow.cells?.map((cell) => {
      if (typeof cell !== 'string') return cell;
      if (upstreamName !== undefined && cell === upstreamName) return meta.name;
      if (upstreamNamespace !== undefined && cell === upstreamNamespace) return meta.namespace;
      return stripTenantPrefixes(cell, tenant);
    });
    const { object: _, ...rest } = tableRow;
    if (rowObjects === 'None') rows.push({ ...rest, cells });
    else if (rowObjects === 'Metadata' && (converted as { kind?: string }).kind !== 'PartialObjectMetadata') {
      rows.push({ ...rest, cells, object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: meta } as TableRow['object'] });
    } else rows.push({ ...rest, cells, object: converted });
  }
  return { ...table, rows };
}

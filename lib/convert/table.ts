// The tenant's view of a meta.k8s.io Table (what `kubectl get` asks for): rows of objects that are not the
// tenant's are dropped; each row's object and the cells that show its upstream name or namespace are un-prefixed.

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
 * `objectToTenant` converts a row's object (usually PartialObjectMetadata) or returns null when it is not the
 * tenant's. Cells equal to the row's upstream name or namespace take the converted value.
 */
export function tableToTenant<T extends Table>(table: T, objectToTenant: (object: any) => any | null): T {
  if (!Array.isArray(table.rows)) return table;
  const rows: TableRow[] = [];
  for (const row of table.rows) {
    if (row.object === undefined || row.object === null) continue; // a row we cannot check is a row we do not show
    const upstreamMeta = row.object.metadata ?? {};
    const upstreamName = upstreamMeta.name;
    const upstreamNamespace = upstreamMeta.namespace;
    const converted = objectToTenant(row.object);
    if (converted === null) continue;
    const meta = (converted as TableRow['object'])?.metadata ?? {};
    const cells = row.cells?.map((cell) => {
      if (typeof cell !== 'string') return cell;
      if (upstreamName !== undefined && cell === upstreamName) return meta.name;
      if (upstreamNamespace !== undefined && cell === upstreamNamespace) return meta.namespace;
      return cell;
    });
    rows.push({ ...row, cells, object: converted });
  }
  return { ...table, rows };
}

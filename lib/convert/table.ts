// The tenant's view of a meta.k8s.io Table (what `kubectl get` asks for): rows of objects that are not the
// tenant's are dropped; each row's object is converted by its kind's rule, and its cells lose the tenant's prefix
// (names, namespaces, roles and subjects the printers show).
import type { KindRow } from './kinds.ts';
import { stripTenantPrefixes } from './status.ts';
import { objectToTenant, type ConvertContext } from './rules/index.ts';
import { isDefaultInView } from './rules/platform-classes.ts';

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

const NAME_DESCRIPTION =
  'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names';
const AGE_DESCRIPTION =
  'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata';

interface Subject {
  kind?: string;
  name?: string;
  namespace?: string;
}

/** What `rbac.SubjectsStrings` prints of a binding's subjects: users, groups and `namespace/name` service accounts, joined. */
function subjectCells(subjects: unknown): string[] {
  const users: string[] = [];
  const groups: string[] = [];
  const accounts: string[] = [];
  for (const subject of Array.isArray(subjects) ? (subjects as Subject[]) : []) {
    if (subject?.kind === 'User') users.push(subject.name ?? '');
    else if (subject?.kind === 'Group') groups.push(subject.name ?? '');
    else if (subject?.kind === 'ServiceAccount') accounts.push(`${subject.namespace ?? ''}/${subject.name ?? ''}`);
  }
  return [users.join(', '), groups.join(', '), accounts.join(', ')];
}

/**
 * Kinds kept upstream as custom resources (the table's upstreamGroup) whose printer writes cells no CRD column can
 * (kubernetes pkg/printers/internalversion): their columns as the apiserver defines them, and their cells from each
 * row's object in the tenant's view; `upstreamCells` are the CRD's (Name, then its printer columns: the Age kept).
 */
const PRINTED_FROM_OBJECT: Readonly<Record<string, { columnDefinitions: unknown[]; cells(object: any, upstreamCells: unknown[]): unknown[] }>> = {
  ClusterRoleBinding: {
    columnDefinitions: [
      { name: 'Name', type: 'string', format: 'name', description: NAME_DESCRIPTION, priority: 0 },
      {
        name: 'Role',
        type: 'string',
        format: '',
        description:
          'RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.',
        priority: 0,
      },
      { name: 'Age', type: 'string', format: '', description: AGE_DESCRIPTION, priority: 0 },
      { name: 'Users', type: 'string', format: '', description: 'Users in the clusterRoleBinding', priority: 1 },
      { name: 'Groups', type: 'string', format: '', description: 'Groups in the clusterRoleBinding', priority: 1 },
      { name: 'ServiceAccounts', type: 'string', format: '', description: 'ServiceAccounts in the clusterRoleBinding', priority: 1 },
    ],
    cells: (object, upstreamCells) => [
      object.metadata?.name,
      `${object.roleRef?.kind ?? ''}/${object.roleRef?.name ?? ''}`,
      upstreamCells[2],
      ...subjectCells(object.subjects),
    ],
  },
};

/** Class kinds whose printer appends ` (default)` to the default class's name. */
const DEFAULT_NAME_SUFFIX = ' (default)';
const NAME_MARKS_DEFAULT: ReadonlySet<string> = new Set(['storageclasses', 'ingressclasses']);

/**
 * For a Table of a platform class kind whose tenant has a default class of its own: what puts the tenant's default in
 * the cells the printer wrote from the platform's (PriorityClass's Global-Default column, the `(default)` after a
 * StorageClass's or IngressClass's name). Null when nothing is to change.
 */
function tenantDefaultCells(
  table: Table,
  row: KindRow,
  convert: ConvertContext,
): ((cells: unknown[], converted: object, upstreamName: string | undefined) => void) | null {
  if (row.tenancy !== 'shared-read-only' || convert.defaultPlatformClass?.(row.resource) === undefined) return null;
  const columns = (table as { columnDefinitions?: { name?: string }[] }).columnDefinitions;
  if (row.resource === 'priorityclasses') {
    const column = Array.isArray(columns) ? columns.findIndex((definition) => definition?.name === 'Global-Default') : -1;
    if (column < 0) return null;
    return (cells, converted) => {
      if (column < cells.length) cells[column] = isDefaultInView(row.resource, converted as Record<string, unknown>, convert.defaultPlatformClass) === true;
    };
  }
  if (!NAME_MARKS_DEFAULT.has(row.resource)) return null;
  return (cells, converted, upstreamName) => {
    const name = cells[0];
    if (upstreamName === undefined || (name !== upstreamName && name !== upstreamName + DEFAULT_NAME_SUFFIX)) return;
    cells[0] = upstreamName + (isDefaultInView(row.resource, converted as Record<string, unknown>, convert.defaultPlatformClass) ? DEFAULT_NAME_SUFFIX : '');
  };
}

/**
 * The tenant's view of a Table of `row`'s kind: rows whose object the rule refuses are dropped (a row without an
 * object, unchecked, too), and each object is cut back to what the client asked for (`rowObjects`).
 */
export function tableToTenant<T extends Table>(table: T, convert: ConvertContext, row: KindRow, rowObjects: RowObjects = 'Object'): T {
  const printed = row.upstreamGroup === undefined ? undefined : PRINTED_FROM_OBJECT[row.kind];
  if (printed !== undefined && Array.isArray((table as { columnDefinitions?: unknown }).columnDefinitions))
    table = { ...table, columnDefinitions: printed.columnDefinitions };
  if (!Array.isArray(table.rows)) return table;
  const tenant = convert.tenant;
  const defaultCells = tenantDefaultCells(table, row, convert);
  const rows: TableRow[] = [];
  for (const tableRow of table.rows) {
    if (tableRow.object === undefined || tableRow.object === null) continue; // a row we cannot check is a row we do not show
    const upstreamMeta = tableRow.object.metadata ?? {};
    const upstreamName = upstreamMeta.name;
    const upstreamNamespace = upstreamMeta.namespace;
    const converted = objectToTenant(tableRow.object, convert, row);
    if (converted === null) continue;
    const meta = (converted as TableRow['object'])?.metadata ?? {};
    const cells =
      printed !== undefined
        ? printed.cells(converted, tableRow.cells ?? [])
        : tableRow.cells?.map((cell) => {
            if (typeof cell !== 'string') return cell;
            if (upstreamName !== undefined && cell === upstreamName) return meta.name;
            if (upstreamNamespace !== undefined && cell === upstreamNamespace) return meta.namespace;
            return stripTenantPrefixes(cell, tenant);
          });
    if (defaultCells !== null && cells !== undefined) defaultCells(cells, converted, upstreamName);
    const { object: _, ...rest } = tableRow;
    if (rowObjects === 'None') rows.push({ ...rest, cells });
    else if (rowObjects === 'Metadata' && (converted as { kind?: string }).kind !== 'PartialObjectMetadata') {
      rows.push({ ...rest, cells, object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: meta } as TableRow['object'] });
    } else rows.push({ ...rest, cells, object: converted });
  }
  return { ...table, rows };
}

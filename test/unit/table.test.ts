// Tables (what kubectl get asks for): the client's includeObject decides what rows carry, never which rows are checked.
import t from 'tap';
import { kindOf } from '../../lib/convert/kinds.ts';
import type { ConvertContext } from '../../lib/convert/rules/index.ts';
import { rowObjectsFor, tableToTenant } from '../../lib/convert/table.ts';

const convert: ConvertContext = { tenant: 'abc123', scopeOf: () => undefined, kindScope: () => undefined };
const configmaps = kindOf('', 'configmaps')!;
const namespaces = kindOf('', 'namespaces')!;

t.test('the upstream is asked for what the rule checks: metadata for the generic rule, whole objects otherwise', async (t) => {
  const cases: [string, string | null, string, string][] = [
    // [kind, client's includeObject, what the tenant gets, what the upstream is asked]
    ['configmaps', null, 'Metadata', 'none set'],
    ['configmaps', 'Metadata', 'Metadata', 'Metadata'],
    ['configmaps', 'Object', 'Object', 'Object'],
    ['configmaps', 'None', 'None', 'Metadata'],
    ['namespaces', 'None', 'None', 'Object'],
    ['namespaces', null, 'Metadata', 'Object'],
  ];
  for (const [resource, asked, rowObjects, upstream] of cases) {
    const query = new URLSearchParams(asked === null ? '' : `includeObject=${asked}`);
    t.equal(rowObjectsFor(query, resource === 'configmaps' ? configmaps : namespaces), rowObjects, `${resource} ${asked}`);
    t.equal(query.get('includeObject') ?? 'none set', upstream, `${resource} ${asked}: upstream`);
  }
});

t.test("includeObject=None: the tenant's rows without objects, another tenant's rows and rows with nothing to check dropped", async (t) => {
  const row = (namespace: string, name: string) => ({
    cells: [name, 1],
    object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: { name, namespace } },
  });
  const table = {
    kind: 'Table' as const,
    rows: [row('abc123-default', 'mine'), row('xyz789-default', 'theirs'), { cells: ['unchecked', 1] }, row('kube-system', 'shared')],
  };
  const view = tableToTenant(table, convert, configmaps, 'None');
  t.same(view.rows, [{ cells: ['mine', 1] }]);
});

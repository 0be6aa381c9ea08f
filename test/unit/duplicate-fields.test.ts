// Duplicate members of JSON and YAML bodies: found without a second parse, and written upstream again with the
// converted value (and, from YAML, on the line the client wrote them) so the apiserver reports them itself.
import t from 'tap';
import { jsonDuplicates, membersWritten, stringifyWithDuplicates } from '../../lib/convert/duplicate-fields.ts';
import { parseBody } from '../../lib/convert/tenant-body.ts';

t.test('members written count name separators only, never colons inside strings', async (t) => {
  for (const [text, members] of [
    ['{}', 0],
    ['{"a":1}', 1],
    ['{"a:b":"c:d","e":{"f":[{"g":"\\":"}]}}', 4],
    ['[1, "x:y", {"k" : "v"}]', 1],
    ['{"q\\\\":"\\\\", "r":"s"}', 2],
  ] as const) {
    t.equal(membersWritten(text), members, text);
  }
});

t.test('each later occurrence of a member is found where it sits, in document order', async (t) => {
  t.same(jsonDuplicates('{"spec":{"unknownField":"foo","replicas":2,"replicas":3}}'), [{ path: ['spec'], key: 'replicas' }]);
  t.same(jsonDuplicates('{"a":1,"b":[{"c":1},{"c":2,"c":3,"c":4}],"a":2}'), [
    { path: ['b', 1], key: 'c' },
    { path: ['b', 1], key: 'c' },
    { path: [], key: 'a' },
  ]);
  t.same(jsonDuplicates('{"x\\u0041":1,"xA":2,"s":"{\\"xA\\":3}"}'), [{ path: [], key: 'xA' }]);
  t.same(jsonDuplicates('{"a":{"k":1},"b":{"k":2}}'), []);
});

t.test('a JSON body with duplicates is written upstream with them, carrying the converted value', async (t) => {
  const text = '{"metadata":{"name":"a","namespace":"x","namespace":"y"},"spec":{"replicas":2,"replicas":3}}';
  const { value, duplicates } = parseBody(text, 'application/json', true);
  (value as any).metadata.namespace = 'abc123-y';
  t.equal(
    stringifyWithDuplicates(value, duplicates),
    '{"metadata":{"name":"a","namespace":"abc123-y","namespace":"abc123-y"},"spec":{"replicas":3,"replicas":3}}',
  );
  t.same(parseBody(text, 'application/json', false).duplicates, [], 'not looked for under fieldValidation=Ignore');
  t.equal(stringifyWithDuplicates({ a: 1, b: undefined }, []), '{"a":1}');
});

t.test('a YAML duplicate is written on the line the client wrote it, so the apiserver names that line', async (t) => {
  const text = '\napiVersion: v1\nkind: K\nmetadata:\n  name: n\nspec:\n  unknown: uk1\n  foo: foo1\n  foo: foo2\n  ports:\n  - name: x\n';
  const { value, duplicates } = parseBody(text, 'application/apply-patch+yaml', true);
  t.same(duplicates, [{ path: ['spec'], key: 'foo', line: 9 }]);
  const written = stringifyWithDuplicates(value, duplicates);
  const lines = written.split('\n');
  t.equal(lines.length, 9);
  t.match(lines[8], /^"foo":"foo2"/);
  t.same(JSON.parse(written), value, 'the same object, the last value winning');
});

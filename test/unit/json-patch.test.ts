// RFC 6902 JSON Patch as tenantgate applies it to a tenant's view of an object (examples after the RFC's appendix A).
import t from 'tap';
import { applyJsonPatch, MAX_JSON_PATCH_COPY_BYTES, MAX_JSON_PATCH_OPERATIONS, parseJsonPatch } from '../../lib/convert/json-patch.ts';
import { MAX_BODY_NESTING } from '../../lib/convert/tenant-body.ts';
import { StatusError } from '../../lib/errors/status-error.ts';

const apply = (doc: unknown, ops: object[]) => applyJsonPatch(structuredClone(doc), ops as Record<string, unknown>[]);

/** The Status code and message a call throws, or [0, 'applied']. */
function codeOf(run: () => unknown): [number, string] {
  try {
    run();
    return [0, 'applied'];
  } catch (error) {
    if (error instanceof StatusError) return [error.code, error.message];
    throw error;
  }
}

t.test('add, remove, replace, move, copy and test do what RFC 6902 says', async (t) => {
  t.same(apply({ foo: 'bar' }, [{ op: 'add', path: '/baz', value: 'qux' }]), { foo: 'bar', baz: 'qux' });
  t.same(apply({ foo: ['bar', 'baz'] }, [{ op: 'add', path: '/foo/1', value: 'qux' }]), { foo: ['bar', 'qux', 'baz'] });
  t.same(apply({ foo: ['bar'] }, [{ op: 'add', path: '/foo/-', value: 'end' }]), { foo: ['bar', 'end'] });
  t.same(apply({ baz: 'qux', foo: 'bar' }, [{ op: 'remove', path: '/baz' }]), { foo: 'bar' });
  t.same(apply({ foo: ['bar', 'qux', 'baz'] }, [{ op: 'remove', path: '/foo/1' }]), { foo: ['bar', 'baz'] });
  t.same(apply({ baz: 'qux', foo: 'bar' }, [{ op: 'replace', path: '/baz', value: 'boo' }]), { baz: 'boo', foo: 'bar' });
  t.same(apply({ foo: { bar: 'baz', waldo: 'fred' }, qux: { corge: 'grault' } }, [{ op: 'move', from: '/foo/waldo', path: '/qux/thud' }]), {
    foo: { bar: 'baz' },
    qux: { corge: 'grault', thud: 'fred' },
  });
  t.same(apply({ a: { b: 1 } }, [{ op: 'copy', from: '/a', path: '/c' }]), { a: { b: 1 }, c: { b: 1 } });
  t.same(
    apply({ 'a/b': 1, 'm~n': 2 }, [
      { op: 'remove', path: '/a~1b' },
      { op: 'replace', path: '/m~0n', value: 3 },
    ]),
    { 'm~n': 3 },
    'escaped tokens',
  );
  t.same(
    apply({ baz: 'qux', foo: ['a', 2, 'c'] }, [
      { op: 'test', path: '/baz', value: 'qux' },
      { op: 'test', path: '/foo/1', value: 2 },
    ]),
    { baz: 'qux', foo: ['a', 2, 'c'] },
  );
  t.same(apply({ a: { x: 1, y: 2 } }, [{ op: 'test', path: '/a', value: { y: 2, x: 1 } }]), { a: { x: 1, y: 2 } }, 'objects are equal in any key order');
  const copied = apply({ a: { b: [1] } }, [
    { op: 'copy', from: '/a', path: '/c' },
    { op: 'add', path: '/c/b/-', value: 2 },
  ]) as any;
  t.same(copied.a.b, [1], 'a copy is not the same object as its source');
});

t.test('a patch that does not apply is a 422 Status, a body that is not a patch a 400', async (t) => {
  const refusals: [object, object[], RegExp][] = [
    [{ baz: 'qux' }, [{ op: 'test', path: '/baz', value: 'bar' }], /test of "\/baz" failed/],
    [{ foo: 'bar' }, [{ op: 'remove', path: '/nope' }], /no such path/],
    [{ foo: 'bar' }, [{ op: 'add', path: '/baz/bat', value: 'qux' }], /no such path/],
    [{ foo: [1] }, [{ op: 'add', path: '/foo/5', value: 2 }], /out of range/],
    [{ foo: [1] }, [{ op: 'replace', path: '/foo/01', value: 2 }], /not an array index/],
    [{ foo: 1 }, [{ op: 'frobnicate', path: '/foo' }], /unknown operation/],
    [{ foo: 1 }, [{ op: 'add', path: 'foo', value: 1 }], /not a JSON pointer/],
  ];
  for (const [doc, ops, message] of refusals) {
    const [code, text] = codeOf(() => apply(doc, ops));
    t.equal(code, 422, JSON.stringify(ops));
    t.match(text, message);
  }
  for (const body of ['{"op":"add"}', 'not json', '[1]']) t.equal(codeOf(() => parseJsonPatch(body))[0], 400, body);
});

t.test('hostile patches are refused before they cost memory or stack: copy bombs, too many operations, deep values', async (t) => {
  // Each copy doubles the document: 40 of them would be 2^40 times its size.
  const doubling = Array.from({ length: 40 }, () => ({ op: 'copy', from: '/a', path: '/a/-' }));
  const [code, message] = codeOf(() => apply({ a: ['x'.repeat(1000)] }, doubling));
  t.equal(code, 422, 'a copy bomb is refused');
  t.match(message, new RegExp(`more than ${MAX_JSON_PATCH_COPY_BYTES} bytes`));
  t.equal(codeOf(() => apply({ a: [1] }, doubling.slice(0, 5)))[0], 0, 'a few copies still apply');
  const many = JSON.stringify(Array.from({ length: MAX_JSON_PATCH_OPERATIONS + 1 }, () => ({ op: 'test', path: '', value: 1 })));
  t.equal(codeOf(() => parseJsonPatch(many))[0], 413, 'more operations than the apiserver takes');
  const deep = `[{"op":"add","path":"/x","value":${'['.repeat(100_000)}${']'.repeat(100_000)}}]`;
  t.match(
    codeOf(() => parseJsonPatch(deep)),
    [400, /nested more than/],
    'a value nested 100,000 deep',
  );
  // Adding a value just under the bound, deep inside a document, would pass parsing but not the result's check.
  const nested = (depth: number): unknown => (depth === 0 ? 1 : { n: nested(depth - 1) });
  const value = nested(MAX_BODY_NESTING - 2);
  t.match(
    codeOf(() => apply({ a: nested(10) }, [{ op: 'add', path: '/a/n/n/n', value }])),
    [400, /patched object is nested more than/],
  );
});

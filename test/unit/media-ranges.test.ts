// The one reader of Accept and Content-Type headers: types as the apiserver reads them, ranges in goautoneg's order.
import t from 'tap';
import { mediaRanges, mediaTypeOf } from '../../lib/request/media-ranges.ts';

t.test('a media type is read without its parameters, in lower case', async (t) => {
  t.equal(mediaTypeOf(' Application/JSON ; charset=utf-8'), 'application/json');
  t.equal(mediaTypeOf('application/vnd.kubernetes.protobuf'), 'application/vnd.kubernetes.protobuf');
  t.equal(mediaTypeOf(''), '');
});

t.test('ranges come by q, then the more specific, then as written; q=0 is no range', async (t) => {
  const types = (accept: string) => mediaRanges(accept).map((range) => range.type);
  t.same(types('application/json;q=0.5, application/yaml'), ['application/yaml', 'application/json']);
  t.same(types('*/*, application/yaml'), ['application/yaml', '*/*']);
  t.same(types('application/*, application/json'), ['application/json', 'application/*']);
  t.same(types('application/json, application/yaml'), ['application/json', 'application/yaml']);
  t.same(types('application/yaml;q=0, application/json'), ['application/json']);
  t.same(types(' , application/json'), ['application/json']);
});

t.test('a Table or metadata form is marked as transformed, whatever its encoding', async (t) => {
  const [table, plain] = mediaRanges('application/json;as=Table;v=v1;g=meta.k8s.io, application/json;q=0.9');
  t.equal(table?.transformed, true);
  t.equal(plain?.transformed, false);
  t.equal(plain?.q, 0.9);
});

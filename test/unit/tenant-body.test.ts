// A client's JSON and YAML bodies: hostile shapes (deep nesting, alias cycles and bombs) are 400 Status errors, and
// ordinary bodies, YAML's shared aliases included, parse as before.
import t from 'tap';
import { checkBodyShape, MAX_BODY_NESTING, parseJsonBody, parseJsonOrYamlBody, parseYamlBody } from '../../lib/convert/tenant-body.ts';
import { thrownStatus } from '../helpers/status-error.ts';

const refusal = thrownStatus;

const arrays = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
const objects = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);

t.test('nesting up to MAX_BODY_NESTING passes, one level more is a 400 naming the bound', async (t) => {
  for (const nested of [arrays, objects]) {
    t.ok(parseJsonBody(nested(MAX_BODY_NESTING)), `${MAX_BODY_NESTING} levels`);
    for (const depth of [MAX_BODY_NESTING + 1, 100_000]) {
      const error = refusal(() => parseJsonBody(nested(depth)));
      t.equal(error.code, 400);
      t.equal(error.reason, 'BadRequest');
      t.match(error.message, `the request body is nested more than ${MAX_BODY_NESTING} levels deep`);
    }
  }
  // Wide is fine: 200,000 siblings are one level.
  t.equal((parseJsonBody(`[${Array(200_000).fill('{}').join(',')}]`) as unknown[]).length, 200_000);
});

t.test('YAML: alias cycles, alias bombs and deep flow nesting are 400s; shared aliases still parse', async (t) => {
  for (const cycle of ['&a [*a]', '&a {x: *a}', 'top: &a {inner: {list: [1, *a]}}']) {
    t.match(
      refusal(() => parseYamlBody(cycle)),
      { code: 400, message: /alias cycle/ },
      cycle,
    );
  }
  const laughs = ['a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]'];
  for (const name of 'bcdefghi')
    laughs.push(
      `${name}: &${name} [${Array(9)
        .fill('*' + String.fromCharCode(name.charCodeAt(0) - 1))
        .join(', ')}]`,
    );
  t.match(
    refusal(() => parseYamlBody(laughs.join('\n'))),
    { code: 400, message: /alias bomb/ },
  );
  t.match(
    refusal(() => parseYamlBody(arrays(100_000))),
    { code: 400, message: /nested more than/ },
  );
  t.match(
    refusal(() => parseYamlBody('a: [unclosed')),
    { code: 400, message: /not valid YAML/ },
  );
  const shared = parseYamlBody('base: &b {x: 1}\none: *b\ntwo: *b\n') as Record<string, unknown>;
  t.same(shared, { base: { x: 1 }, one: { x: 1 }, two: { x: 1 } }, 'an alias used twice is not a cycle');
});

t.test('the content type picks the parser, as the apiserver reads it', async (t) => {
  t.same(parseJsonOrYamlBody('a: 1', 'application/apply-patch+yaml'), { a: 1 });
  t.same(parseJsonOrYamlBody('{"a":1}', 'application/merge-patch+json'), { a: 1 });
  t.match(
    refusal(() => parseJsonOrYamlBody('a: 1', 'application/json')),
    { code: 400, message: /not valid JSON/ },
  );
  t.match(
    refusal(() => checkBodyShape(JSON.parse(objects(MAX_BODY_NESTING + 1)), 'the patched object')),
    { message: /^the patched object is nested/ },
  );
});

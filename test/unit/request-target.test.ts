import t from 'tap';
import { malformedRequestTarget } from '../../lib/request/request-target.ts';

const clean = [
  '/api/v1/namespaces/default/pods',
  '/apis/apps/v1/deployments?watch=true&labelSelector=a%3Db',
  '/api/v1/namespaces/default/configmaps/a.b-c',
  '/',
  '/openapi/v3/apis/apps/v1?hash=ABC',
];
const malformed: [string | undefined, RegExp][] = [
  [undefined, /must start with/],
  ['', /must start with/],
  ['api/v1', /must start with/],
  ['http://evil/api', /must start with/],
  ['/api/v1/namespaces/%zz', /percent-encoding/],
  ['/api/v1/namespaces/../secrets', /"\.\."/],
  ['/api/v1/namespaces/%2e%2e/secrets', /"\.\."/],
  ['/api/v1/./pods', /"\."/],
  ['/api//v1', /empty segments/],
  ['/api/v1/namespaces/a%2F%2Fb', /empty segments/],
  ['/api/v1 HTTP/1.1', /not allowed/],
  ['/api/v1\u0000', /not allowed/],
  ['/api/v1#frag', /not allowed/],
  ['/' + 'a'.repeat(20_000), /longer than/],
  // Encoded, each of these would end or change the path upstream (the OpenAPI v3 `%3F` leak of issue 13).
  ['/openapi/v3/apis/bravo1-example.com/v1%3F/x', /encoded character/],
  ['/openapi/v3/apis/x/v1%23/x', /encoded character/],
  ['/api/v1/namespaces/default/configmaps/a%00', /encoded character/],
  ['/api/v1/namespaces/default/configmaps/a%0A', /encoded character/],
  ['/api/v1/namespaces/default/configmaps/a%0d', /encoded character/],
  ['/api/v1/namespaces/default/configmaps/a%7F', /encoded character/],
];

t.test('clean request targets pass', async (t) => {
  for (const target of clean) t.equal(malformedRequestTarget(target), null, target);
});

t.test('malformed request targets get a 400 Status with a clear message', async (t) => {
  for (const [target, message] of malformed) {
    const problem = malformedRequestTarget(target);
    t.equal(problem?.code, 400, String(target).slice(0, 40));
    t.equal(problem?.reason, 'BadRequest');
    t.match(problem?.message, message);
  }
});

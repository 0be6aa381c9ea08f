// The request log line, as written to stderr by an in-process tenantgate (its upstream points nowhere): one JSON line
// per request with who, what and the outcome, and never a header, a token or a query string the request carried.
import type { ClientHttp2Session } from 'node:http2';
import t, { type Test } from 'tap';
import { issueCertificate } from '../../lib/auth/pki.ts';
import { issueTenantAdminCertificate } from '../../lib/tenants/credentials.ts';
import { MemoryTenantStore } from '../../lib/tenants/memory-store.ts';
import type { ClusterCredentials } from '../../lib/upstream/kubeconfig.ts';
import { startGatewayWithoutUpstream } from '../helpers/gateway-without-upstream.ts';
import { connectH2, h1Request, h2Request } from '../helpers/http.ts';

const SECRETS = {
  token: 'tg-request-log-bearer-5d81c0',
  query: 'tg-request-log-query-9b27e4',
  user: 'tg-request-log-impersonated-user',
  group: 'tg-request-log-impersonated-group',
  uid: 'tg-request-log-impersonated-uid',
  extra: 'tg-request-log-impersonated-extra',
};
/** What a client may send that the log must never show: credentials, impersonation, the query. */
const CARRIED = {
  authorization: `Bearer ${SECRETS.token}`,
  'impersonate-user': SECRETS.user,
  'impersonate-group': SECRETS.group,
  'impersonate-uid': SECRETS.uid,
  'impersonate-extra-scopes': SECRETS.extra,
};
const QUERY = `?labelSelector=app%3D${SECRETS.query}&token=${SECRETS.query}`;

// Every line tenantgate writes to stderr while the test runs (the log writes through process.stderr).
const written: string[] = [];
const stderrWrite = process.stderr.write;
process.stderr.write = function (chunk: string | Uint8Array, ...rest: unknown[]) {
  written.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString());
  return (stderrWrite as (...args: unknown[]) => boolean).call(process.stderr, chunk, ...rest);
} as typeof process.stderr.write;
t.teardown(() => {
  process.stderr.write = stderrWrite;
});

const store = new MemoryTenantStore();
const { gateway, ca } = await startGatewayWithoutUpstream(store, { requestLogLevel: 'info' });
const credentials = ({ certPem, keyPem }: { certPem: string; keyPem: string }): ClusterCredentials => ({
  server: gateway.url,
  caPem: ca.certPem,
  certPem,
  keyPem,
});
const admin: ClientHttp2Session = connectH2(
  credentials(issueCertificate(ca, { commonName: 'tenantgate-admin', organizations: ['system:masters'], usage: 'client' })),
);
t.teardown(async () => {
  admin.close();
  await gateway.close();
});

const created = await h2Request(admin, 'POST', '/apis/tenant.kubezoo.io/v1alpha1/tenants', {
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ apiVersion: 'tenant.kubezoo.io/v1alpha1', kind: 'Tenant', metadata: { name: 'logt01' }, spec: {} }),
});
if (created.status !== 201) throw new Error(`create tenant logt01: ${created.status} ${created.body}`);
// The tenant's own admin certificate: its requests pass authentication and are classified (then fail upstream).
const tenant = credentials(await issueTenantAdminCertificate(ca, store.get('logt01')!));

/** The request lines logged since `written` held `since` chunks, parsed. */
function requestLines(since: number): Record<string, unknown>[] {
  return written
    .slice(since)
    .join('')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((entry) => entry.msg === 'request');
}

/** Waits for the request's line: it is written when the response closes, just after the client has the answer. */
async function lineOf(since: number, match: (entry: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const line = requestLines(since).find(match);
    if (line !== undefined) return line;
    if (Date.now() > deadline) throw new Error(`no request line within 5 s; logged:\n${written.join('')}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Neither the request's line nor anything else written meanwhile shows what the request carried. */
function assertNothingCarried(t: Test, line: Record<string, unknown>, since: number) {
  // An impersonation tenantgate honours is logged as `as` (whom the request ran as): allowed there, nowhere else.
  const { as: _honoured, ...rest } = line;
  const text = JSON.stringify(rest);
  for (const [name, secret] of Object.entries(SECRETS)) t.notOk(text.includes(secret), `the request line: no ${name} the request carried`);
  t.notMatch(text, /bearer|authorization|impersonate|labelSelector|token=|\?/i, 'the request line: no header name and no query');
  const meanwhile = written.slice(since).join('').replaceAll(`"as":"${SECRETS.user}"`, '');
  for (const [name, secret] of Object.entries(SECRETS)) t.notOk(meanwhile.includes(secret), `all of stderr meanwhile: no ${name} the request carried`);
  t.notMatch(meanwhile, /bearer|impersonate-/i, 'all of stderr meanwhile: no header name');
}

t.test('the log line of a request carries its tenant, verb, resource and code, in the same fields as before', async (t) => {
  const before = written.length;
  const answer = await h1Request(tenant, 'GET', '/api/v1/namespaces/default/configmaps');
  t.ok(answer.status > 0);
  const line = await lineOf(before, (entry) => entry.tenant === 'logt01' && entry.resource === 'configmaps');
  t.match(line, {
    level: 'info',
    msg: 'request',
    tenant: 'logt01',
    user: 'admin',
    verb: 'list',
    resource: 'configmaps',
    namespace: 'default',
    code: answer.status,
    durationMs: Number,
  });
  t.match(line.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'time: ISO 8601, UTC');
  t.notOk('pid' in line || 'hostname' in line, 'only the fields tenantgate gives');
});

t.test("an administrator's HTTP/2 request with a bearer token, Impersonate-* headers and a query: none of them logged", async (t) => {
  const before = written.length;
  const answer = await h2Request(admin, 'GET', `/apis/tenant.kubezoo.io/v1alpha1/tenants${QUERY}`, { headers: CARRIED });
  t.ok(answer.status > 0);
  const line = await lineOf(before, (entry) => entry.tenant === null && entry.code === answer.status);
  assertNothingCarried(t, line, before);
});

t.test("a tenant's HTTP/1.1 request with a bearer token, Impersonate-* headers and a query: none of them logged", async (t) => {
  const before = written.length;
  const answer = await h1Request(tenant, 'GET', `/api/v1/namespaces/default/configmaps${QUERY}`, { headers: CARRIED });
  t.ok(answer.status > 0);
  const line = await lineOf(before, (entry) => entry.tenant === 'logt01' && entry.code === answer.status);
  assertNothingCarried(t, line, before);
});

// A tenant's CRD schema in its OpenAPI (v2, JSON and protobuf, and v3 through kubectl explain) as soon as the
// upstream publishes it, polled the way the conformance specs poll (If-None-Match), and never in another tenant's.
import type { ClientHttp2Session } from 'node:http2';
import t from 'tap';
import { connectH2, credentialsOf, h2Request } from '../helpers/http.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';

let stack: Stack;
let alpha: TestTenant;
let bravo: TestTenant;
let alphaSession: ClientHttp2Session;
let bravoSession: ClientHttp2Session;

const GROUP = 'crd-publish-openapi-test-foo.example.com';
const CANARY = 'Specification of Foo, alpha-only-canary';
const crd = (versions: string[]) => ({
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `foos.${GROUP}` },
  spec: {
    group: GROUP,
    scope: 'Namespaced',
    names: { plural: 'foos', singular: 'foo', kind: 'Foo', listKind: 'FooList' },
    versions: versions.map((name, i) => ({
      name,
      served: true,
      storage: i === 0,
      schema: {
        openAPIV3Schema: {
          type: 'object',
          description: 'Foo CRD for Testing',
          properties: { spec: { type: 'object', description: CANARY, properties: { bars: { type: 'string', description: 'List of Bars.' } } } },
        },
      },
    })),
  },
});
const definition = (version: string) => `com.example.crd-publish-openapi-test-foo.${version}.Foo`;
const CRD_PATH = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/foos.${GROUP}`;
const json = { 'content-type': 'application/json' };

t.before(async () => {
  stack = await startStack();
  alpha = await createTestTenant(stack, 'oaalfa');
  bravo = await createTestTenant(stack, 'oabrav');
  alphaSession = connectH2(credentialsOf(alpha.kubeconfig));
  bravoSession = connectH2(credentialsOf(bravo.kubeconfig));
});
t.teardown(async () => {
  for (const session of [alphaSession, bravoSession]) session?.close();
  await stack?.stop();
});

/**
 * kubectl explain as this tenant, with a discovery and OpenAPI cache of its own: kubectl keys its cache by server
 * address, which every tenant shares, so one tenant's cached discovery would answer another's kubectl on this machine.
 */
async function explain(tenant: TestTenant, args: string[]) {
  // The upstream publishes OpenAPI v3 a moment after v2 (what the test waited for): a few tries, bounded.
  for (let i = 0; ; i++) {
    const result = await tenant.kubectl(['explain', ...args, `--cache-dir=${stack.dir}/kubectl-cache-${tenant.id}`]);
    if (result.code === 0 || i === 20) return result;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** The conformance specs' poll: every 500 ms, If-None-Match with the last ETag, 304 meaning "as before". */
function openapiPoller(session: ClientHttp2Session) {
  let etag = '';
  let definitions: Record<string, any> = {};
  return {
    get etag() {
      return etag;
    },
    async poll(): Promise<{ status: number; definitions: Record<string, any> }> {
      const answer = await h2Request(session, 'GET', '/openapi/v2', { headers: etag === '' ? {} : { 'if-none-match': etag } });
      if (answer.status === 200) {
        etag = String(answer.headers.etag ?? '');
        definitions = answer.json().definitions;
      } else if (answer.status !== 304) throw new Error(`/openapi/v2: ${answer.status}`);
      return { status: answer.status, definitions };
    },
    async until(holds: (definitions: Record<string, any>) => boolean, what: string): Promise<number> {
      const start = Date.now();
      for (let i = 0; i < 120; i++) {
        if (holds((await this.poll()).definitions)) return Date.now() - start;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      throw new Error(`${what}: not within 60 s (the spec's wait)`);
    },
  };
}

t.test("a new CRD's schema is published to its tenant within the spec's wait, and renamed and removed versions go", async (t) => {
  const poller = openapiPoller(alphaSession);
  await poller.poll();
  t.equal((await poller.poll()).status, 304, "unchanged: 304 to the tenant's own ETag");
  const created = await h2Request(alphaSession, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
    headers: json,
    body: JSON.stringify(crd(['v2', 'v3'])),
  });
  t.equal(created.status, 201, created.body);
  const published = await poller.until((d) => d[definition('v2')] !== undefined && d[definition('v3')] !== undefined, 'v2 and v3 published');
  t.ok(published < 15_000, `published after ${published} ms`);
  const { definitions } = await poller.poll();
  t.equal(definitions[definition('v2')].properties.spec.description, CANARY);
  t.notOk(
    Object.keys(definitions).some((name) => name.includes('oaalfa')),
    'no upstream names',
  );

  const explained = await explain(alpha, ['foos.spec']);
  t.equal(explained.code, 0, explained.stderr);
  t.match(explained.stdout, CANARY, 'kubectl explain (OpenAPI v3) shows the schema');
  const explainedV2 = await explain(alpha, ['foos.spec', '--output=plaintext-openapiv2']);
  t.match(explainedV2.stdout, CANARY, 'and from OpenAPI v2 in protobuf');

  // As the spec renames: a JSON patch with a test op.
  const patch = '[{"op":"test","path":"/spec/versions/1/name","value":"v3"},{"op":"replace","path":"/spec/versions/1/name","value":"v4"}]';
  const renamed = await h2Request(alphaSession, 'PATCH', CRD_PATH, { headers: { 'content-type': 'application/json-patch+json' }, body: patch });
  t.equal(renamed.status, 200, renamed.body);
  await poller.until((d) => d[definition('v4')] !== undefined && d[definition('v3')] === undefined && d[definition('v2')] !== undefined, 'v3 renamed to v4');
  const current = (await h2Request(alphaSession, 'GET', CRD_PATH)).json();
  current.spec.versions[1].served = false;
  const unserved = await h2Request(alphaSession, 'PUT', CRD_PATH, { headers: json, body: JSON.stringify(current) });
  t.equal(unserved.status, 200, unserved.body);
  await poller.until((d) => d[definition('v4')] === undefined && d[definition('v2')] !== undefined, 'v4 no longer served');
  t.equal((await h2Request(alphaSession, 'DELETE', CRD_PATH)).status, 200);
  await poller.until((d) => d[definition('v2')] === undefined && d[definition('v4')] === undefined, 'removed');
});

t.test("another tenant, with a CRD of the same name, never sees the first one's schema, nor a 304 for its ETag", async (t) => {
  const alphaPoller = openapiPoller(alphaSession);
  for (const [session, description] of [
    [alphaSession, CANARY],
    [bravoSession, "bravo's own"],
  ] as const) {
    const body = crd(['v1']);
    body.spec.versions[0]!.schema.openAPIV3Schema.properties.spec.description = description;
    const created = await h2Request(session, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', { headers: json, body: JSON.stringify(body) });
    t.equal(created.status, 201, created.body);
  }
  await alphaPoller.until((d) => d[definition('v1')]?.properties?.spec?.description === CANARY, "alpha's v1");
  const bravoPoller = openapiPoller(bravoSession);
  await bravoPoller.until((d) => d[definition('v1')] !== undefined, "bravo's v1");
  const bravoView = await h2Request(bravoSession, 'GET', '/openapi/v2');
  t.notMatch(bravoView.body, 'alpha-only-canary', "nothing of alpha's schema in bravo's document");
  t.notMatch(bravoView.body, /oaalfa|oabrav/, 'no upstream names');
  const bravoProtobuf = await h2Request(bravoSession, 'GET', '/openapi/v2', {
    headers: { accept: 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf' },
  });
  t.notMatch(bravoProtobuf.body, 'alpha-only-canary', 'nor in its protobuf form');
  t.not(bravoPoller.etag, alphaPoller.etag, "each tenant's view has its own ETag");
  const withAlphasEtag = await h2Request(bravoSession, 'GET', '/openapi/v2', { headers: { 'if-none-match': alphaPoller.etag } });
  t.equal(withAlphasEtag.status, 200, "alpha's ETag confirms nothing to bravo");
  t.notMatch(withAlphasEtag.body, 'alpha-only-canary');
  const explained = await explain(bravo, ['foos.spec']);
  t.match(explained.stdout, "bravo's own", explained.stderr);
  t.notMatch(explained.stdout, 'alpha-only-canary');
});

t.test("a new cluster-scoped CRD's resources are usable at once by its tenant, and by no other", async (t) => {
  const group = 'clustered.example.com';
  const body = crd(['v1']);
  body.metadata.name = `foos.${group}`;
  body.spec.group = group;
  body.spec.scope = 'Cluster';
  const created = await h2Request(alphaSession, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', {
    headers: json,
    body: JSON.stringify(body),
  });
  t.equal(created.status, 201, created.body);
  const established = await alpha.kubectl(['wait', '--for=condition=Established', '--timeout=30s', `crd/foos.${group}`]);
  t.equal(established.code, 0, established.stderr);
  // As the apiextensions fixtures do: one resource right after the CRD is established, no retry on 403.
  const made = await h2Request(alphaSession, 'POST', `/apis/${group}/v1/foos`, {
    headers: json,
    body: JSON.stringify({ apiVersion: `${group}/v1`, kind: 'Foo', metadata: { name: 'setup-instance' } }),
  });
  t.equal(made.status, 201, made.body);
  t.equal((await h2Request(bravoSession, 'GET', `/apis/${group}/v1/foos/setup-instance`)).status, 404, 'bravo: no such group');
  const bravoMade = await h2Request(bravoSession, 'POST', `/apis/${group}/v1/foos`, {
    headers: json,
    body: JSON.stringify({ apiVersion: `${group}/v1`, kind: 'Foo', metadata: { name: 'setup-instance' } }),
  });
  t.equal(bravoMade.status, 404, "bravo cannot create in alpha's group");
  const alphaRole = JSON.parse((await stack.kubectlDirect(['get', 'clusterrole', 'tenantgate:tenant-custom-resources:oaalfa', '-o', 'json'])).stdout);
  t.match(JSON.stringify(alphaRole.rules), `oaalfa-${group}`, "alpha's upstream role names its group");
  const bravoRole = await stack.kubectlDirect(['get', 'clusterrole', 'tenantgate:tenant-custom-resources:oabrav']);
  t.match(bravoRole.stderr, /NotFound/, 'bravo, with no cluster-scoped CRD, keeps no such role upstream');
});

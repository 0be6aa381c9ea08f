// Each tenant's own server URL (`/tenants/<id>`): kubectl keys its discovery and HTTP caches by the server URL, so one
// person holding two tenants' kubeconfigs with one cache directory must still get each tenant's own API. The URL is
// served only to its tenant's credentials; the bare address keeps serving kubeconfigs made before.
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { renderKubeconfig } from '../../lib/upstream/kubeconfig.ts';
import { connectH2, credentialsOf, EXEC_UPGRADE_HEADERS, h1Request, h2Request } from '../helpers/http.ts';
import { eventually, kubectlOk } from '../helpers/kit.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';

let stack: Stack;
let alpha: TestTenant;
let bravo: TestTenant;
let scratch: string;

/** A namespaced CRD in a group of the tenant's own (no other tenant has it). */
function crdOf(group: string, kind: string, plural: string) {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      scope: 'Namespaced',
      names: { plural, singular: kind.toLowerCase(), kind, listKind: `${kind}List` },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
    },
  };
}

const OWN = new Map<string, { group: string; plural: string }>();

/** kubectl as `tenant` with the one cache directory every tenant here shares, as a person's ~/.kube/cache is. */
const shared = (tenant: TestTenant, args: string[]) => tenant.kubectl([`--cache-dir=${join(scratch, 'shared-cache')}`, ...args]);

t.before(async () => {
  stack = await startStack();
  scratch = mkdtempSync(join(stack.dir, 'server-url-'));
  alpha = await createTestTenant(stack, 'urlalf');
  bravo = await createTestTenant(stack, 'urlbrv');
  OWN.set(alpha.id, { group: 'alpha.example.com', plural: 'widgets' });
  OWN.set(bravo.id, { group: 'bravo.example.com', plural: 'gadgets' });
  for (const [tenant, kind] of [
    [alpha, 'Widget'],
    [bravo, 'Gadget'],
  ] as const) {
    const { group, plural } = OWN.get(tenant.id)!;
    // (A cache of its own for the setup: the shared one must start empty.)
    const setup = (args: string[], input?: string) => kubectlOk(tenant, [`--cache-dir=${join(scratch, 'setup', tenant.id)}`, ...args], input);
    await setup(['apply', '-f', '-'], JSON.stringify(crdOf(group, kind, plural)));
    await setup(['wait', '--for=condition=Established', `crd/${plural}.${group}`, '--timeout=30s']);
    await eventually(
      `${tenant.id}'s ${plural} served`,
      async () => (await tenant.kubectl([`--cache-dir=${join(scratch, 'setup', tenant.id)}`, 'get', plural])).code === 0,
    );
  }
});

t.teardown(() => stack?.stop());

t.test("the Tenant API's kubeconfig names the tenant's own URL", async (t) => {
  for (const tenant of [alpha, bravo]) {
    t.equal(credentialsOf(tenant.kubeconfig).server, `${stack.gatewayUrl}/tenants/${tenant.id}`, `${tenant.id}'s server`);
  }
  // At the address the administrator reached tenantgate at (its external name), which the tenant will use too.
  const port = new URL(stack.gatewayUrl).port;
  const session = connectH2(credentialsOf(stack.adminKubeconfig));
  try {
    const issued = async (authority: string) => {
      const answer = await h2Request(session, 'GET', `/apis/tenant.kubezoo.io/v1alpha1/tenants/${alpha.id}/kubeconfig`, {
        headers: { ':authority': authority },
      });
      t.equal(answer.status, 200, answer.body);
      return JSON.parse(answer.body).clusters[0].cluster.server as string;
    };
    t.equal(await issued(`localhost:${port}`), `https://localhost:${port}/tenants/${alpha.id}`, 'the name it was asked at');
    t.equal(await issued(`tenantgate.example.com`), `https://tenantgate.example.com/tenants/${alpha.id}`, 'behind a load balancer on 443');
    // (node's HTTP/2 server refuses such an :authority itself; HTTP/1.1 carries any Host.)
    const odd = await h1Request(credentialsOf(stack.adminKubeconfig), 'GET', `/apis/tenant.kubezoo.io/v1alpha1/tenants/${alpha.id}/kubeconfig`, {
      headers: { host: `evil@example.com:${port}` },
      servername: 'localhost',
    });
    t.equal(odd.status, 200, odd.body);
    t.equal(
      JSON.parse(odd.body).clusters[0].cluster.server,
      `${stack.gatewayUrl}/tenants/${alpha.id}`,
      'a Host with more than a host and port: the address it listens on',
    );
  } finally {
    session.close();
  }
});

t.test("one cache directory, two tenants' kubeconfigs: each sees only its own API", async (t) => {
  // Each in turn reads the shared cache as kubectl does (--cached: no refresh first) right after the other tenant
  // filled it, then fills it with its own.
  for (const [tenant, other] of [
    [alpha, bravo],
    [bravo, alpha],
    [alpha, bravo],
  ] as const) {
    const own = OWN.get(tenant.id)!;
    const theirs = OWN.get(other.id)!;
    const cached = await shared(tenant, ['api-resources', '--cached', '-o', 'name']);
    t.equal(cached.code, 0, cached.stderr);
    const names = cached.stdout.split('\n');
    t.ok(names.includes(`${own.plural}.${own.group}`), `${tenant.id}'s cached discovery has its own group`);
    t.notOk(names.includes(`${theirs.plural}.${theirs.group}`), `and not ${other.id}'s, cached a moment ago in the same directory`);
    const foreign = await shared(tenant, ['get', theirs.plural, '-A']);
    t.not(foreign.code, 0, `${other.id}'s ${theirs.plural} are not offered to ${tenant.id}`);
    t.match(foreign.stderr, `the server doesn't have a resource type "${theirs.plural}"`, 'the error of any cluster without them');
    t.equal((await shared(tenant, ['get', own.plural, '-A'])).code, 0, `${tenant.id} lists its ${own.plural}`);
    const fresh = (await kubectlOk(tenant, [`--cache-dir=${join(scratch, 'shared-cache')}`, 'api-resources', '-o', 'name'])).split('\n');
    t.ok(fresh.includes(`${own.plural}.${own.group}`), `${tenant.id} discovers its ${own.plural} afresh`);
  }
  const discoveryDir = join(scratch, 'shared-cache', 'discovery', new URL(stack.gatewayUrl).host.replace(':', '_'), 'tenants');
  t.ok(existsSync(join(discoveryDir, alpha.id)) && existsSync(join(discoveryDir, bravo.id)), "kubectl keeps each tenant's discovery apart");
});

t.test('kubectl explain reads OpenAPI v3 under the URL too', async (t) => {
  const session = connectH2(credentialsOf(alpha.kubeconfig));
  try {
    const index = await h2Request(session, 'GET', `/tenants/${alpha.id}/openapi/v3`);
    t.equal(index.status, 200);
    const urls = Object.values(index.json().paths as Record<string, { serverRelativeURL: string }>).map((entry) => entry.serverRelativeURL);
    t.ok(urls.length > 10 && urls.every((url) => url.startsWith(`/tenants/${alpha.id}/openapi/v3/`)), 'every document is named under the URL');
    t.ok(
      urls.some((url) => url.startsWith(`/tenants/${alpha.id}/openapi/v3/apis/alpha.example.com/v1?hash=`)),
      'its own group, unprefixed',
    );
    const bare = await h2Request(session, 'GET', '/openapi/v3');
    t.ok(
      Object.values(bare.json().paths as Record<string, { serverRelativeURL: string }>).every((entry) => entry.serverRelativeURL.startsWith('/openapi/v3/')),
      'the bare address names them as the apiserver does',
    );
  } finally {
    session.close();
  }
  const explained = await shared(alpha, ['explain', 'widgets']);
  t.equal(explained.code, 0, explained.stderr);
  t.match(explained.stdout, /GROUP:\s+alpha\.example\.com/);
});

t.test("a tenant's URL serves no other credential", async (t) => {
  const session = connectH2(credentialsOf(alpha.kubeconfig));
  try {
    const own = await h2Request(session, 'GET', `/tenants/${alpha.id}/api/v1/namespaces/default`);
    t.equal(own.status, 200, 'its own URL');
    for (const path of [`/tenants/${bravo.id}/api/v1/namespaces/default`, '/tenants/nosuch/api/v1/namespaces', `/tenants/${bravo.id}`]) {
      const other = await h2Request(session, 'GET', path);
      t.equal(other.status, 403, `${path}: 403`);
      t.equal(other.json().reason, 'Forbidden');
      t.match(other.json().message, `may not use the server URL of tenant`);
      t.notMatch(other.body, /urlbrv-|nosuch-/, 'no upstream name in the answer');
    }
  } finally {
    session.close();
  }
  // HTTP/1.1 strips and checks it the same way.
  const h1Own = await h1Request(credentialsOf(bravo.kubeconfig), 'GET', `/tenants/${bravo.id}/api/v1/namespaces/default`);
  t.equal(h1Own.status, 200, 'HTTP/1.1 under its own URL');
  t.equal(h1Own.json().metadata.name, 'default', "in the tenant's names");
  const h1Other = await h1Request(credentialsOf(bravo.kubeconfig), 'GET', `/tenants/${alpha.id}/api/v1/namespaces/default`);
  t.equal(h1Other.status, 403, "HTTP/1.1 under another tenant's URL: 403");
  // An Upgrade (exec) takes the same path: its own URL reaches the upstream (no such pod there), another's is refused.
  const upgrade = EXEC_UPGRADE_HEADERS;
  const exec = '/api/v1/namespaces/default/pods/web/exec?command=sh&stdout=true';
  const ownExec = await h1Request(credentialsOf(bravo.kubeconfig), 'GET', `/tenants/${bravo.id}${exec}`, { headers: upgrade });
  t.equal(ownExec.status, 404, 'exec under its own URL gets as far as the upstream: no such pod');
  t.notMatch(ownExec.body, /urlbrv-/, "in the tenant's names");
  const otherExec = await h1Request(credentialsOf(bravo.kubeconfig), 'GET', `/tenants/${alpha.id}${exec}`, { headers: upgrade });
  t.equal(otherExec.status, 403, "exec under another tenant's URL: 403");
  t.match(otherExec.json().message, 'may not use the server URL of tenant');
  // An administrator has no tenant, and so no tenant's URL.
  const admin = await stack.kubectl(['get', '--raw', `/tenants/${alpha.id}/api/v1/namespaces`]);
  t.not(admin.code, 0);
  t.match(admin.stderr, /Forbidden|forbidden/);
});

t.test('a kubeconfig naming the bare address keeps working', async (t) => {
  const bare = join(scratch, 'bare.kubeconfig');
  const credentials = credentialsOf(alpha.kubeconfig);
  writeFileSync(bare, renderKubeconfig({ ...credentials, server: stack.gatewayUrl }, 'bare'), { mode: 0o600 });
  const listed = await stack.kubectl([`--cache-dir=${join(scratch, 'bare-cache')}`, 'get', 'widgets', '-A', '-o', 'name'], { kubeconfig: bare });
  t.equal(listed.code, 0, listed.stderr);
  const foreign = await stack.kubectl([`--cache-dir=${join(scratch, 'bare-cache')}`, 'get', 'gadgets', '-A'], { kubeconfig: bare });
  t.not(foreign.code, 0, "and still has no other tenant's kinds");
});

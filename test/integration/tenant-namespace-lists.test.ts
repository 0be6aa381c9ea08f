// Kinds upstream controllers make without the tenant label (ConfigMaps, ServiceAccounts, Events) are listed across
// namespaces one tenant namespace at a time: paging with limit and continue counts only the tenant's objects,
// the continue token works only for its tenant, and kubectl shows the tenant's events, never another's.
import t from 'tap';
import { webDeployment } from '../helpers/fixtures.ts';
import { connectH2, credentialsOf, h2Request } from '../helpers/http.ts';
import { startStack, type Stack } from '../helpers/stack.ts';
import { createTestTenant, type TestTenant } from '../helpers/tenants.ts';
import { kubectlOk } from '../helpers/kit.ts';

let stack: Stack;
let hotel: TestTenant;
let india: TestTenant;

const NAMESPACES = ['apps', 'data', 'web'];

t.before(async () => {
  stack = await startStack();
  hotel = await createTestTenant(stack, 'hotel7');
  india = await createTestTenant(stack, 'india8');
  for (const tenant of [hotel, india]) {
    for (const namespace of NAMESPACES) {
      await kubectlOk(tenant, ['create', 'namespace', namespace]);
      for (const name of ['one', 'two', 'three']) await kubectlOk(tenant, ['-n', namespace, 'create', 'configmap', name, `--from-literal=owner=${tenant.id}`]);
    }
  }
});
t.teardown(() => stack?.stop());

type Item = { metadata: { namespace: string; name: string }; data?: Record<string, string> };

/** Every configmap a tenant can list across namespaces, followed page by page over raw HTTP/2. */
async function pages(tenant: TestTenant, limit: number): Promise<{ items: Item[]; pages: number; tokens: string[] }> {
  const session = connectH2(credentialsOf(tenant.kubeconfig));
  const items: Item[] = [];
  const tokens: string[] = [];
  let token = '';
  let count = 0;
  try {
    do {
      const answer = await h2Request(session, 'GET', `/api/v1/configmaps?limit=${limit}${token ? `&continue=${encodeURIComponent(token)}` : ''}`);
      if (answer.status !== 200) throw new Error(`page ${count}: ${answer.status} ${answer.body}`);
      const list = answer.json();
      if (list.items.length > limit) throw new Error(`page ${count} has ${list.items.length} items, over the limit ${limit}`);
      if (list.metadata.remainingItemCount !== undefined) throw new Error("remainingItemCount counts other tenants' objects");
      items.push(...list.items);
      token = list.metadata.continue ?? '';
      if (token) tokens.push(token);
      count++;
    } while (token !== '' && count < 100);
  } finally {
    session.close();
  }
  return { items, pages: count, tokens };
}

const keyOf = (item: Item) => `${item.metadata.namespace}/${item.metadata.name}`;

t.test("paging across namespaces counts only the tenant's configmaps and loses none", async (t) => {
  const whole = await pages(hotel, 500);
  t.equal(whole.pages, 1, 'one page when the limit is large');
  const expected = [...NAMESPACES, 'default', 'kube-node-lease', 'kube-public', 'kube-system'].flatMap((ns) =>
    NAMESPACES.includes(ns) ? ['kube-root-ca.crt', 'one', 'three', 'two'].map((n) => `${ns}/${n}`) : [`${ns}/kube-root-ca.crt`],
  );
  t.same(whole.items.map(keyOf).sort(), expected.sort(), "the tenant's configmaps, controller-made ones included, under its names");
  t.ok(
    whole.items.every((item) => item.data?.owner === undefined || item.data.owner === 'hotel7'),
    "none of india8's",
  );

  const paged = await pages(hotel, 2);
  t.equal(paged.pages, Math.ceil(expected.length / 2), `pages of 2: ${paged.pages} pages for ${expected.length} configmaps`);
  t.same(paged.items.map(keyOf), whole.items.map(keyOf), 'the same configmaps in the same order as one page');

  const kubectl = await kubectlOk(hotel, ['get', 'configmaps', '-A', '--chunk-size=3', '-o', 'name']);
  t.equal(kubectl.trim().split('\n').length, expected.length, 'kubectl get -A --chunk-size=3 pages through them all');
  const table = await kubectlOk(hotel, ['get', 'configmaps', '-A', '--chunk-size=4']);
  const rows = table.trim().split('\n').slice(1);
  t.equal(rows.length, expected.length, 'the table kubectl prints has a row for each');
  t.ok(
    rows.every((row) => !row.includes('hotel7-') && !row.includes('india8')),
    "no prefix, nothing of india8's",
  );
});

t.test('a continue token works only for the tenant it was issued to', async (t) => {
  const { tokens } = await pages(hotel, 2);
  const session = connectH2(credentialsOf(india.kubeconfig));
  try {
    const stolen = await h2Request(session, 'GET', `/api/v1/configmaps?limit=2&continue=${encodeURIComponent(tokens[0]!)}`);
    t.equal(stolen.status, 400, "india8 with hotel7's token: 400");
    t.equal(stolen.json().kind, 'Status');
    t.notMatch(stolen.body, /hotel7/, "the answer names nothing of hotel7's");
    // A token forged to name hotel7's namespace for india8.
    const forged = Buffer.from(JSON.stringify({ t: 'india8', n: 'hotel7-apps', c: '', rv: '' })).toString('base64url');
    const forgedAnswer = await h2Request(session, 'GET', `/api/v1/configmaps?limit=2&continue=${forged}`);
    t.equal(forgedAnswer.status, 400, "a token naming another tenant's namespace: 400");
    const garbage = await h2Request(session, 'GET', '/api/v1/configmaps?limit=2&continue=bm90LWEtdG9rZW4');
    t.equal(garbage.status, 400, 'a token tenantgate did not make: 400');
  } finally {
    session.close();
  }
});

t.test("kubectl get events -A shows the tenant's events and none of another's", async (t) => {
  await kubectlOk(hotel, ['apply', '-n', 'web', '-f', '-'], JSON.stringify(webDeployment('web', 'web')));
  let events: Item[] = [];
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    events = JSON.parse(await kubectlOk(hotel, ['get', 'events', '-A', '-o', 'json'])).items;
    if (events.some((e: any) => e.involvedObject?.kind === 'Deployment')) break;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  const scaled = events.find((e: any) => e.involvedObject?.kind === 'Deployment') as any;
  t.ok(scaled, "the Deployment controller's event is listed");
  t.equal(scaled?.metadata.namespace, 'web', "in the tenant's namespace, under its name");
  t.equal(scaled?.involvedObject.namespace, 'web', "about the tenant's Deployment, under its namespace");
  t.notMatch(JSON.stringify(events), /hotel7-|india8/, "no prefix and nothing of india8's in any event");
  const table = await kubectlOk(hotel, ['get', 'events', '-A']);
  t.match(table, /^web\s.*deployment\/web\s/m, "kubectl's table shows it");
  const other = JSON.parse(await kubectlOk(india, ['get', 'events', '-A', '-o', 'json'])).items as any[];
  t.notOk(
    other.some((e) => e.involvedObject?.kind === 'Deployment'),
    "india8 sees no event of hotel7's Deployment",
  );
  const serviceAccounts = (await kubectlOk(india, ['get', 'serviceaccounts', '-A', '-o', 'name', '--chunk-size=2'])).trim().split('\n');
  t.equal(serviceAccounts.length, NAMESPACES.length + 4, 'india8 lists a default ServiceAccount per namespace, in pages of 2');
});

t.test("kubectl get --watch prints the tenant's rows as they change", async (t) => {
  const watch = hotel.kubectl(['get', 'configmaps', '-n', 'apps', '--watch', '--request-timeout=6s']);
  await new Promise((resolve) => setTimeout(resolve, 2000));
  await kubectlOk(hotel, ['-n', 'apps', 'create', 'configmap', 'four', '--from-literal=owner=hotel7']);
  await kubectlOk(india, ['-n', 'apps', 'create', 'configmap', 'five', '--from-literal=owner=india8']);
  const output = (await watch).stdout;
  t.match(output, /^one\s/m, 'the rows there were at the start');
  t.match(output, /^four\s/m, 'and the configmap created while watching');
  t.notMatch(output, /^five\s/m, "not india8's");
});

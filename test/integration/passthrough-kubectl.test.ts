// kubectl through tenantgate gives the same answers as kubectl straight to the kube-apiserver, for every verb.
import t from 'tap';
import { exampleCrd, webDeployment } from '../helpers/fixtures.ts';
import { normalize, parseJsonStream, withoutRepeats } from '../helpers/normalize.ts';
import { startStack, type KubectlResult, type Stack } from '../helpers/stack.ts';

type Kubectl = (args: string[], options?: { input?: string }) => Promise<KubectlResult>;

const crd = exampleCrd('Widget', 'widgets');

function objects(ns: string) {
  return {
    configmap: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: ns, labels: { app: 'web' } }, data: { a: '1' } },
    deployment: webDeployment('web', ns),
    widget: { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w1', namespace: ns, labels: { app: 'web' } }, spec: { size: 1 } },
  };
}

const resources = { configmap: 'configmaps', deployment: 'deployments.apps', widget: 'widgets.example.com' } as const;

function outcome(result: KubectlResult, ns: string): unknown {
  let out: unknown = result.stdout.trim();
  try {
    out = JSON.parse(result.stdout);
  } catch {
    // plain text (e.g. "configmap/settings patched")
  }
  return normalize({ code: result.code, out, err: result.stderr.trim() }, [[ns, 'NS']]);
}

/** One pass over every verb kubectl has for a kind; returns what a user saw at each step. */
async function scenario(kubectl: Kubectl, ns: string, kind: keyof typeof resources): Promise<Record<string, unknown>> {
  const resource = resources[kind];
  const object = objects(ns)[kind];
  const name = object.metadata.name;
  const seen: Record<string, unknown> = {};
  const step = async (label: string, args: string[], input?: string) => {
    seen[label] = outcome(await kubectl(['-n', ns, ...args], { input }), ns);
  };
  // The watch runs across the changes below and must see them in order.
  const watch = kubectl(['-n', ns, 'get', resource, '--watch', '--output-watch-events', '-o', 'json', '--request-timeout=12s']);
  await new Promise((r) => setTimeout(r, 1500));
  await step('create (client-side apply)', ['apply', '-f', '-'], JSON.stringify(object));
  await step('get', ['get', resource, name, '-o', 'json']);
  await step('json patch', ['patch', resource, name, '--type=json', '-p', '[{"op":"add","path":"/metadata/labels/json","value":"yes"}]']);
  await step('merge patch', ['patch', resource, name, '--type=merge', '-p', '{"metadata":{"labels":{"merge":"yes"}}}']);
  await step('strategic merge patch', ['patch', resource, name, '--type=strategic', '-p', '{"metadata":{"labels":{"strategic":"yes"}}}']);
  const applied = { ...object, metadata: { ...object.metadata, labels: { ...object.metadata.labels, ssa: 'yes' } } };
  await step('server-side apply', ['apply', '--server-side', '--field-manager=tester', '-f', '-'], JSON.stringify(applied));
  await step('get after patches', ['get', resource, name, '-o', 'json']);
  await step('list', ['get', resource, '-o', 'json']);
  await step('list by label', ['get', resource, '-l', 'merge=yes', '-o', 'name']);
  await step('delete', ['delete', resource, name, '--wait=false']);
  await step('get after delete', ['get', resource, name, '-o', 'json']);
  const watched = await watch;
  const events = (parseJsonStream(watched.stdout) as { type: string; object: { metadata: { name: string; labels?: Record<string, string> } } }[]).filter(
    (event) => event.object.metadata.name === name,
  );
  seen.watch = withoutRepeats(
    events.map(
      (event) =>
        `${event.type} ${Object.keys(event.object.metadata.labels ?? {})
          .sort()
          .join(',')}`,
    ),
  );
  return seen;
}

let stack: Stack;
t.before(async () => {
  stack = await startStack();
});
t.teardown(() => stack?.stop());

t.test('kubectl through tenantgate sees what kubectl sees directly', async (t) => {
  const gw: Kubectl = (args, o) => stack.kubectl(args, o);
  const direct: Kubectl = (args, o) => stack.kubectlDirect(args, o);
  const created = await gw(['apply', '-f', '-'], { input: JSON.stringify(crd) });
  t.equal(created.code, 0, created.stderr);
  t.equal((await direct(['wait', '--for=condition=Established', 'crd/widgets.example.com', '--timeout=60s'])).code, 0);
  // Established comes a moment before the new resource is served: wait until it lists.
  for (let i = 0; i < 50 && (await direct(['get', 'widgets.example.com', '-A'])).code !== 0; i++) await new Promise((r) => setTimeout(r, 200));
  for (const ns of ['via-gateway', 'via-upstream']) {
    const r = await direct(['create', 'namespace', ns]);
    t.equal(r.code, 0, r.stderr);
  }

  for (const kind of Object.keys(resources) as (keyof typeof resources)[]) {
    const [throughGateway, straight] = await Promise.all([scenario(gw, 'via-gateway', kind), scenario(direct, 'via-upstream', kind)]);
    t.same(throughGateway, straight, `${kind}: every step answers the same through tenantgate`);

    // Not just "equally broken": the steps did what a user expects.
    const after = throughGateway['get after patches'] as { code: number; out: { metadata: { labels: Record<string, string> } } };
    t.equal(after.code, 0, `${kind}: get after patches succeeded`);
    const expectedLabels = kind === 'widget' ? ['app', 'json', 'merge', 'ssa'] : ['app', 'json', 'merge', 'ssa', 'strategic'];
    t.same(Object.keys(after.out.metadata.labels).sort(), expectedLabels, `${kind}: patches applied`);
    if (kind === 'widget') {
      const strategic = throughGateway['strategic merge patch'] as { code: number; err: string };
      t.not(strategic.code, 0, 'custom resources refuse strategic merge patch, as upstream');
      t.match(strategic.err, /strategic[- ]merge[- ]patch/i);
    }
    t.equal((throughGateway['get after delete'] as { code: number }).code, 1, `${kind}: gone after delete`);
    t.match((throughGateway['get after delete'] as { err: string }).err, /NotFound|not found/);
    const watched = throughGateway.watch as string[];
    t.equal(watched[0]?.split(' ')[0], 'ADDED', `${kind}: watch starts with ADDED`);
    t.ok(
      watched.some((e) => e.startsWith('MODIFIED') && e.includes('ssa')),
      `${kind}: watch saw the server-side apply`,
    );
    t.equal(watched.at(-1)?.split(' ')[0], 'DELETED', `${kind}: watch ends with DELETED`);
  }
});

t.test("objects written through tenantgate are the upstream's objects", async (t) => {
  const r = await stack.kubectl(['-n', 'via-gateway', 'create', 'configmap', 'shared', '--from-literal=k=v']);
  t.equal(r.code, 0, r.stderr);
  const direct = await stack.kubectlDirect(['-n', 'via-gateway', 'get', 'configmap', 'shared', '-o', 'jsonpath={.data.k}']);
  t.equal(direct.stdout, 'v');
  // tenantgate impersonated the caller: the upstream recorded the caller, not the proxy, as manager's user.
  const json = JSON.parse((await stack.kubectlDirect(['-n', 'via-gateway', 'get', 'configmap', 'shared', '-o', 'json', '--show-managed-fields'])).stdout);
  t.equal(json.metadata.managedFields[0].manager, 'kubectl-create');
  const who = await stack.kubectl(['auth', 'whoami', '-o', 'json']);
  t.equal(who.code, 0, who.stderr);
  const status = JSON.parse(who.stdout).status.userInfo;
  t.equal(status.username, 'tenantgate-admin');
  t.ok(status.groups.includes('system:masters'));
});

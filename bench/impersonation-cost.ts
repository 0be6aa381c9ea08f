// `node bench/impersonation-cost.ts [--requests N] [--rounds N] [--bindings N]` (after `npm run build`): what the apiserver spends per
// GET on the impersonation attributes tenantgate sends, measured directly against the rig's kube-apiserver: as the
// rig's admin (system:masters, which RBAC never asks about), and as a ServiceAccount holding the chart's ClusterRole,
// with and without its constrained-impersonation verbs (the upstream checks those first and falls back to the legacy
// `impersonate`). Per identity: no impersonation, a tenant read's attributes (user and groups), every attribute (the
// tenant extra too, as writes carry), and a tenant service account's. CPU from /proc, rounds interleaved; loopback
// only, bounded in count. `--bindings`: ClusterRoleBindings of the platform's added first (RBAC scans them all on a
// refused authorization, so each refused check costs in proportion), binding a group nobody carries.
import { mkdtempSync, rmSync } from 'node:fs';
import http2, { type ClientHttp2Session } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { TENANT_EXTRA_KEY, upstreamIdentityOf, type UpstreamIdentity } from '../lib/auth/impersonation.ts';
import { RIG_VERSIONS } from '../lib/rig/build.ts';
import { ensureHelm } from '../lib/rig/helm.ts';
import { runCommand } from '../lib/rig/process.ts';
import { upstreamRequestHeaders } from '../lib/upstream/headers.ts';
import { connectH2, credentialsOf } from '../test/helpers/http.ts';
import { startStack, type Stack } from '../test/helpers/stack.ts';
import { createTestTenant } from '../test/helpers/tenants.ts';
import { cpuMeter, idleCpuRate } from './load/cpu.ts';
import { countedRequests } from './load/counted.ts';
import { median, rounded } from './stats.ts';

const TENANT = 'bimp01';
const CONCURRENCY = 4;
const NAMESPACE = 'tenantgate-bench';
const CONSTRAINED_VERB = /^impersonate(:|-on:)/;

interface Rule {
  verbs: string[];
  [field: string]: unknown;
}

/** The chart's ClusterRole, rendered by helm as `helm install` would. */
async function chartRole(scratch: string): Promise<{ rules: Rule[] }> {
  const helm = await ensureHelm();
  const env = { ...process.env, HELM_CACHE_HOME: join(scratch, 'c'), HELM_CONFIG_HOME: join(scratch, 'f'), HELM_DATA_HOME: join(scratch, 'd') };
  const args = [
    'template',
    'tg',
    'charts/tenantgate',
    '--namespace',
    NAMESPACE,
    '--kube-version',
    RIG_VERSIONS.kubernetes,
    '--show-only',
    'templates/rbac.yaml',
    '--set',
    'etcd.endpoints=http://etcd:2379,tls.existingSecret=serving,tenantCA.existingSecret=tenant-ca',
  ];
  const rendered = await runCommand(helm, args, { env, timeoutMs: 60_000 });
  if (rendered.code !== 0) throw new Error(`helm template: ${rendered.stderr}`);
  const objects = parseAllDocuments(rendered.stdout).map((document) => document.toJS() as { kind?: string; rules?: Rule[] } | null);
  const role = objects.find((object) => object?.kind === 'ClusterRole');
  if (role?.rules === undefined) throw new Error('the chart renders no ClusterRole');
  return { rules: role.rules };
}

/** A ServiceAccount bound to `rules`, and its token. */
async function serviceAccountWith(stack: Stack, name: string, rules: Rule[]): Promise<string> {
  const ok = async (args: string[], input?: string) => {
    const r = await stack.kubectlDirect(args, input === undefined ? {} : { input });
    if (r.code !== 0) throw new Error(`kubectl ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  };
  await ok(['-n', NAMESPACE, 'create', 'serviceaccount', name]);
  await ok(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name }, rules }));
  await ok(['create', 'clusterrolebinding', name, `--clusterrole=${name}`, `--serviceaccount=${NAMESPACE}:${name}`]);
  return (await ok(['-n', NAMESPACE, 'create', 'token', name, '--duration=1h'])).trim();
}

function impersonationOf(identity: UpstreamIdentity): Record<string, string | string[]> {
  const headers = upstreamRequestHeaders({}, identity, {});
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) if (name.startsWith('impersonate-')) out[name] = value as string | string[];
  return out;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { requests: { type: 'string', default: '5000' }, rounds: { type: 'string', default: '3' }, bindings: { type: 'string', default: '2000' } },
  });
  const requests = Number(values.requests);
  const rounds = Number(values.rounds);
  const scratch = mkdtempSync(join(tmpdir(), 'tenantgate-impersonation-'));
  const stack = await startStack({ controllers: false });
  try {
    await createTestTenant(stack, TENANT);
    const session = connectH2(credentialsOf(stack.upstreamKubeconfig));
    const namespace = `${TENANT}-default`;
    const created = await countedRequests(session, 1, 1, () => ({
      method: 'POST',
      path: `/api/v1/namespaces/${namespace}/configmaps`,
      body: JSON.stringify({ metadata: { name: 'probe', labels: { 'tenant.kubezoo.io/tenant': TENANT } }, data: { a: 'b' } }),
      expect: 201,
    })).catch((error: Error) => error);
    if (created instanceof Error && !/409/.test(created.message)) throw created;

    // (A Role of its own: the rig runs no controller manager here, so `view` aggregates nothing.)
    for (const args of [
      ['create', 'namespace', NAMESPACE],
      ['-n', namespace, 'create', 'role', 'probe-reader', '--verb=get', '--resource=configmaps'],
      ['-n', namespace, 'create', 'rolebinding', 'robot-reads', '--role=probe-reader', `--serviceaccount=${namespace}:robot`],
    ]) {
      const done = await stack.kubectlDirect(args);
      if (done.code !== 0) throw new Error(done.stderr);
    }
    const platformBindings = Array.from({ length: Number(values.bindings) }, (_, i) => ({
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: `bench-platform-${i}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: `bench-platform-group-${i}` }],
    }));
    for (let i = 0; i < platformBindings.length; i += 500) {
      const applied = await stack.kubectlDirect(['apply', '--server-side', '-f', '-'], {
        input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: platformBindings.slice(i, i + 500) }),
      });
      if (applied.code !== 0) throw new Error(applied.stderr);
    }
    const chart = await chartRole(scratch);
    const legacyRules = chart.rules.filter((rule) => !rule.verbs.some((verb) => CONSTRAINED_VERB.test(verb)));
    if (legacyRules.length === chart.rules.length) throw new Error('the chart grants no constrained-impersonation verb');
    const path = `/api/v1/namespaces/${namespace}/configmaps/probe`;
    // A bearer token's session, without the client certificate (which the apiserver would take first): one per cell,
    // so an idle one closed meanwhile does not matter.
    const credentials = credentialsOf(stack.upstreamKubeconfig);
    const tokenSession = () => {
      const bare = http2.connect(credentials.server, { ca: credentials.caPem });
      bare.on('error', () => {});
      return bare;
    };
    const adminSession = () => connectH2(credentials);
    const identities: { name: string; session: () => ClientHttp2Session; authorization: Record<string, string> }[] = [
      { name: 'rig admin (system:masters)', session: adminSession, authorization: {} },
      {
        name: "the chart's role without its constrained verbs",
        session: tokenSession,
        authorization: { authorization: `Bearer ${await serviceAccountWith(stack, 'legacy-only', legacyRules)}` },
      },
      { name: "the chart's role", session: tokenSession, authorization: { authorization: `Bearer ${await serviceAccountWith(stack, 'chart', chart.rules)}` } },
    ];
    const counted = async (variant: { session: () => ClientHttp2Session; headers: Record<string, string | string[]> }, count: number) => {
      const cell = variant.session();
      try {
        await countedRequests(cell, count, CONCURRENCY, () => ({ method: 'GET', path, expect: 200, headers: variant.headers }));
      } finally {
        cell.close();
      }
    };
    // The tenant's admin, as its client certificate names it (CN=<id>-admin, OU=<id>, no groups); a service account of its.
    const admin = { user: 'admin', groups: [], tenant: TENANT };
    const robot = {
      user: 'system:serviceaccount:default:robot',
      groups: ['system:serviceaccounts', 'system:serviceaccounts:default', 'system:authenticated'],
      tenant: TENANT,
    };
    const everyAttribute = impersonationOf(upstreamIdentityOf(admin));
    const tenantExtraHeader = `impersonate-extra-${encodeURIComponent(TENANT_EXTRA_KEY)}`;
    const { [tenantExtraHeader]: tenantExtra, ...withoutTenantExtra } = everyAttribute;
    if (tenantExtra === undefined) throw new Error('no tenant extra among the attributes');
    const attributes = [
      { name: 'none', headers: {} },
      { name: 'tenant read (user, groups)', headers: impersonationOf(upstreamIdentityOf(admin, { verb: 'get', subresource: '' })) },
      // The admin's read in its namespace, as tenantgate impersonated it until 2026-12 and as it does now.
      {
        name: "admin's read in its namespace: user and its group",
        headers: impersonationOf({ user: `${TENANT}-admin`, groups: [`${TENANT}:system:authenticated`] }),
      },
      {
        name: "admin's read in its namespace: user alone",
        headers: impersonationOf(upstreamIdentityOf(admin, { verb: 'get', subresource: '', namespace: 'default', resource: 'configmaps' })),
      },
      { name: `every attribute (+ extra ${TENANT_EXTRA_KEY})`, headers: everyAttribute },
      // The same with a domain-prefixed key: constrained impersonation refuses a key without a domain (`tenant`).
      {
        name: 'every attribute, extra key domain-prefixed',
        headers: { ...withoutTenantExtra, 'impersonate-extra-tenantgate.kubezoo.io%2ftenant': tenantExtra },
      },
      { name: "a tenant service account's read", headers: impersonationOf(upstreamIdentityOf(robot, { verb: 'get', subresource: '' })) },
    ];
    // The service accounts' impersonation of a tenant identity is allowed only once RBAC reads the new bindings.
    const variants = identities.flatMap((identity) =>
      attributes.map((attribute) => ({
        name: `${identity.name} · ${attribute.name}`,
        session: identity.session,
        headers: { ...identity.authorization, ...attribute.headers },
      })),
    );
    const warm = async () => {
      for (const variant of variants) await counted(variant, 300);
    };
    for (let attempt = 0; ; attempt++) {
      const failed = await warm().then(
        () => null,
        (error: Error) => error,
      );
      if (failed === null) break;
      if (attempt === 20) throw failed;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const apiserver = stack.rig.processes.find((p) => p.name === 'kube-apiserver')!.pid;
    const idle = await idleCpuRate({ apiserver }, 3);
    const spentBy = new Map<string, number[]>();
    for (let round = 0; round < rounds; round++) {
      for (const variant of variants) {
        const spent = cpuMeter({ apiserver }, idle);
        await counted(variant, requests);
        const perRequest = spent().ms.apiserver! / requests;
        spentBy.set(variant.name, [...(spentBy.get(variant.name) ?? []), perRequest]);
        console.error(`round ${round + 1} ${variant.name}: ${rounded(perRequest, 4)} ms`);
      }
    }
    session.close();
    const upstreamBindings = JSON.parse((await stack.kubectlDirect(['get', 'clusterrolebindings', '-o', 'json'])).stdout).items.length;
    console.log(
      `kube-apiserver CPU per GET of one ConfigMap, ${requests} GETs per cell, median of ${rounds} rounds, ${CONCURRENCY} in flight, ${upstreamBindings} ClusterRoleBindings upstream:`,
    );
    for (const identity of identities) {
      const base = median(spentBy.get(`${identity.name} · none`)!);
      console.log(`${identity.name}:`);
      for (const attribute of attributes) {
        const ms = median(spentBy.get(`${identity.name} · ${attribute.name}`)!);
        console.log(`  - ${attribute.name} (${Object.keys(attribute.headers).length} headers): ${rounded(ms, 4)} ms (${rounded(ms / base, 2)}x)`);
      }
    }
  } finally {
    await stack.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

await main();

// `tenantgate tenant create|get|list|delete|kubeconfig`: an administrator's client of a running tenantgate's Tenant
// API. Talks HTTP/2 with the admin kubeconfig's certificate; never reads or writes etcd itself.
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { stringify as toYaml } from 'yaml';
import { describeOptions } from '../config.ts';
import { upstreamJson, type UpstreamAnswer } from '../upstream/client.ts';
import { loadKubeconfig } from '../upstream/kubeconfig.ts';
import { UpstreamPool } from '../upstream/pool.ts';
import { invalidTenantId, TENANT_API_VERSION, TENANTS_PATH, type Tenant } from './tenant.ts';

export const TENANT_COMMAND_OPTIONS = {
  kubeconfig: {
    type: 'string',
    default: '.tenantgate/dev/admin.kubeconfig',
    description: "an administrator's kubeconfig for tenantgate (TENANTGATE_KUBECONFIG)",
  },
  output: { type: 'string', short: 'o', description: 'create, kubeconfig: write the kubeconfig to this file (default: stdout); get: json or yaml' },
  wait: { type: 'boolean', default: false, description: 'delete: wait until the tenant and everything it had upstream are gone' },
  help: { type: 'boolean', short: 'h', default: false, description: 'show this help' },
} as const;

export const TENANT_COMMAND_USAGE = `Usage: tenantgate tenant <create|get|list|delete|kubeconfig> [id] [flags]

  create <id> [-o FILE]      create a tenant and hand out its admin kubeconfig
  get <id> [-o json|yaml]    show a tenant
  list                       list tenants
  delete <id> [--wait]       delete a tenant and every object it has upstream
  kubeconfig <id> [-o FILE]  issue a new admin kubeconfig for a tenant

${describeOptions(TENANT_COMMAND_OPTIONS)}
`;

const WAIT_LIMIT_MS = 5 * 60_000;

/** The answer's Status message, for errors the server explains. */
function failure(what: string, answer: UpstreamAnswer): Error {
  const message =
    typeof answer.body === 'object' && answer.body !== null && typeof answer.body.message === 'string'
      ? answer.body.message
      : String(answer.body).slice(0, 300);
  return new Error(`${what}: ${answer.status} ${message}`);
}

function conditionSummary(tenant: Tenant): string {
  if (tenant.metadata.deletionTimestamp !== undefined) return 'Terminating';
  const ready = tenant.status?.conditions?.find((c) => c.type === 'Ready');
  return ready === undefined ? 'Pending' : ready.status === 'True' ? 'Ready' : `NotReady (${ready.reason ?? 'unknown'})`;
}

function age(timestamp: string): string {
  const seconds = Math.max(0, Math.round((Date.now() - Date.parse(timestamp)) / 1000));
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)}m`;
  if (seconds < 172_800) return `${Math.round(seconds / 3600)}h`;
  return `${Math.round(seconds / 86_400)}d`;
}

function writeKubeconfig(text: string, file: string | undefined): void {
  if (file === undefined) process.stdout.write(text);
  else {
    writeFileSync(file, text, { mode: 0o600 });
    process.stderr.write(`kubeconfig written to ${file}\n`);
  }
}

export async function runTenantCommand(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args, options: TENANT_COMMAND_OPTIONS, strict: true, allowPositionals: true });
  const [verb, id, ...extra] = positionals;
  if (values.help || verb === undefined) {
    process.stdout.write(TENANT_COMMAND_USAGE);
    return;
  }
  if (extra.length > 0) throw new Error(`unexpected arguments: ${extra.join(' ')}`);
  const needsId = verb !== 'list';
  if (needsId) {
    if (id === undefined) throw new Error(`tenant ${verb} needs a tenant id`);
    const problem = invalidTenantId(id);
    if (problem !== null) throw new Error(problem);
  }
  const pool = new UpstreamPool(loadKubeconfig(process.env.TENANTGATE_KUBECONFIG ?? values.kubeconfig));
  try {
    switch (verb) {
      case 'create': {
        const created = await upstreamJson(pool, 'POST', TENANTS_PATH, { apiVersion: TENANT_API_VERSION, kind: 'Tenant', metadata: { name: id }, spec: {} });
        if (created.status !== 201) throw failure(`creating tenant ${id}`, created);
        process.stderr.write(`tenant/${id} created\n`);
        writeKubeconfig(await fetchKubeconfig(pool, id!), values.output);
        return;
      }
      case 'kubeconfig':
        writeKubeconfig(await fetchKubeconfig(pool, id!), values.output);
        return;
      case 'get': {
        const got = await upstreamJson(pool, 'GET', `${TENANTS_PATH}/${id}`);
        if (got.status !== 200) throw failure(`getting tenant ${id}`, got);
        process.stdout.write(values.output === 'json' ? JSON.stringify(got.body, null, 2) + '\n' : toYaml(got.body));
        return;
      }
      case 'list': {
        const listed = await upstreamJson(pool, 'GET', TENANTS_PATH);
        if (listed.status !== 200) throw failure('listing tenants', listed);
        const rows = (listed.body.items as Tenant[]).map((t) => [t.metadata.name, conditionSummary(t), age(t.metadata.creationTimestamp)]);
        const table = [['NAME', 'STATUS', 'AGE'], ...rows];
        const widths = [0, 1].map((c) => Math.max(...table.map((r) => r[c]!.length)) + 3);
        process.stdout.write(table.map((r) => r[0]!.padEnd(widths[0]!) + r[1]!.padEnd(widths[1]!) + r[2]).join('\n') + '\n');
        return;
      }
      case 'delete': {
        const deleted = await upstreamJson(pool, 'DELETE', `${TENANTS_PATH}/${id}`);
        if (deleted.status !== 200 && deleted.status !== 202) throw failure(`deleting tenant ${id}`, deleted);
        process.stderr.write(`tenant/${id} deleted\n`);
        if (values.wait) await waitUntilGone(pool, id!);
        return;
      }
      default:
        throw new Error(`unknown tenant command ${verb}\n\n${TENANT_COMMAND_USAGE}`);
    }
  } finally {
    pool.close();
  }
}

/** A newly issued admin kubeconfig of the tenant, from tenantgate's Tenant API. */
export async function fetchKubeconfig(pool: UpstreamPool, id: string): Promise<string> {
  const answer = await upstreamJson(pool, 'GET', `${TENANTS_PATH}/${id}/kubeconfig`);
  if (answer.status !== 200) throw failure(`issuing a kubeconfig for tenant ${id}`, answer);
  // A kubeconfig written as JSON (valid YAML) arrives parsed.
  return typeof answer.body === 'string' ? answer.body : `${JSON.stringify(answer.body, null, 2)}\n`;
}

async function waitUntilGone(pool: UpstreamPool, id: string): Promise<void> {
  const deadline = Date.now() + WAIT_LIMIT_MS;
  let last = '';
  while (Date.now() < deadline) {
    const got = await upstreamJson(pool, 'GET', `${TENANTS_PATH}/${id}`);
    if (got.status === 404) return;
    const progress = (got.body as Tenant).status?.conditions?.find((c) => c.type === 'Terminating')?.message ?? '';
    if (progress !== last && progress !== '') process.stderr.write(`${progress}\n`);
    last = progress;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`tenant ${id} is still there after ${WAIT_LIMIT_MS / 1000} s`);
}

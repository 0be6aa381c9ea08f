// Reads and writes kubeconfig files: the upstream's credentials come in one, and tenantgate hands them out.
// Never logs or echoes the credentials it reads.
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parse } from 'yaml';

/** What tenantgate needs to reach one Kubernetes API server. */
export interface ClusterCredentials {
  server: string;
  caPem?: string;
  certPem?: string;
  keyPem?: string;
  token?: string;
  /** Skip server certificate verification (kubeconfig `insecure-skip-tls-verify`). */
  insecureSkipTlsVerify?: boolean;
}

interface KubeconfigFile {
  'current-context'?: string;
  contexts?: { name: string; context: { cluster: string; user: string } }[];
  clusters?: { name: string; cluster: Record<string, unknown> }[];
  users?: { name: string; user: Record<string, unknown> }[];
}

function readInlineOrFile(data: unknown, file: unknown, baseDir: string): string | undefined {
  if (typeof data === 'string' && data !== '') return Buffer.from(data, 'base64').toString('utf8');
  if (typeof file === 'string' && file !== '') return readFileSync(resolve(baseDir, file), 'utf8');
  return undefined;
}

/** Loads the current context (or `contextName`) of a kubeconfig file. */
export function loadKubeconfig(path: string, contextName?: string): ClusterCredentials {
  const doc = parse(readFileSync(path, 'utf8')) as KubeconfigFile;
  const baseDir = dirname(resolve(path));
  const name = contextName ?? doc['current-context'];
  const context = doc.contexts?.find((c) => c.name === name)?.context ?? doc.contexts?.[0]?.context;
  if (context === undefined) throw new Error(`kubeconfig ${path}: no context ${name ?? ''}`);
  const cluster = doc.clusters?.find((c) => c.name === context.cluster)?.cluster;
  const user = doc.users?.find((u) => u.name === context.user)?.user ?? {};
  if (cluster === undefined || typeof cluster.server !== 'string') throw new Error(`kubeconfig ${path}: cluster ${context.cluster} has no server`);
  const tokenFile = typeof user.tokenFile === 'string' ? readFileSync(resolve(baseDir, user.tokenFile), 'utf8').trim() : undefined;
  return {
    server: cluster.server,
    caPem: readInlineOrFile(cluster['certificate-authority-data'], cluster['certificate-authority'], baseDir),
    certPem: readInlineOrFile(user['client-certificate-data'], user['client-certificate'], baseDir),
    keyPem: readInlineOrFile(user['client-key-data'], user['client-key'], baseDir),
    token: typeof user.token === 'string' ? user.token : tokenFile,
    insecureSkipTlsVerify: cluster['insecure-skip-tls-verify'] === true,
  };
}

/** A self-contained kubeconfig (credentials inline) as text; JSON is valid YAML, so kubectl reads it. */
export function renderKubeconfig(credentials: ClusterCredentials, name = 'tenantgate'): string {
  const b64 = (pem: string | undefined) => (pem === undefined ? undefined : Buffer.from(pem).toString('base64'));
  const user: Record<string, string> = {};
  if (credentials.certPem !== undefined) user['client-certificate-data'] = b64(credentials.certPem)!;
  if (credentials.keyPem !== undefined) user['client-key-data'] = b64(credentials.keyPem)!;
  if (credentials.token !== undefined) user.token = credentials.token;
  const cluster: Record<string, unknown> = { server: credentials.server };
  if (credentials.caPem !== undefined) cluster['certificate-authority-data'] = b64(credentials.caPem);
  if (credentials.insecureSkipTlsVerify === true) cluster['insecure-skip-tls-verify'] = true;
  return JSON.stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      'current-context': name,
      clusters: [{ name, cluster }],
      users: [{ name, user }],
      contexts: [{ name, context: { cluster: name, user: name } }],
    },
    null,
    2,
  ) + '\n';
}

// Reads and writes kubeconfig files: the upstream's credentials come in one, and tenantgate hands them out.
// Never logs or echoes the credentials it reads.
import { readFileSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { parse } from 'yaml';

/** What tenantgate needs to reach one Kubernetes API server. */
export interface ClusterCredentials {
  server: string;
  caPem?: string;
  certPem?: string;
  keyPem?: string;
  token?: string;
  /**
   * A file holding the token, read again once a minute (a pod's projected service-account token is rotated by the
   * kubelet); it wins over `token`.
   */
  tokenFile?: string;
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
  const tokenFile = typeof user.tokenFile === 'string' ? resolve(baseDir, user.tokenFile) : undefined;
  return {
    server: cluster.server,
    caPem: readInlineOrFile(cluster['certificate-authority-data'], cluster['certificate-authority'], baseDir),
    certPem: readInlineOrFile(user['client-certificate-data'], user['client-certificate'], baseDir),
    keyPem: readInlineOrFile(user['client-key-data'], user['client-key'], baseDir),
    token: typeof user.token === 'string' ? user.token : undefined,
    tokenFile: typeof user.token === 'string' ? undefined : tokenFile,
    insecureSkipTlsVerify: cluster['insecure-skip-tls-verify'] === true,
  };
}

/** Where a pod finds its service account's credentials (the kubelet projects them there). */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * The credentials of the pod tenantgate runs in, as client-go's in-cluster config reads them: the API server from
 * KUBERNETES_SERVICE_HOST/PORT, its CA and the service account's token (re-read as it rotates) from `dir`.
 */
export function inClusterCredentials(env: NodeJS.ProcessEnv = process.env, dir = SERVICE_ACCOUNT_DIR): ClusterCredentials {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (host === undefined || host === '' || port === undefined || port === '') {
    throw new Error('--upstream-kubeconfig is required outside a pod (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set)');
  }
  const tokenFile = join(dir, 'token');
  readFileSync(tokenFile); // fails now, with the path, rather than at the first request
  return { server: `https://${isIPv6(host) ? `[${host}]` : host}:${port}`, caPem: readFileSync(join(dir, 'ca.crt'), 'utf8'), tokenFile };
}

const TOKEN_FILE_REREAD_MS = 60_000;
const tokenFileReads = new WeakMap<ClusterCredentials, { at: number; authorization: string }>();

/** `Bearer <token>` for the upstream, when the credentials carry a token (a token file is read at most once a minute). */
export function bearerAuthorization(credentials: ClusterCredentials): string | undefined {
  if (credentials.tokenFile === undefined) return credentials.token === undefined ? undefined : `Bearer ${credentials.token}`;
  const read = tokenFileReads.get(credentials);
  const now = Date.now();
  if (read !== undefined && now - read.at < TOKEN_FILE_REREAD_MS) return read.authorization;
  let authorization: string;
  try {
    authorization = `Bearer ${readFileSync(credentials.tokenFile, 'utf8').trim()}`;
  } catch (error) {
    // The kubelet swaps the file atomically; a read that fails keeps the last token rather than none.
    if (read !== undefined) return read.authorization;
    throw error;
  }
  tokenFileReads.set(credentials, { at: now, authorization });
  return authorization;
}

/** A self-contained kubeconfig (credentials inline) as text; JSON is valid YAML, so kubectl reads it. */
export function renderKubeconfig(credentials: ClusterCredentials, name = 'tenantgate'): string {
  const b64 = (pem: string | undefined) => (pem === undefined ? undefined : Buffer.from(pem).toString('base64'));
  const user: Record<string, string> = {};
  if (credentials.certPem !== undefined) user['client-certificate-data'] = b64(credentials.certPem)!;
  if (credentials.keyPem !== undefined) user['client-key-data'] = b64(credentials.keyPem)!;
  const authorization = bearerAuthorization(credentials);
  if (authorization !== undefined) user.token = authorization.slice('Bearer '.length);
  const cluster: Record<string, unknown> = { server: credentials.server };
  if (credentials.caPem !== undefined) cluster['certificate-authority-data'] = b64(credentials.caPem);
  if (credentials.insecureSkipTlsVerify === true) cluster['insecure-skip-tls-verify'] = true;
  return (
    JSON.stringify(
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
    ) + '\n'
  );
}

// A tenant's own server URL: `https://<tenantgate>/tenants/<id>`. kubectl and client-go key their discovery cache
// (~/.kube/cache/discovery/<host>/<path>) and HTTP cache by the server URL, so two tenants' kubeconfigs naming one
// bare address would share one tenant's API groups and resources. The prefix is taken off before any stage reads the
// path (context.ts); the tenant it names must be the credential's (403, pipeline.ts). The bare address keeps working.
import type { TenantId } from '../convert/prefix.ts';

export const TENANT_PATH_PREFIX = '/tenants/';

/** The server URL of a tenant's kubeconfigs: tenantgate's address and the tenant's path. */
export function tenantServerUrl(serverUrl: string, tenant: TenantId): string {
  return `${serverUrl.replace(/\/+$/, '')}${TENANT_PATH_PREFIX}${tenant}`;
}

/**
 * A request target under `/tenants/<segment>`, split: the segment as sent (compared, never decoded) and the target
 * below it (`/` for the bare prefix). null for any other target, `/tenants` and `/tenants/` included (the apiserver
 * serves no such path: 404).
 */
export function splitTenantPath(target: string): { tenant: string; target: string } | null {
  if (!target.startsWith(TENANT_PATH_PREFIX)) return null;
  let end = TENANT_PATH_PREFIX.length;
  while (end < target.length) {
    const c = target.charCodeAt(end);
    if (c === 47 /* '/' */ || c === 63 /* '?' */) break;
    end++;
  }
  if (end === TENANT_PATH_PREFIX.length) return null;
  const rest = target.slice(end);
  return { tenant: target.slice(TENANT_PATH_PREFIX.length, end), target: rest === '' || rest.startsWith('?') ? `/${rest}` : rest };
}

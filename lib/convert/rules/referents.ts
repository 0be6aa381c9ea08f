// What a reference points at: from a kind (owner and object references) or a resource (RBAC rules, access reviews)
// to how its name maps upstream. Built-in kinds come from the table; custom kinds from discovery via the context.
import { builtinKindOf, isTenantCrdGroup, kindOf } from '../kinds.ts';
import { apiGroupToUpstream, apiVersionToUpstream, groupOfApiVersion } from './api-groups.ts';
import { nameMappingOfRow, type NameMapping } from './names.ts';
import type { ConvertContext } from './rule.ts';

/** How the name of a `kind` in `apiVersion` (tenant's form) maps upstream; undefined when the kind is unknown. */
export function nameMappingOfKind(apiVersion: string, kind: string, ctx: ConvertContext): NameMapping | undefined {
  const group = groupOfApiVersion(apiVersion);
  if (isTenantCrdGroup(group)) {
    const scope = ctx.kindScope(apiVersionToUpstream(apiVersion, ctx.tenant, kind), kind);
    return scope === undefined ? undefined : scope === 'Cluster' ? 'prefix' : 'plain';
  }
  const row = builtinKindOf(group, kind);
  return row === undefined ? undefined : nameMappingOfRow(row);
}

/**
 * How names of `resource` (`pods`, `namespaces/status`) in `group` (tenant's form) map upstream: undefined when it
 * cannot be known (wildcards, a custom resource discovery does not know yet), 'none' for a built-in group's resource
 * that does not exist (an RBAC rule may list groups and resources that only partly combine).
 */
export function nameMappingOfResource(group: string, resource: string, ctx: ConvertContext): NameMapping | 'none' | undefined {
  if (group === '*' || resource === '*' || resource.startsWith('*/')) return undefined;
  const slash = resource.indexOf('/');
  const plural = slash < 0 ? resource : resource.slice(0, slash);
  if (isTenantCrdGroup(group)) {
    const scope = ctx.scopeOf(apiGroupToUpstream(group, ctx.tenant, plural), plural);
    return scope === undefined ? undefined : scope === 'Cluster' ? 'prefix' : 'plain';
  }
  // What impersonation asks about (`impersonate` on users and groups): names of identities, not of objects.
  if (group === '' && plural === 'users') return 'user';
  if (group === '' && plural === 'groups') return 'group';
  // What the CSR admission asks about (`approve` and `sign` on signers): signer names, in the tenant's signer domain.
  if (group === 'certificates.k8s.io' && plural === 'signers') return 'signer';
  const row = kindOf(group, plural);
  return row === undefined ? 'none' : nameMappingOfRow(row);
}

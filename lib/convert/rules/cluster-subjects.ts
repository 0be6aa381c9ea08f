// Subjects of a tenant's ClusterRoleBinding as the upstream holds them: "shadow" identities under
// CLUSTER_SUBJECT_PREFIX that no real caller carries, so the binding grants nothing cluster-wide upstream.
// Never maps a subject back to the tenant's view unless it is exactly this tenant's shadow form.
import type { TenantId } from '../prefix.ts';
import { groupToTenant, groupToUpstream, parseServiceAccountUser, serviceAccountUser, userToTenant, userToUpstream } from './identity.ts';
import { namespaceToTenant } from './names.ts';
import type { Json } from './rule.ts';

/**
 * What every subject name of a tenant-written ClusterRoleBinding starts with upstream. The upstream admission
 * policy checks `subjects[].name` against this prefix followed by the tenant's upstream forms (`<id>-`, `<id>:`,
 * `system:serviceaccount:<id>-`): keep the format exactly.
 */
export const CLUSTER_SUBJECT_PREFIX = 'tenantgate:cluster:';

const RBAC_GROUP = 'rbac.authorization.k8s.io';

/** Names of the RoleBindings that expand a tenant's ClusterRoleBinding `<id>-x` in its namespaces: `tenantgate:crb:<id>-x`. */
export const EXPANSION_PREFIX = 'tenantgate:crb:';

/**
 * Text from an access review's answer in terms of the tenant's bindings (tenant prefixes are stripped after): an
 * expansion `RoleBinding "tenantgate:crb:<id>-x/<ns>"` is the tenant's `ClusterRoleBinding "<id>-x"`, and a shadow
 * subject is the tenant's own user or group.
 */
export function clusterBindingsTextToTenant(text: string): string {
  return text.replace(/RoleBinding "tenantgate:crb:([^"/]+)\/[^"]*"/g, 'ClusterRoleBinding "$1"').replaceAll(`"${CLUSTER_SUBJECT_PREFIX}`, '"');
}

/** The shadow name of an upstream user or group name. */
export function clusterShadowOf(upstreamName: string): string {
  return CLUSTER_SUBJECT_PREFIX + upstreamName;
}

/**
 * A ClusterRoleBinding subject in the tenant's form → its shadow form upstream, in place: User `alice` → User
 * `tenantgate:cluster:<id>-alice`, Group `devs` → Group `tenantgate:cluster:<id>:devs`, ServiceAccount ns/sa →
 * User `tenantgate:cluster:system:serviceaccount:<id>-ns:sa`. Other kinds are left for the apiserver to refuse.
 */
export function clusterSubjectToUpstream(subject: Json, tenant: TenantId): void {
  const name = subject.name;
  if (typeof name !== 'string' || name === '') return; // invalid: the apiserver says why
  switch (subject.kind) {
    case 'User':
      subject.name = clusterShadowOf(userToUpstream(name, tenant));
      break;
    case 'Group':
      subject.name = clusterShadowOf(groupToUpstream(name, tenant));
      break;
    case 'ServiceAccount': {
      const namespace = subject.namespace;
      if (typeof namespace !== 'string' || namespace === '') return; // invalid: the apiserver says why
      delete subject.namespace;
      subject.kind = 'User';
      subject.apiGroup = RBAC_GROUP;
      subject.name = clusterShadowOf(serviceAccountUser(namespace, name, tenant));
      break;
    }
  }
}

/**
 * A shadow subject upstream → the tenant's form, in place; false when it is not this tenant's shadow form (the
 * object is then not the tenant's). A shadow service-account user reads back as a ServiceAccount subject.
 */
export function clusterSubjectToTenant(subject: Json, tenant: TenantId): boolean {
  const name = subject.name;
  if (typeof name !== 'string' || !name.startsWith(CLUSTER_SUBJECT_PREFIX)) return false;
  const upstreamName = name.slice(CLUSTER_SUBJECT_PREFIX.length);
  switch (subject.kind) {
    case 'User': {
      const account = parseServiceAccountUser(upstreamName);
      if (account !== null) {
        const namespace = namespaceToTenant(account.namespace, tenant);
        if (namespace === null) return false;
        delete subject.apiGroup;
        subject.kind = 'ServiceAccount';
        subject.name = account.name;
        subject.namespace = namespace;
        return true;
      }
      const user = userToTenant(upstreamName, tenant);
      if (user === null) return false;
      subject.name = user;
      return true;
    }
    case 'Group': {
      const group = groupToTenant(upstreamName, tenant);
      if (group === null) return false;
      subject.name = group;
      return true;
    }
    default:
      return false;
  }
}

/**
 * The real upstream subject a shadow subject stands for (what the lifecycle controller binds in each of the
 * tenant's namespaces), or null when the subject is not a shadow one.
 */
export function realSubjectOf(subject: { kind?: unknown; name?: unknown }): { kind: string; apiGroup?: string; name: string; namespace?: string } | null {
  const name = subject.name;
  if (typeof name !== 'string' || !name.startsWith(CLUSTER_SUBJECT_PREFIX)) return null;
  const upstreamName = name.slice(CLUSTER_SUBJECT_PREFIX.length);
  if (subject.kind === 'Group') return { kind: 'Group', apiGroup: RBAC_GROUP, name: upstreamName };
  if (subject.kind !== 'User') return null;
  const account = parseServiceAccountUser(upstreamName);
  return account === null
    ? { kind: 'User', apiGroup: RBAC_GROUP, name: upstreamName }
    : { kind: 'ServiceAccount', name: account.name, namespace: account.namespace };
}

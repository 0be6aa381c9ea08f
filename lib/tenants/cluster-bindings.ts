// What a tenant's ClusterRoleBinding becomes upstream besides itself (whose subjects are shadow identities): one
// RoleBinding per tenant namespace to the same role for the real subjects, and nothing outside its namespaces.
// Never derives a grant for a subject that is not the tenant's, nor in a namespace that is not the tenant's.
import { TENANT_LABEL, toTenantName, type TenantId } from '../convert/prefix.ts';
import { clusterShadowOf, CLUSTER_SUBJECT_PREFIX, EXPANSION_PREFIX, realSubjectOf } from '../convert/rules/cluster-subjects.ts';
import { groupToTenant, userToTenant } from '../convert/rules/identity.ts';
import type { UpstreamItem } from '../upstream/own-watch.ts';

/** Marks the RoleBindings that expand a tenant's ClusterRoleBinding (what the lifecycle controller watches). */
export const EXPANSION_LABEL = 'tenantgate.kubezoo.io/expands-cluster-role-binding';

export interface Subject {
  kind: string;
  apiGroup?: string;
  name: string;
  namespace?: string;
}

export interface ClusterRoleBinding extends UpstreamItem {
  roleRef: { apiGroup: string; kind: string; name: string };
  subjects?: Subject[];
}

/** The RoleBinding name expanding the upstream ClusterRoleBinding `clusterBinding` (`tenantgate:` is no tenant's). */
export function expansionName(clusterBinding: string): string {
  return EXPANSION_PREFIX + clusterBinding;
}

export function isExpansionName(name: string): boolean {
  return name.startsWith(EXPANSION_PREFIX);
}

/** A tenant's ClusterRoleBinding upstream: under its exact prefix and labelled as its own. */
export function isTenantClusterBinding(binding: UpstreamItem, tenant: TenantId): boolean {
  return binding.metadata.labels?.[TENANT_LABEL] === tenant && toTenantName(binding.metadata.name, tenant) !== null;
}

/** The real subjects a shadow-subject binding stands for, only the tenant's own identities kept. */
function realSubjects(binding: ClusterRoleBinding, tenant: TenantId): Subject[] {
  const subjects: Subject[] = [];
  for (const subject of binding.subjects ?? []) {
    const real = realSubjectOf(subject);
    if (real === null) continue;
    const mine =
      real.kind === 'ServiceAccount' ? toTenantName(real.namespace ?? '', tenant) !== null : real.kind === 'Group' ? groupToTenant(real.name, tenant) !== null : userToTenant(real.name, tenant) !== null;
    if (mine) subjects.push(real);
  }
  return subjects;
}

/** The RoleBinding in `namespace` that expands the tenant's ClusterRoleBinding `binding`. */
export function expansionOf(binding: ClusterRoleBinding, namespace: string, tenant: TenantId) {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: expansionName(binding.metadata.name), namespace, labels: { [TENANT_LABEL]: tenant, [EXPANSION_LABEL]: 'true' } },
    roleRef: binding.roleRef,
    subjects: realSubjects(binding, tenant),
  };
}

/**
 * Subjects of a ClusterRoleBinding made before shadow subjects (real identities, granting cluster-wide) in the shadow
 * form, or null when they all are already.
 */
export function migratedSubjects(binding: ClusterRoleBinding): Subject[] | null {
  const subjects = binding.subjects ?? [];
  if (subjects.every((subject) => subject.name.startsWith(CLUSTER_SUBJECT_PREFIX))) return null;
  return subjects.map((subject) => {
    if (subject.name.startsWith(CLUSTER_SUBJECT_PREFIX)) return subject;
    if (subject.kind === 'ServiceAccount') {
      return { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: clusterShadowOf(`system:serviceaccount:${subject.namespace ?? ''}:${subject.name}`) };
    }
    return { ...subject, name: clusterShadowOf(subject.name) };
  });
}

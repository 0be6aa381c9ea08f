// What a tenant's ClusterRoleBinding becomes upstream besides itself (tenantgate's custom resource, subjects in the
// shadow form): one RoleBinding per tenant namespace to the same role for the real subjects, nothing outside its
// namespaces; and how a real upstream ClusterRoleBinding of an older tenantgate moves into the stored form.
// Never derives a grant for a subject that is not the tenant's, nor in a namespace that is not the tenant's.
import { STORED_RBAC_GROUP } from '../convert/kinds.ts';
import { isTenantId, TENANT_LABEL, toTenantName, type TenantId } from '../convert/prefix.ts';
import { clusterShadowOf, CLUSTER_SUBJECT_PREFIX, EXPANSION_PREFIX, realSubjectOf } from '../convert/rules/cluster-subjects.ts';
import { groupToTenant, userToTenant } from '../convert/rules/identity.ts';
import { storedNameToUpstream } from '../convert/rules/names.ts';
import { upstreamJson } from '../upstream/client.ts';
import { listUpstream, type UpstreamItem } from '../upstream/own-watch.ts';
import type { UpstreamPool } from '../upstream/pool.ts';

/** Where tenants' ClusterRoleBindings are kept upstream: tenantgate's custom resources (the table's upstreamGroup). */
export const STORED_CLUSTER_BINDINGS = `/apis/${STORED_RBAC_GROUP}/v1/clusterrolebindings`;
/** Where an older tenantgate kept them: real ClusterRoleBindings, scanned by every authorization of every user. */
export const REAL_CLUSTER_BINDINGS = '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings';

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
      real.kind === 'ServiceAccount'
        ? toTenantName(real.namespace ?? '', tenant) !== null
        : real.kind === 'Group'
          ? groupToTenant(real.name, tenant) !== null
          : userToTenant(real.name, tenant) !== null;
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

/** The tenant a binding is labelled for (migrations look only at bindings isTenantClusterBinding accepted for it). */
function tenantOf(binding: ClusterRoleBinding): TenantId {
  return binding.metadata.labels?.[TENANT_LABEL] ?? '';
}

/** The stored form of a tenant's real ClusterRoleBinding (an older tenantgate's): same name, labels, annotations, roleRef; shadow subjects. */
export function storedFormOf(binding: ClusterRoleBinding) {
  const { name, labels, annotations } = binding.metadata as UpstreamItem['metadata'] & { annotations?: Record<string, string> };
  return {
    apiVersion: `${STORED_RBAC_GROUP}/v1`,
    kind: 'ClusterRoleBinding',
    // A real one's name may hold what a custom resource's may not (`<id>-system:discovery`): written as the rule writes it.
    metadata: {
      name: storedNameToUpstream(toTenantName(name, tenantOf(binding)) ?? name, tenantOf(binding)),
      ...(labels === undefined ? {} : { labels }),
      ...(annotations === undefined ? {} : { annotations }),
    },
    roleRef: binding.roleRef,
    ...(binding.subjects === undefined ? {} : { subjects: migratedSubjects(binding) ?? binding.subjects }),
  };
}

/**
 * Moves a tenant's real ClusterRoleBinding into the stored form: the copy first, then the real one goes (only that
 * very object: its uid is the precondition). Its expansions keep their names, so no namespace loses the grant, and
 * tenantgate's evaluation reads the copy before the original is gone. A stored one of that name already there wins.
 */
export async function migrateClusterBinding(pool: UpstreamPool, binding: ClusterRoleBinding): Promise<void> {
  const created = await upstreamJson(pool, 'POST', STORED_CLUSTER_BINDINGS, storedFormOf(binding));
  if (created.status !== 201 && created.status !== 409) throw new Error(`copying clusterrolebinding ${binding.metadata.name} answered ${created.status}`);
  const uid = (binding.metadata as { uid?: string }).uid;
  const options = uid === undefined ? undefined : { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid } };
  const deleted = await upstreamJson(pool, 'DELETE', `${REAL_CLUSTER_BINDINGS}/${encodeURIComponent(binding.metadata.name)}`, options);
  if (deleted.status !== 200 && deleted.status !== 404 && deleted.status !== 409)
    throw new Error(`deleting the real clusterrolebinding ${binding.metadata.name} answered ${deleted.status}`);
}

/** Migrations at once: thousands of tenants' bindings on start go in bounded waves, not one burst. */
const MIGRATION_WAVE = 32;

/** Moves every tenant's real ClusterRoleBindings into the stored form (on start, before any request is served); resolves to how many. */
export async function migrateTenantsClusterBindings(pool: UpstreamPool): Promise<number> {
  const real = (await listUpstream(pool, `${REAL_CLUSTER_BINDINGS}?labelSelector=${encodeURIComponent(TENANT_LABEL)}`)) as ClusterRoleBinding[];
  const mine = real.filter((binding) => {
    const id = binding.metadata.labels?.[TENANT_LABEL];
    return id !== undefined && isTenantId(id) && isTenantClusterBinding(binding, id);
  });
  for (let at = 0; at < mine.length; at += MIGRATION_WAVE) {
    await Promise.all(mine.slice(at, at + MIGRATION_WAVE).map((binding) => migrateClusterBinding(pool, binding)));
  }
  return mine.length;
}

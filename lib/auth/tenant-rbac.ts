// What a tenant's own ClusterRoleBindings grant one of its identities at the tenant's cluster scope, decided as the
// apiserver's RBAC authorizer decides (its matching rules, its reason text), from the bindings tenantgate stores
// upstream and the tenant's real ClusterRoles they name, read when asked (nothing held between questions).
// Never lets a binding or role that is not the tenant's, or a subject that is not one of its identities, grant anything.
import { TENANT_LABEL, toTenantName, type TenantId } from '../convert/prefix.ts';
import { clusterSubjectToTenant, realSubjectOf } from '../convert/rules/cluster-subjects.ts';
import { groupToTenant, userToTenant } from '../convert/rules/identity.ts';
import { storedNameToTenant } from '../convert/rules/names.ts';
import { upstreamUnavailable } from '../errors/status-error.ts';
import { isTenantClusterBinding, STORED_CLUSTER_BINDINGS, type ClusterRoleBinding, type Subject } from '../tenants/cluster-bindings.ts';
import { tenantAdminUser } from './impersonation.ts';
import { upstreamJson } from '../upstream/client.ts';
import { listUpstream } from '../upstream/own-watch.ts';
import type { UpstreamPool } from '../upstream/pool.ts';

/** A rule of a ClusterRole as the upstream holds it (groups, resources and names in upstream form). */
export interface PolicyRule {
  verbs?: readonly string[];
  apiGroups?: readonly string[];
  resources?: readonly string[];
  resourceNames?: readonly string[];
  nonResourceURLs?: readonly string[];
}

/** A question at the cluster scope, in upstream names: the identity, then a resource or a non-resource URL. */
export interface ClusterScopeQuestion {
  user: string;
  groups: readonly string[];
  resourceAttributes?: { verb?: string; group?: string; resource?: string; subresource?: string; name?: string };
  nonResourceAttributes?: { verb?: string; path?: string };
}

/** The answer and, when allowed, the apiserver's reason text in the tenant's names. */
export interface RbacDecision {
  allowed: boolean;
  reason: string;
}

/** Where the tenant's bindings and roles are read from. */
export interface TenantRbacSource {
  /** The tenant's ClusterRoleBindings as stored upstream (shadow subjects, upstream names). */
  bindings(tenant: TenantId): Promise<ClusterRoleBinding[]>;
  /** A ClusterRole's rules by its upstream name; null when there is no such role. */
  clusterRoleRules(name: string): Promise<readonly PolicyRule[] | null>;
}

// ---- RBAC's matching (kubernetes pkg/apis/rbac/v1/evaluation_helpers.go), rule by rule ----

export function verbMatches(rule: PolicyRule, verb: string): boolean {
  return (rule.verbs ?? []).some((ruleVerb) => ruleVerb === '*' || ruleVerb === verb);
}

export function apiGroupMatches(rule: PolicyRule, group: string): boolean {
  return (rule.apiGroups ?? []).some((ruleGroup) => ruleGroup === '*' || ruleGroup === group);
}

// `combined` is `resource` or `resource/subresource`; a rule naming `*` then the subresource matches it on any resource.
export function resourceMatches(rule: PolicyRule, combined: string, subresource: string): boolean {
  return (rule.resources ?? []).some(
    (ruleResource) =>
      ruleResource === '*' ||
      ruleResource === combined ||
      (subresource !== '' && ruleResource.length === subresource.length + 2 && ruleResource.startsWith('*/') && ruleResource.endsWith(subresource)),
  );
}

/** No resourceNames: every name (a list or a create has none, and matches only such rules otherwise). */
export function resourceNameMatches(rule: PolicyRule, name: string): boolean {
  const names = rule.resourceNames ?? [];
  return names.length === 0 || names.includes(name);
}

/** `*` matches every path; a rule ending in `*` every path starting with what comes before it. */
export function nonResourceUrlMatches(rule: PolicyRule, path: string): boolean {
  return (rule.nonResourceURLs ?? []).some((url) => url === '*' || url === path || (url.endsWith('*') && path.startsWith(url.replace(/\*+$/, ''))));
}

/** RBAC's RuleAllows: a resource question by verb, group, resource (with subresource) and name; else verb and path. */
export function ruleAllows(question: ClusterScopeQuestion, rule: PolicyRule): boolean {
  const resource = question.resourceAttributes;
  if (resource !== undefined) {
    const subresource = resource.subresource ?? '';
    const combined = subresource === '' ? (resource.resource ?? '') : `${resource.resource ?? ''}/${subresource}`;
    return (
      verbMatches(rule, resource.verb ?? '') &&
      apiGroupMatches(rule, resource.group ?? '') &&
      resourceMatches(rule, combined, subresource) &&
      resourceNameMatches(rule, resource.name ?? '')
    );
  }
  const nonResource = question.nonResourceAttributes ?? {};
  return verbMatches(rule, nonResource.verb ?? '') && nonResourceUrlMatches(rule, nonResource.path ?? '');
}

/**
 * Whether a stored (shadow) subject of the tenant's binding names the identity: a User by name, a Group among its
 * groups, a ServiceAccount as its `system:serviceaccount:<namespace>:<name>` user. A subject that is not one of the
 * tenant's identities applies to nobody.
 */
export function subjectApplies(subject: Subject, question: Pick<ClusterScopeQuestion, 'user' | 'groups'>, tenant: TenantId): boolean {
  const real = realSubjectOf(subject);
  if (real === null) return false;
  switch (real.kind) {
    case 'User':
      return userToTenant(real.name, tenant) !== null && question.user === real.name;
    case 'Group':
      return groupToTenant(real.name, tenant) !== null && question.groups.includes(real.name);
    case 'ServiceAccount': {
      const namespace = real.namespace ?? '';
      return namespace !== '' && toTenantName(namespace, tenant) !== null && question.user === `system:serviceaccount:${namespace}:${real.name}`;
    }
    default:
      return false;
  }
}

/** The subject as the apiserver's reason names it (describeSubject), in the tenant's names: a service account as `name/namespace`. */
function describeSubject(subject: Subject, tenant: TenantId): string {
  const view: Record<string, unknown> = { ...subject };
  if (!clusterSubjectToTenant(view, tenant)) return `${subject.kind} ${JSON.stringify(subject.name)}`;
  if (view.kind === 'ServiceAccount') return `ServiceAccount ${JSON.stringify(`${String(view.name)}/${String(view.namespace)}`)}`;
  return `${String(view.kind)} ${JSON.stringify(view.name)}`;
}

const NOT_ALLOWED: RbacDecision = Object.freeze({ allowed: false, reason: '' });
/** The tenant admin is its cluster's system:masters: allowed whatever is asked, as the apiserver allows that group (no reason). */
const ADMIN_ALLOWED: RbacDecision = Object.freeze({ allowed: true, reason: '' });

/**
 * The tenant's RBAC at its cluster scope for `question` (upstream names): the first rule of a ClusterRole bound to the
 * identity by one of the tenant's ClusterRoleBindings that allows it, in the bindings' name order, with the
 * apiserver's reason `RBAC: allowed by ClusterRoleBinding "<name>" of ClusterRole "<role>" to <subject>` in the
 * tenant's names. A binding whose role is missing grants nothing (RBAC visits the next). Throws when the upstream
 * cannot be read.
 */
export async function decideAtClusterScope(source: TenantRbacSource, tenant: TenantId, question: ClusterScopeQuestion): Promise<RbacDecision> {
  if (question.user === tenantAdminUser(tenant)) return ADMIN_ALLOWED;
  for (const { binding, subject, role } of await bindingsOf(source, tenant, question)) {
    const rules = await source.clusterRoleRules(role);
    if (rules === null || !rules.some((rule) => ruleAllows(question, rule))) continue;
    const name = storedNameToTenant(binding.metadata.name, tenant) ?? binding.metadata.name;
    return {
      allowed: true,
      reason: `RBAC: allowed by ClusterRoleBinding ${JSON.stringify(name)} of ClusterRole ${JSON.stringify(toTenantName(role, tenant)!)} to ${describeSubject(subject, tenant)}`,
    };
  }
  return NOT_ALLOWED;
}

/**
 * Every rule the tenant's ClusterRoleBindings grant the identity (upstream names): what RBAC's escalation check calls
 * the user's own at the cluster scope (rbac-escalation.ts). Throws when the upstream cannot be read.
 */
export async function rulesAtClusterScope(
  source: TenantRbacSource,
  tenant: TenantId,
  identity: Pick<ClusterScopeQuestion, 'user' | 'groups'>,
): Promise<PolicyRule[]> {
  const rules: PolicyRule[] = [];
  for (const { role } of await bindingsOf(source, tenant, identity)) rules.push(...((await source.clusterRoleRules(role)) ?? []));
  return rules;
}

/**
 * The tenant's ClusterRoleBindings that bind the identity to one of the tenant's ClusterRoles, in name order (as RBAC
 * visits them), each with the first subject naming the identity and the role's upstream name.
 */
async function bindingsOf(
  source: TenantRbacSource,
  tenant: TenantId,
  identity: Pick<ClusterScopeQuestion, 'user' | 'groups'>,
): Promise<{ binding: ClusterRoleBinding; subject: Subject; role: string }[]> {
  const bindings = (await source.bindings(tenant)).filter((binding) => isTenantClusterBinding(binding, tenant));
  bindings.sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0));
  const bound: { binding: ClusterRoleBinding; subject: Subject; role: string }[] = [];
  for (const binding of bindings) {
    const subject = (binding.subjects ?? []).find((candidate) => subjectApplies(candidate, identity, tenant));
    const roleRef = binding.roleRef;
    if (subject !== undefined && roleRef?.kind === 'ClusterRole' && toTenantName(roleRef.name, tenant) !== null)
      bound.push({ binding, subject, role: roleRef.name });
  }
  return bound;
}

const CLUSTER_ROLES = '/apis/rbac.authorization.k8s.io/v1/clusterroles';

/** The tenant's bindings and roles read from the upstream when asked (a label-selected list, a GET per bound role). */
export function upstreamTenantRbacSource(pool: UpstreamPool): TenantRbacSource {
  return {
    async bindings(tenant) {
      try {
        return (await listUpstream(
          pool,
          `${STORED_CLUSTER_BINDINGS}?labelSelector=${encodeURIComponent(`${TENANT_LABEL}=${tenant}`)}`,
        )) as ClusterRoleBinding[];
      } catch (error) {
        throw upstreamUnavailable(`reading the tenant's clusterrolebindings failed: ${(error as Error).message}`);
      }
    },
    async clusterRoleRules(name) {
      const answer = await upstreamJson(pool, 'GET', `${CLUSTER_ROLES}/${encodeURIComponent(name)}`).catch((error: Error) => {
        throw upstreamUnavailable(`reading clusterrole ${name} failed: ${error.message}`);
      });
      if (answer.status === 404) return null;
      if (answer.status !== 200) throw upstreamUnavailable(`reading clusterrole ${name} answered ${answer.status}`);
      return Array.isArray(answer.body?.rules) ? (answer.body.rules as PolicyRule[]) : [];
    },
  };
}

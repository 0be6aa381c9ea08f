// Writes at the tenant's cluster scope by its users other than its admin: upstream RBAC never sees the tenant's
// ClusterRoleBindings (tenantgate's custom resources), so tenantgate asks the tenant's RBAC itself and, once it allows
// the write, sends it with the cluster-scope group, whose rights the confinement policy keeps to the tenant's objects.
// Writes of ClusterRoles and ClusterRoleBindings pass RBAC's escalation check first, as the apiserver makes it.
// Never adds the group to a write the tenant's RBAC did not allow, nor to one that would grant what the user lacks.
import { upstreamIdentityOf, tenantAdminUser, type UpstreamIdentity } from '../auth/impersonation.ts';
import { describeRule, FULL_AUTHORITY, uncoveredRules } from '../auth/rbac-escalation.ts';
import type { PolicyRule } from '../auth/tenant-rbac.ts';
import type { AccessReviews } from '../auth/access-review.ts';
import { carriesTenantLabel } from '../convert/kinds.ts';
import type { TenantId } from '../convert/prefix.ts';
import { upstreamObjectName } from '../convert/request.ts';
import { apiGroupToUpstream, stripTenantPrefixes } from '../convert/rules/index.ts';
import { forbidden } from '../errors/status-error.ts';
import { upstreamRequest } from '../upstream/client.ts';
import { isKindRequest, upstreamHeadersOf, type KindRequest } from './context.ts';
import type { Stage } from './stage.ts';
import { tenantStatusError } from './read-body.ts';
import type { TenantConversions } from './tenant-conversions.ts';

const RBAC = 'rbac.authorization.k8s.io';
const READ_VERBS: ReadonlySet<string> = new Set(['get', 'list', 'watch']);
/** The writes RBAC's escalation check guards (a delete grants nothing). */
const GRANTING_VERBS: ReadonlySet<string> = new Set(['create', 'update', 'patch']);

/** A cluster-scoped object of the tenant's own kinds (what the cluster-scope group may write), written by a user other than its admin. */
function writesAtClusterScope(ctx: KindRequest): boolean {
  const { info, row } = ctx;
  if (!info.isResourceRequest || READ_VERBS.has(info.verb)) return false;
  // (A tenant's own PriorityClasses are written like its cluster-scoped kinds: rules/priority-classes.ts.)
  if (row.scope !== 'Cluster' || !(carriesTenantLabel(row) || row.rule === 'priorityclass')) return false;
  return upstreamIdentityOf(ctx.identity).user !== tenantAdminUser(ctx.identity.tenant);
}

function grantsRbac(ctx: KindRequest): boolean {
  const { info, row } = ctx;
  return (
    row.group === RBAC &&
    (row.resource === 'clusterroles' || row.resource === 'clusterrolebindings') &&
    info.subresource === '' &&
    GRANTING_VERBS.has(info.verb)
  );
}

/**
 * The stage "authorize writes at the cluster scope": the tenant's RBAC decides (cached as for reads); allowed, the
 * request carries the cluster-scope group. Refused, it goes as it is and the upstream answers its own 403.
 */
export function authorizeClusterScopeWrites(access: AccessReviews): Stage['run'] {
  const decide = (ctx: KindRequest, allowed: boolean) => {
    if (allowed) {
      ctx.grantedClusterScope = true;
      ctx.confirmsNoEscalation = grantsRbac(ctx);
    }
    return false;
  };
  return (ctx) => {
    if (!isKindRequest(ctx) || !writesAtClusterScope(ctx)) return false;
    const { info, row } = ctx;
    const tenant = ctx.identity.tenant;
    const name = info.name === '' ? '' : upstreamObjectName(info, row, info.name, tenant);
    const resource = info.subresource === '' ? info.resource : `${info.resource}/${info.subresource}`;
    const allowed = access.allowed(
      tenant,
      upstreamIdentityOf(ctx.identity),
      info.verb,
      apiGroupToUpstream(info.apiGroup, tenant, info.resource),
      resource,
      name,
    );
    return typeof allowed === 'boolean' ? decide(ctx, allowed) : allowed.then((answer) => decide(ctx, answer));
  };
}

/** The apiserver's refusal of a grant the user does not hold, in the tenant's names. */
function escalationRefused(ctx: KindRequest, name: string, why: string): Error {
  const { user, groups, tenant } = ctx.identity;
  const qualified = `${ctx.row.resource}.${RBAC}`;
  return forbidden(
    stripTenantPrefixes(`${qualified} ${JSON.stringify(name)} is forbidden: user ${JSON.stringify(user)} (groups=${JSON.stringify(groups)}) ${why}`, tenant),
    {
      name: stripTenantPrefixes(name, tenant),
      group: RBAC,
      kind: ctx.row.resource,
    },
  );
}

/** The object the write would leave upstream: the same request, dry run (a patch's result is known only there). */
async function wouldWrite(ctx: KindRequest, conversions: TenantConversions): Promise<Record<string, any>> {
  const target = ctx.upstreamTarget + (ctx.upstreamTarget.includes('?') ? '&' : '?') + 'dryRun=All';
  const headers = { ...upstreamHeadersOf(ctx), accept: 'application/json' };
  const answer = await upstreamRequest(conversions.pool, ctx.upstreamMethod, target, ctx.upstreamBody ?? undefined, headers);
  if (answer.status < 200 || answer.status > 299 || typeof answer.body !== 'object' || answer.body === null)
    throw tenantStatusError(answer.status, answer.body, ctx.identity.tenant);
  return answer.body as Record<string, any>;
}

/** Whether the tenant's RBAC lets the user `verb` (escalate, bind) the ClusterRole `role` (upstream name). */
function mayOnRole(access: AccessReviews, tenant: TenantId, identity: UpstreamIdentity, verb: string, role: string): Promise<boolean> {
  return Promise.resolve(access.allowed(tenant, identity, verb, RBAC, 'clusterroles', role));
}

/**
 * RBAC's escalation check of a ClusterRole or ClusterRoleBinding write: a role's rules, or a binding's role's, must be
 * the user's own at the cluster scope, unless it may `escalate` the role or `bind` the bound one. A role with an
 * aggregationRule asks for every right (the apiserver's "cluster-admin privileges").
 */
export async function confirmNoEscalation(ctx: KindRequest, conversions: TenantConversions): Promise<void> {
  const access = conversions.access;
  const tenant = ctx.identity.tenant;
  const identity = upstreamIdentityOf(ctx.identity);
  const object = await wouldWrite(ctx, conversions);
  const name = String(object.metadata?.name ?? '');
  let granted: readonly PolicyRule[];
  if (ctx.row.resource === 'clusterroles') {
    if (await mayOnRole(access, tenant, identity, 'escalate', ctx.info.name === '' ? '' : name)) return;
    if (object.aggregationRule != null) {
      if (uncoveredRules(await access.clusterScopeRules(tenant, identity), FULL_AUTHORITY).length === 0) return;
      throw escalationRefused(ctx, name, 'must have cluster-admin privileges to use the aggregationRule');
    }
    granted = Array.isArray(object.rules) ? object.rules : [];
  } else {
    const role = String(object.roleRef?.name ?? '');
    if (await mayOnRole(access, tenant, identity, 'bind', role)) return;
    const rules = await access.roleRules(role);
    if (rules === null) throw escalationRefused(ctx, name, `is binding the clusterrole ${JSON.stringify(role)}, which does not exist`);
    granted = rules;
  }
  const missing = uncoveredRules(await access.clusterScopeRules(tenant, identity), granted);
  if (missing.length === 0) return;
  throw escalationRefused(ctx, name, `is attempting to grant RBAC permissions not currently held:\n${missing.map(describeRule).join('\n')}`);
}

/** The stage "confirm no escalation": after the body is converted, before the upstream request opens. */
export function confirmNoEscalationStage(conversions: TenantConversions): Stage['run'] {
  // (Set only on a KindRequest, by "authorize writes at the cluster scope".)
  return (ctx) => (ctx.confirmsNoEscalation && isKindRequest(ctx) ? confirmNoEscalation(ctx, conversions).then(() => false) : false);
}

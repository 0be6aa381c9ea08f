// Whether a tenant's own RBAC allows a read across all its namespaces, which tenantgate then makes with its own
// identity (upstream, no tenant identity may read a namespaced kind cluster-wide), and whether a caller may
// impersonate what its Impersonate-* headers ask for. The upstream answers SubjectAccessReviews about the caller;
// what the tenant's ClusterRoleBindings grant, tenantgate decides itself (tenant-rbac.ts); answers cached briefly.
// Never caches an answer under a key that leaves out part of the identity asked about (CVE-2023-46254).
import { LRUCache } from 'lru-cache';
import type { TenantId } from '../convert/prefix.ts';
import { forbidden, StatusError, upstreamUnavailable } from '../errors/status-error.ts';
import { upstreamJson } from '../upstream/client.ts';
import type { UpstreamPool } from '../upstream/pool.ts';
import type { UpstreamIdentity } from './impersonation.ts';
import {
  decideAtClusterScope,
  rulesAtClusterScope,
  upstreamTenantRbacSource,
  type ClusterScopeQuestion,
  type PolicyRule,
  type RbacDecision,
} from './tenant-rbac.ts';

/** A SubjectAccessReview's resource attributes, in the upstream's names (namespace '': the cluster scope). */
export interface ResourceAttributes {
  verb: string;
  group: string;
  resource: string;
  namespace: string;
  name?: string;
  subresource?: string;
}

/** A SubjectAccessReview's spec. */
export interface AccessQuestion {
  user: string;
  groups: string[];
  resourceAttributes: ResourceAttributes;
}

/** Asks the upstream; resolves to whether it allowed, throws when it cannot say (nothing is cached then). */
export type AccessReviewer = (question: AccessQuestion) => Promise<boolean>;

/**
 * Answers what the tenant's own ClusterRoleBindings grant at its cluster scope (tenant-rbac.ts); throws when it cannot
 * say (nothing is cached then).
 */
export type ClusterScopeReviewer = (tenant: TenantId, question: ClusterScopeQuestion) => Promise<RbacDecision>;

/** The question about the caller at the tenant's cluster scope (upstream names). */
export function clusterScopeQuestion(
  identity: Pick<UpstreamIdentity, 'user' | 'groups'>,
  verb: string,
  group: string,
  resource: string,
  name = '',
): ClusterScopeQuestion {
  return { user: identity.user, groups: identity.groups, resourceAttributes: name === '' ? { verb, group, resource } : { verb, group, resource, name } };
}

/** The rules RBAC's escalation check compares (upstream names); each throws when it cannot say. */
export interface ClusterScopeRules {
  /** Every rule the tenant's ClusterRoleBindings grant an identity. */
  held(tenant: TenantId, identity: Pick<UpstreamIdentity, 'user' | 'groups'>): Promise<PolicyRule[]>;
  /** A ClusterRole's rules; null when there is no such role. */
  ofRole(name: string): Promise<readonly PolicyRule[] | null>;
}

/** tenantgate's own evaluation of the tenant's RBAC, its bindings and roles read from the upstream when asked. */
export function tenantRbacReviewer(pool: UpstreamPool): ClusterScopeReviewer {
  const source = upstreamTenantRbacSource(pool);
  return (tenant, question) => decideAtClusterScope(source, tenant, question);
}

/** The rules an identity holds at its tenant's cluster scope, read from the upstream when asked (escalation checks). */
export function tenantRbacRules(pool: UpstreamPool): ClusterScopeRules {
  const source = upstreamTenantRbacSource(pool);
  return { held: (tenant, identity) => rulesAtClusterScope(source, tenant, identity), ofRole: (name) => source.clusterRoleRules(name) };
}

/** Without a source: nobody holds anything, no role exists (every grant then needs escalate or bind). */
const NO_RULES: ClusterScopeRules = { held: () => Promise.resolve([]), ofRole: () => Promise.resolve(null) };

/** The cache key: the tenant, the whole identity and the whole question, unambiguously (JSON, not a joined string). */
export function accessCacheKey(tenant: TenantId, identity: UpstreamIdentity, verb: string, group: string, resource: string, name = ''): string {
  return JSON.stringify([tenant, identity.user, identity.groups, verb, group, resource, name]);
}

/** SubjectAccessReview against the upstream with tenantgate's own credentials. */
export function upstreamAccessReviewer(pool: UpstreamPool): AccessReviewer {
  return async (spec) => {
    const review = { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec };
    let answer;
    try {
      answer = await upstreamJson(pool, 'POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', review);
    } catch (error) {
      throw upstreamUnavailable(`access review failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (answer.status !== 201 && answer.status !== 200) throw upstreamUnavailable(`access review answered ${answer.status}`);
    return answer.body?.status?.allowed === true;
  };
}

export interface AccessCacheOptions {
  /** How long an allowed read stays allowed without asking again (default 5 s). */
  allowedTtlMs?: number;
  /** How long a refused one stays refused (default 1 s: a new grant shows quickly). */
  deniedTtlMs?: number;
  /** Answers remembered at most (default 10,000). */
  maxEntries?: number;
}

/** The 403 the apiserver itself would answer, in the tenant's names (`namespace` '': at the cluster scope). */
export function readForbidden(user: string, verb: string, group: string, resource: string, name = '', namespace = ''): StatusError {
  const qualified = group === '' ? resource : `${resource}.${group}`;
  const details = group === '' ? { kind: resource } : { group, kind: resource };
  const scope = namespace === '' ? 'at the cluster scope' : `in the namespace ${JSON.stringify(namespace)}`;
  return forbidden(
    `${qualified}${name === '' ? '' : ' ' + JSON.stringify(name)} is forbidden: User ${JSON.stringify(user)} cannot ${verb} resource ${JSON.stringify(resource)} in API group ${JSON.stringify(group)} ${scope}`,
    name === '' ? details : { name, ...details },
  );
}

/** SubjectAccessReviews on the upstream about callers, and the tenant's own RBAC at its cluster scope, with their answers cached. */
export class AccessReviews {
  readonly #review: AccessReviewer;
  readonly #clusterScope: ClusterScopeReviewer;
  readonly #clusterScopeRules: ClusterScopeRules;
  readonly #cache: LRUCache<string, boolean, unknown>;
  readonly #deniedTtlMs: number;
  /** Questions under way: many requests of one caller at once are decided once. */
  readonly #asking = new Map<string, Promise<boolean>>();

  constructor(review: AccessReviewer, clusterScope: ClusterScopeReviewer, options: AccessCacheOptions = {}, clusterScopeRules: ClusterScopeRules = NO_RULES) {
    this.#review = review;
    this.#clusterScope = clusterScope;
    this.#clusterScopeRules = clusterScopeRules;
    this.#deniedTtlMs = options.deniedTtlMs ?? 1_000;
    this.#cache = new LRUCache({ max: options.maxEntries ?? 10_000, ttl: options.allowedTtlMs ?? 5_000 });
  }

  /**
   * Whether the tenant's RBAC lets `identity` (as the upstream names it) do `verb` on `resource` of `group` (the
   * upstream's group name) across all namespaces. A cached answer is returned synchronously.
   */
  allowed(tenant: TenantId, identity: UpstreamIdentity, verb: string, group: string, resource: string, name = ''): boolean | Promise<boolean> {
    return this.#ask(accessCacheKey(tenant, identity, verb, group, resource, name), () =>
      this.#decide(tenant, clusterScopeQuestion(identity, verb, group, resource, name)),
    );
  }

  /**
   * The tenant's RBAC at its cluster scope for a question (upstream names), with the apiserver's reason when allowed:
   * what a tenant's own SubjectAccessReview at the cluster scope answers besides the upstream's. Not cached: the
   * reason is part of the answer.
   */
  clusterScopeReview(tenant: TenantId, question: ClusterScopeQuestion): Promise<RbacDecision> {
    return this.#clusterScope(tenant, question);
  }

  /** Every rule the tenant's ClusterRoleBindings grant `identity` (upstream names), for RBAC's escalation check. Not cached. */
  clusterScopeRules(tenant: TenantId, identity: Pick<UpstreamIdentity, 'user' | 'groups'>): Promise<PolicyRule[]> {
    return this.#clusterScopeRules.held(tenant, identity);
  }

  /** A ClusterRole's rules by its upstream name (null: no such role), for RBAC's escalation check. Not cached. */
  roleRules(name: string): Promise<readonly PolicyRule[] | null> {
    return this.#clusterScopeRules.ofRole(name);
  }

  /**
   * Whether `identity` (as the upstream names it) may `verb` `resource` of `group` in the upstream namespace
   * `namespace`: what impersonation would have let the upstream decide, for a read tenantgate answers itself (the
   * watch cache). Asks about the identity itself, whose namespaced rights its RoleBindings (and the expansions of its
   * tenant's ClusterRoleBindings) hold upstream; `name`: the object a `metadata.name` field selector names, which the
   * apiserver authorizes as that object (RBAC's resourceNames). A cached answer is returned synchronously.
   */
  allowedInNamespace(
    tenant: TenantId,
    identity: UpstreamIdentity,
    verb: string,
    group: string,
    resource: string,
    namespace: string,
    name = '',
  ): boolean | Promise<boolean> {
    const key = JSON.stringify(['namespace', tenant, identity.user, identity.groups, verb, group, resource, namespace, name]);
    const resourceAttributes: ResourceAttributes = name === '' ? { verb, group, resource, namespace } : { verb, group, resource, namespace, name };
    return this.#ask(key, () => this.#review({ user: identity.user, groups: identity.groups, resourceAttributes }));
  }

  /**
   * Whether the caller (`identity`, as the upstream names it) may `impersonate` what `attributes` name (in the
   * upstream's names), as the apiserver's impersonation filter asks its authorizer: the upstream about the caller
   * itself (its RoleBindings) and, for a tenant, then the tenant's ClusterRoleBindings (tenant-rbac.ts). Cached by the
   * whole question asked and the tenant.
   */
  async mayImpersonate(tenant: TenantId | null, identity: UpstreamIdentity, attributes: ResourceAttributes): Promise<boolean> {
    const question: AccessQuestion = { user: identity.user, groups: identity.groups, resourceAttributes: attributes };
    if (await this.#ask(JSON.stringify(['impersonate', tenant, question]), () => this.#review(question))) return true;
    if (tenant === null) return false;
    const { verb, group, resource, subresource = '', name = '' } = attributes;
    const atClusterScope: ClusterScopeQuestion = {
      user: identity.user,
      groups: identity.groups,
      resourceAttributes: { verb, group, resource, subresource, name },
    };
    return this.#ask(JSON.stringify(['impersonate', 'cluster', tenant, atClusterScope]), () => this.#decide(tenant, atClusterScope));
  }

  #decide(tenant: TenantId, question: ClusterScopeQuestion): Promise<boolean> {
    return this.#clusterScope(tenant, question).then((decision) => decision.allowed);
  }

  /** The cached answer under `key`, or `decide()`'s (asked once however many wait for it). */
  #ask(key: string, decide: () => Promise<boolean>): boolean | Promise<boolean> {
    const cached = this.#cache.get(key);
    if (cached !== undefined) return cached;
    let asking = this.#asking.get(key);
    if (asking === undefined) {
      asking = decide().then(
        (allowed) => {
          this.#asking.delete(key);
          this.#cache.set(key, allowed, allowed ? undefined : { ttl: this.#deniedTtlMs });
          return allowed;
        },
        (error: unknown) => {
          this.#asking.delete(key);
          throw error;
        },
      );
      this.#asking.set(key, asking);
    }
    return asking;
  }
}

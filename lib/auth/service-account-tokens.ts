// Bearer tokens of tenants' service accounts: the upstream reviews each token (TokenReview, tenantgate's own
// credentials) and the answer is cached. Never keeps, logs or forwards a token: the cache is keyed by its sha256.
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { isTenantId, toTenantName, type TenantId } from '../convert/prefix.ts';
import { authenticatedGroupsToTenant, parseServiceAccountUser } from '../convert/rules/identity.ts';
import { upstreamUnavailable } from '../errors/status-error.ts';
import { upstreamJson } from '../upstream/client.ts';
import type { UpstreamPool } from '../upstream/pool.ts';
import type { Identity } from './identity.ts';

/** The part of a TokenReview's status tenantgate reads. */
export interface TokenReviewStatus {
  authenticated?: boolean;
  user?: { username?: string; groups?: string[] };
}

/** Asks the upstream about a token; throws (and nothing is cached) when the upstream cannot say. */
export type TokenReviewer = (token: string) => Promise<TokenReviewStatus>;

/**
 * The identity a review proves, or null unless it authenticated a service account in a tenant's namespace
 * (`system:serviceaccount:<id>-<ns>:<name>`): the tenant is the namespace's prefix; the user and groups are shown as
 * the tenant knows them. Whether the tenant exists is the resolve stage's question.
 */
export function identityFromTokenReview(status: TokenReviewStatus, tenantUid: (tenant: TenantId) => string | undefined): Identity | null {
  // An empty or failed review must never authenticate (capsule-proxy, CVE-2023-48312).
  if (status.authenticated !== true || typeof status.user?.username !== 'string') return null;
  const account = parseServiceAccountUser(status.user.username);
  if (account === null) return null;
  const tenant = account.namespace.slice(0, 6);
  const namespace = isTenantId(tenant) ? toTenantName(account.namespace, tenant) : null;
  if (namespace === null) return null;
  return {
    user: `system:serviceaccount:${namespace}:${account.name}`,
    groups: authenticatedGroupsToTenant(Array.isArray(status.user.groups) ? status.user.groups : [], tenant),
    tenant,
    proof: { kind: 'token', tenantUid: tenantUid(tenant) },
  };
}

/** `Authorization: Bearer <token>` → the token; null for anything else (other schemes, empty tokens). */
export function bearerToken(authorization: string | undefined): string | null {
  if (authorization === undefined || authorization.length < 8 || authorization.slice(0, 7).toLowerCase() !== 'bearer ') return null;
  const token = authorization.slice(7).trim();
  return token === '' ? null : token;
}

/** TokenReview against the upstream with tenantgate's own credentials. */
export function upstreamTokenReviewer(pool: UpstreamPool): TokenReviewer {
  return async (token) => {
    const review = { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } };
    let answer;
    try {
      answer = await upstreamJson(pool, 'POST', '/apis/authentication.k8s.io/v1/tokenreviews', review);
    } catch (error) {
      throw upstreamUnavailable(`token review failed: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (answer.status !== 201 && answer.status !== 200) throw upstreamUnavailable(`token review answered ${answer.status}`);
    return (answer.body?.status ?? {}) as TokenReviewStatus;
  };
}

export interface TokenCacheOptions {
  /** How long an accepted token is believed without asking again (default 30 s, like a short webhook cache). */
  successTtlMs?: number;
  /** How long a refused token stays refused (default 5 s): a flood of bad tokens costs the upstream little. */
  failureTtlMs?: number;
  /** Tokens remembered at most (default 10,000). */
  maxEntries?: number;
}

/** A cached refusal (lru-cache does not store undefined). */
const REFUSED = false;
type Cached = Identity | typeof REFUSED;

/**
 * The last token each connection sent, with its cache key: a client sends the same token on every request of a
 * connection, so its sha256 is taken once per connection, not per request.
 */
const lastTokenOf = new WeakMap<object, { token: string; key: string }>();

/** The cache key of a token: its sha256 (the reviews' cache never holds a token; a connection's last one lives with it). */
function cacheKeyOf(token: string, connection: object | undefined): string {
  const last = connection === undefined ? undefined : lastTokenOf.get(connection);
  if (last !== undefined && last.token === token) return last.key;
  const key = createHash('sha256').update(token).digest('base64');
  if (connection !== undefined) lastTokenOf.set(connection, { token, key });
  return key;
}

export class ServiceAccountTokens {
  readonly #cache: LRUCache<string, Cached, string>;
  readonly #failureTtlMs: number;
  #reviews = 0;

  constructor(review: TokenReviewer, tenantUid: (tenant: TenantId) => string | undefined, options: TokenCacheOptions = {}) {
    this.#failureTtlMs = options.failureTtlMs ?? 5_000;
    this.#cache = new LRUCache<string, Cached, string>({
      max: options.maxEntries ?? 10_000,
      ttl: options.successTtlMs ?? 30_000,
      // One review per token however many requests wait for it (lru-cache's fetch shares the promise).
      fetchMethod: async (_key, _stale, { options: entry, context: token }) => {
        this.#reviews++;
        const identity = identityFromTokenReview(await review(token), tenantUid);
        // Without its tenant the identity cannot pass the resolve stage: cache it as briefly as a refusal.
        if (identity === null || (identity.proof?.kind === 'token' && identity.proof.tenantUid === undefined)) {
          entry.ttl = this.#failureTtlMs;
          return identity ?? REFUSED;
        }
        return identity;
      },
    });
  }

  /** Reviews sent upstream so far (cache misses). */
  get reviews(): number {
    return this.#reviews;
  }

  /** Tokens remembered now, accepted or refused. */
  get size(): number {
    return this.#cache.size;
  }

  /**
   * The identity a token proves, or null. Synchronous on a cache hit (the common case on the request path);
   * rejects with 503 when the upstream cannot review it.
   */
  authenticate(token: string, connection?: object): Identity | null | Promise<Identity | null> {
    const key = cacheKeyOf(token, connection);
    const cached = this.#cache.get(key);
    if (cached !== undefined) return cached === REFUSED ? null : cached;
    return this.#cache.fetch(key, { context: token }).then((fetched) => (fetched === undefined || fetched === REFUSED ? null : fetched));
  }
}

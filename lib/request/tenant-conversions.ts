// What the conversion stages share: the upstream pool, discovery, access reviews, metrics, and each tenant's
// conversion context, made once per tenant rather than once per request. Holds no request state.
import { LRUCache } from 'lru-cache';
import type { AccessReviews } from '../auth/access-review.ts';
import type { TenantId } from '../convert/prefix.ts';
import type { ConvertContext } from '../convert/rules/index.ts';
import { convertContextOf, type PlatformClassesOfTenants } from '../convert/tenant-context.ts';
import type { TenantgateMetrics } from '../metrics/metrics.ts';
import type { KindRow } from '../convert/kinds.ts';
import { tenantViewSpecOf } from '../stream/view-spec.ts';
import type { TenantViewSpec } from '../stream/tenant-view.ts';
import type { DiscoveryCache } from '../upstream/discovery.ts';
import type { UpstreamPool } from '../upstream/pool.ts';
import { TenantOpenApiV2Cache } from './openapi-v2-cache.ts';

export interface TenantConversionDeps {
  pool: UpstreamPool;
  discovery: DiscoveryCache;
  /** The tenant's RBAC at the cluster scope (its ClusterRoleBindings), which tenantgate evaluates (auth/tenant-rbac.ts). */
  access: AccessReviews;
  /** Where upstream latency, watches and rewrites are counted; null: not counted. */
  metrics?: TenantgateMetrics | null;
  /** Hosts tenants' admission webhooks may call by URL; none when omitted. */
  webhookUrlHosts?: ReadonlySet<string> | undefined;
  /**
   * Called with a tenant's CRD as the upstream stored it, before its create or update is answered: whatever the tenant
   * needs to use the CRD's resources is in place by then. Absent: nothing waits.
   */
  customResourceDefinitionWritten?: ((tenant: TenantId, crd: unknown) => Promise<void>) | undefined;
  /**
   * Called when a tenant creates a certificate signing request, before the create is answered: its admin may approve
   * it by then (the rights on the tenant's signers are made on first need). Absent: nothing waits.
   */
  certificateSigningRequestWritten?: ((tenant: TenantId) => Promise<void>) | undefined;
  /**
   * Called when the upstream refused a tenant's write for its tenant-wide quota (the namespace's share was used up):
   * resolves to true once the namespace may take `requested` (free capacity moved there), and the write is sent
   * again. Absent: the refusal is the answer.
   */
  tenantQuotaRefused?: ((tenant: TenantId, upstreamNamespace: string, requested: Map<string, bigint>) => Promise<boolean>) | undefined;
  /**
   * Which of the platform's classes a tenant may use (its Tenant's allowed sets) and which it gets when its object names
   * none (its defaults); absent: all but the critical priority classes, and the upstream's own defaults.
   */
  platformClasses?: PlatformClassesOfTenants | undefined;
  /** Called when a tenant created a namespace, before the create is answered (its quota share, its allowed classes). */
  tenantNamespaceCreated?: ((tenant: TenantId, upstreamNamespace: string) => Promise<void>) | undefined;
}

/** Tenants whose conversion context is kept; past it the least recent is made again on its next request. */
const KEPT_CONTEXTS = 10_000;

export class TenantConversions {
  readonly pool: UpstreamPool;
  readonly discovery: DiscoveryCache;
  readonly access: AccessReviews;
  readonly metrics: TenantgateMetrics | null;
  readonly customResourceDefinitionWritten: TenantConversionDeps['customResourceDefinitionWritten'];
  readonly certificateSigningRequestWritten: TenantConversionDeps['certificateSigningRequestWritten'];
  readonly tenantQuotaRefused: TenantConversionDeps['tenantQuotaRefused'];
  readonly tenantNamespaceCreated: TenantConversionDeps['tenantNamespaceCreated'];
  /** Tenants' views of OpenAPI v2, kept while the upstream's ETag holds. */
  readonly openapiV2 = new TenantOpenApiV2Cache();
  readonly #webhookUrlHosts: ReadonlySet<string> | undefined;
  readonly #platformClasses: PlatformClassesOfTenants | undefined;
  readonly #contexts = new LRUCache<TenantId, ConvertContext>({ max: KEPT_CONTEXTS });
  /** Each tenant's view specs by kind, made on first use (they hold closures over the tenant's context). */
  readonly #viewSpecs = new WeakMap<ConvertContext, Map<KindRow, TenantViewSpec>>();

  constructor(deps: TenantConversionDeps) {
    this.pool = deps.pool;
    this.discovery = deps.discovery;
    this.access = deps.access;
    this.metrics = deps.metrics ?? null;
    this.customResourceDefinitionWritten = deps.customResourceDefinitionWritten;
    this.certificateSigningRequestWritten = deps.certificateSigningRequestWritten;
    this.tenantQuotaRefused = deps.tenantQuotaRefused;
    this.tenantNamespaceCreated = deps.tenantNamespaceCreated;
    this.#webhookUrlHosts = deps.webhookUrlHosts;
    this.#platformClasses = deps.platformClasses;
  }

  /** The tenant's conversion context (its closures read discovery as it is at each call). */
  of(tenant: TenantId): ConvertContext {
    let convert = this.#contexts.get(tenant);
    if (convert === undefined) {
      convert = convertContextOf(tenant, this.discovery, this.#webhookUrlHosts, this.#platformClasses);
      this.#contexts.set(tenant, convert);
    }
    return convert;
  }

  /** What the byte-level rewriter does to the tenant's objects of `row` (lists, single objects; not Tables). */
  viewSpecOf(tenant: TenantId, row: KindRow): TenantViewSpec {
    const convert = this.of(tenant);
    let specs = this.#viewSpecs.get(convert);
    if (specs === undefined) this.#viewSpecs.set(convert, (specs = new Map()));
    let spec = specs.get(row);
    if (spec === undefined) specs.set(row, (spec = tenantViewSpecOf(row, convert)));
    return spec;
  }
}

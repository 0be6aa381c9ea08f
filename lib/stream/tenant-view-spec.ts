// What the tenant view of a list, watch or object is asked to do (TenantViewSpec), and the error it throws when the
// upstream response cannot be rewritten safely. Types only, and the error: no module of the rewriter is below it.
import type { TenantId } from '../convert/prefix.ts';

/**
 * What a tenant may see of a list or watch, and how its objects change on the way out.
 *
 * - `nameField: 'namespace'` (namespaced kinds): an item is kept only when its own top-level
 *   `metadata.namespace` is a string `<id>-<ns>` with a non-empty `<ns>`; the fast path then emits the item's
 *   bytes with just those 7 prefix bytes removed.
 * - `nameField: 'name'` (cluster-scoped tenant kinds, Namespaces): the same with `metadata.name`.
 * - `nameField: null`: no built-in check; only allowed with `rewriteItem`, which then decides alone (CRDs, whose
 *   names carry the prefix inside the group).
 * - `rewriteItem` (slow path, for kinds whose rules reach deep into the body): each item or watch object that
 *   passed the `nameField` check is JSON.parse'd, given to it as the upstream object, and its result
 *   JSON.stringify'd in its place; it returns `null` to drop the object. It must strip the prefix itself.
 * - `rewriteStatus`: applied to the `Status` object of watch `ERROR` events (default: unchanged bytes).
 * - `tenantMetadata` (with `rewriteItem`): the fast path for kinds whose rule touches only the object's own metadata.
 *   An item keeps its bytes but for the name prefix, the tenant label (an item labelled for another tenant is
 *   dropped), the tenant label's fields in managedFields, and ownerReferences; an item holding the tenant id
 *   followed by `-` or `:` anywhere but its name field, or any of the kind's markers, goes to `rewriteItem`.
 */
export interface TenantViewSpec {
  tenant: TenantId;
  nameField: 'namespace' | 'name' | null;
  rewriteItem?: ((item: any) => any) | undefined;
  rewriteStatus?: ((status: any) => any) | undefined;
  tenantMetadata?: TenantMetadataView | undefined;
  /** Largest unfinished item (or watch event, or list head before `items`) held from one chunk to the next. Default 16 MiB. */
  maxItemBytes?: number | undefined;
  /**
   * The group of the list's own apiVersion, upstream and as the tenant sees it, when they differ (kinds stored under
   * another group upstream): typed clients decode a list by it. Items are the rule's to map (`rewriteItem`).
   */
  listApiGroup?: { readonly upstream: string; readonly tenant: string } | undefined;
}

/**
 * One list of several merged into one (per-namespace lists): only the items are emitted, after `itemsBefore` items
 * already sent (so a comma leads the first); the list around them is kept for `envelope()`.
 */
export interface ItemsOnly {
  itemsBefore: number;
}

/** What the fast path asks of the kind's rule, for the parts of an item's metadata it does not edit in place. */
export interface TenantMetadataView {
  /** The tenant's view of `metadata.ownerReferences` (parsed), or null when an owner is not the tenant's. */
  ownerReferences(owners: unknown[]): unknown[] | null;
  /** The tenant's view of `metadata.managedFields` (parsed), for field sets the byte edit does not recognise. */
  managedFields(entries: unknown[]): unknown[];
  /**
   * By member of `spec`: byte strings that send an item holding any of them there to the slow path (fields deep in
   * the body the rule rewrites). Sound because kube-apiserver's encoder never escapes the characters of a key.
   */
  slowPathMarkers: { readonly [specMember: string]: readonly string[] };
}

/** The upstream response cannot be rewritten safely: malformed JSON, truncated, not a list, an odd watch event. */
export class TenantViewError extends Error {
  /** Byte offset in the upstream response where the problem was found. */
  readonly offset: number;

  constructor(message: string, offset: number) {
    super(`${message} (at byte ${offset} of the upstream response)`);
    this.name = 'TenantViewError';
    this.offset = offset;
  }
}

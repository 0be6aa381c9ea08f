// The tenant-view rules of tenant-view.ts written the obvious way (JSON.parse, edit, JSON.stringify): the oracle
// the byte rewriter is fuzzed against, and the baseline it is benchmarked against. Never used on the request path.
import { toTenantName } from '../convert/prefix.ts';
import type { TenantViewSpec } from './tenant-view.ts';

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The item as the tenant sees it, or null when it is not the tenant's. */
export function referenceTenantItem(item: unknown, spec: TenantViewSpec): unknown {
  let tenantName: string | null = null;
  if (spec.nameField !== null) {
    if (!isObject(item) || !isObject(item.metadata)) return null;
    const upstream = item.metadata[spec.nameField];
    tenantName = typeof upstream === 'string' ? toTenantName(upstream, spec.tenant) : null;
    if (tenantName === null) return null;
  } else if (!isObject(item)) {
    return null;
  }
  if (spec.rewriteItem !== undefined) return spec.rewriteItem(item);
  (item as any).metadata[spec.nameField!] = tenantName;
  return item;
}

/** The tenant's view of a whole list response. Throws on anything that is not a JSON list object. */
export function referenceListView(upstream: Buffer, spec: TenantViewSpec): Buffer {
  const list: unknown = JSON.parse(upstream.toString('utf8'));
  if (!isObject(list) || !('items' in list)) throw new Error('not a list');
  if (list.items !== null) {
    if (!Array.isArray(list.items)) throw new Error('items is not an array');
    list.items = list.items.map((item) => referenceTenantItem(item, spec)).filter((item) => item !== null);
  }
  return Buffer.from(JSON.stringify(list));
}

/** A bookmark only carries a resourceVersion; one that has the name field gets the tenant check like any object. */
function namesSomething(object: Record<string, unknown>, spec: TenantViewSpec): boolean {
  return spec.nameField !== null && isObject(object.metadata) && spec.nameField in object.metadata;
}

/** The tenant's view of a JSON watch stream (one event per line). */
export function referenceWatchView(upstream: Buffer, spec: TenantViewSpec): Buffer {
  const out: string[] = [];
  for (const line of upstream.toString('utf8').split('\n')) {
    if (line.trim() === '') continue;
    const event: unknown = JSON.parse(line);
    if (!isObject(event) || typeof event.type !== 'string' || !isObject(event.object)) throw new Error('not a watch event');
    if (event.type === 'ERROR') {
      if (spec.rewriteStatus !== undefined) event.object = spec.rewriteStatus(event.object);
    } else if (event.type !== 'BOOKMARK' || namesSomething(event.object, spec)) {
      const object = referenceTenantItem(event.object, spec);
      if (object === null) continue;
      event.object = object;
    }
    out.push(JSON.stringify(event) + '\n');
  }
  return Buffer.from(out.join(''));
}

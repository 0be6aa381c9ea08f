// Strategic merge patches of kinds kept upstream as custom resources, which refuse them: turned into the JSON merge
// patch that does the same. Their lists are atomic but for the few merged by key (status.conditions by type), which
// are resolved against the object as it is. Never passes a `$` directive on: refused with 415, not half applied.
import { badRequest, unsupportedMediaType } from '../errors/status-error.ts';
import type { KindRow } from './kinds.ts';
import { applyMergePatch } from './merge-patch.ts';
import { isObject } from './rules/json.ts';
import type { Json } from './rules/rule.ts';

/** A list a strategic merge patch merges element by element, by the value of `key` (`patchStrategy:"merge"`). */
interface MergeList {
  readonly path: readonly string[];
  readonly key: string;
}

const CONDITIONS_BY_TYPE: readonly MergeList[] = [{ path: ['status', 'conditions'], key: 'type' }];

/** By `<group>/<kind>`: the lists of k8s.io/api flowcontrol/v1 types.go with `patchStrategy:"merge"`; every other list is atomic. */
const MERGE_LISTS: ReadonlyMap<string, readonly MergeList[]> = new Map([
  ['flowcontrol.apiserver.k8s.io/FlowSchema', CONDITIONS_BY_TYPE],
  ['flowcontrol.apiserver.k8s.io/PriorityLevelConfiguration', CONDITIONS_BY_TYPE],
  // subjects carry no patchStrategy (types.go): replaced whole, as a merge patch does.
  ['rbac.authorization.k8s.io/ClusterRoleBinding', []],
]);

function listAt(doc: unknown, path: readonly string[]): unknown {
  let at = doc;
  for (const key of path) at = isObject(at) ? at[key] : undefined;
  return at;
}

/** The first `$` directive in a patch ($patch, $retainKeys, $setElementOrder/…, $deleteFromPrimitiveList/…), or null. */
function firstDirective(value: unknown, path: string): string | null {
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = firstDirective(value[i], `${path}[${i}]`);
      if (found !== null) return found;
    }
    return null;
  }
  if (!isObject(value)) return null;
  for (const [key, child] of Object.entries(value)) {
    if (key.startsWith('$')) return path === '' ? key : `${path}.${key}`;
    const found = firstDirective(child, path === '' ? key : `${path}.${key}`);
    if (found !== null) return found;
  }
  return null;
}

/** Whether the patch sets a list merged by key: then it needs the object as it is (mergeListsOf). */
export function touchesMergeLists(row: KindRow, patch: unknown): boolean {
  return (MERGE_LISTS.get(`${row.group}/${row.kind}`) ?? []).some((list) => listAt(patch, list.path) !== undefined);
}

function mergeByKey(current: unknown, patch: unknown[], list: MergeList, where: string): unknown[] {
  const merged = Array.isArray(current) ? current.map((item) => structuredClone(item)) : [];
  for (const element of patch) {
    const key = isObject(element) ? element[list.key] : undefined;
    if (typeof key !== 'string') throw badRequest(`the strategic merge patch's ${where} element does not contain its merge key ${list.key}`);
    const at = merged.findIndex((item) => isObject(item) && item[list.key] === key);
    if (at < 0) merged.push(applyMergePatch({}, element));
    else merged[at] = applyMergePatch(merged[at], element);
  }
  return merged;
}

/**
 * The JSON merge patch doing what a strategic merge patch does to an object of `row`'s kind. `current`: the tenant's
 * view of the object, needed when touchesMergeLists (its resourceVersion then guards the merged list: a write in
 * between answers 409 rather than losing a condition). Throws 415 for directives, 400 for a malformed patch.
 */
export function strategicToMergePatch(row: KindRow, patch: unknown, current?: Json): Json {
  const kind = `${row.group}/${row.kind}`;
  const lists = MERGE_LISTS.get(kind);
  if (lists === undefined)
    throw unsupportedMediaType(`tenantgate cannot apply a strategic merge patch to ${row.resource}.${row.group}; send a JSON merge patch`);
  if (!isObject(patch)) throw badRequest('the strategic merge patch must be a JSON object');
  const directive = firstDirective(patch, '');
  if (directive !== null) {
    throw unsupportedMediaType(
      `the strategic merge patch directive ${directive} is not supported for ${row.resource}.${row.group} here; send a JSON merge patch (application/merge-patch+json) or a JSON patch`,
    );
  }
  const merge = structuredClone(patch);
  let resolved = false;
  for (const list of lists) {
    const value = listAt(merge, list.path);
    if (value === undefined || value === null) continue;
    const where = list.path.join('.');
    if (!Array.isArray(value)) throw badRequest(`the strategic merge patch's ${where} must be a list`);
    if (current === undefined) throw new TypeError(`strategicToMergePatch: ${where} needs the current object`);
    const parent = listAt(merge, list.path.slice(0, -1)) as Json;
    parent[list.path.at(-1)!] = mergeByKey(listAt(current, list.path), value, list, where);
    resolved = true;
  }
  const resourceVersion = listAt(current, ['metadata', 'resourceVersion']);
  if (resolved && typeof resourceVersion === 'string' && listAt(merge, ['metadata', 'resourceVersion']) === undefined) {
    const metadata = isObject(merge.metadata) ? merge.metadata : (merge.metadata = {});
    (metadata as Json).resourceVersion = resourceVersion;
  }
  return merge;
}

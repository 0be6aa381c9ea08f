// RFC 6902 JSON Patch, applied by tenantgate itself: a patch's paths name fields in the tenant's view, which the
// kind's rules may move or rewrite upstream, so the patch is applied to the tenant's view of the object and the
// result converted whole (lib/request/request-body.ts reads, patches and writes back).
import { badRequest, invalid, requestEntityTooLarge, StatusError } from '../errors/status-error.ts';
import { checkBodyShape, parseJsonBody } from './tenant-body.ts';

type Doc = unknown;

function patchInvalid(message: string): StatusError {
  return invalid(`the JSON patch cannot be applied: ${message}`);
}

/** The apiserver's bounds: operations in one patch, and bytes all its `copy` operations may add together. */
export const MAX_JSON_PATCH_OPERATIONS = 10_000;
export const MAX_JSON_PATCH_COPY_BYTES = 3 * 1024 * 1024;

/** The operations of a JSON patch body; 400 when it is not an array of operations, 413 past the apiserver's count. */
export function parseJsonPatch(text: string): Record<string, unknown>[] {
  const ops = parseJsonBody(text, 'the JSON patch');
  if (!Array.isArray(ops) || !ops.every((op) => typeof op === 'object' && op !== null && !Array.isArray(op))) {
    throw badRequest('a JSON patch must be an array of operations');
  }
  if (ops.length > MAX_JSON_PATCH_OPERATIONS) {
    throw requestEntityTooLarge(`the allowed maximum operations in a JSON patch is ${MAX_JSON_PATCH_OPERATIONS}, got ${ops.length}`);
  }
  return ops as Record<string, unknown>[];
}

/** RFC 6901: "/a/b~1c" → ["a", "b/c"]. */
function tokens(pointer: unknown): string[] {
  if (typeof pointer !== 'string' || (pointer !== '' && !pointer.startsWith('/'))) throw patchInvalid(`${JSON.stringify(pointer)} is not a JSON pointer`);
  return pointer === ''
    ? []
    : pointer
        .slice(1)
        .split('/')
        .map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'));
}

function isContainer(value: unknown): value is Record<string, unknown> | unknown[] {
  return typeof value === 'object' && value !== null;
}

/** The container holding the pointer's last token, and that token. */
function parentOf(doc: Doc, path: string[], pointer: unknown): [Record<string, unknown> | unknown[], string] {
  let node: unknown = doc;
  for (const token of path.slice(0, -1)) {
    node = Array.isArray(node)
      ? node[arrayIndex(node, token, false, pointer)]
      : isContainer(node) && Object.hasOwn(node, token)
        ? (node as Record<string, unknown>)[token]
        : undefined;
    if (!isContainer(node)) throw patchInvalid(`${JSON.stringify(pointer)}: no such path`);
  }
  return [node as Record<string, unknown> | unknown[], path[path.length - 1]!];
}

function arrayIndex(array: unknown[], token: string, forAdd: boolean, pointer: unknown): number {
  if (forAdd && token === '-') return array.length;
  if (!/^(0|[1-9][0-9]*)$/.test(token)) throw patchInvalid(`${JSON.stringify(pointer)}: ${JSON.stringify(token)} is not an array index`);
  const index = Number(token);
  if (index > array.length || (!forAdd && index === array.length)) throw patchInvalid(`${JSON.stringify(pointer)}: index ${index} is out of range`);
  return index;
}

function get(doc: Doc, pointer: unknown): unknown {
  const path = tokens(pointer);
  if (path.length === 0) return doc;
  const [parent, last] = parentOf(doc, path, pointer);
  if (Array.isArray(parent)) return parent[arrayIndex(parent, last, false, pointer)];
  if (!Object.hasOwn(parent, last)) throw patchInvalid(`${JSON.stringify(pointer)}: no such path`);
  return parent[last];
}

function remove(doc: Doc, pointer: unknown): unknown {
  const path = tokens(pointer);
  if (path.length === 0) throw patchInvalid('the whole object cannot be removed');
  const [parent, last] = parentOf(doc, path, pointer);
  if (Array.isArray(parent)) return parent.splice(arrayIndex(parent, last, false, pointer), 1)[0];
  if (!Object.hasOwn(parent, last)) throw patchInvalid(`${JSON.stringify(pointer)}: no such path`);
  const value = parent[last];
  delete parent[last];
  return value;
}

function add(doc: Doc, pointer: unknown, value: unknown): Doc {
  const path = tokens(pointer);
  if (path.length === 0) return value;
  const [parent, last] = parentOf(doc, path, pointer);
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, last, true, pointer), 0, value);
  else parent[last] = value;
  return doc;
}

/** RFC 6902 equality: objects with the same members in any order. */
function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (!isContainer(a) || !isContainer(b) || Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === (b as unknown[]).length && a.every((x, i) => jsonEqual(x, (b as unknown[])[i]));
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], (b as Record<string, unknown>)[k]));
}

/**
 * The document with the operations applied (the document is modified); 422 for an operation that does not apply, or
 * for `copy` operations that would add more than MAX_JSON_PATCH_COPY_BYTES (each copy can double the document).
 * 400 when the result nests deeper than a body may.
 */
export function applyJsonPatch(doc: Doc, ops: Record<string, unknown>[]): Doc {
  let copiedBytes = 0;
  for (const op of ops) {
    const copy = (value: unknown) => structuredClone(value);
    switch (op.op) {
      case 'add':
        doc = add(doc, op.path, copy(op.value));
        break;
      case 'remove':
        remove(doc, op.path);
        break;
      case 'replace':
        get(doc, op.path);
        if (tokens(op.path).length === 0) doc = copy(op.value);
        else {
          remove(doc, op.path);
          doc = add(doc, op.path, copy(op.value));
        }
        break;
      case 'move': {
        const value = remove(doc, op.from);
        doc = add(doc, op.path, value);
        break;
      }
      case 'copy': {
        const value = get(doc, op.from);
        copiedBytes += JSON.stringify(value)?.length ?? 0;
        if (copiedBytes > MAX_JSON_PATCH_COPY_BYTES) throw patchInvalid(`its copy operations would add more than ${MAX_JSON_PATCH_COPY_BYTES} bytes`);
        doc = add(doc, op.path, copy(value));
        break;
      }
      case 'test':
        if (!jsonEqual(get(doc, op.path), op.value)) throw patchInvalid(`the test of ${JSON.stringify(op.path)} failed`);
        break;
      default:
        throw patchInvalid(`unknown operation ${JSON.stringify(op.op)}`);
    }
  }
  checkBodyShape(doc, 'the patched object');
  return doc;
}

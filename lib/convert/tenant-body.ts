// A client's JSON or YAML body parsed into a value the rules may walk: nesting bounded and no YAML alias cycles.
// Never hands on a value deeper than MAX_BODY_NESTING or containing itself: hostile bodies get a 400, never a 500.
import { isMap, isScalar, isSeq, parseDocument } from 'yaml';
import { badRequest, type StatusError } from '../errors/status-error.ts';
import { jsonDuplicates, lineAt, membersWritten, type DuplicateField } from './duplicate-fields.ts';

/**
 * Deepest nesting of objects and arrays in a body. The apiserver's JSON decoder stops at 10,000 levels, but
 * tenantgate's rules, JSON.stringify and structuredClone recurse, and on Node 24's default stack they overflow past
 * ~1,600 object levels; real objects (CRD schemas included) nest a few dozen levels.
 */
export const MAX_BODY_NESTING = 512;
/** Alias expansions a YAML body may make (yaml's own default, set here so it cannot drift): stops billion laughs. */
export const MAX_YAML_ALIASES = 100;

const tooDeep = (what: string) => badRequest(`${what} is nested more than ${MAX_BODY_NESTING} levels deep`);

/**
 * Throws a 400 when `value` nests deeper than MAX_BODY_NESTING or (`aliases`: a parsed YAML document) contains
 * itself. Iterative, so that the check itself cannot overflow the stack. Returns the members of its objects.
 */
export function checkBodyShape(value: unknown, what: string, aliases = false): number {
  if (typeof value !== 'object' || value === null) return 0;
  let members = 0;
  // Objects still to visit with their depth; a negative depth marks leaving an object (it is no longer an ancestor).
  const pending: unknown[] = [value];
  const depths: number[] = [1];
  const ancestors = aliases ? new Set<object>() : null;
  while (pending.length !== 0) {
    const node = pending.pop() as object;
    const depth = depths.pop()!;
    if (depth < 0) {
      ancestors!.delete(node);
      continue;
    }
    if (depth > MAX_BODY_NESTING) throw tooDeep(what);
    if (ancestors !== null) {
      if (ancestors.has(node)) throw badRequest(`${what} is not valid YAML: an alias refers to a node that contains it (an alias cycle)`);
      ancestors.add(node);
      pending.push(node);
      depths.push(-1);
    }
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const child: unknown = node[i];
        if (typeof child !== 'object' || child === null) continue;
        pending.push(child);
        depths.push(depth + 1);
      }
      continue;
    }
    // for...in over own keys: no array of values per object (bodies are plain data, nothing inherited to walk).
    for (const key in node) {
      members++;
      const child: unknown = (node as Record<string, unknown>)[key];
      if (typeof child !== 'object' || child === null) continue;
      pending.push(child);
      depths.push(depth + 1);
    }
  }
  return members;
}

/** A JSON body (400 when it is not JSON or nests too deep); V8's JSON.parse itself copes with any depth. */
export function parseJsonBody(text: string, what = 'the request body'): unknown {
  return parseJson(text, what, false).value;
}

/** A YAML body (400 when it is not YAML, expands too many aliases, contains itself or nests too deep). */
export function parseYamlBody(text: string, what = 'the request body'): unknown {
  return parseYaml(text, what, false).value;
}

/** A JSON or YAML body by its content type, as the apiserver reads `application/yaml` and `apply-patch+yaml`. */
export function parseJsonOrYamlBody(text: string, contentType: string, what = 'the request body'): unknown {
  return parseBody(text, contentType, false, what).value;
}

/** A parsed body, and (when asked for) the members it writes more than once, which parsing collapsed. */
export interface ParsedBody {
  value: unknown;
  duplicates: DuplicateField[];
}

/**
 * As parseJsonOrYamlBody, also finding duplicate members when `findDuplicates` (the client's fieldValidation is not
 * Ignore): in JSON by one byte scan counting members against the parse (the exact places only when they differ), in
 * YAML from the parse itself.
 */
export function parseBody(text: string, contentType: string, findDuplicates: boolean, what = 'the request body'): ParsedBody {
  return contentType.includes('yaml') ? parseYaml(text, what, findDuplicates) : parseJson(text, what, findDuplicates);
}

function parseJson(text: string, what: string, findDuplicates: boolean): ParsedBody {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badRequest(`${what} is not valid JSON`);
  }
  const members = checkBodyShape(value, what);
  return { value, duplicates: findDuplicates && membersWritten(text) !== members ? jsonDuplicates(text) : [] };
}

function parseYaml(text: string, what: string, findDuplicates: boolean): ParsedBody {
  let value: unknown;
  let duplicated = false;
  let document;
  try {
    document = parseDocument(text);
    // A duplicate key is an error to yaml, not to the apiserver (the last one wins unless fieldValidation says otherwise).
    for (const error of document.errors) {
      if (error.code === 'DUPLICATE_KEY') duplicated = true;
      else throw error;
    }
    value = document.toJS({ maxAliasCount: MAX_YAML_ALIASES });
  } catch (error) {
    throw yamlRefusal(error, what);
  }
  checkBodyShape(value, what, true);
  const duplicates: DuplicateField[] = [];
  if (findDuplicates && duplicated) yamlDuplicates(document.contents, text, [], duplicates);
  return { value, duplicates };
}

/** The later occurrences of keys in a YAML document's mappings, with their lines; depth bounded by checkBodyShape. */
function yamlDuplicates(node: unknown, text: string, path: (string | number)[], found: DuplicateField[]): void {
  if (isMap(node)) {
    const seen = new Set<string>();
    for (const pair of node.items) {
      if (!isScalar(pair.key)) continue;
      const key = String(pair.key.value);
      if (!seen.has(key)) seen.add(key);
      else found.push({ path, key, line: lineAt(text, pair.key.range?.[0] ?? 0) });
      yamlDuplicates(pair.value, text, [...path, key], found);
    }
  } else if (isSeq(node)) {
    node.items.forEach((item, i) => yamlDuplicates(item, text, [...path, i], found));
  }
}

function yamlRefusal(error: unknown, what: string): StatusError {
  const message = error instanceof Error ? error.message : '';
  // yaml's parser recurses per flow level and meets the stack's end long before MAX_BODY_NESTING matters for it.
  if (error instanceof RangeError || message.includes('Maximum call stack size exceeded')) return tooDeep(what);
  if (message.includes('Excessive alias count'))
    return badRequest(`${what} is not valid YAML: its aliases expand more than ${MAX_YAML_ALIASES} times (an alias bomb)`);
  return badRequest(`${what} is not valid YAML`);
}

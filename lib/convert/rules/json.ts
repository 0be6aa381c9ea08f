// Small accessors for walking parsed JSON by path without casts at every step.
// A path element '*' means every element of an array; missing or mistyped steps are skipped, never created.
import type { Json } from './rule.ts';

export function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function objectAt(obj: Json, key: string): Json | undefined {
  const value = obj[key];
  return isObject(value) ? value : undefined;
}

export function stringAt(obj: Json, key: string): string | undefined {
  const value = obj[key];
  return typeof value === 'string' ? value : undefined;
}

/** The object at obj[key], created empty when absent (or not an object). */
export function ensureObject(obj: Json, key: string): Json {
  const value = obj[key];
  if (isObject(value)) return value;
  const created: Json = {};
  obj[key] = created;
  return created;
}

/**
 * Calls `visit` with every object found at `path` under `root`. Stops and returns false as soon as a visit does.
 */
export function everyObjectAt(root: Json, path: readonly string[], visit: (obj: Json) => boolean, from = 0): boolean {
  if (from === path.length) return visit(root);
  const step = path[from] as string;
  if (step === '*') return true; // '*' applies to arrays only, handled below
  const next = root[step];
  if (path[from + 1] === '*') {
    if (!Array.isArray(next)) return true;
    for (const item of next) {
      if (isObject(item) && !everyObjectAt(item, path, visit, from + 2)) return false;
    }
    return true;
  }
  return isObject(next) ? everyObjectAt(next, path, visit, from + 1) : true;
}

/** Like everyObjectAt, for visits that cannot fail. */
export function eachObjectAt(root: Json, path: readonly string[], visit: (obj: Json) => void): void {
  everyObjectAt(root, path, (obj) => {
    visit(obj);
    return true;
  });
}

/**
 * Rewrites the non-empty string at `path` (last element is the field name); `map` returning null means "not the
 * tenant's" and stops with false.
 */
export function mapStringAt(root: Json, path: readonly string[], map: (value: string) => string | null): boolean {
  const field = path[path.length - 1] as string;
  return everyObjectAt(root, path.slice(0, -1), (parent) => {
    const value = parent[field];
    if (typeof value !== 'string' || value === '') return true;
    const mapped = map(value);
    if (mapped === null) return false;
    parent[field] = mapped;
    return true;
  });
}

/** Rewrites every string of the string array at `path`; `map` returning null stops with false. */
/**
 * Replaces each list of strings at `path` whole, given the object holding it (a list holding anything else is left for
 * the apiserver to refuse).
 */
export function mapStringArrayAt(root: Json, path: readonly string[], map: (values: string[], parent: Json) => string[]): void {
  const field = path[path.length - 1] as string;
  eachObjectAt(root, path.slice(0, -1), (parent) => {
    const values = parent[field];
    if (Array.isArray(values) && values.every((value) => typeof value === 'string')) parent[field] = map(values as string[], parent);
  });
}

/** The strings of a list (anything else in it left out); [] for what is not a list. */
export function stringsOf(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

export function mapStringsAt(root: Json, path: readonly string[], map: (value: string) => string | null): boolean {
  const field = path[path.length - 1] as string;
  return everyObjectAt(root, path.slice(0, -1), (parent) => {
    const values = parent[field];
    if (!Array.isArray(values)) return true;
    for (let i = 0; i < values.length; i++) {
      const value: unknown = values[i];
      if (typeof value !== 'string') continue;
      const mapped = map(value);
      if (mapped === null) return false;
      values[i] = mapped;
    }
    return true;
  });
}

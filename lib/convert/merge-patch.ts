// RFC 7386 JSON Merge Patch, for objects tenantgate stores itself (Tenants): objects merge key by key, null deletes,
// anything else replaces. Pure: returns a new document, never modifies the patch or the target.

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** The target with the merge patch applied (a new document; arrays are replaced whole, as the RFC says). */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return structuredClone(patch);
  const result: Record<string, unknown> = isPlainObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = applyMergePatch(result[key], value);
  }
  return result;
}

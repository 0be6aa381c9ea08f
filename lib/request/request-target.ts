// Validates the request target before anything reads it: one parse, so no later stage and no upstream
// can see a different path than the one tenantgate checked.
import { badRequest, type StatusError } from '../errors/status-error.ts';

const MAX_TARGET_BYTES = 16 * 1024;

/** Why the target is malformed, or null when it is a clean origin-form path with an optional query. */
export function malformedRequestTarget(target: string | undefined): StatusError | null {
  if (target === undefined || target.length === 0 || target.charCodeAt(0) !== 47 /* '/' */) {
    return badRequest('the request path must start with "/"');
  }
  if (target.length > MAX_TARGET_BYTES) return badRequest(`the request path is longer than ${MAX_TARGET_BYTES} bytes`);
  const queryStart = target.indexOf('?');
  const path = queryStart === -1 ? target : target.slice(0, queryStart);
  for (let i = 0; i < target.length; i++) {
    const c = target.charCodeAt(i);
    if (c <= 32 || c === 127 || c === 35 /* '#' */) return badRequest('the request path contains a character that is not allowed');
  }
  let decodedPath = path;
  // (Most paths have nothing encoded: nothing to decode.)
  if (path.includes('%')) {
    try {
      decodedPath = decodeURIComponent(path);
    } catch {
      return badRequest('the request path has a malformed percent-encoding');
    }
  }
  // Encoded, these would end the path (`?`, `#`) or mean nothing in a name anywhere upstream (control characters):
  // refused here so that no later stage can forward a path that reads differently upstream.
  for (let i = 0; i < decodedPath.length; i++) {
    const c = decodedPath.charCodeAt(i);
    if (c < 32 || c === 127 || c === 63 /* '?' */ || c === 35 /* '#' */) {
      return badRequest('the request path contains an encoded character that is not allowed (?, #, or a control character)');
    }
  }
  // Dot segments and empty segments would let a path mean two things (to us and to the upstream).
  if (decodedPath.includes('/.')) {
    for (const segment of decodedPath.split('/').slice(1)) {
      if (segment === '.' || segment === '..') return badRequest('the request path must not contain "." or ".." segments');
    }
  }
  if (decodedPath.includes('//')) return badRequest('the request path must not contain empty segments');
  return null;
}

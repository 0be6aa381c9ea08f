// One upstream object (the answer to a get, create, update or patch) as the tenant sees it, by the list rewriter's
// byte-level judgement and edits of one item. Never returns an object that is not the tenant's, nor a malformed one.
import { badGateway } from '../errors/status-error.ts';
import { TenantViewError, TenantViewScanner, type TenantViewSpec } from './tenant-view.ts';

/**
 * objectToTenantBytes's answer for a body whose name field it cannot check (missing, not a non-empty string, or
 * written twice): a Status, a Table, a list, or an odd object. The caller converts it parsed, as before.
 */
export const PARSED_PATH = Symbol('the parsed path');

/**
 * The tenant's view of the single JSON object `upstream`, for `spec` = tenantViewSpecOf(row, convert): its bytes with
 * the list fast path's edits for kinds where metadataOnly(row) holds (and the rule, parsed, for the odd object that
 * needs it or for any other kind); null when the object is not the tenant's (the answer is then 404); PARSED_PATH
 * when the parsed path must decide. `upstream` is left as it was.
 * Throws a 502 StatusError when `upstream` is not one JSON object.
 */
export function objectToTenantBytes(upstream: Buffer, spec: TenantViewSpec): Buffer | null | typeof PARSED_PATH {
  const scanner = new TenantViewScanner('object', spec);
  let view: Buffer;
  try {
    view = scanner.write(upstream);
    const tail = scanner.finish();
    if (tail.length > 0) view = Buffer.concat([view, tail]);
  } catch (error) {
    if (error instanceof TenantViewError) throw badGateway(`the upstream answer cannot be converted: ${error.message}`);
    throw error;
  }
  if (scanner.itemsKept === 1) return view;
  return scanner.objectUnchecked ? PARSED_PATH : null;
}

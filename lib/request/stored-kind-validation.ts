// A tenant's object of a stored kind (a FlowSchema kept as tenantgate's custom resource, whose schema checks nothing) is
// validated and defaulted by the real kind: a dry-run create upstream, as tenantgate, under a generated name.
// Never stores anything of the real kind: every request it makes is dryRun=All.
import type { KindRow } from '../convert/kinds.ts';
import type { TenantId } from '../convert/prefix.ts';
import { isObject } from '../convert/rules/json.ts';
import type { Json } from '../convert/rules/rule.ts';
import { upstreamJson } from '../upstream/client.ts';
import type { UpstreamPool } from '../upstream/pool.ts';
import { tenantStatusError } from './read-body.ts';

/** The generated name's start: no tenant's `<id>-` (a 6-character id and a dash), nor a mandatory object's name. */
const PROBE_NAME = 'tenantgate-validation-';

/**
 * The tenant's object (its view, apiVersion of the built-in group) with the spec the real kind's defaulting makes of it;
 * throws the apiserver's own refusal (422 Invalid, 400 for strict field validation), under the tenant's name. When the
 * real kind is not served upstream (API Priority and Fairness off: 404), the object is taken as it is.
 */
export async function validatedByRealKind(view: Json, row: KindRow, version: string, fieldValidation: string | null, pool: UpstreamPool, tenant: TenantId): Promise<Json> {
  const metadata = isObject(view.metadata) ? view.metadata : {};
  const name = typeof metadata.name === 'string' && metadata.name !== '' ? metadata.name : String(metadata.generateName ?? '');
  // Only what the kind validates: its spec (the custom resource checks the metadata; status is the status subresource's).
  const probe = { apiVersion: view.apiVersion, kind: view.kind, metadata: { generateName: PROBE_NAME }, spec: view.spec };
  const query = `dryRun=All${fieldValidation === null ? '' : `&fieldValidation=${encodeURIComponent(fieldValidation)}`}`;
  const answer = await upstreamJson(pool, 'POST', `/apis/${row.group}/${encodeURIComponent(version)}/${row.resource}?${query}`, probe);
  if (answer.status === 201 || answer.status === 200) return isObject(answer.body) && 'spec' in answer.body ? { ...view, spec: answer.body.spec } : view;
  if (answer.status === 404) return view;
  const probeName = isObject(answer.body) && isObject(answer.body.details) && typeof answer.body.details.name === 'string' ? answer.body.details.name : '';
  // (The tenant's name as it stands inside a JSON string.)
  const body = probeName.startsWith(PROBE_NAME) ? JSON.parse(JSON.stringify(answer.body).replaceAll(probeName, JSON.stringify(name).slice(1, -1))) : answer.body;
  throw tenantStatusError(answer.status, body, tenant);
}

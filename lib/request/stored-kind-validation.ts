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

/** The fields the real kind validates and defaults (the custom resource checks the metadata; status is the status subresource's). */
const VALIDATED_FIELDS: Readonly<Record<string, readonly string[]>> = { ClusterRoleBinding: ['roleRef', 'subjects'] };
const SPEC = ['spec'];

/**
 * The tenant's object (its view, apiVersion of the built-in group) with the fields the real kind's defaulting makes of it;
 * throws the apiserver's own refusal (422 Invalid, 400 for strict field validation), under the tenant's name. When the
 * real kind is not served upstream (API Priority and Fairness off: 404), the object is taken as it is.
 */
export async function validatedByRealKind(
  view: Json,
  row: KindRow,
  version: string,
  fieldValidation: string | null,
  pool: UpstreamPool,
  tenant: TenantId,
): Promise<Json> {
  const metadata = isObject(view.metadata) ? view.metadata : {};
  const name = typeof metadata.name === 'string' && metadata.name !== '' ? metadata.name : String(metadata.generateName ?? '');
  const fields = VALIDATED_FIELDS[row.kind] ?? SPEC;
  const probe: Json = { apiVersion: view.apiVersion, kind: view.kind, metadata: { generateName: PROBE_NAME } };
  for (const field of fields) if (field in view) probe[field] = view[field];
  const query = `dryRun=All${fieldValidation === null ? '' : `&fieldValidation=${encodeURIComponent(fieldValidation)}`}`;
  const answer = await upstreamJson(pool, 'POST', `/apis/${row.group}/${encodeURIComponent(version)}/${row.resource}?${query}`, probe);
  if (answer.status === 201 || answer.status === 200) {
    if (!isObject(answer.body)) return view;
    const defaulted = { ...view };
    for (const field of fields) if (field in answer.body) defaulted[field] = answer.body[field];
    return defaulted;
  }
  if (answer.status === 404) return view;
  const probeName = isObject(answer.body) && isObject(answer.body.details) && typeof answer.body.details.name === 'string' ? answer.body.details.name : '';
  // (The tenant's name as it stands inside a JSON string.)
  const body = probeName.startsWith(PROBE_NAME)
    ? JSON.parse(JSON.stringify(answer.body).replaceAll(probeName, JSON.stringify(name).slice(1, -1)))
    : answer.body;
  throw tenantStatusError(answer.status, body, tenant);
}

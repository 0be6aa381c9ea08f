// A piscina task: one whole upstream document converted to a tenant's view off the event loop. Only documents
// that take tens of milliseconds to convert come here (lib/request/offload.ts says which, and why).
import { openapiV2ToTenant } from '../lib/convert/openapi.ts';
import { openapiV2ToProtobuf } from '../lib/convert/protobuf/openapi-v2.ts';
import type { TenantId } from '../lib/convert/prefix.ts';
import { StatusError } from '../lib/errors/status-error.ts';

export interface ConvertDocumentTask {
  kind: 'openapi-v2';
  tenant: TenantId;
  /** The upstream's JSON document. */
  body: Uint8Array;
  /** Answer as gnostic's protobuf Document (what kubectl asks for) rather than JSON. */
  protobuf: boolean;
}

/** The tenant's view as JSON or protobuf bytes, or the Status error to answer (errors lose their class between threads). */
export type ConvertDocumentResult = { view: Uint8Array } | { error: { code: number; reason: string; message: string } };

export default function convertDocument(task: ConvertDocumentTask): ConvertDocumentResult {
  try {
    const text = Buffer.from(task.body.buffer, task.body.byteOffset, task.body.byteLength).toString('utf8');
    const view = openapiV2ToTenant(JSON.parse(text), task.tenant);
    return { view: task.protobuf ? openapiV2ToProtobuf(view, task.body.byteLength) : Buffer.from(JSON.stringify(view)) };
  } catch (error) {
    if (error instanceof StatusError) return { error: { code: error.code, reason: error.reason, message: error.message } };
    return { error: { code: 502, reason: 'InternalError', message: 'the upstream OpenAPI v2 document is not JSON' } };
  }
}

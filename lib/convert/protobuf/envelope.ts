// The Kubernetes protobuf media type and envelope: `k8s\0` + runtime.Unknown { typeMeta = 1 { apiVersion = 1, kind = 2 },
// raw = 2, contentEncoding = 3, contentType = 4 }. Never reads the object inside raw.
import { badRequest } from '../../errors/status-error.ts';
import { EMPTY, MessageEdit, type Field } from './message-edit.ts';
import { MAGIC, malformed, unsupported } from './wire.ts';

export const PROTOBUF_MEDIA_TYPE = 'application/vnd.kubernetes.protobuf';

/** True for a Content-Type of Kubernetes protobuf (parameters aside). */
export function isProtobuf(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const semicolon = contentType.indexOf(';');
  return (semicolon < 0 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase() === PROTOBUF_MEDIA_TYPE;
}

export interface Envelope {
  readonly edit: MessageEdit;
  readonly apiVersion: string;
  readonly kind: string;
  readonly rawField: Field | undefined;
}

export function parseEnvelope(body: Buffer): Envelope {
  if (body.length < MAGIC.length || !body.subarray(0, MAGIC.length).equals(MAGIC)) {
    throw badRequest('the request body is not Kubernetes protobuf: it does not start with "k8s\\x00"');
  }
  if (body.length === MAGIC.length) throw malformed('envelope', 'the body is empty');
  const edit = new MessageEdit(body.subarray(MAGIC.length), 'envelope');
  const typeMetaField = edit.single(1, 'typeMeta');
  const typeMeta = new MessageEdit(typeMetaField === undefined ? EMPTY : edit.payload(typeMetaField), 'typeMeta');
  const rawField = edit.single(2, 'raw');
  if (edit.stringOf(3, 'contentEncoding') !== '') throw unsupported('a body with a contentEncoding');
  edit.single(4, 'contentType');
  return { edit, apiVersion: typeMeta.stringOf(1, 'apiVersion'), kind: typeMeta.stringOf(2, 'kind'), rawField };
}

/** The envelope's apiVersion and kind, and the object's own bytes (empty when absent), for decoders of whole objects. */
export function protobufEnvelope(body: Buffer): { apiVersion: string; kind: string; raw: Buffer } {
  const { edit, apiVersion, kind, rawField } = parseEnvelope(body);
  return { apiVersion, kind, raw: rawField === undefined ? EMPTY : edit.payload(rawField) };
}

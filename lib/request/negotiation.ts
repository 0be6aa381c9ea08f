// What a tenant's request asks to get back (JSON, Tables, objects and Status in protobuf, PartialObjectMetadata in
// protobuf, OpenAPI v2 in protobuf) and what tenantgate asks the upstream for instead: only forms its converters read.
import { isAggregatedDiscoveryJson } from '../convert/discovery.ts';
import { isWholeObjectSubresource, type KindRow } from '../convert/kinds.ts';
import { prefersOpenApiV2Protobuf } from '../convert/openapi-v2-protobuf.ts';
import { preferredPartialMetadataProtobuf } from '../convert/partial-metadata-protobuf.ts';
import { PROTOBUF_MEDIA_TYPE } from '../convert/protobuf.ts';
import { protobufResponseSupported } from '../convert/protobuf-response.ts';
import { notAcceptable } from '../errors/status-error.ts';
import type { PartialMetadataForm, RequestContext } from './context.ts';

/**
 * Accept for the upstream when the answer is converted from JSON (protobufAnswerOf decides when it is not), keeping
 * Table negotiation; for discovery and OpenAPI, plain JSON or aggregated discovery (v2) as JSON, the only forms their
 * converters read.
 */
export function jsonAccept(accept: string | undefined, discovery: boolean): string {
  if (accept === undefined) return 'application/json';
  const isPlainJson = (part: string) => part.split(';')[0]!.trim() === 'application/json' && !/;\s*(g|v|as)\s*=/.test(part);
  const isJson = discovery
    ? (part: string) => isAggregatedDiscoveryJson(part) || isPlainJson(part)
    : (part: string) => part.trim().startsWith('application/json');
  const kept = accept.split(',').filter(isJson);
  return kept.length === 0 ? 'application/json' : kept.join(',');
}

export function isOpenApiV2(path: string): boolean {
  return path === '/openapi/v2' || path === '/openapi/v2/';
}

/** kubectl get asks for Tables. */
export function asksForTable(ctx: RequestContext): boolean {
  const accept = ctx.headers.accept;
  return accept !== undefined && accept.includes('as=Table');
}

/**
 * Metadata clients prefer PartialObjectMetadata(List) as protobuf, and client-go decodes a list's items differently
 * from JSON (without kind and apiVersion): the tenant's view, read as JSON, is answered in protobuf. Null: not asked.
 */
export function partialMetadataProtobufOf(ctx: RequestContext): PartialMetadataForm | null {
  // (Asked by the upstream request's stage and again by the answer's: the Accept header is read once.)
  if (ctx.partialMetadata === undefined) {
    const verb = ctx.info?.verb;
    ctx.partialMetadata = ctx.row !== null && (verb === 'list' || verb === 'get') ? preferredPartialMetadataProtobuf(ctx.headers.accept) : null;
  }
  return ctx.partialMetadata;
}

/** The apiVersion a resource request names (`v1`, `apps/v1`): the version of the objects asked for. */
export function requestApiVersion(info: { apiGroup: string; apiVersion: string }): string {
  return info.apiGroup === '' ? info.apiVersion : `${info.apiGroup}/${info.apiVersion}`;
}

/**
 * The first media type of `accept`, lower case and without parameters; null when that type carries `as=` (a Table or
 * metadata form, which is not the plain object of that encoding).
 */
export function firstPlainMediaType(accept: string): string | null {
  const comma = accept.indexOf(',');
  const first = (comma === -1 ? accept : accept.slice(0, comma)).trim().toLowerCase();
  if (first.includes('as=')) return null;
  const semicolon = first.indexOf(';');
  return (semicolon === -1 ? first : first.slice(0, semicolon)).trim();
}

/** Whether the first media type of `accept` is Kubernetes protobuf (not a Table or metadata form of it). */
export function prefersProtobuf(accept: string | undefined): boolean {
  return accept !== undefined && firstPlainMediaType(accept) === PROTOBUF_MEDIA_TYPE;
}

/** Whether every media type of `accept` is Kubernetes protobuf: a client that reads nothing else (no JSON fallback). */
export function acceptsOnlyProtobuf(accept: string | undefined): boolean {
  if (accept === undefined || accept.trim() === '') return false;
  return accept.split(',').every((part) => {
    const [type, ...parameters] = part.toLowerCase().split(';');
    return type!.trim() === PROTOBUF_MEDIA_TYPE && !parameters.some((parameter) => parameter.trim().startsWith('as='));
  });
}

/**
 * A custom resource asked for in protobuf only: the apiserver serves custom resources as JSON or YAML, so it answers
 * 406 (tenantgate never asks it: it would ask for JSON and answer in an encoding the client refused). So are the kinds
 * tenantgate keeps upstream as custom resources (the table's upstreamGroup): it has no protobuf of them to answer.
 */
export function refuseProtobufOnlyCustomResource(ctx: RequestContext): void {
  if ((ctx.row?.rule === 'custom-resource' || ctx.row?.upstreamGroup !== undefined) && acceptsOnlyProtobuf(ctx.headers.accept)) {
    throw notAcceptable(
      `${ctx.row.resource}.${ctx.info?.apiGroup ?? ''} is a custom resource, served as application/json or application/yaml only, not as ${PROTOBUF_MEDIA_TYPE}`,
    );
  }
}

const READ_VERBS: ReadonlySet<string> = new Set(['get', 'list', 'watch']);
const WRITE_VERBS: ReadonlySet<string> = new Set(['create', 'update', 'patch', 'delete']);

/**
 * Whether the answer to `verb` on `subresource` is the kind's own object (or a Status), as the apiserver answers it:
 * reads and writes of the object, and of its subresources that carry the whole object (status, finalize...). A
 * scale (autoscaling/v1 Scale), a deletecollection's list, a CRD's write (its write-through reads the JSON object
 * before the answer goes out) are answered in JSON.
 */
function answersWithTheObject(verb: string, subresource: string, row: KindRow): boolean {
  if (READ_VERBS.has(verb)) return subresource === '' || (verb === 'get' && isWholeObjectSubresource(row, subresource));
  return WRITE_VERBS.has(verb) && row.rule !== 'crd' && isWholeObjectSubresource(row, subresource);
}

/**
 * A tenant's request whose answer is an object (or a list, a watch, a Status) of a kind tenantgate converts in
 * protobuf, from a client that prefers protobuf (client-go's controllers): the upstream is asked for protobuf and the
 * answer converted on the wire, and what tenantgate answers itself (a Status, an empty list) is written in protobuf.
 */
export function protobufAnswerOf(ctx: RequestContext): boolean {
  if (ctx.protobufAnswer === undefined) {
    const info = ctx.info;
    const row = ctx.row;
    ctx.protobufAnswer =
      row !== null &&
      info !== null &&
      answersWithTheObject(info.verb, info.subresource, row) &&
      prefersProtobuf(ctx.headers.accept) &&
      !asksForTable(ctx) &&
      partialMetadataProtobufOf(ctx) === null &&
      protobufResponseSupported(row, requestApiVersion(info));
  }
  return ctx.protobufAnswer;
}

/** kubectl reads OpenAPI v2 as protobuf only; the upstream is still asked for JSON (its protobuf holds every tenant's schemas). */
export function openApiV2AsProtobuf(ctx: RequestContext): boolean {
  return ctx.row === null && ctx.info !== null && isOpenApiV2(ctx.info.path) && prefersOpenApiV2Protobuf(ctx.headers.accept);
}

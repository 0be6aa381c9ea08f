// What a tenant's request asks to get back (JSON, Tables, objects and Status in protobuf, PartialObjectMetadata in
// protobuf, OpenAPI v2 in protobuf) and what tenantgate asks the upstream for instead: only forms its converters read.
import { isAggregatedDiscoveryJson } from '../convert/discovery.ts';
import { isWholeObjectSubresource, type KindRow } from '../convert/kinds.ts';
import { prefersOpenApiV2Protobuf } from '../convert/protobuf/openapi-v2.ts';
import { preferredPartialMetadataProtobuf } from '../convert/protobuf/partial-metadata.ts';
import { protobufResponseSupported } from '../convert/protobuf/to-tenant.ts';
import { notAcceptable, unsupportedMediaType } from '../errors/status-error.ts';
import { isConverted, isKindRequest, type KindRequest, type PartialMetadataForm, type RequestContext } from './context.ts';
import { mediaTypeOf } from './media-ranges.ts';
import { acceptsAWatchForm } from './yaml-answer.ts';
import { PROTOBUF_MEDIA_TYPE } from '../convert/protobuf/envelope.ts';

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
  const first = comma === -1 ? accept : accept.slice(0, comma);
  return first.toLowerCase().includes('as=') ? null : mediaTypeOf(first);
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

/**
 * What the apiserver answers objects in with CBOR serving off (as tenantgate keeps it: it converts no other form,
 * whatever the upstream serves). The any-type range takes any of them; `application/` with a wildcard none (as in
 * the apiserver's negotiation).
 */
const ANSWERED_MEDIA_TYPES: ReadonlySet<string> = new Set(['application/json', 'application/yaml', PROTOBUF_MEDIA_TYPE, '*/*']);
const ANSWERED_LIST = 'application/json, application/yaml, application/vnd.kubernetes.protobuf';
const STREAMED_LIST = 'application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch';

/** Request bodies the apiserver reads, for a create or update, and for a patch (custom resources have no strategic merge). */
const BODY_MEDIA_TYPES: ReadonlySet<string> = new Set(['application/json', 'application/yaml', PROTOBUF_MEDIA_TYPE]);
/** The patches the apiserver reads of a built-in kind (tenantgate's Tenant API reads the same). */
export const PATCH_MEDIA_TYPES: readonly string[] = [
  'application/json-patch+json',
  'application/merge-patch+json',
  'application/strategic-merge-patch+json',
  'application/apply-patch+yaml',
];
const PATCH_MEDIA_TYPE_SET: ReadonlySet<string> = new Set(PATCH_MEDIA_TYPES);
const CUSTOM_PATCH_MEDIA_TYPES = 'application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml';
/**
 * Subresources whose bodies and answers are not objects (streams, or whatever a proxied service reads and answers),
 * never judged here; a log's Accept neither (the apiserver's own answers to it do not follow one rule).
 */
const STREAM_SUBRESOURCES: ReadonlySet<string> = new Set(['exec', 'attach', 'portforward', 'proxy', 'log']);

/** Whether `accept` (absent or empty: anything) names one of `types` (by default, those tenantgate answers objects in). */
export function acceptsAnAnsweredType(accept: string | undefined, types: ReadonlySet<string> = ANSWERED_MEDIA_TYPES): boolean {
  if (accept === undefined || accept.trim() === '') return true;
  return accept.split(',').some((part) => types.has(mediaTypeOf(part)));
}

/** A tenant's own custom resource (not a kind tenantgate keeps upstream as one, which tenants see as built-in). */
function isCustomResource(ctx: KindRequest): boolean {
  return ctx.row.rule === 'custom-resource' && ctx.row.upstreamGroup === undefined;
}

/**
 * A client that accepts none of them (CBOR alone, as client-go's ClientsPreferCBOR would without its JSON fallback;
 * `application/cbor-seq` watches; text/html) gets the apiserver's 406, in its words for the kind of request.
 */
function refuseUnanswerableAccept(ctx: KindRequest): void {
  if (STREAM_SUBRESOURCES.has(ctx.info.subresource) || acceptsAnAnsweredType(ctx.headers.accept)) return;
  if (isCustomResource(ctx)) throw notAcceptable(`only the following media types are accepted: ${ANSWERED_LIST}`);
  const collection = ctx.info.verb === 'list' || ctx.info.verb === 'watch';
  throw notAcceptable(`406: Not Acceptable\n\nAvailable representations: ${ANSWERED_LIST}${collection ? `, ${STREAMED_LIST}` : ''}`, {});
}

/** `/version` is answered in JSON only. */
const VERSION_MEDIA_TYPES: ReadonlySet<string> = new Set(['application/json', '*/*']);

/**
 * Discovery for a client that accepts none of its forms, as the apiserver words it per document: `/apis` and a
 * group's document list the types they take, the others (`/api`, a version's resources, `/version`) say
 * "406: Not Acceptable". OpenAPI answers whatever is asked, upstream too: not judged.
 */
function refuseUnanswerableDiscovery(path: string, accept: string | undefined): void {
  const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  if (trimmed === '/version') {
    if (!acceptsAnAnsweredType(accept, VERSION_MEDIA_TYPES)) throw notAcceptable('406: Not Acceptable\n\nAvailable representations: application/json', {});
    return;
  }
  const segments = trimmed.split('/').length - 1;
  const isApis = trimmed === '/apis' || trimmed.startsWith('/apis/');
  if ((!isApis && trimmed !== '/api' && !trimmed.startsWith('/api/')) || acceptsAnAnsweredType(accept)) return;
  if (isApis && segments <= 2) throw notAcceptable(`only the following media types are accepted: ${ANSWERED_LIST}`);
  throw notAcceptable(`406: Not Acceptable\n\nAvailable representations: ${ANSWERED_LIST}`, {});
}

/**
 * A create, update or patch whose Content-Type the apiserver does not read (CBOR, `application/apply-patch+cbor`,
 * text/plain) gets its 415, which client-go takes to send JSON instead; never a 400 from a parse of bytes tenantgate
 * was never to read. (No Content-Type is JSON, as the apiserver takes it.)
 */
function refuseUnreadableBody(ctx: KindRequest): void {
  const verb = ctx.info.verb;
  const contentType = ctx.headers['content-type'];
  if (contentType === undefined || STREAM_SUBRESOURCES.has(ctx.info.subresource)) return;
  const mediaType = mediaTypeOf(contentType);
  if (verb === 'patch') {
    if (isCustomResource(ctx)) {
      if (mediaType !== 'application/strategic-merge-patch+json' && PATCH_MEDIA_TYPE_SET.has(mediaType)) return;
      throw unsupportedMediaType(`the body of the request was in an unknown format - accepted media types include: ${CUSTOM_PATCH_MEDIA_TYPES}`);
    }
    if (!PATCH_MEDIA_TYPE_SET.has(mediaType)) throw unsupportedMediaType('415: Unsupported Media Type', {});
    return;
  }
  // (A delete's DeleteOptions in CBOR the apiserver reads even with CBOR serving off; tenantgate reads no CBOR, and
  // its 415 makes client-go send them again in JSON.)
  const deletes = verb === 'delete' || verb === 'deletecollection';
  if ((verb === 'create' || verb === 'update' || (deletes && !ctx.bodyless)) && !BODY_MEDIA_TYPES.has(mediaType)) {
    throw unsupportedMediaType(`the body of the request was in an unknown format - accepted media types include: ${ANSWERED_LIST}`);
  }
}

/**
 * The stage "negotiate media types" (after "admit": an unknown kind is 404 first, as upstream): what the client
 * accepts, then what its body is, judged as the apiserver judges them, so the upstream is asked only for forms
 * tenantgate converts and sent only bodies it has read.
 */
export function negotiateMediaTypes(ctx: RequestContext): boolean {
  if (isConverted(ctx) && !ctx.info.isResourceRequest) {
    refuseUnanswerableDiscovery(ctx.info.path, ctx.headers.accept);
    return false;
  }
  if (!isKindRequest(ctx)) return false;
  refuseUnanswerableAccept(ctx);
  // YAML has no streamed form: a watch for a client that takes nothing else gets the apiserver's 406.
  if (ctx.info.verb === 'watch' && !acceptsAWatchForm(ctx.headers.accept)) throw notAcceptable(`only the following media types are accepted: ${STREAMED_LIST}`);
  refuseProtobufOnlyCustomResource(ctx);
  refuseUnreadableBody(ctx);
  return false;
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

// One request's I/O and the state it carries through the pipeline: one object per request, the same for every protocol.
// HTTP/2 requests are served from raw streams (headers in, respond() out); HTTP/1.1 through the thin adapter below.
import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { ServerHttp2Stream } from 'node:http2';
import type { Readable, Writable, Duplex } from 'node:stream';
import type { ClientHttp2Stream } from 'node:http2';
import type { TLSSocket } from 'node:tls';
import { internalError } from '../errors/status-error.ts';
import type { Identity } from '../auth/identity.ts';
import type { KindRow } from '../convert/kinds.ts';
import type { TenantId } from '../convert/prefix.ts';
import { asksToWatch, type RequestInfo } from '../convert/request-info.ts';
import type { Seat } from '../flowcontrol/tenant-flow.ts';
import type { RewriteCounters } from '../metrics/metrics.ts';
import type { RowObjects } from '../convert/table.ts';
import type { OpenApiV2Revalidation } from './openapi-v2-cache.ts';
import { choosesYaml, isJsonAnswer, yamlHead, YamlOut } from './yaml-answer.ts';
import { acceptsGzip, compressWhole, GZIP_THRESHOLD_BYTES, GzipOut } from './compressed-answer.ts';
import { jsonTextToYaml } from '../convert/json-yaml.ts';
import { splitTenantPath } from './tenant-path.ts';

export type PartialMetadataForm = 'PartialObjectMetadata' | 'PartialObjectMetadataList';

/** What an HTTP/1.1 Upgrade request brought: its raw socket and the bytes read past its headers. */
export interface UpgradeRequest {
  socket: Duplex;
  head: Buffer;
}

/** A whole answer's length, unless its headers already say it. */
export function setContentLength(headers: OutgoingHttpHeaders, body: string | Buffer): void {
  headers['content-length'] ??= typeof body === 'string' ? Buffer.byteLength(body) : body.length;
}

/** A query that is not there: shared, never written to. */
const NO_QUERY = new URLSearchParams();
const NO_HEADERS: IncomingHttpHeaders = Object.freeze({}) as IncomingHttpHeaders;
const NO_PARTS: string[] = [];
/** Subresources answered as streams (or as a proxied service answers): never held back to be compressed. */
const STREAMED_SUBRESOURCES: ReadonlySet<string> = new Set(['log', 'exec', 'attach', 'portforward', 'proxy']);

export abstract class RequestContext {
  // ---- the request, as it arrived
  readonly method: string;
  /** The request target (path and query) as sent, below a tenant's path if any; the pipeline's first stage validates it. */
  readonly path: string;
  /** The tenant a target sent under `/tenants/<id>` named (tenant-path.ts), as sent; null for the bare address. */
  readonly pathTenant: string | null;
  /** (Let go by releaseRequest once a long watch no longer needs them.) */
  headers: IncomingHttpHeaders;
  /** The TLS connection (the client certificate). */
  readonly socket: TLSSocket;
  /** An HTTP/1.1 request that asked for an Upgrade; it passes every stage like any request. */
  readonly upgrade: UpgradeRequest | null;

  // ---- what the stages learn
  /** Who the request runs as: the caller, or whom its Impersonate-* headers name once the caller may impersonate them. */
  identity: Identity | null = null;
  /** The authenticated caller when the request impersonates someone (for the request log); null otherwise. */
  caller: Identity | null = null;
  /** True once the tenant is resolved and its request is to be converted (false: administrators and --passthrough). */
  converts = false;
  /** A tenant's request as the apiserver would classify it (null for requests that pass through). */
  info: RequestInfo | null = null;
  /** The kind it names, from the table of kinds; null for non-resource requests (discovery). */
  row: KindRow | null = null;
  /** performance.now() when the request arrived (request duration, the request log line). */
  startedAt = 0;
  /**
   * Made with tenantgate's own identity instead of the tenant's: a read at the cluster scope, which upstream no tenant
   * identity may make, once the tenant's own RBAC allowed it (still narrowed to the tenant); or a discovery document,
   * converted to the tenant's view.
   */
  asTenantgate = false;
  /**
   * A write at the cluster scope that the tenant's own RBAC allowed a user other than its admin: made with the
   * cluster-scope group, which upstream RBAC grants (lib/request/cluster-scope-writes.ts).
   */
  grantedClusterScope = false;
  /** With it, for a ClusterRole or ClusterRoleBinding write: RBAC's escalation check, once the body is converted. */
  confirmsNoEscalation = false;
  /** The flow-control seat the request holds (tenants only), given back when the response closes. */
  seat: Seat | null = null;
  /** The upstream request's target and headers, once built; its body (null: none, or streamed from the client). */
  upstreamTarget = '';
  upstreamMethod = '';
  upstreamHeaders: OutgoingHttpHeaders | null = null;
  upstreamBody: Buffer | string | null = null;
  /** The upstream stream, while open: a client that goes away cancels it. */
  upstream: ClientHttp2Stream | null = null;
  /**
   * performance.now() when the upstream request went out, and when its head arrived (0 before); the upstream's status
   * once its head arrived (0 before).
   */
  upstreamSentAt = 0;
  upstreamAnsweredAt = 0;
  upstreamStatus = 0;
  /** For a Table: the row objects the client asked for (the upstream is asked for what the kind's rule must see). */
  rowObjects: RowObjects = 'Object';
  /** The PartialObjectMetadata form the client asked for in protobuf (null: none); undefined until classified and read. */
  partialMetadata: PartialMetadataForm | null | undefined = undefined;
  /** The answer is asked for and converted in protobuf (negotiation.ts, protobufAnswerOf); undefined until decided. */
  protobufAnswer: boolean | undefined = undefined;
  /** OpenAPI v2: the tenant's view kept under the upstream's ETag, revalidated by tenantgate's own conditional request. */
  openapiV2: OpenApiV2Revalidation | null = null;
  /** A watch served from the watch cache: told when the exchange closes, so it leaves the cache; end() ends it cleanly (shutdown). */
  cacheWatcher: { closed(): void; end(): void } | null = null;
  /** The list or watch rewriter the response streams through, if any (bytes sent, for the request log line). */
  rewrite: RewriteCounters | null = null;

  #query: URLSearchParams | null = null;
  #answersInYaml: boolean | undefined = undefined;
  /** The YAML body writer, once asked for; false once a head said the answer is not JSON. */
  #yamlOut: YamlOut | null = null;
  #yamlConverts = true;
  #compressesAnswer: boolean | undefined = undefined;
  #gzipOut: GzipOut | null = null;
  /** A head waiting for the body writer to decide on compression, and how to send it then. */
  #heldHead: { headers: OutgoingHttpHeaders; send: () => void } | null = null;

  constructor(method: string, path: string, headers: IncomingHttpHeaders, socket: TLSSocket, upgrade: UpgradeRequest | null) {
    this.method = method;
    const underTenant = splitTenantPath(path);
    this.path = underTenant === null ? path : underTenant.target;
    this.pathTenant = underTenant === null ? null : underTenant.tenant;
    this.headers = headers;
    this.socket = socket;
    this.upgrade = upgrade;
  }

  /** The path without its query. */
  get pathname(): string {
    const queryStart = this.path.indexOf('?');
    return queryStart === -1 ? this.path : this.path.slice(0, queryStart);
  }

  /** The query, parsed once, on first use; a request without one shares an empty one (never write to it). */
  get query(): URLSearchParams {
    if (this.#query === null) {
      const queryStart = this.path.indexOf('?');
      this.#query = queryStart === -1 ? NO_QUERY : new URLSearchParams(this.path.slice(queryStart + 1));
    }
    return this.#query;
  }

  /**
   * The client chose YAML (yaml-answer.ts): JSON answers go out as YAML, as the apiserver's would. Never a watch (no
   * YAML form) nor an upgrade (its answer is a stream).
   */
  get answersInYaml(): boolean {
    if (this.#answersInYaml === undefined) {
      const isWatch = this.pathname.includes('/watch/') || asksToWatch(this.query);
      this.#answersInYaml = this.upgrade === null && !isWatch && choosesYaml(this.headers.accept);
    }
    return this.#answersInYaml;
  }

  /**
   * For a client that takes gzip (compressed-answer.ts): a tenant's read (a get or a list, discovery, OpenAPI; never a
   * watch nor a stream such as a log) answered compressed past the apiserver's threshold. Decided once, when the
   * request is classified.
   */
  get compressesAnswer(): boolean {
    if (this.#compressesAnswer === undefined) {
      const info = this.info;
      this.#compressesAnswer =
        this.converts &&
        info !== null &&
        this.upgrade === null &&
        this.method === 'GET' &&
        (!info.isResourceRequest || ((info.verb === 'get' || info.verb === 'list') && !STREAMED_SUBRESOURCES.has(info.subresource))) &&
        acceptsGzip(this.headers['accept-encoding']);
    }
    return this.#compressesAnswer;
  }

  /** The body writer over `to`: `to` itself, or the gzip and YAML writers over it, as the client chose. */
  protected bodyTo(to: Writable): Writable {
    let out = to;
    if (this.compressesAnswer) out = this.#gzipOut ??= new GzipOut(to, (compressed, length) => this.#releaseHead(compressed, length));
    if (!this.answersInYaml) return out;
    if (this.#yamlOut === null) {
      this.#yamlOut = new YamlOut(out);
      if (!this.#yamlConverts) this.#yamlOut.passThrough();
    }
    return this.#yamlOut;
  }

  /** A head kept back while the body writer decides on compression (it counts as sent: nothing else may answer). */
  protected get headHeld(): boolean {
    return this.#heldHead !== null;
  }

  /**
   * Whether the head of a streamed answer waits for the gzip writer to decide (which sends it then, with its
   * Content-Encoding or its length); any answer but a 200 goes at once, and its body as written.
   */
  protected holdsHead(status: number, headers: OutgoingHttpHeaders, send: () => void): boolean {
    if (!this.compressesAnswer) return false;
    // (Asking for `out` makes the writers, the gzip one under any YAML one.)
    const gzipOut = this.#gzipOut ?? (this.out, this.#gzipOut!);
    if (status !== 200 || headers['content-encoding'] !== undefined) {
      gzipOut.passThrough();
      return false;
    }
    this.#heldHead = { headers, send };
    return true;
  }

  #releaseHead(compressed: boolean, length: number): void {
    const held = this.#heldHead;
    if (held === null) return;
    if (compressed) {
      held.headers['content-encoding'] = 'gzip';
      delete held.headers['content-length'];
    } else held.headers['content-length'] = length;
    held.send();
    this.#heldHead = null;
  }

  /**
   * A whole answer, compressed when the client takes gzip and it is past the threshold (then sent a moment later,
   * the head held meanwhile); `send` writes it.
   */
  protected sendWhole(
    status: number,
    headers: OutgoingHttpHeaders,
    body: string | Buffer | undefined,
    send: (body: string | Buffer | undefined) => void,
  ): void {
    if (!this.compressesAnswer || status !== 200 || body === undefined || body.length < GZIP_THRESHOLD_BYTES || headers['content-encoding'] !== undefined) {
      send(body);
      return;
    }
    this.#heldHead = { headers, send: () => {} };
    compressWhole(Buffer.from(body), (bytes, compressed) => {
      this.#heldHead = null;
      if (compressed) headers['content-encoding'] = 'gzip';
      delete headers['content-length'];
      send(bytes);
    });
  }

  /** A head about to go out: for a client answered in YAML, a JSON answer's says YAML; any other's body passes as it is. */
  protected headFor(headers: OutgoingHttpHeaders): void {
    if (!this.answersInYaml || yamlHead(headers)) return;
    this.#yamlConverts = false;
    this.#yamlOut?.passThrough();
  }

  /** A whole answer's body, as YAML when the client is answered in YAML and it is JSON. */
  protected wholeBody(headers: OutgoingHttpHeaders, body: string | Buffer | undefined): string | Buffer | undefined {
    if (!this.answersInYaml || body === undefined || body.length === 0 || !isJsonAnswer(headers)) return body;
    const yaml = jsonTextToYaml(body.toString());
    yamlHead(headers);
    return yaml;
  }

  /**
   * A watch served for minutes from tenantgate's own cache has nothing left to read of its request: its headers and
   * query are let go, and of its classification only what the request's log line and metrics need is kept (an idle
   * watcher must cost a few kilobytes, not the request it came as).
   */
  releaseRequest(): void {
    this.headers = NO_HEADERS;
    this.#query = NO_QUERY;
    const info = this.info;
    if (info !== null) {
      this.info = {
        isResourceRequest: true,
        path: '',
        verb: info.verb,
        apiPrefix: '',
        apiGroup: '',
        apiVersion: '',
        namespace: info.namespace,
        resource: info.resource,
        subresource: '',
        name: '',
        parts: NO_PARTS,
      };
    }
  }

  /** Request headers as sent, name and value alternating, repeated ones kept apart (Impersonate-Group). */
  abstract readonly rawHeaders: readonly string[];
  /** The request body. */
  abstract readonly body: Readable;
  /** True when the request carries no body. */
  abstract readonly bodyless: boolean;
  /** The response body; also where 'close' tells that the exchange is over, however it ended. */
  abstract readonly out: Writable;
  abstract readonly headersSent: boolean;
  /** The status sent; 0 before the head went out. */
  abstract readonly statusCode: number;
  /** Sends the head of the response; its body follows on `out`. `headers` is the caller's to give away. */
  abstract respond(status: number, headers: OutgoingHttpHeaders): void;

  /** A whole answer: head and body at once (a head-only one ends with its head). `headers` is the caller's to give away. */
  abstract answer(status: number, headers: OutgoingHttpHeaders, body?: string | Buffer): void;
}

/** Who the request runs as: set by "authenticate", which answers 401 where it cannot, so every later stage has it. */
export function identityOf(ctx: RequestContext): Identity {
  const identity = ctx.identity;
  if (identity === null) throw internalError('a stage after "authenticate" ran without an identity');
  return identity;
}

/** A tenant's identity, its tenant found by "resolve tenant" (impersonation keeps it: a tenant acts within itself). */
export type TenantIdentity = Identity & { readonly tenant: TenantId };

/**
 * A tenant's request that is converted, as "resolve tenant" and "classify" leave it: whose it is and what it asks.
 * The stages after them take this type (narrowed once by isConverted), so none asserts what an earlier stage set.
 */
export type ConvertedRequest = RequestContext & { readonly converts: true; readonly identity: TenantIdentity; readonly info: RequestInfo };

/** A converted request for objects of a kind in the table of kinds ("admit" refuses any other; discovery has none). */
export type KindRequest = ConvertedRequest & { readonly row: KindRow };

export function isConverted(ctx: RequestContext): ctx is ConvertedRequest {
  return ctx.converts && ctx.info !== null;
}

export function isKindRequest(ctx: RequestContext): ctx is KindRequest {
  return isConverted(ctx) && ctx.row !== null;
}

/**
 * The upstream request's headers, set by "prepare upstream request". Never read without them: they carry the
 * impersonation, and a request sent without it would be tenantgate's own.
 */
export function upstreamHeadersOf(ctx: RequestContext): OutgoingHttpHeaders {
  const headers = ctx.upstreamHeaders;
  if (headers === null) throw internalError('a stage after "prepare upstream request" ran before the upstream request was prepared');
  return headers;
}

/** An HTTP/2 request served from its stream: no compatibility objects. */
export class Http2RequestContext extends RequestContext {
  readonly stream: ServerHttp2Stream;
  rawHeaders: readonly string[];

  constructor(stream: ServerHttp2Stream, headers: IncomingHttpHeaders, rawHeaders: readonly string[]) {
    super(String(headers[':method'] ?? 'GET'), String(headers[':path'] ?? ''), headers, stream.session!.socket as TLSSocket, null);
    this.stream = stream;
    this.rawHeaders = rawHeaders;
  }

  override releaseRequest(): void {
    super.releaseRequest();
    this.rawHeaders = NO_PARTS;
  }

  get body(): Readable {
    return this.stream;
  }
  get bodyless(): boolean {
    return this.stream.endAfterHeaders;
  }
  get out(): Writable {
    return this.bodyTo(this.stream);
  }
  get headersSent(): boolean {
    return this.stream.headersSent || this.headHeld;
  }
  get statusCode(): number {
    return Number(this.stream.sentHeaders?.[':status'] ?? 0);
  }
  respond(status: number, headers: OutgoingHttpHeaders): void {
    const stream = this.stream;
    if (stream.destroyed || this.headersSent) return;
    headers[':status'] = status;
    this.headFor(headers);
    // (For 204, 205 and 304 node ends the stream with the head: those carry no body.)
    if (!this.holdsHead(status, headers, () => stream.destroyed || stream.respond(headers))) stream.respond(headers);
  }
  answer(status: number, headers: OutgoingHttpHeaders, json?: string | Buffer): void {
    const stream = this.stream;
    if (stream.destroyed || this.headersSent) return;
    headers[':status'] = status;
    this.sendWhole(status, headers, this.wholeBody(headers, json), (body) => {
      if (stream.destroyed) return;
      if (body === undefined || body.length === 0 || status === 204 || status === 205 || status === 304) {
        // Head only, in one frame that ends the stream.
        stream.respond(headers, { endStream: true });
        return;
      }
      setContentLength(headers, body);
      stream.respond(headers);
      stream.end(body);
    });
  }
}

/** The thin adapter for HTTP/1.1 (and Upgrade requests handed over as a socket). */
export class Http1RequestContext extends RequestContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;

  constructor(req: IncomingMessage, res: ServerResponse, upgrade: UpgradeRequest | null = null) {
    super(req.method ?? 'GET', req.url ?? '', req.headers, req.socket as TLSSocket, upgrade);
    this.req = req;
    this.res = res;
  }

  get rawHeaders(): readonly string[] {
    return this.req.rawHeaders;
  }
  get body(): Readable {
    return this.req;
  }
  get bodyless(): boolean {
    const length = this.req.headers['content-length'];
    return this.req.headers['transfer-encoding'] === undefined && (length === undefined || length === '0');
  }
  get out(): Writable {
    return this.bodyTo(this.res);
  }
  get headersSent(): boolean {
    return this.res.headersSent || this.headHeld;
  }
  get statusCode(): number {
    // (An upgrade's 101 is written on the socket as the upstream sent it, past the response object.)
    return this.res.headersSent || (this.upgrade !== null && this.res.statusCode === 101) ? this.res.statusCode : 0;
  }
  respond(status: number, headers: OutgoingHttpHeaders): void {
    const res = this.res;
    if (this.headersSent || res.destroyed) return;
    this.headFor(headers);
    const send = () => {
      if (res.destroyed) return;
      res.writeHead(status, headers);
      // Watches must reach the client event by event: the head goes out now, not with the first body chunk.
      res.flushHeaders();
    };
    if (!this.holdsHead(status, headers, send)) send();
  }
  answer(status: number, headers: OutgoingHttpHeaders, json?: string | Buffer): void {
    const res = this.res;
    if (this.headersSent || res.destroyed) return;
    this.sendWhole(status, headers, this.wholeBody(headers, json), (body) => {
      if (res.destroyed) return;
      if (body !== undefined) setContentLength(headers, body);
      // Head and body in one write.
      res.writeHead(status, headers);
      res.end(body);
    });
  }
}

// A list across all of a tenant's namespaces of a kind whose objects upstream controllers make without the tenant
// label (ConfigMaps, ServiceAccounts, Events): one upstream list per tenant namespace, in namespace order (the
// order of one cluster-wide list), merged into one answer. `limit` and `continue` count only the tenant's objects;
// the continue token is tenantgate's own, naming the tenant's namespace and the upstream token within it.
// Items stream through as they arrive; Tables (what kubectl get asks for) are merged whole, page by page. In
// protobuf, a list's length comes before its items: the pages are read first (held up to a budget, or asked again).
import type { ClientHttp2Stream, IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http2';
import { pipeline } from 'node:stream/promises';
import type { KindRow } from '../convert/kinds.ts';
import { TENANT_LABEL, toTenantName, type TenantId } from '../convert/prefix.ts';
import type { RequestInfo } from '../convert/request-info.ts';
import { upstreamResourceTarget } from '../convert/request.ts';
import type { ConvertContext } from '../convert/rules/index.ts';
import { isTable, rowObjectsFor, tableToTenant, type RowObjects } from '../convert/table.ts';
import { sendStatus } from './status.ts';
import { badGateway, badRequest, internalError, StatusError, upstreamUnavailable } from '../errors/status-error.ts';
import { ListRewriter } from '../stream/tenant-view.ts';
import { tenantViewSpecOf } from '../stream/view-spec.ts';
import type { UpstreamPool } from '../upstream/pool.ts';
import { readBody, tenantStatusError } from './read-body.ts';
import { listMetaField, protobufListHead, ProtobufListPage, type ConvertedItem } from '../convert/protobuf/made.ts';
import { padding, PADDING_FLUSH_BYTES, PADDING_RESERVE } from '../convert/protobuf/streams.ts';
import { isKindRequest, upstreamHeadersOf, type RequestContext } from './context.ts';
import { asksForTable, protobufAnswerOf, requestApiVersion } from './negotiation.ts';
import type { Stage } from './stage.ts';
import type { TenantConversions } from './tenant-conversions.ts';
import { drained } from './drained.ts';
import { isProtobuf, PROTOBUF_MEDIA_TYPE } from '../convert/protobuf/envelope.ts';

const MAX_PAGE_BYTES = 64 * 1024 * 1024;

/** Where a page ends: the tenant's (upstream) namespace to go on in, and the upstream's token within it. */
interface Position {
  namespace: string;
  upstreamContinue: string;
  resourceVersion: string;
}

function encodeToken(tenant: TenantId, position: Position): string {
  return Buffer.from(JSON.stringify({ t: tenant, n: position.namespace, c: position.upstreamContinue, rv: position.resourceVersion })).toString('base64url');
}

/** The position a continue token names; 400 for a token not made by tenantgate for this tenant. */
function decodeToken(token: string, tenant: TenantId): Position {
  let parsed: any;
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    parsed = null;
  }
  const valid =
    parsed !== null &&
    typeof parsed === 'object' &&
    parsed.t === tenant &&
    typeof parsed.n === 'string' &&
    toTenantName(parsed.n, tenant) !== null &&
    typeof parsed.c === 'string' &&
    typeof parsed.rv === 'string' &&
    /^[0-9]*$/.test(parsed.rv);
  if (!valid) throw badRequest('the continue token is not valid: it was not issued for this list');
  return { namespace: parsed.n, upstreamContinue: parsed.c, resourceVersion: parsed.rv };
}

export interface MergedListRequest {
  ctx: RequestContext;
  pool: UpstreamPool;
  info: RequestInfo;
  row: KindRow;
  query: URLSearchParams;
  convert: ConvertContext;
  /** Headers for every upstream request: the client's, with tenantgate's credentials and impersonation. */
  headers: OutgoingHttpHeaders;
  /** For Tables: the row objects the client asked for (the query already asks upstream for what the rule needs). */
  rowObjects: RowObjects;
}

/** One upstream request's answer: status, headers and the stream of its body. */
function request(
  pool: UpstreamPool,
  path: string,
  headers: OutgoingHttpHeaders,
): Promise<{ status: number; headers: IncomingHttpHeaders; body: ClientHttp2Stream }> {
  return new Promise((resolve, reject) => {
    let stream: ClientHttp2Stream;
    try {
      stream = pool.request('GET', path, headers, true);
    } catch (error) {
      reject(upstreamUnavailable((error as Error).message));
      return;
    }
    stream.once('response', (h) => resolve({ status: Number(h[':status'] ?? 502), headers: h, body: stream }));
    // Errors after the answer began reach whoever reads the body; until then they reject.
    stream.on('error', (error) => reject(upstreamUnavailable(error.message)));
    stream.once('close', () => reject(upstreamUnavailable(`the connection closed (HTTP/2 code ${stream.rstCode})`)));
  });
}

function readPage(body: ClientHttp2Stream): Promise<Buffer> {
  return readBody(body, MAX_PAGE_BYTES, () => internalError('the upstream answer is too large to convert'));
}

async function readWhole(body: ClientHttp2Stream): Promise<unknown> {
  const bytes = await readPage(body);
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    throw badGateway('the upstream answer is not JSON');
  }
}

/** The upstream's error answer (a Status, or plain text) as the tenant's Status error. */
async function upstreamError(status: number, body: ClientHttp2Stream, tenant: TenantId): Promise<StatusError> {
  const bytes = await readPage(body).catch(() => null);
  if (bytes === null) return tenantStatusError(status, null, tenant);
  try {
    return tenantStatusError(status, JSON.parse(bytes.toString('utf8')), tenant);
  } catch {
    return tenantStatusError(status, bytes, tenant);
  }
}

/** The tenant's namespaces as upstream names, sorted (the order of a cluster-wide list). */
async function tenantNamespaces(pool: UpstreamPool, headers: OutgoingHttpHeaders, tenant: TenantId): Promise<string[]> {
  const path = `/api/v1/namespaces?labelSelector=${encodeURIComponent(`${TENANT_LABEL}=${tenant}`)}`;
  const answer = await request(pool, path, { ...headers, accept: 'application/json' });
  if (answer.status !== 200) throw await upstreamError(answer.status, answer.body, tenant);
  const list = (await readWhole(answer.body)) as { items?: { metadata?: { name?: unknown } }[] } | null;
  const names: string[] = [];
  for (const item of list?.items ?? []) {
    const name = item?.metadata?.name;
    if (typeof name === 'string' && toTenantName(name, tenant) !== null) names.push(name);
  }
  return names.sort();
}

/** Lists `row` across the tenant's namespaces into the response (verb list, no namespace in the path). */
export async function listAcrossNamespaces(req: MergedListRequest): Promise<void> {
  const { ctx, pool, info, row, query, convert, headers } = req;
  const tenant = convert.tenant;
  try {
    const token = query.get('continue');
    const start = token ? decodeToken(token, tenant) : null;
    const limitText = query.get('limit');
    const limit = limitText === null || limitText === '' ? 0 : Number(limitText);
    if (!Number.isInteger(limit) || limit < 0) throw badRequest(`limit must be a non-negative integer, not ${JSON.stringify(limitText)}`);
    const namespaces = (await tenantNamespaces(pool, headers, tenant)).filter((ns) => start === null || ns >= start.namespace);
    const table = String(headers.accept ?? '').includes('as=Table');
    const merge = table
      ? new TableMerge(ctx, row, convert, req.rowObjects)
      : protobufAnswerOf(ctx)
        ? new ProtobufMerge(ctx, pool, headers, row, info, convert, limit > 0)
        : new StreamMerge(ctx, row, info, convert);

    let resourceVersion = start?.resourceVersion ?? '';
    let next: Position | null = null;
    for (let i = 0; i < namespaces.length; i++) {
      if (ctx.out.destroyed) return;
      const namespace = namespaces[i]!;
      const remaining = limit === 0 ? 0 : limit - merge.count;
      const pageQuery = new URLSearchParams(query);
      pageQuery.delete('continue');
      pageQuery.delete('limit');
      if (limit > 0) pageQuery.set('limit', String(remaining));
      const upstreamContinue = start !== null && namespace === start.namespace ? start.upstreamContinue : '';
      if (upstreamContinue !== '') {
        pageQuery.set('continue', upstreamContinue);
        pageQuery.delete('resourceVersion');
        pageQuery.delete('resourceVersionMatch');
      } else if (resourceVersion !== '') {
        // Every namespace at the snapshot of the first: one consistent list, as a cluster-wide list would be.
        pageQuery.set('resourceVersion', resourceVersion);
        pageQuery.set('resourceVersionMatch', 'Exact');
      }
      const tenantNamespace = toTenantName(namespace, tenant)!;
      const target = upstreamResourceTarget({ ...info, namespace: tenantNamespace }, row, pageQuery, tenant);
      const answer = await request(pool, target, headers);
      if (answer.status !== 200) {
        const error = await upstreamError(answer.status, answer.body, tenant);
        if (answer.status === 404) continue; // the namespace went away since the list of namespaces was read
        throw error;
      }
      // The same page again, for a protobuf merge that could not hold it: at the same snapshot (or the same token).
      const again = (pageResourceVersion: string) => {
        if (upstreamContinue !== '') return target;
        const query = new URLSearchParams(pageQuery);
        query.set('resourceVersion', pageResourceVersion);
        query.set('resourceVersionMatch', 'Exact');
        return upstreamResourceTarget({ ...info, namespace: tenantNamespace }, row, query, tenant);
      };
      const page = await merge.add(answer.body, String(answer.headers['content-type'] ?? ''), again);
      if (resourceVersion === '') resourceVersion = page.resourceVersion;
      if (page.upstreamContinue !== '') {
        next = { namespace, upstreamContinue: page.upstreamContinue, resourceVersion };
        break;
      }
      if (limit > 0 && merge.count >= limit && i + 1 < namespaces.length) {
        next = { namespace: namespaces[i + 1]!, upstreamContinue: '', resourceVersion };
        break;
      }
    }
    const metadata: Record<string, string> = { resourceVersion };
    if (next !== null) metadata.continue = encodeToken(tenant, next);
    await merge.end(metadata);
  } catch (error) {
    if (!ctx.headersSent) sendStatus(ctx, error);
    else ctx.out.destroy(error as Error);
  }
}

function listKind(row: KindRow, info: RequestInfo): { kind: string; apiVersion: string } {
  return { kind: `${row.kind}List`, apiVersion: requestApiVersion(info) };
}

interface Page {
  resourceVersion: string;
  upstreamContinue: string;
}

/** Items rewritten as they arrive, written to the client between the list's own head and tail. */
class StreamMerge {
  count = 0;
  private started = false;
  private readonly ctx: RequestContext;
  private readonly row: KindRow;
  private readonly info: RequestInfo;
  private readonly convert: ConvertContext;
  /** Writes a page's rewritten bytes to the response, waiting while the client is slow. */
  private readonly relay: (pageBytes: AsyncIterable<Buffer>) => Promise<void>;
  /** The response closed. */
  private closed = false;

  constructor(ctx: RequestContext, row: KindRow, info: RequestInfo, convert: ConvertContext) {
    this.ctx = ctx;
    const res = ctx.out;
    this.row = row;
    this.info = info;
    this.convert = convert;
    res.once('close', () => (this.closed = true));
    this.relay = async (pageBytes) => {
      for await (const chunk of pageBytes) if (!res.write(chunk)) await this.drained();
    };
  }

  /** Resolves when the response can take more bytes; rejects when it closed instead (the client went away). */
  private async drained(): Promise<void> {
    if (this.closed || !(await drained(this.ctx.out)) || this.closed) throw new Error('the client went away');
  }

  async add(body: ClientHttp2Stream): Promise<Page> {
    if (!this.started) {
      this.started = true;
      this.ctx.respond(200, { 'content-type': 'application/json' });
      const { kind, apiVersion } = listKind(this.row, this.info);
      this.ctx.out.write(`{"kind":${JSON.stringify(kind)},"apiVersion":${JSON.stringify(apiVersion)},"items":[`);
    }
    const rewriter = new ListRewriter(tenantViewSpecOf(this.row, this.convert), { itemsBefore: this.count });
    // The response outlives every page: piping into it per namespace would leave listeners on it per namespace.
    await pipeline(body, rewriter, this.relay);
    this.count += rewriter.scanner.itemsKept;
    const list = JSON.parse(rewriter.scanner.envelope().toString('utf8'));
    return { resourceVersion: String(list?.metadata?.resourceVersion ?? ''), upstreamContinue: String(list?.metadata?.continue ?? '') };
  }

  end(metadata: Record<string, string>): void {
    if (!this.started) {
      this.ctx.answer(200, { 'content-type': 'application/json' }, JSON.stringify({ ...listKind(this.row, this.info), metadata, items: [] }));
      return;
    }
    this.ctx.out.end(`],"metadata":${JSON.stringify(metadata)}}`);
  }
}

/** Converted items of the pages a protobuf merge holds, in bytes: past this, pages are asked again when written. */
const PROTOBUF_HOLD_BYTES = 4 * 1024 * 1024;

/** A page of a protobuf merge: its items held, or asked again (`again`) when the list is written. */
interface ProtobufPage {
  items: ConvertedItem[] | null;
  again: string;
  /** The bytes its items may take in the answer: exactly theirs once read whole, else the upstream's (a bound). */
  allowance: number;
}

/**
 * A list merged in protobuf: its raw length comes before its items, so every page is read before the first byte is
 * written. Pages are held (converted) up to PROTOBUF_HOLD_BYTES; a page past the budget is cut off once its ListMeta
 * came (a page counted for `limit` is read through, held items let go) and asked again at its snapshot when written,
 * its items converted as they arrive. What the tenant view saves of a page asked again is filled with padding
 * (protobuf/streams.ts), as a streamed list's. Memory: the budget, and one item.
 */
class ProtobufMerge {
  count = 0;
  private readonly pages: ProtobufPage[] = [];
  private held = 0;
  private readonly ctx: RequestContext;
  private readonly pool: UpstreamPool;
  private readonly headers: OutgoingHttpHeaders;
  private readonly row: KindRow;
  private readonly info: RequestInfo;
  private readonly convert: ConvertContext;
  /** Pages are counted (`limit`): each is read through, whether or not it is held. */
  private readonly counted: boolean;

  constructor(
    ctx: RequestContext,
    pool: UpstreamPool,
    headers: OutgoingHttpHeaders,
    row: KindRow,
    info: RequestInfo,
    convert: ConvertContext,
    counted: boolean,
  ) {
    this.ctx = ctx;
    this.pool = pool;
    this.headers = headers;
    this.row = row;
    this.info = info;
    this.convert = convert;
    this.counted = counted;
  }

  private reader(contentType: string): ProtobufListPage {
    if (!isProtobuf(contentType)) throw badGateway(`the upstream answered a list in ${contentType || 'no content type'} where protobuf was asked for`);
    return new ProtobufListPage(this.row, this.convert, requestApiVersion(this.info));
  }

  async add(body: ClientHttp2Stream, contentType: string, again: (resourceVersion: string) => string): Promise<Page> {
    const page = this.reader(contentType);
    let items: ConvertedItem[] | null = [];
    let cut = false;
    for await (const chunk of body as AsyncIterable<Buffer>) {
      const converted = page.write(chunk);
      if (items !== null) {
        items.push(...converted);
        if (this.held + page.keptBytes > PROTOBUF_HOLD_BYTES) items = null;
      }
      // (Leaving the loop destroys the upstream stream: the upstream is told to stop.)
      if (items === null && !this.counted && page.listMeta !== null) {
        cut = true;
        break;
      }
    }
    if (!cut) page.finish();
    const listMeta = page.listMeta;
    if (listMeta === null) throw badGateway("the upstream's protobuf list has no metadata before its items");
    this.count += page.kept;
    if (items !== null) this.held += page.keptBytes;
    this.pages.push({ items, again: again(listMeta.resourceVersion), allowance: cut ? page.rawLength - listMeta.bytes : page.keptBytes });
    return { resourceVersion: listMeta.resourceVersion, upstreamContinue: listMeta.continue };
  }

  async end(metadata: Record<string, string>): Promise<void> {
    const meta = listMetaField(metadata);
    const askedAgain = this.pages.some((page) => page.items === null);
    let rawLength = meta.length + (askedAgain ? PADDING_RESERVE : 0);
    for (const page of this.pages) rawLength += page.allowance;
    const out = this.ctx.out;
    this.ctx.respond(200, { 'content-type': PROTOBUF_MEDIA_TYPE });
    const write = async (parts: readonly Buffer[]) => {
      for (const part of parts) if (!out.write(part) && !(await drained(out))) throw new Error('the client went away');
    };
    await write([protobufListHead(requestApiVersion(this.info), `${this.row.kind}List`, rawLength), meta]);
    let written = meta.length;
    for (const page of this.pages) {
      if (page.items !== null) {
        for (const item of page.items) await write(item.parts);
        written += page.allowance;
        page.items = null;
        continue;
      }
      written += await this.writeAgain(page, write);
    }
    if (written > rawLength) throw badGateway("a tenant view of the upstream's protobuf list came out longer than the list");
    if (written < rawLength) await write(padding(rawLength - written));
    out.end();
  }

  /** A page asked again and written as its items arrive; the bytes it took (items and padding). */
  private async writeAgain(page: ProtobufPage, write: (parts: readonly Buffer[]) => Promise<void>): Promise<number> {
    const answer = await request(this.pool, page.again, this.headers);
    if (answer.status !== 200) throw await upstreamError(answer.status, answer.body, this.convert.tenant);
    const reader = this.reader(String(answer.headers['content-type'] ?? ''));
    let taken = 0;
    for await (const chunk of answer.body as AsyncIterable<Buffer>) {
      for (const item of reader.write(chunk)) {
        taken += item.length;
        if (taken > page.allowance) throw badGateway('a page of the list came out longer when asked again');
        await write(item.parts);
      }
      // What the tenant view saved so far, sent along as padding rather than all at the end.
      const saved = reader.upstreamItemBytes - taken;
      if (saved >= PADDING_FLUSH_BYTES && taken + saved <= page.allowance) {
        await write(padding(saved));
        taken += saved;
      }
    }
    reader.finish();
    return taken;
  }
}

/** Table pages (bounded by kubectl's chunk size) converted whole; their rows appended in order. */
class TableMerge {
  count = 0;
  private table: any = null;
  private readonly row: KindRow;
  private readonly convert: ConvertContext;
  private readonly rowObjects: RowObjects;
  private readonly ctx: RequestContext;

  constructor(ctx: RequestContext, row: KindRow, convert: ConvertContext, rowObjects: RowObjects) {
    this.ctx = ctx;
    this.row = row;
    this.convert = convert;
    this.rowObjects = rowObjects;
  }

  async add(body: ClientHttp2Stream): Promise<Page> {
    const page: unknown = await readWhole(body);
    if (!isTable(page)) throw badGateway('the upstream did not answer with a Table');
    const metadata = (page as { metadata?: { resourceVersion?: string; continue?: string } }).metadata;
    // Rows arrive as the kind's objects; the rule of their kind converts them (or drops them).
    const view: any = tableToTenant(page, this.convert, this.row, this.rowObjects);
    if (this.table === null) this.table = { ...view, rows: [] };
    this.table.rows.push(...(view.rows ?? []));
    this.count = this.table.rows.length;
    return { resourceVersion: String(metadata?.resourceVersion ?? ''), upstreamContinue: String(metadata?.continue ?? '') };
  }

  end(metadata: Record<string, string>): void {
    const table = this.table ?? { kind: 'Table', apiVersion: 'meta.k8s.io/v1', columnDefinitions: [], rows: [] };
    this.ctx.answer(200, { 'content-type': 'application/json;as=Table;v=v1;g=meta.k8s.io' }, JSON.stringify({ ...table, metadata }));
  }
}

/** Whether a tenant's request is such a list. */
export function isMergedAcrossNamespaces(info: RequestInfo, row: KindRow): boolean {
  return row.listPath === 'per-namespace' && info.verb === 'list' && info.namespace === '';
}

/**
 * The stage "list across namespaces": a tenant's list without a namespace of a kind whose objects upstream controllers
 * make without the tenant label (the table's listPath 'per-namespace'): one list per tenant namespace, merged.
 */
export function listAcrossNamespacesStage(conversions: TenantConversions): Stage['run'] {
  return (ctx) => {
    if (!isKindRequest(ctx) || !isMergedAcrossNamespaces(ctx.info, ctx.row)) return false;
    const { info, row } = ctx;
    const headers = upstreamHeadersOf(ctx);
    const convert = conversions.of(ctx.identity.tenant);
    const table = asksForTable(ctx);
    // The query each page is asked with: for Tables, with the row objects the kind's rule must see.
    const query = table ? new URLSearchParams(ctx.query) : ctx.query;
    const rowObjects = table ? rowObjectsFor(query, row) : 'Object';
    void listAcrossNamespaces({ ctx, pool: conversions.pool, info, row, query, convert, headers, rowObjects });
    return true;
  };
}

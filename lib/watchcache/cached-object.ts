// What the watch cache keeps and hands out: one object as its tenant sees it, and one change with the watch event
// line every watcher receives, both made once at ingest and never changed after.
import type { TenantId } from '../convert/prefix.ts';
import type { ObjectFields, Selectable } from './selection.ts';

export type CacheEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface ResourceCacheStats {
  objects: number;
  /** Of the tenants' views kept: JSON, and protobuf once a protobuf client had one made. */
  bytes: number;
  eventsIn: number;
  deliveries: number;
  slowWatchersClosed: number;
  relists: number;
}

/** One object as its tenant sees it, never changed once made (a change makes a new one). */
export class CachedObject implements Selectable {
  readonly tenant: TenantId;
  /** The tenant's namespace ('' for cluster-scoped kinds). */
  readonly namespace: string;
  readonly name: string;
  readonly resourceVersion: number;
  readonly labels: Readonly<Record<string, string>> | undefined;
  readonly fields: ObjectFields;
  /** The tenant's view, JSON. */
  readonly bytes: Buffer;
  /** The tenant's view in protobuf (`k8s\0` + Unknown), made the first time a protobuf client needs it (encodings.ts). */
  protobuf: Buffer | undefined = undefined;
  /** Where the object's message starts in `protobuf` (a list item is the message alone). */
  protobufMessageStart = 0;
  /** The stats that count its bytes while the cache keeps it (a protobuf made later adds to them); null once it left. */
  countedIn: ResourceCacheStats | null = null;

  constructor(
    tenant: TenantId,
    namespace: string,
    name: string,
    resourceVersion: number,
    labels: Record<string, string> | undefined,
    fields: ObjectFields,
    bytes: Buffer,
  ) {
    this.tenant = tenant;
    this.namespace = namespace;
    this.name = name;
    this.resourceVersion = resourceVersion;
    this.labels = labels;
    this.fields = fields;
    this.bytes = bytes;
  }
}

/** One change, with the watch event line every watcher of its tenant that selects it receives, made once. */
export interface CacheEvent {
  readonly type: CacheEventType;
  readonly resourceVersion: number;
  /** The object after the change (for DELETED, as it was deleted). */
  readonly object: CachedObject;
  /** The object before a MODIFIED (a selector may have selected it and no longer does, or the other way round). */
  readonly previous: CachedObject | null;
  /** `{"type":…,"object":…}\n`; object.bytes is a view into it. */
  readonly line: Buffer;
  /** For watchers whose selection it leaves: DELETED with the object as it was, at this resourceVersion (made once, when first needed). */
  departure?: Buffer;
  /** The protobuf watch frames of `line` and `departure`, made once, when a protobuf watcher first needs them (encodings.ts). */
  frame?: Buffer;
  departureFrame?: Buffer;
}

export const LINE_HEAD: Readonly<Record<CacheEventType, Buffer>> = {
  ADDED: Buffer.from('{"type":"ADDED","object":'),
  MODIFIED: Buffer.from('{"type":"MODIFIED","object":'),
  DELETED: Buffer.from('{"type":"DELETED","object":'),
};
export const LINE_TAIL = Buffer.from('}\n');

/** The watch event line of `type` for an object's bytes (a copy: lines are made once per event, or per watch start). */
export function eventLine(type: CacheEventType, bytes: Buffer): Buffer {
  return Buffer.concat([LINE_HEAD[type], bytes, LINE_TAIL]);
}

/**
 * The DELETED a watcher receives when a change takes an object out of its selection: the object before the change,
 * at the change's resourceVersion, as the apiserver's cacher sends it.
 */
export function departureLine(event: CacheEvent): Buffer {
  if (event.departure === undefined) {
    const before = JSON.parse(event.previous!.bytes.toString('utf8'));
    before.metadata.resourceVersion = String(event.resourceVersion);
    event.departure = eventLine('DELETED', Buffer.from(JSON.stringify(before)));
  }
  return event.departure;
}

/**
 * Bytes the cache keeps for minutes: of their own size, not a slice of node's shared 8 KB pool, whose slab a single
 * kept slice would hold whole.
 */
export function lastingBytes(text: string): Buffer {
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(text));
  bytes.write(text, 0, 'utf8');
  return bytes;
}

// Answers in YAML for a client that chose it, as kube-apiserver answers `Accept: application/yaml` (curl users, some
// tools): tenantgate asks the upstream for JSON, converts it as always, and writes the JSON it would have sent as
// YAML on its way out, a list item by item (lib/convert/json-yaml.ts). A watch has no YAML form (negotiation.ts).
import { StringDecoder } from 'node:string_decoder';
import { Writable } from 'node:stream';
import type { OutgoingHttpHeaders } from 'node:http';
import { JsonToYaml } from '../convert/json-yaml.ts';
import { mediaRanges } from './media-ranges.ts';
import { PROTOBUF_MEDIA_TYPE } from '../convert/protobuf/envelope.ts';

export const YAML_MEDIA_TYPE = 'application/yaml';

/** What the apiserver answers objects in (CBOR serving off); `*\/*` takes any of them. */
const ANSWERED: ReadonlySet<string> = new Set(['application/json', YAML_MEDIA_TYPE, PROTOBUF_MEDIA_TYPE, '*/*']);

/** Whether the apiserver would pick YAML for this Accept: the first range it answers in, by q then specificity, is YAML. */
export function choosesYaml(accept: string | undefined): boolean {
  if (accept === undefined || !accept.toLowerCase().includes('yaml')) return false;
  const chosen = mediaRanges(accept).find((range) => ANSWERED.has(range.type));
  return chosen?.type === YAML_MEDIA_TYPE && !chosen.transformed;
}

/** Whether a watch can be answered for this Accept: only JSON and protobuf have a streamed form. */
export function acceptsAWatchForm(accept: string | undefined): boolean {
  if (accept === undefined || accept.trim() === '') return true;
  return mediaRanges(accept).some((range) => range.type !== YAML_MEDIA_TYPE && ANSWERED.has(range.type));
}

/** Whether a head says its answer is JSON (a Table's and a metadata form's too). */
export function isJsonAnswer(headers: OutgoingHttpHeaders): boolean {
  const contentType = headers['content-type'];
  return typeof contentType === 'string' && contentType.startsWith('application/json');
}

/** A JSON answer's head for a client answered in YAML: its type says YAML, its length is the converted one. */
export function yamlHead(headers: OutgoingHttpHeaders): boolean {
  if (!isJsonAnswer(headers)) return false;
  headers['content-type'] = YAML_MEDIA_TYPE;
  delete headers['content-length'];
  return true;
}

/**
 * The response body for a client answered in YAML: JSON written to it reaches `to` as YAML, with `to`'s
 * backpressure; anything else (a log's text) as it is. It ends, fails and closes with `to`.
 */
export class YamlOut extends Writable {
  readonly #to: Writable;
  readonly #decoder = new StringDecoder('utf8');
  /** null: the answer is not JSON, and passes as it is. */
  #converter: JsonToYaml | null = new JsonToYaml();

  constructor(to: Writable) {
    super();
    this.#to = to;
    to.once('close', () => this.destroy());
  }

  /** The head said the answer is not JSON. */
  passThrough(): void {
    this.#converter = null;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    let data: string | Buffer = chunk;
    if (this.#converter !== null) {
      try {
        data = this.#converter.push(this.#decoder.write(chunk));
      } catch (error) {
        callback(error as Error);
        return;
      }
      if (data.length === 0) {
        callback();
        return;
      }
    }
    if (this.#to.write(data)) callback();
    else this.#to.once('drain', () => callback());
  }

  override _final(callback: (error?: Error | null) => void): void {
    let rest = '';
    if (this.#converter !== null) {
      try {
        rest = this.#converter.push(this.#decoder.end()) + this.#converter.end();
      } catch (error) {
        callback(error as Error);
        return;
      }
    }
    this.#to.end(rest, () => callback());
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (!this.#to.destroyed && (error !== null || !this.#to.writableEnded)) this.#to.destroy(error ?? undefined);
    callback(error);
  }
}

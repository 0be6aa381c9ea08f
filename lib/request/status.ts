// Writes a Kubernetes `Status` (made by errors/status-error.ts) as the answer to a request: the only place that
// turns an error into bytes. Never writes a second answer over one already under way.
import type { Duplex } from 'node:stream';
import { log } from '../log.ts';
import type { RequestContext } from './context.ts';
import { asStatusError, type StatusError } from '../errors/status-error.ts';
import { protobufStatus } from '../convert/protobuf/made.ts';
import { acceptsOnlyProtobuf, protobufAnswerOf } from './negotiation.ts';
import { choosesYaml, YAML_MEDIA_TYPE } from './yaml-answer.ts';
import { jsonTextToYaml } from '../convert/json-yaml.ts';
import { PROTOBUF_MEDIA_TYPE } from '../convert/protobuf/envelope.ts';

/** A bug, not bad input: the client learns nothing of it, the operator learns everything. */
function logBug(error: unknown): void {
  log.error('internal error', { error: error instanceof Error ? error.stack : String(error) });
}

/** The Status in protobuf; null (answered in JSON, which every client reads) if the encoder refuses it: a bug, logged. */
function protobufStatusOrNull(status: StatusError): Buffer | null {
  try {
    return protobufStatus(status.toJSON());
  } catch (error) {
    logBug(error);
    return null;
  }
}

/** Answers a request with a Status; a response already under way can only be cut off. */
export function sendStatus(ctx: RequestContext, error: unknown): void {
  const status = asStatusError(error, logBug);
  if (ctx.headersSent) {
    // With the error: a reset with NO_ERROR would let an HTTP/2 client take a cut answer for a whole one.
    ctx.out.destroy(status);
    return;
  }
  // As the apiserver negotiates a Status: in protobuf to a client that prefers it, for a request answered in protobuf,
  // and to a client that reads nothing else.
  const protobuf = protobufAnswerOf(ctx) || acceptsOnlyProtobuf(ctx.headers.accept) ? protobufStatusOrNull(status) : null;
  // In YAML to a client that chose it, a watch's too (a Status is no stream).
  const yaml = protobuf === null && choosesYaml(ctx.headers.accept);
  const body = protobuf ?? (yaml ? jsonTextToYaml(JSON.stringify(status)) : JSON.stringify(status));
  // (The length is added by the answer.)
  const headers: Record<string, string | number> = {
    'content-type': protobuf !== null ? PROTOBUF_MEDIA_TYPE : yaml ? YAML_MEDIA_TYPE : 'application/json',
    'cache-control': 'no-cache, private',
  };
  if (status.details?.retryAfterSeconds !== undefined) headers['retry-after'] = status.details.retryAfterSeconds;
  ctx.answer(status.code, headers, body);
}

const REASON_PHRASES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  410: 'Gone',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
};

/**
 * The same Status written as raw HTTP/1.1 on a socket that has no response object (upgrade, client errors).
 * `endSocket: false` leaves the connection open for the caller to close.
 */
export function writeRawStatus(socket: Duplex, error: unknown, endSocket = true): void {
  const status = asStatusError(error, logBug);
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  const body = JSON.stringify(status);
  const response =
    `HTTP/1.1 ${status.code} ${REASON_PHRASES[status.code] ?? 'Error'}\r\n` +
    'Content-Type: application/json\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    'Connection: close\r\n\r\n' +
    body;
  if (endSocket) socket.end(response);
  else socket.write(response);
}

// Every error tenantgate itself answers with is a Kubernetes `Status`, built here and nowhere else,
// so clients (kubectl, client-go) show a clear message and act on the code and reason.
import type { ServerResponse } from 'node:http';
import type { Http2ServerResponse } from 'node:http2';
import type { Duplex } from 'node:stream';
import { log } from '../log.ts';

/** The `reason` values of metav1.StatusReason that tenantgate uses. */
export type StatusReason =
  | 'BadRequest'
  | 'Unauthorized'
  | 'Forbidden'
  | 'NotFound'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Expired'
  | 'MethodNotAllowed'
  | 'RequestEntityTooLarge'
  | 'UnsupportedMediaType'
  | 'Invalid'
  | 'TooManyRequests'
  | 'InternalError'
  | 'ServiceUnavailable'
  | 'Timeout';

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  causes?: { reason?: string; message?: string; field?: string }[];
  retryAfterSeconds?: number;
}

export class StatusError extends Error {
  readonly code: number;
  readonly reason: StatusReason;
  readonly details: StatusDetails | undefined;

  constructor(code: number, reason: StatusReason, message: string, details?: StatusDetails) {
    super(message);
    this.code = code;
    this.reason = reason;
    this.details = details;
  }

  toJSON(): object {
    const status: Record<string, unknown> = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
    };
    if (this.details !== undefined) status.details = this.details;
    status.code = this.code;
    return status;
  }
}

/**
 * The reason for an error answer that carries only its code (an upstream's plain-text 404), as client-go derives it
 * for a body that is not a Status (apimachinery's NewGenericServerResponse).
 */
export function reasonOfCode(code: number): StatusReason {
  switch (code) {
    case 400:
      return 'BadRequest';
    case 401:
      return 'Unauthorized';
    case 403:
      return 'Forbidden';
    case 404:
      return 'NotFound';
    case 405:
      return 'MethodNotAllowed';
    case 409:
      return 'Conflict';
    case 410:
      return 'Expired';
    case 413:
      return 'RequestEntityTooLarge';
    case 415:
      return 'UnsupportedMediaType';
    case 422:
      return 'Invalid';
    case 429:
      return 'TooManyRequests';
    case 503:
      return 'ServiceUnavailable';
    case 504:
      return 'Timeout';
    default:
      return 'InternalError';
  }
}

export const badRequest = (message: string) => new StatusError(400, 'BadRequest', message);
export const unauthorized = (message = 'Unauthorized') => new StatusError(401, 'Unauthorized', message);
export const notFound = (message = 'the server could not find the requested resource', details?: StatusDetails) => new StatusError(404, 'NotFound', message, details);
export const upstreamUnavailable = (why: string) =>
  new StatusError(503, 'ServiceUnavailable', `the upstream API server is unavailable: ${why}`, { retryAfterSeconds: 1 });
/** Flow control's refusal: the client may retry after `retryAfterSeconds` (Retry-After header and details). */
export const tooManyRequests = (message: string, retryAfterSeconds = 1) => new StatusError(429, 'TooManyRequests', message, { retryAfterSeconds });
export const headersTooLarge = () => new StatusError(431, 'BadRequest', 'request header fields too large');

function asStatusError(error: unknown): StatusError {
  if (error instanceof StatusError) return error;
  // A bug, not bad input: the client learns nothing of it, the operator learns everything.
  log.error('internal error', { error: error instanceof Error ? error.stack : String(error) });
  return new StatusError(500, 'InternalError', 'an internal error occurred in tenantgate');
}

/** Answers a request with a Status; a response already under way can only be cut off. */
export function sendStatus(res: ServerResponse | Http2ServerResponse, error: unknown): void {
  const status = asStatusError(error);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = JSON.stringify(status);
  const headers: Record<string, string | number> = {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-cache, private',
  };
  if (status.details?.retryAfterSeconds !== undefined) headers['retry-after'] = status.details.retryAfterSeconds;
  (res as ServerResponse).writeHead(status.code, headers);
  res.end(body);
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
  const status = asStatusError(error);
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

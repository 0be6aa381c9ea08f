// Every error tenantgate answers with is a Kubernetes `Status`, made here: one named factory per reason, so clients
// (kubectl, client-go) act on the code and reason. Imports nothing of the project; only server/ writes these out.

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
  | 'NotAcceptable'
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
    case 406:
      return 'NotAcceptable';
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

// ---- one factory per reason (and the few codes a reason is sent with besides its own)
export const badRequest = (message: string, details?: StatusDetails) => new StatusError(400, 'BadRequest', message, details);
export const unauthorized = (message = 'Unauthorized') => new StatusError(401, 'Unauthorized', message);
export const forbidden = (message: string, details?: StatusDetails) => new StatusError(403, 'Forbidden', message, details);
export const notFound = (message = 'the server could not find the requested resource', details?: StatusDetails) =>
  new StatusError(404, 'NotFound', message, details);
export const methodNotAllowed = (message: string, details?: StatusDetails) => new StatusError(405, 'MethodNotAllowed', message, details);
export const alreadyExists = (message: string, details?: StatusDetails) => new StatusError(409, 'AlreadyExists', message, details);
export const notAcceptable = (message: string, details?: StatusDetails) => new StatusError(406, 'NotAcceptable', message, details);
export const conflict = (message: string, details?: StatusDetails) => new StatusError(409, 'Conflict', message, details);
/** 410 Gone: a continue token or resourceVersion too old. */
export const expired = (message: string, details?: StatusDetails) => new StatusError(410, 'Expired', message, details);
export const requestEntityTooLarge = (message: string, details?: StatusDetails) => new StatusError(413, 'RequestEntityTooLarge', message, details);
export const unsupportedMediaType = (message: string, details?: StatusDetails) => new StatusError(415, 'UnsupportedMediaType', message, details);
export const invalid = (message: string, details?: StatusDetails) => new StatusError(422, 'Invalid', message, details);
/** Flow control's refusal: the client may retry after `retryAfterSeconds` (Retry-After header and details). */
export const tooManyRequests = (message: string, retryAfterSeconds = 1) => new StatusError(429, 'TooManyRequests', message, { retryAfterSeconds });
export const headersTooLarge = () => new StatusError(431, 'BadRequest', 'request header fields too large');
export const internalError = (message: string, details?: StatusDetails) => new StatusError(500, 'InternalError', message, details);
/** 502: the upstream answered something tenantgate cannot convert (the apiserver's proxy errors use this pair). */
export const badGateway = (message: string, details?: StatusDetails) => new StatusError(502, 'InternalError', message, details);
export const serviceUnavailable = (message: string, details?: StatusDetails) => new StatusError(503, 'ServiceUnavailable', message, details);
export const upstreamUnavailable = (why: string) => serviceUnavailable(`the upstream API server is unavailable: ${why}`, { retryAfterSeconds: 1 });
export const timeout = (message: string, details?: StatusDetails) => new StatusError(504, 'Timeout', message, details);

/** Any thrown value as the Status to answer: a StatusError as it is; anything else is a bug, a 500 that tells nothing. */
export function asStatusError(error: unknown, onBug: (error: unknown) => void): StatusError {
  if (error instanceof StatusError) return error;
  onBug(error);
  return internalError('an internal error occurred in tenantgate');
}

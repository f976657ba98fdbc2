// Owns the closed set of error codes and their mapping to HTTP. Services raise AppError with a
// code; only the HTTP layer turns it into a Problem body. Each code is defined here once.

export const ERROR_CODES = {
  invalid_request: {
    status: 400,
    title: 'Invalid request',
    description:
      'A query parameter or header is missing or malformed, or the body is not valid JSON. `errors` names each parameter.',
  },
  invalid_cursor: {
    status: 400,
    title: 'Invalid cursor',
    description:
      'The `cursor` was not issued by this service for this list and these filters. Start again from the first page.',
  },
  unauthenticated: {
    status: 401,
    title: 'Unauthenticated',
    description:
      'No valid API key. The same answer is given for a missing, unknown, revoked or expired key, a suspended client and a call from outside the allowed addresses; the practice audit log records which.',
  },
  forbidden: {
    status: 403,
    title: 'Forbidden',
    description: 'The integration client lacks the permission this operation needs.',
  },
  addon_inactive: {
    status: 403,
    title: 'Integrations add-on inactive',
    description: "The practice's Integrations add-on is switched off.",
  },
  not_found: {
    status: 404,
    title: 'Not found',
    description: 'No such record in this practice, or no such path.',
  },
  method_not_allowed: {
    status: 405,
    title: 'Method not allowed',
    description:
      'The path exists but does not accept this method; the `Allow` header lists the accepted ones.',
  },
  request_timeout: {
    status: 408,
    title: 'Request timeout',
    description: 'The request was not received completely in time. Send it again.',
  },
  duplicate: {
    status: 409,
    title: 'Duplicate',
    description: 'The record conflicts with an existing one; `detail` names it.',
  },
  conflict: {
    status: 409,
    title: 'Conflict',
    description:
      'A request with the same Idempotency-Key is still running. Wait the seconds in `Retry-After` and retry with the same key.',
  },
  payload_too_large: {
    status: 413,
    title: 'Payload too large',
    description: 'The body is larger than 256 KB.',
  },
  unsupported_media_type: {
    status: 415,
    title: 'Unsupported media type',
    description: 'The body was not sent as application/json; set Content-Type.',
  },
  validation_failed: {
    status: 422,
    title: 'Validation failed',
    description: 'One or more body fields are wrong; `errors` lists every one with its dotted path.',
  },
  business_rule: {
    status: 422,
    title: 'Business rule',
    description:
      'The request is well formed but the record is in a state that does not allow it (for example issuing an invoice that is not a draft).',
  },
  unprocessable: {
    status: 422,
    title: 'Unprocessable',
    description: 'The request is well formed but cannot be carried out for another reason given in `detail`.',
  },
  idempotency_key_reused: {
    status: 422,
    title: 'Idempotency-Key reused',
    description:
      'The Idempotency-Key was first used with a different method, path or body. Use a new key for a new request.',
  },
  rate_limited: {
    status: 429,
    title: 'Rate limited',
    description: 'Too many requests. Wait the seconds in `Retry-After`.',
  },
  headers_too_large: {
    status: 431,
    title: 'Request headers too large',
    description:
      'The request line and headers together are larger than 16 KB. Send a shorter URL or fewer headers.',
  },
  internal_error: {
    status: 500,
    title: 'Internal error',
    description: 'A failure on the service side. Quote `requestId` when reporting it.',
  },
  service_unavailable: {
    status: 503,
    title: 'Service unavailable',
    description:
      'The service is overloaded, the request could not be recorded in the practice audit log, or the database is unreachable; nothing was done. Wait `Retry-After` seconds and retry.',
  },
} as const satisfies Record<string, { status: number; title: string; description: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface FieldError {
  field: string;
  code: 'required' | 'invalid';
  message: string;
}

/** A refusal decided by the service. Carries a code from ERROR_CODES and a detail fit for a person. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly detail: string;
  readonly errors: FieldError[] | undefined;
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    detail: string,
    options: { errors?: FieldError[]; headers?: Record<string, string> } = {},
  ) {
    super(detail);
    this.name = 'AppError';
    this.code = code;
    this.detail = detail;
    this.errors = options.errors;
    this.headers = options.headers ?? {};
  }

  get status(): number {
    return ERROR_CODES[this.code].status;
  }
}

export function notFound(what: string): AppError {
  return new AppError('not_found', `${what} was not found.`);
}

/**
 * The row a statement found or wrote, else 404 naming `what`. A change written as one statement that
 * names its row (`UPDATE ... RETURNING`, `DELETE ... RETURNING`) writes nothing when a concurrent
 * transaction deleted the row first, and so answers the 404 a moment later would have, never a 500.
 */
export function orNotFound<T>(row: T | undefined, what: string): T {
  if (row === undefined) throw notFound(what);
  return row;
}

/**
 * One entry per field, the first reason found for it: a field wrong in two ways (in the future, and
 * before another date) is named once, with the reason checked first.
 */
export function firstPerField(errors: FieldError[]): FieldError[] {
  const seen = new Set<string>();
  return errors.filter((e) => !seen.has(e.field) && seen.add(e.field));
}

export function fieldErrors(all: FieldError[], detail?: string): AppError {
  const errors = firstPerField(all);
  return new AppError(
    'validation_failed',
    detail ??
      `${errors.length === 1 ? 'One field is' : `${errors.length} fields are`} wrong: ${errors.map((e) => e.field).join(', ')}.`,
    { errors },
  );
}

export function invalidParameters(all: FieldError[]): AppError {
  const errors = firstPerField(all);
  return new AppError(
    'invalid_request',
    `Check ${errors.length === 1 ? 'the parameter' : 'the parameters'} ${errors.map((e) => e.field).join(', ')}.`,
    { errors },
  );
}

export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: ErrorCode;
  requestId: string;
  errors?: FieldError[];
}

export function problemOf(error: AppError, requestId: string, errorsDocUrl: string): Problem {
  const def = ERROR_CODES[error.code];
  const problem: Problem = {
    type: `${errorsDocUrl}#${error.code.replaceAll('_', '-')}`,
    title: def.title,
    status: def.status,
    detail: error.detail,
    code: error.code,
    requestId,
  };
  if (error.errors && error.errors.length > 0) problem.errors = error.errors;
  return problem;
}

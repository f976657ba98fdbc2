// Owns the errors the client throws: ProblemError for every error answer of the service (its Problem
// body, typed), ConnectionError when no answer came (network failure or time-out, after the retries).

/** One wrong field of a `validation_failed` or `invalid_request` answer. */
export interface FieldError {
  field: string;
  code: string;
  message: string;
}

/** An error answer of the service. Branch on `code`: it stays the same across releases. */
export class ProblemError extends Error {
  override readonly name = 'ProblemError';
  readonly status: number;
  readonly code: string;
  readonly type: string | undefined;
  readonly title: string | undefined;
  readonly detail: string;
  readonly errors: FieldError[];
  /** The request's id: quote it when reporting a problem. */
  readonly requestId: string | undefined;
  /** Seconds the service asked to wait (`Retry-After`), when it said. */
  readonly retryAfterSeconds: number | undefined;

  constructor(init: {
    status: number;
    code: string;
    detail: string;
    type?: string | undefined;
    title?: string | undefined;
    errors?: FieldError[] | undefined;
    requestId?: string | undefined;
    retryAfterSeconds?: number | undefined;
  }) {
    super(`${init.status} ${init.code}: ${init.detail}`);
    this.status = init.status;
    this.code = init.code;
    this.detail = init.detail;
    this.type = init.type;
    this.title = init.title;
    this.errors = init.errors ?? [];
    this.requestId = init.requestId;
    this.retryAfterSeconds = init.retryAfterSeconds;
  }
}

/** No answer came from the service: the connection failed or the request timed out. */
export class ConnectionError extends Error {
  override readonly name = 'ConnectionError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function fieldErrors(value: unknown): FieldError[] {
  if (!Array.isArray(value)) return [];
  return value.filter(isRecord).map((e) => ({
    field: String(e.field ?? ''),
    code: String(e.code ?? ''),
    message: String(e.message ?? ''),
  }));
}

/** The ProblemError for an error answer; a body that is not a Problem (a proxy's page) still gives one. */
export function problemFrom(
  status: number,
  headers: Headers,
  body: unknown,
  retryAfterSeconds: number | undefined,
): ProblemError {
  const requestId = headers.get('x-request-id') ?? undefined;
  if (isRecord(body) && typeof body.code === 'string') {
    return new ProblemError({
      status,
      code: body.code,
      detail: typeof body.detail === 'string' ? body.detail : '',
      type: typeof body.type === 'string' ? body.type : undefined,
      title: typeof body.title === 'string' ? body.title : undefined,
      errors: fieldErrors(body.errors),
      requestId: typeof body.requestId === 'string' ? body.requestId : requestId,
      retryAfterSeconds,
    });
  }
  return new ProblemError({
    status,
    code: 'unexpected_response',
    detail: `The server answered ${status} without a Problem body.`,
    requestId,
    retryAfterSeconds,
  });
}

// Owns turning anything thrown while answering into a Problem: our AppErrors as they are, Fastify's
// own refusals (validation, body size, media type, bad JSON) by their kind, a lost database or audit
// log as 503 with Retry-After, and everything else as a 500 that reveals nothing.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AuditUnavailableError } from '../platform/audit-log.ts';
import { isDatabaseUnavailable } from '../platform/db/transaction.ts';
import { malformedCursorError } from '../platform/http/cursor.ts';
import { AppError, fieldErrors, invalidParameters, problemOf } from '../platform/http/errors.ts';
import { RequestShed } from '../platform/http/load-shedding.ts';
import type { RefuseUnrouted } from '../platform/http/not-found.ts';
import { toFieldErrors } from '../platform/http/validation.ts';
import { countUnavailable } from '../platform/observability/metrics.ts';

function toAppError(error: FastifyError | Error, request: FastifyRequest): AppError {
  // Shed before any work: nothing to record, and no connection to spend on recording it.
  if (error instanceof RequestShed) request.auditState?.shed();
  if (error instanceof AppError) return error;
  const fe = error as FastifyError;
  if (fe.validation) {
    const part = (fe.validationContext ?? 'body') as 'body' | 'querystring' | 'params' | 'headers';
    const errors = toFieldErrors(fe.validation as never, part);
    if (part === 'body') return fieldErrors(errors);
    if (part === 'params') return new AppError('not_found', 'No such record in this practice.');
    const cursor =
      part === 'querystring'
        ? malformedCursorError((request.query as { cursor?: unknown } | null)?.cursor)
        : undefined;
    return invalidParameters(cursor ? [...errors, cursor] : errors);
  }
  if (error instanceof AuditUnavailableError || isDatabaseUnavailable(error)) {
    request.auditState?.failed();
    countUnavailable(error instanceof AuditUnavailableError ? 'audit' : 'database');
    return new AppError(
      'service_unavailable',
      error instanceof AuditUnavailableError
        ? 'The request could not be recorded in the audit log; nothing was done. Retry shortly.'
        : 'The database is unavailable; nothing was done. Retry shortly.',
      { headers: { 'retry-after': error instanceof AuditUnavailableError ? '1' : '2' } },
    );
  }
  switch (fe.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError('payload_too_large', 'The body is larger than 256 KB.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError(
        'unsupported_media_type',
        'Send the body as JSON with Content-Type: application/json.',
      );
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return invalidParameters([
        { field: 'Content-Length', code: 'invalid', message: 'Content-Length does not match the body' },
      ]);
  }
  if (fe.statusCode === 400 || error instanceof SyntaxError) {
    return new AppError('invalid_request', 'The body is not valid JSON.', {
      errors: [{ field: 'body', code: 'invalid', message: 'body is not valid JSON' }],
    });
  }
  if (fe.statusCode === 413) return new AppError('payload_too_large', 'The body is larger than 256 KB.');
  if (fe.statusCode === 415) {
    return new AppError(
      'unsupported_media_type',
      'Send the body as JSON with Content-Type: application/json.',
    );
  }
  return new AppError(
    'internal_error',
    'Something failed on our side. Quote the requestId when you report it.',
  );
}

/** The answer to a request no route serves, whatever else is wrong with it (its body, its media type). */
async function unroutedRefusal(
  refuseUnrouted: RefuseUnrouted,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<AppError> {
  try {
    return await refuseUnrouted(request, reply);
  } catch (refusal) {
    return refusal as AppError;
  }
}

export function installErrorHandler(
  app: FastifyInstance,
  config: { readonly errorsDocUrl: string },
  refuseUnrouted: RefuseUnrouted,
): void {
  app.setErrorHandler(async (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    // Fastify reads the body of a method it knows (QUERY needs a Content-Type) before it finds that
    // no route serves the path; the path decides the answer, not the body.
    const appError =
      request.is404 && !(error instanceof AppError)
        ? await unroutedRefusal(refuseUnrouted, request, reply)
        : toAppError(error, request);
    if (appError.code === 'internal_error') {
      request.log.error({ err: error }, 'unhandled error');
    } else if (appError.code === 'service_unavailable' && !(error instanceof RequestShed)) {
      request.log.warn({ err: error }, 'answered 503');
    }
    if (request.auditState) request.auditState.problemCode = appError.code;
    reply.code(appError.status).headers(appError.headers).type('application/json; charset=utf-8');
    // A body over the limit is not read to its end. Fastify stops listening at the limit but leaves the
    // stream flowing, so the rest would be read (and allocated) while the answer is prepared: pause it,
    // and close the connection after the 413 instead of draining what the client still sends.
    if (appError.code === 'payload_too_large') {
      request.raw.pause();
      reply.header('connection', 'close');
    }
    return reply.send(JSON.stringify(problemOf(appError, request.id, config.errorsDocUrl)));
  });
}

/**
 * Fastify's router refuses a malformed percent-encoding in the path before any route or hook runs:
 * answer it with a Problem too (400).
 */
export function frameworkErrorHandler(
  config: { readonly errorsDocUrl: string },
  limitSource: (request: FastifyRequest, reply: FastifyReply) => Promise<void>,
) {
  return (error: FastifyError, request: FastifyRequest, reply: FastifyReply): void => {
    void limitSource(request, reply).then(
      () => sendFrameworkProblem(error, request, reply, config),
      (refusal: unknown) => sendFrameworkProblem(refusal as Error, request, reply, config),
    );
  };
}

function sendFrameworkProblem(
  error: Error,
  request: FastifyRequest,
  reply: FastifyReply,
  config: { readonly errorsDocUrl: string },
): void {
  const appError =
    error instanceof AppError
      ? error
      : new AppError('invalid_request', 'The path is not a valid URL.', {
          errors: [{ field: 'path', code: 'invalid', message: 'path is not a valid URL' }],
        });
  reply
    .code(appError.status)
    .headers(appError.headers)
    .header('x-request-id', request.id)
    .header('cache-control', 'no-store')
    .header('x-content-type-options', 'nosniff')
    .type('application/json; charset=utf-8')
    .send(JSON.stringify(problemOf(appError, request.id, config.errorsDocUrl)));
}

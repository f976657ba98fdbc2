// Owns the service's own spans and the trace context it carries where OpenTelemetry's instrumentations
// cannot: through the job queue (a job row keeps the W3C traceparent of the work that queued it, and
// the worker continues that trace) and onto the spans of HTTP requests (the route's template, the
// practice and the client). Attributes name ids and kinds only, never patient data. While tracing is
// off (src/platform/observability/tracing.ts) every function here does nothing beyond calling through.
import {
  type Attributes,
  context,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';

import { statementShape } from './statement-shape.ts';

let on = false;

/** Called by the tracing start: from now on spans are made. */
export function tracingStarted(): void {
  on = true;
}

const tracer = () => trace.getTracer('practice-billing');

/** The span attributes naming a practice and an API client (custom, in the service's namespace). */
export const PRACTICE_ID = 'practice_billing.practice.id';
export const CLIENT_ID = 'practice_billing.client.id';

/** The active trace as a W3C traceparent header value, to store with queued work; null when none. */
export function currentTraceparent(): string | null {
  if (!on) return null;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ?? null;
}

export type SpanRole = 'internal' | 'client' | 'consumer';
const KINDS = { internal: SpanKind.INTERNAL, client: SpanKind.CLIENT, consumer: SpanKind.CONSUMER };

/**
 * Runs fn inside a span named `name` (a child of the active span, or of `traceparent` when one is
 * given: a job continuing the trace that queued it); an error thrown is recorded on the span.
 */
export function inSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span | undefined) => Promise<T>,
  options: { role?: SpanRole; traceparent?: string | null } = {},
): Promise<T> {
  if (!on) return fn(undefined);
  const parent =
    options.traceparent !== undefined
      ? options.traceparent
        ? propagation.extract(ROOT_CONTEXT, { traceparent: options.traceparent })
        : ROOT_CONTEXT
      : context.active();
  return tracer().startActiveSpan(
    name,
    { kind: KINDS[options.role ?? 'internal'], attributes },
    parent,
    async (span) => {
      try {
        return await fn(span);
      } catch (error) {
        span.recordException(error instanceof Error ? error : String(error));
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}

/** Adds attributes to the active span (the HTTP server span, a job's span), if any. */
export function annotateActiveSpan(attributes: Attributes): void {
  if (!on) return;
  trace.getActiveSpan()?.setAttributes(attributes);
}

/**
 * Names the active HTTP server span by its route's template (`POST /api/v1/invoices/:id/bill`) and
 * sets http.route, as the HTTP semantic conventions ask of a server that knows its routes.
 */
export function nameServerSpan(method: string, route: string): void {
  if (!on) return;
  const span = trace.getActiveSpan();
  if (!span) return;
  span.setAttribute('http.route', route);
  span.updateName(`${method} ${route}`);
}

/**
 * Runs one statement of the embedded database (which has no client library to instrument) inside a
 * client span shaped as the pg instrumentation's are, when a span is active to hold it.
 */
export function traceStatement<T>(sqlText: string, run: () => Promise<T>): Promise<T> {
  if (!on || !trace.getActiveSpan()) return run();
  const shape = statementShape(sqlText);
  return inSpan(
    `pglite.query:${shape.split(/\s+/, 1)[0]?.toUpperCase() ?? ''}`,
    { 'db.system.name': 'postgresql', 'db.query.text': shape },
    run,
    { role: 'client' },
  );
}

// A job remembers the trace of the work that queued it: trace_context holds the W3C traceparent header
// value (trace id, parent span id, flags: no data of the practice's) of the span that was active when
// the job was queued, and the worker continues that trace when it runs the job
// (src/platform/observability/spans.ts). Null when tracing is off or nothing was being traced.
// Forward-only.
import type { Kysely } from 'kysely';
import { runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(db, `ALTER TABLE jobs ADD COLUMN trace_context text;`);
}

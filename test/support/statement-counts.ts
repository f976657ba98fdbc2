// The service's own counts of what it sent to the database (src/platform/db/statement-counts.ts), as
// the difference since an earlier reading, or while one request was being answered: tests that hold
// a piece of work to a count.
import diagnostics from 'node:diagnostics_channel';
import type { IncomingMessage } from 'node:http';
import { type StatementCounts, statementCounts } from '../../src/platform/db/statement-counts.ts';

export function countsSince(before: StatementCounts): StatementCounts {
  const now = statementCounts();
  return {
    statements: now.statements - before.statements,
    roundTrips: now.roundTrips - before.roundTrips,
    transactions: now.transactions - before.transactions,
  };
}

/** The header that names a request whose counts countWhileAnswering keeps. */
export const COUNTED_REQUEST_HEADER = 'x-test-counted';

/**
 * Counts what this process sends to the database while it handles each request that carries
 * COUNTED_REQUEST_HEADER: from the request's arrival to the end of its answer (node's HTTP server
 * diagnostics channels), so that work done once the answer is out is not counted. Each request's
 * counts are kept under the header's value; stop() ends the counting. Only this process's own
 * service is seen (startService's), and anything else it sends meanwhile is counted too.
 */
export function countWhileAnswering(): {
  counts: Map<string, StatementCounts>;
  stop(): void;
} {
  const counts = new Map<string, StatementCounts>();
  const arrived = new WeakMap<object, StatementCounts>();
  const named = (request: IncomingMessage) => request.headers[COUNTED_REQUEST_HEADER] as string | undefined;
  const onStart = (message: unknown) => {
    const { request } = message as { request: IncomingMessage };
    if (named(request)) arrived.set(request, statementCounts());
  };
  const onFinish = (message: unknown) => {
    const { request } = message as { request: IncomingMessage };
    const before = arrived.get(request);
    if (before) counts.set(named(request)!, countsSince(before));
  };
  diagnostics.subscribe('http.server.request.start', onStart);
  diagnostics.subscribe('http.server.response.finish', onFinish);
  return {
    counts,
    stop() {
      diagnostics.unsubscribe('http.server.request.start', onStart);
      diagnostics.unsubscribe('http.server.response.finish', onFinish);
    },
  };
}

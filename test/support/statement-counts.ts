// The service's own counts of what it sent to the database (src/platform/db/statement-counts.ts), as
// the difference since an earlier reading: tests that hold a piece of work to a count.
import { type StatementCounts, statementCounts } from '../../src/platform/db/statement-counts.ts';

export function countsSince(before: StatementCounts): StatementCounts {
  const now = statementCounts();
  return {
    statements: now.statements - before.statements,
    roundTrips: now.roundTrips - before.roundTrips,
    transactions: now.transactions - before.transactions,
  };
}

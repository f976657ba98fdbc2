// Owns this process's count of what it sends to the database: statements (a message of several
// statements counts each; BEGIN, COMMIT and ROLLBACK are not statements here, they count as
// transactions and round trips), round trips (a message sent and its answer
// awaited; in the embedded database, a call into it) and transactions (counted when their BEGIN
// reaches the database: a transaction that ends before its first statement sends nothing and is not
// counted). The sessions count as they send (src/platform/db/postgres-session.ts,
// src/platform/db/pglite-session.ts: on the embedded database a round trip is one call into it with
// what goes out together, as PostgreSQL would have it); src/service-metrics.ts reports them. Always on:
// an integer add per send.
export interface StatementCounts {
  statements: number;
  roundTrips: number;
  transactions: number;
}

const counts: StatementCounts = { statements: 0, roundTrips: 0, transactions: 0 };

/** One round trip that carried `statements` statements. */
export function countRoundTrip(statements: number): void {
  counts.statements += statements;
  counts.roundTrips += 1;
}

/** A transaction whose BEGIN goes out now. */
export function countTransaction(): void {
  counts.transactions += 1;
}

/** The counts since the process started. */
export function statementCounts(): StatementCounts {
  return { ...counts };
}

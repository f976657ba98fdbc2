// Owns the change stamp's SQL on PostgreSQL, and each transaction's stamp: the one its frame took
// (TransactionPlans.stamps, src/platform/db/transaction.ts), as how to have it until it is had, or the
// one stampChange (src/platform/db/change-feed.ts) has had. The argument for the stamp is in
// docs/decisions/0061-change-feeds.md.

const stamps = new WeakMap<object, Date | (() => Promise<Date>)>();

export const STAMP_AT = "date_trunc('milliseconds', clock_timestamp()) AS at";

/**
 * The stamp, as one SELECT answering `at` beside `columns`: the materialised CTE is scanned before the
 * outer projection runs, so the transaction's id is handed out before the clock is read.
 */
export function stampSql(columns: readonly string[] = []): string {
  return `WITH stamp_xid AS MATERIALIZED (SELECT pg_current_xact_id() AS xid)
    SELECT ${[...columns, STAMP_AT].join(', ')} FROM stamp_xid`;
}

/** The transaction's frame took the stamp: `answer` gives it once the frame's answer has come. */
export function stampTakenByFrame(trx: object, answer: () => Promise<Date>): void {
  stamps.set(trx, answer);
}

/** The transaction's stamp, had once: the same Date for every change it stamps. */
export function keepStamp(trx: object, at: Date): void {
  stamps.set(trx, at);
}

/** The transaction's stamp when had, else how to have the one its frame took; undefined for neither. */
export function stampOf(trx: object): Date | (() => Promise<Date>) | undefined {
  return stamps.get(trx);
}

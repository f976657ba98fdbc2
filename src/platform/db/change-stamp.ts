// Owns the change stamp's SQL on PostgreSQL, and where a transaction whose frame took the stamp
// (TransactionPlans.stamps, src/platform/db/transaction.ts) leaves how to have it, for stampChange
// (src/platform/db/change-feed.ts). The argument for the stamp is in docs/decisions.md ("Change feeds").

const takenByFrame = new WeakMap<object, () => Promise<Date>>();

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
  takenByFrame.set(trx, answer);
}

/** How to have the stamp the transaction's frame took; undefined when it took none. */
export function stampOfFrame(trx: object): (() => Promise<Date>) | undefined {
  return takenByFrame.get(trx);
}

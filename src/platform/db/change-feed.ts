// Owns the order of change feeds (GET /invoices?updatedSince and any feed read the same way): the
// time a writing transaction stamps on what it changes, and the high-water mark H below which a
// reader may read without ever skipping a change that commits later. No lock is shared between
// writers. The argument is in docs/decisions.md ("Change feeds").
//
// PostgreSQL: a writer takes its transaction id first, then the clock, so a stamp s means the
// writer's id was handed out before s. A sample (t, n) is a clock reading t followed by the first
// transaction id n not yet handed out; every writer stamped before t has an id below n. Once a
// reader's snapshot xmin is at least n, every such writer has ended and, if it committed, is
// visible, so t is a safe H. PGlite runs one transaction at a time, so H is the reader's start.
import { PGliteAdapter, sql } from 'kysely';
import type { Trx } from './transaction.ts';

const stamps = new WeakMap<Trx, Date>();

function isPglite(trx: Trx): boolean {
  return trx.getExecutor().adapter instanceof PGliteAdapter;
}

/**
 * The change time this transaction stamps on every row it changes (the same for all of them), in
 * whole milliseconds as the API shows it. On PostgreSQL it first takes the transaction's id.
 */
export async function stampChange(trx: Trx): Promise<Date> {
  const known = stamps.get(trx);
  if (known) return known;
  // The materialised CTE is scanned before the outer projection runs, so the id is handed out before
  // the clock is read.
  const query = isPglite(trx)
    ? sql<{ at: Date }>`SELECT date_trunc('milliseconds', clock_timestamp()) AS at`
    : sql<{ at: Date }>`
        WITH x AS MATERIALIZED (SELECT pg_current_xact_id() AS xid)
        SELECT x.xid::text AS xid, date_trunc('milliseconds', clock_timestamp()) AS at FROM x`;
  const at = new Date((await query.execute(trx)).rows[0]!.at);
  stamps.set(trx, at);
  return at;
}

const PRUNE_ONE_IN = 64;
const RETRIES_WITHOUT_SAMPLE = 20;
const RETRY_WAIT_MS = 5;

/**
 * The high-water mark H: a reader in this transaction reads only changes stamped strictly before H,
 * and every change that commits after this call is stamped at or after H. Call it before reading.
 */
export async function safeHighWaterMark(trx: Trx): Promise<Date> {
  if (isPglite(trx)) {
    const { rows } = await sql<{ h: Date }>`SELECT date_trunc('milliseconds', now()) AS h`.execute(trx);
    return new Date(rows[0]!.h);
  }
  // The clock is read in a statement of its own: the next statement's snapshot is taken after it.
  const clock = await sql<{ t: Date }>`SELECT date_trunc('milliseconds', clock_timestamp()) AS t`.execute(
    trx,
  );
  const t = new Date(clock.rows[0]!.t);
  // The sample (t, xmax) is kept for later readers; this one reads t itself when nothing was running at
  // its snapshot, else the newest sample all of whose transactions have ended.
  const { rows } = await sql<{ idle: boolean; h: Date | null }>`
    WITH s AS MATERIALIZED (SELECT pg_current_snapshot() AS snap),
    kept AS (
      INSERT INTO change_feed_samples (sampled_at, next_xid) SELECT ${t}, pg_snapshot_xmax(s.snap) FROM s
    )
    SELECT pg_snapshot_xmin(s.snap) = pg_snapshot_xmax(s.snap) AS idle,
      (SELECT max(c.sampled_at) FROM change_feed_samples c WHERE c.next_xid <= pg_snapshot_xmin(s.snap)) AS h
    FROM s`.execute(trx);
  const { idle } = rows[0]!;
  let h = rows[0]!.h;
  if (idle) h = t;
  for (let attempt = 0; h === null && attempt < RETRIES_WITHOUT_SAMPLE; attempt++) {
    // No usable sample yet (a fresh database under load): the one just kept becomes usable as soon
    // as the transactions running at its snapshot end, which for request transactions is soon.
    await new Promise((resolve) => setTimeout(resolve, RETRY_WAIT_MS));
    const again = await sql<{ h: Date | null }>`
      SELECT max(sampled_at) AS h FROM change_feed_samples
      WHERE next_xid <= pg_snapshot_xmin(pg_current_snapshot())`.execute(trx);
    h = again.rows[0]!.h;
  }
  if (h !== null && Math.random() * PRUNE_ONE_IN < 1) {
    // Samples older than a usable one are never chosen again (xmin only grows); a margin keeps the
    // table's newest usable rows whatever other readers chose.
    await sql`
      DELETE FROM change_feed_samples WHERE ctid IN (
        SELECT ctid FROM change_feed_samples WHERE sampled_at < ${h}::timestamptz - interval '10 seconds'
        LIMIT 1000 FOR UPDATE SKIP LOCKED)`.execute(trx);
  }
  // Every stamp is later than the epoch, so the epoch as H reads nothing and skips nothing.
  return h === null ? new Date(0) : new Date(h);
}

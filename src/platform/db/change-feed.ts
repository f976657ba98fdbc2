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
import { sentWithCommit } from './sent-with-commit.ts';
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

const WAIT_STEP_MS = 2;
const WAIT_LIMIT_MS = 1000;

// A transaction of another database of the cluster cannot stamp this one's rows: its backend says so
// in pg_stat_activity (a backend's transaction id belongs to its database for its whole life).
// Anything else still in progress, whoever runs it, holds the sample back.
const STILL_BLOCKING = sql`
  x IS DISTINCT FROM pg_current_xact_id_if_assigned() AND pg_xact_status(x) = 'in progress' AND NOT EXISTS (
    SELECT 1 FROM pg_stat_activity a
    WHERE a.backend_xid = xid(x)
      AND a.datid <> (SELECT d.oid FROM pg_database d WHERE d.datname = current_database()))`;

/**
 * The high-water mark H: a reader in this transaction reads only changes stamped strictly before H,
 * and every change that commits after this call is stamped at or after H. Call it before reading.
 */
export async function safeHighWaterMark(trx: Trx): Promise<Date> {
  if (isPglite(trx)) {
    const { rows } = await sql<{ h: Date }>`SELECT date_trunc('milliseconds', now()) AS h`.execute(trx);
    return new Date(rows[0]!.h);
  }
  // The clock is read in a statement of its own: the next statement's snapshot is taken after it, so
  // every transaction stamped before t is either ended at that snapshot or listed in it as running.
  const clock = await sql<{ t: Date }>`SELECT date_trunc('milliseconds', clock_timestamp()) AS t`.execute(
    trx,
  );
  const t = new Date(clock.rows[0]!.t);
  const { rows } = await sql<{ blockers: string[] }>`
    WITH s AS MATERIALIZED (SELECT pg_current_snapshot() AS snap)
    SELECT ARRAY(SELECT x::text FROM pg_snapshot_xip(s.snap) AS x WHERE ${STILL_BLOCKING}) AS blockers
    FROM s`.execute(trx);
  let blockers = rows[0]!.blockers;
  // Request transactions are short: wait for those that were running at the sample to end.
  for (let waited = 0; blockers.length > 0 && waited < WAIT_LIMIT_MS; waited += WAIT_STEP_MS) {
    await new Promise((resolve) => setTimeout(resolve, WAIT_STEP_MS));
    const again = await sql<{ blockers: string[] }>`
      SELECT ARRAY(SELECT x::text FROM unnest(${blockers}::xid8[]) AS x WHERE ${STILL_BLOCKING}) AS blockers`.execute(
      trx,
    );
    blockers = again.rows[0]!.blockers;
  }
  if (blockers.length === 0) return t;
  // Otherwise (a long transaction is open) the newest stored sample below the oldest one still
  // blocking: every id below it was either ended at the snapshot (not listed in it), or listed and
  // since ended, or runs in another database.
  const stored = await sql<{ h: Date | null }>`
    SELECT max(sampled_at) AS h FROM change_feed_samples
    WHERE next_xid <= (SELECT min(x) FROM unnest(${blockers}::xid8[]) AS x)`.execute(trx);
  const h = stored.rows[0]!.h;
  // Every stamp is later than the epoch, so the epoch as H reads nothing and skips nothing.
  return h === null ? new Date(0) : new Date(h);
}

/**
 * Stores a sample (t, n) for readers that find a long transaction open (PostgreSQL; the worker calls
 * it every second), and drops the samples older than the newest usable one, which no reader will
 * choose again (xmin only grows). Readers never write samples: a reader holding a transaction id
 * would be a transaction other readers wait for.
 */
export async function recordChangeFeedSample(trx: Trx): Promise<void> {
  if (isPglite(trx)) return;
  const clock = await sql<{ t: Date }>`SELECT date_trunc('milliseconds', clock_timestamp()) AS t`.execute(
    trx,
  );
  // A statement of its own, so its snapshot is taken after t.
  await sql`
    INSERT INTO change_feed_samples (sampled_at, next_xid)
    SELECT ${new Date(clock.rows[0]!.t)}, pg_snapshot_xmax(pg_current_snapshot())`.execute(trx);
  await sql`
    DELETE FROM change_feed_samples WHERE sampled_at < (
      SELECT max(sampled_at) FROM change_feed_samples
      WHERE next_xid <= pg_snapshot_xmin(pg_current_snapshot())) ${sentWithCommit}`.execute(trx);
}

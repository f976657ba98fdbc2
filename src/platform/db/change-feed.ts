// Owns the order of change feeds (GET /invoices?updatedSince and any feed read the same way): the
// time a writing transaction stamps on what it changes, and the high-water mark H below which a
// reader may read without ever skipping a change that commits later. No lock is shared between
// writers. The argument is in docs/decisions/0061-change-feeds.md.
//
// PostgreSQL: a writer takes its transaction id first, then the clock, so a writer stamped at s held
// its id from before s until it ended. A reader reads the clock t, then every transaction still
// holding an id with the time it started: a writer stamped before t is either among them, and
// stamped no earlier than its start, or ended, and then visible to the reader's next statement. So
// H = min(t, oldest start) is safe. PGlite runs one transaction at a time, so H is the reader's start.
import { type Kysely, PGliteAdapter, sql } from 'kysely';
import { keepStamp, STAMP_AT, stampOf, stampSql } from './change-stamp.ts';
import type { Tables } from './tables.ts';
import type { Trx } from './transaction.ts';
import { writeUnanswered } from './unanswered-writes.ts';

function isPglite(trx: Trx): boolean {
  return trx.getExecutor().adapter instanceof PGliteAdapter;
}

/**
 * The change time this transaction stamps on every row it changes (the same for all of them), in
 * whole milliseconds as the API shows it. On PostgreSQL it first takes the transaction's id: in the
 * transaction's frame when it was begun to stamp (src/platform/db/change-stamp.ts), else in a
 * statement of its own here.
 */
export async function stampChange(trx: Trx): Promise<Date> {
  const known = stampOf(trx);
  if (known instanceof Date) return known;
  const at = known ? await known() : await stampOnItsOwn(trx);
  keepStamp(trx, at);
  return at;
}

async function stampOnItsOwn(trx: Trx): Promise<Date> {
  const query = sql.raw<{ at: Date }>(isPglite(trx) ? `SELECT ${STAMP_AT}` : stampSql());
  return new Date((await query.execute(trx)).rows[0]!.at);
}

/** How long a reader waits, at most, for transactions that began before it to end. */
const WAIT_LIMIT_MS = 100;
const WAIT_STEP_MS = 2;

/**
 * The high-water mark H: a reader in this transaction reads only changes stamped strictly before H,
 * and every change that commits after this call is stamped at or after H. Call it before reading. H is
 * the clock, held back to the start of the oldest transaction still running with an id (migration
 * 0013, change_feed_horizon). Request and job transactions end within milliseconds, so a reader held
 * back asks again for up to WAIT_LIMIT_MS, until nothing that began before its first reading runs;
 * each answer is safe from the moment it is given, so the latest is kept.
 */
export async function safeHighWaterMark(trx: Trx): Promise<Date> {
  if (isPglite(trx)) {
    const { rows } = await sql<{ h: Date }>`SELECT date_trunc('milliseconds', now()) AS h`.execute(trx);
    return new Date(rows[0]!.h);
  }
  const horizon = async () =>
    (await sql<{ clock: Date; mark: Date }>`SELECT * FROM change_feed_horizon()`.execute(trx)).rows[0]!;
  const first = await horizon();
  const clock = new Date(first.clock).getTime();
  let mark = new Date(first.mark).getTime();
  const deadline = performance.now() + WAIT_LIMIT_MS;
  while (mark < clock && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, WAIT_STEP_MS));
    mark = Math.max(mark, new Date((await horizon()).mark).getTime());
  }
  return new Date(mark);
}

/**
 * Stores a sample (t, n) for readers that find a transaction running whose start they cannot read
 * (PostgreSQL; the worker calls it every second): the clock t, then n, the id this transaction takes
 * in its next statement, so every transaction stamped before t has an id below n. Drops the samples
 * older than the newest one whose n is at or below the oldest running id, which no reader will choose
 * again (xmin only grows). Readers never write samples: a reader holding a transaction id would hold
 * back every other reader's mark.
 */
export async function recordChangeFeedSample(trx: Trx): Promise<void> {
  if (isPglite(trx)) return;
  const clock = await sql<{ t: Date; held: string | null }>`
    SELECT date_trunc('milliseconds', clock_timestamp()) AS t, pg_current_xact_id_if_assigned()::text AS held`.execute(
    trx,
  );
  if (clock.rows[0]!.held !== null)
    throw new Error('a change-feed sample needs a transaction with no id yet');
  // A statement of its own, so the id is handed out after t.
  await sql`
    INSERT INTO change_feed_samples (sampled_at, next_xid)
    SELECT ${new Date(clock.rows[0]!.t)}, pg_current_xact_id()`.execute(trx);
  await writeUnanswered(
    trx,
    sql`
    DELETE FROM change_feed_samples WHERE sampled_at < (
      SELECT max(sampled_at) FROM change_feed_samples
      WHERE next_xid <= pg_snapshot_xmin(pg_current_snapshot()))`,
  );
}

/**
 * Whether change_feed_horizon() can read the start of this login's transactions (PostgreSQL): its
 * owner, the migrating role, needs the privileges of the service's login, or pg_read_all_stats.
 * Without them every mark comes from the stored samples, a second or more behind.
 */
export async function changeFeedReadsThisLogin(db: Kysely<Tables>): Promise<boolean> {
  const { rows } = await sql<{ readable: boolean }>`
    SELECT pg_has_role(p.proowner, session_user, 'USAGE') OR pg_has_role(p.proowner, 'pg_read_all_stats', 'USAGE')
      AS readable
    FROM pg_proc p WHERE p.proname = 'change_feed_horizon'`.execute(db);
  return rows[0]?.readable ?? false;
}

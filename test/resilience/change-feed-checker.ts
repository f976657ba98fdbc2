// A randomized checker of the change feed's promise (src/platform/db/change-feed.ts): a follower that
// pages a feed with the recipe never skips a change that commits. On a fresh PostgreSQL database it
// runs CHANGE_FEED_TRANSACTIONS (5000) writer transactions as the app role, in rounds of two to
// CHANGE_FEED_WRITERS (12) started together, each one: sometimes taking its transaction id early (an
// earlier statement), then stamping with stampChange (half of them with the stamp their transaction's
// frame took, TransactionPlans.stamps), then recording one or two events with that stamp, then
// committing, or rolling back (about 1 in 5), with random pauses (often none) between the steps; a few
// stay open for more than a second, so that readers give up waiting for them and fall back to the
// stored samples, which a sampler records (as the worker does, as the operator role) every 2 to
// 2 + CHANGE_FEED_SAMPLE_MS (40) ms all the while.
// Meanwhile CHANGE_FEED_FOLLOWERS (4) followers page the events as the app role, half of them as
// GET /events?after= does (listEventRows from src/events/store.ts, after the last (stamp, seq)
// listed), half as the invoices' updatedSince recipe does (src/invoices/store.ts: each run lists
// stamps after the last one the previous run listed, paging by (stamp, id), below
// safeHighWaterMark). Once every writer has ended, each follower runs once more; then every committed
// event must have been listed by every follower exactly once, in feed order, and no rolled-back one.
// The choices are drawn from CHANGE_FEED_SEED (printed; random when unset), so a run's plan can be
// replayed; the interleaving itself still depends on timing. PostgreSQL only (DATABASE_URL): on
// PGlite one transaction runs at a time. Run by `npm run test:resilience`; a short run of it is
// test/platform-db-change-feed-checker.test.ts.
import assert from 'node:assert/strict';
import { randomInt } from 'node:crypto';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { listEventRows } from '../../src/events/store.ts';
import { recordChangeFeedSample, safeHighWaterMark, stampChange } from '../../src/platform/db/change-feed.ts';
import { type Database, openPostgres } from '../../src/platform/db/database.ts';
import { asOperator, inPractice, type Trx } from '../../src/platform/db/transaction.ts';
import { postgresDatabase } from '../harness.ts';

export interface CheckerOptions {
  transactions: number;
  writers: number;
  followers: number;
  seed: number;
  /** The share of writer transactions held open for over a second (readers then use the samples). */
  longShare: number;
  /** The migrated database to run on (default: a fresh one on DATABASE_URL's server). */
  database?: () => Promise<{ url: string; drop: () => Promise<void> }>;
}

export interface FollowerReport {
  kind: 'after' | 'updatedSince';
  pages: number;
  listed: number;
  missed: string[];
  rolledBackListed: string[];
  listedTwice: string[];
  outOfOrder: number;
  /** The first two consecutive listings out of feed order, if any. */
  firstOutOfOrder: string | undefined;
}

export interface CheckerReport {
  seed: number;
  transactions: number;
  committed: number;
  rolledBack: number;
  earlyIds: number;
  /** Writers whose frame took their stamp (TransactionPlans.stamps). */
  framedStamps: number;
  long: number;
  samples: number;
  committedEvents: number;
  rounds: number;
  followers: FollowerReport[];
  missed: number;
  seconds: number;
}

/** The seed of this run: CHANGE_FEED_SEED, else a random one. */
export function checkerSeed(): number {
  const given = process.env.CHANGE_FEED_SEED;
  return given ? Number(given) : randomInt(2 ** 31);
}

/** mulberry32: a small seeded generator of numbers in [0, 1). */
function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A pause of none (often), a few milliseconds, or more. */
function pauseMs(random: () => number): number {
  const r = random();
  if (r < 0.4) return 0;
  if (r < 0.8) return Math.floor(random() * 4);
  if (r < 0.97) return 4 + Math.floor(random() * 12);
  return 16 + Math.floor(random() * 45);
}

async function pause(ms: number): Promise<void> {
  if (ms > 0) await sleep(ms);
}

const SAMPLE_MS = Number(process.env.CHANGE_FEED_SAMPLE_MS ?? 40);

class RollBack extends Error {}

interface Listed {
  id: string;
  stamp: Date;
  /** The feed's tie-break after the stamp: seq (events) or id (updatedSince). */
  key: string;
}

/** Compares feed positions: by stamp, then by the tie-break (seq numerically, ids as text). */
function before(a: Listed, b: Listed, numeric: boolean): boolean {
  if (a.stamp.getTime() !== b.stamp.getTime()) return a.stamp < b.stamp;
  return numeric ? BigInt(a.key) < BigInt(b.key) : a.key < b.key;
}

/** One page of the updatedSince recipe over the events, as listInvoiceRows reads invoices. */
async function updatedSincePage(
  trx: Trx,
  practiceId: string,
  since: Date | undefined,
  after: Listed | undefined,
  limit: number,
): Promise<Listed[]> {
  const h = await safeHighWaterMark(trx);
  let query = trx
    .selectFrom('events')
    .select(['id', 'stamp'])
    .where('practice_id', '=', practiceId)
    .where('stamp', '<', h)
    .orderBy('stamp')
    .orderBy('id')
    .limit(limit + 1);
  if (since) query = query.where('stamp', '>', since);
  if (after) {
    const at = after.stamp;
    query = query.where((eb) =>
      eb.or([eb('stamp', '>', at), eb.and([eb('stamp', '=', at), eb('id', '>', after.id)])]),
    );
  }
  const rows = await query.execute();
  return rows.map((r) => ({ id: r.id, stamp: new Date(r.stamp), key: r.id }));
}

class Follower {
  readonly listed: Listed[] = [];
  pages = 0;
  /** Where the next run starts: the last event listed (after), or its stamp (updatedSince). */
  private last: Listed | undefined;
  private readonly random: () => number;

  readonly kind: 'after' | 'updatedSince';
  private readonly db: Database;
  private readonly practiceId: string;

  constructor(kind: 'after' | 'updatedSince', db: Database, practiceId: string, seed: number) {
    this.kind = kind;
    this.db = db;
    this.practiceId = practiceId;
    this.random = generator(seed);
  }

  /** One run of the recipe: pages until a page says there is no more. */
  async run(): Promise<void> {
    const limit = 1 + Math.floor(this.random() * 12);
    let cursor: Listed | undefined;
    const since = this.last?.stamp;
    for (;;) {
      this.pages++;
      let page: Listed[];
      if (this.kind === 'after') {
        const from = cursor ?? this.last;
        const rows = await inPractice(this.db, this.practiceId, (trx) =>
          listEventRows(
            trx,
            this.practiceId,
            { retainedSince: new Date(0) },
            from ? { stamp: from.stamp, seq: from.key } : undefined,
            limit,
          ),
        );
        page = rows.map((r) => ({ id: r.id, stamp: r.stamp, key: r.seq }));
      } else {
        page = await inPractice(this.db, this.practiceId, (trx) =>
          updatedSincePage(trx, this.practiceId, since, cursor, limit),
        );
      }
      const more = page.length > limit;
      for (const item of page.slice(0, limit)) {
        this.listed.push(item);
        cursor = item;
      }
      if (!more) break;
      await pause(pauseMs(this.random) >> 2);
    }
    if (cursor) this.last = cursor;
  }

  /** A pause between runs. */
  async rest(): Promise<void> {
    await pause(pauseMs(this.random));
  }

  report(committed: Set<string>, rolledBack: Set<string>): FollowerReport {
    const seen = new Map<string, number>();
    let outOfOrder = 0;
    let firstOutOfOrder: string | undefined;
    const show = (l: Listed) => `${l.id} (${l.stamp.toISOString()}, ${l.key})`;
    this.listed.forEach((item, n) => {
      seen.set(item.id, (seen.get(item.id) ?? 0) + 1);
      const previous = this.listed[n - 1];
      if (previous && !before(previous, item, this.kind === 'after')) {
        outOfOrder++;
        firstOutOfOrder ??= `${show(previous)} then ${show(item)}`;
      }
    });
    return {
      kind: this.kind,
      pages: this.pages,
      listed: this.listed.length,
      missed: [...committed].filter((id) => !seen.has(id)),
      rolledBackListed: [...seen.keys()].filter((id) => rolledBack.has(id) || !committed.has(id)),
      listedTwice: [...seen].filter(([, count]) => count > 1).map(([id]) => id),
      outOfOrder,
      firstOutOfOrder,
    };
  }
}

export async function runChangeFeedChecker(options: CheckerOptions): Promise<CheckerReport> {
  const started = performance.now();
  const database = await (options.database ?? postgresDatabase)();
  const writersDb = openPostgres({
    url: database.url,
    poolSize: options.writers,
    statementTimeoutMs: 30_000,
  });
  const readersDb = openPostgres({
    url: database.url,
    poolSize: options.followers + 1,
    statementTimeoutMs: 30_000,
  });
  try {
    const practiceId = `prc_checker_${options.seed}`;
    await sql`INSERT INTO practices (id, name) VALUES (${practiceId}, 'Change feed checker')`.execute(
      writersDb.kysely,
    );
    const committed = new Set<string>();
    const rolledBack = new Set<string>();
    let committedTransactions = 0;
    let rolledBackTransactions = 0;
    let earlyIds = 0;
    let framedStamps = 0;
    let long = 0;
    let samples = 0;
    let rounds = 0;

    /** Writer transaction n: its plan is drawn from the seed and n alone, whichever connection runs it. */
    async function writerTransaction(n: number): Promise<void> {
      const random = generator((options.seed ^ Math.imul(n + 1, 0x9e3779b1)) >>> 0);
      const early = random() < 0.5;
      const pauses = [pauseMs(random), pauseMs(random), pauseMs(random)] as const;
      const events = random() < 0.2 ? 2 : 1;
      const rollBack = random() < 0.2;
      const hold = random() < options.longShare ? 1100 + Math.floor(random() * 400) : 0;
      // Drawn last, so that a seed's other choices stay as they were before writers could be framed.
      const framed = random() < 0.5;
      // Of one length, so that the database's collation orders them as JavaScript does.
      const ids = Array.from({ length: events }, (_, k) => `evt_chk_${String(n).padStart(7, '0')}_${k}`);
      if (early) earlyIds++;
      if (hold) long++;
      if (framed) framedStamps++;
      try {
        await inPractice(
          writersDb,
          practiceId,
          async (trx) => {
            // An earlier statement that takes the transaction id, as an earlier write would.
            if (early) await sql`SELECT pg_current_xact_id()`.execute(trx);
            await pause(pauses[0]);
            // Framed: the stamp the transaction's frame took with its first statement (or on its own).
            const at = await stampChange(trx);
            await pause(pauses[1]);
            await trx
              .insertInto('events')
              .values(
                ids.map((id) => ({
                  practice_id: practiceId,
                  id,
                  type: 'invoice.issued',
                  object_type: 'invoice',
                  object_id: `inv_chk_${n % 97}`,
                  occurred_at: at,
                  stamp: at,
                })),
              )
              .execute();
            await pause(pauses[2] + hold);
            if (rollBack) throw new RollBack();
          },
          { stamps: framed },
        );
        for (const id of ids) committed.add(id);
        committedTransactions++;
      } catch (error) {
        if (!(error instanceof RollBack)) throw error;
        for (const id of ids) rolledBack.add(id);
        rolledBackTransactions++;
      }
    }

    // The writers run in rounds of a few transactions started together (at most options.writers, often
    // two or three, so that one can hold the newest transaction id while older ones commit), each round
    // after the last has ended; the followers and the sampler run throughout.
    let writing = true;
    const writers = (async () => {
      const random = generator((options.seed ^ 0x3c6ef372) >>> 0);
      let next = 0;
      while (next < options.transactions) {
        const r = random();
        const size =
          r < 0.5 ? 2 : r < 0.8 ? 3 + Math.floor(random() * 2) : 2 + Math.floor(random() * options.writers);
        const round = Array.from(
          { length: Math.min(size, options.writers, options.transactions - next) },
          () => ({
            n: next++,
            delay: Math.floor(random() * 4),
          }),
        );
        await Promise.all(
          round.map(async ({ n, delay }) => {
            await pause(delay);
            await writerTransaction(n);
          }),
        );
        rounds++;
      }
    })().finally(() => {
      writing = false;
    });
    const samplerRandom = generator(options.seed ^ 0x5a5a5a5a);
    const sampler = (async () => {
      while (writing) {
        await asOperator(readersDb, (trx) => recordChangeFeedSample(trx));
        samples++;
        await sleep(2 + Math.floor(samplerRandom() * SAMPLE_MS));
      }
    })();
    const followers = Array.from(
      { length: options.followers },
      (_, k) =>
        new Follower(k % 2 === 0 ? 'after' : 'updatedSince', readersDb, practiceId, options.seed + 1 + k),
    );
    const following = followers.map(async (follower) => {
      while (writing) {
        await follower.run();
        await follower.rest();
      }
    });
    await writers;
    await Promise.all([sampler, ...following]);
    // Every writer has ended: one more run each, a few milliseconds on, so the clock is past every stamp.
    await sleep(5);
    for (const follower of followers) await follower.run();

    const reports = followers.map((f) => f.report(committed, rolledBack));
    return {
      seed: options.seed,
      transactions: options.transactions,
      committed: committedTransactions,
      rolledBack: rolledBackTransactions,
      earlyIds,
      framedStamps,
      long,
      samples,
      committedEvents: committed.size,
      rounds,
      followers: reports,
      missed: reports.reduce((sum, r) => sum + r.missed.length, 0),
      seconds: (performance.now() - started) / 1000,
    };
  } finally {
    await writersDb.close();
    await readersDb.close();
    await database.drop();
  }
}

/** One line for the log: what was tried and what was missed. */
export function summary(report: CheckerReport): string {
  const byFollower = report.followers
    .map(
      (f, k) => `#${k} ${f.kind}: ${f.missed.length} missed of ${report.committedEvents} in ${f.pages} pages`,
    )
    .join('; ');
  return (
    `change-feed checker (CHANGE_FEED_SEED=${report.seed}): ${report.transactions} writer transactions in ${report.rounds} rounds ` +
    `(${report.committed} committed, ${report.rolledBack} rolled back, ${report.earlyIds} took their id early, ${report.framedStamps} stamped by their frame, ` +
    `${report.long} held over a second), ${report.samples} samples, ${report.followers.length} followers, ` +
    `${report.missed} missed [${byFollower}] in ${report.seconds.toFixed(1)} s`
  );
}

/** Asserts the promise: every committed event listed once by every follower, in order, nothing else. */
export function assertNothingMissed(report: CheckerReport): void {
  const problems = report.followers.flatMap((f, k) => [
    ...(f.missed.length > 0
      ? [`follower #${k} (${f.kind}) missed ${f.missed.length}: ${f.missed.slice(0, 5)}`]
      : []),
    ...(f.rolledBackListed.length > 0
      ? [`follower #${k} listed ${f.rolledBackListed.length} rolled back: ${f.rolledBackListed.slice(0, 5)}`]
      : []),
    ...(f.listedTwice.length > 0 ? [`follower #${k} listed ${f.listedTwice.length} twice`] : []),
    ...(f.outOfOrder > 0
      ? [`follower #${k} listed ${f.outOfOrder} out of feed order, first ${f.firstOutOfOrder}`]
      : []),
  ]);
  assert.deepEqual(problems, [], `${summary(report)} (replay with CHANGE_FEED_SEED=${report.seed})`);
}

if (import.meta.main) {
  const transactions = Number(process.env.CHANGE_FEED_TRANSACTIONS ?? 5000);
  describe('change feed checker (postgres)', {
    skip: !process.env.DATABASE_URL && 'needs DATABASE_URL',
  }, () => {
    test(`${transactions} writer transactions: every follower lists every committed change, once`, {
      timeout: 30 * 60_000,
    }, async () => {
      const seed = checkerSeed();
      console.log(`change-feed checker: CHANGE_FEED_SEED=${seed}`);
      const report = await runChangeFeedChecker({
        transactions,
        writers: Number(process.env.CHANGE_FEED_WRITERS ?? 12),
        followers: Number(process.env.CHANGE_FEED_FOLLOWERS ?? 4),
        seed,
        longShare: 0.002,
      });
      console.log(summary(report));
      assertNothingMissed(report);
    });
  });
}

// The change feed's mark when a running transaction's start cannot be read (PostgreSQL): H falls back to
// the newest stored sample whose transaction id lies below every such transaction. A backend with
// track_activities off reports no start (its state reads 'disabled'), so the open writer here turns
// it off for itself.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import {
  changeFeedReadsThisLogin,
  recordChangeFeedSample,
  safeHighWaterMark,
  stampChange,
} from '../src/platform/db/change-feed.ts';
import { openPostgres } from '../src/platform/db/database.ts';
import { backends, startService, type TestService } from './harness.ts';

for (const backend of backends().filter((b) => b === 'postgres')) {
  describe(`change feed mark from stored samples (${backend})`, () => {
    let svc: TestService;
    before(async () => {
      svc = await startService(backend);
    });
    after(async () => {
      await svc.close();
    });

    test('a writer whose start is unreadable holds the mark at the last sample taken before its id', async () => {
      const db = openPostgres({ url: svc.databaseUrl!, poolSize: 3, statementTimeoutMs: 15_000 });
      const mark = () => db.kysely.transaction().execute((trx) => safeHighWaterMark(trx));
      const sampleAt = async () => {
        await db.kysely.transaction().execute((trx) => recordChangeFeedSample(trx));
        const { rows } = await sql<{
          at: Date;
        }>`SELECT max(sampled_at) AS at FROM change_feed_samples`.execute(db.kysely);
        return new Date(rows[0]!.at);
      };
      let endLong = () => {};
      const longMayEnd = new Promise<void>((resolve) => {
        endLong = resolve;
      });
      let long: Promise<void> = Promise.resolve();
      try {
        const before = await sampleAt();
        let begun = () => {};
        const longBegun = new Promise<void>((resolve) => {
          begun = resolve;
        });
        long = db.kysely.transaction().execute(async (trx) => {
          await sql`SET LOCAL track_activities = off`.execute(trx);
          await stampChange(trx);
          begun();
          await longMayEnd;
        });
        await longBegun;
        const afterLongBegan = await sampleAt();
        assert.ok(afterLongBegan > before, 'the second sample is later');
        assert.deepEqual(
          await mark(),
          before,
          'the mark is the sample taken before the open transaction took its id',
        );
        endLong();
        await long;
        const settled = await mark();
        assert.ok(settled >= afterLongBegan, 'once it ends, nothing holds the mark back');
      } finally {
        endLong();
        await long.catch(() => {});
        await db.close();
      }
    });

    test('a reader outside READ COMMITTED is refused: its list could miss what ended before its mark', async () => {
      const db = openPostgres({ url: svc.databaseUrl!, poolSize: 1, statementTimeoutMs: 15_000 });
      try {
        await assert.rejects(
          db.kysely
            .transaction()
            .setIsolationLevel('repeatable read')
            .execute((trx) => safeHighWaterMark(trx)),
          /needs READ COMMITTED/,
        );
        assert.ok(await changeFeedReadsThisLogin(db.kysely), 'the migrating role reads this login');
      } finally {
        await db.close();
      }
    });
  });
}

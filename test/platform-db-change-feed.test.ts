// The change feed under writers that commit out of order, on PostgreSQL with two real connections (on
// PGlite one process runs one transaction at a time, so commits cannot cross): a slow transaction
// stamps first and commits last, a fast one stamps after it and commits first. A reader following
// the reconciliation recipe must see both changes, and must not see the fast one while the slow
// one, stamped earlier, could still commit.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { recordChangeFeedSample, stampChange } from '../src/platform/db/change-feed.ts';
import { openPostgres } from '../src/platform/db/database.ts';
import { type Api, allPages, billedInvoice, billingPractice, type Json } from './billing-fixtures.ts';
import { backends, startService, type TestService } from './harness.ts';

const EPOCH = '2000-01-01T00:00:00Z';

for (const backend of backends().filter((b) => b === 'postgres')) {
  describe(`change feed with writers committing out of order (${backend})`, () => {
    let svc: TestService;
    before(async () => {
      svc = await startService(backend);
    });
    after(async () => {
      await svc.close();
    });

    /** One run of the recipe from `since`: every page, and the updatedAt to start the next run from. */
    async function run(api: Api, since: string): Promise<{ items: Json[]; next: string }> {
      const items = await allPages(api, `/invoices?limit=1&updatedSince=${encodeURIComponent(since)}`);
      return { items, next: items.at(-1)?.updatedAt ?? since };
    }

    test('a reader sees a slow and a fast writer, the fast one not before the slow one is safe', async () => {
      const practice = await billingPractice(svc);
      const slowId = (await billedInvoice(svc, practice)).id as string;
      const fastId = (await billedInvoice(svc, practice)).id as string;
      const first = await run(practice.api, EPOCH);
      assert.deepEqual(first.items.map((i) => i.id).sort(), [slowId, fastId].sort());

      // Writers outside the service, on their own connections, stamping as every invoice write does.
      const writers = openPostgres({ url: svc.databaseUrl!, poolSize: 2, statementTimeoutMs: 15_000 });
      const write = (trx: Parameters<typeof stampChange>[0], id: string, name: string, at: Date) =>
        sql`UPDATE invoices SET recipient_name = ${name}, updated_at = ${at} WHERE id = ${id}`.execute(trx);
      let commitSlow = () => {};
      const slowMayCommit = new Promise<void>((resolve) => {
        commitSlow = resolve;
      });
      let slowStamped = (_at: Date) => {};
      const slowStamp = new Promise<Date>((resolve) => {
        slowStamped = resolve;
      });
      const slow = writers.kysely.transaction().execute(async (trx) => {
        const at = await stampChange(trx);
        await write(trx, slowId, 'Slow Writer', at);
        slowStamped(at);
        await slowMayCommit;
      });
      try {
        const slowAt = await slowStamp;
        await sleep(5);
        const fastAt = await writers.kysely.transaction().execute(async (trx) => {
          const at = await stampChange(trx);
          await write(trx, fastId, 'Fast Writer', at);
          return at;
        });
        assert.ok(fastAt > slowAt, 'the fast writer stamps after the slow one');
        const fastNow = (await practice.api('GET', `/invoices/${fastId}`)).body;
        assert.equal(fastNow.recipientName, 'Fast Writer', 'the fast change is committed and readable');

        // While the slow writer is open, a feed run must not move past its stamp.
        const during = await run(practice.api, first.next);
        assert.deepEqual(
          during.items.map((i) => i.id),
          [],
          'nothing stamped after the open slow writer is listed',
        );

        commitSlow();
        await slow;
        const afterwards = await run(practice.api, during.next);
        assert.deepEqual(
          afterwards.items.map((i) => [i.id, i.recipientName, i.updatedAt]),
          [
            [slowId, 'Slow Writer', slowAt.toISOString()],
            [fastId, 'Fast Writer', fastAt.toISOString()],
          ],
          'the next run sees both, in stamp order',
        );
        assert.deepEqual((await run(practice.api, afterwards.next)).items, []);
      } finally {
        commitSlow();
        await slow.catch(() => {});
        await writers.close();
      }
    });

    test('while a long transaction is open, a reader reads up to its start', async () => {
      const practice = await billingPractice(svc);
      const earlyId = (await billedInvoice(svc, practice)).id as string;
      const lateId = (await billedInvoice(svc, practice)).id as string;
      const start = await run(practice.api, EPOCH);
      const writers = openPostgres({ url: svc.databaseUrl!, poolSize: 3, statementTimeoutMs: 15_000 });
      let endLong = () => {};
      const longMayEnd = new Promise<void>((resolve) => {
        endLong = resolve;
      });
      let long: Promise<void> = Promise.resolve();
      try {
        const write = async (id: string, name: string) =>
          writers.kysely.transaction().execute(async (trx) => {
            const at = await stampChange(trx);
            await sql`UPDATE invoices SET recipient_name = ${name}, updated_at = ${at} WHERE id = ${id}`.execute(
              trx,
            );
          });
        await write(earlyId, 'Before the sample');
        await writers.kysely.transaction().execute((trx) => recordChangeFeedSample(trx));
        let begun = () => {};
        const longBegun = new Promise<void>((resolve) => {
          begun = resolve;
        });
        // An unrelated long transaction of this database, holding a transaction id.
        long = writers.kysely.transaction().execute(async (trx) => {
          await sql`SELECT pg_current_xact_id()`.execute(trx);
          begun();
          await longMayEnd;
        });
        await longBegun;
        await write(lateId, 'After the sample');
        const during = await run(practice.api, start.next);
        assert.deepEqual(
          during.items.map((i) => [i.id, i.recipientName]),
          [[earlyId, 'Before the sample']],
          'the change before the long transaction began is listed, the one after it waits',
        );
        endLong();
        await long;
        const afterwards = await run(practice.api, during.next);
        assert.deepEqual(
          afterwards.items.map((i) => [i.id, i.recipientName]),
          [[lateId, 'After the sample']],
        );
      } finally {
        endLong();
        await long.catch(() => {});
        await writers.close();
      }
    });

    test('many writers committing in random order: two runs of the recipe miss nothing', async () => {
      const practice = await billingPractice(svc);
      const ids: string[] = [];
      for (let i = 0; i < 4; i++) ids.push((await billedInvoice(svc, practice)).id as string);
      const start = await run(practice.api, EPOCH);
      const writers = openPostgres({ url: svc.databaseUrl!, poolSize: 8, statementTimeoutMs: 15_000 });
      try {
        const latest = new Map<string, Json>();
        let mark = start.next;
        let done = false;
        const writes = Promise.all(
          Array.from({ length: 24 }, (_, n) =>
            writers.kysely.transaction().execute(async (trx) => {
              const at = await stampChange(trx);
              await sql`UPDATE invoices SET recipient_name = ${`Writer ${n}`}, updated_at = ${at}
                WHERE id = ${ids[n % ids.length]!}`.execute(trx);
              // hold for a varying time so that commits cross stamps
              await sleep(((n * 7) % 5) * 6);
            }),
          ),
        ).finally(() => {
          done = true;
        });
        while (!done) {
          const step = await run(practice.api, mark);
          for (const i of step.items) latest.set(i.id, i);
          mark = step.next;
        }
        await writes;
        const last = await run(practice.api, mark);
        for (const i of last.items) latest.set(i.id, i);
        for (const id of ids) {
          const now = (await practice.api('GET', `/invoices/${id}`)).body;
          assert.deepEqual(latest.get(id), now, `${id} is seen as it finally is`);
        }
      } finally {
        await writers.close();
      }
    });
  });
}

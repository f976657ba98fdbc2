// The change feed under writers that commit out of order, on PostgreSQL with two real connections (on
// PGlite one process runs one transaction at a time, so commits cannot cross): a slow transaction
// stamps first and commits last, a fast one stamps after it and commits first. A reader following
// the reconciliation recipe must see both changes, and must not see the fast one while the slow
// one, stamped earlier, could still commit. The same holds when the writer that commits first took
// its transaction id before the open one (so the open one's id is at or above the reader's snapshot
// xmax and not listed in it as running), and when the reader falls back to a stored sample.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { recordChangeFeedSample, safeHighWaterMark, stampChange } from '../src/platform/db/change-feed.ts';
import { openPostgres } from '../src/platform/db/database.ts';
import { asOperator, inPractice, type Trx } from '../src/platform/db/transaction.ts';
import { type Api, allPages, billedInvoice, billingPractice, type Json } from './billing-fixtures.ts';
import { backends, startService, type TestService } from './harness.ts';

const EPOCH = '2000-01-01T00:00:00Z';

function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

async function currentXid(trx: Trx): Promise<bigint> {
  const { rows } = await sql<{ xid: string }>`SELECT pg_current_xact_id()::text AS xid`.execute(trx);
  return BigInt(rows[0]!.xid);
}

function rename(trx: Trx, id: string, name: string, at: Date) {
  return sql`UPDATE invoices SET recipient_name = ${name}, updated_at = ${at} WHERE id = ${id}`.execute(trx);
}

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

    test('a writer with an earlier id that stamps after an open writer and commits first does not carry readers past it', async () => {
      const practice = await billingPractice(svc);
      const aId = (await billedInvoice(svc, practice)).id as string;
      const bId = (await billedInvoice(svc, practice)).id as string;
      const start = await run(practice.api, EPOCH);
      // The writers run as the service's writers do: as the app role, in the practice.
      const writers = openPostgres({ url: svc.databaseUrl!, poolSize: 2, statementTimeoutMs: 15_000 });
      const aHasId = deferred<bigint>();
      const aMayStamp = deferred();
      const bStamped = deferred<{ xid: bigint; at: Date }>();
      const bMayCommit = deferred();
      // 1. A takes its transaction id early, as a transaction does whose first write comes before its stamp.
      const a = inPractice(writers, practice.practiceId, async (trx) => {
        aHasId.resolve(await currentXid(trx));
        await aMayStamp.promise;
        const at = await stampChange(trx);
        await rename(trx, aId, 'Writer A', at);
        return at;
      });
      // 2. Once A has its id, B takes its id, stamps, writes and stays open.
      await aHasId.promise;
      const b = inPractice(writers, practice.practiceId, async (trx) => {
        const at = await stampChange(trx);
        const xid = await currentXid(trx);
        await rename(trx, bId, 'Writer B', at);
        bStamped.resolve({ xid, at });
        await bMayCommit.promise;
      });
      try {
        const aXid = await aHasId.promise;
        const { xid: bXid, at: bAt } = await bStamped.promise;
        assert.ok(bXid > aXid, `B's id ${bXid} is after A's ${aXid}`);
        // 3. A stamps later than B, writes and commits.
        await sleep(3);
        aMayStamp.resolve();
        const aAt = await a;
        assert.ok(aAt > bAt, 'A stamps after B');
        // Read directly, taking no transaction id: a request to the service may commit one of its own,
        // later than B's, and so list B as running to the readers below.
        const aNow = sql<{ name: string }>`SELECT recipient_name AS name FROM invoices WHERE id = ${aId}`;
        assert.equal((await aNow.execute(writers.kysely)).rows[0]!.name, 'Writer A', 'A is committed');

        // 4. Readers while B is open: the high-water mark as the service's list takes it, and a run of
        // the recipe over HTTP. Neither may pass B's stamp.
        const h = await inPractice(svc.db, practice.practiceId, (trx) => safeHighWaterMark(trx));
        const during = await run(practice.api, start.next);

        // 5. B commits; the next run must list it.
        bMayCommit.resolve();
        await b;
        const afterwards = await run(practice.api, during.next);
        const shown = (items: Json[]) => items.map((i) => [i.id, i.recipientName, i.updatedAt]);
        assert.deepEqual(
          {
            highWaterMarkPastOpenB: h > bAt,
            listedWhileBOpen: shown(during.items),
            listedAfterBCommitted: shown(afterwards.items),
          },
          {
            highWaterMarkPastOpenB: false,
            listedWhileBOpen: [],
            listedAfterBCommitted: [
              [bId, 'Writer B', bAt.toISOString()],
              [aId, 'Writer A', aAt.toISOString()],
            ],
          },
          `B (id ${bXid}, stamped ${bAt.toISOString()}) was open while A (id ${aXid}, stamped ${aAt.toISOString()}) committed; H was ${h.toISOString()}`,
        );
        assert.deepEqual((await run(practice.api, afterwards.next)).items, []);
      } finally {
        aMayStamp.resolve();
        bMayCommit.resolve();
        await Promise.allSettled([a, b]);
        await writers.close();
      }
    });

    test('a sample taken while a writer is open never lets a reader pass its stamp', async () => {
      const practice = await billingPractice(svc);
      const aId = (await billedInvoice(svc, practice)).id as string;
      const bId = (await billedInvoice(svc, practice)).id as string;
      const start = await run(practice.api, EPOCH);
      const writers = openPostgres({ url: svc.databaseUrl!, poolSize: 2, statementTimeoutMs: 15_000 });
      const stamped = { a: deferred<{ xid: bigint; at: Date }>(), b: deferred<{ xid: bigint; at: Date }>() };
      const mayCommit = { a: deferred(), b: deferred() };
      const writer = (key: 'a' | 'b', id: string, name: string) =>
        inPractice(writers, practice.practiceId, async (trx) => {
          const at = await stampChange(trx);
          const xid = await currentXid(trx);
          await rename(trx, id, name, at);
          stamped[key].resolve({ xid, at });
          await mayCommit[key].promise;
        });
      // B, a long transaction, stamps and stays open; then A stamps after it, both taking their ids as
      // every service write does.
      const b = writer('b', bId, 'Long writer B');
      let a: Promise<void> = Promise.resolve();
      try {
        const { xid: bXid, at: bAt } = await stamped.b.promise;
        await sleep(3);
        a = writer('a', aId, 'Writer A');
        const { xid: aXid, at: aAt } = await stamped.a.promise;
        assert.ok(aAt > bAt && aXid > bXid, 'A stamps after B and has a later id');
        // The worker's sampler runs while both are open, a little after A's stamp; then A commits.
        await sleep(3);
        await asOperator(svc.db, (trx) => recordChangeFeedSample(trx));
        mayCommit.a.resolve();
        await a;

        // B is still open: the reader finds it running and holds the mark back to its start.
        const h = await inPractice(svc.db, practice.practiceId, (trx) => safeHighWaterMark(trx));
        const during = await run(practice.api, start.next);

        mayCommit.b.resolve();
        await b;
        const afterwards = await run(practice.api, during.next);
        const shown = (items: Json[]) => items.map((i) => [i.id, i.recipientName, i.updatedAt]);
        assert.deepEqual(
          {
            highWaterMarkPastOpenB: h > bAt,
            listedWhileBOpen: shown(during.items),
            listedAfterBCommitted: shown(afterwards.items),
          },
          {
            highWaterMarkPastOpenB: false,
            listedWhileBOpen: [],
            listedAfterBCommitted: [
              [bId, 'Long writer B', bAt.toISOString()],
              [aId, 'Writer A', aAt.toISOString()],
            ],
          },
          `B (id ${bXid}, stamped ${bAt.toISOString()}) was open across the sample; A (id ${aXid}) stamped ${aAt.toISOString()}; H was ${h.toISOString()}`,
        );
      } finally {
        mayCommit.a.resolve();
        mayCommit.b.resolve();
        await Promise.allSettled([a, b]);
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

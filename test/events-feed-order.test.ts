// The events of one transaction share its stamp and are listed in the order they were recorded, seq,
// a number: on every page size, whatever digits the seqs have (9 before 10, 99 before 100), each
// event is listed once and in that order, and paging by the cursor or by `after` skips none.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { inPractice } from '../src/platform/db/transaction.ts';
import { allPages } from './billing-fixtures.ts';
import { apiClient, describeEachBackend, startService, type TestService } from './harness.ts';

describeEachBackend('events sharing a stamp, across seqs of more digits', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });

  test('are listed once each, in the order recorded, on every page size', async () => {
    const practice = await svc.newPractice();
    const api = apiClient(svc, practice.key);
    // The seqs of this transaction's events run from 95 to 104.
    await sql`ALTER TABLE events ALTER COLUMN seq RESTART WITH 95`.execute(svc.db.kysely);
    const at = new Date(Math.floor(svc.clock.now().getTime() / 1000) * 1000);
    const ids = Array.from({ length: 10 }, (_, k) => `evt_order_${String.fromCharCode(106 - k)}`);
    await inPractice(svc.db, practice.practiceId, (trx) =>
      trx
        .insertInto('events')
        .values(
          ids.map((id) => ({
            practice_id: practice.practiceId,
            id,
            type: 'invoice.issued',
            object_type: 'invoice',
            object_id: 'inv_order',
            occurred_at: at,
            stamp: at,
          })),
        )
        .execute(),
    );
    for (const limit of [1, 3, 4, 50]) {
      const listed = (await allPages(api, `/events?limit=${limit}`)).map((e) => e.id);
      assert.deepEqual(listed, ids, `pages of ${limit}`);
    }
    // A follower that keeps the id of the last event it received and asks for the ones after it.
    const followed: string[] = [];
    for (let last: string | undefined, n = 0; n < ids.length + 1; n++) {
      const page = await api('GET', `/events?limit=2${last ? `&after=${last}` : ''}`);
      assert.equal(page.status, 200, page.text);
      const data = page.body.data as Array<{ id: string }>;
      if (data.length === 0) break;
      followed.push(...data.map((e) => e.id));
      last = data.at(-1)!.id;
    }
    assert.deepEqual(followed, ids, 'after the last one received');
  });
});

// A reader of GET /events that pages from the id of the last event it saw never misses an event that
// commits late. A slow writer begins first and records an event on one connection of the pool, then
// holds its transaction open; meanwhile a second change records and commits an event on another
// connection. The reader must not be shown the second event while the first can still commit before
// it in feed order: once the slow writer commits, the reader, carrying on from the last id it saw,
// gets both, in order. PostgreSQL only: PGlite has one connection, so writers cannot overlap.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Event } from '@practice-billing/client';
import { inPractice } from '../src/platform/db/transaction.ts';
import { recordEvent } from '../src/webhooks/outbox.ts';
import { startService, type TestService } from './harness.ts';
import { sdkClient } from './sdk-fixtures.ts';
import { billVisit, pay, sleep } from './webhooks-fixtures.ts';

describe('events list: a late commit is not skipped (postgres)', { skip: !process.env.DATABASE_URL }, () => {
  let svc: TestService;
  before(async () => {
    svc = await startService('postgres', { poolSize: 4 });
  });
  after(async () => {
    await svc.close();
  });

  test('the reader pages by the last event seen and still gets the event that committed late', async () => {
    const practice = await svc.newPractice();
    const client = sdkClient(svc.baseUrl, practice.key);
    const visit = await billVisit(svc, practice);
    const seen: Event[] = [];
    const readOn = async () => {
      const last = seen.at(-1);
      for await (const event of client.events.list(last ? { after: last.id } : {})) seen.push(event);
    };
    // A commit is listed once the safe high-water mark has passed its stamp: a read or two later.
    const readUntil = async (count: number) => {
      const deadline = Date.now() + 10_000;
      await readOn();
      while (seen.length < count && Date.now() < deadline) {
        await sleep(20);
        await readOn();
      }
    };
    await readUntil(1);
    assert.deepEqual(
      seen.map((e) => e.type),
      ['invoice.issued'],
    );

    // The slow writer: its event is recorded, its transaction stays open.
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let recorded!: () => void;
    const written = new Promise<void>((resolve) => {
      recorded = resolve;
    });
    let slowId = '';
    const slow = inPractice(svc.db, practice.practiceId, async (trx) => {
      slowId = await recordEvent(
        trx,
        practice.practiceId,
        'invoice.issued',
        { type: 'invoice', id: visit.invoiceId },
        svc.clock.now(),
      );
      recorded();
      await held;
    });
    try {
      await written;
      // A quick writer on another connection records and commits after it.
      await pay(svc, practice.practiceId, visit.invoiceId, 1);
      // Read for a while: the committed payment must not be listed while the slow writer is open.
      for (let i = 0; i < 10; i++) {
        await readOn();
        await sleep(20);
      }
      assert.deepEqual(
        seen.map((e) => e.type),
        ['invoice.issued'],
        'the committed payment.created waits while an event before it can still commit',
      );
    } finally {
      release();
      await slow;
    }

    await readUntil(3);
    assert.deepEqual(
      seen.map((e) => e.type),
      ['invoice.issued', 'invoice.issued', 'payment.created'],
    );
    assert.equal(seen[1]!.id, slowId, 'the late event, where it belongs');
    assert.deepEqual(
      seen.map((e) => e.id),
      (await client.events.list().toArray()).map((e) => e.id),
      'the same order as a fresh reader sees',
    );
  });
});

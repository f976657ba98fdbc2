// A black-box follower of the change feeds, on PostgreSQL: for FOLLOWER_SECONDS (60), FOLLOWER_WRITERS
// (6) clients bill visits, add lines to drafts, issue them and record payments on issued invoices
// through the API, while the change feed's clock is sampled every second, as the worker does.
// Meanwhile one follower pages GET /invoices?updatedSince= with the reconciliation recipe, keeping
// the latest version of each invoice, and another pages GET /events?after= from the last event it
// received. After the writers stop, each follows once more; then the first must hold every invoice
// as it finally is (its updatedAt), and the second must have received every event, each once.
// Run by `npm run test:resilience` (DATABASE_URL set).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { recordChangeFeedSample } from '../../src/platform/db/change-feed.ts';
import { asOperator } from '../../src/platform/db/transaction.ts';
import {
  type Api,
  allPages,
  billedInvoice,
  billingPractice,
  type Json,
  lineBody,
} from '../billing-fixtures.ts';
import { startService, type TestService, uniqueKey } from '../harness.ts';

const SECONDS = Number(process.env.FOLLOWER_SECONDS ?? 60);
const WRITERS = Number(process.env.FOLLOWER_WRITERS ?? 6);
const EPOCH = '2000-01-01T00:00:00Z';

describe('change feed followers under API writers (postgres)', {
  skip: !process.env.DATABASE_URL && 'needs DATABASE_URL',
}, () => {
  let svc: TestService;
  before(async () => {
    svc = await startService('postgres');
  });
  after(async () => {
    await svc?.close();
  });

  test(`${SECONDS} s of billing, line edits, issues and payments: the followers miss nothing`, {
    timeout: (SECONDS + 300) * 1000,
  }, async () => {
    // Its writers and followers share one client, faster than a client's default allowance.
    const practice = await billingPractice(svc, { rateLimitPerMinute: 1_000_000 });
    const api: Api = practice.api;
    const drafts: string[] = [];
    const issued: string[] = [];
    const done = { bills: 0, lines: 0, issues: 0, payments: 0, refused: 0 };
    const until = Date.now() + SECONDS * 1000;

    async function writer(w: number): Promise<void> {
      for (let n = 0; Date.now() < until; n++) {
        const pick = (n + w) % 4;
        if (pick === 0 || drafts.length === 0) {
          drafts.push((await billedInvoice(svc, practice)).id as string);
          done.bills++;
        } else if (pick === 1) {
          const id = drafts[Math.floor(Math.random() * drafts.length)]!;
          const answer = await api('POST', `/invoices/${id}/line-items`, {
            body: lineBody(),
            idempotencyKey: uniqueKey(),
          });
          if (answer.status === 201) done.lines++;
          else done.refused++;
        } else if (pick === 2) {
          const id = drafts.splice(Math.floor(Math.random() * drafts.length), 1)[0]!;
          await api('POST', `/invoices/${id}/line-items`, {
            body: lineBody({ unitPrice: 100_000 }),
            idempotencyKey: uniqueKey(),
          });
          const answer = await api('POST', `/invoices/${id}/issue`);
          if (answer.status === 200) {
            issued.push(id);
            done.issues++;
          } else done.refused++;
        } else if (issued.length > 0) {
          const id = issued[Math.floor(Math.random() * issued.length)]!;
          const answer = await svc.admin('POST', `/practices/${practice.practiceId}/payments`, {
            invoiceId: id,
            amount: 100,
            method: 'cash',
          });
          if (answer.status === 201) done.payments++;
          else done.refused++;
        }
      }
    }

    // The invoices follower: runs of the recipe, each from the last updatedAt the previous run listed.
    const latest = new Map<string, Json>();
    let since = EPOCH;
    async function followInvoices(): Promise<void> {
      const items = await allPages(api, `/invoices?limit=7&updatedSince=${encodeURIComponent(since)}`);
      for (const item of items) latest.set(item.id as string, item);
      since = (items.at(-1)?.updatedAt as string | undefined) ?? since;
    }
    // The events follower: from the last event received.
    const received: string[] = [];
    async function followEvents(): Promise<void> {
      for (;;) {
        const last = received.at(-1);
        const page = await api('GET', `/events?limit=7${last ? `&after=${last}` : ''}`);
        assert.equal(page.status, 200, page.text);
        const data = page.body.data as Array<{ id: string }>;
        received.push(...data.map((e) => e.id));
        if (data.length < 7) return;
      }
    }

    let writing = true;
    const writers = Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w))).finally(() => {
      writing = false;
    });
    // The worker's periodic sample (the test service's worker runs no periodic task).
    const sampler = (async () => {
      while (writing) {
        await asOperator(svc.db, (trx) => recordChangeFeedSample(trx));
        await sleep(1000);
      }
    })();
    const followers = [followInvoices, followEvents].map(async (follow) => {
      while (writing) {
        await follow();
        await sleep(5);
      }
    });
    await writers;
    await Promise.all([sampler, ...followers]);
    await sleep(5);
    await followInvoices();
    await followEvents();

    const truth = await asOperator(svc.db, async (trx) => ({
      invoices: (
        await sql<{ id: string; updated_at: Date }>`
          SELECT id, updated_at FROM invoices WHERE practice_id = ${practice.practiceId}`.execute(trx)
      ).rows,
      events: (
        await sql<{ id: string }>`SELECT id FROM events WHERE practice_id = ${practice.practiceId}`.execute(
          trx,
        )
      ).rows.map((r) => r.id),
    }));
    const stale = truth.invoices.filter(
      (i) => latest.get(i.id)?.updatedAt !== new Date(i.updated_at).toISOString(),
    );
    const receivedOnce = new Set(received);
    const missedEvents = truth.events.filter((id) => !receivedOnce.has(id));
    const summary =
      `change-feed follower: ${done.bills} bills, ${done.lines} lines, ${done.issues} issues, ` +
      `${done.payments} payments (${done.refused} refused) by ${WRITERS} writers in ${SECONDS} s; ` +
      `invoices not seen as they are: ${stale.length} of ${truth.invoices.length}; ` +
      `events missed: ${missedEvents.length} of ${truth.events.length}, received twice: ${received.length - receivedOnce.size}`;
    console.log(summary);
    assert.deepEqual(
      {
        stale: stale.map(
          (i) =>
            `${i.id}: ${new Date(i.updated_at).toISOString()}, seen ${latest.get(i.id)?.updatedAt ?? 'never'}`,
        ),
        missedEvents,
        receivedTwice: received.length - receivedOnce.size,
      },
      { stale: [], missedEvents: [], receivedTwice: 0 },
      summary,
    );
  });
});

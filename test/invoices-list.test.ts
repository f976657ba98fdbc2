// GET /invoices: filters by patient, encounter and status, updatedSince strictly after, oldest change
// first, paged with signed cursors; and the contract's reconciliation recipe (page to the end, then
// reuse the updatedAt of the last invoice received) losing nothing while invoices change under it,
// one change at a time and under concurrent writers.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  type Api,
  allPages,
  bill,
  billedInvoice,
  billingPractice,
  type Json,
  lineBody,
  newPatient,
  newVisit,
  refusedWith,
} from './billing-fixtures.ts';
import { describeEachBackend, startService, type TestService, uniqueKey } from './harness.ts';

const EPOCH = '2000-01-01T00:00:00Z';

function assertOldestChangeFirst(items: Json[]): void {
  for (let i = 1; i < items.length; i++) {
    const [a, b] = [items[i - 1], items[i]];
    assert.ok(
      a.updatedAt < b.updatedAt || (a.updatedAt === b.updatedAt && a.id < b.id),
      `${a.id}@${a.updatedAt} before ${b.id}@${b.updatedAt}`,
    );
  }
}

describeEachBackend('invoice list and change feed', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend, { poolSize: 16 });
  });
  after(async () => {
    await svc.close();
  });

  const addLine = (api: Api, invoiceId: string, unitPrice = 100) =>
    api('POST', `/invoices/${invoiceId}/line-items`, {
      body: lineBody({ unitPrice }),
      idempotencyKey: uniqueKey(),
    });
  const ids = (answer: Json) => answer.body.data.map((i: Json) => i.id);

  test('filters by patient, encounter and status; oldest change first; other practices never seen', async () => {
    const practice = await billingPractice(svc);
    const other = await billingPractice(svc);
    await billedInvoice(svc, other);
    const alice = await newPatient(practice.api);
    const bob = await newPatient(practice.api);
    const visit = await newVisit(svc, practice.api, practice.practitionerId, alice);
    const a1 = (await bill(practice.api, visit.id)).body.invoice;
    const a2 = await billedInvoice(svc, practice, { patientId: alice, issue: true });
    const b1 = await billedInvoice(svc, practice, { patientId: bob });

    const all = await practice.api('GET', '/invoices');
    assert.equal(all.status, 200, all.text);
    assert.deepEqual(ids(all), [a1.id, a2.id, b1.id]);
    assert.equal(all.body.hasMore, false);
    assert.equal(all.body.nextCursor, null);
    assert.deepEqual(all.body.data[0], a1);

    const list = async (query: string) => ids(await practice.api('GET', `/invoices?${query}`));
    assert.deepEqual(await list(`patientId=${alice}`), [a1.id, a2.id]);
    assert.deepEqual(await list(`patientId=${bob}`), [b1.id]);
    assert.deepEqual(await list(`encounterId=${visit.id}`), [a1.id]);
    assert.deepEqual(await list('status=issued'), [a2.id]);
    assert.deepEqual(await list('status=draft'), [a1.id, b1.id]);
    assert.deepEqual(await list(`status=draft&patientId=${alice}`), [a1.id]);
    assert.deepEqual(await list('status=balanced'), []);
    assert.deepEqual(await list('patientId=pat_madeup000000000000'), []);

    // a change moves the invoice to the end
    await addLine(practice.api, a1.id);
    assert.deepEqual(await list(''), [a2.id, b1.id, a1.id]);
    assertOldestChangeFirst((await practice.api('GET', '/invoices')).body.data);
  });

  test('updatedSince returns invoices changed strictly after it', async () => {
    const practice = await billingPractice(svc);
    const first = await billedInvoice(svc, practice);
    const second = await billedInvoice(svc, practice);
    const third = await billedInvoice(svc, practice);
    const since = (at: string) => practice.api('GET', `/invoices?updatedSince=${encodeURIComponent(at)}`);
    assert.deepEqual(ids(await since(EPOCH)), [first.id, second.id, third.id]);
    assert.deepEqual(ids(await since(first.updatedAt)), [second.id, third.id]);
    assert.deepEqual(ids(await since(third.updatedAt)), []);
    const justBefore = new Date(Date.parse(third.updatedAt) - 1).toISOString();
    assert.deepEqual(ids(await since(justBefore)), [third.id]);
    // an offset other than Z means the same instant
    const local = new Date(Date.parse(first.updatedAt) + 2 * 3600_000).toISOString().replace('Z', '+02:00');
    assert.deepEqual(ids(await since(local)), [second.id, third.id]);
    assert.ok(first.updatedAt < second.updatedAt && second.updatedAt < third.updatedAt);
  });

  test('bad query parameters are 400 naming them; a foreign or tampered cursor is invalid_cursor', async () => {
    const practice = await billingPractice(svc);
    for (let i = 0; i < 3; i++) await billedInvoice(svc, practice);
    for (const [query, field] of [
      ['updatedSince=yesterday', 'updatedSince'],
      ['updatedSince=2024-13-01T00:00:00Z', 'updatedSince'],
      ['updatedSince=2024-01-01', 'updatedSince'],
      ['status=paid', 'status'],
      ['limit=0', 'limit'],
      ['limit=101', 'limit'],
      ['colour=red', 'colour'],
    ]) {
      refusedWith(await practice.api('GET', `/invoices?${query}`), 400, 'invalid_request', [field as string]);
    }
    const page = await practice.api('GET', '/invoices?limit=1');
    assert.equal(page.body.hasMore, true);
    const cursor = encodeURIComponent(page.body.nextCursor);
    refusedWith(
      await practice.api('GET', `/invoices?limit=1&status=draft&cursor=${cursor}`),
      400,
      'invalid_cursor',
    );
    refusedWith(await practice.api('GET', `/invoices?cursor=${cursor}x`), 400, 'invalid_cursor');
    refusedWith(await practice.api('GET', '/invoices?cursor=abc.def'), 400, 'invalid_cursor');
    // the same cursor with the same filters continues the list
    const next = await practice.api('GET', `/invoices?limit=1&cursor=${cursor}`);
    assert.equal(next.status, 200, next.text);
    assert.notEqual(next.body.data[0].id, page.body.data[0].id);
  });

  test('paging with a limit visits every invoice once, oldest change first', async () => {
    const practice = await billingPractice(svc);
    const made = [];
    for (let i = 0; i < 5; i++) made.push((await billedInvoice(svc, practice)).id);
    const first = await practice.api('GET', '/invoices?limit=2');
    assert.equal(first.body.data.length, 2);
    assert.equal(first.body.hasMore, true);
    const all = await allPages(practice.api, `/invoices?limit=2&updatedSince=${EPOCH}`);
    assert.deepEqual(
      all.map((i) => i.id),
      made,
    );
  });

  test('the reconciliation recipe loses nothing when invoices change between pages', async () => {
    const practice = await billingPractice(svc);
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await billedInvoice(svc, practice));
    const seen: Json[] = [];
    let cursor: string | null = null;
    let pages = 0;
    for (;;) {
      const query: string = `/invoices?limit=2&updatedSince=${EPOCH}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
      const page = await practice.api('GET', query);
      assert.equal(page.status, 200, page.text);
      seen.push(...page.body.data);
      pages++;
      if (pages === 1) {
        // between pages: issue one already read, add a line to one not yet read
        assert.equal((await practice.api('POST', `/invoices/${made[0].id}/issue`)).status, 200);
        assert.equal((await addLine(practice.api, made[3].id)).status, 201);
      }
      if (!page.body.hasMore) break;
      cursor = page.body.nextCursor;
    }
    assertOldestChangeFirst(seen);
    const latest = new Map(seen.map((i) => [i.id, i]));
    for (const invoice of made) {
      const now = (await practice.api('GET', `/invoices/${invoice.id}`)).body;
      assert.deepEqual(latest.get(invoice.id), now, `the run ends with ${invoice.id} as it is now`);
    }
    assert.equal(latest.get(made[0].id).status, 'issued');
    assert.equal(latest.get(made[3].id).lineItems.length, 2);

    // next run from the last updatedAt received: only what changed since
    const last = seen.at(-1).updatedAt;
    assert.deepEqual(
      await allPages(practice.api, `/invoices?limit=2&updatedSince=${encodeURIComponent(last)}`),
      [],
    );
    assert.equal((await practice.api('POST', `/invoices/${made[1].id}/issue`)).status, 200);
    assert.equal((await addLine(practice.api, made[4].id)).status, 201);
    const second = await allPages(practice.api, `/invoices?limit=1&updatedSince=${encodeURIComponent(last)}`);
    assert.deepEqual(
      second.map((i) => [i.id, i.status, i.lineItems.length]),
      [
        [made[1].id, 'issued', 1],
        [made[4].id, 'draft', 2],
      ],
    );
  });

  test('under concurrent writers, two runs of the recipe see every invoice as it finally is', async () => {
    const practice = await billingPractice(svc);
    const made: string[] = [];
    for (let i = 0; i < 6; i++) made.push((await billedInvoice(svc, practice)).id);
    const latest = new Map<string, Json>();
    const run = async (since: string) => {
      const items = await allPages(
        practice.api,
        `/invoices?limit=1&updatedSince=${encodeURIComponent(since)}`,
      );
      assertOldestChangeFirst(items);
      for (const i of items) latest.set(i.id, i);
      return items.at(-1)?.updatedAt ?? since;
    };
    const writers = Promise.all(
      Array.from({ length: 36 }, (_, n) => addLine(practice.api, made[n % made.length]!, n + 1)),
    );
    let mark = EPOCH;
    let settled = false;
    void writers.finally(() => {
      settled = true;
    });
    while (!settled) mark = await run(mark);
    for (const answer of await writers) assert.equal(answer.status, 201, answer.text);
    await run(mark);
    for (const id of made) {
      const now = (await practice.api('GET', `/invoices/${id}`)).body;
      assert.equal(now.lineItems.length, 7);
      assert.deepEqual(latest.get(id), now, `${id} is seen as it finally is`);
    }
  });
});

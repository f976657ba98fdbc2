// Changes to one invoice racing each other, each pair sent together many times so that on PostgreSQL
// the two interleave. Every change locks the invoice before it judges it, so the second waits and
// judges the first's result: a line deleted meanwhile is 404, an invoice issued meanwhile refuses a
// new line with 422, and of two deletes of a line exactly one answers 200. Never a 5xx.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type Api, billedInvoice, billingPractice, lineBody, refusedWith } from './billing-fixtures.ts';
import {
  describeEachBackend,
  startService,
  type TestPractice,
  type TestService,
  uniqueKey,
} from './harness.ts';
import { noServerError, oneDeleteWon, ROUNDS } from './support/races.ts';

describeEachBackend('racing invoice changes', (backend) => {
  let svc: TestService;
  let practice: TestPractice & { api: Api };
  before(async () => {
    svc = await startService(backend);
    practice = await billingPractice(svc);
  });
  after(async () => {
    await svc.close();
  });

  const addLine = (invoiceId: string) =>
    practice.api('POST', `/invoices/${invoiceId}/line-items`, {
      body: lineBody(),
      idempotencyKey: uniqueKey(),
    });

  async function newLine(invoiceId: string): Promise<string> {
    const added = await addLine(invoiceId);
    assert.equal(added.status, 201, added.text);
    return added.body.lineItems.at(-1).id;
  }

  test('a line replaced while it is deleted: 200 or 404; of two deletes one answers 200', async () => {
    const invoice = await billedInvoice(svc, practice);
    for (let round = 0; round < ROUNDS; round++) {
      const path = `/invoices/${invoice.id}/line-items/${await newLine(invoice.id)}`;
      const [replaced, deleted] = await Promise.all([
        practice.api('PUT', path, { body: lineBody({ unitPrice: 12_000 }) }),
        practice.api('DELETE', path),
      ]);
      noServerError(replaced, deleted);
      assert.equal(deleted.status, 200, deleted.text);
      if (replaced.status !== 200) refusedWith(replaced, 404, 'not_found');

      const again = `/invoices/${invoice.id}/line-items/${await newLine(invoice.id)}`;
      oneDeleteWon(await Promise.all([practice.api('DELETE', again), practice.api('DELETE', again)]));
    }
  });

  test('a line added while the invoice is issued: added before, or refused after', async () => {
    for (let round = 0; round < 15; round++) {
      const invoice = await billedInvoice(svc, practice);
      const [added, issued] = await Promise.all([
        addLine(invoice.id),
        practice.api('POST', `/invoices/${invoice.id}/issue`),
      ]);
      noServerError(added, issued);
      assert.equal(issued.status, 200, issued.text);
      if (added.status === 201) assert.equal(issued.body.lineItems.length, 2, 'issued with the added line');
      else {
        refusedWith(added, 422, 'business_rule');
        assert.equal(issued.body.lineItems.length, 1);
      }
    }
  });
});

// Integer money through the API (src/invoices/money.ts): property tests that a line's subtotal and total
// and the invoice's totals are always the sum of their parts on one invoice. The rules themselves, without
// a database, are in unit/invoices-money.test.ts.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { billedInvoice, billingPractice, lineBody } from './billing-fixtures.ts';
import { describeEachBackend, startService, type TestService, uniqueKey } from './harness.ts';
import { expectedLine, modifierSet, quantity, roundDiv, unitPrice } from './support/money-reference.ts';

describeEachBackend('money through the API', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });

  test('random lines on one invoice: every total is the sum of its parts', async () => {
    const practice = await billingPractice(svc, { vatRateBasisPoints: 1500 });
    const invoice = await billedInvoice(svc, practice);
    await fc.assert(
      fc.asyncProperty(quantity, unitPrice, modifierSet, async (q, price, modifiers) => {
        const answer = await practice.api('POST', `/invoices/${invoice.id}/line-items`, {
          body: lineBody({ quantity: q / 10_000, unitPrice: price, modifiers }),
          idempotencyKey: uniqueKey(),
        });
        assert.equal(answer.status, 201, answer.text);
        const body = answer.body;
        const added = body.lineItems.at(-1);
        assert.equal(added.quantity, q / 10_000);
        assert.deepEqual({ subtotal: added.subtotal, total: added.total }, expectedLine(q, price, modifiers));
        const net = body.lineItems.reduce((s: bigint, l: { total: number }) => s + BigInt(l.total), 0n);
        assert.equal(BigInt(body.totalNet), net);
        assert.equal(BigInt(body.totalGross), net + roundDiv(net * 1500n, 10_000n));
        assert.equal(body.balanceDue, body.totalGross - body.amountPaid);
      }),
      { numRuns: 15 },
    );
    const read = await practice.api('GET', `/invoices/${invoice.id}`);
    assert.equal(read.body.lineItems.length, 16);
    const sum = read.body.lineItems.reduce((s: number, l: { total: number }) => s + l.total, 0);
    assert.equal(read.body.totalNet, sum);
  });
});

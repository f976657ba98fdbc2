// Integer money (src/invoices/money.ts): rounding half away from zero, quantities of at most 4 decimals
// without floating-point drift, and property tests that totals are always the sum of their parts, both
// for the functions and through the API on one invoice.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { invoiceTotals, lineSubtotal, lineTotal, scaledQuantity } from '../src/invoices/money.ts';
import { billedInvoice, billingPractice, lineBody } from './billing-fixtures.ts';
import { describeEachBackend, startService, type TestService, uniqueKey } from './harness.ts';

/** Reference rounding of n / d, half away from zero, in BigInt. */
function roundDiv(n: bigint, d: bigint): bigint {
  const sign = n < 0n ? -1n : 1n;
  const abs = n < 0n ? -n : n;
  const q = abs / d;
  const r = abs % d;
  return sign * (r * 2n >= d ? q + 1n : q);
}

/** The tariff's modifiers and their basis points, read from the shipped catalogue. */
const MODIFIERS: Record<string, number> = Object.fromEntries(
  fs
    .readFileSync(path.resolve(import.meta.dirname, '..', 'catalogue', 'tariff-modifiers.csv'), 'utf8')
    .trim()
    .split('\n')
    .slice(1)
    .map((row) => {
      const cells = row.split(',');
      return [cells[0]!, Number(cells.at(-1))];
    }),
);

const quantity = fc.integer({ min: 1, max: 100_000_000 }); // in 1/10000 units: 0.0001 to 10000
const unitPrice = fc.integer({ min: 0, max: 1_000_000_000 });
const modifierSet = fc.subarray(Object.keys(MODIFIERS));

function expectedLine(q: number, price: number, modifiers: string[]) {
  const subtotal = roundDiv(BigInt(q) * BigInt(price), 10_000n);
  const factor = 10_000n + BigInt(modifiers.reduce((s, m) => s + MODIFIERS[m]!, 0));
  const total = roundDiv(subtotal * factor, 10_000n);
  return { subtotal: Number(subtotal), total: Number(total < 0n ? 0n : total) };
}

describe('money: rounding', () => {
  test('subtotals round half away from zero, not to even', () => {
    assert.equal(lineSubtotal(0.5, 1), 1);
    assert.equal(lineSubtotal(1.5, 1), 2);
    assert.equal(lineSubtotal(2.5, 1), 3);
    assert.equal(lineSubtotal(0.0001, 4999), 0);
    assert.equal(lineSubtotal(0.0001, 5000), 1);
    assert.equal(lineSubtotal(2.5, 10001), 25003);
    assert.equal(lineSubtotal(10000, 1_000_000_000), 10_000_000_000_000);
    assert.equal(lineSubtotal(3, 0), 0);
  });

  test('no floating-point drift: decimal quantities are exact', () => {
    // 1.005 × 100 is 100.49999999999999 in floating point; the exact 100.5 rounds to 101
    assert.equal(lineSubtotal(1.005, 100), 101);
    assert.equal(lineSubtotal(4.35, 100), 435);
    assert.equal(lineSubtotal(0.1 + 0.2, 10), 3);
    assert.equal(lineSubtotal(1.1, 3), 3);
    assert.equal(lineSubtotal(9999.9999, 10000), 99_999_999);
  });

  test('quantities with more than 4 decimals are refused', () => {
    assert.equal(scaledQuantity(1.2345), 12345n);
    assert.equal(scaledQuantity(0.0001), 1n);
    assert.equal(scaledQuantity(1.00001), undefined);
    assert.equal(scaledQuantity(0.00005), undefined);
    assert.equal(scaledQuantity(Math.PI), undefined);
    assert.throws(() => lineSubtotal(1.23456, 100));
  });

  test('modifier totals round half away from zero and never go below zero', () => {
    assert.equal(lineTotal(1, [-5000]), 1); // 0.5
    assert.equal(lineTotal(3, [-5000]), 2); // 1.5
    assert.equal(lineTotal(5, [-5000]), 3); // 2.5
    assert.equal(lineTotal(10, [2500]), 13); // 12.5
    assert.equal(lineTotal(20000, [2500, -5000]), 15000);
    assert.equal(lineTotal(20000, []), 20000);
    assert.equal(lineTotal(20000, [-5000, -5000]), 0);
    assert.equal(lineTotal(20000, [-5000, -5000, -3000]), 0);
  });

  test('tax rounds half away from zero, negative amounts too', () => {
    assert.deepEqual(invoiceTotals([137500], 1250), { totalNet: 137500, totalGross: 154688 });
    assert.deepEqual(invoiceTotals([5], 1000), { totalNet: 5, totalGross: 6 });
    assert.deepEqual(invoiceTotals([-5], 1000), { totalNet: -5, totalGross: -6 });
    assert.deepEqual(invoiceTotals([4], 1000), { totalNet: 4, totalGross: 4 });
    assert.deepEqual(invoiceTotals([], 1500), { totalNet: 0, totalGross: 0 });
    assert.deepEqual(invoiceTotals([1, 2, 3], 0), { totalNet: 6, totalGross: 6 });
  });
});

describe('money: properties', () => {
  test('a subtotal is round(quantity × unit price), an integer', () => {
    fc.assert(
      fc.property(quantity, unitPrice, (q, price) => {
        const subtotal = lineSubtotal(q / 10_000, price);
        assert.ok(Number.isSafeInteger(subtotal));
        assert.equal(subtotal, expectedLine(q, price, []).subtotal);
      }),
      { numRuns: 2000 },
    );
  });

  test('a total is the subtotal adjusted by its modifiers, an integer never below zero', () => {
    fc.assert(
      fc.property(quantity, unitPrice, modifierSet, (q, price, modifiers) => {
        const subtotal = lineSubtotal(q / 10_000, price);
        const total = lineTotal(
          subtotal,
          modifiers.map((m) => MODIFIERS[m]!),
        );
        assert.ok(Number.isSafeInteger(total) && total >= 0);
        assert.equal(total, expectedLine(q, price, modifiers).total);
      }),
      { numRuns: 2000 },
    );
  });

  test('invoice totals are the sum of line totals plus the rounded tax', () => {
    const line = fc.record({ q: quantity, price: unitPrice, modifiers: modifierSet });
    fc.assert(
      fc.property(fc.array(line, { maxLength: 30 }), fc.integer({ min: 0, max: 10_000 }), (lines, vat) => {
        const totals = lines.map((l) =>
          lineTotal(
            lineSubtotal(l.q / 10_000, l.price),
            l.modifiers.map((m) => MODIFIERS[m]!),
          ),
        );
        const sum = lines.reduce((s, l) => s + BigInt(expectedLine(l.q, l.price, l.modifiers).total), 0n);
        const result = invoiceTotals(totals, vat);
        assert.ok(Number.isSafeInteger(result.totalNet) && Number.isSafeInteger(result.totalGross));
        assert.equal(BigInt(result.totalNet), sum);
        assert.equal(BigInt(result.totalGross), sum + roundDiv(sum * BigInt(vat), 10_000n));
      }),
      { numRuns: 1000 },
    );
  });
});

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

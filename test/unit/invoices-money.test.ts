// The money rules (src/invoices/money.ts) without a database: rounding half away from zero, quantities
// of at most 4 decimals without floating-point drift, and property tests against an independent BigInt
// reference that totals are always the sum of their parts and a line total is never negative.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { invoiceTotals, lineSubtotal, lineTotal, scaledQuantity } from '../../src/invoices/money.ts';
import {
  expectedLine,
  MODIFIERS,
  modifierSet,
  quantity,
  roundDiv,
  unitPrice,
} from '../support/money-reference.ts';

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

describe('money: rules for any modifiers and any VAT rate', () => {
  test('a line total is never negative, whatever the modifiers add up to', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10_000_000_000 }),
        fc.array(fc.integer({ min: -20_000, max: 20_000 }), { maxLength: 6 }),
        (subtotal, modifiers) => {
          const total = lineTotal(subtotal, modifiers);
          assert.ok(Number.isSafeInteger(total) && total >= 0);
          const factor = 10_000n + modifiers.reduce((s, bp) => s + BigInt(bp), 0n);
          const exact = roundDiv(BigInt(subtotal) * factor, 10_000n);
          assert.equal(BigInt(total), exact < 0n ? 0n : exact);
        },
      ),
      { numRuns: 2000 },
    );
  });

  test('without modifiers a line total is its subtotal', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 10_000_000_000 }), (subtotal) => {
        assert.equal(lineTotal(subtotal, []), subtotal);
      }),
    );
  });

  test('the gross total is the net total plus the VAT on it, rounded once', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 1_000_000_000 }), { maxLength: 40 }),
        fc.integer({ min: 0, max: 10_000 }),
        (lines, vat) => {
          const { totalNet, totalGross } = invoiceTotals(lines, vat);
          const net = lines.reduce((s, t) => s + BigInt(t), 0n);
          assert.equal(BigInt(totalNet), net);
          assert.equal(BigInt(totalGross), net + roundDiv(net * BigInt(vat), 10_000n));
          assert.ok(totalGross >= totalNet);
          if (vat === 0) assert.equal(totalGross, totalNet);
        },
      ),
      { numRuns: 2000 },
    );
  });
});

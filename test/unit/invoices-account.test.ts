// The VAT share of each claimed line (linesWithVat in src/invoices/money.ts) and the account's words
// (balanceExplanation in src/invoices/account.ts) without a database.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { balanceExplanation } from '../../src/invoices/account.ts';
import { invoiceTotals, linesWithVat } from '../../src/invoices/money.ts';

test('lines with VAT add up to the invoice total exactly, each near its own share', () => {
  fc.assert(
    fc.property(
      fc.array(fc.integer({ min: 0, max: 10_000_000 }), { minLength: 1, maxLength: 12 }),
      fc.integer({ min: 0, max: 2500 }),
      (totals, bp) => {
        const { totalNet, totalGross } = invoiceTotals(totals, bp);
        const claimed = linesWithVat(totals, totalNet, totalGross);
        assert.equal(
          claimed.reduce((s, a) => s + a, 0),
          totalGross,
        );
        claimed.forEach((amount, i) => {
          assert.ok(amount >= totals[i]!, 'never less than the line');
        });
      },
    ),
  );
  assert.deepEqual(linesWithVat([49_500], 49_500, 56_925), [56_925]);
  assert.deepEqual(linesWithVat([100, 100, 100], 300, 345), [115, 115, 115]);
  assert.deepEqual(linesWithVat([1, 1, 1], 3, 4), [1, 1, 2], 'the rounding difference on the last line');
  assert.deepEqual(linesWithVat([500, 0], 500, 500), [500, 0], 'no VAT, nothing added');
  // Found by the property above: a small last line once took a negative rounding difference.
  const lines = [857_533, 4_637_383, 2_209_372, 2];
  const { totalNet, totalGross } = invoiceTotals(lines, 1745);
  const claimed = linesWithVat(lines, totalNet, totalGross);
  assert.equal(
    claimed.reduce((s, a) => s + a, 0),
    totalGross,
  );
  for (const [i, amount] of claimed.entries())
    assert.ok(amount >= lines[i]!, `line ${i}: ${amount} < ${lines[i]}`);
});

test('the account says what the scheme and the patient paid and what is owed', () => {
  const base = {
    status: 'partially_paid' as const,
    claimStatus: 'accepted',
    currency: 'ZAR',
    totalNet: 49_500,
    totalGross: 56_925,
    paidByScheme: 49_500,
    paidByPatient: 0,
    balanceDue: 7_425,
    creditDue: 0,
    amountWrittenOff: 0,
  };
  assert.match(balanceExplanation(base), /plus VAT of ZAR 74\.25.*up to its own rate.*You owe ZAR 74\.25\.$/);
  assert.equal(
    balanceExplanation({
      ...base,
      status: 'balanced',
      claimStatus: null,
      totalNet: 1000,
      totalGross: 1000,
      paidByScheme: 0,
      paidByPatient: 1000,
      balanceDue: 0,
    }),
    'Total ZAR 10.00. You paid ZAR 10.00. Nothing is owed.',
  );
  assert.match(
    balanceExplanation({
      ...base,
      status: 'balanced',
      paidByPatient: 56_925,
      balanceDue: 0,
      creditDue: 49_500,
    }),
    /The practice owes you ZAR 495\.00, to be refunded\.$/,
  );
  assert.match(
    balanceExplanation({ ...base, status: 'written_off', balanceDue: 0, amountWrittenOff: 7_425 }),
    /The practice wrote off ZAR 74\.25: nothing is owed\.$/,
  );
  assert.match(
    balanceExplanation({ ...base, status: 'cancelled', paidByScheme: 0, balanceDue: 0 }),
    /withdrawn/,
  );
});

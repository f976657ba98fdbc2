// The open-invoice status rule (src/invoices/payment-status.ts) without a database: balanced exactly
// when the amount paid covers the total, partially paid when some of it is, overdue only when nothing
// is paid and the due date is before the practice's today, and the refusal of a change that would
// leave an invoice for less than was paid on it.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { OPEN_STATUSES, openStatus, overpaymentReason } from '../../src/invoices/payment-status.ts';

const amount = fc.integer({ min: 0, max: 10_000_000_000 });
const day = fc
  .date({ min: new Date('2020-01-01T00:00:00Z'), max: new Date('2030-12-31T00:00:00Z'), noInvalidDate: true })
  .map((d) => d.toISOString().slice(0, 10));
const money = fc.record({ totalGross: amount, amountPaid: amount, dueDate: fc.option(day, { nil: null }) });

describe('open invoice status', () => {
  test('examples: paid in full, part paid, unpaid before, on and after the due date', () => {
    const due = '2026-03-31';
    assert.equal(openStatus({ totalGross: 1000, amountPaid: 1000, dueDate: due }, '2026-04-30'), 'balanced');
    assert.equal(openStatus({ totalGross: 1000, amountPaid: 1500, dueDate: due }, '2026-03-01'), 'balanced');
    assert.equal(openStatus({ totalGross: 0, amountPaid: 0, dueDate: due }, '2026-04-30'), 'balanced');
    assert.equal(
      openStatus({ totalGross: 1000, amountPaid: 1, dueDate: due }, '2026-04-30'),
      'partially_paid',
    );
    assert.equal(openStatus({ totalGross: 1000, amountPaid: 0, dueDate: due }, '2026-03-30'), 'issued');
    assert.equal(openStatus({ totalGross: 1000, amountPaid: 0, dueDate: due }, '2026-03-31'), 'issued');
    assert.equal(openStatus({ totalGross: 1000, amountPaid: 0, dueDate: due }, '2026-04-01'), 'overdue');
    assert.equal(openStatus({ totalGross: 1000, amountPaid: 0, dueDate: null }, '2099-01-01'), 'issued');
  });

  test('balanced exactly when the amount paid is at least the total', () => {
    fc.assert(
      fc.property(money, day, (m, today) => {
        assert.equal(openStatus(m, today) === 'balanced', m.amountPaid >= m.totalGross);
      }),
      { numRuns: 2000 },
    );
  });

  test('partially paid exactly when some but not all of the total is paid', () => {
    fc.assert(
      fc.property(money, day, (m, today) => {
        assert.equal(
          openStatus(m, today) === 'partially_paid',
          m.amountPaid > 0 && m.amountPaid < m.totalGross,
        );
      }),
      { numRuns: 2000 },
    );
  });

  test('overdue exactly when nothing is paid on a total above zero and the due date has passed', () => {
    fc.assert(
      fc.property(money, day, (m, today) => {
        const overdue = m.amountPaid === 0 && m.totalGross > 0 && m.dueDate !== null && m.dueDate < today;
        assert.equal(openStatus(m, today) === 'overdue', overdue);
      }),
      { numRuns: 2000 },
    );
  });

  test('the status is always one of the open statuses', () => {
    fc.assert(
      fc.property(money, day, (m, today) => {
        assert.ok(OPEN_STATUSES.includes(openStatus(m, today)));
      }),
    );
  });
});

describe('overpayment refusal', () => {
  test('no reason while the total still covers what was paid', () => {
    assert.equal(overpaymentReason({ totalGross: 1000, amountPaid: 1000, dueDate: null }, 'INV-7'), null);
    assert.equal(overpaymentReason({ totalGross: 1000, amountPaid: 0, dueDate: null }, 'INV-7'), null);
  });

  test('a total below what was paid is refused, naming the invoice and both amounts', () => {
    const reason = overpaymentReason({ totalGross: 900, amountPaid: 1000, dueDate: null }, 'INV-7');
    assert.ok(reason);
    assert.match(reason, /INV-7/);
    assert.match(reason, /\b900\b/);
    assert.match(reason, /\b1000\b/);
  });

  test('refused exactly when the amount paid is above the total', () => {
    fc.assert(
      fc.property(money, (m) => {
        assert.equal(overpaymentReason(m, 'INV-1') !== null, m.amountPaid > m.totalGross);
      }),
      { numRuns: 2000 },
    );
  });
});

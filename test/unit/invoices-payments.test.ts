// The payment date rule (src/invoices/payments.ts) without a database: money received on the day of
// the invoice's earliest service or later is accepted, the day before is refused, and an invoice with
// no lines has no date to be before.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { receivedBeforeServiceReason } from '../../src/invoices/payments.ts';

test('a payment is refused only when received before the earliest date of service', () => {
  assert.equal(receivedBeforeServiceReason('2026-03-10', '2026-03-10'), null);
  assert.equal(receivedBeforeServiceReason('2026-03-11', '2026-03-10'), null);
  assert.equal(receivedBeforeServiceReason('2026-03-09', null), null);
  assert.match(
    receivedBeforeServiceReason('2026-03-09', '2026-03-10') ?? '',
    /^receivedAt \(2026-03-09 in the practice's time zone\) is before the invoice's earliest date of service \(2026-03-10\)$/,
  );
  assert.notEqual(receivedBeforeServiceReason('2025-03-10', '2026-03-10'), null, 'a year before');
});

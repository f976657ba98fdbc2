// How an amount is written (src/invoices/money-format.ts): the API's words and the printed account
// write the same amount in their two ways.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatAmount, formatPrintedAmount } from '../../src/invoices/money-format.ts';

test("the API's words: the currency's code, two decimals, no thousands apart", () => {
  assert.equal(formatAmount(123456, 'ZAR'), 'ZAR 1234.56');
  assert.equal(formatAmount(56925, 'ZAR'), 'ZAR 569.25');
  assert.equal(formatAmount(0, 'ZAR'), 'ZAR 0.00');
  assert.equal(formatAmount(-5, 'USD'), '-USD 0.05');
});

test('the printed account: rand as R, thousands apart by a space', () => {
  assert.equal(formatPrintedAmount(123456, 'ZAR'), 'R 1 234.56');
  assert.equal(formatPrintedAmount(123456789, 'ZAR'), 'R 1 234 567.89');
  assert.equal(formatPrintedAmount(-4000, 'ZAR'), '-R 40.00');
  assert.equal(formatPrintedAmount(-5, 'USD'), '-USD 0.05');
});

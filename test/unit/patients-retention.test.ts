// The retention rule as pure functions: when a patient's records may be de-identified, and why an
// erasure is refused (src/patients/retention.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addYears, erasureRefusals, isDormant, retentionEndsOn } from '../../src/patients/retention.ts';

const adult = { lastActivityOn: '2020-03-15', birthDate: '1980-07-01', retentionYears: 6 };

test('an adult is kept retentionYears after their last activity, and dormant from that day', () => {
  assert.equal(retentionEndsOn(adult), '2026-03-15');
  assert.equal(isDormant(adult, '2026-03-14'), false);
  assert.equal(isDormant(adult, '2026-03-15'), true);
  assert.equal(retentionEndsOn({ ...adult, retentionYears: 10 }), '2030-03-15');
});

test('a retention below the six years the HPCSA asks for counts as six', () => {
  assert.equal(retentionEndsOn({ ...adult, retentionYears: 2 }), '2026-03-15');
});

test("a minor is kept until their 21st birthday when that is later than the practice's rule", () => {
  const minor = { lastActivityOn: '2020-03-15', birthDate: '2010-09-30', retentionYears: 6 };
  assert.equal(retentionEndsOn(minor), '2031-09-30');
  assert.equal(isDormant(minor, '2031-09-29'), false);
  assert.equal(isDormant(minor, '2031-09-30'), true);
  // Treated at 17: the practice's six years end after the 21st birthday, and decide.
  const older = { lastActivityOn: '2027-10-01', birthDate: '2010-09-30', retentionYears: 6 };
  assert.equal(retentionEndsOn(older), '2033-10-01');
});

test('29 February moves to 28 February in a year without it', () => {
  assert.equal(addYears('2020-02-29', 1), '2021-02-28');
  assert.equal(addYears('2020-02-29', 4), '2024-02-29');
  assert.equal(
    retentionEndsOn({ lastActivityOn: '2020-01-01', birthDate: '2004-02-29', retentionYears: 6 }),
    '2026-01-01',
  );
  assert.equal(
    retentionEndsOn({ lastActivityOn: '2010-01-01', birthDate: '2004-02-29', retentionYears: 6 }),
    '2025-02-28',
  );
});

test('an erasure is refused for every reason at once; a lawful ground ends retention early, and nothing else', () => {
  const facts = { ...adult, erased: false, openInvoices: 1, claimsInFlight: 2 };
  assert.deepEqual(erasureRefusals(facts, '2024-01-01', null), [
    'open_invoice',
    'claim_in_flight',
    'retention_required',
  ]);
  assert.deepEqual(erasureRefusals(facts, '2024-01-01', 'the patient objected (POPIA s11(3))'), [
    'open_invoice',
    'claim_in_flight',
  ]);
  const settled = { ...facts, openInvoices: 0, claimsInFlight: 0 };
  assert.deepEqual(erasureRefusals(settled, '2024-01-01', null), ['retention_required']);
  assert.deepEqual(erasureRefusals(settled, '2026-03-15', null), []);
  assert.deepEqual(erasureRefusals({ ...settled, erased: true }, '2030-01-01', null), ['already_erased']);
});

test('a patient kept for life is never dormant, and an erasure of them needs a lawful ground', () => {
  const lifelong = { ...adult, lifelong: true };
  assert.equal(retentionEndsOn(lifelong), null);
  assert.equal(isDormant(lifelong, '2090-01-01'), false);
  const facts = { ...lifelong, erased: false, openInvoices: 0, claimsInFlight: 0 };
  assert.deepEqual(erasureRefusals(facts, '2090-01-01', null), ['retention_required']);
  assert.deepEqual(erasureRefusals(facts, '2090-01-01', 'a court order'), []);
});

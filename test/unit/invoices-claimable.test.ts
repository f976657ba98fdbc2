// Whether an invoice can be claimed, decided without a database (claimVerdict in
// src/invoices/claimable.ts, the one rule of the bill's submitClaim, a claim sent and a claim
// resubmitted): only an issued, partially paid or overdue invoice, with lines, each with a primary
// diagnosis, under a coverage found; a coverageId that is not the patient's blames that field, and the
// invoice's own refusals come before it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CoverageFound, CoverageRow } from '../../src/insurance/service.ts';
import { type ClaimableInvoice, claimVerdict, NO_ACTIVE_COVERAGE } from '../../src/invoices/claimable.ts';

const COVERAGE: CoverageRow = {
  id: 'cov_1',
  patient_id: 'pat_1',
  plan_id: 'plan_1',
  member_number: 'M-1',
  dependent_code: null,
  member_surname: null,
  member_initials: null,
  start_date: null,
  end_date: null,
  plan_active: true,
  created_at: new Date('2026-01-01T00:00:00Z'),
};
const FOUND: CoverageFound = { kind: 'found', coverage: COVERAGE };

const line = (code: string, primary: boolean[]) => ({
  code,
  diagnoses: primary.map((p) => ({ primary: p })),
});

const invoice = (over: Partial<ClaimableInvoice> = {}): ClaimableInvoice => ({
  number: 'INV-000007',
  status: 'issued',
  lines: [line('0190', [true, false]), line('0191', [true])],
  ...over,
});

test('an owing invoice with lines that each have a primary diagnosis is claimed under the coverage found', () => {
  for (const status of ['issued', 'partially_paid', 'overdue']) {
    assert.deepEqual(
      claimVerdict(invoice({ status }), FOUND),
      { claimable: true, coverage: COVERAGE },
      status,
    );
  }
});

test('an invoice not owed on is refused, naming its number and status', () => {
  for (const status of ['draft', 'amending', 'balanced', 'written_off', 'cancelled', 'entered_in_error']) {
    assert.deepEqual(
      claimVerdict(invoice({ status }), FOUND),
      {
        claimable: false,
        reason: `Invoice INV-000007 is ${status}; only an issued, partially paid or overdue invoice can be claimed.`,
        field: null,
      },
      status,
    );
  }
});

test('an invoice without lines, or with a line without a primary diagnosis, is refused naming the first such line', () => {
  assert.deepEqual(claimVerdict(invoice({ lines: [] }), FOUND), {
    claimable: false,
    reason: 'Invoice INV-000007 has no lines to claim.',
    field: null,
  });
  const lines = [line('0190', [true]), line('0191', [false, false]), line('0192', [])];
  assert.deepEqual(claimVerdict(invoice({ lines }), FOUND), {
    claimable: false,
    reason: 'Line 2 (0191) has no primary diagnosis; add one before claiming.',
    field: null,
  });
});

test("without a coverage the claim is refused; a coverageId not the patient's blames that field", () => {
  assert.deepEqual(claimVerdict(invoice(), { kind: 'none' }), {
    claimable: false,
    reason: NO_ACTIVE_COVERAGE,
    field: null,
  });
  assert.deepEqual(claimVerdict(invoice(), { kind: 'not_patients' }), {
    claimable: false,
    reason: "coverageId is not one of this patient's coverages",
    field: 'coverageId',
  });
});

test("the invoice's own refusals come before the coverage's", () => {
  const draft = claimVerdict(invoice({ status: 'draft' }), { kind: 'not_patients' });
  assert.equal(draft.claimable, false);
  assert.equal(draft.claimable === false && draft.field, null);
  const noPrimary = claimVerdict(invoice({ lines: [line('0190', [])] }), { kind: 'none' });
  assert.match(noPrimary.claimable === false ? noPrimary.reason : '', /no primary diagnosis/);
});

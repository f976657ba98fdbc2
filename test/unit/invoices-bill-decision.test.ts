// What a bill makes of a visit, decided without a database (decideBill in
// src/invoices/bill-decision.ts): a line per procedure that was done, at the first rate found, with the
// diagnoses it names (else the visit's), the first primary; the invoice dated and due in the practice's
// time zone, a draft or issued; issuing refused for unpriced lines; the claim sent under the coverage
// found only for an issued invoice, when claims are not held back and the claim rule lets it go, with
// the invoice inserted as that claim leaves it, and otherwise its reason.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CoverageRow } from '../../src/insurance/service.ts';
import { type BillFacts, decideBill } from '../../src/invoices/bill-decision.ts';
import { codeKey, type RateCandidate } from '../../src/invoices/rates.ts';
import type { PracticeBilling } from '../../src/practices/service.ts';

const BILLING: PracticeBilling = {
  id: 'org_1',
  name: 'Practice',
  currency: 'ZAR',
  timezone: 'Africa/Johannesburg',
  vatRateBasisPoints: 1500,
  paymentTermsDays: 30,
  invoiceNumberPrefix: 'INV-',
  accountGaps: [],
  retentionYears: 5,
};
// 23:30 UTC is already the next day in Johannesburg (UTC+2).
const NOW = new Date('2026-03-10T23:30:00Z');
const CHANGED_AT = new Date('2026-03-10T23:30:00.123Z');
const COVERAGE = { id: 'cov_1', plan_id: 'plan_1' } as CoverageRow;

const rate = (amount: number, source: RateCandidate['source'] = 'insurance_plan'): RateCandidate => ({
  source,
  name: null,
  amount,
  currency: 'ZAR',
  pricingSource: source === 'insurance_plan' ? 'medical_aid' : 'custom',
});

const procedure = (id: string, code: string, diagnosisCodes: string[], status = 'completed') => ({
  id,
  status,
  system: 'TARIFF',
  code,
  display: `Procedure ${code}`,
  diagnosis_codes: diagnosisCodes,
});

function facts(over: Partial<BillFacts> = {}): BillFacts {
  return {
    billing: BILLING,
    request: {},
    visit: {
      encounter: {
        patient_id: 'pat_1',
        practitioner_id: 'prac_1',
        start_at: new Date('2026-03-09T21:30:00Z'),
        end_at: new Date('2026-03-09T22:30:00Z'),
      },
      diagnoses: [
        { system: 'ICD-10', code: 'J06.9', display: 'Upper respiratory infection' },
        { system: 'ICD-10', code: 'I10', display: 'Hypertension' },
      ],
      procedures: [
        procedure('proc_1', '0190', ['I10']),
        procedure('proc_2', '0199', [], 'not_done'),
        procedure('proc_3', '0191', []),
      ],
    },
    patient: { prefix: 'Dr', given_names: ['Ann', 'B'], last_name: 'Cole' },
    coverage: { kind: 'found', coverage: COVERAGE },
    rates: new Map([
      [codeKey('TARIFF', '0190'), [rate(50_000), rate(1, 'code_default')]],
      [codeKey('TARIFF', '0191'), [rate(20_000, 'practice')]],
    ]),
    claimHeldBack: null,
    ids: { invoice: 'inv_1', lines: ['li_1', 'li_2'] },
    now: NOW,
    changedAt: CHANGED_AT,
    ...over,
  };
}

const ISSUE_AND_CLAIM = { issue: true, submitClaim: true };

test("a line per procedure done, at the first rate found, with the diagnoses it names or else the visit's", () => {
  const { lines } = decideBill(facts());
  assert.deepEqual(
    lines.map((l) => [
      l.id,
      l.position,
      l.code,
      l.unit_price,
      l.total,
      l.pricing_source,
      l.unpriced,
      l.procedure_id,
    ]),
    [
      ['li_1', 1, '0190', 50_000, 50_000, 'medical_aid', false, 'proc_1'],
      ['li_2', 2, '0191', 20_000, 20_000, 'custom', false, 'proc_3'],
    ],
  );
  assert.deepEqual(JSON.parse(lines[0]!.diagnoses as string), [
    { system: 'ICD-10', code: 'I10', display: 'Hypertension', primary: true },
  ]);
  assert.deepEqual(
    JSON.parse(lines[1]!.diagnoses as string).map((d: { code: string; primary: boolean }) => [
      d.code,
      d.primary,
    ]),
    [
      ['J06.9', true],
      ['I10', false],
    ],
  );
  // The visit ran from 23:30 to 00:30 in Johannesburg: two days of service.
  assert.deepEqual([lines[0]!.service_date, lines[0]!.service_date_end], ['2026-03-09', '2026-03-10']);
});

test("without issue the invoice is a draft addressed to the patient, dated and due in the practice's time zone", () => {
  const { invoice, claimUnder, outcome } = decideBill(facts());
  assert.equal(invoice.status, 'draft');
  assert.equal(invoice.issued_at, null);
  assert.equal(invoice.number, '#inv_1', 'a provisional number until the commit gives the number');
  assert.equal(invoice.date, '2026-03-11');
  assert.equal(invoice.due_date, '2026-04-10');
  assert.equal(invoice.recipient_name, 'Dr Ann B Cole');
  assert.deepEqual([invoice.total_net, invoice.total_gross], [70_000, 80_500]);
  assert.deepEqual(
    [invoice.pricing_coverage_id, invoice.coverage_id, invoice.claim_status],
    ['cov_1', null, null],
  );
  assert.equal(invoice.updated_at, CHANGED_AT);
  assert.equal(claimUnder, null);
  assert.deepEqual(outcome, {
    issued: null,
    issueSkippedReason: null,
    claimQueued: null,
    claimSkippedReason: null,
  });
});

test('issued and claimed: inserted issued, its claim submitting under the coverage found', () => {
  const { invoice, claimUnder, outcome } = decideBill(facts({ request: ISSUE_AND_CLAIM }));
  assert.deepEqual([invoice.status, invoice.issued_at], ['issued', NOW]);
  assert.deepEqual([invoice.claim_status, invoice.coverage_id], ['submitting', 'cov_1']);
  assert.equal(claimUnder, COVERAGE);
  assert.deepEqual(outcome, {
    issued: true,
    issueSkippedReason: null,
    claimQueued: true,
    claimSkippedReason: null,
  });
});

test('a line no rate was found for is priced 0 and keeps the invoice from being issued, and so claimed', () => {
  const rates = new Map([[codeKey('TARIFF', '0190'), [rate(50_000)]]]);
  const { invoice, lines, claimUnder, outcome } = decideBill(facts({ request: ISSUE_AND_CLAIM, rates }));
  assert.deepEqual([lines[1]!.unit_price, lines[1]!.unpriced, lines[1]!.pricing_source], [0, true, null]);
  assert.deepEqual([invoice.status, invoice.claim_status, invoice.coverage_id], ['draft', null, null]);
  assert.equal(claimUnder, null);
  assert.deepEqual(outcome, {
    issued: false,
    issueSkippedReason:
      "Invoice #inv_1 has lines no rate was found for: line 2 (0191, li_2). Set each one's price (PUT the line; unitPrice 0 for no charge) or delete it before issuing.",
    claimQueued: false,
    claimSkippedReason:
      'Invoice #inv_1 was not issued (see issueSkippedReason); only an issued invoice can be claimed.',
  });
});

test('claims held back: issued, its claim skipped with the reason given', () => {
  const held = 'The claims queue is behind; claim it later.';
  const { invoice, claimUnder, outcome } = decideBill(
    facts({ request: ISSUE_AND_CLAIM, claimHeldBack: held }),
  );
  assert.deepEqual([invoice.status, invoice.claim_status], ['issued', null]);
  assert.equal(claimUnder, null);
  assert.deepEqual([outcome.issued, outcome.claimQueued, outcome.claimSkippedReason], [true, false, held]);
});

test('the claim rule skips the claim, and the invoice is inserted without one', () => {
  const skipped = (over: Partial<BillFacts>) => {
    const { invoice, claimUnder, outcome } = decideBill(facts({ request: ISSUE_AND_CLAIM, ...over }));
    assert.deepEqual([invoice.claim_status, invoice.coverage_id, claimUnder], [null, null, null]);
    assert.equal(outcome.issued, true);
    assert.equal(outcome.claimQueued, false);
    return outcome.claimSkippedReason;
  };
  assert.match(skipped({ coverage: { kind: 'none' } }) ?? '', /no active coverage/);
  const noDiagnoses = facts().visit;
  assert.equal(
    skipped({ visit: { ...noDiagnoses, diagnoses: [] } }),
    'Line 1 (0190) has no primary diagnosis; add one before claiming.',
  );
  // Every line priced 0: issued, nothing is owed, so nothing is claimed.
  const free = new Map([
    [codeKey('TARIFF', '0190'), [rate(0)]],
    [codeKey('TARIFF', '0191'), [rate(0)]],
  ]);
  assert.equal(
    skipped({ rates: free }),
    'Invoice #inv_1 is balanced; only an issued, partially paid or overdue invoice can be claimed.',
  );
});

test('a visit without a coverage is priced without a plan and billed with none', () => {
  const { invoice } = decideBill(
    facts({ coverage: { kind: 'none' }, request: { placeOfServiceCode: '11' } }),
  );
  assert.deepEqual([invoice.pricing_coverage_id, invoice.place_of_service_code], [null, '11']);
});

// The patient's account decided from plain values (src/accounts/view.ts, message.ts), the choice of
// the patient's address (mail-job.ts) and what a mail server's failure means (notifications/mailer.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { accountMail } from '../../src/accounts/message.ts';
import { type AccountParts, accountViewOf, initialsOf } from '../../src/accounts/view.ts';
import { failureOf } from '../../src/notifications/mailer.ts';
import { emailOf } from '../../src/patients/email.ts';

function parts(overrides: Partial<AccountParts> = {}): AccountParts {
  return {
    practice: {
      name: 'Practice',
      practiceNumber: null,
      groupPracticeNumber: null,
      vatNumber: null,
      vatRateBasisPoints: 0,
      address: null,
      phone: null,
      email: null,
      bankDetails: null,
    },
    practitioner: { name: 'Dr A', registrationNumber: null },
    patient: { lastName: 'Dlamini', givenNames: ['Lerato', 'Grace'], address: ['1 Road'] },
    coverage: {
      schemeName: 'Ubuntu',
      planName: 'Essential',
      memberNumber: 'M1',
      dependentCode: '01',
      memberSurname: null,
      memberInitials: null,
    },
    invoice: {
      number: 'INV-000001',
      status: 'issued',
      date: '2026-12-06',
      dueDate: '2027-01-05',
      currency: 'ZAR',
      totalNet: 10000,
      totalGross: 10000,
      balanceDue: 123456,
      creditDue: 0,
      amountWrittenOff: 0,
      explanation: 'Total R 100.00. You owe R 1 234.56.',
    },
    lines: [
      {
        serviceDate: '2026-12-01',
        serviceDateEnd: null,
        code: '0190',
        description: 'Consultation',
        modifiers: [],
        diagnoses: [
          { code: 'I10', primary: false },
          { code: 'J06.9', primary: true },
        ],
        quantity: 1,
        unitPrice: 10000,
        total: 10000,
      },
    ],
    payments: [
      { source: 'insurer', amount: 6000 },
      { source: 'patient', amount: 1000 },
    ],
    refunds: [],
    ...overrides,
  };
}

test('initials of each name', () => {
  assert.equal(initialsOf(['Thandi', 'mary']), 'T.M.');
  assert.equal(initialsOf(['Зоя']), 'З.');
});

test('a dependant without a recorded member says so, and the gaps the law needs are named', () => {
  const view = accountViewOf(parts());
  assert.ok(view.patientLines.includes('Main member: not recorded'));
  assert.ok(view.practiceLines.includes('Practice number (PCNS): not recorded'));
  assert.ok(view.practitionerLines.includes('HPCSA registration number: not recorded'));
  assert.deepEqual(view.missing.sort(), ['address', 'bankDetails', 'practiceNumber']);
  assert.equal(view.title, 'Account');
  assert.equal(view.lines[0]!.diagnoses, 'J06.9, I10', 'the primary diagnosis first');
  assert.deepEqual(
    view.totals.find(([label]) => label === 'Paid by medical scheme'),
    ['Paid by medical scheme', 'R 60.00'],
  );
  assert.ok(!view.patientLines.some((l) => l.startsWith('Address')), 'no address on an account');
});

test('the main member is the patient with dependant code 00; a VAT number makes a tax invoice', () => {
  const base = parts();
  const view = accountViewOf({
    ...base,
    practice: { ...base.practice, vatNumber: '4123456789', vatRateBasisPoints: 1500 },
    coverage: { ...base.coverage!, dependentCode: '00' },
    invoice: { ...base.invoice, totalNet: 10000, totalGross: 11500 },
  });
  assert.equal(view.title, 'Tax Invoice');
  assert.ok(view.patientLines.includes('Main member: Dlamini, L.G.'));
  assert.ok(view.patientLines.includes('Address: 1 Road'));
  assert.deepEqual(view.totals[1], ['VAT at 15%', 'R 15.00']);
});

test('the totals show what was written off and a credit owed to the patient, and the explanation under them', () => {
  const base = parts();
  const view = accountViewOf({
    ...base,
    invoice: { ...base.invoice, status: 'written_off', balanceDue: 0, amountWrittenOff: 4000, creditDue: 0 },
  });
  assert.deepEqual(view.totals.slice(-2), [
    ['Written off', '-R 40.00'],
    ['Balance due', 'R 0.00'],
  ]);
  assert.equal(view.explanation, base.invoice.explanation);
  const credited = accountViewOf({ ...base, invoice: { ...base.invoice, balanceDue: 0, creditDue: 2500 } });
  assert.deepEqual(credited.totals.at(-1), ['Credit owed to you', 'R 25.00']);
  assert.ok(!credited.totals.some(([label]) => label === 'Written off'));
});

test('the e-mail says the amount due and the due date, never a diagnosis or the name', () => {
  const mail = accountMail(parts(), false);
  assert.equal(mail.subject, 'Account INV-000001 from Practice');
  assert.match(mail.text, /Amount due: R 1 234\.56/);
  assert.match(mail.text, /Due date: 2027-01-05/);
  for (const secret of ['J06.9', 'I10', 'Dlamini', 'Lerato', 'Consultation'])
    assert.ok(!mail.text.includes(secret));
  assert.match(accountMail(parts(), true).subject, /^Corrected Account/);
});

test("the patient's address: the email contact point of lowest rank, then the first", () => {
  assert.equal(
    emailOf([
      { system: 'phone', value: '082', rank: 1 },
      { system: 'email', value: 'b@x.org', rank: null },
      { system: 'email', value: 'c@x.org', rank: 2 },
      { system: 'email', value: 'd@x.org', rank: null },
    ]),
    'c@x.org',
  );
  assert.equal(emailOf([{ system: 'email', value: ' b@x.org ', rank: null }]), 'b@x.org');
  assert.equal(emailOf([]), undefined);
});

test("a 5xx is the server's final word; a 4xx or no connection may pass", () => {
  assert.deepEqual(failureOf({ responseCode: 550, response: '550 5.1.1 no such user' }), {
    reason: 'the mail server answered 550 5.1.1 no such user',
    permanent: true,
  });
  assert.equal(failureOf({ responseCode: 451, response: '451 try later' }).permanent, false);
  assert.equal(failureOf({ code: 'ECONNREFUSED', message: 'connect refused' }).permanent, false);
});

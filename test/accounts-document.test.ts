import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  ACCOUNT_DETAILS,
  accountPatient,
  accountPractice,
  fetchDocument,
  issuedAccount,
  pdfPages,
} from './accounts-fixtures.ts';
import { bill, newVisit, refusedWith } from './billing-fixtures.ts';
import { describeEachBackend, startService, type TestService, uniqueKey } from './harness.ts';

describeEachBackend('the patient account (PDF)', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });

  test("a VAT-registered practice's account is a tax invoice carrying every regulation 5 item", async () => {
    const practice = await accountPractice(svc);
    const { patientId, memberNumber } = await accountPatient(practice, {
      lastName: 'Dlamini',
      givenNames: ['Lerato', 'Grace'],
      member: { memberSurname: 'Mokoena', memberInitials: 'T.M.' },
      address: {
        use: 'billing',
        lines: ['4 Vilakazi Street'],
        city: 'Soweto',
        postalCode: '1804',
        country: 'ZA',
      },
    });
    const invoice = await issuedAccount(svc, practice, patientId, 1);
    const document = await fetchDocument(svc, practice, invoice.id);
    assert.equal(document.status, 200);
    assert.equal(document.headers.get('content-type'), 'application/pdf');
    assert.match(
      document.headers.get('content-disposition') ?? '',
      new RegExp(`filename="${invoice.number}\\.pdf"`),
    );
    const text = (await pdfPages(document.bytes)).join('\n');
    const expected = [
      'Tax Invoice',
      practice.name,
      ...ACCOUNT_DETAILS.address.lines,
      'Cape Town 8001',
      ACCOUNT_DETAILS.phone,
      ACCOUNT_DETAILS.email,
      // (a) the member, (b) the patient
      'Main member: Mokoena, T.M.',
      'Patient: Dlamini, Lerato G.',
      // the recipient's address, on a tax invoice
      'Address: 4 Vilakazi Street, Soweto 1804, ZA',
      // (c) the scheme, (d) the membership number and dependant code
      'Medical scheme: ',
      `Membership number: ${memberNumber}`,
      'Dependant code: 01',
      // (e) practice number, group practice number, practitioner and registration
      `Practice number (PCNS): ${ACCOUNT_DETAILS.practiceNumber}`,
      `Group practice number: ${ACCOUNT_DETAILS.groupPracticeNumber}`,
      'Services rendered by Dr Thandi Nkosi',
      'HPCSA registration number: MP0123456',
      // (f) diagnosis and item codes with modifiers, (g) dates, (h) nature and cost
      '0190',
      'J06.9',
      '0191',
      '0011',
      'I10',
      'Follow-up 1',
      // the nature of the service in full: a long description wraps instead of being cut
      'straightforward problem)',
      `Tax invoice number: ${invoice.number}`,
      `Invoice date: ${invoice.date}`,
      `Due date: ${invoice.dueDate}`,
      `VAT registration number: ${ACCOUNT_DETAILS.vatNumber}`,
      'Total before VAT',
      'VAT at 15%',
      'Paid by medical scheme',
      'Paid by patient',
      'Balance due',
      // why the patient owes what they owe: the VAT in the total, and what is owed now
      'for the services plus VAT of',
      'You owe R',
      `Account number: ${ACCOUNT_DETAILS.bankDetails.accountNumber}`,
      `Payment reference: ${invoice.number}`,
    ];
    // A long description wraps: its words are read back across lines.
    const flat = text.replace(/\s+/g, ' ');
    for (const item of expected) assert.ok(flat.includes(item), `the account shows "${item}":\n${text}`);
    const lines = invoice.lineItems as Array<{ serviceDate: string }>;
    assert.ok(text.includes(lines[0]!.serviceDate));
    const gross = (invoice.totalGross as number) / 100;
    assert.ok(text.includes(`R ${gross.toFixed(2).replace(/\B(?=(\d{3})+(?!\d))/g, ' ')}`), text);
  });

  test('a practice not VAT registered issues an account; a patient with no coverage has no member or scheme', async () => {
    const practice = await accountPractice(svc, { ...ACCOUNT_DETAILS, vatNumber: null }, 0);
    const { patientId } = await accountPatient(practice);
    const invoice = await issuedAccount(svc, practice, patientId);
    const text = (await pdfPages((await fetchDocument(svc, practice, invoice.id)).bytes)).join('\n');
    assert.ok(text.startsWith('Account'), text);
    for (const absent of [
      'Tax Invoice',
      'Tax invoice',
      'VAT registration number',
      'Main member',
      'Medical scheme',
      'Membership number',
    ]) {
      assert.ok(!text.includes(absent), `no "${absent}" in:\n${text}`);
    }
    assert.ok(text.includes(`Invoice number: ${invoice.number}`));
  });

  test('a practice with no account details still issues; the account says what is missing and the operator is warned', async () => {
    const practice = await accountPractice(svc, {}, 0);
    const { patientId } = await accountPatient(practice);
    const invoice = await issuedAccount(svc, practice, patientId);
    assert.equal(invoice.status, 'issued');
    const text = (await pdfPages((await fetchDocument(svc, practice, invoice.id)).bytes)).join('\n');
    assert.ok(text.includes('Practice number (PCNS): not recorded'), text);
    assert.ok(text.includes(`Payment reference: ${invoice.number}`), text);
    const notes = await svc.admin(
      'GET',
      `/practices/${practice.practiceId}/notifications?subjectId=${invoice.id}`,
    );
    assert.equal(notes.body.data.length, 1);
    assert.match(
      notes.body.data[0].message,
      /Warning: the account lacks the practice's practiceNumber, address, bankDetails/,
    );
  });

  test('a name outside Latin-1 is printed as written', async () => {
    const practice = await accountPractice(svc);
    const { patientId } = await accountPatient(practice, {
      lastName: 'Nguyễn',
      givenNames: ['Łucja', 'Зоя'],
    });
    const invoice = await issuedAccount(svc, practice, patientId);
    const text = (await pdfPages((await fetchDocument(svc, practice, invoice.id)).bytes)).join('\n');
    assert.ok(text.includes('Patient: Nguyễn, Łucja З.'), text);
  });

  test('an invoice of 40 lines breaks across pages with every line once and the totals on the last page', async () => {
    const practice = await accountPractice(svc);
    const { patientId } = await accountPatient(practice);
    const invoice = await issuedAccount(svc, practice, patientId, 39);
    assert.equal((invoice.lineItems as unknown[]).length, 40);
    const pages = await pdfPages((await fetchDocument(svc, practice, invoice.id)).bytes);
    assert.ok(pages.length >= 2, `${pages.length} pages`);
    for (let i = 1; i <= 39; i++) {
      const found = pages.filter((page) => new RegExp(`Follow-up ${i}\\b`).test(page)).length;
      assert.equal(found, 1, `line Follow-up ${i} is on exactly one page`);
    }
    for (const [i, page] of pages.entries()) {
      assert.ok(page.includes(`page ${i + 1} of ${pages.length}`), page);
      assert.equal(
        page.includes('Balance due'),
        i === pages.length - 1,
        `totals only on the last page (page ${i + 1})`,
      );
    }
  });

  test('a draft answers 422 naming why; an unknown invoice 404', async () => {
    const practice = await accountPractice(svc);
    const { patientId } = await accountPatient(practice);
    const visit = await newVisit(svc, practice.api, practice.practitionerId, patientId);
    const draft = await bill(practice.api, visit.id);
    const answer = await practice.api('GET', `/invoices/${draft.body.invoice.id}/document`);
    refusedWith(answer, 422, 'business_rule');
    assert.match(answer.body.detail, /never issued/);
    assert.equal((await practice.api('GET', '/invoices/inv_nope/document')).status, 404);
  });

  test('after an amendment and a VAT change, the account shows the invoice as re-issued', async () => {
    const practice = await accountPractice(svc);
    const { patientId } = await accountPatient(practice);
    const invoice = await issuedAccount(svc, practice, patientId);
    const amend = await practice.api('POST', `/invoices/${invoice.id}/amend`, {
      idempotencyKey: uniqueKey(),
    });
    assert.equal(amend.status, 200, amend.text);
    const settings = await svc.admin('PUT', `/practices/${practice.practiceId}/billing-settings`, {
      vatRateBasisPoints: 1600,
      paymentTermsDays: 30,
      invoiceNumberPrefix: 'ACC-',
    });
    assert.equal(settings.status, 200, settings.text);
    const reissued = await practice.api('POST', `/invoices/${invoice.id}/issue`, {
      idempotencyKey: uniqueKey(),
    });
    assert.equal(reissued.status, 200, reissued.text);
    const text = (await pdfPages((await fetchDocument(svc, practice, invoice.id)).bytes)).join('\n');
    assert.ok(text.includes('VAT at 16%'), text);
  });
});

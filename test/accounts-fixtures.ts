// Fixtures the patient-account tests share: a practice with every account detail, a practitioner with
// an HPCSA registration, a patient (optionally with an e-mail address and a dependant's coverage), an
// issued invoice, and the account's text read back from its PDF.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { extractText, getDocumentProxy } from 'unpdf';
import { PERMISSIONS } from '../src/auth/permissions.ts';
import { type Api, addCoverage, bill, lineBody, newPatient, newVisit } from './billing-fixtures.ts';
import { apiClient, type TestService, uniqueKey } from './harness.ts';

export const ACCOUNT_DETAILS = {
  practiceNumber: '0123456',
  groupPracticeNumber: 'GP778',
  vatNumber: '4123456789',
  address: { lines: ['12 Example Street', 'Gardens'], city: 'Cape Town', postalCode: '8001', country: 'ZA' },
  phone: '+27 21 555 0100',
  email: 'accounts@practice.example',
  bankDetails: {
    bank: 'Example Bank',
    accountName: 'Account Practice',
    accountNumber: '0012345678',
    branchCode: '250655',
  },
};

export interface AccountPractice {
  practiceId: string;
  practitionerId: string;
  api: Api;
  name: string;
  key: string;
}

/** A practice with `details` (default: all of them, VAT registered at 15%) and its client. */
export async function accountPractice(
  svc: TestService,
  details: Record<string, unknown> = ACCOUNT_DETAILS,
  vatRateBasisPoints = 1500,
): Promise<AccountPractice> {
  const name = `Account Practice ${randomBytes(3).toString('hex')}`;
  const practice = await svc.admin('POST', '/practices', { name, ...details });
  assert.equal(practice.status, 201, practice.text);
  const practiceId = practice.body.id as string;
  const settings = await svc.admin('PUT', `/practices/${practiceId}/billing-settings`, {
    vatRateBasisPoints,
    paymentTermsDays: 30,
    invoiceNumberPrefix: 'ACC-',
  });
  assert.equal(settings.status, 200, settings.text);
  const practitioner = await svc.admin('POST', `/practices/${practiceId}/practitioners`, {
    name: 'Dr Thandi Nkosi',
    registrationNumber: 'MP0123456',
  });
  assert.equal(practitioner.status, 201, practitioner.text);
  const client = await svc.admin('POST', `/practices/${practiceId}/clients`, {
    name: 'Account client',
    permissions: [...PERMISSIONS],
  });
  const key = await svc.admin('POST', `/clients/${client.body.id}/keys`, {});
  assert.equal(key.status, 201, key.text);
  return {
    practiceId,
    practitionerId: practitioner.body.id,
    api: apiClient(svc, key.body.key),
    name,
    key: key.body.key,
  };
}

export interface PatientOptions {
  email?: string;
  /** A dependant (code 01) of this main member on pln_ubuntu_essential; none: no coverage. */
  member?: { memberSurname: string; memberInitials: string };
  lastName?: string;
  givenNames?: string[];
  address?: Record<string, unknown>;
}

/** A patient as the options say; answers its id and its membership number (null without coverage). */
export async function accountPatient(
  practice: AccountPractice,
  options: PatientOptions = {},
): Promise<{ patientId: string; memberNumber: string | null }> {
  const patientId = await newPatient(practice.api, {
    ...(options.lastName ? { lastName: options.lastName } : {}),
    ...(options.givenNames ? { givenNames: options.givenNames } : {}),
    ...(options.email ? { contactPoints: [{ system: 'email', value: options.email, rank: 1 }] } : {}),
    ...(options.address ? { addresses: [options.address] } : {}),
  });
  if (!options.member) return { patientId, memberNumber: null };
  const memberNumber = `M${randomBytes(4).toString('hex')}`;
  await addCoverage(practice.api, patientId, 'pln_ubuntu_essential', {
    memberNumber,
    dependentCode: '01',
    ...options.member,
  });
  return { patientId, memberNumber };
}

/**
 * A visit billed for the patient (a consultation 0190 for J06.9), `extraLines` more lines added
 * (0191, modifier 0011) and the invoice issued; answers the issued invoice.
 */
export async function issuedAccount(
  svc: TestService,
  practice: AccountPractice,
  patientId: string,
  extraLines = 0,
): Promise<{ id: string; number: string; [key: string]: unknown }> {
  const visit = await newVisit(svc, practice.api, practice.practitionerId, patientId);
  const billed = await bill(practice.api, visit.id);
  assert.equal(billed.status, 201, billed.text);
  const invoiceId = billed.body.invoice.id as string;
  const day = billed.body.invoice.lineItems[0].serviceDate as string;
  for (let i = 0; i < extraLines; i++) {
    const line = await practice.api('POST', `/invoices/${invoiceId}/line-items`, {
      body: lineBody({
        serviceDate: day,
        description: `Follow-up ${i + 1}`,
        modifiers: ['0011'],
        diagnoses: [{ code: 'I10' }],
      }),
      idempotencyKey: uniqueKey(),
    });
    assert.equal(line.status, 201, line.text);
  }
  const issued = await practice.api('POST', `/invoices/${invoiceId}/issue`, { idempotencyKey: uniqueKey() });
  assert.equal(issued.status, 200, issued.text);
  return issued.body;
}

/** The text of each page of a PDF. */
export async function pdfPages(bytes: Uint8Array): Promise<string[]> {
  const pdf = await getDocumentProxy(new Uint8Array(bytes));
  const { text } = await extractText(pdf, { mergePages: false });
  return text as string[];
}

/** GET /invoices/{invoiceId}/document as bytes, with its status and headers. */
export async function fetchDocument(
  svc: TestService,
  practice: AccountPractice,
  invoiceId: string,
): Promise<{ status: number; headers: Headers; bytes: Uint8Array }> {
  const response = await fetch(`${svc.baseUrl}/api/v1/invoices/${invoiceId}/document`, {
    headers: { authorization: `Bearer ${practice.key}` },
  });
  return {
    status: response.status,
    headers: response.headers,
    bytes: new Uint8Array(await response.arrayBuffer()),
  };
}

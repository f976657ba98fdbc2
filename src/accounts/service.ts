// Owns gathering a patient's account: reads, in the caller's transaction, what view.ts needs of the
// invoice (as it stands now), its payments and refunds, the patient, the coverage with its scheme, the
// practitioner and the practice; refuses an invoice never issued (a draft has no account yet).
import { coverageSchemeNames, findCoverage, firstActiveCoverage } from '../insurance/service.ts';
import { accountMoneyOf, balanceExplanation } from '../invoices/account.ts';
import { formatPrintedAmount } from '../invoices/money-format.ts';
import { paymentsOf } from '../invoices/payments.ts';
import { refundsOf } from '../invoices/refunds.ts';
import { readInvoice } from '../invoices/service.ts';
import type { InvoiceRecord } from '../invoices/store.ts';
import { readPatient } from '../patients/service.ts';
import type { PatientAddress } from '../platform/db/column-types.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { AppError } from '../platform/http/errors.ts';
import { findPractitioner, getPractice } from '../practices/service.ts';
import type { AccountParts } from './view.ts';

export interface GatheredAccount {
  parts: AccountParts;
  record: InvoiceRecord;
}

async function coverageParts(trx: Trx, practiceId: string, coverageId: string | null) {
  if (!coverageId) return null;
  const coverage = await findCoverage(trx, practiceId, coverageId);
  const names = await coverageSchemeNames(trx, practiceId, coverageId);
  if (!coverage || !names) return null;
  return {
    schemeName: names.scheme_name,
    planName: names.plan_name,
    memberNumber: coverage.member_number,
    dependentCode: coverage.dependent_code,
    memberSurname: coverage.member_surname,
    memberInitials: coverage.member_initials,
  };
}

/**
 * The coverage the account names: the invoice's own, else the one it was priced by, else the patient's
 * first coverage active on every date of service (as a claim would take it); null for none.
 */
async function coverageIdOf(trx: Trx, record: InvoiceRecord): Promise<string | null> {
  const i = record.invoice;
  if (i.coverage_id ?? i.pricing_coverage_id) return i.coverage_id ?? i.pricing_coverage_id;
  const days = record.lines.map((l) => l.service_date);
  return (await firstActiveCoverage(trx, i.practice_id, i.patient_id, days))?.id ?? null;
}

/** The patient's billing address, else the first one, as printed lines; null for none. */
function addressOf(addresses: readonly PatientAddress[]): string[] | null {
  const chosen = addresses.find((a) => a.use === 'billing') ?? addresses[0];
  if (!chosen) return null;
  const place = [chosen.city, chosen.postalCode].filter((x): x is string => Boolean(x)).join(' ');
  return [...chosen.lines, ...(place ? [place] : []), ...(chosen.country ? [chosen.country] : [])];
}

/** Everything the invoice's account shows; 404 for no such invoice, 422 for one never issued. */
export async function gatherAccount(
  trx: Trx,
  practiceId: string,
  invoiceId: string,
): Promise<GatheredAccount> {
  const record = await readInvoice(trx, practiceId, invoiceId);
  const i = record.invoice;
  if (i.issued_at === null) {
    throw new AppError(
      'business_rule',
      `Invoice ${i.number} is a ${i.status} that was never issued; its account exists once it is issued (POST /invoices/{invoiceId}/issue).`,
    );
  }
  const practice = await getPractice(trx, practiceId);
  const patient = await readPatient(trx, practiceId, i.patient_id);
  const practitioner = i.practitioner_id
    ? await findPractitioner(trx, practiceId, i.practitioner_id)
    : undefined;
  const payments = await paymentsOf(trx, practiceId, invoiceId);
  const refunds = await refundsOf(trx, practiceId, invoiceId);
  const coverage = await coverageParts(trx, practiceId, await coverageIdOf(trx, record));
  const parts: AccountParts = {
    practice: practiceParts(practice),
    practitioner: practitioner
      ? { name: practitioner.name, registrationNumber: practitioner.registration_number }
      : null,
    patient: {
      // An erased patient has no name left: the account, kept for the books, says so.
      lastName: patient.last_name ?? '(erased patient)',
      givenNames: patient.given_names,
      address: addressOf(patient.addresses),
    },
    coverage,
    ...invoiceParts(record),
    payments: payments.map((p) => ({ source: p.source, amount: Number(p.amount) })),
    refunds: refunds.map((r) => ({ amount: Number(r.amount) })),
  };
  return { parts, record };
}

/** The practice as the account shows it. */
function practiceParts(practice: Awaited<ReturnType<typeof getPractice>>): AccountParts['practice'] {
  return {
    name: practice.name,
    practiceNumber: practice.practice_number,
    groupPracticeNumber: practice.group_practice_number,
    vatNumber: practice.vat_number,
    vatRateBasisPoints: practice.vat_rate_basis_points,
    address: practice.address,
    phone: practice.phone,
    email: practice.email,
    bankDetails: practice.bank_details,
  };
}

/** The invoice and its lines as the account shows them. */
function invoiceParts(record: GatheredAccount['record']): Pick<AccountParts, 'invoice' | 'lines'> {
  const i = record.invoice;
  return {
    invoice: {
      number: i.number,
      status: i.status,
      date: i.date,
      dueDate: i.due_date,
      currency: i.currency,
      totalNet: Number(i.total_net),
      totalGross: Number(i.total_gross),
      balanceDue: Number(i.balance_due),
      creditDue: Number(i.credit_due),
      amountWrittenOff: Number(i.amount_written_off),
      explanation: balanceExplanation(accountMoneyOf(i), formatPrintedAmount),
    },
    lines: record.lines.map((l) => ({
      serviceDate: l.service_date,
      serviceDateEnd: l.service_date_end,
      code: l.code,
      description: l.description,
      modifiers: l.modifiers,
      diagnoses: l.diagnoses.map((d) => ({ code: d.code, primary: d.primary })),
      quantity: Number(l.quantity),
      unitPrice: Number(l.unit_price),
      total: Number(l.total),
    })),
  };
}

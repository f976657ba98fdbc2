// Owns the invoice's life: reading it, keeping its totals equal to the sum of its parts, issuing
// (draft or amending → issued; the patient is told through a recorded notification and the
// invoice.issued event) and reopening for amendment (any issued invoice whose claim is settled). Every
// change locks the invoice and stamps it with its transaction's change time
// (src/platform/db/change-feed.ts).
import type { Updateable } from 'kysely';
import { tellByMail } from '../notifications/tell.ts';
import { patientMailAddress } from '../patients/email.ts';
import { readPatient } from '../patients/service.ts';
import type { PatientRow } from '../patients/store.ts';
import { dateIn } from '../platform/clock.ts';
import { stampChange } from '../platform/db/change-feed.ts';
import type { InvoicesTable } from '../platform/db/tables.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { AppError, fieldErrors, notFound } from '../platform/http/errors.ts';
import { newId } from '../platform/ids.ts';
import type { PracticeBilling } from '../practices/service.ts';
import { recordEvent } from '../webhooks/outbox.ts';
import { accountMoneyOf, balanceExplanation } from './account.ts';
import { invoiceTotals, MAX_AMOUNT } from './money.ts';
import { formatAmount } from './money-format.ts';
import { type InvoiceMoney, OPEN_STATUSES, openStatus, overpaymentReason } from './payment-status.ts';
import type { Invoice, InvoiceStatus } from './schemas.ts';
import {
  findInvoice,
  findInvoiceRow,
  type InvoiceRecord,
  type InvoiceRow,
  lineTotals,
  updateInvoice,
} from './store.ts';

export { listNotifications } from '../notifications/store.ts';
export { ratesFor } from './rates.ts';
export { listInvoiceRows, loadRecords } from './store.ts';

export const EDITABLE_STATUSES: readonly InvoiceStatus[] = ['draft', 'amending'];
export const CLAIM_IN_FLIGHT = ['submitting', 'reversing'];
/** Claim statuses that leave no insurer business open on the invoice. */
const SETTLED_CLAIM: readonly (string | null)[] = [null, 'rejected', 'reversed'];

/**
 * Why the invoice's claim stops it being changed or closed, or null: a claim the insurer is working
 * on must be waited for, and one it accepted (in part, or whose reversal failed) must be reversed
 * first, so the insurer never holds an answer or money for lines that are no longer the invoice's.
 */
export function unsettledClaimReason(invoice: InvoiceRow): string | null {
  const status = invoice.claim_status;
  if (SETTLED_CLAIM.includes(status)) return null;
  const next = CLAIM_IN_FLIGHT.includes(status!)
    ? "wait for the insurer's answer"
    : 'reverse it first (POST /invoices/{invoiceId}/claim/reverse)';
  return `Invoice ${invoice.number} has a claim that is ${status}; ${next}.`;
}

/**
 * Why the invoice's claim stops a write-off, or null: only a claim the insurer is still working on
 * (submitting, reversing), whose answer could move money the write-off would then misstate.
 */
export function claimInFlightReason(invoice: InvoiceRow): string | null {
  if (!CLAIM_IN_FLIGHT.includes(invoice.claim_status ?? '')) return null;
  return `Invoice ${invoice.number} has a claim that is ${invoice.claim_status}; wait for the insurer's answer.`;
}

/** The due date of an invoice dated `date` (YYYY-MM-DD): the practice's payment terms later. */
export function dueDateFrom(date: string, billing: PracticeBilling): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + billing.paymentTermsDays);
  return d.toISOString().slice(0, 10);
}

export function invoiceOf(record: InvoiceRecord): Invoice {
  const i = record.invoice;
  const money = accountMoneyOf(i);
  return {
    object: 'invoice',
    id: i.id,
    number: i.number,
    status: i.status as InvoiceStatus,
    claimStatus: i.claim_status,
    patientId: i.patient_id,
    coverageId: i.coverage_id,
    encounterIds: record.encounterIds,
    recipientName: i.recipient_name,
    date: i.date,
    dueDate: i.due_date,
    currency: i.currency,
    totalNet: Number(i.total_net),
    totalGross: Number(i.total_gross),
    amountPaid: Number(i.amount_paid),
    balanceDue: Number(i.balance_due),
    amountWrittenOff: money.amountWrittenOff,
    creditDue: money.creditDue,
    totalVat: money.totalGross - money.totalNet,
    paidByScheme: money.paidByScheme,
    paidByPatient: money.paidByPatient,
    balanceExplanation: balanceExplanation(money),
    lineItems: record.lines.map((l) => ({
      id: l.id,
      serviceDate: l.service_date,
      serviceDateEnd: l.service_date_end,
      system: l.system,
      code: l.code,
      description: l.description,
      modifiers: l.modifiers,
      quantity: Number(l.quantity),
      unitPrice: Number(l.unit_price),
      subtotal: Number(l.subtotal),
      total: Number(l.total),
      pricingSource: l.pricing_source as Invoice['lineItems'][number]['pricingSource'],
      diagnoses: l.diagnoses,
    })),
    closingReason: i.closed_reason,
    updatedAt: i.updated_at.toISOString(),
  };
}

export async function readInvoice(
  trx: Trx,
  practiceId: string,
  id: string,
  forUpdate = false,
): Promise<InvoiceRecord> {
  const record = await findInvoice(trx, practiceId, id, forUpdate);
  if (!record) throw notFound('Invoice');
  return record;
}

/** Locks the invoice's row until commit, for a change that does not need its lines. */
export async function lockInvoice(trx: Trx, practiceId: string, id: string): Promise<InvoiceRow> {
  const row = await findInvoiceRow(trx, practiceId, id, true);
  if (!row) throw notFound('Invoice');
  return row;
}

/**
 * Stamps the invoice with this transaction's change time and writes `set`. Its totals are computed
 * again only with `retotal`: from the stored lines (true) or from the line totals the caller holds.
 * Only a change of lines and an issue do that; a claim, a payment or a status change leaves the
 * totals as they were issued, whatever the practice's VAT rate has become since.
 * With `settleOn` (the practice's date today), an open invoice's status is set from its money
 * (`openStatus`), so a payment, a re-issue or a take-back can never leave it saying otherwise.
 */
export async function touchInvoice(
  trx: Trx,
  billing: PracticeBilling,
  invoiceId: string,
  set: Updateable<InvoicesTable> = {},
  {
    settleOn,
    retotal = false,
    held,
    amountField,
  }: {
    settleOn?: string;
    retotal?: boolean | readonly number[];
    held?: InvoiceRow;
    /** The request field a total past the contract's largest amount is blamed on (else business_rule). */
    amountField?: string;
  } = {},
) {
  const changedAt = await stampChange(trx);
  const totals = await newTotals(trx, billing, invoiceId, retotal, amountField);
  const changes: Updateable<InvoicesTable> = {
    ...set,
    ...(totals ? { total_net: totals.totalNet, total_gross: totals.totalGross } : {}),
    updated_at: changedAt,
  };
  // The row as this transaction holds it locked: its status after the change is known before the
  // change, so the change is one statement.
  if (held && settleOn !== undefined) {
    const status = statusAfter(held, changes, settleOn);
    if (status !== undefined) changes.status = status;
  }
  const row = await updateInvoice(trx, billing.id, invoiceId, changes);
  const money = {
    totalGross: Number(row.total_gross),
    amountPaid: Number(row.amount_paid),
    dueDate: row.due_date,
  };
  if (settleOn !== undefined && OPEN_STATUSES.includes(row.status as InvoiceStatus)) {
    const status = openStatus(money, settleOn);
    if (status !== row.status) {
      await updateInvoice(trx, billing.id, invoiceId, { status });
      row.status = status;
    }
  }
  return { changedAt, number: row.number, row, ...money };
}

/** The invoice's totals again, when asked (from its lines, or from the line totals given). */
async function newTotals(
  trx: Trx,
  billing: PracticeBilling,
  invoiceId: string,
  retotal: boolean | readonly number[],
  amountField: string | undefined,
) {
  const totals =
    retotal === false
      ? undefined
      : invoiceTotals(
          retotal === true ? await lineTotals(trx, billing.id, invoiceId) : [...retotal],
          billing.vatRateBasisPoints,
        );
  if (totals && totals.totalGross > MAX_AMOUNT) throw totalTooLarge(totals.totalGross, amountField);
  return totals;
}

/** An open invoice's status once the changes apply to the row held; undefined when it is not open. */
function statusAfter(held: InvoiceRow, changes: Updateable<InvoicesTable>, settleOn: string) {
  const after = { ...held, ...changes } as InvoiceRow;
  if (!OPEN_STATUSES.includes(after.status as InvoiceStatus)) return undefined;
  return openStatus(
    {
      totalGross: Number(after.total_gross),
      amountPaid: Number(after.amount_paid),
      dueDate: after.due_date,
    },
    settleOn,
  );
}

/** The refusal of a change that would make the invoice's total larger than any amount can be. */
function totalTooLarge(totalGross: number, field: string | undefined): AppError {
  const why = `would make the invoice's totalGross ${BigInt(Math.round(totalGross))}, above the largest amount ${MAX_AMOUNT}`;
  return field
    ? fieldErrors([{ field, code: 'invalid', message: `${field} ${why}` }])
    : new AppError('business_rule', `This change ${why}.`);
}

/**
 * Refuses a line change that leaves the invoice for less than was paid on it (422 business_rule), or
 * with a total past the largest amount (422 validation_failed naming unitPrice).
 */
export async function touchInvoiceLines(trx: Trx, billing: PracticeBilling, invoiceId: string) {
  const touched = await touchInvoice(
    trx,
    billing,
    invoiceId,
    {},
    { retotal: true, amountField: 'unitPrice' },
  );
  refuseOverpayment(touched, touched.number);
  return touched;
}

function refuseOverpayment(money: InvoiceMoney, number: string): void {
  const reason = overpaymentReason(money, number);
  if (reason) throw new AppError('business_rule', reason);
}

export function requireEditable(record: InvoiceRecord): void {
  if (!EDITABLE_STATUSES.includes(record.invoice.status as InvoiceStatus)) {
    throw new AppError(
      'business_rule',
      `Invoice ${record.invoice.number} is ${record.invoice.status}; lines can be changed only while it is a draft or amending (amending reopens an issued invoice).`,
    );
  }
}

/** What the operator is warned of when the practice's account details lack what the law asks. */
function accountGapsNote(billing: PracticeBilling): string {
  if (billing.accountGaps.length === 0) return '';
  return ` Warning: the account lacks the practice's ${billing.accountGaps.join(', ')}; set them with PATCH /admin/v1/practices/{practiceId}.`;
}

/** Issues the invoice; `held` is the invoice as this transaction already holds it locked, if it does. */
export async function issueInvoice(
  trx: Trx,
  billing: PracticeBilling,
  invoiceId: string,
  now: Date,
  held?: InvoiceRecord,
): Promise<InvoiceRecord> {
  const record = held ?? (await readInvoice(trx, billing.id, invoiceId, true));
  if (!EDITABLE_STATUSES.includes(record.invoice.status as InvoiceStatus)) {
    throw new AppError(
      'business_rule',
      `Invoice ${record.invoice.number} is ${record.invoice.status}; only a draft or amending invoice can be issued.`,
    );
  }
  const refusal = issueRefusal(record.invoice.number, record.lines);
  if (refusal) throw new AppError('business_rule', refusal);
  const lineTotals = record.lines.map((line) => Number(line.total));
  // Issuing totals the lines at the VAT rate of today: the new total may not fall below what was paid.
  refuseOverpayment(
    {
      totalGross: invoiceTotals(lineTotals, billing.vatRateBasisPoints).totalGross,
      amountPaid: Number(record.invoice.amount_paid),
      dueDate: record.invoice.due_date,
    },
    record.invoice.number,
  );
  // The patient is told, at the address the patient's row gives (announceIssued).
  const patient = await readPatient(trx, billing.id, record.invoice.patient_id);
  const today = dateIn(billing.timezone, now);
  // A draft is dated the day it is issued; an amended invoice issued again keeps its date and due date.
  const dated =
    record.invoice.status === 'draft' ? { date: today, due_date: dueDateFrom(today, billing) } : {};
  // Re-issuing an amended invoice keeps what was paid on it: its status follows from its money.
  const touched = await touchInvoice(
    trx,
    billing,
    invoiceId,
    { status: 'issued', issued_at: now, ...dated },
    { settleOn: today, retotal: lineTotals, ...(held ? { held: held.invoice } : {}) },
  );
  const issued: InvoiceRecord = { ...record, invoice: touched.row };
  await announceIssued(trx, billing, issued, patient, now, record.invoice.status === 'amending');
  return issued;
}

/**
 * Why an editable invoice with these lines cannot be issued, or null: it has none, or some are still
 * unpriced (no rate was found and nobody set their price).
 */
export function issueRefusal(
  number: string,
  lines: readonly { unpriced: boolean; code: string; id: string }[],
): string | null {
  if (lines.length === 0) return `Invoice ${number} has no lines; add one before issuing it.`;
  const unpriced = lines.flatMap((line, index) =>
    line.unpriced ? [`line ${index + 1} (${line.code}, ${line.id})`] : [],
  );
  if (unpriced.length === 0) return null;
  return `Invoice ${number} has lines no rate was found for: ${unpriced.join(', ')}. Set each one's price (PUT the line; unitPrice 0 for no charge) or delete it before issuing.`;
}

/**
 * What issuing an invoice tells: the patient's notification, e-mailed with the account by a job that
 * runs once this transaction has committed (`corrected`: an amended invoice issued again), and the
 * invoice.issued event. A patient with no usable e-mail address (src/patients/email.ts) is recorded so
 * at once, with invoice.delivery_failed for an address that is not one, and no job is queued.
 */
export async function announceIssued(
  trx: Trx,
  billing: PracticeBilling,
  issued: InvoiceRecord,
  patient: Pick<PatientRow, 'contact_points'>,
  now: Date,
  corrected = false,
): Promise<void> {
  const invoiceId = issued.invoice.id;
  const address = patientMailAddress(patient.contact_points);
  const undeliverable = 'to' in address ? undefined : address;
  await tellByMail(
    trx,
    {
      practice_id: billing.id,
      id: newId('notification'),
      recipient: 'patient',
      patient_id: issued.invoice.patient_id,
      kind: 'invoice_issued',
      subject_type: 'invoice',
      subject_id: invoiceId,
      message: `${corrected ? 'Corrected invoice' : 'Invoice'} ${issued.invoice.number} from ${billing.name} for ${formatAmount(Number(issued.invoice.total_gross), issued.invoice.currency)} is due${issued.invoice.due_date ? ` by ${issued.invoice.due_date}` : ''}.${accountGapsNote(billing)}`,
      created_at: now,
    },
    { corrected, undeliverable },
  );
  await recordEvent(trx, billing.id, 'invoice.issued', { type: 'invoice', id: invoiceId }, now);
  if (undeliverable?.delivery === 'failed') await recordAccountUndelivered(trx, billing.id, invoiceId, now);
}

/** An account that could not be e-mailed: invoice.delivery_failed names the invoice only, never why. */
export async function recordAccountUndelivered(
  trx: Trx,
  practiceId: string,
  invoiceId: string,
  now: Date,
): Promise<void> {
  await recordEvent(trx, practiceId, 'invoice.delivery_failed', { type: 'invoice', id: invoiceId }, now);
}

export async function amendInvoice(
  trx: Trx,
  billing: PracticeBilling,
  invoiceId: string,
): Promise<InvoiceRecord> {
  const record = await readInvoice(trx, billing.id, invoiceId, true);
  if (!OPEN_STATUSES.includes(record.invoice.status as InvoiceStatus)) {
    throw new AppError(
      'business_rule',
      `Invoice ${record.invoice.number} is ${record.invoice.status}; only an issued, partially paid, overdue or balanced invoice can be reopened.`,
    );
  }
  const claimReason = unsettledClaimReason(record.invoice);
  if (claimReason) throw new AppError('business_rule', `${claimReason} Then amend.`);
  await touchInvoice(trx, billing, invoiceId, { status: 'amending' });
  return readInvoice(trx, billing.id, invoiceId);
}

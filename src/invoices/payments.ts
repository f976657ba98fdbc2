// Owns payments against an invoice: recording one (from the patient at the practice, never above the
// balance; or the insurer's remittance, always in full), and taking back the insurer's money when it confirms a reversal (a negative
// insurer payment). Each moves the invoice's amount paid, sets its status from its money and writes
// payment.created.
import type { Selectable } from 'kysely';
import { dateIn } from '../platform/clock.ts';
import type { PaymentsTable } from '../platform/db/tables.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { parseOffsetDateTime } from '../platform/http/date-time.ts';
import { AppError, fieldErrors } from '../platform/http/errors.ts';
import { newId } from '../platform/ids.ts';
import type { PracticeBilling } from '../practices/service.ts';
import { recordEvent } from '../webhooks/outbox.ts';
import { OWING_STATUSES } from './payment-status.ts';
import {
  type InvoiceStatus,
  type Payment,
  RECEIVED_AT_MAX_AGE_DAYS,
  RECEIVED_AT_SKEW_MINUTES,
} from './schemas.ts';
import { lockInvoice, readInvoice, touchInvoice } from './service.ts';
import {
  earliestServiceDate,
  findPayment,
  type InvoiceRow,
  insertPayment,
  insurerPaid,
  listPayments,
} from './store.ts';

export function paymentOf(row: Selectable<PaymentsTable>): Payment {
  return {
    object: 'payment',
    id: row.id,
    invoiceId: row.invoice_id,
    amount: Number(row.amount),
    currency: row.currency,
    method: row.method,
    source: row.source,
    reference: row.reference,
    receivedAt: row.received_at.toISOString(),
  };
}

export interface PaymentRequest {
  invoiceId: string;
  amount: number;
  method: string;
  reference?: string | null | undefined;
  source?: 'patient' | 'insurer' | undefined;
  /** When the money was received (date-time); default now. */
  receivedAt?: string | undefined;
}

const MINUTE_MS = 60_000;

/** When the payment was received: `receivedAt` if given and within its bounds (else 422 on it), or now. */
function receivedAtOf(request: PaymentRequest, now: Date): Date {
  if (request.receivedAt === undefined) return now;
  const at = parseOffsetDateTime(request.receivedAt);
  const latest = now.getTime() + RECEIVED_AT_SKEW_MINUTES * MINUTE_MS;
  const earliest = now.getTime() - RECEIVED_AT_MAX_AGE_DAYS * 24 * 60 * MINUTE_MS;
  if (at === undefined || at.getTime() > latest || at.getTime() < earliest) {
    throw fieldErrors([
      {
        field: 'receivedAt',
        code: 'invalid',
        message: `receivedAt must be at most ${RECEIVED_AT_SKEW_MINUTES} minutes ahead of the service's clock (${now.toISOString()}) and at most ${RECEIVED_AT_MAX_AGE_DAYS} days back`,
      },
    ]);
  }
  return at;
}

/**
 * Why a payment received at `receivedOn` (the practice's date of it) is refused for an invoice whose
 * earliest date of service is `earliestService`, or null: money is not received for a service not
 * yet given.
 */
export function receivedBeforeServiceReason(
  receivedOn: string,
  earliestService: string | null,
): string | null {
  if (earliestService === null || receivedOn >= earliestService) return null;
  return `receivedAt (${receivedOn} in the practice's time zone) is before the invoice's earliest date of service (${earliestService})`;
}

/** For a body that names its invoice (the operator's): an invoice not found is a wrong `invoiceId`. */
export function invoiceFieldError(error: unknown): never {
  if (error instanceof AppError && error.code === 'not_found') {
    throw fieldErrors([
      { field: 'invoiceId', code: 'invalid', message: 'invoiceId is not an invoice of this practice' },
    ]);
  }
  throw error;
}

export async function recordPayment(trx: Trx, billing: PracticeBilling, request: PaymentRequest, now: Date) {
  const invoice = await lockInvoice(trx, billing.id, request.invoiceId).catch(invoiceFieldError);
  return recordPaymentOn(trx, billing, invoice, request, now);
}

/**
 * Records a payment on an invoice whose row the caller has locked in this transaction: refused
 * (422) unless the invoice takes payments, the amount is within its balance and `receivedAt` is
 * within its bounds.
 */
export async function recordPaymentOn(
  trx: Trx,
  billing: PracticeBilling,
  invoice: InvoiceRow,
  request: PaymentRequest,
  now: Date,
) {
  if (!OWING_STATUSES.includes(invoice.status as InvoiceStatus)) {
    throw new AppError(
      'business_rule',
      `Invoice ${invoice.number} is ${invoice.status}; only an issued, partially paid or overdue invoice takes payments.`,
    );
  }
  const receivedAt = receivedAtOf(request, now);
  if (request.receivedAt !== undefined) {
    const earliest = await earliestServiceDate(trx, billing.id, invoice.id);
    const reason = receivedBeforeServiceReason(dateIn(billing.timezone, receivedAt), earliest);
    if (reason) throw fieldErrors([{ field: 'receivedAt', code: 'invalid', message: reason }]);
  }
  const balance = Number(invoice.balance_due);
  if (request.amount > balance) {
    throw fieldErrors([
      { field: 'amount', code: 'invalid', message: `amount is more than the balance due (${balance})` },
    ]);
  }
  return writePayment(
    trx,
    billing,
    invoice,
    { ...request, source: request.source ?? 'patient' },
    receivedAt,
    now,
  );
}

/**
 * Records the insurer's remittance in full on an invoice whose row the caller has locked: the amount
 * the scheme approved and has not yet paid, whatever the patient already paid.
 */
export async function recordRemittanceOn(
  trx: Trx,
  billing: PracticeBilling,
  invoice: InvoiceRow,
  remittance: { amount: number; reference: string | null },
  now: Date,
) {
  return writePayment(
    trx,
    billing,
    invoice,
    {
      invoiceId: invoice.id,
      amount: remittance.amount,
      method: 'remittance',
      reference: remittance.reference,
      source: 'insurer',
    },
    now,
    now,
  );
}

/** Inserts the payment, moves the invoice's amount paid and status with it, and writes payment.created. */
async function writePayment(
  trx: Trx,
  billing: PracticeBilling,
  invoice: InvoiceRow,
  payment: PaymentRequest & { source: 'patient' | 'insurer' },
  receivedAt: Date,
  now: Date,
) {
  const row = await insertPayment(trx, {
    practice_id: billing.id,
    id: newId('payment'),
    invoice_id: invoice.id,
    amount: payment.amount,
    currency: invoice.currency,
    method: payment.method,
    source: payment.source,
    reference: payment.reference ?? null,
    received_at: receivedAt,
  });
  await touchInvoice(
    trx,
    billing,
    invoice.id,
    {
      amount_paid: Number(invoice.amount_paid) + payment.amount,
      ...(payment.source === 'insurer'
        ? { paid_by_insurer: Number(invoice.paid_by_insurer) + payment.amount }
        : {}),
    },
    { settleOn: dateIn(billing.timezone, now), held: invoice },
  );
  await recordEvent(trx, billing.id, 'payment.created', { type: 'invoice', id: invoice.id }, now, {
    payment: { id: row.id, amount: Number(row.amount), currency: row.currency, source: row.source },
  });
  return row;
}

/**
 * A reversal the insurer confirmed takes its money back: a negative insurer payment of everything
 * the insurer paid on the invoice, so the invoice owes it again and can be claimed again.
 */
export async function takeBackInsurerPayments(
  trx: Trx,
  billing: PracticeBilling,
  invoiceId: string,
  reference: string | null,
  now: Date,
) {
  const paid = await insurerPaid(trx, billing.id, invoiceId);
  if (paid <= 0) return undefined;
  const invoice = await lockInvoice(trx, billing.id, invoiceId);
  return writePayment(
    trx,
    billing,
    invoice,
    { invoiceId, amount: -paid, method: 'reversal', reference, source: 'insurer' },
    now,
    now,
  );
}

export async function paymentsOf(trx: Trx, practiceId: string, invoiceId: string) {
  await readInvoice(trx, practiceId, invoiceId);
  return listPayments(trx, practiceId, invoiceId);
}

/** One payment of an invoice; 404 when the invoice or the payment on it is not found. */
export async function paymentOn(trx: Trx, practiceId: string, invoiceId: string, paymentId: string) {
  await readInvoice(trx, practiceId, invoiceId);
  const row = await findPayment(trx, practiceId, invoiceId, paymentId);
  if (!row) throw new AppError('not_found', 'Payment was not found.');
  return row;
}

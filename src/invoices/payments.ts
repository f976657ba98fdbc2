// Owns payments against an invoice: recording one (from the patient at the practice, or from the
// insurer's remittance), and taking back the insurer's money when it confirms a reversal (a negative
// insurer payment). Each moves the invoice's amount paid, sets its status from its money and writes
// payment.created.
import type { Selectable } from 'kysely';
import { dateIn } from '../platform/clock.ts';
import type { PaymentsTable } from '../platform/db/tables.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { AppError, fieldErrors } from '../platform/http/errors.ts';
import { newId } from '../platform/ids.ts';
import type { PracticeBilling } from '../practices/service.ts';
import { recordEvent } from '../webhooks/outbox.ts';
import { OWING_STATUSES } from './payment-status.ts';
import type { InvoiceStatus, Payment } from './schemas.ts';
import { lockInvoice, readInvoice, touchInvoice } from './service.ts';
import { type InvoiceRow, insertPayment, insurerPaid, listPayments } from './store.ts';

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
}

export async function recordPayment(trx: Trx, billing: PracticeBilling, request: PaymentRequest, now: Date) {
  const invoice = await lockInvoice(trx, billing.id, request.invoiceId).catch((error: unknown) => {
    if (error instanceof AppError && error.code === 'not_found') {
      throw fieldErrors([
        { field: 'invoiceId', code: 'invalid', message: 'invoiceId is not an invoice of this practice' },
      ]);
    }
    throw error;
  });
  return recordPaymentOn(trx, billing, invoice, request, now);
}

/**
 * Records a payment on an invoice whose row the caller has locked in this transaction: refused
 * (422) unless the invoice takes payments and the amount is within its balance.
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
  const balance = Number(invoice.balance_due);
  if (request.amount > balance) {
    throw fieldErrors([
      { field: 'amount', code: 'invalid', message: `amount is more than the balance due (${balance})` },
    ]);
  }
  return writePayment(trx, billing, invoice, { ...request, source: request.source ?? 'patient' }, now);
}

/** Inserts the payment, moves the invoice's amount paid and status with it, and writes payment.created. */
async function writePayment(
  trx: Trx,
  billing: PracticeBilling,
  invoice: InvoiceRow,
  payment: PaymentRequest & { source: 'patient' | 'insurer' },
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
    received_at: now,
  });
  await touchInvoice(
    trx,
    billing,
    invoice.id,
    { amount_paid: Number(invoice.amount_paid) + payment.amount },
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
  );
}

export async function paymentsOf(trx: Trx, practiceId: string, invoiceId: string) {
  await readInvoice(trx, practiceId, invoiceId);
  return listPayments(trx, practiceId, invoiceId);
}

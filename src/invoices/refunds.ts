// Owns refunds: money the practice gives back to the patient on an invoice. A refund is never more
// than the patient's net payments on the invoice (the insurer's money goes back only through a
// confirmed claim reversal); it lowers the invoice's amount paid, so its status follows its money
// again (a balanced invoice owes the refunded amount), and writes refund.created.
import type { Selectable } from 'kysely';
import { dateIn } from '../platform/clock.ts';
import type { RefundsTable } from '../platform/db/tables.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { AppError, fieldErrors } from '../platform/http/errors.ts';
import { newId } from '../platform/ids.ts';
import type { PracticeBilling } from '../practices/service.ts';
import { recordEvent } from '../webhooks/outbox.ts';
import { OPEN_STATUSES } from './payment-status.ts';
import type { InvoiceStatus, Refund } from './schemas.ts';
import { lockInvoice, readInvoice, touchInvoice } from './service.ts';
import { findRefund, insertRefund, insurerPaid, listRefunds } from './store.ts';

/** The statuses of an invoice that takes a refund: an issued one, paid or not, and one being amended. */
export const REFUNDABLE_STATUSES: readonly InvoiceStatus[] = [...OPEN_STATUSES, 'amending'];

export function refundOf(row: Selectable<RefundsTable>): Refund {
  return {
    object: 'refund',
    id: row.id,
    invoiceId: row.invoice_id,
    amount: Number(row.amount),
    currency: row.currency,
    method: row.method,
    reference: row.reference,
    reason: row.reason,
    refundedAt: row.refunded_at.toISOString(),
  };
}

export interface NewRefund {
  amount: number;
  method: string;
  reference?: string | null | undefined;
  reason: string;
}

/**
 * Records a refund on an invoice: refused (422) unless the invoice is issued, paid or being amended
 * (`business_rule`) and the amount is within what the patient paid on it net of earlier refunds
 * (`validation_failed` on `amount`).
 */
export async function recordRefund(
  trx: Trx,
  billing: PracticeBilling,
  invoiceId: string,
  request: NewRefund,
  now: Date,
) {
  const invoice = await lockInvoice(trx, billing.id, invoiceId);
  const creditOnly = invoice.status === 'written_off' && Number(invoice.credit_due) > 0;
  if (!REFUNDABLE_STATUSES.includes(invoice.status as InvoiceStatus) && !creditOnly) {
    throw new AppError(
      'business_rule',
      `Invoice ${invoice.number} is ${invoice.status}; only an issued, partially paid, overdue, balanced or amending invoice takes a refund (a written-off one only while it has a credit due).`,
    );
  }
  const patientNet = Number(invoice.amount_paid) - (await insurerPaid(trx, billing.id, invoice.id));
  refuseRefundAbove(request.amount, patientNet, creditOnly ? Number(invoice.credit_due) : undefined);
  const row = await insertRefund(trx, {
    practice_id: billing.id,
    id: newId('refund'),
    invoice_id: invoice.id,
    amount: request.amount,
    currency: invoice.currency,
    method: request.method,
    reference: request.reference ?? null,
    reason: request.reason,
    refunded_at: now,
  });
  await touchInvoice(
    trx,
    billing,
    invoice.id,
    { amount_paid: Number(invoice.amount_paid) - request.amount },
    { settleOn: dateIn(billing.timezone, now), held: invoice },
  );
  await recordEvent(trx, billing.id, 'refund.created', { type: 'invoice', id: invoice.id }, now, {
    refund: { id: row.id, amount: Number(row.amount), currency: row.currency },
  });
  return row;
}

/**
 * Refuses (422 naming `amount`) a refund above what the patient paid net of refunds, or, on a
 * written-off invoice, above its credit due: a refund there must not add to what was written off.
 */
function refuseRefundAbove(amount: number, patientNet: number, creditDue: number | undefined): void {
  if (amount > patientNet) {
    throw fieldErrors([
      {
        field: 'amount',
        code: 'invalid',
        message: `amount is more than the patient paid on the invoice net of refunds (${Math.max(patientNet, 0)}); the insurer's payments go back only through a claim reversal`,
      },
    ]);
  }
  if (creditDue !== undefined && amount > creditDue) {
    throw fieldErrors([
      {
        field: 'amount',
        code: 'invalid',
        message: `amount is more than the credit due to the patient on this written-off invoice (${creditDue})`,
      },
    ]);
  }
}

export async function refundsOf(trx: Trx, practiceId: string, invoiceId: string) {
  await readInvoice(trx, practiceId, invoiceId);
  return listRefunds(trx, practiceId, invoiceId);
}

/** One refund of an invoice; 404 when the invoice or the refund on it is not found. */
export async function refundOn(trx: Trx, practiceId: string, invoiceId: string, refundId: string) {
  await readInvoice(trx, practiceId, invoiceId);
  const row = await findRefund(trx, practiceId, invoiceId, refundId);
  if (!row) throw new AppError('not_found', 'Refund was not found.');
  return row;
}

// Owns payments against an invoice: recording one (from the patient at the practice, or from the
// insurer's remittance) moves the invoice to partially_paid or balanced and writes payment.created.
import type { Selectable } from 'kysely';
import { recordEvent } from '../events/outbox.ts';
import type { PaymentsTable } from '../platform/db/tables.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { AppError, fieldErrors } from '../platform/http/errors.ts';
import { newId } from '../platform/ids.ts';
import type { InvoiceStatus, Payment } from './schemas.ts';
import { type PracticeBilling, readInvoice, touchInvoice } from './service.ts';

export const PAYABLE: readonly InvoiceStatus[] = ['issued', 'partially_paid', 'overdue'];

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
  const record = await readInvoice(trx, billing.id, request.invoiceId, true).catch((error: unknown) => {
    if (error instanceof AppError && error.code === 'not_found') {
      throw fieldErrors([
        { field: 'invoiceId', code: 'invalid', message: 'invoiceId is not an invoice of this practice' },
      ]);
    }
    throw error;
  });
  const invoice = record.invoice;
  if (!PAYABLE.includes(invoice.status as InvoiceStatus)) {
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
  const paid = Number(invoice.amount_paid) + request.amount;
  const status = paid >= Number(invoice.total_gross) ? 'balanced' : 'partially_paid';
  const row = await trx
    .insertInto('payments')
    .values({
      practice_id: billing.id,
      id: newId('payment'),
      invoice_id: invoice.id,
      amount: request.amount,
      currency: invoice.currency,
      method: request.method,
      source: request.source ?? 'patient',
      reference: request.reference ?? null,
      received_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  await touchInvoice(trx, billing, invoice.id, { amount_paid: paid, status });
  await recordEvent(trx, billing.id, 'payment.created', { type: 'invoice', id: invoice.id }, now);
  return row;
}

export async function paymentsOf(trx: Trx, practiceId: string, invoiceId: string) {
  await readInvoice(trx, practiceId, invoiceId);
  return trx
    .selectFrom('payments')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .where('invoice_id', '=', invoiceId)
    .orderBy('received_at')
    .orderBy('id')
    .execute();
}

// Owns what the operator reads about invoices: the searchable list (newest change first, keyset paged)
// and one invoice with everything around it (patient, coverages, payments, refunds, claim, events and their
// webhook attempts). Read-only; the rules live in the invoice and claim services.
import { sql } from 'kysely';
import { type Static, Type } from 'typebox';
import { Claim } from '../claims/schemas.ts';
import { readClaim } from '../claims/service.ts';
import { findClaimOfInvoice } from '../claims/store.ts';
import { Coverage } from '../insurance/schemas.ts';
import { coverageOf } from '../insurance/service.ts';
import { listCoverages } from '../insurance/store.ts';
import { paymentOf, paymentsOf } from '../invoices/payments.ts';
import { refundOf, refundsOf } from '../invoices/refunds.ts';
import { INVOICE_STATUSES, Invoice, Payment, Refund } from '../invoices/schemas.ts';
import { invoiceOf, readInvoice } from '../invoices/service.ts';
import { pastPosition } from '../paging/keyset.ts';
import { findPatient } from '../patients/store.ts';
import { dateIn } from '../platform/clock.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { notFound } from '../platform/http/errors.ts';
import { Enum, Nullable } from '../platform/http/schema.ts';
import type { PracticeBilling } from '../practices/service.ts';
import { Attempt, attemptOf } from '../webhooks/admin.ts';
import { eventsOfInvoice, invoiceEventAttempts } from '../webhooks/store.ts';

export const InvoiceSummary = Type.Object(
  {
    object: Type.Literal('invoice_summary'),
    id: Type.String(),
    number: Type.String(),
    status: Enum(INVOICE_STATUSES),
    claimStatus: Nullable(Type.String()),
    patientId: Type.String(),
    patientName: Type.String(),
    date: Type.String({ format: 'date' }),
    dueDate: Nullable(Type.String({ format: 'date' })),
    currency: Type.String(),
    totalGross: Type.Integer(),
    balanceDue: Type.Integer(),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { title: 'InvoiceSummary', additionalProperties: false },
);
export type InvoiceSummary = Static<typeof InvoiceSummary>;

export const InvoiceEvent = Type.Object(
  {
    id: Type.String(),
    type: Type.String(),
    occurredAt: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);

export const InvoiceDetail = Type.Object(
  {
    object: Type.Literal('invoice_detail'),
    invoice: Invoice,
    patient: Type.Object({ id: Type.String(), name: Type.String() }, { additionalProperties: false }),
    coverages: Type.Array(Coverage),
    payments: Type.Array(Payment),
    refunds: Type.Array(Refund, { description: 'Money given back to the patient, oldest first.' }),
    claim: Nullable(Claim),
    events: Type.Array(InvoiceEvent, { description: 'Events about this invoice, oldest first.' }),
    deliveries: Type.Array(Attempt, {
      description: 'Every webhook delivery attempt of those events, oldest first.',
    }),
  },
  { title: 'InvoiceDetail', additionalProperties: false },
);
export type InvoiceDetail = Static<typeof InvoiceDetail>;

export interface InvoiceSearch {
  status?: string | undefined;
  claimStatus?: string | undefined;
  q?: string | undefined;
}

interface SummaryRow {
  id: string;
  number: string;
  status: string;
  claim_status: string | null;
  patient_id: string;
  given_names: string[];
  last_name: string | null;
  date: string;
  due_date: string | null;
  currency: string;
  total_gross: number | string;
  balance_due: number | string;
  updated_at: Date;
}

/** The patient's name; an erased patient has none, and reads as such. */
function nameOf(givenNames: string[], lastName: string | null): string {
  return lastName === null ? '(erased patient)' : [...givenNames, lastName].join(' ');
}

export function summaryOf(row: SummaryRow): InvoiceSummary {
  return {
    object: 'invoice_summary',
    id: row.id,
    number: row.number,
    status: row.status as InvoiceSummary['status'],
    claimStatus: row.claim_status,
    patientId: row.patient_id,
    patientName: nameOf(row.given_names, row.last_name),
    date: row.date,
    dueDate: row.due_date,
    currency: row.currency,
    totalGross: Number(row.total_gross),
    balanceDue: Number(row.balance_due),
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}

/** `q` as a LIKE pattern matching it anywhere, its wildcards taken literally. */
function containing(q: string): string {
  return `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/** Newest change first; `before` is the (updatedAt, id) of the previous page's last invoice. */
export async function searchInvoices(
  trx: Trx,
  practiceId: string,
  search: InvoiceSearch,
  before: { updatedAt: string; id: string } | undefined,
  limit: number,
): Promise<SummaryRow[]> {
  const q = search.q?.trim();
  const pattern = q ? containing(q) : '';
  const result = await sql<SummaryRow>`
    SELECT i.id, i.number, i.status, i.claim_status, i.patient_id, p.given_names, p.last_name, i.date,
           i.due_date, i.currency, i.total_gross, i.balance_due, i.updated_at
      FROM invoices i
      JOIN patients p ON p.practice_id = i.practice_id AND p.id = i.patient_id
     WHERE i.practice_id = ${practiceId}
       AND (${search.status ?? null}::text IS NULL OR i.status = ${search.status ?? null})
       AND (${search.claimStatus ?? null}::text IS NULL OR i.claim_status = ${search.claimStatus ?? null})
       AND (${q ? null : 'all'}::text IS NOT NULL
            OR i.number ILIKE ${pattern} OR i.patient_id = ${q ?? ''}
            OR (p.given_names ->> 0) || ' ' || p.last_name ILIKE ${pattern}
            OR p.last_name ILIKE ${pattern} OR p.given_names::text ILIKE ${pattern})
       AND ${pastPosition(
         'desc',
         before && [
           { column: 'i.updated_at', value: before.updatedAt, type: 'timestamptz' },
           { column: 'i.id', value: before.id, type: 'text' },
         ],
       )}
     ORDER BY i.updated_at DESC, i.id DESC
     LIMIT ${limit + 1}`.execute(trx);
  return result.rows;
}

/** One invoice and everything an operator needs to fix and send it. */
export async function invoiceDetail(
  trx: Trx,
  billing: PracticeBilling,
  invoiceId: string,
  now: Date,
): Promise<InvoiceDetail> {
  const practiceId = billing.id;
  const record = await readInvoice(trx, practiceId, invoiceId);
  const patient = await findPatient(trx, practiceId, record.invoice.patient_id);
  if (!patient) throw notFound('Patient');
  const today = dateIn(billing.timezone, now);
  const coverages = await listCoverages(trx, practiceId, patient.id);
  const payments = await paymentsOf(trx, practiceId, invoiceId);
  const refunds = await refundsOf(trx, practiceId, invoiceId);
  const claim = await findClaimOfInvoice(trx, practiceId, invoiceId);
  const events = await eventsOfInvoice(trx, practiceId, invoiceId);
  const attempts = events.length === 0 ? [] : await invoiceEventAttempts(trx, practiceId, invoiceId);
  return {
    object: 'invoice_detail',
    invoice: invoiceOf(record),
    patient: { id: patient.id, name: nameOf(patient.given_names, patient.last_name) },
    coverages: coverages.map((c) => coverageOf(c, today)),
    payments: payments.map(paymentOf),
    refunds: refunds.map(refundOf),
    claim: claim ? await readClaim(trx, billing, invoiceId) : null,
    events: events.map((e) => ({
      id: e.id,
      type: e.type,
      occurredAt: new Date(e.occurred_at).toISOString(),
    })),
    deliveries: attempts.map(attemptOf),
  };
}

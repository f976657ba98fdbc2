// Declares the invoice operations of the public API: bill a visit, read and list invoices, change
// lines, read a line's rates, issue, amend, cancel, and record and read payments and refunds.
import { Type } from 'typebox';
import { defineApiRoute } from '../api/api-route.ts';
import type { Permission } from '../auth/permissions.ts';
import { findCoverage } from '../insurance/service.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { pageOf, wholeList } from '../platform/http/cursor.ts';
import { OffsetDateTime } from '../platform/http/date-time.ts';
import { AppError } from '../platform/http/errors.ts';
import { Enum, IdParam, PagingQuery } from '../platform/http/schema.ts';
import { practiceBilling } from '../practices/service.ts';
import { billEncounter, type ClaimQueuer } from './bill.ts';
import { closeInvoice } from './closing.ts';
import { addLine, deleteLine, lineRuleErrors, replaceLine } from './lines.ts';
import { paymentOf, paymentOn, paymentsOf, recordPaymentOn } from './payments.ts';
import { recordRefund, refundOf, refundOn, refundsOf } from './refunds.ts';
import {
  BillRequest,
  BillResult,
  CloseInvoiceRequest,
  INVOICE_STATUSES,
  Invoice,
  InvoiceList,
  LineItem,
  LineItemRequest,
  NoInput,
  Payment,
  PaymentList,
  PaymentRequest,
  RateList,
  Refund,
  RefundList,
  RefundRequest,
} from './schemas.ts';
import {
  amendInvoice,
  invoiceOf,
  issueInvoice,
  listInvoiceRows,
  loadRecords,
  lockInvoice,
  ratesFor,
  readInvoice,
} from './service.ts';

const InvoiceParam = IdParam('invoiceId', 'Invoice id (`inv_...`).');
const LineParams = Type.Object(
  {
    invoiceId: Type.String({ minLength: 1, maxLength: 100 }),
    lineItemId: Type.String({ minLength: 1, maxLength: 100 }),
  },
  { additionalProperties: false },
);
const PaymentParams = Type.Object(
  {
    invoiceId: Type.String({ minLength: 1, maxLength: 100 }),
    paymentId: Type.String({ minLength: 1, maxLength: 100 }),
  },
  { additionalProperties: false },
);
const RefundParams = Type.Object(
  {
    invoiceId: Type.String({ minLength: 1, maxLength: 100 }),
    refundId: Type.String({ minLength: 1, maxLength: 100 }),
  },
  { additionalProperties: false },
);
const WRITE_ERRORS = [400, 401, 403, 404, 409, 413, 415, 422, 429, 500, 503];
const READ_ERRORS = [400, 401, 403, 404, 429, 500, 503];

async function billingFor(trx: Trx, practiceId: string) {
  return practiceBilling(trx, practiceId);
}

export function invoiceRoutes(queueClaim: ClaimQueuer) {
  return [
    defineApiRoute({
      method: 'POST',
      url: '/encounters/:encounterId/bill',
      operationId: 'billEncounter',
      summary: 'Bill a visit',
      description:
        "Creates a draft invoice with one line per procedure that was done, priced from the first rate found (practitioner's favourite, practice price, the patient's plan, its scheme, the governing body, the code's default), with the procedure's diagnoses (else the visit's) and one primary. `issue: true` issues it in the same call (needs INVOICES:UPDATE); `submitClaim: true` needs issue true and CLAIMS:SUBMIT and queues the claim. A missing permission answers 403 before anything is created. The invoice is created whether or not issuing or claiming succeeds: `issueSkippedReason` and `claimSkippedReason` say why. A visit already on an invoice that is not cancelled answers 409 `duplicate` naming it.",
      tag: 'Invoices',
      permission: 'INVOICES:CREATE',
      extraPermissions: (body) => {
        const needed: Permission[] = [];
        if (body?.issue === true) needed.push('INVOICES:UPDATE');
        if (body?.submitClaim === true) needed.push('CLAIMS:SUBMIT');
        return needed;
      },
      creates: true,
      resourceType: 'invoice',
      params: IdParam('encounterId', 'Encounter id (`enc_...`).'),
      body: BillRequest,
      bodyOptional: true,
      // Look-ups by key, and the rates statement, whose custom plan took longer than its run.
      genericPlans: true,
      successStatus: 201,
      response: BillResult,
      errorStatuses: WRITE_ERRORS,
      handler: async ({ trx, deps, practiceId, params, body, now }) => {
        const billing = await billingFor(trx, practiceId);
        // Past the claims backlog's bound the invoice is still created; only its claim is skipped.
        const claimHeldBack = body?.submitClaim === true ? deps.loadShedder.claimWorkHeldBack() : null;
        const result = await billEncounter(
          trx,
          billing,
          params.encounterId,
          body ?? {},
          now,
          queueClaim,
          claimHeldBack,
        );
        return {
          body: result,
          location: `/api/v1/invoices/${result.invoice.id}`,
          resource: { id: result.invoice.id, patientId: result.invoice.patientId },
        };
      },
    }),
    defineApiRoute({
      method: 'GET',
      url: '/invoices/:invoiceId',
      operationId: 'getInvoice',
      summary: 'Read an invoice',
      tag: 'Invoices',
      permission: 'INVOICES:READ',
      resourceType: 'invoice',
      params: InvoiceParam,
      successStatus: 200,
      response: Invoice,
      errorStatuses: READ_ERRORS,
      handler: async ({ trx, practiceId, params }) => {
        const record = await readInvoice(trx, practiceId, params.invoiceId);
        return {
          body: invoiceOf(record),
          resource: { id: record.invoice.id, patientId: record.invoice.patient_id },
        };
      },
    }),
    defineApiRoute({
      method: 'GET',
      url: '/invoices',
      operationId: 'listInvoices',
      summary: 'List invoices, oldest change first',
      description:
        'Reconciliation: send `updatedSince`, page to the end (`hasMore` false), then next time send the `updatedAt` of the last invoice received. An invoice is listed only once no change stamped before it can still commit, so an invoice that changes while you page appears again later in the same run or the next one; nothing is missed.',
      tag: 'Invoices',
      permission: 'INVOICES:READ',
      resourceType: 'invoice',
      querystring: Type.Object(
        {
          updatedSince: Type.Optional(OffsetDateTime()),
          patientId: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
          encounterId: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
          status: Type.Optional(Enum(INVOICE_STATUSES)),
          ...PagingQuery,
        },
        { additionalProperties: false },
      ),
      successStatus: 200,
      response: InvoiceList,
      errorStatuses: [400, 401, 403, 429, 500, 503],
      handler: async ({ trx, deps, practiceId, query }) => {
        const limit = query.limit ?? 50;
        const filters = {
          updatedSince: query.updatedSince,
          patientId: query.patientId,
          encounterId: query.encounterId,
          status: query.status,
        };
        const position = query.cursor ? deps.cursors.decode('invoices', filters, query.cursor) : undefined;
        if (position && (typeof position[0] !== 'string' || typeof position[1] !== 'string')) {
          throw new AppError('invalid_cursor', 'The cursor is not valid for this list.');
        }
        const after = position ? { updatedAt: position[0] as string, id: position[1] as string } : undefined;
        const rows = await listInvoiceRows(trx, practiceId, filters, after, limit);
        const records = await loadRecords(trx, practiceId, rows);
        return {
          body: pageOf(
            records,
            limit,
            invoiceOf,
            (r) => [r.invoice.updated_at.toISOString(), r.invoice.id],
            (p) => deps.cursors.encode('invoices', filters, p),
          ),
        };
      },
    }),
    defineApiRoute({
      method: 'POST',
      url: '/invoices/:invoiceId/line-items',
      operationId: 'addLineItem',
      summary: 'Add a line to a draft or amending invoice',
      description:
        "The code is resolved in its system (default: the practitioner's procedure system); `description` defaults to the code's wording; `pricingSource` left out means the price was set by hand; tariff modifiers change the line's total. Answers the whole invoice with totals recomputed. Any other invoice status answers 422 `business_rule`.",
      tag: 'Invoices',
      permission: 'INVOICES:UPDATE',
      creates: true,
      resourceType: 'invoice',
      params: InvoiceParam,
      body: LineItemRequest,
      successStatus: 201,
      response: Invoice,
      errorStatuses: WRITE_ERRORS,
      fieldRules: async ({ trx, practiceId, params, body, now, wrong }) =>
        lineRuleErrors(trx, await billingFor(trx, practiceId), params.invoiceId, body, now, wrong),
      handler: async ({ trx, practiceId, params, body, now }) => {
        const billing = await billingFor(trx, practiceId);
        const { record, lineId } = await addLine(trx, billing, params.invoiceId, body, now);
        return {
          body: invoiceOf(record),
          location: `/api/v1/invoices/${record.invoice.id}/line-items/${lineId}`,
          resource: { id: record.invoice.id, patientId: record.invoice.patient_id },
        };
      },
    }),
    defineApiRoute({
      method: 'GET',
      url: '/invoices/:invoiceId/line-items/:lineItemId',
      operationId: 'getLineItem',
      summary: 'Read one line of an invoice',
      description:
        "The line as it stands in the invoice's `lineItems`, with `object` `line_item`; the address `POST /invoices/{invoiceId}/line-items` answers in `Location`.",
      tag: 'Invoices',
      permission: 'INVOICES:READ',
      resourceType: 'invoice',
      params: LineParams,
      successStatus: 200,
      response: LineItem,
      errorStatuses: READ_ERRORS,
      handler: async ({ trx, practiceId, params }) => {
        const record = await readInvoice(trx, practiceId, params.invoiceId);
        const line = invoiceOf(record).lineItems.find((l) => l.id === params.lineItemId);
        if (!line) throw new AppError('not_found', 'Line item was not found.');
        return {
          body: { object: 'line_item' as const, ...line },
          resource: { id: record.invoice.id, patientId: record.invoice.patient_id },
        };
      },
    }),
    defineApiRoute({
      method: 'PUT',
      url: '/invoices/:invoiceId/line-items/:lineItemId',
      operationId: 'replaceLineItem',
      summary: 'Replace a line of a draft or amending invoice',
      description:
        'Full replacement with a LineItemRequest; answers the whole invoice with totals recomputed.',
      tag: 'Invoices',
      permission: 'INVOICES:UPDATE',
      resourceType: 'invoice',
      params: LineParams,
      body: LineItemRequest,
      successStatus: 200,
      response: Invoice,
      errorStatuses: WRITE_ERRORS,
      fieldRules: async ({ trx, practiceId, params, body, now, wrong }) =>
        lineRuleErrors(trx, await billingFor(trx, practiceId), params.invoiceId, body, now, wrong),
      handler: async ({ trx, practiceId, params, body, now }) => {
        const billing = await billingFor(trx, practiceId);
        const record = await replaceLine(trx, billing, params.invoiceId, params.lineItemId, body, now);
        return {
          body: invoiceOf(record),
          resource: { id: record.invoice.id, patientId: record.invoice.patient_id },
        };
      },
    }),
    defineApiRoute({
      method: 'DELETE',
      url: '/invoices/:invoiceId/line-items/:lineItemId',
      operationId: 'deleteLineItem',
      summary: 'Delete a line of a draft or amending invoice',
      description: 'Answers the whole invoice with totals recomputed.',
      tag: 'Invoices',
      permission: 'INVOICES:UPDATE',
      resourceType: 'invoice',
      params: LineParams,
      successStatus: 200,
      response: Invoice,
      errorStatuses: [401, 403, 404, 422, 429, 500, 503],
      handler: async ({ trx, practiceId, params }) => {
        const billing = await billingFor(trx, practiceId);
        const record = await deleteLine(trx, billing, params.invoiceId, params.lineItemId);
        return {
          body: invoiceOf(record),
          resource: { id: record.invoice.id, patientId: record.invoice.patient_id },
        };
      },
    }),
    defineApiRoute({
      method: 'GET',
      url: '/invoices/:invoiceId/line-items/:lineItemId/rates',
      operationId: 'listLineItemRates',
      summary: "Every known price for a line's code",
      description:
        "In the order billing tries them: practitioner, practice, insurance_plan, insurance_scheme, governing_body, code_default. `current` marks the rate that is the line's unit price now. To use a rate, PUT the line with its amount as unitPrice and its pricingSource.",
      tag: 'Invoices',
      permission: 'INVOICES:READ',
      resourceType: 'invoice',
      params: LineParams,
      querystring: Type.Object(PagingQuery, { additionalProperties: false }),
      successStatus: 200,
      response: RateList,
      errorStatuses: READ_ERRORS,
      handler: async ({ trx, deps, practiceId, params, query }) => {
        const record = await readInvoice(trx, practiceId, params.invoiceId);
        const line = record.lines.find((l) => l.id === params.lineItemId);
        if (!line) throw new AppError('not_found', 'Line item was not found.');
        const coverage = record.invoice.coverage_id ?? record.invoice.pricing_coverage_id;
        const plan = coverage ? await findCoverage(trx, practiceId, coverage) : undefined;
        const rates = await ratesFor(
          trx,
          {
            practiceId,
            currency: record.invoice.currency,
            practitionerId: record.invoice.practitioner_id,
            planId: plan?.plan_id ?? null,
          },
          line.system,
          line.code,
        );
        const currentIndex = rates.findIndex(
          (r) => r.amount === Number(line.unit_price) && r.pricingSource === line.pricing_source,
        );
        const items = rates.map((r, i) => ({
          ...r,
          object: 'rate' as const,
          current: i === currentIndex,
          index: i,
        }));
        const limit = query.limit ?? 50;
        const filters = { invoiceId: params.invoiceId, lineItemId: params.lineItemId };
        const position = query.cursor ? deps.cursors.decode('rates', filters, query.cursor) : undefined;
        const start = position ? Number(position[0]) + 1 : 0;
        return {
          body: pageOf(
            items.slice(start, start + limit + 1),
            limit,
            ({ index: _index, ...rate }) => rate,
            (r) => [r.index],
            (p) => deps.cursors.encode('rates', filters, p),
          ),
          resource: { id: record.invoice.id, patientId: record.invoice.patient_id },
        };
      },
    }),
    defineApiRoute({
      method: 'POST',
      url: '/invoices/:invoiceId/issue',
      operationId: 'issueInvoice',
      summary: 'Issue a draft or amending invoice',
      description:
        "The patient is told (a notification is recorded) and `invoice.issued` is sent. A draft is dated the practice's date of issue and due `paymentTermsDays` later; an amended invoice keeps its date and due date. Refused with 422 `business_rule` for any other status, for an invoice with a line no rate was found for (the detail names each; set its price, 0 included, or delete it), and when the total at today's VAT rate would fall below what was paid (record a refund first).",
      tag: 'Invoices',
      permission: 'INVOICES:UPDATE',
      resourceType: 'invoice',
      params: InvoiceParam,
      body: NoInput,
      bodyOptional: true,
      successStatus: 200,
      response: Invoice,
      errorStatuses: [400, 401, 403, 404, 413, 415, 422, 429, 500, 503],
      handler: async ({ trx, practiceId, params, now }) => {
        const record = await issueInvoice(trx, await billingFor(trx, practiceId), params.invoiceId, now);
        return {
          body: invoiceOf(record),
          resource: { id: record.invoice.id, patientId: record.invoice.patient_id },
        };
      },
    }),
    defineApiRoute({
      method: 'POST',
      url: '/invoices/:invoiceId/amend',
      operationId: 'amendInvoice',
      summary: 'Reopen an issued invoice for changes',
      description:
        'An issued, partially paid, overdue or balanced invoice becomes amending, in which lines can change; issue it again when done (payments stay; its total may not fall below what was paid). Refused with 422 `business_rule` while its claim is submitting or reversing (wait for the answer), or accepted, partially accepted or its reversal failed (reverse the claim first).',
      tag: 'Invoices',
      permission: 'INVOICES:UPDATE',
      resourceType: 'invoice',
      params: InvoiceParam,
      body: NoInput,
      bodyOptional: true,
      successStatus: 200,
      response: Invoice,
      errorStatuses: [400, 401, 403, 404, 413, 415, 422, 429, 500, 503],
      handler: async ({ trx, practiceId, params }) => {
        const record = await amendInvoice(trx, await billingFor(trx, practiceId), params.invoiceId);
        return {
          body: invoiceOf(record),
          resource: { id: record.invoice.id, patientId: record.invoice.patient_id },
        };
      },
    }),
    defineApiRoute({
      method: 'POST',
      url: '/invoices/:invoiceId/cancel',
      operationId: 'cancelInvoice',
      summary: 'Cancel an invoice nothing was paid on',
      description:
        'A draft, issued, overdue, amending or balanced invoice with no payments (an invoice for 0 is balanced), and no claim the insurer is working on or has accepted (reverse it first), becomes `cancelled` with the reason; its visits are released so they can be billed again, and `invoice.cancelled` is sent. Anything else answers 422 `business_rule` saying why. Payments are refunded first, or the balance written off by the practice instead.',
      tag: 'Invoices',
      permission: 'INVOICES:UPDATE',
      resourceType: 'invoice',
      acceptsIdempotencyKey: true,
      params: InvoiceParam,
      body: CloseInvoiceRequest,
      successStatus: 200,
      response: Invoice,
      errorStatuses: [400, 401, 403, 404, 409, 413, 415, 422, 429, 500, 503],
      handler: async ({ trx, practiceId, params, body, now }) => {
        const billing = await billingFor(trx, practiceId);
        const record = await closeInvoice(trx, billing, params.invoiceId, 'cancelled', body.reason, now);
        return {
          body: invoiceOf(record),
          resource: { id: record.invoice.id, patientId: record.invoice.patient_id },
          reason: body.reason,
        };
      },
    }),
    defineApiRoute({
      method: 'GET',
      url: '/invoices/:invoiceId/payments',
      operationId: 'listInvoicePayments',
      summary: 'Payments made against an invoice',
      description:
        'From the patient (recorded by the practice) and from the insurer (remittances), oldest first.',
      tag: 'Invoices',
      permission: 'INVOICES:READ',
      resourceType: 'invoice',
      params: InvoiceParam,
      successStatus: 200,
      response: PaymentList,
      errorStatuses: READ_ERRORS,
      handler: async ({ trx, practiceId, params }) => {
        const rows = await paymentsOf(trx, practiceId, params.invoiceId);
        return {
          body: wholeList(rows.map(paymentOf)),
        };
      },
    }),
    defineApiRoute({
      method: 'POST',
      url: '/invoices/:invoiceId/payments',
      operationId: 'recordInvoicePayment',
      summary: 'Record a payment received',
      description:
        "Money the practice received from the patient (a card payment at the desk, cash, a transfer). Only an issued, partially paid or overdue invoice takes payments (else 422 `business_rule`); the amount may not exceed the balance due (422 naming `amount`). The invoice becomes partially_paid, or balanced once fully paid, and `payment.created` is sent. The rules are the operator's `POST /admin/v1/practices/{id}/payments`.",
      tag: 'Invoices',
      permission: 'PAYMENTS:CREATE',
      creates: true,
      resourceType: 'payment',
      params: InvoiceParam,
      body: PaymentRequest,
      successStatus: 201,
      response: Payment,
      errorStatuses: WRITE_ERRORS,
      handler: async ({ trx, practiceId, params, body, now }) => {
        const billing = await billingFor(trx, practiceId);
        const invoice = await lockInvoice(trx, practiceId, params.invoiceId);
        const row = await recordPaymentOn(trx, billing, invoice, { ...body, invoiceId: invoice.id }, now);
        return {
          body: paymentOf(row),
          location: `/api/v1/invoices/${row.invoice_id}/payments/${row.id}`,
          resource: { id: row.id },
        };
      },
    }),
    defineApiRoute({
      method: 'GET',
      url: '/invoices/:invoiceId/payments/:paymentId',
      operationId: 'getInvoicePayment',
      summary: 'Read one payment of an invoice',
      description: 'The address `POST /invoices/{invoiceId}/payments` answers in `Location`.',
      tag: 'Invoices',
      permission: 'INVOICES:READ',
      resourceType: 'payment',
      params: PaymentParams,
      successStatus: 200,
      response: Payment,
      errorStatuses: READ_ERRORS,
      handler: async ({ trx, practiceId, params }) => {
        const row = await paymentOn(trx, practiceId, params.invoiceId, params.paymentId);
        return { body: paymentOf(row), resource: { id: row.id } };
      },
    }),
    defineApiRoute({
      method: 'POST',
      url: '/invoices/:invoiceId/refunds',
      operationId: 'recordInvoiceRefund',
      summary: 'Record a refund given back to the patient',
      description:
        "Needs `REFUNDS:CREATE`, a permission of its own. Never more than the patient paid on the invoice net of earlier refunds (422 naming `amount`; the insurer's money goes back only through a claim reversal). An issued, partially paid, overdue, balanced or amending invoice takes a refund, and a written-off one up to its `creditDue` (else 422 `business_rule`). A refund settles the invoice's `creditDue` (money received beyond its total, such as a medical scheme's remittance after the patient paid) first; beyond that `amountPaid` goes down and `balanceDue` up by the amount: a balanced invoice becomes partially_paid, or issued or overdue when nothing paid is left. `refund.created` is sent.",
      tag: 'Invoices',
      permission: 'REFUNDS:CREATE',
      creates: true,
      resourceType: 'refund',
      params: InvoiceParam,
      body: RefundRequest,
      successStatus: 201,
      response: Refund,
      errorStatuses: WRITE_ERRORS,
      handler: async ({ trx, practiceId, params, body, now }) => {
        const billing = await billingFor(trx, practiceId);
        const row = await recordRefund(trx, billing, params.invoiceId, body, now);
        return {
          body: refundOf(row),
          location: `/api/v1/invoices/${row.invoice_id}/refunds/${row.id}`,
          resource: { id: row.id },
        };
      },
    }),
    defineApiRoute({
      method: 'GET',
      url: '/invoices/:invoiceId/refunds',
      operationId: 'listInvoiceRefunds',
      summary: 'Refunds given on an invoice',
      description: 'Oldest first.',
      tag: 'Invoices',
      permission: 'INVOICES:READ',
      resourceType: 'invoice',
      params: InvoiceParam,
      successStatus: 200,
      response: RefundList,
      errorStatuses: READ_ERRORS,
      handler: async ({ trx, practiceId, params }) => {
        const rows = await refundsOf(trx, practiceId, params.invoiceId);
        return { body: wholeList(rows.map(refundOf)) };
      },
    }),
    defineApiRoute({
      method: 'GET',
      url: '/invoices/:invoiceId/refunds/:refundId',
      operationId: 'getInvoiceRefund',
      summary: 'Read one refund of an invoice',
      description: 'The address `POST /invoices/{invoiceId}/refunds` answers in `Location`.',
      tag: 'Invoices',
      permission: 'INVOICES:READ',
      resourceType: 'refund',
      params: RefundParams,
      successStatus: 200,
      response: Refund,
      errorStatuses: READ_ERRORS,
      handler: async ({ trx, practiceId, params }) => {
        const row = await refundOn(trx, practiceId, params.invoiceId, params.refundId);
        return { body: refundOf(row), resource: { id: row.id } };
      },
    }),
  ];
}

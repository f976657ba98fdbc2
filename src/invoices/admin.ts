// The operator's side of billing: a practice's billing settings (VAT rate, payment terms, invoice
// number prefix), recording payments received and refunds given, and closing an invoice (cancel, mark entered in
// error, write off) through the same rules as the public API.
import { type Static, Type } from 'typebox';
import { defineAdminRoute } from '../api/admin-route.ts';
import { DEFAULT_RETENTION_YEARS, MAX_RETENTION_YEARS, MIN_RETENTION_YEARS } from '../patients/retention.ts';
import { getPractice, practiceBilling, updateBillingSettings } from '../practices/service.ts';
import { type Closing, closeInvoice } from './closing.ts';
import { invoiceFieldError, paymentOf, recordPayment } from './payments.ts';
import { recordRefund, refundOf } from './refunds.ts';
import { CloseInvoiceRequest, Invoice, Payment, PaymentFields, Refund, RefundFields } from './schemas.ts';
import { invoiceOf } from './service.ts';

const PracticeParam = Type.Object(
  { practiceId: Type.String({ minLength: 1, maxLength: 100 }) },
  { additionalProperties: false },
);

export const BillingSettings = Type.Object(
  {
    vatRateBasisPoints: Type.Integer({
      minimum: 0,
      maximum: 10000,
      description: 'VAT in basis points (1500 = 15%); default 0.',
    }),
    paymentTermsDays: Type.Integer({
      minimum: 0,
      maximum: 365,
      description: 'dueDate = invoice date + this many days; default 30.',
    }),
    invoiceNumberPrefix: Type.String({
      maxLength: 20,
      pattern: '^[A-Za-z0-9/_-]*$',
      description: "Default 'INV-'.",
    }),
    retentionYears: Type.Optional(
      Type.Integer({
        minimum: MIN_RETENTION_YEARS,
        maximum: MAX_RETENTION_YEARS,
        description: `Years a patient's records are kept after their last activity before they are de-identified; default ${DEFAULT_RETENTION_YEARS}, at least ${MIN_RETENTION_YEARS} (HPCSA Booklet 9 s9.2). A minor's are kept until their 21st birthday if that is later.`,
      }),
    ),
  },
  { additionalProperties: false },
);

const InvoiceId = Type.String({ minLength: 1, maxLength: 100 });

const AdminRefundRequest = Type.Object(
  { invoiceId: InvoiceId, ...RefundFields },
  { additionalProperties: false },
);

const AdminPaymentRequest = Type.Object(
  {
    invoiceId: InvoiceId,
    ...PaymentFields,
    source: Type.Optional(
      Type.Union([Type.Literal('patient'), Type.Literal('insurer')], { default: 'patient' }),
    ),
  },
  { additionalProperties: false },
);

function settingsOf(billing: Awaited<ReturnType<typeof practiceBilling>>): Static<typeof BillingSettings> {
  return {
    vatRateBasisPoints: billing.vatRateBasisPoints,
    paymentTermsDays: billing.paymentTermsDays,
    invoiceNumberPrefix: billing.invoiceNumberPrefix,
    retentionYears: billing.retentionYears,
  };
}

const InvoiceParams = Type.Object(
  {
    practiceId: Type.String({ minLength: 1, maxLength: 100 }),
    invoiceId: Type.String({ minLength: 1, maxLength: 100 }),
  },
  { additionalProperties: false },
);

const CLOSINGS: Array<{
  action: string;
  closing: Closing;
  operationId: string;
  summary: string;
  description: string;
}> = [
  {
    action: 'cancel',
    closing: 'cancelled',
    operationId: 'adminCancelInvoice',
    summary: 'Cancel an invoice nothing was paid on',
    description:
      'As the public `POST /invoices/{id}/cancel`: a draft, issued, overdue, amending or balanced invoice with no payments and no open or accepted claim becomes `cancelled`; its visits can be billed again; `invoice.cancelled` is sent.',
  },
  {
    action: 'entered-in-error',
    closing: 'entered_in_error',
    operationId: 'adminMarkInvoiceEnteredInError',
    summary: 'Mark an invoice entered in error',
    description:
      'For an invoice that should never have existed (wrong patient, duplicate): the same conditions as cancelling; it becomes `entered_in_error`, its visits can be billed again, and `invoice.entered_in_error` is sent.',
  },
  {
    action: 'write-off',
    closing: 'written_off',
    operationId: 'adminWriteOffInvoice',
    summary: "Write off an invoice's balance",
    description:
      'An issued, partially paid or overdue invoice with a balance due, and no claim the insurer is still working on (submitting, reversing), becomes `written_off`: the practice gives up what is still owed (`amountWrittenOff`, and `balanceDue` becomes 0). An accepted claim stays accepted and every payment stays; a remittance that comes later is still recorded and lowers `amountWrittenOff`. Its visits stay billed. `invoice.written_off` is sent.',
  },
];

const closingRoutes = CLOSINGS.map((c) =>
  defineAdminRoute({
    method: 'POST',
    url: `/practices/:practiceId/invoices/:invoiceId/${c.action}`,
    operationId: c.operationId,
    cli: { command: `invoices ${c.action}` },
    summary: c.summary,
    description: c.description,
    params: InvoiceParams,
    body: CloseInvoiceRequest,
    successStatus: 200,
    response: Invoice,
    movesMoney: c.closing === 'written_off',
    handler: async ({ trx, params, body, now }) => {
      await getPractice(trx, params.practiceId);
      const billing = await practiceBilling(trx, params.practiceId);
      const record = await closeInvoice(trx, billing, params.invoiceId, c.closing, body.reason, now);
      return {
        body: invoiceOf(record),
        audit: {
          practiceId: params.practiceId,
          resourceType: 'invoice',
          resourceId: params.invoiceId,
          reason: body.reason,
        },
      };
    },
  }),
);

export const billingAdminRoutes = [
  ...closingRoutes,
  defineAdminRoute({
    method: 'GET',
    url: '/practices/:practiceId/billing-settings',
    operationId: 'adminGetBillingSettings',
    cli: { command: 'billing get' },
    summary: "Read a practice's billing settings",
    params: PracticeParam,
    successStatus: 200,
    response: BillingSettings,
    handler: async ({ trx, params }) => {
      await getPractice(trx, params.practiceId);
      return { body: settingsOf(await practiceBilling(trx, params.practiceId)) };
    },
  }),
  defineAdminRoute({
    method: 'PUT',
    url: '/practices/:practiceId/billing-settings',
    operationId: 'adminSetBillingSettings',
    cli: { command: 'billing set' },
    summary: "Replace a practice's billing settings",
    description: 'Applies to invoices created or recomputed from now on.',
    params: PracticeParam,
    body: BillingSettings,
    successStatus: 200,
    response: BillingSettings,
    handler: async ({ trx, params, body, now }) => {
      await getPractice(trx, params.practiceId);
      await updateBillingSettings(
        trx,
        params.practiceId,
        { ...body, retentionYears: body.retentionYears ?? DEFAULT_RETENTION_YEARS },
        now,
      );
      return {
        body: settingsOf(await practiceBilling(trx, params.practiceId)),
        audit: { practiceId: params.practiceId, resourceType: 'practice', resourceId: params.practiceId },
      };
    },
  }),
  defineAdminRoute({
    method: 'POST',
    url: '/practices/:practiceId/payments',
    operationId: 'adminRecordPayment',
    cli: { command: 'payments record' },
    summary: 'Record a payment against an invoice',
    description:
      'Moves the invoice to partially_paid, or balanced once fully paid, and sends `payment.created`. Only an issued, partially paid or overdue invoice takes payments; the amount cannot exceed the balance due.',
    params: PracticeParam,
    body: AdminPaymentRequest,
    successStatus: 201,
    response: Payment,
    movesMoney: true,
    handler: async ({ trx, params, body, now }) => {
      await getPractice(trx, params.practiceId);
      const row = await recordPayment(trx, await practiceBilling(trx, params.practiceId), body, now);
      return {
        body: paymentOf(row),
        audit: { practiceId: params.practiceId, resourceType: 'payment', resourceId: row.id },
      };
    },
  }),
  defineAdminRoute({
    method: 'POST',
    url: '/practices/:practiceId/refunds',
    operationId: 'adminRecordRefund',
    cli: { command: 'refunds record' },
    summary: 'Record a refund given back to the patient',
    description:
      "As the public `POST /invoices/{id}/refunds`: never more than the patient paid on the invoice net of earlier refunds; lowers the invoice's amount paid, so its status follows (a balanced invoice owes the refunded amount again), and sends `refund.created`.",
    params: PracticeParam,
    body: AdminRefundRequest,
    successStatus: 201,
    response: Refund,
    movesMoney: true,
    handler: async ({ trx, params, body, now }) => {
      await getPractice(trx, params.practiceId);
      const { invoiceId, ...refund } = body;
      const billing = await practiceBilling(trx, params.practiceId);
      const row = await recordRefund(trx, billing, invoiceId, refund, now).catch(invoiceFieldError);
      return {
        body: refundOf(row),
        audit: { practiceId: params.practiceId, resourceType: 'refund', resourceId: row.id },
      };
    },
  }),
];

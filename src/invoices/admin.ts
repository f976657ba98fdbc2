// The operator's side of billing: a practice's billing settings (VAT rate, payment terms, invoice
// number prefix) and recording payments received.
import { type Static, Type } from 'typebox';
import { defineAdminRoute } from '../admin/admin-route.ts';
import { getPractice } from '../admin/service.ts';
import { Nullable } from '../platform/http/schema.ts';
import { paymentOf, recordPayment } from './payments.ts';
import { Payment } from './schemas.ts';
import { practiceBilling } from './service.ts';

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
  },
  { additionalProperties: false },
);

const PaymentRequest = Type.Object(
  {
    invoiceId: Type.String({ minLength: 1, maxLength: 100 }),
    amount: Type.Integer({
      minimum: 1,
      maximum: 9007199254740991,
      description: 'Minor units; at most the balance due.',
    }),
    method: Type.String({ minLength: 1, maxLength: 30, description: 'e.g. cash, card, eft.' }),
    reference: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 100 }))),
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
  };
}

export const billingAdminRoutes = [
  defineAdminRoute({
    method: 'GET',
    url: '/practices/:practiceId/billing-settings',
    operationId: 'adminGetBillingSettings',
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
    summary: "Replace a practice's billing settings",
    description: 'Applies to invoices created or recomputed from now on.',
    params: PracticeParam,
    body: BillingSettings,
    successStatus: 200,
    response: BillingSettings,
    handler: async ({ trx, params, body, now }) => {
      await getPractice(trx, params.practiceId);
      await trx
        .updateTable('practices')
        .set({
          vat_rate_basis_points: body.vatRateBasisPoints,
          payment_terms_days: body.paymentTermsDays,
          invoice_number_prefix: body.invoiceNumberPrefix,
          updated_at: now,
        })
        .where('id', '=', params.practiceId)
        .execute();
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
    summary: 'Record a payment against an invoice',
    description:
      'Moves the invoice to partially_paid, or balanced once fully paid, and sends `payment.created`. Only an issued, partially paid or overdue invoice takes payments; the amount cannot exceed the balance due.',
    params: PracticeParam,
    body: PaymentRequest,
    successStatus: 201,
    response: Payment,
    handler: async ({ trx, params, body, now }) => {
      await getPractice(trx, params.practiceId);
      const row = await recordPayment(trx, await practiceBilling(trx, params.practiceId), body, now);
      return {
        body: paymentOf(row),
        audit: { practiceId: params.practiceId, resourceType: 'payment', resourceId: row.id },
      };
    },
  }),
];

// Owns the Invoice, line, LineItemRequest, BillRequest, BillResult, Rate, Payment and Refund shapes.
import { type Static, Type } from 'typebox';
import { OffsetDateTime } from '../platform/http/date-time.ts';
import { CalendarDate, Enum, ListOf, Nullable } from '../platform/http/schema.ts';
import { MAX_AMOUNT } from './money.ts';
import { PRICING_SOURCES, RATE_SOURCES } from './rates.ts';

export const INVOICE_STATUSES = [
  'draft',
  'issued',
  'amending',
  'balanced',
  'cancelled',
  'entered_in_error',
  'partially_paid',
  'overdue',
  'written_off',
] as const;
export type InvoiceStatus = (typeof INVOICE_STATUSES)[number];

const Amount = Type.Integer({ minimum: -MAX_AMOUNT, maximum: MAX_AMOUNT });

export const LineDiagnosis = Type.Object({
  system: Nullable(Type.String()),
  code: Type.String(),
  display: Type.String(),
  primary: Type.Boolean(),
});

export const InvoiceLine = Type.Object(
  {
    id: Type.String(),
    serviceDate: Type.String({ format: 'date' }),
    serviceDateEnd: Nullable(Type.String({ format: 'date' })),
    system: Nullable(Type.String()),
    code: Type.String(),
    description: Type.String(),
    modifiers: Type.Array(Type.String(), { description: 'Tariff modifiers.' }),
    quantity: Type.Number(),
    unitPrice: Amount,
    subtotal: Amount,
    total: Amount,
    pricingSource: Nullable(Enum(PRICING_SOURCES)),
    diagnoses: Type.Array(LineDiagnosis),
  },
  { title: 'InvoiceLine' },
);

/** One line read at its own address (the `Location` of adding it): the line, named as a line item. */
export const LineItem = Type.Object(
  { object: Type.Literal('line_item'), ...InvoiceLine.properties },
  { title: 'LineItem' },
);

/** The body of an action that takes no input (issue, amend): none, or an empty object. */
export const NoInput = Type.Object(
  {},
  {
    additionalProperties: false,
    title: 'NoInput',
    description: 'Nothing to send: leave the body out, or send `{}`.',
  },
);

export const Invoice = Type.Object(
  {
    object: Type.Literal('invoice'),
    id: Type.String(),
    number: Type.String({ description: 'The invoice number the patient sees.' }),
    status: Enum(INVOICE_STATUSES),
    claimStatus: Nullable(Type.String()),
    patientId: Type.String(),
    coverageId: Nullable(
      Type.String({ description: 'Coverage the claim was sent under; null while no claim was sent.' }),
    ),
    encounterIds: Type.Array(Type.String()),
    recipientName: Nullable(Type.String()),
    date: Type.String({ format: 'date' }),
    dueDate: Nullable(Type.String({ format: 'date' })),
    currency: Type.String(),
    totalNet: Amount,
    totalGross: Amount,
    amountPaid: Amount,
    balanceDue: Type.Integer({
      minimum: 0,
      maximum: MAX_AMOUNT,
      description:
        'What is still owed on the invoice: totalGross less amountPaid while it is open, never below 0; 0 once it is cancelled, entered in error or written off (a closed invoice owes nothing).',
    }),
    amountWrittenOff: Type.Integer({
      minimum: 0,
      maximum: MAX_AMOUNT,
      description:
        'The balance the practice gave up when it wrote the invoice off (totalGross less amountPaid); 0 unless the invoice is written_off.',
    }),
    creditDue: Type.Integer({
      minimum: 0,
      maximum: MAX_AMOUNT,
      description:
        "What the practice owes the patient: money received beyond totalGross (amountPaid less totalGross, else 0), as when the medical scheme's payment arrives after the patient paid at the desk. A refund settles it.",
    }),
    totalVat: Type.Integer({
      minimum: 0,
      maximum: MAX_AMOUNT,
      description:
        'The VAT included in totalGross (totalGross less totalNet); 0 for a practice not registered for VAT.',
    }),
    paidByScheme: Type.Integer({
      minimum: -MAX_AMOUNT,
      maximum: MAX_AMOUNT,
      description:
        "What the patient's medical scheme paid on the invoice (its remittances less what it took back on a reversal), VAT included.",
    }),
    paidByPatient: Type.Integer({
      minimum: -MAX_AMOUNT,
      maximum: MAX_AMOUNT,
      description:
        'What the patient paid on the invoice less what was refunded (amountPaid less paidByScheme).',
    }),
    balanceExplanation: Type.String({
      description:
        "Why the patient owes what they owe, in words, from the amounts beside it: the total with its VAT, what the scheme paid (and that it pays each service up to its own rate, VAT included), what the patient paid, and what is owed now (or owed to the patient, or written off). For the patient's account.",
    }),
    lineItems: Type.Array(InvoiceLine),
    closingReason: Nullable(
      Type.String({
        description:
          'Why the invoice was cancelled, entered in error or written off, as given then; null while it is not closed.',
      }),
    ),
    updatedAt: Type.String({ format: 'date-time' }),
  },
  { title: 'Invoice' },
);
export type Invoice = Static<typeof Invoice>;
export const InvoiceList = ListOf(Invoice, 'InvoiceList');

export const CloseInvoiceRequest = Type.Object(
  {
    reason: Type.String({
      minLength: 1,
      maxLength: 500,
      description: 'Why, in words a person reads later in the audit log and the console.',
    }),
  },
  { additionalProperties: false, title: 'CloseInvoiceRequest' },
);
export type CloseInvoiceRequest = Static<typeof CloseInvoiceRequest>;

export const LineItemRequest = Type.Object(
  {
    system: Type.Optional(
      Nullable(
        Type.String({
          minLength: 1,
          maxLength: 255,
          description: "Default: the practitioner's procedure system.",
        }),
      ),
    ),
    code: Type.String({ minLength: 1, maxLength: 64 }),
    description: Type.Optional(
      Nullable(
        Type.String({ minLength: 1, maxLength: 500, description: "Default: the code's own wording." }),
      ),
    ),
    serviceDate: Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', format: 'date' }),
    serviceDateEnd: Type.Optional(Nullable(CalendarDate)),
    quantity: Type.Number({ exclusiveMinimum: 0, maximum: 10000, description: 'At most 4 decimal places.' }),
    unitPrice: Type.Integer({
      minimum: 0,
      maximum: 1_000_000_000,
      description: 'Price of one, in minor units.',
    }),
    pricingSource: Type.Optional(
      Nullable(
        Enum(PRICING_SOURCES, {
          description: "The chosen rate's pricingSource; left out, the price counts as set by hand.",
        }),
      ),
    ),
    modifiers: Type.Optional(
      Nullable(Type.Array(Type.String({ minLength: 1, maxLength: 10 }), { maxItems: 10, uniqueItems: true })),
    ),
    diagnoses: Type.Optional(
      Nullable(
        Type.Array(
          Type.Object(
            {
              system: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 255 }))),
              code: Type.String({ minLength: 1, maxLength: 40 }),
              primary: Type.Optional(Nullable(Type.Boolean())),
            },
            { additionalProperties: false },
          ),
          { maxItems: 12, description: 'One is primary; when none is marked the first counts as primary.' },
        ),
      ),
    ),
  },
  { title: 'LineItemRequest', additionalProperties: false },
);
export type LineItemRequest = Static<typeof LineItemRequest>;

export const BillRequest = Type.Object(
  {
    issue: Type.Optional(
      Type.Boolean({ default: false, description: 'Issue in the same call (needs INVOICES:UPDATE).' }),
    ),
    submitClaim: Type.Optional(
      Type.Boolean({
        default: false,
        description: 'Queue the claim in the same call: needs issue true and CLAIMS:SUBMIT.',
      }),
    ),
    coverageId: Type.Optional(
      Nullable(
        Type.String({
          minLength: 1,
          maxLength: 100,
          description: "Default: the patient's first active coverage.",
        }),
      ),
    ),
    placeOfServiceCode: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 10 }))),
  },
  { title: 'BillRequest', additionalProperties: false },
);
export type BillRequest = Static<typeof BillRequest>;

export const BillResult = Type.Object(
  {
    object: Type.Literal('bill_result'),
    invoice: Invoice,
    issued: Nullable(Type.Boolean({ description: 'null when issuing was not requested.' })),
    issueSkippedReason: Nullable(Type.String()),
    claimQueued: Nullable(Type.Boolean({ description: 'null when claiming was not requested.' })),
    claimSkippedReason: Nullable(Type.String()),
  },
  { title: 'BillResult' },
);
export type BillResult = Static<typeof BillResult>;

export const Rate = Type.Object(
  {
    object: Type.Literal('rate'),
    source: Enum(RATE_SOURCES),
    name: Nullable(Type.String({ description: 'Plan, scheme, body or practice it belongs to.' })),
    amount: Amount,
    currency: Type.String(),
    pricingSource: Enum(PRICING_SOURCES, {
      description: "Send it as the line's pricingSource when using the rate.",
    }),
    current: Type.Boolean({ description: "True when it is the line's unit price now." }),
  },
  { title: 'Rate' },
);
export const RateList = ListOf(Rate, 'RateList');

export const Payment = Type.Object(
  {
    object: Type.Literal('payment'),
    id: Type.String(),
    invoiceId: Type.String(),
    amount: Amount,
    currency: Type.String(),
    method: Type.String(),
    source: Enum(['patient', 'insurer']),
    reference: Nullable(Type.String()),
    receivedAt: Type.String({ format: 'date-time' }),
  },
  { title: 'Payment' },
);
export type Payment = Static<typeof Payment>;
export const PaymentList = ListOf(Payment, 'PaymentList');

/** How far ahead of the service clock a payment's `receivedAt` may be (the caller's clock runs fast). */
export const RECEIVED_AT_SKEW_MINUTES = 5;
/** How far back a payment's `receivedAt` may be. */
export const RECEIVED_AT_MAX_AGE_DAYS = 366;

const PositiveAmount = (description: string) =>
  Type.Integer({ minimum: 1, maximum: MAX_AMOUNT, description });
const MoneyMethod = Type.String({ minLength: 1, maxLength: 30, description: 'e.g. cash, card, eft.' });
const MoneyReference = Type.Optional(
  Nullable(
    Type.String({ minLength: 1, maxLength: 100, description: 'e.g. the card slip or bank reference.' }),
  ),
);

/** The fields of a payment received, as the public API and the operator record one. */
export const PaymentFields = {
  amount: PositiveAmount('Minor units; at most the balance due.'),
  method: MoneyMethod,
  reference: MoneyReference,
  receivedAt: Type.Optional(
    OffsetDateTime(
      `When the money was received; default now. At most ${RECEIVED_AT_SKEW_MINUTES} minutes ahead of the service's clock and at most ${RECEIVED_AT_MAX_AGE_DAYS} days back, and not before the invoice's earliest date of service (in the practice's time zone). Returned in UTC.`,
    ),
  ),
};

export const PaymentRequest = Type.Object(PaymentFields, {
  additionalProperties: false,
  title: 'PaymentRequest',
});
export type PaymentRequest = Static<typeof PaymentRequest>;

/** The fields of a refund, as the public API and the operator record one. */
export const RefundFields = {
  amount: PositiveAmount(
    'Minor units; at most what the patient paid on the invoice, net of earlier refunds.',
  ),
  method: MoneyMethod,
  reference: MoneyReference,
  reason: Type.String({
    minLength: 1,
    maxLength: 500,
    description: 'Why the money was given back, in words a person reads later.',
  }),
};

export const RefundRequest = Type.Object(RefundFields, {
  additionalProperties: false,
  title: 'RefundRequest',
});
export type RefundRequest = Static<typeof RefundRequest>;

export const Refund = Type.Object(
  {
    object: Type.Literal('refund'),
    id: Type.String(),
    invoiceId: Type.String(),
    amount: Amount,
    currency: Type.String(),
    method: Type.String(),
    reference: Nullable(Type.String()),
    reason: Type.String(),
    refundedAt: Type.String({ format: 'date-time' }),
  },
  { title: 'Refund' },
);
export type Refund = Static<typeof Refund>;
export const RefundList = ListOf(Refund, 'RefundList');

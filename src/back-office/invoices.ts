// The operator's side of invoices and claims, as the console uses them: search and read invoices, and
// fix and send them (issue, reopen, send, resubmit or reverse the claim) through the same services,
// rules and events as the public API.
import { Type } from 'typebox';
import { defineAdminRoute } from '../api/admin-route.ts';
import { CLAIM_STATUSES, Claim, ClaimRequest, ReverseRequest } from '../claims/schemas.ts';
import { claimItems, claimOf, resubmitClaim, reverseClaim, sendClaim } from '../claims/service.ts';
import { INVOICE_STATUSES, Invoice, NoInput } from '../invoices/schemas.ts';
import { amendInvoice, invoiceOf, issueInvoice } from '../invoices/service.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { pageOf } from '../platform/http/cursor.ts';
import { AppError } from '../platform/http/errors.ts';
import { Enum, ListOf, PagingQuery } from '../platform/http/schema.ts';
import { getPractice, practiceBilling } from '../practices/service.ts';
import { InvoiceDetail, InvoiceSummary, invoiceDetail, searchInvoices, summaryOf } from './service.ts';

const Id = Type.String({ minLength: 1, maxLength: 100 });
const PracticeParam = Type.Object({ practiceId: Id }, { additionalProperties: false });
const InvoiceParams = Type.Object({ practiceId: Id, invoiceId: Id }, { additionalProperties: false });

async function billingOf(trx: Trx, practiceId: string) {
  await getPractice(trx, practiceId);
  return practiceBilling(trx, practiceId);
}

const invoiceAudit = (practiceId: string, invoiceId: string) => ({
  practiceId,
  resourceType: 'invoice',
  resourceId: invoiceId,
});

/** The claim as it is now: just sent or reversing, so not resubmittable whatever the invoice's status. */
async function claimAnswer(trx: Trx, practiceId: string, claim: Awaited<ReturnType<typeof sendClaim>>) {
  return {
    body: claimOf(claim, await claimItems(trx, practiceId, claim.id), false),
    audit: { practiceId, resourceType: 'claim', resourceId: claim.invoice_id },
  };
}

function sendRoute(action: 'claim' | 'claim/resubmit') {
  const send = action === 'claim' ? sendClaim : resubmitClaim;
  return defineAdminRoute({
    method: 'POST',
    url: `/practices/:practiceId/invoices/:invoiceId/${action}`,
    ...(action === 'claim'
      ? {
          operationId: 'adminSendClaim',
          summary: "Send an invoice's claim to the insurer",
          description:
            'As `POST /api/v1/invoices/{invoiceId}/claim`: the same readiness rules; answers 202 with outcome queued.',
        }
      : {
          operationId: 'adminResubmitClaim',
          summary: 'Send a rejected, reversed or partially accepted claim again',
          description:
            'As `POST /api/v1/invoices/{invoiceId}/claim/resubmit`. Send `coverageId` to claim under another coverage (e.g. one added with the corrected member number).',
        }),
    cli: {
      command: `invoices ${action.replace('/', '-')}`,
      flags: { placeOfServiceCode: 'place-of-service' },
    },
    params: InvoiceParams,
    body: ClaimRequest,
    bodyOptional: true,
    successStatus: 202,
    response: Claim,
    handler: async ({ trx, params, body, now }) => {
      const billing = await billingOf(trx, params.practiceId);
      return claimAnswer(trx, params.practiceId, await send(trx, billing, params.invoiceId, body, now));
    },
  });
}

export const invoiceAdminRoutes = [
  defineAdminRoute({
    method: 'GET',
    url: '/practices/:practiceId/invoices',
    operationId: 'adminListInvoices',
    cli: { command: 'invoices list' },
    summary: "Search a practice's invoices, newest change first",
    description:
      "`q` matches part of the invoice number or of the patient's name, or the patient id exactly. Keyset paged: send `nextCursor` unchanged with the same filters.",
    params: PracticeParam,
    querystring: Type.Object(
      {
        status: Type.Optional(Enum(INVOICE_STATUSES)),
        claimStatus: Type.Optional(Enum(CLAIM_STATUSES)),
        q: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
        ...PagingQuery,
      },
      { additionalProperties: false },
    ),
    successStatus: 200,
    response: ListOf(InvoiceSummary, 'InvoiceSummaryList'),
    handler: async ({ trx, deps, params, query }) => {
      await getPractice(trx, params.practiceId);
      const limit = query.limit ?? 50;
      const filters = {
        practiceId: params.practiceId,
        status: query.status,
        claimStatus: query.claimStatus,
        q: query.q,
      };
      const position = query.cursor
        ? deps.cursors.decode('admin-invoices', filters, query.cursor)
        : undefined;
      if (position && (typeof position[0] !== 'string' || typeof position[1] !== 'string')) {
        throw new AppError('invalid_cursor', 'The cursor is not valid for this list.');
      }
      const before = position ? { updatedAt: position[0] as string, id: position[1] as string } : undefined;
      const rows = await searchInvoices(trx, params.practiceId, filters, before, limit);
      return {
        body: pageOf(
          rows,
          limit,
          summaryOf,
          (r) => [new Date(r.updated_at).toISOString(), r.id],
          (p) => deps.cursors.encode('admin-invoices', filters, p),
        ),
      };
    },
  }),
  defineAdminRoute({
    method: 'GET',
    url: '/practices/:practiceId/invoices/:invoiceId',
    operationId: 'adminGetInvoice',
    cli: { command: 'invoices get' },
    summary: 'Read an invoice with its patient, coverages, payments, claim, events and deliveries',
    params: InvoiceParams,
    successStatus: 200,
    response: InvoiceDetail,
    handler: async ({ trx, params, now }) => ({
      body: await invoiceDetail(trx, await billingOf(trx, params.practiceId), params.invoiceId, now),
    }),
  }),
  defineAdminRoute({
    method: 'POST',
    url: '/practices/:practiceId/invoices/:invoiceId/issue',
    operationId: 'adminIssueInvoice',
    cli: { command: 'invoices issue' },
    summary: 'Issue a draft or amending invoice',
    description: 'As `POST /api/v1/invoices/{invoiceId}/issue`.',
    params: InvoiceParams,
    body: NoInput,
    bodyOptional: true,
    successStatus: 200,
    response: Invoice,
    handler: async ({ trx, params, now }) => {
      const billing = await billingOf(trx, params.practiceId);
      const record = await issueInvoice(trx, billing, params.invoiceId, now);
      return { body: invoiceOf(record), audit: invoiceAudit(params.practiceId, params.invoiceId) };
    },
  }),
  defineAdminRoute({
    method: 'POST',
    url: '/practices/:practiceId/invoices/:invoiceId/amend',
    operationId: 'adminAmendInvoice',
    cli: { command: 'invoices amend' },
    summary: 'Reopen an issued invoice for changes',
    description: 'As `POST /api/v1/invoices/{invoiceId}/amend`.',
    params: InvoiceParams,
    body: NoInput,
    bodyOptional: true,
    successStatus: 200,
    response: Invoice,
    handler: async ({ trx, params }) => {
      const billing = await billingOf(trx, params.practiceId);
      const record = await amendInvoice(trx, billing, params.invoiceId);
      return { body: invoiceOf(record), audit: invoiceAudit(params.practiceId, params.invoiceId) };
    },
  }),
  sendRoute('claim'),
  sendRoute('claim/resubmit'),
  defineAdminRoute({
    method: 'POST',
    url: '/practices/:practiceId/invoices/:invoiceId/claim/reverse',
    operationId: 'adminReverseClaim',
    cli: { command: 'invoices claim-reverse' },
    summary: 'Reverse an accepted claim',
    description: 'As `POST /api/v1/invoices/{invoiceId}/claim/reverse`.',
    params: InvoiceParams,
    body: ReverseRequest,
    bodyOptional: true,
    successStatus: 202,
    response: Claim,
    handler: async ({ trx, params, body, now }) => {
      const billing = await billingOf(trx, params.practiceId);
      const claim = await reverseClaim(trx, billing, params.invoiceId, body.reason ?? null, now);
      return claimAnswer(trx, params.practiceId, claim);
    },
  }),
];

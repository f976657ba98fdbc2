// Declares the claim operations of the public API. Sending, resubmitting and reversing answer 202 with
// the claim as it is now; the insurer's answer is read later or learned from claim.status_changed.

import { defineApiRoute } from '../api/api-route.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { IdParam } from '../platform/http/schema.ts';
import { practiceBilling } from '../practices/service.ts';
import { Claim, ClaimRequest, ReverseRequest } from './schemas.ts';
import { claimItems, claimOf, readClaim, resubmitClaim, reverseClaim, sendClaim } from './service.ts';

const InvoiceParam = IdParam('invoiceId', 'Invoice id (`inv_...`).');
const SEND_ERRORS = [400, 401, 403, 404, 409, 413, 415, 422, 429, 500, 503];

/**
 * A 202 with the claim as it is now, and in Location the address to follow it at. The claim was just
 * sent or is reversing, so it is not resubmittable whatever the invoice's status.
 */
async function answer(trx: Trx, practiceId: string, claim: Awaited<ReturnType<typeof sendClaim>>) {
  return {
    body: claimOf(claim, await claimItems(trx, practiceId, claim.id), false),
    location: `/api/v1/invoices/${claim.invoice_id}/claim`,
    resource: { id: claim.invoice_id },
  };
}

export const claimRoutes = [
  defineApiRoute({
    method: 'POST',
    url: '/invoices/:invoiceId/claim',
    operationId: 'sendClaim',
    summary: "Send an invoice's claim to the insurer",
    description:
      "The invoice must be claim-ready: issued, partially paid or overdue, with at least one line, every line with a primary diagnosis, and a coverage (coverageId, else the patient's first active one). Otherwise 422 `business_rule` says what to fix. Answers 202 with outcome `queued`; the answer comes in seconds (GET the claim, or the `claim.status_changed` webhook).",
    tag: 'Claims',
    permission: 'CLAIMS:EXECUTE',
    resourceType: 'claim',
    acceptsIdempotencyKey: true,
    queuesClaimWork: true,
    params: InvoiceParam,
    body: ClaimRequest,
    bodyOptional: true,
    successStatus: 202,
    response: Claim,
    errorStatuses: SEND_ERRORS,
    handler: async ({ trx, practiceId, params, body, now }) =>
      answer(
        trx,
        practiceId,
        await sendClaim(trx, await practiceBilling(trx, practiceId), params.invoiceId, body ?? {}, now),
      ),
  }),
  defineApiRoute({
    method: 'GET',
    url: '/invoices/:invoiceId/claim',
    operationId: 'getClaim',
    summary: "Read an invoice's claim, line by line",
    tag: 'Claims',
    permission: 'CLAIMS:READ',
    resourceType: 'claim',
    params: InvoiceParam,
    successStatus: 200,
    response: Claim,
    errorStatuses: [401, 403, 404, 429, 500, 503],
    handler: async ({ trx, practiceId, params }) => ({
      body: await readClaim(trx, await practiceBilling(trx, practiceId), params.invoiceId),
      resource: { id: params.invoiceId },
    }),
  }),
  defineApiRoute({
    method: 'POST',
    url: '/invoices/:invoiceId/claim/resubmit',
    operationId: 'resubmitClaim',
    summary: 'Send a rejected, reversed or partially accepted claim again',
    description:
      "Allowed when the claim's `resubmittable` is true (a body naming another coverage is checked as for a claim); else 422 `business_rule` saying why. A rejected or reversed claim is sent again as a correction built from the invoice's current lines. A partially accepted claim is reversed first (status reversing) so accepted lines are not paid twice, then sent again by itself.",
    tag: 'Claims',
    permission: 'CLAIMS:EXECUTE',
    resourceType: 'claim',
    acceptsIdempotencyKey: true,
    queuesClaimWork: true,
    params: InvoiceParam,
    body: ClaimRequest,
    bodyOptional: true,
    successStatus: 202,
    response: Claim,
    errorStatuses: SEND_ERRORS,
    handler: async ({ trx, practiceId, params, body, now }) =>
      answer(
        trx,
        practiceId,
        await resubmitClaim(trx, await practiceBilling(trx, practiceId), params.invoiceId, body ?? {}, now),
      ),
  }),
  defineApiRoute({
    method: 'POST',
    url: '/invoices/:invoiceId/claim/reverse',
    operationId: 'reverseClaim',
    summary: 'Reverse an accepted claim',
    description:
      'Allowed while `reversible` is true (accepted, partially accepted, or a failed reversal); else 422 `business_rule`. Answers 202 with status reversing.',
    tag: 'Claims',
    permission: 'CLAIMS:EXECUTE',
    resourceType: 'claim',
    acceptsIdempotencyKey: true,
    queuesClaimWork: true,
    params: InvoiceParam,
    body: ReverseRequest,
    bodyOptional: true,
    successStatus: 202,
    response: Claim,
    errorStatuses: SEND_ERRORS,
    handler: async ({ trx, practiceId, params, body, now }) => {
      const reason = body?.reason ?? null;
      const answered = await answer(
        trx,
        practiceId,
        await reverseClaim(trx, await practiceBilling(trx, practiceId), params.invoiceId, reason, now),
      );
      return reason === null ? answered : { ...answered, reason };
    },
  }),
];

// Owns queueing an invoice's claim from the bill operation. Claim sending is not part of this
// version yet: bill says so in claimSkippedReason and queues nothing.
import type { ClaimQueuer } from '../invoices/bill.ts';

export const queueClaimFromBill: ClaimQueuer = async () => ({
  queued: false,
  reason:
    'Claims cannot be sent by this version of the service yet; the invoice was created and issued, and its claim can be sent once claim sending is available.',
});

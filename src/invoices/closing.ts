// Owns the ways an invoice stops being collected: cancelled (a draft or an issued invoice nothing was
// paid on, a zero-total one included, billed by mistake or no longer wanted), entered in error (it
// should never have existed) and written off (the practice gives up the balance). Cancelling or
// marking in error releases the invoice's visits so they can be billed again; a write-off keeps them
// billed. Each records why and when and writes its event. A claim the insurer is working on must be
// waited for; cancelling or marking in error also needs an accepted claim reversed first, so no
// insurer money is left on an invoice that should not exist, and money the patient paid refunded
// first. A write-off gives up only the balance still owed: the claim stays accepted and every payment
// (the insurer's and the patient's) stays.
import type { EventType } from '../events/schemas.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { AppError } from '../platform/http/errors.ts';
import type { PracticeBilling } from '../practices/service.ts';
import { recordEvent } from '../webhooks/outbox.ts';
import { OWING_STATUSES } from './payment-status.ts';
import type { InvoiceStatus } from './schemas.ts';
import { claimInFlightReason, readInvoice, touchInvoice, unsettledClaimReason } from './service.ts';
import { type InvoiceRecord, releaseVisits } from './store.ts';

export type Closing = 'cancelled' | 'entered_in_error' | 'written_off';

interface ClosingRule {
  from: readonly InvoiceStatus[];
  event: EventType;
  releasesVisits: boolean;
  verb: string;
}

const RULES: Record<Closing, ClosingRule> = {
  cancelled: {
    // balanced: an invoice for 0 (nothing paid, checked below) is balanced as soon as it is issued.
    from: ['draft', 'issued', 'overdue', 'amending', 'balanced'],
    event: 'invoice.cancelled',
    releasesVisits: true,
    verb: 'cancelled',
  },
  entered_in_error: {
    from: ['draft', 'issued', 'overdue', 'amending', 'balanced'],
    event: 'invoice.entered_in_error',
    releasesVisits: true,
    verb: 'marked entered in error',
  },
  written_off: {
    // Only money still owing can be written off.
    from: OWING_STATUSES,
    event: 'invoice.written_off',
    releasesVisits: false,
    verb: 'written off',
  },
};

function refusal(record: InvoiceRecord, closing: Closing): string | null {
  const invoice = record.invoice;
  const rule = RULES[closing];
  const owing = Number(invoice.balance_due) > 0 && OWING_STATUSES.includes(invoice.status as InvoiceStatus);
  if (!rule.from.includes(invoice.status as InvoiceStatus)) {
    const instead =
      closing !== 'written_off' && Number(invoice.amount_paid) > 0 && owing
        ? ' It has payments: record a refund of them first, or write its balance off instead.'
        : '';
    return `Invoice ${invoice.number} is ${invoice.status}; only an invoice that is ${rule.from.join(', ')} can be ${rule.verb}.${instead}`;
  }
  // The insurer's answer first: reversing the claim also takes back what the insurer paid. A write-off
  // gives up only what is still owed: an accepted claim and the insurer's payments stay as they are.
  const claimReason =
    closing === 'written_off' ? claimInFlightReason(invoice) : unsettledClaimReason(invoice);
  if (claimReason) return claimReason;
  if (closing !== 'written_off' && Number(invoice.amount_paid) !== 0) {
    const instead = owing ? ', or write its balance off instead' : '';
    return `Invoice ${invoice.number} has ${invoice.amount_paid} paid on it; an invoice with payments cannot be ${rule.verb}: record a refund of them first${instead}.`;
  }
  if (closing === 'written_off' && Number(invoice.balance_due) <= 0) {
    return `Invoice ${invoice.number} has no balance to write off.`;
  }
  return null;
}

export async function closeInvoice(
  trx: Trx,
  billing: PracticeBilling,
  invoiceId: string,
  closing: Closing,
  reason: string,
  now: Date,
): Promise<InvoiceRecord> {
  const record = await readInvoice(trx, billing.id, invoiceId, true);
  const refused = refusal(record, closing);
  if (refused) throw new AppError('business_rule', refused);
  await touchInvoice(trx, billing, invoiceId, { status: closing, closed_reason: reason, closed_at: now });
  if (RULES[closing].releasesVisits) {
    await releaseVisits(trx, billing.id, invoiceId);
  }
  await recordEvent(trx, billing.id, RULES[closing].event, { type: 'invoice', id: invoiceId }, now);
  return readInvoice(trx, billing.id, invoiceId);
}

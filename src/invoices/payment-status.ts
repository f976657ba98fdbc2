// Owns the rule that an open invoice's status follows from its money: after every change to what an
// issued invoice is for or what was paid on it, `balanced` when the amount paid covers the total,
// `partially_paid` when some but not all of it is paid, else `issued`, or `overdue` once the due
// date has passed in the practice's time zone. Pure, so a rule change is checked without a database.
import type { InvoiceStatus } from './schemas.ts';

/**
 * The statuses of an issued invoice that still has money owing on it: it can be paid, amended and
 * claimed.
 */
export const OWING_STATUSES: readonly InvoiceStatus[] = ['issued', 'partially_paid', 'overdue'];

/** The statuses of an issued invoice whose money decides which one it is. */
export const OPEN_STATUSES: readonly InvoiceStatus[] = ['issued', 'partially_paid', 'overdue', 'balanced'];

/**
 * The statuses of an invoice an insurer's remittance is recorded on: every issued one, paid in full
 * or not, and one written off. The scheme's money is never turned away: paid beyond what is owed, it
 * shows as the invoice's `creditDue` (the practice owes the patient, settled by a refund); on a
 * written-off invoice it lowers the amount written off.
 */
export const REMITTABLE_STATUSES: readonly InvoiceStatus[] = [...OPEN_STATUSES, 'written_off'];

export interface InvoiceMoney {
  totalGross: number;
  amountPaid: number;
  dueDate: string | null;
}

/** The status of an open invoice with these amounts on `today` (YYYY-MM-DD, the practice's date). */
export function openStatus(money: InvoiceMoney, today: string): InvoiceStatus {
  if (money.amountPaid >= money.totalGross) return 'balanced';
  if (money.amountPaid > 0) return 'partially_paid';
  if (money.dueDate !== null && money.dueDate < today) return 'overdue';
  return 'issued';
}

/**
 * Why a change that leaves the invoice for less than was paid on it (a line change, or issuing it
 * again at another VAT rate) is refused, or null.
 */
export function overpaymentReason(money: InvoiceMoney, number: string): string | null {
  if (money.amountPaid <= money.totalGross) return null;
  return `Invoice ${number} would be for ${money.totalGross} but ${money.amountPaid} is paid on it; the service keeps no credit balance, so a change may not bring the total below what was paid. Record a refund of at least ${money.amountPaid - money.totalGross} first.`;
}

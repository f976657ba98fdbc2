// Owns what the account tells the patient about its money in words: what the invoice is for (with the
// VAT in it), what the medical scheme paid and why it may have paid less, what the patient paid, and
// what is owed now, by whom. Pure, from the invoice's own amounts, so the words never disagree with
// the numbers beside them.
import type { Selectable } from 'kysely';
import type { InvoicesTable } from '../platform/db/tables.ts';
import { formatAmount } from './money-format.ts';
import type { InvoiceStatus } from './schemas.ts';

export interface AccountMoney {
  status: InvoiceStatus;
  claimStatus: string | null;
  currency: string;
  totalNet: number;
  totalGross: number;
  paidByScheme: number;
  paidByPatient: number;
  balanceDue: number;
  creditDue: number;
  amountWrittenOff: number;
}

/** The amounts an invoice row holds, as the account speaks of them. */
export function accountMoneyOf(i: Selectable<InvoicesTable>): AccountMoney {
  return {
    status: i.status as InvoiceStatus,
    claimStatus: i.claim_status,
    currency: i.currency,
    totalNet: Number(i.total_net),
    totalGross: Number(i.total_gross),
    paidByScheme: Number(i.paid_by_insurer),
    paidByPatient: Number(i.amount_paid) - Number(i.paid_by_insurer),
    balanceDue: Number(i.balance_due),
    creditDue: Number(i.credit_due),
    amountWrittenOff: Number(i.amount_written_off),
  };
}

const CLAIM_PAID_IN_PART = ['accepted', 'partially_accepted', 'reversal_failed'];

/**
 * One paragraph saying why the patient owes what they owe (or is owed, or owes nothing); `format`
 * writes an amount (the API's `ZAR 569.25` by default; the printed account passes its own `R 569.25`).
 */
export function balanceExplanation(
  m: AccountMoney,
  format: (amount: number, currency: string) => string = formatAmount,
): string {
  const money = (amount: number) => format(amount, m.currency);
  const vat = m.totalGross - m.totalNet;
  const parts = [
    vat !== 0
      ? `Total ${money(m.totalGross)}: ${money(m.totalNet)} for the services plus VAT of ${money(vat)}.`
      : `Total ${money(m.totalGross)}.`,
  ];
  if (m.paidByScheme !== 0) {
    const short = m.paidByScheme < m.totalGross && CLAIM_PAID_IN_PART.includes(m.claimStatus ?? '');
    parts.push(
      short
        ? `Your medical scheme paid ${money(m.paidByScheme)}, VAT included: it pays each service up to its own rate, and not for services your plan does not cover; the rest is yours to pay.`
        : `Your medical scheme paid ${money(m.paidByScheme)}.`,
    );
  }
  if (m.paidByPatient !== 0) parts.push(`You paid ${money(m.paidByPatient)}.`);
  parts.push(owedNow(m, money));
  return parts.join(' ');
}

function owedNow(m: AccountMoney, money: (amount: number) => string): string {
  if (m.status === 'cancelled' || m.status === 'entered_in_error')
    return 'This invoice was withdrawn: nothing is owed.';
  if (m.status === 'written_off')
    return `The practice wrote off ${money(m.amountWrittenOff)}: nothing is owed.`;
  if (m.status === 'draft') return 'This invoice is not issued yet.';
  if (m.creditDue > 0) return `The practice owes you ${money(m.creditDue)}, to be refunded.`;
  if (m.balanceDue > 0) return `You owe ${money(m.balanceDue)}.`;
  return 'Nothing is owed.';
}

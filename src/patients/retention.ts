// Owns the retention rule for a patient's records, as pure functions over plain dates (YYYY-MM-DD in
// the practice's time zone): when retention ends, and whether an erasure may go ahead now. The rule
// and its sources are in docs/decisions/0180-patient-retention-rule.md: kept `retentionYears` (at
// least 6, HPCSA Booklet 9 s9.2) after the last activity, and a minor's until their 21st birthday
// (s9.3.1), whichever is later; for life when the practice marks the patient so (s9.3.2). Never
// reads the database or the clock.

/** The least retention the law allows a practice to set: six years after dormancy (HPCSA Booklet 9 s9.2). */
export const MIN_RETENTION_YEARS = 6;
export const DEFAULT_RETENTION_YEARS = 6;
export const MAX_RETENTION_YEARS = 100;
/** A minor's records are kept until this birthday (HPCSA Booklet 9 s9.3.1). */
export const MINOR_KEPT_UNTIL_AGE = 21;

/** `date` (YYYY-MM-DD) plus whole years; 29 February becomes 28 February in a year without it. */
export function addYears(date: string, years: number): string {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  const year = y + years;
  const lastDay = new Date(Date.UTC(year, m, 0)).getUTCDate();
  const day = Math.min(d, lastDay);
  return `${String(year).padStart(4, '0')}-${String(m).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
}

export interface RetentionFacts {
  /** The day of the patient's last encounter, invoice, payment or claim activity (or registration). */
  lastActivityOn: string;
  /** Null once erased. */
  birthDate: string | null;
  retentionYears: number;
  /** Kept for the patient's lifetime (HPCSA Booklet 9 s9.3.2), as the practice marked them. */
  lifelong?: boolean;
}

/**
 * The first day the patient's records are no longer required: the later of the two rules; null for a
 * patient kept for life.
 */
export function retentionEndsOn(facts: RetentionFacts): string | null {
  if (facts.lifelong) return null;
  const years = Math.max(facts.retentionYears, MIN_RETENTION_YEARS);
  const afterActivity = addYears(facts.lastActivityOn, years);
  if (facts.birthDate === null) return afterActivity;
  const adult = addYears(facts.birthDate, MINOR_KEPT_UNTIL_AGE);
  return adult > afterActivity ? adult : afterActivity;
}

/** A patient is dormant (their retention has ended) from retentionEndsOn onwards. */
export function isDormant(facts: RetentionFacts, today: string): boolean {
  const ends = retentionEndsOn(facts);
  return ends !== null && today >= ends;
}

export interface ErasureFacts extends RetentionFacts {
  erased: boolean;
  /** Invoices still open: draft, issued, amending, partially paid or overdue. */
  openInvoices: number;
  /** Claims the insurer has not answered yet: submitting or reversing. */
  claimsInFlight: number;
}

export type ErasureRefusal = 'already_erased' | 'open_invoice' | 'claim_in_flight' | 'retention_required';

/**
 * Why the patient cannot be de-identified today, in the order a caller would fix them; none: go ahead.
 * Inside retention, a lawful ground (POPIA s14(1), s24(1)) lets it go ahead and is recorded.
 */
export function erasureRefusals(
  facts: ErasureFacts,
  today: string,
  lawfulGround: string | null,
): ErasureRefusal[] {
  if (facts.erased) return ['already_erased'];
  const refusals: ErasureRefusal[] = [];
  if (facts.openInvoices > 0) refusals.push('open_invoice');
  if (facts.claimsInFlight > 0) refusals.push('claim_in_flight');
  if (!isDormant(facts, today) && lawfulGround === null) refusals.push('retention_required');
  return refusals;
}

// Owns the rule for a patient's e-mail address: which contact point is written to, and why a message
// cannot go at all. The issuing transaction applies it to record an undeliverable account at once
// (no job), and the e-mail job applies it again at sending time, when the address may have changed.
import { EMAIL_PATTERN } from '../platform/http/patterns.ts';

export type Undeliverable = { delivery: 'no_address' | 'failed'; detail: string };

/** The e-mail address a patient is written to: the email contact point of lowest rank, then the first. */
export function emailOf(contactPoints: readonly { system: string; value: string; rank: number | null }[]) {
  const emails = contactPoints
    .map((c, index) => ({ ...c, index }))
    .filter((c) => c.system === 'email')
    .sort(
      (a, b) =>
        (a.rank ?? Number.MAX_SAFE_INTEGER) - (b.rank ?? Number.MAX_SAFE_INTEGER) || a.index - b.index,
    );
  return emails[0]?.value.trim();
}

const IS_EMAIL = new RegExp(EMAIL_PATTERN);

/** Where a patient's e-mail goes, or why it cannot go (recorded on the notification, never retried). */
export function patientMailAddress(
  contactPoints: readonly { system: string; value: string; rank: number | null }[],
): { to: string } | Undeliverable {
  const to = emailOf(contactPoints);
  if (!to) return { delivery: 'no_address', detail: 'no e-mail address' };
  if (!IS_EMAIL.test(to)) {
    return { delivery: 'failed', detail: "the patient's e-mail contact point is not an e-mail address" };
  }
  return { to };
}

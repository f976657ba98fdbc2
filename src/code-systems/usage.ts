// Owns the rule that a code is used only where its kind fits: diagnoses take condition codes,
// procedures and invoice lines take procedure codes. A code's kinds are its system's usage plus its
// own extras.
import type { Trx } from '../platform/db/transaction.ts';
import { knownSystemUrls, type ResolvedCode, resolveCodes } from './store.ts';

/** The kinds of record a visit or an invoice picks codes for. */
export type CodeUsage = 'condition' | 'procedure';

/** The field error message for a code picked where its kind does not fit. */
export function usageMismatch(code: ResolvedCode, wanted: CodeUsage): string {
  const kinds = code.usage.length > 0 ? code.usage.join(', ') : 'no kind of record';
  return `is a code of ${code.system} for ${kinds}, not a ${wanted} code`;
}

/**
 * Refuses a diagnosis picked twice on one record (the same system and code), naming the repeat's code
 * and the first: a visit and an invoice line each record a diagnosis once. `field` is the element's
 * path (`diagnoses.2`).
 */
export function refuseRepeatedDiagnoses(
  diagnoses: ReadonlyArray<{ field: string; system: string; code: string }>,
  record: 'visit' | 'line',
  invalid: (field: string, message: string) => void,
): void {
  const firstOf = new Map<string, string>();
  for (const d of diagnoses) {
    const key = `${d.system}|${d.code}`;
    const first = firstOf.get(key);
    if (first) invalid(`${d.field}.code`, `repeats ${first}: a diagnosis is recorded once per ${record}`);
    else firstOf.set(key, d.field);
  }
}

/** A code picked on a record: the fields its errors name, the kind it is picked for, its system and code. */
export interface PickedCoding {
  systemField: string;
  codeField: string;
  usage: CodeUsage;
  system: string;
  /** Without a code only the system is judged. */
  code?: string | undefined;
}

/**
 * Judges codes picked on a record, in order: a system the practice cannot use, a code its system does
 * not have, a code no longer active (when `active` is asked), a code of another kind. Answers the
 * codes found, by `system|code`.
 */
export async function judgeCodings(
  trx: Trx,
  practiceId: string,
  codings: PickedCoding[],
  options: { active: boolean },
  invalid: (field: string, message: string) => void,
): Promise<Map<string, ResolvedCode>> {
  const withCode = codings.flatMap((c) => (c.code === undefined ? [] : [{ system: c.system, code: c.code }]));
  const [resolved, systems] = await Promise.all([
    resolveCodes(trx, practiceId, withCode),
    knownSystemUrls(trx, practiceId, [...new Set(codings.map((c) => c.system))]),
  ]);
  for (const coding of codings) {
    if (!systems.has(coding.system)) {
      invalid(coding.systemField, 'is not a code system this practice can use');
      continue;
    }
    if (coding.code === undefined) continue;
    const found = resolved.get(`${coding.system}|${coding.code}`);
    if (!found) invalid(coding.codeField, `is not a code of ${coding.system}`);
    else if (options.active && !found.active) invalid(coding.codeField, 'is no longer active');
    else if (!found.usage.includes(coding.usage))
      invalid(coding.codeField, usageMismatch(found, coding.usage));
  }
  return resolved;
}

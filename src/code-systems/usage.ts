// Owns the rule that a code is used only where its kind fits: diagnoses take condition codes,
// procedures and invoice lines take procedure codes. A code's kinds are its system's usage plus its
// own extras.
import type { ResolvedCode } from './store.ts';

/** The kinds of record a visit or an invoice picks codes for. */
export type CodeUsage = 'condition' | 'procedure';

/** The field error message for a code picked where its kind does not fit. */
export function usageMismatch(code: ResolvedCode, wanted: CodeUsage): string {
  const kinds = code.usage.length > 0 ? code.usage.join(', ') : 'no kind of record';
  return `is a code of ${code.system} for ${kinds}, not a ${wanted} code`;
}

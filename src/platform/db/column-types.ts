// Owns what the schema cannot say about a column and the generated tables.ts refers to: the shapes
// stored in jsonb columns, and columns that are written once and never updated. scripts/db-types.ts
// says which column takes which type.
import type { ColumnType } from 'kysely';

/** Written when its row is inserted, never updated (a row's creation time). */
export type NeverUpdated<T> = ColumnType<T, T, never>;

/** patients.identifiers */
export interface PatientIdentifier {
  type: string;
  value: string;
}

/** patients.contact_points */
export interface PatientContactPoint {
  system: string;
  value: string;
  use: string | null;
  rank: number | null;
}

/** patients.addresses */
export interface PatientAddress {
  type: string | null;
  use: string | null;
  lines: string[];
  city: string | null;
  district: string | null;
  state: string | null;
  postalCode: string | null;
  country: string | null;
}

/** invoice_lines.diagnoses */
export interface LineDiagnosis {
  system: string | null;
  code: string;
  display: string;
  primary: boolean;
}

/** claim_items.rejections and claim_items.warnings */
export interface ClaimNote {
  code: string;
  description: string;
}

/** events.detail: what a claim, payment or refund event says about its claim, payment or refund. */
export interface EventDetail {
  claim?: { id: string; status: string };
  payment?: { id: string; amount: number; currency: string; source: 'patient' | 'insurer' };
  refund?: { id: string; amount: number; currency: string };
}

/** practices.address: where the practice is, as its accounts show it. */
export interface PracticeAddress {
  lines: string[];
  city: string;
  postalCode: string;
  country: string;
}

/** practices.bank_details: how a patient pays the practice. */
export interface PracticeBankDetails {
  bank: string;
  accountName: string;
  accountNumber: string;
  branchCode: string;
}

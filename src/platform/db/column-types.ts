// Owns what the schema cannot say about a column: the shapes stored in jsonb columns, which tables.ts
// refers to.

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

// Owns the closed set of permissions a client can be granted (`RESOURCE:ACTION`).
export const PERMISSIONS = [
  'PATIENTS:CREATE',
  'PATIENTS:READ',
  'PATIENTS:UPDATE',
  'PATIENTS:EXPORT',
  'ENCOUNTERS:CREATE',
  'ENCOUNTERS:READ',
  'INVOICES:CREATE',
  'INVOICES:READ',
  'INVOICES:UPDATE',
  'CLAIMS:READ',
  'CLAIMS:EXECUTE',
  'CLAIMS:SUBMIT',
  'CODE_SYSTEMS:READ',
  'CODE_SYSTEMS:CREATE',
  'CODE_SYSTEMS:UPDATE',
  'PATIENT_COVERAGE:READ',
  'PATIENT_COVERAGE:CREATE',
  'PRACTITIONERS:READ',
  'EVENTS:READ',
  'PAYMENTS:CREATE',
  'REFUNDS:CREATE',
] as const;

export type Permission = (typeof PERMISSIONS)[number];

export function isPermission(value: string): value is Permission {
  return (PERMISSIONS as readonly string[]).includes(value);
}

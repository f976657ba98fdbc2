// Owns practices, their Integrations add-on and their practitioners as the operator records them.
// Runs as the operator role (every practice visible), so each function names the practice it acts on.
import type { Selectable } from 'kysely';
import type { Static } from 'typebox';
import { ICD10_URL, TARIFF_URL } from '../code-systems/published.ts';
import type { PracticesTable, PractitionersTable } from '../platform/db/tables.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { fieldErrors, notFound } from '../platform/http/errors.ts';
import { newId } from '../platform/ids.ts';
import type {
  Practice,
  PracticePatch,
  PracticeRequest,
  Practitioner,
  PractitionerRequest,
} from './schemas.ts';
import {
  allPractitionerRows,
  findPractice,
  findPractitioner,
  findPractitionerDefaults,
  insertPractice,
  insertPractitioner,
  listPracticeRows,
  listPractitionerRows,
  updateAccountDetails,
  updateBillingSettings,
  updateIntegrations,
} from './store.ts';
import { DEFAULT_TIME_ZONE, isTimeZone } from './time-zones.ts';

export { findPractitioner, findPractitionerDefaults, listPractitionerRows, updateBillingSettings };

export function practiceOf(row: Selectable<PracticesTable>): Static<typeof Practice> {
  return {
    object: 'practice',
    id: row.id,
    name: row.name,
    currency: row.currency,
    timezone: row.timezone,
    integrationsEnabled: row.integrations_enabled,
    practiceNumber: row.practice_number,
    groupPracticeNumber: row.group_practice_number,
    vatNumber: row.vat_number,
    address: row.address,
    phone: row.phone,
    email: row.email,
    bankDetails: row.bank_details,
    createdAt: row.created_at.toISOString(),
  };
}

type AccountDetailsRequest = Partial<Omit<Static<typeof PracticePatch>, 'name'>>;

/** The columns of the account details a request gives (absent: left as they are; null: cleared). */
function accountColumns(request: AccountDetailsRequest) {
  const columns: Partial<
    Pick<
      Selectable<PracticesTable>,
      'practice_number' | 'group_practice_number' | 'vat_number' | 'phone' | 'email'
    > & { address: string | null; bank_details: string | null }
  > = {};
  if (request.practiceNumber !== undefined) columns.practice_number = request.practiceNumber;
  if (request.groupPracticeNumber !== undefined) columns.group_practice_number = request.groupPracticeNumber;
  if (request.vatNumber !== undefined) columns.vat_number = request.vatNumber;
  if (request.phone !== undefined) columns.phone = request.phone;
  if (request.email !== undefined) columns.email = request.email;
  if (request.address !== undefined) {
    columns.address = request.address === null ? null : JSON.stringify(request.address);
  }
  if (request.bankDetails !== undefined) {
    columns.bank_details = request.bankDetails === null ? null : JSON.stringify(request.bankDetails);
  }
  return columns;
}

/** Changes a practice's name and account details; the fields not given stay as they are. */
export async function patchPractice(
  trx: Trx,
  practiceId: string,
  request: Static<typeof PracticePatch>,
  now: Date,
) {
  const row = await updateAccountDetails(
    trx,
    practiceId,
    { ...(request.name !== undefined ? { name: request.name } : {}), ...accountColumns(request) },
    now,
  );
  if (!row) throw notFound('Practice');
  return row;
}

export async function createPractice(trx: Trx, request: Static<typeof PracticeRequest>, now: Date) {
  const timezone = request.timezone ?? DEFAULT_TIME_ZONE;
  if (!isTimeZone(timezone)) {
    throw fieldErrors([
      {
        field: 'timezone',
        code: 'invalid',
        message: 'timezone must be an IANA time zone this service knows',
      },
    ]);
  }
  return insertPractice(trx, {
    id: newId('practice'),
    name: request.name,
    currency: request.currency ?? 'ZAR',
    timezone,
    ...accountColumns(request),
    created_at: now,
    updated_at: now,
  });
}

export async function getPractice(trx: Trx, practiceId: string) {
  const row = await findPractice(trx, practiceId);
  if (!row) throw notFound('Practice');
  return row;
}

/** The practice's settings that billing works with: currency, time zone, VAT, terms, numbering. */
export interface PracticeBilling {
  id: string;
  name: string;
  currency: string;
  timezone: string;
  vatRateBasisPoints: number;
  paymentTermsDays: number;
  invoiceNumberPrefix: string;
  /** Account details the patient's account needs and the practice has not recorded (practiceNumber, address, bankDetails). */
  accountGaps: string[];
  /** Years a dormant patient's records are kept before de-identification (src/patients/retention.ts). */
  retentionYears: number;
}

export async function practiceBilling(trx: Trx, practiceId: string): Promise<PracticeBilling> {
  const row = await getPractice(trx, practiceId);
  return {
    id: row.id,
    name: row.name,
    currency: row.currency,
    timezone: row.timezone,
    vatRateBasisPoints: row.vat_rate_basis_points,
    paymentTermsDays: row.payment_terms_days,
    invoiceNumberPrefix: row.invoice_number_prefix,
    accountGaps: [
      ...(row.practice_number ? [] : ['practiceNumber']),
      ...(row.address ? [] : ['address']),
      ...(row.bank_details ? [] : ['bankDetails']),
    ],
    retentionYears: row.retention_years,
  };
}

export async function listPractices(trx: Trx) {
  return listPracticeRows(trx);
}

export async function setIntegrations(trx: Trx, practiceId: string, enabled: boolean, now: Date) {
  const row = await updateIntegrations(trx, practiceId, enabled, now);
  if (!row) throw notFound('Practice');
  return row;
}

/** The code systems a practitioner's codes are in when a request names none: theirs, else the published ones. */
export function defaultSystemsOf(
  practitioner: Pick<PractitionersTable, 'default_condition_system' | 'default_procedure_system'> | undefined,
): { condition: string; procedure: string } {
  return {
    condition: practitioner?.default_condition_system ?? ICD10_URL,
    procedure: practitioner?.default_procedure_system ?? TARIFF_URL,
  };
}

export function practitionerOf(row: Selectable<PractitionersTable>): Static<typeof Practitioner> {
  return {
    object: 'practitioner',
    id: row.id,
    practiceId: row.practice_id,
    name: row.name,
    registrationNumber: row.registration_number,
    defaultSystems: defaultSystemsOf(row),
    active: row.active,
    createdAt: row.created_at.toISOString(),
  };
}

export async function createPractitioner(
  trx: Trx,
  practiceId: string,
  request: Static<typeof PractitionerRequest>,
  now: Date,
) {
  await getPractice(trx, practiceId);
  return insertPractitioner(trx, {
    practice_id: practiceId,
    id: newId('practitioner'),
    name: request.name,
    registration_number: request.registrationNumber ?? null,
    default_condition_system: request.defaultSystems?.condition ?? null,
    default_procedure_system: request.defaultSystems?.procedure ?? null,
    created_at: now,
    updated_at: now,
  });
}

export async function listPractitioners(trx: Trx, practiceId: string) {
  await getPractice(trx, practiceId);
  return allPractitionerRows(trx, practiceId);
}

// Owns the rules for insurance plans and coverages. A coverage is active on a day while its plan is
// offered and the day lies within its start and end dates (either may be open); membership is judged
// on the date of service, and a coverage's `active` field on today in the practice's time zone.
// A patient's first active coverage is the active one registered earliest (then by id): that is the
// default coverage a bill or claim uses.

import { readPatient, readPatientTakingRecords } from '../patients/service.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { type FieldError, fieldErrors, notFound } from '../platform/http/errors.ts';
import type { Partly } from '../platform/http/field-rules.ts';
import { newId } from '../platform/ids.ts';
import type { Coverage, CoverageRequest, InsurancePlan } from './schemas.ts';
import {
  type CoverageRow,
  findCoverage,
  findPlan,
  insertCoverage,
  listCoverages,
  type PlanRow,
} from './store.ts';

export { type CoverageRow, coverageSchemeNames, findCoverage, listPlans } from './store.ts';

export function planOf(row: PlanRow): InsurancePlan {
  return {
    object: 'insurance_plan',
    id: row.id,
    name: row.name,
    aliases: row.aliases,
    active: row.active,
    optionCode: row.option_code,
    insurerId: row.scheme_id,
    insurerName: row.scheme_name,
  };
}

export function isCoverageActive(row: CoverageRow, today: string): boolean {
  return (
    row.plan_active &&
    (row.start_date === null || row.start_date <= today) &&
    (row.end_date === null || row.end_date >= today)
  );
}

export function coverageOf(row: CoverageRow, today: string): Coverage {
  return {
    object: 'coverage',
    id: row.id,
    patientId: row.patient_id,
    planId: row.plan_id,
    memberNumber: row.member_number,
    dependentCode: row.dependent_code,
    memberSurname: row.member_surname,
    memberInitials: row.member_initials,
    active: isCoverageActive(row, today),
    startDate: row.start_date,
    endDate: row.end_date,
  };
}

/** The wrong fields of a coverage request by the service's rules (those its schema let through). */
export async function coverageRuleErrors(trx: Trx, request: Partly<CoverageRequest>): Promise<FieldError[]> {
  const errors: FieldError[] = [];
  if (request.planId !== undefined && !(await findPlan(trx, request.planId)))
    errors.push({ field: 'planId', code: 'invalid', message: 'planId is not a known insurance plan' });
  if (request.startDate && request.endDate && request.endDate < request.startDate) {
    errors.push({ field: 'endDate', code: 'invalid', message: 'endDate cannot be before startDate' });
  }
  return errors;
}

export async function addCoverage(
  trx: Trx,
  practiceId: string,
  patientId: string,
  request: CoverageRequest,
  now: Date,
) {
  await readPatientTakingRecords(trx, practiceId, patientId);
  const errors = await coverageRuleErrors(trx, request);
  if (errors.length > 0) throw fieldErrors(errors);
  const id = newId('coverage');
  await insertCoverage(trx, {
    practice_id: practiceId,
    id,
    patient_id: patientId,
    plan_id: request.planId,
    member_number: request.memberNumber,
    dependent_code: request.dependentCode ?? null,
    member_surname: request.memberSurname ?? null,
    member_initials: request.memberInitials ?? null,
    start_date: request.startDate ?? null,
    end_date: request.endDate ?? null,
    created_at: now,
    updated_at: now,
  });
  const row = await findCoverage(trx, practiceId, id);
  if (!row) throw new Error('coverage vanished after insert');
  return row;
}

export async function patientCoverages(
  trx: Trx,
  practiceId: string,
  patientId: string,
): Promise<CoverageRow[]> {
  await readPatient(trx, practiceId, patientId);
  return listCoverages(trx, practiceId, patientId);
}

/**
 * Whether the membership covers every date of service given (the dates of a claim's lines): judged on
 * the days the services were given, not on the day they are billed or claimed.
 */
export function isCoverageActiveOn(row: CoverageRow, servicedOn: readonly string[]): boolean {
  return servicedOn.every((date) => isCoverageActive(row, date));
}

/**
 * The days a coverage must be active on to cover lines: each line's first day and, for a line of
 * several days, its last (a coverage is active on every day between its start and end, so on the
 * days between as well).
 */
export function serviceDaysOf(
  lines: readonly { service_date: string; service_date_end: string | null }[],
): string[] {
  return lines.flatMap((line) =>
    line.service_date_end === null ? [line.service_date] : [line.service_date, line.service_date_end],
  );
}

/**
 * The patient's first coverage active on every date of service given (a visit's date, an invoice's
 * lines' dates), or undefined when none is.
 */
export async function firstActiveCoverage(
  trx: Trx,
  practiceId: string,
  patientId: string,
  servicedOn: readonly string[],
): Promise<CoverageRow | undefined> {
  return (await listCoverages(trx, practiceId, patientId)).find((c) => isCoverageActiveOn(c, servicedOn));
}

export async function readCoverage(trx: Trx, practiceId: string, coverageId: string): Promise<CoverageRow> {
  const row = await findCoverage(trx, practiceId, coverageId);
  if (!row) throw notFound('Coverage');
  return row;
}

/**
 * The coverage a bill prices under or a claim is sent under, found: the one `asked` for, else the one
 * `kept` from before (a claim's last coverage) while it is still the patient's, else the patient's first
 * active on the dates of service. An `asked` coverage that is not the patient's is not replaced by
 * another: whoever asked is told (`not_patients`).
 */
export type CoverageFound =
  | { kind: 'found'; coverage: CoverageRow }
  | { kind: 'not_patients' }
  | { kind: 'none' };

export async function coverageFor(
  trx: Trx,
  practiceId: string,
  patientId: string,
  wanted: { asked?: string | null; kept?: string | null },
  servicedOn: readonly string[],
): Promise<CoverageFound> {
  const named = wanted.asked ?? wanted.kept;
  if (named) {
    const coverage = await coverageOfPatient(trx, practiceId, patientId, named);
    if (coverage) return { kind: 'found', coverage };
    if (wanted.asked) return { kind: 'not_patients' };
  }
  const active = await firstActiveCoverage(trx, practiceId, patientId, servicedOn);
  return active ? { kind: 'found', coverage: active } : { kind: 'none' };
}

/**
 * The coverage when it is one of the patient's; undefined when the id names none of the practice's,
 * or another patient's. Another patient's coverage id is as unknown as a made-up one.
 */
async function coverageOfPatient(
  trx: Trx,
  practiceId: string,
  patientId: string,
  coverageId: string,
): Promise<CoverageRow | undefined> {
  const row = await findCoverage(trx, practiceId, coverageId);
  return row?.patient_id === patientId ? row : undefined;
}

export const NOT_PATIENTS_COVERAGE = "coverageId is not one of this patient's coverages";

/** The refusal of a coverageId that is not one of the patient's coverages. */
export function notPatientsCoverage() {
  return fieldErrors([{ field: 'coverageId', code: 'invalid', message: NOT_PATIENTS_COVERAGE }]);
}

/** One coverage of one patient: another patient's coverage id is as unknown as a made-up one. */
export async function patientCoverage(
  trx: Trx,
  practiceId: string,
  patientId: string,
  coverageId: string,
): Promise<CoverageRow> {
  const row = await coverageOfPatient(trx, practiceId, patientId, coverageId);
  if (!row) throw notFound('Coverage');
  return row;
}

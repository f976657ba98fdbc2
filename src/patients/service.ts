// Owns the rules for patients: registration with a unique practice number (externalId), reading,
// finding by that number, and correcting demographics with a JSON merge patch.

import type { ReadRecorded } from '../api/api-route.ts';
import { insertUnlessTaken, isUniqueViolation, type Trx } from '../platform/db/transaction.ts';
import { AppError, type FieldError, fieldErrors, notFound } from '../platform/http/errors.ts';
import type { Partly, WrongField } from '../platform/http/field-rules.ts';
import { compileBodyValidator, toFieldErrors } from '../platform/http/validation.ts';
import { newId } from '../platform/ids.ts';
import { applyMergePatch } from './merge-patch.ts';
import { type Patient, type PatientPatch, PatientRequest } from './schemas.ts';
import {
  EXTERNAL_ID_ORDER,
  findPatient,
  findPatientsByExternalId,
  insertPatient,
  type PatientRow,
  type PatientValues,
  patientByIdRead,
  patientExists,
  patientsByExternalIdRead,
  updatePatient,
} from './store.ts';

export { patientExists };

const patientRequestValidator = compileBodyValidator(PatientRequest);

export function patientOf(row: PatientRow): Patient {
  return {
    object: 'patient',
    id: row.id,
    active: row.active,
    prefix: row.prefix,
    givenNames: row.given_names,
    lastName: row.last_name,
    gender: row.gender,
    birthDate: row.birth_date,
    identifiers: row.identifiers,
    externalId:
      row.external_system !== null && row.external_value !== null
        ? { system: row.external_system, value: row.external_value }
        : null,
    contactPoints: row.contact_points,
    addresses: row.addresses,
    organizationId: row.practice_id,
    updatedAt: row.updated_at.toISOString(),
    ...(row.erased_at
      ? { erased: true as const, ...(row.birth_year ? { birthYear: row.birth_year } : {}) }
      : {}),
  };
}

function valuesOf(request: PatientRequest): PatientValues {
  return {
    prefix: request.prefix ?? null,
    givenNames: request.givenNames,
    lastName: request.lastName,
    gender: request.gender ?? null,
    birthDate: request.birthDate,
    identifiers: request.identifiers ?? [],
    externalId: request.externalId ?? null,
    contactPoints: (request.contactPoints ?? []).map((c) => ({
      system: c.system,
      value: c.value,
      use: c.use ?? null,
      rank: c.rank ?? null,
    })),
    addresses: (request.addresses ?? []).map((a) => ({
      type: a.type ?? null,
      use: a.use ?? null,
      lines: a.lines ?? [],
      city: a.city ?? null,
      district: a.district ?? null,
      state: a.state ?? null,
      postalCode: a.postalCode ?? null,
      country: a.country ?? null,
    })),
  };
}

/** Rules beyond the schema: a birth date cannot lie in the future (in the practice's time zone). */
export function patientRuleErrors(request: Partly<PatientRequest>, today: string): FieldError[] {
  const errors: FieldError[] = [];
  if (request.birthDate !== undefined && request.birthDate > today) {
    errors.push({ field: 'birthDate', code: 'invalid', message: 'birthDate cannot be in the future' });
  }
  return errors;
}

function checkRules(request: PatientRequest, today: string): void {
  const errors = patientRuleErrors(request, today);
  if (errors.length > 0) throw fieldErrors(errors);
}

async function refuseDuplicate(
  trx: Trx,
  practiceId: string,
  externalId: { system: string; value: string },
  selfId?: string,
) {
  const existing = (
    await findPatientsByExternalId(trx, practiceId, externalId.system, externalId.value)
  ).find((p) => p.id !== selfId);
  if (existing) {
    throw new AppError(
      'duplicate',
      `A patient with externalId ${externalId.system} ${externalId.value} already exists: ${existing.id}.`,
    );
  }
}

export async function registerPatient(
  trx: Trx,
  practiceId: string,
  request: PatientRequest,
  now: Date,
  today: string,
): Promise<PatientRow> {
  checkRules(request, today);
  // ON CONFLICT waits for a concurrent registration of the same number to commit, then yields
  // nothing, so the winner can be named.
  return insertUnlessTaken(
    () => insertPatient(trx, practiceId, newId('patient'), valuesOf(request), now),
    () => refuseDuplicate(trx, practiceId, request.externalId!),
  );
}

export async function readPatient(trx: Trx, practiceId: string, id: string): Promise<PatientRow> {
  const row = await findPatient(trx, practiceId, id);
  if (!row) throw notFound('Patient');
  return row;
}

/** The patient, to add a record to (a coverage): an erased patient takes none (422 business_rule). */
export async function readPatientTakingRecords(
  trx: Trx,
  practiceId: string,
  id: string,
): Promise<PatientRow> {
  const row = await readPatient(trx, practiceId, id);
  refuseErased(row);
  return row;
}

/** The patient, read by a statement that writes its request's audit row (HandlerContext.readRecorded). */
export async function readPatientRecorded(
  readRecorded: ReadRecorded,
  practiceId: string,
  id: string,
): Promise<PatientRow> {
  const [row] = await readRecorded(patientByIdRead(practiceId, id), {
    none: 'not_found',
    patientColumn: 'id',
  });
  if (!row) throw notFound('Patient');
  return row;
}

/** The patients with an externalId (registration order), read as readPatientRecorded reads one. */
export function findByExternalIdRecorded(
  readRecorded: ReadRecorded,
  practiceId: string,
  system: string,
  value: string,
): Promise<PatientRow[]> {
  return readRecorded(patientsByExternalIdRead(practiceId, system, value), {
    none: 'empty',
    patientColumn: 'id',
    orderBy: EXTERNAL_ID_ORDER,
  });
}

/** An erased patient stays erased: nothing is added to their record again (register a new patient). */
function refuseErased(row: PatientRow): void {
  if (row.erased_at) {
    throw new AppError(
      'business_rule',
      'The patient is erased: their record cannot be filled in again; register them as a new patient.',
    );
  }
}

function requestOf(row: PatientRow): PatientRequest {
  const p = patientOf(row);
  return {
    prefix: p.prefix,
    givenNames: p.givenNames,
    lastName: p.lastName ?? '',
    gender: p.gender as PatientRequest['gender'],
    birthDate: p.birthDate ?? '',
    identifiers: p.identifiers,
    externalId: p.externalId,
    contactPoints: p.contactPoints as PatientRequest['contactPoints'],
    addresses: p.addresses as PatientRequest['addresses'],
  };
}

/**
 * The patch's wrong fields beyond its own schema: the patched record's, judged against every
 * PatientRequest rule. Fields the patch's schema refused are left out, so the stored values stand in
 * for them; a wrong field of the result that the patch did not send reports nothing new.
 */
export async function patchRuleErrors(
  trx: Trx,
  practiceId: string,
  id: string,
  patch: Partly<PatientPatch>,
  today: string,
  wrong: WrongField,
): Promise<FieldError[]> {
  const row = await findPatient(trx, practiceId, id);
  if (!row) throw notFound('Patient');
  refuseErased(row);
  const merged = applyMergePatch(requestOf(row), patch) as PatientRequest;
  const validatePatientRequest = patientRequestValidator();
  const errors = validatePatientRequest(merged)
    ? []
    : toFieldErrors(validatePatientRequest.errors ?? [], 'body');
  return [...errors, ...patientRuleErrors(merged, today)].filter((e) => !wrong(e.field));
}

export async function patchPatient(
  trx: Trx,
  practiceId: string,
  id: string,
  patch: PatientPatch,
  now: Date,
  today: string,
): Promise<PatientRow> {
  const row = await findPatient(trx, practiceId, id, true);
  if (!row) throw notFound('Patient');
  refuseErased(row);
  const merged = applyMergePatch(requestOf(row), patch) as PatientRequest;
  const validatePatientRequest = patientRequestValidator();
  if (!validatePatientRequest(merged)) {
    throw fieldErrors(toFieldErrors(validatePatientRequest.errors ?? [], 'body'));
  }
  checkRules(merged, today);
  if (merged.externalId) await refuseDuplicate(trx, practiceId, merged.externalId, id);
  try {
    return await updatePatient(trx, practiceId, id, valuesOf(merged), now);
  } catch (error) {
    // A registration of the same number committed between the check and the update.
    if (merged.externalId && isUniqueViolation(error, 'patients_external_id')) {
      throw new AppError(
        'duplicate',
        `A patient with externalId ${merged.externalId.system} ${merged.externalId.value} already exists.`,
      );
    }
    throw error;
  }
}

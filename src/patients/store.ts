// Owns the patients table: reads and writes for one practice. Every query filters by practice_id.
import type { Selectable } from 'kysely';
import type { PatientsTable } from '../platform/db/tables.ts';
import type { Trx } from '../platform/db/transaction.ts';

export type PatientRow = Selectable<PatientsTable>;

export interface PatientValues {
  prefix: string | null;
  givenNames: string[];
  lastName: string;
  gender: string | null;
  birthDate: string;
  identifiers: PatientRow['identifiers'];
  externalId: { system: string; value: string } | null;
  contactPoints: PatientRow['contact_points'];
  addresses: PatientRow['addresses'];
}

function columnsOf(values: PatientValues) {
  return {
    prefix: values.prefix,
    given_names: JSON.stringify(values.givenNames),
    last_name: values.lastName,
    gender: values.gender,
    birth_date: values.birthDate,
    identifiers: JSON.stringify(values.identifiers),
    external_system: values.externalId?.system ?? null,
    external_value: values.externalId?.value ?? null,
    contact_points: JSON.stringify(values.contactPoints),
    addresses: JSON.stringify(values.addresses),
  };
}

export async function insertPatient(
  trx: Trx,
  practiceId: string,
  id: string,
  values: PatientValues,
  now: Date,
) {
  return trx
    .insertInto('patients')
    .values({ practice_id: practiceId, id, ...columnsOf(values), created_at: now, updated_at: now })
    .onConflict((oc) =>
      oc
        .columns(['practice_id', 'external_system', 'external_value'])
        .where('external_system', 'is not', null)
        .doNothing(),
    )
    .returningAll()
    .executeTakeFirst();
}

export async function updatePatient(
  trx: Trx,
  practiceId: string,
  id: string,
  values: PatientValues,
  now: Date,
) {
  return trx
    .updateTable('patients')
    .set({ ...columnsOf(values), updated_at: now })
    .where('practice_id', '=', practiceId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function findPatient(trx: Trx, practiceId: string, id: string, forUpdate = false) {
  let query = trx
    .selectFrom('patients')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .where('id', '=', id);
  if (forUpdate) query = query.forUpdate();
  return query.executeTakeFirst();
}

export async function findPatientsByExternalId(trx: Trx, practiceId: string, system: string, value: string) {
  return trx
    .selectFrom('patients')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .where('external_system', '=', system)
    .where('external_value', '=', value)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** Whether the id names a patient of the practice. */
export async function patientExists(trx: Trx, practiceId: string, id: string): Promise<boolean> {
  const found = await trx
    .selectFrom('patients')
    .select('id')
    .where('practice_id', '=', practiceId)
    .where('id', '=', id)
    .executeTakeFirst();
  return found !== undefined;
}

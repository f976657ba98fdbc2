// Owns the patients table: reads and writes for one practice. Every query filters by practice_id.
import type { CompiledQuery, Selectable } from 'kysely';
import { compiledOnce } from '../platform/db/compiled-once.ts';
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

type PatientColumns = ReturnType<typeof columnsOf>;

const insertPatientStatement = compiledOnce<
  PatientColumns & { practiceId: string; id: string; now: Date },
  PatientRow
>((db, value) =>
  db
    .insertInto('patients')
    .values({
      practice_id: value('practiceId'),
      id: value('id'),
      prefix: value('prefix'),
      given_names: value('given_names'),
      last_name: value('last_name'),
      gender: value('gender'),
      birth_date: value('birth_date'),
      identifiers: value('identifiers'),
      external_system: value('external_system'),
      external_value: value('external_value'),
      contact_points: value('contact_points'),
      addresses: value('addresses'),
      created_at: value('now'),
      updated_at: value('now'),
    })
    .onConflict((oc) =>
      oc
        .columns(['practice_id', 'external_system', 'external_value'])
        .where('external_system', 'is not', null)
        .doNothing(),
    )
    .returningAll(),
);

/** The new patient's row, or undefined when the practice has a patient with its externalId already. */
export async function insertPatient(
  trx: Trx,
  practiceId: string,
  id: string,
  values: PatientValues,
  now: Date,
): Promise<PatientRow | undefined> {
  const rows = await insertPatientStatement(trx, { practiceId, id, now, ...columnsOf(values) });
  return rows[0];
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

const findPatientStatement = (forUpdate: boolean) =>
  compiledOnce<{ practiceId: string; id: string }, PatientRow>((db, value) => {
    const query = db
      .selectFrom('patients')
      .selectAll()
      .where('practice_id', '=', value('practiceId'))
      .where('id', '=', value('id'));
    return forUpdate ? query.forUpdate() : query;
  });
const findPatientRead = findPatientStatement(false);
const findPatientLocked = findPatientStatement(true);

export async function findPatient(
  trx: Trx,
  practiceId: string,
  id: string,
  forUpdate = false,
): Promise<PatientRow | undefined> {
  const rows = await (forUpdate ? findPatientLocked : findPatientRead)(trx, { practiceId, id });
  return rows[0];
}

/** The patient by id, as a statement to send its own way (a read that records itself). */
export function patientByIdRead(practiceId: string, id: string): CompiledQuery<PatientRow> {
  return findPatientRead.with({ practiceId, id });
}

const findByExternalIdStatement = compiledOnce<
  { practiceId: string; system: string; value: string },
  PatientRow
>((db, value) =>
  db
    .selectFrom('patients')
    .selectAll()
    .where('practice_id', '=', value('practiceId'))
    .where('external_system', '=', value('system'))
    .where('external_value', '=', value('value'))
    .orderBy('created_at')
    .orderBy('id'),
);

/** The order patients with one externalId are answered in: registration order. */
export const EXTERNAL_ID_ORDER = 'created_at, id';

export async function findPatientsByExternalId(trx: Trx, practiceId: string, system: string, value: string) {
  return findByExternalIdStatement(trx, { practiceId, system, value });
}

/** The patients with an externalId, as a statement to send its own way; in EXTERNAL_ID_ORDER. */
export function patientsByExternalIdRead(
  practiceId: string,
  system: string,
  value: string,
): CompiledQuery<PatientRow> {
  return findByExternalIdStatement.with({ practiceId, system, value });
}

/** Whether the id names a patient of the practice who can take new visits: one not erased. */
export async function patientExists(trx: Trx, practiceId: string, id: string): Promise<boolean> {
  const found = await trx
    .selectFrom('patients')
    .select('id')
    .where('practice_id', '=', practiceId)
    .where('id', '=', id)
    .where('erased_at', 'is', null)
    .executeTakeFirst();
  return found !== undefined;
}

/**
 * De-identifies the patient (POPIA s14(4)): names, identifiers, the birth date (its year kept),
 * contact points, addresses and the practice's own number are removed, so the number can be given
 * to a new patient; when, why and on what ground are kept. Answers the row, or undefined if none.
 */
export async function erasePatientRow(
  trx: Trx,
  practiceId: string,
  id: string,
  erasure: { reason: string; lawfulGround: string | null },
  now: Date,
): Promise<PatientRow | undefined> {
  return trx
    .updateTable('patients')
    .set((eb) => ({
      active: false,
      prefix: null,
      given_names: JSON.stringify([]),
      last_name: null,
      birth_year: eb.fn<number>('date_part', [eb.val('year'), eb.ref('birth_date')]),
      birth_date: null,
      identifiers: JSON.stringify([]),
      external_system: null,
      external_value: null,
      contact_points: JSON.stringify([]),
      addresses: JSON.stringify([]),
      erased_at: now,
      erasure_reason: erasure.reason,
      erasure_lawful_ground: erasure.lawfulGround,
      updated_at: now,
    }))
    .where('practice_id', '=', practiceId)
    .where('id', '=', id)
    .where('erased_at', 'is', null)
    .returningAll()
    .executeTakeFirst();
}

/** Marks whether the patient's records are kept for their lifetime; answers the row, if any. */
export async function setRetainedForLife(
  trx: Trx,
  practiceId: string,
  id: string,
  lifelong: boolean,
  now: Date,
): Promise<PatientRow | undefined> {
  return trx
    .updateTable('patients')
    .set({ retained_for_life: lifelong, updated_at: now })
    .where('practice_id', '=', practiceId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

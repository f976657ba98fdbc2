// Owns the encounters tables: an encounter with its ordered diagnoses and procedures.
import type { Selectable } from 'kysely';
import { pastPosition } from '../paging/keyset.ts';
import { childRows } from '../platform/db/child-rows.ts';
import type {
  EncounterDiagnosesTable,
  EncounterProceduresTable,
  EncountersTable,
} from '../platform/db/tables.ts';
import type { Trx } from '../platform/db/transaction.ts';

export interface EncounterRecord {
  encounter: Selectable<EncountersTable>;
  diagnoses: Selectable<EncounterDiagnosesTable>[];
  procedures: Selectable<EncounterProceduresTable>[];
}

export async function insertEncounter(trx: Trx, record: EncounterRecord): Promise<void> {
  await trx.insertInto('encounters').values(record.encounter).execute();
  await trx.insertInto('encounter_diagnoses').values(record.diagnoses).execute();
  await trx.insertInto('encounter_procedures').values(record.procedures).execute();
}

async function withChildren(
  trx: Trx,
  practiceId: string,
  encounters: Selectable<EncountersTable>[],
): Promise<EncounterRecord[]> {
  if (encounters.length === 0) return [];
  const ids = encounters.map((e) => e.id);
  const [diagnoses, procedures] = await Promise.all([
    trx
      .selectFrom('encounter_diagnoses')
      .selectAll()
      .where('practice_id', '=', practiceId)
      .where('encounter_id', 'in', ids)
      .orderBy('position')
      .execute(),
    trx
      .selectFrom('encounter_procedures')
      .selectAll()
      .where('practice_id', '=', practiceId)
      .where('encounter_id', 'in', ids)
      .orderBy('position')
      .execute(),
  ]);
  return encounters.map((encounter) => ({
    encounter,
    diagnoses: diagnoses.filter((d) => d.encounter_id === encounter.id),
    procedures: procedures.filter((p) => p.encounter_id === encounter.id),
  }));
}

/**
 * One encounter with its diagnoses and procedures. Unlocked, that is one statement. With forUpdate
 * (bills of one visit queue here) the row is locked and read first and its children read by a second
 * statement, which sees whatever the transaction it waited for committed.
 */
export async function findEncounter(
  trx: Trx,
  practiceId: string,
  id: string,
  forUpdate = false,
): Promise<EncounterRecord | undefined> {
  if (forUpdate) {
    const encounter = await trx
      .selectFrom('encounters')
      .selectAll()
      .where('practice_id', '=', practiceId)
      .where('id', '=', id)
      .forUpdate()
      .executeTakeFirst();
    if (!encounter) return undefined;
    const children = await trx
      .selectNoFrom([
        childRows('encounter_diagnoses', 'encounter_id', practiceId, id).as('diagnoses'),
        childRows('encounter_procedures', 'encounter_id', practiceId, id).as('procedures'),
      ])
      .executeTakeFirstOrThrow();
    return { encounter, diagnoses: children.diagnoses, procedures: children.procedures };
  }
  const row = await trx
    .selectFrom('encounters')
    .selectAll()
    .select([
      childRows('encounter_diagnoses', 'encounter_id', practiceId, id).as('record_diagnoses'),
      childRows('encounter_procedures', 'encounter_id', practiceId, id).as('record_procedures'),
    ])
    .where('practice_id', '=', practiceId)
    .where('id', '=', id)
    .executeTakeFirst();
  if (!row) return undefined;
  const { record_diagnoses: diagnoses, record_procedures: procedures, ...encounter } = row;
  return { encounter, diagnoses, procedures };
}

/** Newest start first; `before` is the (start, id) of the previous page's last encounter. */
export async function listEncounters(
  trx: Trx,
  practiceId: string,
  patientId: string | undefined,
  before: { start: string; id: string } | undefined,
  limit: number,
): Promise<EncounterRecord[]> {
  let query = trx
    .selectFrom('encounters')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .orderBy('start_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1);
  if (patientId) query = query.where('patient_id', '=', patientId);
  if (before) {
    query = query.where(
      pastPosition('desc', [
        { column: 'start_at', value: new Date(before.start), type: 'timestamptz' },
        { column: 'id', value: before.id, type: 'text' },
      ]),
    );
  }
  return withChildren(trx, practiceId, await query.execute());
}

/** Removes the diagnoses and procedures of every visit of the patient (a de-identification). */
export async function removePatientClinicalCodes(
  trx: Trx,
  practiceId: string,
  patientId: string,
): Promise<void> {
  const visits = trx
    .selectFrom('encounters')
    .select('id')
    .where('practice_id', '=', practiceId)
    .where('patient_id', '=', patientId);
  await trx
    .deleteFrom('encounter_procedures')
    .where('practice_id', '=', practiceId)
    .where('encounter_id', 'in', visits)
    .execute();
  await trx
    .deleteFrom('encounter_diagnoses')
    .where('practice_id', '=', practiceId)
    .where('encounter_id', 'in', visits)
    .execute();
}

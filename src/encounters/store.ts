// Owns the encounters tables: an encounter with its ordered diagnoses and procedures.
import type { Selectable } from 'kysely';
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

export async function findEncounter(
  trx: Trx,
  practiceId: string,
  id: string,
): Promise<EncounterRecord | undefined> {
  const encounter = await trx
    .selectFrom('encounters')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .where('id', '=', id)
    .executeTakeFirst();
  if (!encounter) return undefined;
  return (await withChildren(trx, practiceId, [encounter]))[0];
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
    query = query.where((eb) =>
      eb.or([
        eb('start_at', '<', new Date(before.start)),
        eb.and([eb('start_at', '=', new Date(before.start)), eb('id', '<', before.id)]),
      ]),
    );
  }
  return withChildren(trx, practiceId, await query.execute());
}

/** Locks the visit's row for the rest of the transaction (bills of one visit queue here); false when none. */
export async function lockEncounter(trx: Trx, practiceId: string, encounterId: string): Promise<boolean> {
  const locked = await trx
    .selectFrom('encounters')
    .select('id')
    .where('practice_id', '=', practiceId)
    .where('id', '=', encounterId)
    .forUpdate()
    .executeTakeFirst();
  return locked !== undefined;
}

// Owns the rules for recording a visit: every wrong field is reported at once; times carry an offset
// and are stored in UTC; a visit cannot end in the future, before it starts, or start more than 120
// days ago; codes must exist, active, in their system (by default the practitioner's for that kind of
// code), of the kind the field takes (condition codes for diagnoses, procedure codes for procedures),
// each diagnosis once, and the service's own wording replaces any display sent; a procedure's
// diagnosisCodes must name diagnoses of the same visit. The patient and practitioner must be the practice's.
import { type CodeUsage, judgeCodings, refuseRepeatedDiagnoses } from '../code-systems/usage.ts';
import { patientExists } from '../patients/service.ts';
import { DAY_MS } from '../platform/clock.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { parseOffsetDateTime } from '../platform/http/date-time.ts';
import { type FieldError, fieldErrors, notFound } from '../platform/http/errors.ts';
import { noWrongFields, type Partly, type WrongField } from '../platform/http/field-rules.ts';
import { newId } from '../platform/ids.ts';
import { defaultSystemsOf, findPractitionerDefaults } from '../practices/service.ts';
import type { Encounter, EncounterRequest } from './schemas.ts';
import { type EncounterRecord, findEncounter, insertEncounter } from './store.ts';

/** The practice's visits, page by page: a read with no rule of its own. */
export { listEncounters } from './store.ts';

export const MAX_DAYS_AGO = 120;

/**
 * The earliest service date a record made on `date` (YYYY-MM-DD) can bill: a visit may start at most
 * MAX_DAYS_AGO days before it is recorded, and an invoice line at most as long before its invoice's date.
 */
export function earliestServiceDate(date: string): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) - MAX_DAYS_AGO * DAY_MS).toISOString().slice(0, 10);
}

export function encounterOf(record: EncounterRecord): Encounter {
  const e = record.encounter;
  return {
    object: 'encounter',
    id: e.id,
    status: e.status as Encounter['status'],
    class: e.class as Encounter['class'],
    patientId: e.patient_id,
    practitionerId: e.practitioner_id,
    start: e.start_at.toISOString(),
    end: e.end_at?.toISOString() ?? null,
    diagnoses: record.diagnoses.map((d) => ({
      id: d.id,
      system: d.system,
      code: d.code,
      display: d.display,
    })),
    procedures: record.procedures.map((p) => ({
      id: p.id,
      status: p.status as Encounter['procedures'][number]['status'],
      system: p.system,
      code: p.code,
      display: p.display,
      diagnosisCodes: p.diagnosis_codes,
      note: p.note,
    })),
    updatedAt: e.updated_at.toISOString(),
  };
}

/** What the service's rules make of a visit request: its wrong fields, its times and resolved codes. */
async function inspectEncounter(
  trx: Trx,
  practiceId: string,
  request: Partly<EncounterRequest>,
  now: Date,
  wrong: WrongField,
) {
  const errors: FieldError[] = [];
  // One entry per wrong field: a field breaking several rules gets them all in one message.
  const invalid = (field: string, message: string) => {
    const existing = errors.find((e) => e.field === field);
    if (existing) existing.message = `${existing.message}, and ${message}`;
    else errors.push({ field, code: 'invalid', message: `${field} ${message}` });
  };

  const [patient, practitioner] = await Promise.all([
    request.patientId === undefined ? undefined : patientExists(trx, practiceId, request.patientId),
    request.practitionerId === undefined
      ? undefined
      : findPractitionerDefaults(trx, practiceId, request.practitionerId),
  ]);
  if (request.patientId !== undefined && !patient) invalid('patientId', 'is not a patient of this practice');
  if (request.practitionerId !== undefined && !practitioner)
    invalid('practitionerId', 'is not a practitioner of this practice');

  const { start, end } = judgeTimes(request, now, invalid);

  // A coding is judged only when the schema let its system and code through (a wrong practitioner
  // id leaves the default systems).
  const { condition: conditionSystem, procedure: procedureSystem } = defaultSystemsOf(practitioner);
  const codingsOf = (
    items: Array<Partly<EncounterRequest['diagnoses'][number]> | undefined> | undefined,
    kind: string,
    usage: CodeUsage,
    defaultSystem: string,
  ) =>
    (items ?? []).flatMap((c, i) =>
      c?.code === undefined || wrong(`${kind}.${i}.system`)
        ? []
        : [{ field: `${kind}.${i}`, usage, system: c.system ?? defaultSystem, code: c.code }],
    );
  const diagnoses = codingsOf(request.diagnoses, 'diagnoses', 'condition', conditionSystem);
  const procedures = codingsOf(request.procedures, 'procedures', 'procedure', procedureSystem);
  refuseRepeatedDiagnoses(diagnoses, 'visit', invalid);
  const codings = [...diagnoses, ...procedures].map((c) => ({
    ...c,
    systemField: `${c.field}.system`,
    codeField: `${c.field}.code`,
  }));
  const resolved = await judgeCodings(trx, practiceId, codings, { active: true }, invalid);

  judgeNamedDiagnoses(request, wrong, invalid);
  return { errors, start, end, resolved, conditionSystem, procedureSystem };
}

/** The visit's start and end: real, in order, not in the future, not too long ago. */
function judgeTimes(
  request: Partly<EncounterRequest>,
  now: Date,
  invalid: (field: string, message: string) => void,
) {
  const start = request.start === undefined ? undefined : parseOffsetDateTime(request.start);
  const end = request.end === undefined ? undefined : parseOffsetDateTime(request.end);
  if (request.start !== undefined && !start) invalid('start', 'is not a real date and time');
  if (request.end !== undefined && !end) invalid('end', 'is not a real date and time');
  if (start && end && end.getTime() < start.getTime()) invalid('end', 'cannot be before start');
  if (end && end.getTime() > now.getTime()) invalid('end', 'cannot be in the future');
  if (start && start.getTime() > now.getTime()) invalid('start', 'cannot be in the future');
  if (start && start.getTime() < now.getTime() - MAX_DAYS_AGO * DAY_MS) {
    invalid('start', `cannot be more than ${MAX_DAYS_AGO} days ago`);
  }
  return { start, end };
}

/** Each diagnosis a procedure names is one of the visit's. */
function judgeNamedDiagnoses(
  request: Partly<EncounterRequest>,
  wrong: WrongField,
  invalid: (field: string, message: string) => void,
): void {
  // Which diagnoses a procedure names can be judged only when every diagnosis code came through.
  if (request.diagnoses?.every((d, i) => d !== undefined && !wrong(`diagnoses.${i}.code`))) {
    const diagnosisCodes = new Set(request.diagnoses.map((d) => d?.code));
    (request.procedures ?? []).forEach((p, i) => {
      (p?.diagnosisCodes ?? []).forEach((code, j) => {
        if (code !== undefined && !diagnosisCodes.has(code))
          invalid(`procedures.${i}.diagnosisCodes.${j}`, "is not one of this visit's diagnoses");
      });
    });
  }
}

/** The wrong fields of a visit request by the service's rules (those its schema let through). */
export async function encounterRuleErrors(
  trx: Trx,
  practiceId: string,
  request: Partly<EncounterRequest>,
  now: Date,
  wrong: WrongField,
): Promise<FieldError[]> {
  return (await inspectEncounter(trx, practiceId, request, now, wrong)).errors;
}

export async function recordEncounter(
  trx: Trx,
  practiceId: string,
  request: EncounterRequest,
  now: Date,
): Promise<EncounterRecord> {
  const { errors, start, end, resolved, conditionSystem, procedureSystem } = await inspectEncounter(
    trx,
    practiceId,
    request,
    now,
    noWrongFields,
  );
  if (errors.length > 0) throw fieldErrors(errors);
  const diagnoses = request.diagnoses.map((d) => ({ system: d.system ?? conditionSystem, code: d.code }));
  const procedures = request.procedures.map((p) => ({ system: p.system ?? procedureSystem, code: p.code }));

  const id = newId('encounter');
  const display = (c: { system: string; code: string }) => resolved.get(`${c.system}|${c.code}`)!.display;
  const record: EncounterRecord = {
    encounter: {
      practice_id: practiceId,
      id,
      status: request.status ?? 'completed',
      class: 'amb',
      patient_id: request.patientId,
      practitioner_id: request.practitionerId,
      start_at: start!,
      end_at: end!,
      created_at: now,
      updated_at: now,
    },
    diagnoses: diagnoses.map((d, position) => ({
      practice_id: practiceId,
      id: newId('diagnosis'),
      encounter_id: id,
      position,
      system: d.system,
      code: d.code,
      display: display(d),
    })),
    procedures: procedures.map((p, position) => ({
      practice_id: practiceId,
      id: newId('procedure'),
      encounter_id: id,
      position,
      status: 'completed',
      system: p.system,
      code: p.code,
      display: display(p),
      diagnosis_codes: request.procedures[position]!.diagnosisCodes ?? [],
      note: request.procedures[position]!.note ?? null,
    })),
  };
  await insertEncounter(trx, record);
  return record;
}

/** The encounter with its diagnoses and procedures; forUpdate locks its row until commit. */
export async function readEncounter(
  trx: Trx,
  practiceId: string,
  id: string,
  forUpdate = false,
): Promise<EncounterRecord> {
  const record = await findEncounter(trx, practiceId, id, forUpdate);
  if (!record) throw notFound('Encounter');
  return record;
}

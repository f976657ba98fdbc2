// Declares the encounter (visit) operations of the public API.
import { Type } from 'typebox';
import { defineApiRoute } from '../api/api-route.ts';
import { pageOf } from '../platform/http/cursor.ts';
import { AppError } from '../platform/http/errors.ts';
import { IdParam, PagingQuery } from '../platform/http/schema.ts';
import { Encounter, EncounterList, EncounterRequest } from './schemas.ts';
import {
  encounterOf,
  encounterRuleErrors,
  listEncounters,
  readEncounter,
  recordEncounter,
} from './service.ts';

export const encounterRoutes = [
  defineApiRoute({
    method: 'POST',
    url: '/encounters',
    operationId: 'createEncounter',
    summary: 'Record a visit',
    description:
      "Records a completed outpatient visit (`class` amb) with its diagnoses (first is primary) and procedures. A visit cannot end in the future or start more than 120 days ago. Codes must exist and be active in their system; `display` is replaced by the system's own wording. Every wrong field is reported at once.",
    tag: 'Encounters',
    permission: 'ENCOUNTERS:CREATE',
    creates: true,
    resourceType: 'encounter',
    body: EncounterRequest,
    successStatus: 201,
    response: Encounter,
    errorStatuses: [400, 401, 403, 409, 413, 415, 422, 429, 500, 503],
    fieldRules: ({ trx, practiceId, body, now, wrong }) =>
      encounterRuleErrors(trx, practiceId, body, now, wrong),
    handler: async ({ trx, practiceId, body, now }) => {
      const record = await recordEncounter(trx, practiceId, body, now);
      return {
        body: encounterOf(record),
        location: `/api/v1/encounters/${record.encounter.id}`,
        resource: { id: record.encounter.id, patientId: record.encounter.patient_id },
      };
    },
  }),
  defineApiRoute({
    method: 'GET',
    url: '/encounters/:encounterId',
    operationId: 'getEncounter',
    summary: 'Read a visit',
    tag: 'Encounters',
    permission: 'ENCOUNTERS:READ',
    resourceType: 'encounter',
    params: IdParam('encounterId', 'Encounter id (`enc_...`).'),
    successStatus: 200,
    response: Encounter,
    errorStatuses: [401, 403, 404, 429, 500, 503],
    handler: async ({ trx, practiceId, params }) => {
      const record = await readEncounter(trx, practiceId, params.encounterId);
      return {
        body: encounterOf(record),
        resource: { id: record.encounter.id, patientId: record.encounter.patient_id },
      };
    },
  }),
  defineApiRoute({
    method: 'GET',
    url: '/encounters',
    operationId: 'listEncounters',
    summary: 'List visits, newest first',
    description: 'All visits of the practice, or of one patient with `patientId`; newest start first.',
    tag: 'Encounters',
    permission: 'ENCOUNTERS:READ',
    resourceType: 'encounter',
    querystring: Type.Object(
      { patientId: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })), ...PagingQuery },
      { additionalProperties: false },
    ),
    successStatus: 200,
    response: EncounterList,
    errorStatuses: [400, 401, 403, 429, 500, 503],
    handler: async ({ trx, deps, practiceId, query }) => {
      const limit = query.limit ?? 50;
      const filters = { patientId: query.patientId ?? null };
      const position = query.cursor ? deps.cursors.decode('encounters', filters, query.cursor) : undefined;
      if (position && (typeof position[0] !== 'string' || typeof position[1] !== 'string')) {
        throw new AppError('invalid_cursor', 'The cursor is not valid for this list.');
      }
      const before = position ? { start: position[0] as string, id: position[1] as string } : undefined;
      const records = await listEncounters(trx, practiceId, query.patientId, before, limit);
      return {
        body: pageOf(
          records,
          limit,
          encounterOf,
          (r) => [r.encounter.start_at.toISOString(), r.encounter.id],
          (p) => deps.cursors.encode('encounters', filters, p),
        ),
        ...(query.patientId ? { resource: { id: query.patientId, patientId: query.patientId } } : {}),
      };
    },
  }),
];

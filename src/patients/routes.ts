// Declares the patient operations of the public API; the rules live in service.ts.
import { Type } from 'typebox';
import { defineApiRoute } from '../api/api-route.ts';
import { dateIn } from '../platform/clock.ts';
import { wholeList } from '../platform/http/cursor.ts';
import { IdParam } from '../platform/http/schema.ts';
import { Patient, PatientList, PatientPatch, PatientRequest } from './schemas.ts';
import {
  findByExternalIdRecorded,
  patchPatient,
  patchRuleErrors,
  patientOf,
  patientRuleErrors,
  readPatientRecorded,
  registerPatient,
} from './service.ts';

const PatientIdParam = IdParam('patientId', 'Patient id (`pat_...`).');

export const patientRoutes = [
  defineApiRoute({
    method: 'POST',
    url: '/patients',
    operationId: 'createPatient',
    summary: 'Register a patient',
    description:
      "Registers a patient carrying the practice's own number (`externalId`). A second patient with the same externalId is refused with 409 `duplicate` naming the first. Registering sends the patient nothing. `X-Service-Performer` (optional) names the practitioner acting, recorded in the audit trail.",
    tag: 'Patients',
    permission: 'PATIENTS:CREATE',
    creates: true,
    resourceType: 'patient',
    body: PatientRequest,
    successStatus: 201,
    response: Patient,
    errorStatuses: [400, 401, 403, 409, 413, 415, 422, 429, 500, 503],
    fieldRules: async ({ body, now, auth }) => patientRuleErrors(body, dateIn(auth.practice.timezone, now)),
    handler: async ({ trx, practiceId, body, now, auth }) => {
      const row = await registerPatient(trx, practiceId, body, now, dateIn(auth.practice.timezone, now));
      return {
        body: patientOf(row),
        location: `/api/v1/patients/${row.id}`,
        resource: { id: row.id, patientId: row.id },
      };
    },
  }),
  defineApiRoute({
    method: 'GET',
    url: '/patients/:patientId',
    operationId: 'getPatient',
    summary: 'Read a patient',
    tag: 'Patients',
    permission: 'PATIENTS:READ',
    resourceType: 'patient',
    params: PatientIdParam,
    successStatus: 200,
    response: Patient,
    errorStatuses: [401, 403, 404, 429, 500, 503],
    handler: async ({ readRecorded, practiceId, params }) => {
      const row = await readPatientRecorded(readRecorded, practiceId, params.patientId);
      return { body: patientOf(row), resource: { id: row.id, patientId: row.id } };
    },
  }),
  defineApiRoute({
    method: 'GET',
    url: '/patients',
    operationId: 'findPatients',
    summary: "Find patients by the practice's own number",
    description:
      'Answers every patient with this externalId in one page: `hasMore` is false and `nextCursor` null.',
    tag: 'Patients',
    permission: 'PATIENTS:READ',
    resourceType: 'patient',
    querystring: Type.Object(
      {
        externalSystem: Type.String({ minLength: 1, maxLength: 255, description: 'The externalId system.' }),
        externalId: Type.String({ minLength: 1, maxLength: 100, description: 'The externalId value.' }),
      },
      { additionalProperties: false },
    ),
    successStatus: 200,
    response: PatientList,
    errorStatuses: [400, 401, 403, 429, 500, 503],
    handler: async ({ readRecorded, practiceId, query }) => {
      const rows = await findByExternalIdRecorded(
        readRecorded,
        practiceId,
        query.externalSystem,
        query.externalId,
      );
      return {
        body: wholeList(rows.map(patientOf)),
        ...(rows.length === 1 ? { resource: { id: rows[0]!.id, patientId: rows[0]!.id } } : {}),
      };
    },
  }),
  defineApiRoute({
    method: 'PATCH',
    url: '/patients/:patientId',
    operationId: 'updatePatient',
    summary: "Correct a patient's demographics",
    description:
      'A JSON merge patch (RFC 7396) of the PatientRequest fields: fields sent replace, `null` clears, objects merge, arrays replace whole. The result must satisfy every PatientRequest rule. Accepts `application/json` and `application/merge-patch+json`.',
    tag: 'Patients',
    permission: 'PATIENTS:UPDATE',
    resourceType: 'patient',
    params: PatientIdParam,
    body: PatientPatch,
    consumes: ['application/merge-patch+json'],
    successStatus: 200,
    response: Patient,
    errorStatuses: [400, 401, 403, 404, 409, 413, 415, 422, 429, 500, 503],
    fieldRules: ({ trx, practiceId, params, body, now, auth, wrong }) =>
      patchRuleErrors(trx, practiceId, params.patientId, body, dateIn(auth.practice.timezone, now), wrong),
    handler: async ({ trx, practiceId, params, body, now, auth }) => {
      const row = await patchPatient(
        trx,
        practiceId,
        params.patientId,
        body,
        now,
        dateIn(auth.practice.timezone, now),
      );
      return { body: patientOf(row), resource: { id: row.id, patientId: row.id } };
    },
  }),
];

// Declares a patient's erasure on request (POPIA s24(1)(b)); the rules live in erasure.ts.
import { Type } from 'typebox';
import { defineApiRoute } from '../api/api-route.ts';
import { Patient } from '../patients/schemas.ts';
import { patientOf } from '../patients/service.ts';
import { IdParam, Nullable } from '../platform/http/schema.ts';
import { practiceBilling } from '../practices/service.ts';
import { erasePatient, patientRetention, setLifelongRetention } from './erasure.ts';

export const EraseRequest = Type.Object(
  {
    reason: Type.String({
      minLength: 1,
      maxLength: 500,
      description:
        "Why, in words a person reads later (kept with the erasure); e.g. the patient's request and its date. Do not put the patient's name here.",
    }),
    lawfulGround: Type.Optional(
      Nullable(
        Type.String({
          minLength: 1,
          maxLength: 500,
          description:
            "The practice's ground for ending the retention the law asks for early (POPIA s14(1)); recorded with the erasure. Without it, a patient inside retention is refused.",
        }),
      ),
    ),
  },
  { additionalProperties: false, title: 'EraseRequest' },
);

const PatientRetention = Type.Object(
  {
    object: Type.Literal('patient_retention'),
    patientId: Type.String(),
    lifelong: Type.Boolean({
      description:
        "Kept for the patient's lifetime (HPCSA Booklet 9 s9.3.2: a mentally incompetent patient).",
    }),
    lastActivityOn: Type.String({
      format: 'date',
      description: 'The day of the last visit, invoice change, payment or claim change (else registration).',
    }),
    retentionEndsOn: Nullable(
      Type.String({
        format: 'date',
        description:
          'The first day the records are no longer required: retentionYears after the last activity, never before the 21st birthday; null when kept for life or erased.',
      }),
    ),
    dormant: Type.Boolean({ description: 'Retention has ended: the worker de-identifies the patient.' }),
    erased: Type.Boolean(),
  },
  { additionalProperties: false, title: 'PatientRetention' },
);

const RetentionRequest = Type.Object(
  {
    lifelong: Type.Boolean({
      description:
        "Keep the patient's records for their lifetime (HPCSA Booklet 9 s9.3.2: a mentally incompetent patient); false returns them to the practice's rule.",
    }),
  },
  { additionalProperties: false, title: 'RetentionRequest' },
);

const PatientIdParam = IdParam('patientId', 'Patient id (`pat_...`).');

export const dataRightsRoutes = [
  defineApiRoute({
    method: 'GET',
    url: '/patients/:patientId/retention',
    operationId: 'getPatientRetention',
    summary: "Where a patient's retention stands",
    description:
      "The last activity, the day retention ends (the practice's retentionYears after it, never before the 21st birthday) or null when kept for life, and whether the patient is dormant.",
    tag: 'Patients',
    permission: 'PATIENTS:READ',
    resourceType: 'patient',
    params: PatientIdParam,
    successStatus: 200,
    response: PatientRetention,
    errorStatuses: [401, 403, 404, 429, 500, 503],
    handler: async ({ trx, practiceId, params, now }) => {
      const billing = await practiceBilling(trx, practiceId);
      const retention = await patientRetention(trx, billing, params.patientId, now);
      return { body: retention, resource: { id: params.patientId, patientId: params.patientId } };
    },
  }),
  defineApiRoute({
    method: 'PUT',
    url: '/patients/:patientId/retention',
    operationId: 'setPatientRetention',
    summary: "Keep a patient's records for life, or not",
    description:
      'A patient kept for life (HPCSA Booklet 9 s9.3.2: a mentally incompetent patient) is never dormant, so the worker never de-identifies them; an erasure on request then needs a lawfulGround. An erased patient is refused with 422 `business_rule`.',
    tag: 'Patients',
    permission: 'PATIENTS:UPDATE',
    resourceType: 'patient',
    params: PatientIdParam,
    body: RetentionRequest,
    successStatus: 200,
    response: PatientRetention,
    errorStatuses: [400, 401, 403, 404, 413, 415, 422, 429, 500, 503],
    handler: async ({ trx, practiceId, params, body, now }) => {
      const billing = await practiceBilling(trx, practiceId);
      const retention = await setLifelongRetention(trx, billing, params.patientId, body.lifelong, now);
      return { body: retention, resource: { id: params.patientId, patientId: params.patientId } };
    },
  }),
  defineApiRoute({
    method: 'POST',
    url: '/patients/:patientId/erase',
    operationId: 'erasePatient',
    summary: 'De-identify a patient',
    description:
      "Removes the person from the record (POPIA s24(1)(b)): names, identifiers, birth date (the year stays), contact points, addresses and the practice's own number (which can then be registered again), the visits' diagnoses and procedures, the coverages' member numbers, and the invoices' recipient names and line diagnoses. Invoices, lines with their tariff codes and amounts, payments, refunds and claims stay for the books. Refused with 422 `business_rule` naming every reason: an invoice not closed (`open_invoice`), a claim awaiting the insurer (`claim_in_flight`), records inside the retention the law requires (`retention_required`, unless `lawfulGround` is sent) or already erased (`already_erased`). Sends `patient.erased`, naming the patient's id only. An Idempotency-Key is honoured when sent.",
    tag: 'Patients',
    permission: 'PATIENTS:UPDATE',
    resourceType: 'patient',
    acceptsIdempotencyKey: true,
    params: PatientIdParam,
    body: EraseRequest,
    successStatus: 200,
    response: Patient,
    errorStatuses: [400, 401, 403, 404, 409, 413, 415, 422, 429, 500, 503],
    handler: async ({ trx, practiceId, params, body, now }) => {
      const billing = await practiceBilling(trx, practiceId);
      const erasure = { reason: body.reason, lawfulGround: body.lawfulGround ?? null };
      const row = await erasePatient(trx, billing, params.patientId, erasure, now);
      return {
        body: patientOf(row),
        resource: { id: row.id, patientId: row.id },
        reason: body.lawfulGround ? `${body.reason} (lawful ground: ${body.lawfulGround})` : body.reason,
      };
    },
  }),
];

// Declares the patient's record (POPIA s23 access request); the document is written by record.ts.
import { Type } from 'typebox';
import { defineApiRoute } from '../api/api-route.ts';
import { IdParam } from '../platform/http/schema.ts';
import { patientRecordText } from './record.ts';
import { Patient } from './schemas.ts';
import { patientOf, readPatient } from './service.ts';

const Rows = (description: string) =>
  Type.Array(Type.Object({}, { additionalProperties: true }), { description });

export const PatientRecord = Type.Object(
  {
    object: Type.Literal('patient_record'),
    generatedAt: Type.String({ format: 'date-time' }),
    patient: Patient,
    coverages: Rows("The patient's coverages, as stored."),
    encounters: Rows('Visits, each with its diagnoses and procedures.'),
    invoices: Rows('Invoices, each with its lines.'),
    claims: Rows("Claims of the patient's invoices, each with its items and the insurer's messages."),
    payments: Rows("Payments on the patient's invoices."),
    refunds: Rows("Refunds on the patient's invoices."),
    notifications: Rows('Notifications sent about the patient.'),
    auditEvents: Rows('Audit events naming the patient: who read or changed what, and when.'),
  },
  { additionalProperties: false },
);

export const patientRecordRoutes = [
  defineApiRoute({
    method: 'GET',
    url: '/patients/:patientId/record',
    operationId: 'getPatientRecord',
    summary: 'Everything held about a patient',
    description:
      'Answers one JSON document with everything the service holds about the patient (POPIA s23): the patient, coverages, encounters with diagnoses and procedures, invoices with lines, claims with items and messages, payments, refunds, notifications, and the audit events that name the patient. Streamed: the document is written as it is read, so a long history does not have to fit in memory; a failure part-way ends the connection, and the document is then incomplete (not valid JSON). Rows keep their stored field names in camelCase. This request is itself recorded in the audit trail.',
    tag: 'Patients',
    permission: 'PATIENTS:EXPORT',
    resourceType: 'patient',
    params: IdParam('patientId', 'Patient id (`pat_...`).'),
    successStatus: 200,
    response: PatientRecord,
    errorStatuses: [401, 403, 404, 429, 500, 503],
    handler: async ({ trx, deps, practiceId, params, now }) => {
      const patient = patientOf(await readPatient(trx, practiceId, params.patientId));
      return {
        stream: () => patientRecordText(deps.db, practiceId, patient, now),
        resource: { id: patient.id, patientId: patient.id },
      };
    },
  }),
];

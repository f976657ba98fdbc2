// Declares a practice leaving the service, for the operator: its export, then its deletion. The
// rules live in offboarding.ts.
import path from 'node:path';
import { Type } from 'typebox';
import { defineAdminRoute } from '../api/admin-route.ts';
import { patientRecordText } from '../patients/record.ts';
import { PatientRecord } from '../patients/record-routes.ts';
import { patientOf, readPatient } from '../patients/service.ts';
import { IdParam } from '../platform/http/schema.ts';
import { deletePractice, exportPractice } from './offboarding.ts';

const PracticeParam = IdParam('practiceId', 'Practice id (`org_...`).');

const PracticeExport = Type.Object(
  {
    object: Type.Literal('practice_export'),
    practiceId: Type.String(),
    exportedAt: Type.String({ format: 'date-time' }),
    directory: Type.String({
      description:
        "The folder on the server's disk holding the export: one `<table>.jsonl` per table, `manifest.json`, and `accounts/` with each issued invoice's account as PDF.",
    }),
    tables: Type.Array(
      Type.Object(
        { table: Type.String(), file: Type.String(), rows: Type.Integer() },
        { additionalProperties: false },
      ),
    ),
    accounts: Type.Integer({
      description:
        "How many issued invoices' accounts were written, one `accounts/<invoice number>.pdf` each.",
    }),
  },
  { additionalProperties: false, title: 'PracticeExport' },
);

const PracticeDeletion = Type.Object(
  {
    object: Type.Literal('practice_deletion'),
    practiceId: Type.String(),
    deleted: Type.Record(Type.String(), Type.Integer(), { description: 'Rows removed, by table.' }),
  },
  { additionalProperties: false, title: 'PracticeDeletion' },
);

const PatientParams = Type.Object(
  {
    practiceId: Type.String({ minLength: 1, maxLength: 100, description: 'Practice id (`org_...`).' }),
    patientId: Type.String({ minLength: 1, maxLength: 100, description: 'Patient id (`pat_...`).' }),
  },
  { additionalProperties: false },
);

export const offboardingAdminRoutes = [
  defineAdminRoute({
    method: 'GET',
    url: '/practices/:practiceId/patients/:patientId/record',
    operationId: 'adminGetPatientRecord',
    cli: { command: 'patients record' },
    summary: 'Everything held about a patient',
    description:
      "The patient's record as the public API's GET /patients/{patientId}/record answers it (POPIA s23), for a practice answering an access request from the console. Streamed. Recorded in the practice's audit log, naming the patient.",
    params: PatientParams,
    successStatus: 200,
    response: PatientRecord,
    handler: async ({ trx, deps, params, now }) => {
      const patient = patientOf(await readPatient(trx, params.practiceId, params.patientId));
      return {
        stream: () => patientRecordText(deps.db, params.practiceId, patient, now),
        audit: {
          practiceId: params.practiceId,
          resourceType: 'patient',
          resourceId: patient.id,
          patientId: patient.id,
        },
      };
    },
  }),
  defineAdminRoute({
    method: 'POST',
    url: '/practices/:practiceId/export',
    operationId: 'adminExportPractice',
    cli: { command: 'practices export' },
    summary: "Export all of a practice's data",
    description:
      "Writes every row of the practice, from every table (its patients, visits, invoices, claims, payments, audit log, settings...), as JSON lines, one file per table, into a new folder under `DATA_DIR/exports/` on the server, read in one transaction. The answer names the folder and each file's row count; the operator copies the folder and hands it to the practice. Needed before the practice can be deleted.",
    params: PracticeParam,
    successStatus: 201,
    response: PracticeExport,
    handler: async ({ trx, deps, params, now }) => {
      const exportsDir = path.join(deps.config.dataDir, 'exports');
      const result = await exportPractice(trx, params.practiceId, exportsDir, now);
      return {
        body: result,
        audit: { practiceId: params.practiceId, resourceType: 'practice', resourceId: params.practiceId },
      };
    },
  }),
  defineAdminRoute({
    method: 'DELETE',
    url: '/practices/:practiceId',
    operationId: 'adminDeletePractice',
    cli: { command: 'practices delete' },
    summary: 'Delete a practice and all its data',
    description:
      "Removes every row of the practice from every table, its audit log included; nothing of it is left. Refused unless `confirm` repeats the practice's id (422), unless the practice was exported (409), and while any of its jobs (claims, webhook deliveries) is in flight (409). Cannot be undone.",
    params: PracticeParam,
    querystring: Type.Object(
      {
        confirm: Type.String({
          minLength: 1,
          maxLength: 100,
          description: "The practice's id again, to confirm the deletion.",
        }),
      },
      { additionalProperties: false },
    ),
    successStatus: 200,
    response: PracticeDeletion,
    handler: async ({ trx, params, query }) => ({
      body: await deletePractice(trx, params.practiceId, query.confirm),
    }),
  }),
];

// The operator's side of coverages: list a patient's coverages and register a new one (e.g. with a
// corrected member number before resubmitting a rejected claim), by the same rules as the public API.
import { Type } from 'typebox';
import { defineAdminRoute } from '../api/admin-route.ts';
import { dateIn } from '../platform/clock.ts';
import { wholeList } from '../platform/http/cursor.ts';
import { getPractice, practiceBilling } from '../practices/service.ts';
import { Coverage, CoverageList, CoverageRequest } from './schemas.ts';
import { addCoverage, coverageOf, patientCoverages } from './service.ts';

const Id = Type.String({ minLength: 1, maxLength: 100 });
const PatientParams = Type.Object({ practiceId: Id, patientId: Id }, { additionalProperties: false });

export const coverageAdminRoutes = [
  defineAdminRoute({
    method: 'GET',
    url: '/practices/:practiceId/patients/:patientId/coverages',
    operationId: 'adminListCoverages',
    cli: { command: 'coverages list' },
    summary: "List a patient's coverages",
    params: PatientParams,
    successStatus: 200,
    response: CoverageList,
    handler: async ({ trx, params, now }) => {
      await getPractice(trx, params.practiceId);
      const billing = await practiceBilling(trx, params.practiceId);
      const today = dateIn(billing.timezone, now);
      const rows = await patientCoverages(trx, params.practiceId, params.patientId);
      return {
        body: wholeList(rows.map((r) => coverageOf(r, today))),
      };
    },
  }),
  defineAdminRoute({
    method: 'POST',
    url: '/practices/:practiceId/patients/:patientId/coverages',
    operationId: 'adminAddCoverage',
    cli: { command: 'coverages add' },
    summary: "Register a patient's medical scheme membership",
    description: 'As `POST /api/v1/patients/{patientId}/coverages`.',
    params: PatientParams,
    body: CoverageRequest,
    successStatus: 201,
    response: Coverage,
    handler: async ({ trx, params, body, now }) => {
      await getPractice(trx, params.practiceId);
      const billing = await practiceBilling(trx, params.practiceId);
      const row = await addCoverage(trx, params.practiceId, params.patientId, body, now);
      return {
        body: coverageOf(row, dateIn(billing.timezone, now)),
        audit: { practiceId: params.practiceId, resourceType: 'coverage', resourceId: row.id },
        location: `/api/v1/patients/${params.patientId}/coverages/${row.id}`,
      };
    },
  }),
];

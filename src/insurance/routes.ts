// Declares the insurance plan look-up and the patient coverage operations of the public API.
import { Type } from 'typebox';
import { defineApiRoute } from '../api/api-route.ts';
import { dateIn } from '../platform/clock.ts';
import { pageOf, wholeList } from '../platform/http/cursor.ts';
import { IdParam, PagingQuery } from '../platform/http/schema.ts';
import { Coverage, CoverageList, CoverageRequest, InsurancePlanList } from './schemas.ts';
import {
  addCoverage,
  coverageOf,
  coverageRuleErrors,
  listPlans,
  patientCoverage,
  patientCoverages,
  planOf,
} from './service.ts';

const PatientParam = IdParam('patientId', 'Patient id (`pat_...`).');
const CoverageParams = Type.Object(
  {
    ...PatientParam.properties,
    ...IdParam('coverageId', 'Coverage id (`cov_...`).').properties,
  },
  { additionalProperties: false },
);

export const insuranceRoutes = [
  defineApiRoute({
    method: 'GET',
    url: '/insurance-plans',
    operationId: 'listInsurancePlans',
    summary: 'Find insurance plans',
    description:
      '`name` matches part of the plan name or of one of its aliases, ignoring case. The plan found goes on a coverage as `planId`.',
    tag: 'Insurance',
    permission: 'PATIENT_COVERAGE:READ',
    resourceType: 'insurance_plan',
    querystring: Type.Object(
      {
        name: Type.Optional(
          Type.String({
            minLength: 2,
            maxLength: 100,
            description: 'Part of the plan name, at least 2 characters.',
          }),
        ),
        optionCode: Type.Optional(Type.String({ minLength: 1, maxLength: 30 })),
        ...PagingQuery,
      },
      { additionalProperties: false },
    ),
    successStatus: 200,
    response: InsurancePlanList,
    errorStatuses: [400, 401, 403, 429, 500, 503],
    handler: async ({ trx, deps, query }) => {
      const limit = query.limit ?? 50;
      const filters = { name: query.name, optionCode: query.optionCode };
      const after = query.cursor ? deps.cursors.decode('insurance-plans', filters, query.cursor) : undefined;
      const rows = await listPlans(trx, filters, after as [string, string] | undefined, limit);
      return {
        body: pageOf(
          rows,
          limit,
          planOf,
          (r) => [r.name, r.id],
          (p) => deps.cursors.encode('insurance-plans', filters, p),
        ),
      };
    },
  }),
  defineApiRoute({
    method: 'POST',
    url: '/patients/:patientId/coverages',
    operationId: 'addCoverage',
    summary: "Register a patient's medical scheme membership",
    tag: 'Insurance',
    permission: 'PATIENT_COVERAGE:CREATE',
    creates: true,
    resourceType: 'coverage',
    params: PatientParam,
    body: CoverageRequest,
    successStatus: 201,
    response: Coverage,
    errorStatuses: [400, 401, 403, 404, 413, 415, 422, 429, 500, 503],
    fieldRules: ({ trx, body }) => coverageRuleErrors(trx, body),
    handler: async ({ trx, practiceId, params, body, now, auth }) => {
      const row = await addCoverage(trx, practiceId, params.patientId, body, now);
      return {
        body: coverageOf(row, dateIn(auth.practice.timezone, now)),
        location: `/api/v1/patients/${params.patientId}/coverages/${row.id}`,
        resource: { id: row.id, patientId: params.patientId },
      };
    },
  }),
  defineApiRoute({
    method: 'GET',
    url: '/patients/:patientId/coverages',
    operationId: 'listCoverages',
    summary: "List a patient's coverages",
    description:
      'Every coverage in the order registered, in one page. The first active one is the default for bills and claims.',
    tag: 'Insurance',
    permission: 'PATIENT_COVERAGE:READ',
    resourceType: 'coverage',
    params: PatientParam,
    successStatus: 200,
    response: CoverageList,
    errorStatuses: [401, 403, 404, 429, 500, 503],
    handler: async ({ trx, practiceId, params, now, auth }) => {
      const today = dateIn(auth.practice.timezone, now);
      const rows = await patientCoverages(trx, practiceId, params.patientId);
      return {
        body: wholeList(rows.map((r) => coverageOf(r, today))),
        resource: { id: params.patientId, patientId: params.patientId },
      };
    },
  }),
  defineApiRoute({
    method: 'GET',
    url: '/patients/:patientId/coverages/:coverageId',
    operationId: 'getCoverage',
    summary: 'Read one coverage of a patient',
    description: 'The address `POST /patients/{patientId}/coverages` answers in `Location`.',
    tag: 'Insurance',
    permission: 'PATIENT_COVERAGE:READ',
    resourceType: 'coverage',
    params: CoverageParams,
    successStatus: 200,
    response: Coverage,
    errorStatuses: [401, 403, 404, 429, 500, 503],
    handler: async ({ trx, practiceId, params, now, auth }) => {
      const row = await patientCoverage(trx, practiceId, params.patientId, params.coverageId);
      return {
        body: coverageOf(row, dateIn(auth.practice.timezone, now)),
        resource: { id: row.id, patientId: params.patientId },
      };
    },
  }),
];

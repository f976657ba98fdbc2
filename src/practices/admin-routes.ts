// Declares the operator API's practices and practitioners: the only way they come to exist.
import { defineAdminRoute } from '../api/admin-route.ts';
import { wholeList } from '../platform/http/cursor.ts';
import { IdParam } from '../platform/http/schema.ts';
import {
  IntegrationsRequest,
  Practice,
  PracticeList,
  PracticePatch,
  PracticeRequest,
  Practitioner,
  PractitionerList,
  PractitionerRequest,
} from './schemas.ts';
import * as admin from './service.ts';

const PracticeParam = IdParam('practiceId', 'Practice id (`org_...`).');

export const practiceAdminRoutes = [
  defineAdminRoute({
    method: 'POST',
    url: '/practices',
    operationId: 'adminCreatePractice',
    cli: { command: 'practices create' },
    summary: 'Create a practice',
    description: 'The Integrations add-on is on by default.',
    body: PracticeRequest,
    successStatus: 201,
    response: Practice,
    handler: async ({ trx, body, now }) => {
      const row = await admin.createPractice(trx, body, now);
      return {
        body: admin.practiceOf(row),
        location: `/admin/v1/practices/${row.id}`,
        audit: { practiceId: row.id, resourceType: 'practice', resourceId: row.id },
      };
    },
  }),
  defineAdminRoute({
    method: 'GET',
    url: '/practices',
    operationId: 'adminListPractices',
    cli: { command: 'practices list' },
    summary: 'List practices',
    successStatus: 200,
    response: PracticeList,
    handler: async ({ trx }) => ({ body: wholeList((await admin.listPractices(trx)).map(admin.practiceOf)) }),
  }),
  defineAdminRoute({
    method: 'GET',
    url: '/practices/:practiceId',
    operationId: 'adminGetPractice',
    cli: { command: 'practices get' },
    summary: 'Read a practice',
    params: PracticeParam,
    successStatus: 200,
    response: Practice,
    handler: async ({ trx, params }) => ({
      body: admin.practiceOf(await admin.getPractice(trx, params.practiceId)),
    }),
  }),
  defineAdminRoute({
    method: 'PATCH',
    url: '/practices/:practiceId',
    operationId: 'adminUpdatePractice',
    cli: { command: 'practices update' },
    summary: "Change a practice's name or account details",
    description:
      'The fields given replace theirs; null clears an optional one. The account details are what the patient account (PDF) shows: the PCNS practice number, a group practice number, the VAT number (a VAT-registered practice issues tax invoices), address, phone, e-mail (where a disabled webhook endpoint is reported) and bank details.',
    params: PracticeParam,
    body: PracticePatch,
    successStatus: 200,
    response: Practice,
    handler: async ({ trx, params, body, now }) => {
      const row = await admin.patchPractice(trx, params.practiceId, body, now);
      return {
        body: admin.practiceOf(row),
        audit: { practiceId: row.id, resourceType: 'practice', resourceId: row.id },
      };
    },
  }),
  defineAdminRoute({
    method: 'PUT',
    url: '/practices/:practiceId/integrations',
    operationId: 'adminSetIntegrations',
    cli: { command: 'practices integrations' },
    summary: 'Turn the Integrations add-on on or off',
    description: 'While off, every public API call of the practice answers 403 `addon_inactive`.',
    params: PracticeParam,
    body: IntegrationsRequest,
    successStatus: 200,
    response: Practice,
    handler: async ({ trx, params, body, now }) => {
      const row = await admin.setIntegrations(trx, params.practiceId, body.enabled, now);
      return {
        body: admin.practiceOf(row),
        audit: { practiceId: row.id, resourceType: 'practice', resourceId: row.id },
      };
    },
  }),
  defineAdminRoute({
    method: 'POST',
    url: '/practices/:practiceId/practitioners',
    operationId: 'adminCreatePractitioner',
    cli: {
      command: 'practitioners create',
      flags: {
        'defaultSystems.condition': 'condition-system',
        'defaultSystems.procedure': 'procedure-system',
      },
    },
    summary: 'Add a practitioner',
    description: 'Default code systems fall back to ICD-10 for conditions and the tariff for procedures.',
    params: PracticeParam,
    body: PractitionerRequest,
    successStatus: 201,
    response: Practitioner,
    handler: async ({ trx, params, body, now }) => {
      const row = await admin.createPractitioner(trx, params.practiceId, body, now);
      return {
        body: admin.practitionerOf(row),
        audit: { practiceId: row.practice_id, resourceType: 'practitioner', resourceId: row.id },
      };
    },
  }),
  defineAdminRoute({
    method: 'GET',
    url: '/practices/:practiceId/practitioners',
    operationId: 'adminListPractitioners',
    cli: { command: 'practitioners list' },
    summary: "List a practice's practitioners",
    params: PracticeParam,
    successStatus: 200,
    response: PractitionerList,
    handler: async ({ trx, params }) => ({
      body: wholeList((await admin.listPractitioners(trx, params.practiceId)).map(admin.practitionerOf)),
    }),
  }),
];

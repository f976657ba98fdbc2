// Declares the operator (admin) API under /admin/v1: the only way practices, practitioners, clients
// and keys come to exist. The CLI (`practice-billing admin ...`) calls these same operations.
import { Type } from 'typebox';
import { defineAdminRoute } from '../api/admin-route.ts';
import { pageOf } from '../platform/http/cursor.ts';
import { AppError } from '../platform/http/errors.ts';
import { IdParam, PagingQuery } from '../platform/http/schema.ts';
import {
  ApiKey,
  ApiKeyList,
  AuditEventList,
  Client,
  ClientList,
  ClientRequest,
  IntegrationsRequest,
  KeyRequest,
  Practice,
  PracticeList,
  PracticeRequest,
  Practitioner,
  PractitionerList,
  PractitionerRequest,
} from './schemas.ts';
import * as admin from './service.ts';

const PracticeParam = IdParam('practiceId', 'Practice id (`org_...`).');
const ClientParam = IdParam('clientId', 'Client id (`cli_...`).');
const KeyParam = IdParam('keyId', 'Key id (`key_...`).');
const list = <T>(data: T[]) => ({ object: 'list' as const, data, hasMore: false, nextCursor: null });

export const adminRoutes = [
  defineAdminRoute({
    method: 'POST',
    url: '/practices',
    operationId: 'adminCreatePractice',
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
    summary: 'List practices',
    successStatus: 200,
    response: PracticeList,
    handler: async ({ trx }) => ({ body: list((await admin.listPractices(trx)).map(admin.practiceOf)) }),
  }),
  defineAdminRoute({
    method: 'GET',
    url: '/practices/:practiceId',
    operationId: 'adminGetPractice',
    summary: 'Read a practice',
    params: PracticeParam,
    successStatus: 200,
    response: Practice,
    handler: async ({ trx, params }) => ({
      body: admin.practiceOf(await admin.getPractice(trx, params.practiceId)),
    }),
  }),
  defineAdminRoute({
    method: 'PUT',
    url: '/practices/:practiceId/integrations',
    operationId: 'adminSetIntegrations',
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
    summary: "List a practice's practitioners",
    params: PracticeParam,
    successStatus: 200,
    response: PractitionerList,
    handler: async ({ trx, params }) => ({
      body: list((await admin.listPractitioners(trx, params.practiceId)).map(admin.practitionerOf)),
    }),
  }),
  defineAdminRoute({
    method: 'POST',
    url: '/practices/:practiceId/clients',
    operationId: 'adminCreateClient',
    summary: 'Create an integration client',
    description:
      'Permissions are `RESOURCE:ACTION` names; `allowedIps` (IPv4/IPv6 addresses or CIDR ranges) empty means any address.',
    params: PracticeParam,
    body: ClientRequest,
    successStatus: 201,
    response: Client,
    handler: async ({ trx, params, body, now }) => {
      const row = await admin.createClient(trx, params.practiceId, body, now);
      return {
        body: admin.clientOf(row),
        location: `/admin/v1/clients/${row.id}`,
        audit: { practiceId: row.practice_id, resourceType: 'client', resourceId: row.id },
      };
    },
  }),
  defineAdminRoute({
    method: 'GET',
    url: '/practices/:practiceId/clients',
    operationId: 'adminListClients',
    summary: "List a practice's integration clients",
    params: PracticeParam,
    successStatus: 200,
    response: ClientList,
    handler: async ({ trx, params }) => ({
      body: list((await admin.listClients(trx, params.practiceId)).map(admin.clientOf)),
    }),
  }),
  defineAdminRoute({
    method: 'GET',
    url: '/clients/:clientId',
    operationId: 'adminGetClient',
    summary: 'Read an integration client',
    params: ClientParam,
    successStatus: 200,
    response: Client,
    handler: async ({ trx, params }) => ({
      body: admin.clientOf(await admin.getClient(trx, params.clientId)),
    }),
  }),
  defineAdminRoute({
    method: 'PUT',
    url: '/clients/:clientId',
    operationId: 'adminReplaceClient',
    summary: 'Replace an integration client',
    description:
      'Full replacement of name, permissions, allowedIps and rateLimitPerMinute; fields left out are cleared.',
    params: ClientParam,
    body: ClientRequest,
    successStatus: 200,
    response: Client,
    handler: async ({ trx, params, body, now }) => {
      const row = await admin.replaceClient(trx, params.clientId, body, now);
      return {
        body: admin.clientOf(row),
        audit: { practiceId: row.practice_id, resourceType: 'client', resourceId: row.id },
      };
    },
  }),
  ...(['suspend', 'resume'] as const).map((action) =>
    defineAdminRoute({
      method: 'POST',
      url: `/clients/:clientId/${action}`,
      operationId: action === 'suspend' ? 'adminSuspendClient' : 'adminResumeClient',
      summary:
        action === 'suspend'
          ? 'Suspend an integration client (its keys answer 401)'
          : 'Resume a suspended client',
      params: ClientParam,
      successStatus: 200,
      response: Client,
      handler: async ({ trx, params, now }) => {
        const row = await admin.setClientSuspended(trx, params.clientId, action === 'suspend', now);
        return {
          body: admin.clientOf(row),
          audit: { practiceId: row.practice_id, resourceType: 'client', resourceId: row.id },
        };
      },
    }),
  ),
  defineAdminRoute({
    method: 'POST',
    url: '/clients/:clientId/keys',
    operationId: 'adminIssueKey',
    summary: 'Issue an API key',
    description: 'The answer carries `key`, shown this once; only a hash is stored.',
    params: ClientParam,
    body: KeyRequest,
    bodyOptional: true,
    successStatus: 201,
    response: ApiKey,
    handler: async ({ trx, params, body, now }) => {
      const { row, key } = await admin.issueKey(trx, params.clientId, body.expiresAt, now);
      return {
        body: admin.apiKeyOf(row, key),
        audit: { practiceId: row.practice_id, resourceType: 'api_key', resourceId: row.id },
      };
    },
  }),
  defineAdminRoute({
    method: 'GET',
    url: '/clients/:clientId/keys',
    operationId: 'adminListKeys',
    summary: "List a client's keys (never the keys themselves)",
    params: ClientParam,
    successStatus: 200,
    response: ApiKeyList,
    handler: async ({ trx, params }) => ({
      body: list((await admin.listKeys(trx, params.clientId)).map((row) => admin.apiKeyOf(row))),
    }),
  }),
  defineAdminRoute({
    method: 'POST',
    url: '/keys/:keyId/revoke',
    operationId: 'adminRevokeKey',
    summary: 'Revoke an API key (it answers 401 from now on)',
    params: KeyParam,
    successStatus: 200,
    response: ApiKey,
    handler: async ({ trx, params, now }) => {
      const row = await admin.revokeKey(trx, params.keyId, now);
      return {
        body: admin.apiKeyOf(row),
        audit: { practiceId: row.practice_id, resourceType: 'api_key', resourceId: row.id },
      };
    },
  }),
  defineAdminRoute({
    method: 'GET',
    url: '/practices/:practiceId/audit-events',
    operationId: 'adminListAuditEvents',
    summary: "Read a practice's audit log, newest first",
    params: PracticeParam,
    querystring: Type.Object(PagingQuery, { additionalProperties: false }),
    successStatus: 200,
    response: AuditEventList,
    handler: async ({ trx, deps, params, query }) => {
      const limit = query.limit ?? 50;
      const filters = { practiceId: params.practiceId };
      const position = query.cursor ? deps.cursors.decode('audit-events', filters, query.cursor) : undefined;
      const beforeId = position === undefined ? undefined : Number(position[0]);
      if (beforeId !== undefined && !Number.isSafeInteger(beforeId)) {
        throw new AppError('invalid_cursor', 'The cursor is not valid for this list.');
      }
      const rows = await admin.listAuditEvents(trx, params.practiceId, limit, beforeId);
      return {
        body: pageOf(
          rows,
          limit,
          admin.auditEventOf,
          (row) => [String(row.id)],
          (p) => deps.cursors.encode('audit-events', filters, p),
        ),
      };
    },
  }),
];

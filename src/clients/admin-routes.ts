// Declares the operator API's integration clients and keys: creating, replacing, suspending and
// resuming a client, issuing keys (shown once: only a hash is kept, and the answer an Idempotency-Key
// replays is stored sealed) and revoking them.
import { defineAdminRoute } from '../api/admin-route.ts';
import { wholeList } from '../platform/http/cursor.ts';
import { IdParam } from '../platform/http/schema.ts';
import {
  ApiKey,
  ApiKeyList,
  Client,
  ClientList,
  ClientRequest,
  KeyExpiryRequest,
  KeyRequest,
} from './schemas.ts';
import * as admin from './service.ts';

const PracticeParam = IdParam('practiceId', 'Practice id (`org_...`).');
const ClientParam = IdParam('clientId', 'Client id (`cli_...`).');
const KeyParam = IdParam('keyId', 'Key id (`key_...`).');

export const clientAdminRoutes = [
  defineAdminRoute({
    method: 'POST',
    url: '/practices/:practiceId/clients',
    operationId: 'adminCreateClient',
    cli: { command: 'clients create' },
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
    cli: { command: 'clients list' },
    summary: "List a practice's integration clients",
    params: PracticeParam,
    successStatus: 200,
    response: ClientList,
    handler: async ({ trx, params }) => ({
      body: wholeList((await admin.listClients(trx, params.practiceId)).map(admin.clientOf)),
    }),
  }),
  defineAdminRoute({
    method: 'GET',
    url: '/clients/:clientId',
    operationId: 'adminGetClient',
    cli: { command: 'clients get' },
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
    cli: { command: 'clients replace' },
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
      cli: { command: `clients ${action}` },
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
    cli: { command: 'keys create' },
    summary: 'Issue an API key',
    description:
      'The answer carries `key`, shown this once; only a hash is stored. With an Idempotency-Key, the answer kept for a replay (24 hours) is stored encrypted with SECRET_ENCRYPTION_KEY; without that key it is not kept and a repeat is answered 422. To rotate without downtime, name the key this one replaces in `expireOldKeyId`: it keeps working for `graceSeconds` (default one day), then answers 401 exactly as a revoked key does.',
    params: ClientParam,
    body: KeyRequest,
    bodyOptional: true,
    answerHoldsSecret: true,
    successStatus: 201,
    response: ApiKey,
    handler: async ({ trx, params, body, now, operator }) => {
      const { row, key, replaced } = await admin.issueKey(
        trx,
        params.clientId,
        { ...body, createdBy: operator },
        now,
      );
      return {
        body: {
          ...admin.apiKeyOf(row, key),
          ...(replaced
            ? { replacedKey: { id: replaced.id, expiresAt: replaced.expires_at?.toISOString() ?? null } }
            : {}),
        },
        audit: { practiceId: row.practice_id, resourceType: 'api_key', resourceId: row.id },
      };
    },
  }),
  defineAdminRoute({
    method: 'GET',
    url: '/clients/:clientId/keys',
    operationId: 'adminListKeys',
    cli: { command: 'keys list' },
    summary: "List a client's keys (never the keys themselves)",
    params: ClientParam,
    successStatus: 200,
    response: ApiKeyList,
    handler: async ({ trx, params }) => ({
      body: wholeList((await admin.listKeys(trx, params.clientId)).map((row) => admin.apiKeyOf(row))),
    }),
  }),
  defineAdminRoute({
    method: 'POST',
    url: '/keys/:keyId/expire',
    operationId: 'adminExpireKey',
    cli: { command: 'keys expire' },
    summary: 'Set when an API key stops working',
    description:
      'From `expiresAt` on, the key answers 401 exactly as a revoked one does (every process sees it at that time, without waiting for a change signal). An expiry the key already has that comes sooner is kept.',
    params: KeyParam,
    body: KeyExpiryRequest,
    successStatus: 200,
    response: ApiKey,
    handler: async ({ trx, params, body }) => {
      const row = await admin.expireKey(trx, params.keyId, new Date(body.expiresAt));
      return {
        body: admin.apiKeyOf(row),
        audit: { practiceId: row.practice_id, resourceType: 'api_key', resourceId: row.id },
      };
    },
  }),
  defineAdminRoute({
    method: 'POST',
    url: '/keys/:keyId/revoke',
    operationId: 'adminRevokeKey',
    cli: { command: 'keys revoke' },
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
];

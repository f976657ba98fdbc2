// Owns integration clients and their API keys as the operator manages them: permissions, allowed
// addresses, rate limit, suspension, keys shown once and stored hashed, revocation. Runs as the
// operator role, so each function names the client or key it acts on.
import type { Selectable } from 'kysely';
import type { Static } from 'typebox';
import { generateApiKey } from '../auth/api-keys.ts';
import { isValidCidr } from '../auth/ip-allow-list.ts';
import type { ApiKeysTable, ClientsTable } from '../platform/db/tables.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { type FieldError, fieldErrors, notFound, orNotFound } from '../platform/http/errors.ts';
import { newId } from '../platform/ids.ts';
import { getPractice } from '../practices/service.ts';
import type { ApiKey, Client, ClientRequest } from './schemas.ts';
import {
  findApiKey,
  findClient,
  findClientKeyForUpdate,
  insertApiKey,
  insertClient,
  listApiKeyRows,
  listClientRows,
  shortenApiKeyExpiry,
  updateApiKeyRevoked,
  updateClient,
  updateClientSuspended,
} from './store.ts';

export function clientOf(row: Selectable<ClientsTable>): Static<typeof Client> {
  return {
    object: 'client',
    id: row.id,
    practiceId: row.practice_id,
    name: row.name,
    permissions: row.permissions,
    allowedIps: row.allowed_ips,
    rateLimitPerMinute: row.rate_limit_per_minute,
    status: row.suspended_at ? 'suspended' : 'active',
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

function checkAllowedIps(allowedIps: string[] | undefined): string[] {
  const errors: FieldError[] = [];
  (allowedIps ?? []).forEach((value, index) => {
    if (!isValidCidr(value)) {
      errors.push({
        field: `allowedIps.${index}`,
        code: 'invalid',
        message: `allowedIps.${index} must be an IP address or CIDR range`,
      });
    }
  });
  if (errors.length > 0) throw fieldErrors(errors);
  return allowedIps ?? [];
}

export async function createClient(
  trx: Trx,
  practiceId: string,
  request: Static<typeof ClientRequest>,
  now: Date,
) {
  const allowedIps = checkAllowedIps(request.allowedIps);
  await getPractice(trx, practiceId);
  return insertClient(trx, {
    practice_id: practiceId,
    id: newId('client'),
    name: request.name,
    permissions: request.permissions,
    allowed_ips: allowedIps,
    rate_limit_per_minute: request.rateLimitPerMinute ?? null,
    created_at: now,
    updated_at: now,
  });
}

export async function getClient(trx: Trx, clientId: string) {
  const row = await findClient(trx, clientId);
  if (!row) throw notFound('Client');
  return row;
}

export async function listClients(trx: Trx, practiceId: string) {
  await getPractice(trx, practiceId);
  return listClientRows(trx, practiceId);
}

export async function replaceClient(
  trx: Trx,
  clientId: string,
  request: Static<typeof ClientRequest>,
  now: Date,
) {
  const allowedIps = checkAllowedIps(request.allowedIps);
  const client = await getClient(trx, clientId);
  return updateClient(trx, client.practice_id, clientId, {
    name: request.name,
    permissions: request.permissions,
    allowed_ips: allowedIps,
    rate_limit_per_minute: request.rateLimitPerMinute ?? null,
    updated_at: now,
  }).then((row) => orNotFound(row, 'Client'));
}

export async function setClientSuspended(trx: Trx, clientId: string, suspended: boolean, now: Date) {
  const client = await getClient(trx, clientId);
  return updateClientSuspended(trx, client.practice_id, clientId, suspended, now).then((row) =>
    orNotFound(row, 'Client'),
  );
}

export function apiKeyOf(row: Selectable<ApiKeysTable>, key?: string): Static<typeof ApiKey> {
  return {
    object: 'api_key',
    id: row.id,
    clientId: row.client_id,
    practiceId: row.practice_id,
    ...(key ? { key } : {}),
    expiresAt: row.expires_at?.toISOString() ?? null,
    revokedAt: row.revoked_at?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
    createdBy: row.created_by,
    lastUsedAt: row.last_used_at?.toISOString() ?? null,
  };
}

export interface KeyIssue {
  expiresAt?: string | null | undefined;
  /** A key of the same client the new one replaces: it expires `graceSeconds` from now. */
  expireOldKeyId?: string | undefined;
  graceSeconds?: number | undefined;
  /** Who issues it (AdminContext.operator). */
  createdBy: string;
}

/** The grace a replaced key gets when the request names none: one day. */
export const DEFAULT_GRACE_SECONDS = 86_400;

export async function issueKey(trx: Trx, clientId: string, request: KeyIssue, now: Date) {
  const { expiresAt } = request;
  if (expiresAt && new Date(expiresAt).getTime() <= now.getTime()) {
    throw fieldErrors([{ field: 'expiresAt', code: 'invalid', message: 'expiresAt must be in the future' }]);
  }
  if (request.graceSeconds !== undefined && !request.expireOldKeyId) {
    throw fieldErrors([
      {
        field: 'graceSeconds',
        code: 'invalid',
        message: 'graceSeconds needs expireOldKeyId (the key it replaces)',
      },
    ]);
  }
  const client = await getClient(trx, clientId);
  let replaced: Selectable<ApiKeysTable> | undefined;
  if (request.expireOldKeyId) {
    const old = await findClientKeyForUpdate(trx, client.practice_id, clientId, request.expireOldKeyId);
    if (!old || old.revoked_at) {
      throw fieldErrors([
        {
          field: 'expireOldKeyId',
          code: 'invalid',
          message: old
            ? 'expireOldKeyId names a revoked key'
            : "expireOldKeyId is not one of this client's keys",
        },
      ]);
    }
    const graceEnds = new Date(now.getTime() + (request.graceSeconds ?? DEFAULT_GRACE_SECONDS) * 1000);
    replaced = await shortenApiKeyExpiry(trx, old.practice_id, old.id, graceEnds);
  }
  const generated = generateApiKey();
  const row = await insertApiKey(trx, {
    practice_id: client.practice_id,
    id: generated.id,
    client_id: clientId,
    secret_hash: generated.secretHash,
    expires_at: expiresAt ? new Date(expiresAt) : null,
    created_at: now,
    created_by: request.createdBy,
    last_used_at: null,
  });
  return { row, key: generated.key, replaced };
}

/** Sets an expiry on an existing key (shortening one it has, never lengthening it); 404 when there is no such key. */
export async function expireKey(trx: Trx, keyId: string, at: Date) {
  const key = orNotFound(await findApiKey(trx, keyId), 'Key');
  return shortenApiKeyExpiry(trx, key.practice_id, key.id, at);
}

export async function listKeys(trx: Trx, clientId: string) {
  const client = await getClient(trx, clientId);
  return listApiKeyRows(trx, client.practice_id, clientId);
}

/** Revokes the key; a key already revoked keeps its first revocation time, also when two revocations race. */
export async function revokeKey(trx: Trx, keyId: string, now: Date) {
  return updateApiKeyRevoked(trx, keyId, now).then((row) => orNotFound(row, 'Key'));
}

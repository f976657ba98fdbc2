// Owns the operator's records: practices, the Integrations add-on, practitioners, integration clients
// and their keys, and reading the audit log. Runs as the operator role (every practice visible), so
// each function names the practice it acts on.
import type { Selectable } from 'kysely';
import type { Static } from 'typebox';
import { generateApiKey } from '../auth/api-keys.ts';
import { isValidCidr } from '../auth/ip-allow-list.ts';
import { ICD10_URL, TARIFF_URL } from '../code-systems/published.ts';
import type {
  ApiKeysTable,
  AuditEventsTable,
  ClientsTable,
  PracticesTable,
  PractitionersTable,
} from '../platform/db/tables.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { type FieldError, fieldErrors, notFound } from '../platform/http/errors.ts';
import { newId } from '../platform/ids.ts';
import type {
  ApiKey,
  AuditEvent,
  Client,
  ClientRequest,
  Practice,
  PracticeRequest,
  Practitioner,
  PractitionerRequest,
} from './schemas.ts';

export function practiceOf(row: Selectable<PracticesTable>): Static<typeof Practice> {
  return {
    object: 'practice',
    id: row.id,
    name: row.name,
    currency: row.currency,
    timezone: row.timezone,
    integrationsEnabled: row.integrations_enabled,
    createdAt: row.created_at.toISOString(),
  };
}

function isTimeZone(value: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: value });
    return true;
  } catch {
    return false;
  }
}

export async function createPractice(trx: Trx, request: Static<typeof PracticeRequest>, now: Date) {
  const timezone = request.timezone ?? 'Africa/Johannesburg';
  if (!isTimeZone(timezone)) {
    throw fieldErrors([
      { field: 'timezone', code: 'invalid', message: 'timezone must be an IANA time zone' },
    ]);
  }
  return trx
    .insertInto('practices')
    .values({
      id: newId('practice'),
      name: request.name,
      currency: request.currency ?? 'ZAR',
      timezone,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function getPractice(trx: Trx, practiceId: string) {
  const row = await trx.selectFrom('practices').selectAll().where('id', '=', practiceId).executeTakeFirst();
  if (!row) throw notFound('Practice');
  return row;
}

export async function listPractices(trx: Trx) {
  return trx.selectFrom('practices').selectAll().orderBy('created_at').orderBy('id').execute();
}

export async function setIntegrations(trx: Trx, practiceId: string, enabled: boolean, now: Date) {
  const row = await trx
    .updateTable('practices')
    .set({ integrations_enabled: enabled, updated_at: now })
    .where('id', '=', practiceId)
    .returningAll()
    .executeTakeFirst();
  if (!row) throw notFound('Practice');
  return row;
}

export function practitionerOf(row: Selectable<PractitionersTable>): Static<typeof Practitioner> {
  return {
    object: 'practitioner',
    id: row.id,
    practiceId: row.practice_id,
    name: row.name,
    registrationNumber: row.registration_number,
    defaultSystems: {
      condition: row.default_condition_system ?? ICD10_URL,
      procedure: row.default_procedure_system ?? TARIFF_URL,
    },
    active: row.active,
    createdAt: row.created_at.toISOString(),
  };
}

export async function createPractitioner(
  trx: Trx,
  practiceId: string,
  request: Static<typeof PractitionerRequest>,
  now: Date,
) {
  await getPractice(trx, practiceId);
  return trx
    .insertInto('practitioners')
    .values({
      practice_id: practiceId,
      id: newId('practitioner'),
      name: request.name,
      registration_number: request.registrationNumber ?? null,
      default_condition_system: request.defaultSystems?.condition ?? null,
      default_procedure_system: request.defaultSystems?.procedure ?? null,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function listPractitioners(trx: Trx, practiceId: string) {
  await getPractice(trx, practiceId);
  return trx
    .selectFrom('practitioners')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

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
  return trx
    .insertInto('clients')
    .values({
      practice_id: practiceId,
      id: newId('client'),
      name: request.name,
      permissions: request.permissions,
      allowed_ips: allowedIps,
      rate_limit_per_minute: request.rateLimitPerMinute ?? null,
      created_at: now,
      updated_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function getClient(trx: Trx, clientId: string) {
  const row = await trx.selectFrom('clients').selectAll().where('id', '=', clientId).executeTakeFirst();
  if (!row) throw notFound('Client');
  return row;
}

export async function listClients(trx: Trx, practiceId: string) {
  await getPractice(trx, practiceId);
  return trx
    .selectFrom('clients')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export async function replaceClient(
  trx: Trx,
  clientId: string,
  request: Static<typeof ClientRequest>,
  now: Date,
) {
  const allowedIps = checkAllowedIps(request.allowedIps);
  const client = await getClient(trx, clientId);
  return trx
    .updateTable('clients')
    .set({
      name: request.name,
      permissions: request.permissions,
      allowed_ips: allowedIps,
      rate_limit_per_minute: request.rateLimitPerMinute ?? null,
      updated_at: now,
    })
    .where('practice_id', '=', client.practice_id)
    .where('id', '=', clientId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export async function setClientSuspended(trx: Trx, clientId: string, suspended: boolean, now: Date) {
  const client = await getClient(trx, clientId);
  return trx
    .updateTable('clients')
    .set({ suspended_at: suspended ? (client.suspended_at ?? now) : null, updated_at: now })
    .where('practice_id', '=', client.practice_id)
    .where('id', '=', clientId)
    .returningAll()
    .executeTakeFirstOrThrow();
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
  };
}

export async function issueKey(trx: Trx, clientId: string, expiresAt: string | null | undefined, now: Date) {
  if (expiresAt && new Date(expiresAt).getTime() <= now.getTime()) {
    throw fieldErrors([{ field: 'expiresAt', code: 'invalid', message: 'expiresAt must be in the future' }]);
  }
  const client = await getClient(trx, clientId);
  const generated = generateApiKey();
  const row = await trx
    .insertInto('api_keys')
    .values({
      practice_id: client.practice_id,
      id: generated.id,
      client_id: clientId,
      secret_hash: generated.secretHash,
      expires_at: expiresAt ? new Date(expiresAt) : null,
      created_at: now,
    })
    .returningAll()
    .executeTakeFirstOrThrow();
  return { row, key: generated.key };
}

export async function listKeys(trx: Trx, clientId: string) {
  const client = await getClient(trx, clientId);
  return trx
    .selectFrom('api_keys')
    .selectAll()
    .where('practice_id', '=', client.practice_id)
    .where('client_id', '=', clientId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

export async function revokeKey(trx: Trx, keyId: string, now: Date) {
  const key = await trx.selectFrom('api_keys').selectAll().where('id', '=', keyId).executeTakeFirst();
  if (!key) throw notFound('Key');
  return trx
    .updateTable('api_keys')
    .set({ revoked_at: key.revoked_at ?? now })
    .where('practice_id', '=', key.practice_id)
    .where('id', '=', keyId)
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function auditEventOf(row: Selectable<AuditEventsTable>): Static<typeof AuditEvent> {
  return {
    object: 'audit_event',
    id: String(row.id),
    occurredAt: row.occurred_at.toISOString(),
    actor: row.actor,
    clientId: row.client_id,
    keyId: row.key_id,
    performerId: row.performer_id,
    sourceIp: row.source_ip,
    method: row.method,
    route: row.route,
    status: row.status,
    outcome: row.outcome,
    reason: row.reason,
    resourceType: row.resource_type,
    resourceId: row.resource_id,
    patientId: row.patient_id,
    requestId: row.request_id,
    idempotencyKey: row.idempotency_key,
  };
}

/** Newest first; `beforeId` is the keyset position of the previous page's last row. */
export async function listAuditEvents(
  trx: Trx,
  practiceId: string,
  limit: number,
  beforeId: number | undefined,
) {
  await getPractice(trx, practiceId);
  let query = trx
    .selectFrom('audit_events')
    .selectAll()
    .where('practice_id', '=', practiceId)
    .orderBy('id', 'desc')
    .limit(limit + 1);
  if (beforeId !== undefined) query = query.where('id', '<', String(beforeId));
  return query.execute();
}

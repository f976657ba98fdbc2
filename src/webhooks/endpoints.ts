// Owns a practice's webhook endpoints: registering one (its URL checked, its `whsec_` secret shown
// once and stored encrypted), changing, disabling, enabling, rotating the secret (the old one keeps
// signing beside the new during an overlap) and deleting.
import { randomBytes } from 'node:crypto';
import { type Selectable, sql } from 'kysely';
import { EVENT_TYPES } from '../events/schemas.ts';
import type { WebhookEndpointsTable } from '../platform/db/tables.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { AppError, fieldErrors, orNotFound } from '../platform/http/errors.ts';
import { newId } from '../platform/ids.ts';
import type { SecretBox } from '../platform/secret-box.ts';
import { urlProblem } from './address-guard.ts';
import { changeEndpoint, deleteEndpointRow, insertEndpoint, readEndpointRow } from './store.ts';

export { type EndpointLock, readEndpointRow } from './store.ts';

export type EndpointRow = Selectable<WebhookEndpointsTable>;

export interface EndpointView {
  object: 'webhook_endpoint';
  id: string;
  practiceId: string;
  url: string;
  eventTypes: string[];
  enabled: boolean;
  disabledReason: string | null;
  lastSuccessAt: string | null;
  failingSince: string | null;
  createdAt: string;
  updatedAt: string;
  secret?: string;
}

export function endpointOf(row: EndpointRow, secret?: string): EndpointView {
  return {
    object: 'webhook_endpoint',
    id: row.id,
    practiceId: row.practice_id,
    url: row.url,
    eventTypes: row.event_types,
    enabled: row.enabled,
    disabledReason: row.disabled_reason,
    lastSuccessAt: row.last_success_at?.toISOString() ?? null,
    failingSince: row.failing_since?.toISOString() ?? null,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    ...(secret ? { secret } : {}),
  };
}

export function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

function requireBox(box: SecretBox | undefined): SecretBox {
  if (!box) {
    throw new AppError(
      'unprocessable',
      'Webhooks need SECRET_ENCRYPTION_KEY (32 bytes, hex or base64) so signing secrets can be stored encrypted; set it and restart.',
    );
  }
  return box;
}

async function checkRequest(
  request: { url: string; eventTypes?: string[] | undefined },
  allowPrivate: boolean,
) {
  const problem = await urlProblem(request.url, allowPrivate);
  const errors = problem ? [{ field: 'url', code: 'invalid' as const, message: `url ${problem}` }] : [];
  (request.eventTypes ?? []).forEach((type, i) => {
    if (!(EVENT_TYPES as readonly string[]).includes(type)) {
      errors.push({
        field: `eventTypes.${i}`,
        code: 'invalid',
        message: `eventTypes.${i} must be one of ${EVENT_TYPES.join(', ')}`,
      });
    }
  });
  if (errors.length > 0) throw fieldErrors(errors);
}

/**
 * The endpoint, or 404; forUpdate locks its row until commit, so it stays as read (and stays). The
 * lock is FOR NO KEY UPDATE: it excludes every change and the delete, but not the deliveries and
 * events that only hold the row against deletion (FOR KEY SHARE).
 */
export async function findEndpoint(
  trx: Trx,
  practiceId: string,
  id: string,
  forUpdate = false,
): Promise<EndpointRow> {
  return orNotFound(
    await readEndpointRow(trx, practiceId, id, forUpdate ? 'noKeyUpdate' : 'none'),
    'Webhook endpoint',
  );
}

export async function createEndpoint(
  trx: Trx,
  box: SecretBox | undefined,
  allowPrivate: boolean,
  practiceId: string,
  request: { url: string; eventTypes?: string[] | undefined },
  now: Date,
) {
  await checkRequest(request, allowPrivate);
  const sealer = requireBox(box);
  const secret = newSecret();
  const row = await insertEndpoint(trx, {
    practice_id: practiceId,
    id: newId('webhookEndpoint'),
    url: request.url,
    event_types: request.eventTypes ?? [],
    disabled_reason: null,
    secret_encrypted: sealer.seal(secret),
    previous_secret_encrypted: null,
    previous_secret_expires_at: null,
    last_success_at: null,
    failing_since: null,
    created_at: now,
    updated_at: now,
  });
  return { row, secret };
}

export async function updateEndpoint(
  trx: Trx,
  allowPrivate: boolean,
  practiceId: string,
  id: string,
  request: { url: string; eventTypes?: string[] | undefined },
  now: Date,
) {
  await findEndpoint(trx, practiceId, id);
  await checkRequest(request, allowPrivate);
  return changeEndpoint(trx, practiceId, id, {
    url: request.url,
    event_types: request.eventTypes ?? [],
    updated_at: now,
  });
}

export async function setEndpointEnabled(
  trx: Trx,
  practiceId: string,
  id: string,
  enabled: boolean,
  reason: string | null,
  now: Date,
) {
  return changeEndpoint(trx, practiceId, id, {
    enabled,
    disabled_reason: enabled ? null : reason,
    ...(enabled ? { failing_since: null } : {}),
    updated_at: now,
  });
}

export async function rotateSecret(
  trx: Trx,
  box: SecretBox | undefined,
  practiceId: string,
  id: string,
  overlapSeconds: number,
  now: Date,
) {
  const sealer = requireBox(box);
  const secret = newSecret();
  // The secret signing until now becomes the previous one: read in the UPDATE itself, so that of two
  // rotations at once the later keeps the earlier's secret, not the one both started from.
  const row = await changeEndpoint(trx, practiceId, id, {
    secret_encrypted: sealer.seal(secret),
    previous_secret_encrypted: overlapSeconds > 0 ? sql.ref<string>('secret_encrypted') : null,
    previous_secret_expires_at: overlapSeconds > 0 ? new Date(now.getTime() + overlapSeconds * 1000) : null,
    updated_at: now,
  });
  return { row, secret };
}

/** Deletes the endpoint (its deliveries and attempts go with it); 404 when it is not there, or no longer. */
export async function deleteEndpoint(trx: Trx, practiceId: string, id: string) {
  orNotFound(await deleteEndpointRow(trx, practiceId, id), 'Webhook endpoint');
}

/** The secrets that sign a delivery now: the current one, and the previous one during its overlap. */
export function signingSecrets(
  row: Pick<EndpointRow, 'secret_encrypted' | 'previous_secret_encrypted' | 'previous_secret_expires_at'>,
  box: SecretBox,
  now: Date,
): string[] {
  const secrets = [box.open(row.secret_encrypted)];
  if (
    row.previous_secret_encrypted &&
    row.previous_secret_expires_at &&
    row.previous_secret_expires_at > now
  ) {
    secrets.push(box.open(row.previous_secret_encrypted));
  }
  return secrets;
}

// Owns reading a practice's audit log (newest first) for the operator.
import { type Selectable, sql } from 'kysely';
import type { Static } from 'typebox';
import type { AuditEventsTable } from '../platform/db/tables.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { getPractice } from '../practices/service.ts';
import type { AuditEvent } from './schemas.ts';

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

/** What the operator narrows the audit log to; every filter given must hold. */
export interface AuditFilters {
  clientId?: string | undefined;
  /** The HTTP method (or `JOB` for the service's own work), exactly. */
  method?: string | undefined;
  /** Part of the route template, e.g. `/claim/resubmit` or `/api/v1/patients`. */
  path?: string | undefined;
  status?: number | undefined;
  /** Occurred at or after. */
  since?: Date | undefined;
  /** Occurred before. */
  until?: Date | undefined;
}

/** Newest first; `beforeId` is the keyset position of the previous page's last row. */
export async function listAuditEvents(
  trx: Trx,
  practiceId: string,
  filters: AuditFilters,
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
  if (beforeId !== undefined) query = query.where('id', '<', beforeId);
  if (filters.clientId) query = query.where('client_id', '=', filters.clientId);
  if (filters.method) query = query.where('method', '=', filters.method.toUpperCase());
  // strpos, not LIKE: the operator's text is matched as it is, `_` and `%` included.
  if (filters.path) query = query.where(sql<boolean>`strpos(route, ${filters.path}) > 0`);
  if (filters.status !== undefined) query = query.where('status', '=', filters.status);
  if (filters.since) query = query.where('occurred_at', '>=', filters.since);
  if (filters.until) query = query.where('occurred_at', '<', filters.until);
  return query.execute();
}

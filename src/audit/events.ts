// Owns reading a practice's audit log (newest first) for the operator.
import type { Selectable } from 'kysely';
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
  if (beforeId !== undefined) query = query.where('id', '<', beforeId);
  return query.execute();
}

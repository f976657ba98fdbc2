// Owns what the HTTP layer learns about a request as it goes: who called, and what the audit row
// will say. Declared on Fastify's request so hooks and handlers share it.

import type { AuthContext, AuthRefusalReason } from '../auth/authenticate.ts';
import type { AuditEntry } from '../platform/audit-log.ts';

export interface AuditState {
  /** The row was written (inside the work's transaction, or alone). */
  written: boolean;
  /** Writing it failed: the answer became 503 and must not be retried in onSend. */
  failed: boolean;
  outcome: string | null;
  reason: string | null;
  resourceType: string | null;
  resourceId: string | null;
  patientId: string | null;
  idempotencyKey: string | null;
  performerId: string | null;
  /** A refused call whose key is known: audited in this practice with the real reason. */
  refusedKey: { practiceId: string; clientId: string; keyId: string; reason: AuthRefusalReason } | null;
  /** A row to write once the answer has been sent (the refusal of a known key). */
  afterAnswer: AuditEntry | null;
}

declare module 'fastify' {
  interface FastifyRequest {
    auth: AuthContext | null;
    auditState: AuditState;
  }
}

export function freshAuditState(): AuditState {
  return {
    written: false,
    failed: false,
    outcome: null,
    reason: null,
    resourceType: null,
    resourceId: null,
    patientId: null,
    idempotencyKey: null,
    performerId: null,
    refusedKey: null,
    afterAnswer: null,
  };
}

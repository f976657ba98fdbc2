// Owns the practice audit log: one append-only row per request that reaches a practice, written in
// the same transaction as the request's effect. A failed write surfaces as AuditUnavailableError so
// the caller withholds the result (503) and nothing commits.
import type { Database } from './db/database.ts';
import { inPractice, type Trx } from './db/transaction.ts';
import { writeUnanswered } from './db/unanswered-writes.ts';

export interface AuditEntry {
  practiceId: string;
  actor: 'client' | 'operator' | 'service';
  clientId: string | null;
  keyId: string | null;
  performerId: string | null;
  sourceIp: string | null;
  method: string;
  route: string;
  status: number;
  outcome: string;
  reason: string | null;
  resourceType: string | null;
  resourceId: string | null;
  patientId: string | null;
  requestId: string;
  idempotencyKey: string | null;
}

export class AuditUnavailableError extends Error {
  constructor(cause: unknown) {
    super('The audit log could not be written', { cause });
    this.name = 'AuditUnavailableError';
  }
}

/** A test-only hook that runs before each audit insert; production leaves it unset. */
export type AuditFault = (entry: AuditEntry) => Promise<void> | void;

export class AuditLog {
  readonly #fault: AuditFault | undefined;

  constructor(fault?: AuditFault) {
    this.#fault = fault;
  }

  async write(trx: Trx, entry: AuditEntry): Promise<void> {
    try {
      await this.#fault?.(entry);
      const row = {
        practice_id: entry.practiceId,
        actor: entry.actor,
        client_id: entry.clientId,
        key_id: entry.keyId,
        performer_id: entry.performerId,
        source_ip: entry.sourceIp,
        method: entry.method,
        route: entry.route,
        status: entry.status,
        outcome: entry.outcome,
        reason: entry.reason,
        resource_type: entry.resourceType,
        resource_id: entry.resourceId,
        patient_id: entry.patientId,
        request_id: entry.requestId,
        idempotency_key: entry.idempotencyKey,
      };
      // The row is the request's last write and nothing reads its answer: it goes with the COMMIT.
      await writeUnanswered(trx, trx.insertInto('audit_events').values(row));
    } catch (error) {
      throw new AuditUnavailableError(error);
    }
  }

  /** Writes an entry in a transaction of its own, for requests refused before any work ran. */
  async writeAlone(db: Database, entry: AuditEntry): Promise<void> {
    try {
      await inPractice(db, entry.practiceId, (trx) => this.write(trx, entry));
    } catch (error) {
      throw error instanceof AuditUnavailableError ? error : new AuditUnavailableError(error);
    }
  }
}

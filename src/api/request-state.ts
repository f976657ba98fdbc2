// Owns what the HTTP layer learns about a request as it goes: who called, and the request's audit
// row. Declared on Fastify's request so hooks and handlers share it. The audit row has one owner per
// request, its RequestAudit: the route fills in what the row will say, and the row is written exactly
// once, by whichever comes first of the work's transaction (api-route.ts), the answer's onSend (a
// request answered before its handler ran) or, for the refusal of a known key, once the answer is out.

import type { FastifyRequest } from 'fastify';
import type { AuthContext, AuthRefusalReason } from '../auth/authenticate.ts';
import type { AuditEntry, AuditLog } from '../platform/audit-log.ts';
import type { Database } from '../platform/db/database.ts';

/** The caller a row is written for: the authenticated client, or a known key that was refused. */
export interface CallerIdentity {
  practiceId: string;
  clientId: string;
  keyId: string;
}

export function identityOf(auth: AuthContext): CallerIdentity {
  return { practiceId: auth.practice.id, clientId: auth.clientId, keyId: auth.keyId };
}

/** A refused call whose key is known: audited in this practice with the real reason. */
export type RefusedKey = CallerIdentity & { reason: AuthRefusalReason };

/**
 * Where the row stands: still to write; written (inside the work's transaction, or alone); its write
 * failed (the answer became 503 and must not be retried); none, the request was shed; or held until
 * the answer has been sent.
 */
type Progress = 'open' | 'written' | 'failed' | 'shed' | 'after-answer';

export class RequestAudit {
  outcome: string | null = null;
  reason: string | null = null;
  resourceType: string | null = null;
  resourceId: string | null = null;
  patientId: string | null = null;
  idempotencyKey: string | null = null;
  performerId: string | null = null;
  refusedKey: RefusedKey | null = null;
  /** The code of the Problem the error handler answered: the row's reason when none is set. */
  problemCode: string | null = null;
  #progress: Progress = 'open';
  #afterAnswer: AuditEntry | null = null;

  /** No row has been written nor has its write failed. */
  get open(): boolean {
    return this.#progress === 'open';
  }

  written(): void {
    this.#progress = 'written';
  }

  failed(): void {
    this.#progress = 'failed';
  }

  /** The request was shed before any work (load shedding): like one refused before it was known, no row. */
  shed(): void {
    this.#progress = 'shed';
  }

  /** The row for `who`, the request answered `status`. */
  entryOf(request: FastifyRequest, who: CallerIdentity, status: number): AuditEntry {
    return {
      practiceId: who.practiceId,
      actor: 'client',
      clientId: who.clientId,
      keyId: who.keyId,
      performerId: this.performerId,
      sourceIp: request.ip,
      method: request.method,
      route: request.routeOptions.url ?? request.url.split('?')[0] ?? '',
      status,
      outcome: this.outcome ?? (status < 400 ? 'succeeded' : 'refused'),
      reason: this.reason,
      resourceType: this.resourceType,
      resourceId: this.resourceId,
      patientId: this.patientId,
      requestId: request.id,
      idempotencyKey: this.idempotencyKey,
    };
  }

  /**
   * The row of a request answered before its work ran, or undefined when there is none to write: the
   * caller's, or the refused known key's (with the refusal's reason).
   */
  unrecordedEntry(request: FastifyRequest, status: number): AuditEntry | undefined {
    if (!this.open) return undefined;
    const auth = request.auth;
    const refused = this.refusedKey;
    let entry: AuditEntry;
    if (auth) entry = this.entryOf(request, identityOf(auth), status);
    else if (refused)
      entry = { ...this.entryOf(request, refused, status), outcome: 'refused', reason: refused.reason };
    else return undefined;
    if (!entry.reason && status >= 400) entry.reason = this.problemCode;
    return entry;
  }

  /** Writes the row in a transaction of its own; AuditUnavailableError when it cannot be. */
  async writeAlone(audit: AuditLog, db: Database, entry: AuditEntry): Promise<void> {
    try {
      await audit.writeAlone(db, entry);
      this.written();
    } catch (error) {
      this.failed();
      throw error;
    }
  }

  /** Holds the row until the answer has been sent. */
  writeAfterAnswer(entry: AuditEntry): void {
    this.#progress = 'after-answer';
    this.#afterAnswer = entry;
  }

  /** A row waits for the answer to be sent. */
  get holdsAfterAnswer(): boolean {
    return this.#afterAnswer !== null;
  }

  /** The row held until the answer was sent, if any (once). */
  takeAfterAnswer(): AuditEntry | undefined {
    const entry = this.#afterAnswer ?? undefined;
    this.#afterAnswer = null;
    return entry;
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    auth: AuthContext | null;
    auditState: RequestAudit;
  }
}

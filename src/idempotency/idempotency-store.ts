// Owns Idempotency-Key records. A key is claimed (a row in state running, with a lease) in a short
// transaction of its own, so concurrent requests in any process see it at once; the answer is stored
// in the same transaction as the work, so only committed work is ever replayed. A claim whose lease
// ran out (its process died) can be taken over by a retry of the same request.
import { sql } from 'kysely';
import type { Database } from '../platform/db/database.ts';
import { inPractice, type Trx } from '../platform/db/transaction.ts';
import { randomToken } from '../platform/ids.ts';

export const KEY_LIFETIME_HOURS = 24;

export interface StoredAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface Claim {
  practiceId: string;
  clientId: string;
  key: string;
  leaseToken: string;
}

export type ClaimOutcome =
  | { kind: 'claimed'; claim: Claim }
  | { kind: 'replay'; answer: StoredAnswer }
  | { kind: 'running' }
  | { kind: 'reused' };

export async function claimKey(
  db: Database,
  scope: { practiceId: string; clientId: string },
  key: string,
  fingerprint: string,
  leaseSeconds: number,
): Promise<ClaimOutcome> {
  const leaseToken = randomToken(16);
  return inPractice(db, scope.practiceId, async (trx) => {
    const claimed = await sql<{ lease_token: string }>`
      INSERT INTO idempotency_keys AS k
        (practice_id, client_id, key, fingerprint, state, lease_token, locked_until, created_at, expires_at)
      VALUES (${scope.practiceId}, ${scope.clientId}, ${key}, ${fingerprint}, 'running', ${leaseToken},
        now() + make_interval(secs => ${leaseSeconds}), now(), now() + make_interval(hours => ${KEY_LIFETIME_HOURS}))
      ON CONFLICT (practice_id, client_id, key) DO UPDATE SET
        fingerprint = excluded.fingerprint, state = 'running', lease_token = excluded.lease_token,
        locked_until = excluded.locked_until, created_at = excluded.created_at, expires_at = excluded.expires_at,
        response_status = NULL, response_headers = NULL, response_body = NULL
      WHERE k.expires_at <= now()
         OR (k.state = 'running' AND k.locked_until <= now() AND k.fingerprint = excluded.fingerprint)
      RETURNING k.lease_token`.execute(trx);
    if (claimed.rows[0]?.lease_token === leaseToken) {
      return { kind: 'claimed', claim: { ...scope, key, leaseToken } } as const;
    }
    const existing = await trx
      .selectFrom('idempotency_keys')
      .select(['fingerprint', 'state', 'response_status', 'response_headers', 'response_body'])
      .where('practice_id', '=', scope.practiceId)
      .where('client_id', '=', scope.clientId)
      .where('key', '=', key)
      .executeTakeFirst();
    if (!existing) return { kind: 'running' } as const;
    if (existing.fingerprint !== fingerprint) return { kind: 'reused' } as const;
    if (existing.state === 'running') return { kind: 'running' } as const;
    return {
      kind: 'replay',
      answer: {
        status: existing.response_status ?? 200,
        headers: existing.response_headers ?? {},
        body: existing.response_body ?? '',
      },
    } as const;
  });
}

export class LeaseLostError extends Error {}

/** Stores the answer inside the work's transaction. */
export async function completeKey(trx: Trx, claim: Claim, answer: StoredAnswer): Promise<void> {
  const result = await trx
    .updateTable('idempotency_keys')
    .set({
      state: 'done',
      response_status: answer.status,
      response_headers: JSON.stringify(answer.headers),
      response_body: answer.body,
    })
    .where('practice_id', '=', claim.practiceId)
    .where('client_id', '=', claim.clientId)
    .where('key', '=', claim.key)
    .where('lease_token', '=', claim.leaseToken)
    .where('state', '=', 'running')
    .executeTakeFirst();
  if (result.numUpdatedRows !== 1n) {
    throw new LeaseLostError(
      'The Idempotency-Key lease ran out and was taken over before the work committed',
    );
  }
}

/** Frees a claim whose work did not commit, so a retry runs afresh. */
export async function releaseKey(db: Database, claim: Claim): Promise<void> {
  await inPractice(db, claim.practiceId, (trx) =>
    trx
      .deleteFrom('idempotency_keys')
      .where('practice_id', '=', claim.practiceId)
      .where('client_id', '=', claim.clientId)
      .where('key', '=', claim.key)
      .where('lease_token', '=', claim.leaseToken)
      .where('state', '=', 'running')
      .execute(),
  );
}

/** Deletes keys past their 24 hours; run by the worker. */
export async function purgeExpiredKeys(trx: Trx): Promise<number> {
  const result = await trx
    .deleteFrom('idempotency_keys')
    .where('expires_at', '<=', new Date())
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

// Owns Idempotency-Key records. A key belongs to its holder: an integration client of a practice,
// or the operator (the admin API). A client's keys are stored in idempotency_keys, by practice,
// beside the practice's other rows (on Citus, on its node: a keyed write commits there alone); the
// operator's in operator_idempotency_keys (docs/decisions/0260-idempotency-keys-by-holder.md). A
// key is held, for the time of the work's own transaction, by a transaction-scoped advisory lock on
// (holder, key) taken in that transaction's first statement (inPracticeHolding, asOperatorHolding),
// so a concurrent request with the same key in any process is refused at once, and a process that
// dies mid-request lets go of it with its connection. Under the lock the stored answer is looked up
// (a replay needs no other work), and the answer of new work is written last, in the same
// transaction: only committed work is ever replayed, and nothing needs releasing. A success whose
// body holds a secret shown once is stored sealed (sealAnswer, openAnswer): the row, readable by
// the operator role and kept in backups, never holds that secret readable.
import { sql } from 'kysely';
import { compiledOnce } from '../platform/db/compiled-once.ts';
import { jsonWithLateTexts } from '../platform/db/late-text.ts';
import type { Trx } from '../platform/db/transaction.ts';
import { writeUnanswered } from '../platform/db/unanswered-writes.ts';
import type { SecretBox } from '../platform/secret-box.ts';

export const KEY_LIFETIME_HOURS = 24;

export interface StoredAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Whose key it is: an integration client of a practice, or the operator, who calls the admin API with
 * an admin token (one holder, whichever token: migration 0055 keeps its keys apart).
 */
export type KeyHolder = { practiceId: string; clientId: string } | 'operator';

export interface KeyScope {
  holder: KeyHolder;
  key: string;
}

/** The advisory lock's name for a key: one per holder and key. */
export function keyLockName(scope: KeyScope): string {
  const { holder } = scope;
  return holder === 'operator'
    ? `idempotency:operator:${scope.key}`
    : `idempotency:${holder.practiceId}:${holder.clientId}:${scope.key}`;
}

/** The stored-answer look-up of a client's key. */
const clientAnswer = compiledOnce<{ practiceId: string; clientId: string; key: string }, StoredRow>(
  (db, value) =>
    db
      .selectFrom('idempotency_keys')
      .select(['fingerprint', 'response_status', 'response_headers', 'response_body'])
      .where('practice_id', '=', value('practiceId'))
      .where('client_id', '=', value('clientId'))
      .where('key', '=', value('key'))
      .where('expires_at', '>', sql<Date>`now()`),
);

/** The stored-answer look-up of the operator's key. */
const operatorAnswer = compiledOnce<{ key: string }, StoredRow>((db, value) =>
  db
    .selectFrom('operator_idempotency_keys')
    .select(['fingerprint', 'response_status', 'response_headers', 'response_body'])
    .where('key', '=', value('key'))
    .where('expires_at', '>', sql<Date>`now()`),
);

interface StoredRow {
  fingerprint: string;
  response_status: number;
  response_headers: Record<string, string>;
  response_body: string;
}

/** The answer stored for this key within its lifetime, with the fingerprint of its request. */
export async function storedAnswer(
  trx: Trx,
  scope: KeyScope,
): Promise<{ fingerprint: string; answer: StoredAnswer } | undefined> {
  const { holder } = scope;
  const [row] =
    holder === 'operator'
      ? await operatorAnswer(trx, { key: scope.key })
      : await clientAnswer(trx, { ...holder, key: scope.key });
  if (!row) return undefined;
  return {
    fingerprint: row.fingerprint,
    answer: { status: row.response_status, headers: row.response_headers, body: row.response_body },
  };
}

/** Stores the answer inside the work's transaction, replacing an expired record of the same key. */
export async function storeAnswer(
  trx: Trx,
  scope: KeyScope,
  fingerprint: string,
  answer: StoredAnswer,
): Promise<void> {
  // Written last and read by nobody in this request: it goes with the COMMIT. The body may name a text
  // the transaction gives with its COMMIT (a new invoice's number), which it takes in SQL.
  const { holder } = scope;
  const body = await jsonWithLateTexts(trx, answer.body);
  const stored = sql`${fingerprint}, ${answer.status}, ${JSON.stringify(answer.headers)}, ${body}, now(),
      now() + make_interval(hours => ${KEY_LIFETIME_HOURS})`;
  const replaceExpired = sql`DO UPDATE SET
      fingerprint = excluded.fingerprint, response_status = excluded.response_status,
      response_headers = excluded.response_headers, response_body = excluded.response_body,
      created_at = excluded.created_at, expires_at = excluded.expires_at
    WHERE k.expires_at <= excluded.created_at`;
  await writeUnanswered(
    trx,
    holder === 'operator'
      ? sql`
    INSERT INTO operator_idempotency_keys AS k
      (key, fingerprint, response_status, response_headers, response_body, created_at, expires_at)
    VALUES (${scope.key}, ${stored})
    ON CONFLICT (key) ${replaceExpired}`
      : sql`
    INSERT INTO idempotency_keys AS k
      (practice_id, client_id, key, fingerprint, response_status, response_headers, response_body,
       created_at, expires_at)
    VALUES (${holder.practiceId}, ${holder.clientId}, ${scope.key}, ${stored})
    ON CONFLICT (practice_id, client_id, key) ${replaceExpired}`,
  );
}

/**
 * The answer as stored when it may hold a secret: a success's body sealed with the box (AES-256-GCM,
 * `v1.<iv>.<tag>.<ciphertext>`, never JSON); a refusal (a Problem, no secret) as it is. Undefined when
 * a success has no box to seal it: then it must not be stored.
 */
export function sealAnswer(answer: StoredAnswer, box: SecretBox | undefined): StoredAnswer | undefined {
  if (answer.status >= 400) return answer;
  if (!box) return undefined;
  return { ...answer, body: box.seal(answer.body) };
}

/**
 * A stored answer that may hold a secret, as first sent: a sealed body opened. Undefined when it cannot
 * be opened (no box, or another key than sealed it). A JSON body is as it was stored: a refusal.
 */
export function openAnswer(stored: StoredAnswer, box: SecretBox | undefined): StoredAnswer | undefined {
  if (stored.body.startsWith('{')) return stored;
  if (!box) return undefined;
  try {
    return { ...stored, body: box.open(stored.body) };
  } catch {
    return undefined;
  }
}

/** Deletes keys past their 24 hours, the clients' and the operator's; run by the worker. */
export async function purgeExpiredKeys(trx: Trx): Promise<number> {
  const now = new Date();
  const clients = await trx.deleteFrom('idempotency_keys').where('expires_at', '<=', now).executeTakeFirst();
  const operator = await trx
    .deleteFrom('operator_idempotency_keys')
    .where('expires_at', '<=', now)
    .executeTakeFirst();
  return Number(clients.numDeletedRows) + Number(operator.numDeletedRows);
}

/**
 * Forgets the stored answers of the practice's requests that name the patient (a registration's
 * answer holds their name): a replay of such a key then runs again. Used by a de-identification.
 */
export async function forgetAnswersNaming(trx: Trx, practiceId: string, patientId: string): Promise<void> {
  await trx
    .deleteFrom('idempotency_keys')
    .where('practice_id', '=', practiceId)
    .where('response_body', 'like', `%${patientId}%`)
    .execute();
}

/**
 * Forgets the operator's stored answers that name the practice (its creation, its clients' and keys'
 * answers, its export), in their bodies or headers (a Location): used when the practice is deleted.
 * An answer sealed because it holds a secret names nothing readable and expires with its key.
 */
export async function forgetOperatorAnswersNaming(trx: Trx, practiceId: string): Promise<void> {
  await trx
    .deleteFrom('operator_idempotency_keys')
    .where((eb) =>
      eb.or([
        eb('response_body', 'like', `%${practiceId}%`),
        eb(sql`response_headers::text`, 'like', `%${practiceId}%`),
      ]),
    )
    .execute();
}

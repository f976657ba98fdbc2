// Idempotency-Keys are held by an advisory lock for the time of their request's transaction and the
// row is written only with the answer, in that transaction: a row always holds a stored answer, and
// the claim's state and lease go. Rows still running (their request's process gone) are dropped, so
// a retry runs afresh. Forward-only.
import type { Kysely } from 'kysely';
import { runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    DELETE FROM idempotency_keys WHERE state <> 'done';
    ALTER TABLE idempotency_keys
      DROP COLUMN state,
      DROP COLUMN lease_token,
      DROP COLUMN locked_until,
      ALTER COLUMN response_status SET NOT NULL,
      ALTER COLUMN response_headers SET NOT NULL,
      ALTER COLUMN response_body SET NOT NULL;
  `,
  );
}

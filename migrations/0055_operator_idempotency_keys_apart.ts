// The operator's Idempotency-Keys get a table of their own, operator_idempotency_keys (the key alone
// names one: the operator is one holder), and idempotency_keys holds the integration clients' keys
// only, with practice_id and client_id NOT NULL and its primary key (practice, client, key) again, as
// before migration 0014. So every row of idempotency_keys belongs to a practice, and on Citus the table
// is distributed by practice_id beside the practice's other rows (src/platform/db/citus.ts): a client's
// keyed write and its stored answer commit on the practice's node alone, without two-phase commit
// (docs/decisions/0260-idempotency-keys-by-holder.md). The operator's stored answers move across with
// everything they hold (fingerprint, answer, times), so no stored answer is lost: a repeat of a key
// sent before the upgrade is answered as before. Only the operator role reaches the new table (no
// row-level security: it holds no practice's rows by practice); the app role has no grant on it.
// Each change to idempotency_keys is a statement of its own (Citus refuses a constraint added beside
// other changes in one ALTER TABLE). Forward-only.
import type { Kysely } from 'kysely';
import { OPERATOR_ROLE, runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    CREATE TABLE operator_idempotency_keys (
      key text PRIMARY KEY,
      fingerprint text NOT NULL,
      response_status integer NOT NULL,
      response_headers jsonb NOT NULL,
      response_body text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL
    );
    CREATE INDEX operator_idempotency_keys_expiry ON operator_idempotency_keys (expires_at);
    GRANT SELECT, INSERT, UPDATE, DELETE ON operator_idempotency_keys TO ${OPERATOR_ROLE};
    INSERT INTO operator_idempotency_keys
      (key, fingerprint, response_status, response_headers, response_body, created_at, expires_at)
    SELECT key, fingerprint, response_status, response_headers, response_body, created_at, expires_at
      FROM idempotency_keys WHERE practice_id IS NULL;
    DELETE FROM idempotency_keys WHERE practice_id IS NULL;
    ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_holder_key;
    ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_holder;
    ALTER TABLE idempotency_keys ALTER COLUMN practice_id SET NOT NULL, ALTER COLUMN client_id SET NOT NULL;
    ALTER TABLE idempotency_keys ADD PRIMARY KEY (practice_id, client_id, key);
  `,
  );
}

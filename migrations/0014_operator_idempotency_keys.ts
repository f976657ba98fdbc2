// Idempotency-Keys of the operator (the admin API, authenticated by the one ADMIN_TOKEN) live beside
// the integration clients' keys: a row whose practice_id and client_id are both null belongs to the
// operator. The primary key (practice, client, key) becomes a unique constraint whose nulls count as
// equal, so the operator holds each key once, as each client does; the foreign keys to practices and
// clients skip rows without them. Row-level security is unchanged: the app role sees only its
// practice's rows (never the operator's), the operator role sees all. Forward-only.
import type { Kysely } from 'kysely';
import { runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
    ALTER TABLE idempotency_keys
      ALTER COLUMN practice_id DROP NOT NULL,
      ALTER COLUMN client_id DROP NOT NULL,
      ADD CONSTRAINT idempotency_keys_holder CHECK ((practice_id IS NULL) = (client_id IS NULL)),
      ADD CONSTRAINT idempotency_keys_holder_key UNIQUE NULLS NOT DISTINCT (practice_id, client_id, key);
  `,
  );
}

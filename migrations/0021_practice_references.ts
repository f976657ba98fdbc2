// The tables written on every request or job no longer reference practices with a foreign key: each
// insert into them checked its practice with a key-share lock on the one practices row, so every
// request of a practice queued lock traffic (multixacts) on one row. A practice is never deleted nor
// its id changed (no role may delete it, and the triggers below refuse both, and a TRUNCATE, for
// everyone, the owner included), so the reference could never fail; tenancy stays with practice_id in every key and
// row-level security, and the composite foreign keys between a practice's own rows (an invoice's
// patient, a delivery's endpoint) stay. Dropped on audit_events, events, idempotency_keys (its
// client's key still checks the practice), invoice_clocks, jobs, notifications and patients; the
// practice's set-up tables (practitioners, clients, webhook endpoints, prices, code systems) keep
// theirs. Forward-only.
import type { Kysely } from 'kysely';
import { runScript } from './security.ts';

const HOT_TABLES = [
  'audit_events',
  'events',
  'idempotency_keys',
  'invoice_clocks',
  'jobs',
  'notifications',
  'patients',
];

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    ${HOT_TABLES.map((table) => `ALTER TABLE ${table} DROP CONSTRAINT ${table}_practice_id_fkey;`).join('\n')}

    CREATE FUNCTION practices_kept() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'a practice is never deleted, nor its id changed';
    END $$;
    CREATE TRIGGER practices_kept BEFORE DELETE OR UPDATE OF id ON practices
      FOR EACH ROW EXECUTE FUNCTION practices_kept();
    CREATE TRIGGER practices_kept_whole BEFORE TRUNCATE ON practices
      FOR EACH STATEMENT EXECUTE FUNCTION practices_kept();
    `,
  );
}

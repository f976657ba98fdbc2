// A practice that leaves the service (POPIA s14(4): nothing of it kept once handed over): its rows are
// removed from every table, the audit log and the practices row included, but only in a transaction
// that names that practice as the one leaving (app.offboarding_practice, set by the operator's
// deletion) and only by the operator role. Everywhere else the audit log stays append-only and a
// practice is never deleted. The practice notes when its data was last exported, which the deletion
// asks for. Forward-only.
import type { Kysely } from 'kysely';
import { OPERATOR_ROLE, runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    ALTER TABLE practices ADD COLUMN exported_at timestamptz;

    CREATE OR REPLACE FUNCTION audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'DELETE' AND OLD.practice_id = current_setting('app.offboarding_practice', true) THEN
        RETURN OLD;
      END IF;
      RAISE EXCEPTION 'audit_events is append-only';
    END $$;

    CREATE OR REPLACE FUNCTION practices_kept() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'DELETE' AND OLD.id = current_setting('app.offboarding_practice', true) THEN
        RETURN OLD;
      END IF;
      RAISE EXCEPTION 'a practice is never deleted, nor its id changed';
    END $$;

    GRANT DELETE ON audit_events TO ${OPERATOR_ROLE};
  `,
  );
}

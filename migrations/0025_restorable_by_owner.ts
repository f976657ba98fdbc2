// A backup by the schema's owner with the plain tools (pg_dump --format=custom; createdb and pg_restore
// into a new database), where the owner is the login a managed PostgreSQL gives: LOGIN CREATEROLE
// CREATEDB, not a superuser.
// - The tables' row-level security stays forced on the service's roles (the app role sees its practice,
//   the operator role every one) but no longer on the owner: pg_dump reads with row_security off and is
//   refused on any table whose policies bind its reader. The service never works as the owner: every
//   transaction switches to a service role first (src/platform/db/transaction.ts).
// - The SECURITY DEFINER functions that the operator role owned (the key look-up, the job backlogs) are
//   owned by the schema's owner, and the operator role may run them as before: a restore by that owner cannot give them to the operator role (that
//   needs CREATE on the schema for the operator role), and a function left with the restoring owner
//   lost its EXECUTE grant. The owner sees every row as the operator role did; their bodies are as they
//   were. Forward-only.
import type { Kysely } from 'kysely';
import { OPERATOR_ROLE, runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    DO $$
    DECLARE t record;
    BEGIN
      FOR t IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
               WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relforcerowsecurity
      LOOP
        EXECUTE format('ALTER TABLE public.%I NO FORCE ROW LEVEL SECURITY', t.relname);
      END LOOP;
    END $$;
    ALTER FUNCTION api_key_for_request(text) OWNER TO CURRENT_USER;
    ALTER FUNCTION job_backlog_ms(text) OWNER TO CURRENT_USER;
    ALTER FUNCTION practice_job_backlog_ms(text, text) OWNER TO CURRENT_USER;
    GRANT EXECUTE ON FUNCTION api_key_for_request(text) TO ${OPERATOR_ROLE};
    GRANT EXECUTE ON FUNCTION job_backlog_ms(text) TO ${OPERATOR_ROLE};
    GRANT EXECUTE ON FUNCTION practice_job_backlog_ms(text, text) TO ${OPERATOR_ROLE};
  `,
  );
}

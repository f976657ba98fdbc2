// How long the oldest due job of a lane has waited for a worker, in milliseconds (0 when none waits),
// as one statement outside any transaction: the public API reads it to refuse new claim work while the
// claims lane's backlog is older than LOAD_SHED_CLAIM_BACKLOG_MS (src/platform/http/load-shedding.ts).
// A SECURITY DEFINER function owned by the operator role, as the key look-up of migration 0006, so it
// runs under that role's row-level security without a transaction, a role switch and a commit around
// it. It reads the jobs table alone and answers one number. Forward-only.
import type { Kysely } from 'kysely';
import { OPERATOR_ROLE, runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    CREATE FUNCTION job_backlog_ms(wanted_lane text) RETURNS double precision
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, public
    AS $$
    BEGIN
      RETURN coalesce((
        SELECT extract(epoch FROM now() - min(j.run_at)) * 1000
          FROM public.jobs j
         WHERE j.lane = wanted_lane AND j.state = 'queued' AND j.run_at <= now()
           AND (j.locked_until IS NULL OR j.locked_until <= now())), 0);
    END
    $$;
    REVOKE ALL ON FUNCTION job_backlog_ms(text) FROM PUBLIC;
    GRANT CREATE ON SCHEMA public TO ${OPERATOR_ROLE};
    ALTER FUNCTION job_backlog_ms(text) OWNER TO ${OPERATOR_ROLE};
    REVOKE CREATE ON SCHEMA public FROM ${OPERATOR_ROLE};
    GRANT EXECUTE ON FUNCTION job_backlog_ms(text) TO ${OPERATOR_ROLE};
  `,
  );
}

// How long the oldest due job of one practice in a lane has waited for a worker, in milliseconds (0
// when none waits), as one statement outside any transaction: the public API reads it for the webhooks
// lane to refuse a practice's new claim work while that practice's deliveries are further behind than
// LOAD_SHED_WEBHOOK_BACKLOG_MS (src/platform/http/load-shedding.ts). A SECURITY DEFINER function owned
// by the operator role, as job_backlog_ms (migration 0023). It reads one practice's rows of the lane
// along jobs_lane_queue and answers one number. Forward-only.
import type { Kysely } from 'kysely';
import { OPERATOR_ROLE, runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    CREATE FUNCTION practice_job_backlog_ms(wanted_lane text, wanted_practice text) RETURNS double precision
    LANGUAGE plpgsql STABLE SECURITY DEFINER
    SET search_path = pg_catalog, public
    AS $$
    BEGIN
      RETURN coalesce((
        SELECT extract(epoch FROM now() - min(j.run_at)) * 1000
          FROM public.jobs j
         WHERE j.lane = wanted_lane AND j.practice_id = wanted_practice AND j.state = 'queued'
           AND j.run_at <= now() AND (j.locked_until IS NULL OR j.locked_until <= now())), 0);
    END
    $$;
    REVOKE ALL ON FUNCTION practice_job_backlog_ms(text, text) FROM PUBLIC;
    GRANT CREATE ON SCHEMA public TO ${OPERATOR_ROLE};
    ALTER FUNCTION practice_job_backlog_ms(text, text) OWNER TO ${OPERATOR_ROLE};
    REVOKE CREATE ON SCHEMA public FROM ${OPERATOR_ROLE};
    GRANT EXECUTE ON FUNCTION practice_job_backlog_ms(text, text) TO ${OPERATOR_ROLE};
  `,
  );
}

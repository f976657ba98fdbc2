// What a worker that lost a job's lease hears when it tries to record the job's end
// (src/jobs/queue.ts): job_lease_lost(job id) raises SQLSTATE PBJ01, so the statement that ends a job
// fails when the job is no longer this worker's, and with it the transaction that recorded the work.
// Leases and due times are read on the database's clock (now()), the one clock every worker shares.
// The function reads no table. Forward-only.
import type { Kysely } from 'kysely';
import { APP_ROLE, OPERATOR_ROLE, runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    CREATE FUNCTION job_lease_lost(job_id text) RETURNS void
    LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp
    AS $$
    BEGIN
      RAISE EXCEPTION 'the lease of job % was lost: another worker has it, or it has ended', job_id
        USING ERRCODE = 'PBJ01';
    END
    $$;
    REVOKE ALL ON FUNCTION job_lease_lost(text) FROM PUBLIC;
    GRANT EXECUTE ON FUNCTION job_lease_lost(text) TO ${APP_ROLE}, ${OPERATOR_ROLE};
    `,
  );
}

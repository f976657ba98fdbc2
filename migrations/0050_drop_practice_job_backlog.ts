// Drops practice_job_backlog_ms(text, text) (migration 0024): the per-practice reading of a lane's
// backlog had one reader, the webhook_backlog refusal, removed by decision 0168. Its EXECUTE grant to
// the operator role goes with it. The whole lane's job_backlog_ms(text) stays. Forward-only.
import type { Kysely } from 'kysely';
import { runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    DROP FUNCTION practice_job_backlog_ms(text, text);
  `,
  );
}

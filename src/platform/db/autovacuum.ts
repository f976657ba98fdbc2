// Owns the start-up check that PostgreSQL keeps the service's tables analysed and vacuumed. The job
// queue, events and webhook tables are rewritten all day: without autovacuum their statistics stay
// those of the day they were last analysed (plans cached on them, the job take's generic plans and
// the foreign-key checks, stay those of a small table while it grows) and their dead rows are never
// reclaimed. A test server may run with it off; production should not.
import { type Kysely, sql } from 'kysely';
import type { Tables } from './tables.ts';

export interface AutovacuumCoverage {
  /** The server's `autovacuum` setting. */
  serverOn: boolean;
  /** The service's tables whose own `autovacuum_enabled` storage parameter turns it off. */
  tablesOff: string[];
}

export async function autovacuumCoverage(db: Kysely<Tables>): Promise<AutovacuumCoverage> {
  const server = await sql<{ server_on: boolean }>`
    SELECT current_setting('autovacuum') = 'on' AS server_on`.execute(db);
  const tables = await sql<{ name: string }>`
    SELECT c.relname AS name FROM pg_class c
     WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
       AND c.reloptions @> ARRAY['autovacuum_enabled=false']
     ORDER BY c.relname`.execute(db);
  return { serverOn: server.rows[0]?.server_on === true, tablesOff: tables.rows.map((row) => row.name) };
}

/** The warning an operator reads at start when some of the service's tables go without autovacuum. */
export function autovacuumWarning({ serverOn, tablesOff }: AutovacuumCoverage): string | undefined {
  const what = !serverOn
    ? 'PostgreSQL runs with autovacuum off'
    : tablesOff.length > 0
      ? `autovacuum is turned off for the tables ${tablesOff.join(', ')}`
      : undefined;
  if (!what) return undefined;
  return (
    `${what}: the job queue's, events' and webhook tables' statistics and dead rows are then never ` +
    'kept up, and plans made while they were small stay as they grow; turn it on, or ANALYZE and ' +
    'VACUUM them on a schedule (README, Running against PostgreSQL)'
  );
}

// The request rate limits' counters on PostgreSQL, shared by every API process so that a client's
// allowance is one, however many processes serve it (src/platform/http/rate-limit.ts, through
// rate-limiter-flexible's PostgreSQL store, whose statements name these columns in this order): per
// counted key (`p<allowance>:client:<id>` or `p<allowance>:ip:<address>`), the points used in the
// current window and the window's end in epoch milliseconds, by the clock of the process that opened
// the window. UNLOGGED: a counter needs no crash safety (a crash empties the table, which forgives at
// most one window), and a write that touches only this table commits without waiting for the WAL to
// reach disk, once per request; standbys, which count nothing, do not get it. Not a tenant table
// (keys span practices), so no row-level security: the service's login reaches it as a member of the
// operator role, outside any transaction, as it calls the key look-up. The embedded database creates
// it too and never uses it (it counts in memory). Forward-only.
import type { Kysely } from 'kysely';
import { OPERATOR_ROLE, runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    CREATE UNLOGGED TABLE rate_limits (
      key varchar(255) PRIMARY KEY,
      points integer NOT NULL DEFAULT 0,
      expire bigint
    );
    GRANT SELECT, INSERT, UPDATE, DELETE ON rate_limits TO ${OPERATOR_ROLE};
  `,
  );
}

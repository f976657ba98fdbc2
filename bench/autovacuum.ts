// Stands in for autovacuum on a PostgreSQL server that runs with it off (a test server may: this
// machine kind's has `autovacuum = off` in its configuration). Without it a bench database is never
// analysed or vacuumed while the load fills it: the tables the load fills (jobs, events, deliveries)
// keep the statistics of an empty table, and plans cached by the service's connections (the job
// take's generic plans, the foreign-key checks) stay those of an empty table as it grows. Every
// STAND_IN_NAPTIME_MS it treats the tables that autovacuum's own thresholds (the server's settings)
// would have it treat: ANALYZE past the analyse threshold, VACUUM (ANALYZE) past a vacuum threshold.
// Its backend works on the measured database, as autovacuum's workers do, so its CPU counts as that
// database's PostgreSQL CPU. On a server with autovacuum on it does nothing.
import pg from 'pg';

/**
 * How often it looks. Autovacuum visits each database every autovacuum_naptime (60 s by default); a
 * bench database is younger than that when its load starts, where a database in operation has long
 * been analysed with its tables full, so the stand-in looks more often.
 */
const STAND_IN_NAPTIME_MS = 10_000;

const DUE_TABLES = `
  SELECT format('%I.%I', s.schemaname, s.relname) AS name,
         s.n_dead_tup > current_setting('autovacuum_vacuum_threshold')::float8
                        + current_setting('autovacuum_vacuum_scale_factor')::float8 * greatest(c.reltuples, 0)
      OR s.n_ins_since_vacuum > current_setting('autovacuum_vacuum_insert_threshold')::float8
                        + current_setting('autovacuum_vacuum_insert_scale_factor')::float8 * greatest(c.reltuples, 0)
         AS vacuum,
         s.n_mod_since_analyze > current_setting('autovacuum_analyze_threshold')::float8
                        + current_setting('autovacuum_analyze_scale_factor')::float8 * greatest(c.reltuples, 0)
         AS analyse
    FROM pg_stat_user_tables AS s
    JOIN pg_class AS c ON c.oid = s.relid`;

export interface AutovacuumStandIn {
  /** Tables analysed and tables vacuumed so far. */
  readonly counts: { analysed: number; vacuumed: number };
  stop(): Promise<void>;
}

/** Starts the stand-in on each database when the server's autovacuum is off; undefined when it is on. */
export async function startAutovacuumStandIn(urls: string[]): Promise<AutovacuumStandIn | undefined> {
  const clients = urls.map((url) => new pg.Client({ connectionString: url }));
  await Promise.all(clients.map((client) => client.connect()));
  const { rows } = await clients[0]!.query<{ autovacuum: string }>('SHOW autovacuum');
  if (rows[0]?.autovacuum !== 'off') {
    await Promise.all(clients.map((client) => client.end()));
    return undefined;
  }
  const counts = { analysed: 0, vacuumed: 0 };
  let stopping = false;
  const treat = async (client: pg.Client) => {
    const due = await client.query<{ name: string; vacuum: boolean; analyse: boolean }>(DUE_TABLES);
    for (const table of due.rows) {
      if (stopping) return;
      if (table.vacuum) {
        await client.query(`VACUUM (ANALYZE) ${table.name}`);
        counts.vacuumed += 1;
        counts.analysed += 1;
      } else if (table.analyse) {
        await client.query(`ANALYZE ${table.name}`);
        counts.analysed += 1;
      }
    }
  };
  let timer: NodeJS.Timeout | undefined;
  let round: Promise<void> = Promise.resolve();
  const schedule = () => {
    timer = setTimeout(() => {
      round = Promise.all(clients.map(treat))
        .then(() => undefined)
        // A table dropped or a database going away at the end of the run: the next round looks again.
        .catch(() => undefined)
        .finally(() => {
          if (!stopping) schedule();
        });
    }, STAND_IN_NAPTIME_MS);
    timer.unref();
  };
  schedule();
  return {
    counts,
    async stop() {
      stopping = true;
      clearTimeout(timer);
      await round;
      await Promise.all(clients.map((client) => client.end().catch(() => undefined)));
    },
  };
}

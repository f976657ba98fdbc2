// Each deployment on a cluster keeps to its own database: PUBLIC (every role of the cluster, another
// deployment's owner and roles among them) may no longer connect to it or make temporary tables in
// it; the deployment's own service roles may connect (and so the logins they are granted to). The
// service roles' names are recorded (their prefix, DATABASE_ROLE_PREFIX), so that a process started
// with another prefix is refused instead of failing on every transaction. Forward-only.
import { type Kysely, sql } from 'kysely';
import { APP_ROLE, OPERATOR_ROLE, runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    DO $$
    BEGIN
      EXECUTE format('REVOKE CONNECT, TEMPORARY ON DATABASE %I FROM PUBLIC', current_database());
      EXECUTE format('GRANT CONNECT ON DATABASE %I TO ${APP_ROLE}, ${OPERATOR_ROLE}', current_database());
    END $$;
  `,
  );
  const prefix = APP_ROLE.replace(/_app$/, '');
  await sql`INSERT INTO service_settings (name, value) VALUES ('role_prefix', ${prefix})
    ON CONFLICT (name) DO UPDATE SET value = excluded.value`.execute(db);
}

// Owns the database roles and row-level security shared by every migration.
//
// <prefix>_app              serves API requests: sees only the rows of the practice named by the
//                            transaction-local setting app.practice_id.
// <prefix>_operator         serves the admin API, key look-up and background workers: sees every
//                            practice. Neither role owns a table, logs in, or bypasses RLS; the
//                            service's login switches to one of them inside every transaction.
import { type Kysely, sql } from 'kysely';

/** The prefix of the service roles' names unless DATABASE_ROLE_PREFIX says otherwise. */
export const DEFAULT_ROLE_PREFIX = 'practice_billing';

// Each deployment on a cluster has roles of its own (roles are cluster-wide): `<prefix>_app` and
// `<prefix>_operator`, the prefix from DATABASE_ROLE_PREFIX. A process serves one deployment, so the
// names are set once, when it opens its database (useRolePrefix), before any migration or transaction
// reads them; they are live bindings, read by each migration and transaction when it runs.
export let APP_ROLE = `${DEFAULT_ROLE_PREFIX}_app`;
export let OPERATOR_ROLE = `${DEFAULT_ROLE_PREFIX}_operator`;

export function useRolePrefix(prefix: string): void {
  APP_ROLE = `${prefix}_app`;
  OPERATOR_ROLE = `${prefix}_operator`;
}

export async function ensureServiceRoles(db: Kysely<unknown>): Promise<void> {
  for (const role of [APP_ROLE, OPERATOR_ROLE]) {
    // Roles are cluster-wide, so several databases (or test runs) may race to create them.
    await sql
      .raw(`
      DO $$
      BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '${role}') THEN
          CREATE ROLE ${role} NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
        END IF;
      EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
      END $$;`)
      .execute(db);
    await sql.raw(`GRANT ${role} TO CURRENT_USER`).execute(db);
  }
  await sql.raw(`GRANT USAGE ON SCHEMA public TO ${APP_ROLE}, ${OPERATOR_ROLE}`).execute(db);
}

/**
 * Turns on row-level security for a tenant table: the app role sees only its practice's rows, the
 * operator role sees all, and no other role but the owner sees any. It is not forced on the owner, so
 * that the owner's pg_dump can read every table (docs/decisions/0100-row-level-security-not-forced-on-the-owner.md); the service never works as the
 * owner. Operators get full DML except on tables whose privileges say otherwise (the audit log stays
 * append-only).
 */
export async function enableTenantSecurity(
  db: Kysely<unknown>,
  table: string,
  options: { column?: string; privileges: string; operatorPrivileges?: string },
): Promise<void> {
  const column = options.column ?? 'practice_id';
  const operatorPrivileges =
    options.operatorPrivileges ??
    (table === 'audit_events' ? 'SELECT, INSERT' : 'SELECT, INSERT, UPDATE, DELETE');
  await runScript(
    db,
    `
    ALTER TABLE ${table} ENABLE ROW LEVEL SECURITY;
    CREATE POLICY ${table}_tenant ON ${table} TO ${APP_ROLE}
      USING (${column} = current_setting('app.practice_id', true))
      WITH CHECK (${column} = current_setting('app.practice_id', true));
    CREATE POLICY ${table}_operator ON ${table} TO ${OPERATOR_ROLE} USING (true) WITH CHECK (true);
    GRANT ${options.privileges} ON ${table} TO ${APP_ROLE};
    GRANT ${operatorPrivileges} ON ${table} TO ${OPERATOR_ROLE};
  `,
  );
}

/**
 * Runs a script of several statements one by one: the extended query protocol (used by both pg and
 * PGlite for parameterised queries) accepts a single statement. Statements end with a semicolon at
 * the end of a line; dollar-quoted bodies are kept whole.
 */
export async function runScript(db: Kysely<unknown>, script: string): Promise<void> {
  let current = '';
  for (const line of script.split('\n')) {
    current += `${line}\n`;
    const dollarQuotes = (current.match(/\$\$/g) ?? []).length;
    if (line.trimEnd().endsWith(';') && dollarQuotes % 2 === 0) {
      if (current.trim()) await sql.raw(current).execute(db);
      current = '';
    }
  }
  if (current.trim()) await sql.raw(current).execute(db);
}

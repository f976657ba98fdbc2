// Owns bringing a database to the latest schema with Kysely's migrator. Runs as the connection's own
// role (the schema owner), never as a service role.
import { type Kysely, sql } from 'kysely';
import { type MigrationResultSet, Migrator } from 'kysely/migration';
import { migrations } from '../../../migrations/index.ts';

/**
 * True when the database has run exactly this build's migrations: one statement, where the migrator
 * would first make sure of its tables and take its lock. Any doubt (no table yet) says false.
 */
async function alreadyLatest(kysely: Kysely<unknown>): Promise<boolean> {
  try {
    const { rows } = await sql<{ names: string[] }>`
      SELECT ARRAY(SELECT name FROM kysely_migration ORDER BY name) AS names`.execute(kysely);
    const ran = rows[0]?.names ?? [];
    const known = Object.keys(migrations).sort();
    return ran.length === known.length && ran.every((name, i) => name === known[i]);
  } catch {
    return false;
  }
}

/** The migrations the database has run that this build does not know (a newer build ran them). */
export async function unknownMigrations(kysely: Kysely<unknown>): Promise<string[]> {
  try {
    const { rows } = await sql<{ name: string }>`SELECT name FROM kysely_migration ORDER BY name`.execute(
      kysely,
    );
    return rows.map((r) => r.name).filter((name) => !(name in migrations));
  } catch {
    return [];
  }
}

/** Thrown when the schema is newer than this build: it must not run against it, nor migrate it. */
export class NewerSchemaError extends Error {}

/** A refusal (pure: the names in, the message out) that says what happened and how to roll back. */
export function newerSchemaMessage(unknown: string[]): string {
  return (
    `the database's schema is newer than this build: it has run migrations this build does not know ` +
    `(${unknown.join(', ')}). A newer build upgraded it; run that build. To go back to this one, restore ` +
    'the backup taken before the upgrade (README, Operating in production: upgrade and rollback).'
  );
}

/**
 * Checks, without migrating, that the database has run exactly this build's migrations: the start of a
 * process that does not migrate (MIGRATE_ON_START=false), as the service's own role. Throws a
 * NewerSchemaError for a newer schema, an Error naming the pending migrations otherwise.
 */
export async function requireCurrentSchema(read: Kysely<unknown>): Promise<void> {
  let ran: string[];
  try {
    const { rows } = await sql<{ name: string }>`SELECT name FROM kysely_migration ORDER BY name`.execute(
      read,
    );
    ran = rows.map((r) => r.name);
  } catch (error) {
    throw new Error(
      `cannot read which migrations the database has run (${error instanceof Error ? error.message : String(error)}): ` +
        'run `practice-billing migrate` with the schema owner’s URL (MIGRATION_DATABASE_URL) first, or set MIGRATE_ON_START=true',
      { cause: error },
    );
  }
  const unknown = ran.filter((name) => !(name in migrations));
  if (unknown.length > 0) throw new NewerSchemaError(newerSchemaMessage(unknown));
  const pending = Object.keys(migrations).filter((name) => !ran.includes(name));
  if (pending.length > 0) {
    throw new Error(
      `the database has migrations pending for this build (${pending.join(', ')}) and MIGRATE_ON_START is off: ` +
        'run `practice-billing migrate` with the schema owner’s URL (MIGRATION_DATABASE_URL), then start again',
    );
  }
}

export async function migrateToLatest(kysely: Kysely<unknown>): Promise<string[]> {
  if (await alreadyLatest(kysely)) return [];
  const unknown = await unknownMigrations(kysely);
  if (unknown.length > 0) throw new NewerSchemaError(newerSchemaMessage(unknown));
  const migrator = new Migrator({
    db: kysely,
    provider: { getMigrations: async () => migrations },
  });
  const result: MigrationResultSet = await migrator.migrateToLatest();
  if (result.error) {
    const failed = result.results?.find((r) => r.status === 'Error');
    const reason = result.error instanceof Error ? result.error.message : String(result.error);
    throw new Error(
      failed
        ? `Migration ${failed.migrationName} failed: ${reason}`
        : `The migrations could not start (as the role of MIGRATION_DATABASE_URL, else DATABASE_URL): ${reason}`,
      { cause: result.error },
    );
  }
  return (result.results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

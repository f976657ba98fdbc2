// A database as an older build left it: migrated up to, and not including, a given migration, so that
// a test can write rows in the schema that build had and see the newer migrations carry them.
import { Migrator } from 'kysely/migration';
import { migrations } from '../../migrations/index.ts';
import type { Database } from '../../src/platform/db/database.ts';

/** Runs every migration before `name` (the migrations' own order), and none from it on. */
export async function migrateUpToBefore(db: Database, name: string): Promise<void> {
  const names = Object.keys(migrations);
  const at = names.indexOf(name);
  if (at < 1) throw new Error(`no migration before ${name}`);
  const migrator = new Migrator({ db: db.kysely, provider: { getMigrations: async () => migrations } });
  const { error } = await migrator.migrateTo(names[at - 1]!);
  if (error) throw error;
}

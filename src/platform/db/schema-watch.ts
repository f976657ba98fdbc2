// Owns noticing, in a running process, that a newer build migrated the database under it: every so
// often the migrations the database has run are read, and once one is unknown to this build the
// process is told (once), so that it stops taking work and says so instead of failing every statement
// on the changed schema.
import type { Kysely } from 'kysely';
import type { Database } from './database.ts';
import { newerSchemaMessage, unknownMigrations } from './migrate.ts';
import { asOperator } from './transaction.ts';

export function watchSchema(
  db: Database,
  options: { everyMs: number; onNewer: (message: string) => void; onError?: (err: unknown) => void },
): () => void {
  let told = false;
  const timer = setInterval(() => {
    if (told) return;
    asOperator(db, (trx) => unknownMigrations(trx as unknown as Kysely<unknown>))
      .then((unknown) => {
        if (unknown.length === 0 || told) return;
        told = true;
        clearInterval(timer);
        options.onNewer(newerSchemaMessage(unknown));
      })
      .catch((err: unknown) => options.onError?.(err));
  }, options.everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

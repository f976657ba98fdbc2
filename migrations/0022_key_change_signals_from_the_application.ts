// The key-change NOTIFYs of migration 0012 move from triggers to the application: the transaction
// that writes a key, a client or a practice sends pg_notify('api_keys_changed', practice id) with its
// COMMIT (src/platform/key-changes.ts). A trigger runs where the row is stored, and on a distributed
// PostgreSQL (Citus) that is a worker node, whose notifications reach no listening process; the
// application's transaction runs on the node the processes are connected to. A change made by hand in
// SQL now tells no process: send the NOTIFY with it, or wait API_KEY_CACHE_SECONDS (docs/operator-guide.md,
// "Changing keys by hand"). Forward-only.
import type { Kysely } from 'kysely';
import { runScript } from './security.ts';

const TABLES = ['api_keys', 'clients', 'practices'];

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    ${TABLES.map(
      (table) => `
    DROP TRIGGER ${table}_signal_update ON ${table};
    DROP TRIGGER ${table}_signal_delete ON ${table};
    DROP TRIGGER ${table}_signal_truncate ON ${table};`,
    ).join('\n')}
    DROP FUNCTION signal_api_key_change();
  `,
  );
}

// Tells every listening process when a row the key look-up answers from (api_key_for_request,
// migration 0006) changes: a key, its client or its practice. Triggers pg_notify the channel
// api_keys_changed with the practice's id, and a process drops the keys it remembers of that practice
// (src/auth/key-cache.ts). A NOTIFY sent inside a transaction is delivered when it commits and never
// if it rolls back, so listeners hear of a change exactly when it becomes visible. Only the columns
// the look-up returns count (an UPDATE that leaves them as they were says nothing), so billing
// settings and names of clients change nothing; a TRUNCATE notifies '' (every practice). The function
// reads no table, so row-level security has nothing to guard here. Forward-only.
import type { Kysely } from 'kysely';
import { runScript } from './security.ts';

const KEY_COLUMNS = ['id', 'practice_id', 'client_id', 'secret_hash', 'expires_at', 'revoked_at'];
const CLIENT_COLUMNS = [
  'id',
  'practice_id',
  'permissions',
  'allowed_ips',
  'rate_limit_per_minute',
  'suspended_at',
];
const PRACTICE_COLUMNS = ['id', 'name', 'currency', 'timezone', 'integrations_enabled'];

function triggersOn(table: string, columns: string[]): string {
  const old = columns.map((c) => `OLD.${c}`).join(', ');
  const changed = columns.map((c) => `NEW.${c}`).join(', ');
  return `
    CREATE TRIGGER ${table}_signal_update AFTER UPDATE OF ${columns.join(', ')} ON ${table}
      FOR EACH ROW WHEN ((${old}) IS DISTINCT FROM (${changed}))
      EXECUTE FUNCTION signal_api_key_change();
    CREATE TRIGGER ${table}_signal_delete AFTER DELETE ON ${table}
      FOR EACH ROW EXECUTE FUNCTION signal_api_key_change();
    CREATE TRIGGER ${table}_signal_truncate AFTER TRUNCATE ON ${table}
      FOR EACH STATEMENT EXECUTE FUNCTION signal_api_key_change();`;
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    CREATE FUNCTION signal_api_key_change() RETURNS trigger LANGUAGE plpgsql
    SET search_path = pg_catalog, public
    AS $$
    DECLARE
      was text;
      now_is text;
    BEGIN
      IF TG_LEVEL = 'STATEMENT' THEN
        PERFORM pg_notify('api_keys_changed', '');
        RETURN NULL;
      END IF;
      IF TG_TABLE_NAME = 'practices' THEN
        was := OLD.id;
      ELSE
        was := OLD.practice_id;
      END IF;
      PERFORM pg_notify('api_keys_changed', was);
      IF TG_OP = 'UPDATE' THEN
        IF TG_TABLE_NAME = 'practices' THEN
          now_is := NEW.id;
        ELSE
          now_is := NEW.practice_id;
        END IF;
        IF now_is IS DISTINCT FROM was THEN
          PERFORM pg_notify('api_keys_changed', now_is);
        END IF;
      END IF;
      RETURN NULL;
    END
    $$;
    REVOKE ALL ON FUNCTION signal_api_key_change() FROM PUBLIC;
    ${triggersOn('api_keys', KEY_COLUMNS)}
    ${triggersOn('clients', CLIENT_COLUMNS)}
    ${triggersOn('practices', PRACTICE_COLUMNS)}
  `,
  );
}

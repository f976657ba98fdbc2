// Owns the signal that a row the key look-up answers from (a key, its client, its practice) changed:
// a NOTIFY on KEY_CHANGES_CHANNEL with the practice's id, on which every listening process drops the
// keys it remembers of that practice (src/auth/key-cache.ts). The writing transaction sends it, with
// its COMMIT (no round trip of its own): PostgreSQL delivers a NOTIFY when its transaction commits and
// never if it rolls back, so listeners hear of a change exactly when it becomes visible. It is sent by
// the application, not by a trigger: on a distributed PostgreSQL (Citus) a trigger fires on the node
// that holds the row, whose notifications no process listens to (docs/scale-out.md).
import { sql } from 'kysely';
import type { Trx } from './db/transaction.ts';
import { writeUnanswered } from './db/unanswered-writes.ts';

/** The channel of key changes; the payload is a practice's id, or '' for every practice. */
export const KEY_CHANGES_CHANNEL = 'api_keys_changed';

/** Tells every listening process, when trx commits, that practiceId's keys may have changed. */
export async function signalKeyChange(trx: Trx, practiceId: string): Promise<void> {
  await writeUnanswered(trx, sql`SELECT pg_notify(${KEY_CHANGES_CHANNEL}, ${practiceId})`);
}

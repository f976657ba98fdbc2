// The events list reads events in feed order: each event carries the stamp of the change feed,
// written in its transaction, and is listed by (stamp, id) within its practice. Events recorded
// before this migration are stamped now, in no particular order among themselves. Forward-only.
import type { Kysely } from 'kysely';
import { runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    ALTER TABLE events ADD COLUMN stamp timestamptz NOT NULL DEFAULT clock_timestamp();
    ALTER TABLE events ALTER COLUMN stamp DROP DEFAULT;
    CREATE INDEX events_feed ON events (practice_id, stamp, id);
  `,
  );
}

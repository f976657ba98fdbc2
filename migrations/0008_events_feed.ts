// The events list reads events in feed order: each event carries the change feed's stamp
// (src/platform/db/change-feed.ts), written in its transaction, and is listed by (stamp, seq) within
// its practice: the events of one transaction share its stamp and keep the order they were recorded
// in. Events recorded before this migration take their occurrence time as stamp; all of them have
// committed, so their order among themselves is free. Forward-only.
import type { Kysely } from 'kysely';
import { runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    ALTER TABLE events ADD COLUMN stamp timestamptz;
    -- The owner fills the existing rows itself: forced row-level security would hide them from it.
    ALTER TABLE events NO FORCE ROW LEVEL SECURITY;
    UPDATE events SET stamp = occurred_at;
    ALTER TABLE events FORCE ROW LEVEL SECURITY;
    ALTER TABLE events ALTER COLUMN stamp SET NOT NULL;
    CREATE INDEX events_feed ON events (practice_id, stamp, seq);
  `,
  );
}

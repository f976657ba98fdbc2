// The change feed's high-water mark in one statement (src/platform/db/change-feed.ts, docs/decisions/0061-change-feeds.md
// "Change feeds"): change_feed_horizon() reads the clock, then every transaction id still running in
// this database with the time its transaction started, and answers the clock and the mark: the latest
// time before which no running transaction can have stamped a change. It is SECURITY DEFINER because pg_stat_activity shows
// a backend's xact_start only to a role with the privileges of the backend's login (or
// pg_read_all_stats), and the service's roles have neither; it reads nothing else of those backends.
// PGlite never calls it (one transaction runs at a time there). Forward-only.
import type { Kysely } from 'kysely';
import { APP_ROLE, OPERATOR_ROLE, runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    CREATE FUNCTION change_feed_horizon(OUT clock timestamptz, OUT mark timestamptz)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $$
    DECLARE
      t timestamptz;
      h timestamptz;
      xmin8 bigint;
      oldest_start timestamptz;
      oldest_unknown bigint;
      sample timestamptz;
    BEGIN
      -- The argument needs each statement's own snapshot: a reader's list must see what ended before it.
      IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'change_feed_horizon() needs READ COMMITTED, not %', current_setting('transaction_isolation');
      END IF;
      -- The clock first: every statement below runs after it.
      t := clock_timestamp();
      -- Backend activity is otherwise read once per transaction and kept.
      PERFORM pg_stat_clear_snapshot();
      -- Every running transaction id x lies in [xmin, next id), less than 2^31 wide: x's 64-bit value is
      -- xmin plus x's 32-bit distance above it.
      xmin8 := pg_snapshot_xmin(pg_current_snapshot())::text::bigint;
      SELECT
        min(a.xact_start) FILTER (WHERE a.trusted),
        min(xmin8 + ((a.backend_xid::text::bigint - xmin8 % 4294967296 + 4294967296) % 4294967296))
          FILTER (WHERE NOT a.trusted)
      INTO oldest_start, oldest_unknown
      FROM (
        SELECT s.backend_xid, s.xact_start,
          -- A backend whose activity this role may read and that reports it (its state is 'disabled'
          -- where track_activities is off): a null xact_start then means it was between transactions
          -- when read, so its transaction began after the clock.
          coalesce(pg_has_role(s.usesysid, 'USAGE') OR pg_has_role('pg_read_all_stats', 'USAGE'), false)
            AND s.state IS NOT NULL AND s.state <> 'disabled' AS trusted
        FROM pg_stat_activity s
        -- Only client connections stamp changes; autovacuum and the like never do.
        WHERE s.backend_type = 'client backend'
          AND s.backend_xid IS NOT NULL
          AND s.pid <> pg_backend_pid()
          AND s.datid = (SELECT d.oid FROM pg_database d WHERE d.datname = current_database())
      ) a;
      h := least(t, oldest_start);
      IF oldest_unknown IS NOT NULL THEN
        -- A running transaction whose start cannot be read: the newest stored sample (clock, then the
        -- sampler's own id) below it, or the epoch, which reads nothing and skips nothing.
        SELECT max(c.sampled_at) INTO sample FROM public.change_feed_samples c
        WHERE c.next_xid::text::bigint <= oldest_unknown;
        h := least(h, coalesce(sample, 'epoch'::timestamptz));
      END IF;
      clock := date_trunc('milliseconds', t);
      mark := date_trunc('milliseconds', h);
    END $$;
    -- Samples stored before this migration hold the snapshot's xmax, which a running id can exceed;
    -- the worker stores a sound one within a second.
    DELETE FROM change_feed_samples;
    REVOKE ALL ON FUNCTION change_feed_horizon() FROM PUBLIC;
    GRANT EXECUTE ON FUNCTION change_feed_horizon() TO ${APP_ROLE}, ${OPERATOR_ROLE};
  `,
  );
}

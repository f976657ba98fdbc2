// The change feed's clock samples: each row is a time taken first and then the first transaction id not
// yet handed out, so every transaction stamped before that time has a smaller id. A feed reader finds
// the newest sample whose id lies below its snapshot's xmin and reads only changes stamped before that
// time (src/platform/db/change-feed.ts). Holds no practice data, so it has no row-level security.
// Also lets a bill name its invoice's number in the issued notification written before the number.
// Forward-only.
import type { Kysely } from 'kysely';
import { APP_ROLE, OPERATOR_ROLE, runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    CREATE TABLE change_feed_samples (
      sampled_at timestamptz NOT NULL,
      next_xid xid8 NOT NULL
    );
    CREATE INDEX change_feed_samples_sampled_at ON change_feed_samples (sampled_at);
    GRANT SELECT, INSERT, DELETE ON change_feed_samples TO ${APP_ROLE}, ${OPERATOR_ROLE};
    -- A bill that issues writes the patient's notification before the invoice has its number, which is
    -- given last (src/invoices/store.ts assignInvoiceNumber) and then written into the message.
    GRANT UPDATE (message) ON notifications TO ${APP_ROLE};
  `,
  );
}

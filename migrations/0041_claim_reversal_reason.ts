// The reason given when a claim's reversal was asked for, readable on the claim (`reversalReason`) as
// it is in the request's audit row. Null when none was given. Forward-only.
import type { Kysely } from 'kysely';
import { runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `ALTER TABLE claims ADD COLUMN reversal_reason text CHECK (length(reversal_reason) BETWEEN 1 AND 500);`,
  );
}

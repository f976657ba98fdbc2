// A patient whose records are kept for their lifetime (HPCSA Booklet 9 s9.3.2: a mentally incompetent
// patient): the practice marks them, and the retention rule then never ends their records' retention.
// Forward-only.
import type { Kysely } from 'kysely';
import { runScript } from './security.ts';

export async function up(db: Kysely<unknown>): Promise<void> {
  await runScript(
    db,
    `
    ALTER TABLE patients ADD COLUMN retained_for_life boolean NOT NULL DEFAULT false;
  `,
  );
}

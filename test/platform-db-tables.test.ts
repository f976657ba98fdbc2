// The table types are generated, never kept by hand: the committed src/platform/db/tables.ts must
// equal what `npm run db:types` makes from a freshly migrated embedded database today, and a
// PostgreSQL database migrated the same way must give the same types.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';
import type { Kysely } from 'kysely';
import { generateTables, TABLES_FILE, tablesOf } from '../scripts/db-types.ts';
import { openPostgres } from '../src/platform/db/database.ts';
import { describeEachBackend, postgresDatabase } from './harness.ts';

function assertCurrent(generated: string, advice: string): void {
  const committed = fs.readFileSync(TABLES_FILE, 'utf8');
  if (generated === committed) return;
  const generatedLines = generated.split('\n');
  const committedLines = committed.split('\n');
  const at = generatedLines.findIndex((line, i) => line !== committedLines[i]);
  assert.fail(
    `${advice}\nFirst difference, line ${at + 1}:\n` +
      `  committed: ${committedLines[at] ?? '(end of file)'}\n  generated: ${generatedLines[at] ?? '(end of file)'}`,
  );
}

describeEachBackend('table types', (backend) => {
  if (backend === 'pglite') {
    test('the committed src/platform/db/tables.ts matches the migrated schema (npm run db:types)', async () => {
      assertCurrent(
        await generateTables(),
        'src/platform/db/tables.ts is stale: run `npm run db:types` after changing a migration or what scripts/db-types.ts says about a column.',
      );
    });
  } else {
    test('a PostgreSQL database migrated the same way gives the same types', async () => {
      const { url, drop } = await postgresDatabase();
      const db = openPostgres({ url, poolSize: 1, statementTimeoutMs: 60_000 });
      try {
        assertCurrent(
          await tablesOf(db.kysely as unknown as Kysely<unknown>),
          'PostgreSQL types the migrated schema differently from the embedded database that `npm run db:types` reads.',
        );
      } finally {
        await db.close();
        await drop();
      }
    });
  }
});

// The start-up check that PostgreSQL keeps the service's tables analysed and vacuumed: a table whose
// own storage parameter turns autovacuum off is named, and the warning an operator reads at start
// names the server's setting or those tables, and is absent when autovacuum covers everything.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { autovacuumCoverage, autovacuumWarning } from '../src/platform/db/autovacuum.ts';
import { openPostgres } from '../src/platform/db/database.ts';
import { backends, startService, type TestService } from './harness.ts';

describe('the autovacuum warning', () => {
  test('names the server setting when autovacuum is off on the server', () => {
    const warning = autovacuumWarning({ serverOn: false, tablesOff: [] });
    assert.match(warning ?? '', /^PostgreSQL runs with autovacuum off: /);
    assert.match(warning ?? '', /ANALYZE and VACUUM them on a schedule/);
  });
  test('names the tables that turn it off for themselves', () => {
    assert.match(
      autovacuumWarning({ serverOn: true, tablesOff: ['events', 'jobs'] }) ?? '',
      /^autovacuum is turned off for the tables events, jobs: /,
    );
  });
  test('is absent when autovacuum covers every table', () => {
    assert.equal(autovacuumWarning({ serverOn: true, tablesOff: [] }), undefined);
  });
});

for (const backend of backends().filter((b) => b === 'postgres')) {
  describe(`autovacuum coverage of the service's tables (${backend})`, () => {
    let svc: TestService;
    before(async () => {
      svc = await startService(backend);
    });
    after(async () => {
      await svc.close();
    });

    test('a table whose storage parameter turns autovacuum off is named until it is turned on again', async () => {
      const db = openPostgres({ url: svc.databaseUrl!, poolSize: 1, statementTimeoutMs: 15_000 });
      try {
        const server = await sql<{
          setting: string;
        }>`SELECT current_setting('autovacuum') AS setting`.execute(db.kysely);
        const before = await autovacuumCoverage(db.kysely);
        assert.equal(before.serverOn, server.rows[0]?.setting === 'on');
        assert.deepEqual(before.tablesOff, []);
        await sql`ALTER TABLE jobs SET (autovacuum_enabled = false)`.execute(db.kysely);
        assert.deepEqual((await autovacuumCoverage(db.kysely)).tablesOff, ['jobs']);
        await sql`ALTER TABLE jobs SET (autovacuum_enabled = true)`.execute(db.kysely);
        assert.deepEqual((await autovacuumCoverage(db.kysely)).tablesOff, []);
      } finally {
        await db.close();
      }
    });
  });
}

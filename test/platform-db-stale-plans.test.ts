// A connection whose prepared statement a schema change made stale ("cached plan must not change result
// type": a migration added a column under a running process) is closed rather than pooled again, so
// the statement fails once and then runs on a new connection, instead of failing on every use.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { openPostgres } from '../src/platform/db/database.ts';
import { emptyPostgresDatabase } from './harness.ts';

describe('stale cached plans (postgres)', {
  skip: process.env.DATABASE_URL ? false : 'needs DATABASE_URL',
}, () => {
  let drop: (() => Promise<void>) | undefined;
  after(async () => {
    await drop?.();
  });

  test('after a column is added, a prepared statement fails once, then runs again', async () => {
    const database = await emptyPostgresDatabase('pb_stale');
    drop = database.drop;
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    await admin.query('CREATE TABLE readings (id int PRIMARY KEY, value int)');
    await admin.query('INSERT INTO readings VALUES (1, 10)');
    // One connection, prepared statements on: the process's statement is planned once and kept.
    const db = openPostgres({
      url: database.url,
      poolSize: 1,
      statementTimeoutMs: 10_000,
      preparedStatements: true,
    });
    const read = () => sql<{ id: number }>`SELECT * FROM readings WHERE id = ${1}`.execute(db.kysely);
    try {
      assert.equal((await read()).rows.length, 1);
      assert.equal((await read()).rows.length, 1);
      await admin.query('ALTER TABLE readings ADD COLUMN unit text');
      const outcomes: string[] = [];
      for (let i = 0; i < 3; i++) {
        outcomes.push(
          await read().then(
            (r) => `rows ${r.rows.length}`,
            (e: Error) => e.message,
          ),
        );
      }
      assert.ok(
        outcomes.slice(1).every((o) => o === 'rows 1'),
        `after the first, every read succeeds: ${outcomes.join('; ')}`,
      );
    } finally {
      await db.close();
      await admin.end();
    }
  });
});

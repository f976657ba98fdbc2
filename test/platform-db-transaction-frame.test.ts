// The transaction frame on both databases: the role and the practice are set before the work's first
// statement, and a transaction that failed inside is never reported as committed (PostgreSQL answers
// its COMMIT with ROLLBACK, which the service turns into an error).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { asOperator, inPractice } from '../src/platform/db/transaction.ts';
import { describeEachBackend, startService, type TestService } from './harness.ts';

describeEachBackend('transaction frame', (backend) => {
  let svc: TestService;
  before(async () => {
    svc = await startService(backend);
  });
  after(async () => {
    await svc.close();
  });

  test('the first statement already runs as the practice, under the app role', async () => {
    const practice = await svc.newPractice();
    const seen = await inPractice(svc.db, practice.practiceId, async (trx) => {
      const { rows } = await sql<{ role: string; practice: string; patients: number }>`
        SELECT current_user AS role, current_setting('app.practice_id') AS practice,
               (SELECT count(*) FROM patients)::int AS patients`.execute(trx);
      return rows[0]!;
    });
    assert.deepEqual(seen, { role: 'practice_billing_app', practice: practice.practiceId, patients: 0 });
    const operator = await asOperator(
      svc.db,
      async (trx) => (await sql<{ role: string }>`SELECT current_user AS role`.execute(trx)).rows[0]!.role,
    );
    assert.equal(operator, 'practice_billing_operator');
  });

  test('a parameterised statement is prepared once per connection and then only executed', {
    skip: backend === 'pglite' ? 'PGlite runs in process: there is no round trip to save' : false,
  }, async () => {
    const practice = await svc.newPractice();
    const read = (trx: Parameters<Parameters<typeof inPractice>[2]>[0]) =>
      sql<{
        n: number;
      }>`SELECT count(*)::int AS n FROM patients WHERE practice_id = ${practice.practiceId}`.execute(trx);
    const prepared = await inPractice(svc.db, practice.practiceId, async (trx) => {
      await read(trx);
      await read(trx);
      const { rows } = await sql<{ name: string; statement: string }>`
        SELECT name, statement FROM pg_prepared_statements
        WHERE statement LIKE 'SELECT count(*)::int AS n FROM patients%'`.execute(trx);
      return rows;
    });
    assert.equal(prepared.length, 1, 'one named statement for the text, however often it ran');
    assert.match(prepared[0]!.name, /^pb_/);
  });

  test('a transaction whose statement failed is not reported as committed', {
    skip: backend === 'pglite',
  }, async () => {
    const practice = await svc.newPractice();
    await assert.rejects(
      inPractice(svc.db, practice.practiceId, async (trx) => {
        await sql`SELECT 1 / 0`.execute(trx).catch(() => undefined);
        return 'done';
      }),
      /ROLLBACK/,
    );
  });
});

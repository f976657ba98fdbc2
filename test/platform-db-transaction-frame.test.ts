// The transaction frame on both databases: the role and the practice are set before the work's first
// statement, and a transaction that failed inside is never reported as committed (PostgreSQL answers
// its COMMIT with ROLLBACK, which the service turns into an error). A request's last writes (its audit
// row, an Idempotency-Key's answer) are sent with the COMMIT as literals: any text arrives exactly, a
// statement that follows still sees them, and when one fails nothing of the transaction is kept.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { type AuditEntry, AuditLog, AuditUnavailableError } from '../src/platform/audit-log.ts';
import { sentWithCommit } from '../src/platform/db/sent-with-commit.ts';
import { asOperator, inPractice, type Trx } from '../src/platform/db/transaction.ts';
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

  const entryFor = (practiceId: string, requestId: string, route: string): AuditEntry => ({
    practiceId,
    actor: 'client',
    clientId: null,
    keyId: null,
    performerId: null,
    sourceIp: '127.0.0.1',
    method: 'GET',
    route,
    status: 200,
    outcome: 'succeeded',
    reason: null,
    resourceType: null,
    resourceId: null,
    patientId: null,
    requestId,
    idempotencyKey: null,
  });
  const routesOf = async (trx: Trx, requestId: string) =>
    (
      await sql<{ route: string }>`SELECT route FROM audit_events WHERE request_id = ${requestId}`.execute(
        trx,
      )
    ).rows.map((row) => row.route);

  test('a row sent with the COMMIT keeps any text exactly, and a later statement sees it', async () => {
    const practice = await svc.newPractice();
    const awkward = "it's \\' \\x41 \\\\ E'\\n' $$ -- /* ; COMMIT; */ Zoë 🩺 \n\t end\\";
    const audit = new AuditLog();
    const seenInside = await inPractice(svc.db, practice.practiceId, async (trx) => {
      await audit.write(trx, entryFor(practice.practiceId, 'req_held_1', awkward));
      return routesOf(trx, 'req_held_1');
    });
    assert.deepEqual(seenInside, [awkward]);
    await inPractice(svc.db, practice.practiceId, (trx) =>
      audit.write(trx, entryFor(practice.practiceId, 'req_held_2', awkward)),
    );
    const stored = await inPractice(svc.db, practice.practiceId, (trx) => routesOf(trx, 'req_held_2'));
    assert.deepEqual(stored, [awkward]);
  });

  test('text with a NUL is refused by the database, as ever, and nothing is written', async () => {
    const practice = await svc.newPractice();
    await assert.rejects(
      inPractice(svc.db, practice.practiceId, (trx) =>
        new AuditLog().write(trx, entryFor(practice.practiceId, 'req_nul', 'a\0b')),
      ),
      AuditUnavailableError,
    );
    assert.deepEqual(await inPractice(svc.db, practice.practiceId, (trx) => routesOf(trx, 'req_nul')), []);
  });

  test('when a row sent with the COMMIT fails, the COMMIT fails with its error and nothing is kept', async () => {
    const practice = await svc.newPractice();
    const other = await svc.newPractice();
    await assert.rejects(
      inPractice(svc.db, practice.practiceId, async (trx) => {
        await new AuditLog().write(trx, entryFor(practice.practiceId, 'req_kept_not', '/first'));
        // Another practice's row: the row-level security policy refuses it.
        await sql`INSERT INTO audit_events (practice_id, actor, method, route, status, outcome, request_id)
          VALUES (${sql.lit(other.practiceId)}, 'client', 'GET', '/second', 200, 'succeeded', 'req_kept_not')
          ${sentWithCommit}`.execute(trx);
        return 'done';
      }),
      /row-level security/,
    );
    assert.deepEqual(
      await inPractice(svc.db, practice.practiceId, (trx) => routesOf(trx, 'req_kept_not')),
      [],
    );
  });
});

// The transaction frame on both databases: the role and the practice are set before the work's first
// statement, and a transaction that failed inside is never reported as committed (PostgreSQL answers
// its COMMIT with ROLLBACK, which the service turns into an error). A request's last writes (its audit
// row, an Idempotency-Key's answer) are sent with the COMMIT as literals: any text arrives exactly, a
// statement that follows still sees them, and when one fails nothing of the transaction is kept.
// On PostgreSQL, BEGIN and the held rows go out only when the client runs no other query: pg is never
// asked to queue one query behind another (deprecated in pg 8, with a warning, and gone in pg 9).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import pg from 'pg';
import { type AuditEntry, AuditLog, AuditUnavailableError } from '../src/platform/audit-log.ts';
import { openPostgres } from '../src/platform/db/database.ts';
import { withQueryOptions } from '../src/platform/db/query-options.ts';
import { sendWithCommit } from '../src/platform/db/sent-with-commit.ts';
import { asOperator, inPractice, type Trx } from '../src/platform/db/transaction.ts';
import { describeEachBackend, startService, type TestService } from './harness.ts';

/**
 * pg's warning when a query is asked of a client whose queue already holds one behind the running
 * query. It comes once per process, and not for a single query waiting, so every pg client's query is
 * also watched here: installed before any service starts, so the pool's clients (whose query
 * src/platform/db/database.ts wraps on connect) call this one.
 */
const QUEUED_BEHIND_ANOTHER = /already executing a query/;
const queuedWarnings: string[] = [];
process.on('warning', (warning) => {
  if (QUEUED_BEHIND_ANOTHER.test(warning.message)) queuedWarnings.push(warning.stack ?? warning.message);
});
/** Queries asked of a pg client while one it was asked before was still unanswered. */
const askedWhileBusy: string[] = [];
const unanswered = new WeakMap<object, number>();
const pgQuery = pg.Client.prototype.query as (...args: unknown[]) => unknown;
(pg.Client.prototype as unknown as { query: typeof pgQuery }).query = function (
  this: object,
  ...args: unknown[]
) {
  const [config] = args;
  const running = unanswered.get(this) ?? 0;
  if (running > 0)
    askedWhileBusy.push(typeof config === 'string' ? config : String((config as { text?: string }).text));
  const answer = pgQuery.apply(this, args);
  if (answer instanceof Promise) {
    unanswered.set(this, running + 1);
    const done = () => unanswered.set(this, (unanswered.get(this) ?? 1) - 1);
    answer.then(done, done);
  }
  return answer;
};

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

  test('the practice, written as a literal, arrives whole whatever its text, and ends with the transaction', async () => {
    const awkward = `prac_'; SET LOCAL ROLE postgres; --\\`;
    const seen = await inPractice(svc.db, awkward, async (trx) => {
      const { rows } = await sql<{ practice: string; role: string }>`
        SELECT current_setting('app.practice_id') AS practice, current_user AS role`.execute(trx);
      return rows[0]!;
    });
    assert.deepEqual(seen, { practice: awkward, role: 'practice_billing_app' });
    const after = await sql<{ practice: string | null }>`
      SELECT nullif(current_setting('app.practice_id', true), '') AS practice`.execute(svc.db.kysely);
    assert.equal(after.rows[0]!.practice, null, 'transaction-local: gone after the commit');
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

  test('a transaction asked for generic plans plans its prepared statements once, for any values; others plan as PostgreSQL chooses', async () => {
    const practice = await svc.newPractice();
    const mode = (trx: Trx) =>
      sql<{ mode: string }>`SELECT current_setting('plan_cache_mode') AS mode`
        .execute(trx)
        .then(({ rows }) => rows[0]!.mode);
    assert.equal(
      await inPractice(svc.db, practice.practiceId, mode, { genericPlans: true }),
      'force_generic_plan',
    );
    assert.equal(await asOperator(svc.db, mode, { genericPlans: true }), 'force_generic_plan');
    assert.equal(await inPractice(svc.db, practice.practiceId, mode), 'auto', 'a transaction not asking');
    assert.equal(await asOperator(svc.db, mode), 'auto');
    if (backend === 'pglite') return;
    // A statement prepared in such a transaction runs its generic plan from the first run on.
    const plans = await inPractice(
      svc.db,
      practice.practiceId,
      async (trx) => {
        for (let i = 0; i < 3; i += 1)
          await sql`SELECT id FROM patients WHERE practice_id = ${practice.practiceId} AND id = ${`pat_${i}`}`.execute(
            trx,
          );
        const { rows } = await sql<{ generic: number; custom: number }>`
          SELECT generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements
          WHERE statement LIKE 'SELECT id FROM patients WHERE practice_id%'`.execute(trx);
        return rows;
      },
      { genericPlans: true },
    );
    assert.deepEqual(plans, [{ generic: 3, custom: 0 }]);
  });

  test('a statement run with prepared: false is sent unnamed, and none of its text is prepared', {
    skip: backend === 'pglite' ? 'PGlite runs in process: there is no round trip to save' : false,
  }, async () => {
    const practice = await svc.newPractice();
    const prepared = await inPractice(svc.db, practice.practiceId, async (trx) => {
      const read = sql<{ n: number }>`
        SELECT count(*)::int AS n FROM invoices WHERE practice_id = ${practice.practiceId}`;
      const { rows } = await trx.executeQuery(withQueryOptions(read.compile(trx), { prepared: false }));
      assert.deepEqual(rows, [{ n: 0 }]);
      return (
        await sql<{ name: string }>`
          SELECT name FROM pg_prepared_statements
          WHERE statement LIKE '%SELECT count(*)::int AS n FROM invoices%'`.execute(trx)
      ).rows;
    });
    assert.deepEqual(prepared, []);
  });

  test('with prepared statements off (a pooler), a statement that asks to be prepared runs unnamed', {
    skip: backend === 'pglite' ? 'PGlite runs in process: there is no round trip to save' : false,
  }, async () => {
    const practice = await svc.newPractice();
    const pooled = openPostgres({ url: svc.databaseUrl!, poolSize: 1, statementTimeoutMs: 15_000 });
    try {
      const prepared = await inPractice(pooled, practice.practiceId, async (trx) => {
        const read = sql<{ n: number }>`
          SELECT count(*)::int AS n FROM claims WHERE practice_id = ${practice.practiceId}`;
        const { rows } = await trx.executeQuery(withQueryOptions(read.compile(trx), { prepared: true }));
        assert.deepEqual(rows, [{ n: 0 }]);
        return (await sql<{ name: string }>`SELECT name FROM pg_prepared_statements`.execute(trx)).rows;
      });
      assert.deepEqual(prepared, []);
    } finally {
      await pooled.close();
    }
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
        await sendWithCommit(
          trx,
          sql`INSERT INTO audit_events (practice_id, actor, method, route, status, outcome, request_id)
          VALUES (${other.practiceId}, 'client', 'GET', '/second', 200, 'succeeded', 'req_kept_not')`,
        );
        return 'done';
      }),
      /row-level security/,
    );
    assert.deepEqual(
      await inPractice(svc.db, practice.practiceId, (trx) => routesOf(trx, 'req_kept_not')),
      [],
    );
  });

  test("a statement after a row held for the COMMIT fails with that row's error, and nothing is kept", async () => {
    const practice = await svc.newPractice();
    const other = await svc.newPractice();
    let reached = false;
    await assert.rejects(
      inPractice(svc.db, practice.practiceId, async (trx) => {
        await new AuditLog().write(trx, entryFor(practice.practiceId, 'req_after_held', '/first'));
        await sendWithCommit(
          trx,
          sql`INSERT INTO audit_events (practice_id, actor, method, route, status, outcome, request_id)
          VALUES (${other.practiceId}, 'client', 'GET', '/second', 200, 'succeeded', 'req_after_held')`,
        );
        await routesOf(trx, 'req_after_held');
        reached = true;
        return 'done';
      }),
      /row-level security/,
    );
    assert.equal(reached, false, 'the statement after the failed row failed too');
    assert.deepEqual(
      await inPractice(svc.db, practice.practiceId, (trx) => routesOf(trx, 'req_after_held')),
      [],
    );
  });

  test('a first statement with parameters runs inside the transaction, after its BEGIN', async () => {
    const seen = await svc.db.kysely.transaction().execute(async (trx) => {
      await sql`SELECT set_config('app.probe', ${'inside'}, true)`.execute(trx);
      return (await sql<{ probe: string }>`SELECT current_setting('app.probe', true) AS probe`.execute(trx))
        .rows[0]!.probe;
    });
    assert.equal(seen, 'inside', 'a transaction-local setting outlives its statement');
    await assert.rejects(
      svc.db.kysely.transaction().execute((trx) => sql`SELECT 1 / ${0}::int`.execute(trx)),
      /division by zero/,
    );
    const after = await svc.db.kysely
      .transaction()
      .execute(
        async (trx) => (await sql<{ one: number }>`SELECT ${1}::int AS one`.execute(trx)).rows[0]!.one,
      );
    assert.equal(after, 1, 'the connection serves the next transaction');
  });

  test('pg is never asked for a query while another runs on the same client', {
    skip: backend === 'pglite' ? 'PGlite has no pg client' : false,
  }, async () => {
    // Every way a held statement goes out before the next: BEGIN before a first statement with
    // parameters, and one or two rows held for the COMMIT before a statement that is not the COMMIT.
    const practice = await svc.newPractice();
    await svc.db.kysely
      .transaction()
      .execute((trx) => sql`SELECT set_config('app.probe', ${'inside'}, true)`.execute(trx));
    for (const rows of [['/one'], ['/one', '/two']]) {
      const requestId = `req_queue_${rows.length}`;
      const seen = await inPractice(svc.db, practice.practiceId, async (trx) => {
        for (const route of rows)
          await new AuditLog().write(trx, entryFor(practice.practiceId, requestId, route));
        return routesOf(trx, requestId);
      });
      assert.deepEqual(seen.sort(), rows);
    }
    // pg emits its warning on the next tick.
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(askedWhileBusy, [], 'no query was asked for while another ran, in this file');
    assert.deepEqual(queuedWarnings, [], 'pg warned of no query queued behind another, in this file');
  });
});

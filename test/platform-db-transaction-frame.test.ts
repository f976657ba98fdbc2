// The transaction frame on both databases: the role and the practice are set before the work's first
// statement, and a transaction that failed inside is never reported as committed (PostgreSQL answers
// its COMMIT with ROLLBACK, which the service turns into an error). A request's last writes (its audit
// row, an Idempotency-Key's answer) are deferred with their parameters to go with the COMMIT: any text
// arrives exactly, a statement that follows still sees them, and when one fails the statement behind
// it fails with its error and nothing of the transaction is kept, on both databases alike. On
// PostgreSQL, what is deferred (BEGIN, the frame, rows for the COMMIT) leaves in the same write as the
// statement behind it: one round trip, answered in order.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { sql } from 'kysely';
import { type AuditEntry, AuditLog, AuditUnavailableError } from '../src/platform/audit-log.ts';
import { stampChange } from '../src/platform/db/change-feed.ts';
import { openPostgres } from '../src/platform/db/database.ts';
import { withQueryOptions } from '../src/platform/db/query-options.ts';
import { asOperator, inPractice, inPracticeHolding, type Trx } from '../src/platform/db/transaction.ts';
import { writeUnanswered } from '../src/platform/db/unanswered-writes.ts';
import { describeEachBackend, startService, type TestService } from './harness.ts';

/** pg's warning when a query is queued behind a running one outside pipeline mode. */
const QUEUED_BEHIND_ANOTHER = /already executing a query/;
const queuedWarnings: string[] = [];
process.on('warning', (warning) => {
  if (QUEUED_BEHIND_ANOTHER.test(warning.message)) queuedWarnings.push(warning.stack ?? warning.message);
});

/** Runs fn while counting the writes each TCP socket of this process makes, by its local port. */
async function countingWrites<T>(
  fn: () => Promise<T>,
): Promise<{ result: T; writesFrom: (port: number) => number }> {
  const writes = new Map<number, number>();
  const socket = net.Socket.prototype as unknown as Record<
    '_write' | '_writev',
    (...args: unknown[]) => unknown
  >;
  const originals = { _write: socket._write, _writev: socket._writev };
  for (const method of ['_write', '_writev'] as const) {
    const original = originals[method];
    socket[method] = function (this: net.Socket, ...args: unknown[]) {
      const port = this.localPort ?? 0;
      writes.set(port, (writes.get(port) ?? 0) + 1);
      return original.apply(this, args);
    };
  }
  try {
    const result = await fn();
    return { result, writesFrom: (port) => writes.get(port) ?? 0 };
  } finally {
    socket._write = originals._write;
    socket._writev = originals._writev;
  }
}

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

  test('the practice is set for the transaction only; a value the service did not make is refused before the work runs', async () => {
    const practice = await svc.newPractice();
    const seen = await inPractice(svc.db, practice.practiceId, async (trx) => {
      const { rows } = await sql<{ practice: string; role: string }>`
        SELECT current_setting('app.practice_id') AS practice, current_user AS role`.execute(trx);
      return rows[0]!;
    });
    assert.deepEqual(seen, { practice: practice.practiceId, role: 'practice_billing_app' });
    const after = await sql<{ practice: string | null }>`
      SELECT nullif(current_setting('app.practice_id', true), '') AS practice`.execute(svc.db.kysely);
    assert.equal(after.rows[0]!.practice, null, 'transaction-local: gone after the commit');
    // SET LOCAL takes no parameters: its literals are only values the service made, checked first.
    let ran = false;
    await assert.rejects(
      inPractice(svc.db, `prac_'; SET LOCAL ROLE postgres; --\\`, async () => {
        ran = true;
      }),
      /not a practiceId the service made/,
    );
    assert.equal(ran, false, 'the work never ran');
  });

  test('a parameterised statement is prepared once per connection and then only executed', {
    skip: backend === 'pglite' ? 'PGlite, in process, names no statement' : false,
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
    skip: backend === 'pglite' ? 'PGlite, in process, names no statement' : false,
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
    skip: backend === 'pglite' ? 'PGlite, in process, has no pooler' : false,
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

  test('a transaction whose statement failed is not reported as committed', async () => {
    const practice = await svc.newPractice();
    await assert.rejects(
      inPractice(svc.db, practice.practiceId, async (trx) => {
        await sql`SELECT 1 / 0`.execute(trx).catch(() => undefined);
        return 'done';
      }),
      /ROLLBACK|aborted/,
    );
  });

  /** A transaction with a parameterised statement runs, in the practice, under the app role. */
  const assertNextTransactionServed = async (practiceId: string) => {
    const role = await inPractice(
      svc.db,
      practiceId,
      async (trx) =>
        (await sql<{ role: string }>`SELECT current_user AS role, ${1}::int AS one`.execute(trx)).rows[0]!
          .role,
    );
    assert.equal(role, 'practice_billing_app', 'the connection serves the next transaction');
  };

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

  test('a deferred row keeps any text exactly, and a later statement sees it', async () => {
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

  test('when a deferred row fails, the COMMIT fails with its error and nothing is kept', async () => {
    const practice = await svc.newPractice();
    const other = await svc.newPractice();
    await assert.rejects(
      inPractice(svc.db, practice.practiceId, async (trx) => {
        await new AuditLog().write(trx, entryFor(practice.practiceId, 'req_kept_not', '/first'));
        // Another practice's row: the row-level security policy refuses it.
        await writeUnanswered(
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

  test("a statement after a deferred row fails with that row's error, and nothing is kept", async () => {
    const practice = await svc.newPractice();
    const other = await svc.newPractice();
    let reached = false;
    await assert.rejects(
      inPractice(svc.db, practice.practiceId, async (trx) => {
        await new AuditLog().write(trx, entryFor(practice.practiceId, 'req_after_held', '/first'));
        await writeUnanswered(
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

  test('deferred statements leave in one write with the statement behind it, parameters or not, answered in order', async () => {
    const practice = await svc.newPractice();
    const requestId = 'req_pipelined';
    const { result, writesFrom } = await countingWrites(() =>
      inPractice(svc.db, practice.practiceId, async (trx) => {
        // BEGIN and the frame, held, with a first statement that has parameters: one write.
        const first = await sql<{ port: number; practice: string; role: string; probe: string }>`
          SELECT inet_client_port() AS port, current_setting('app.practice_id') AS practice,
                 current_user AS role, ${'probe'}::text AS probe`.execute(trx);
        // A row held for the COMMIT, then a read with parameters that must see it: one write.
        await new AuditLog().write(trx, entryFor(practice.practiceId, requestId, '/pipelined'));
        const seen = await routesOf(trx, requestId);
        // Two held rows before a read without parameters: joined in one message, one write.
        await new AuditLog().write(trx, entryFor(practice.practiceId, requestId, '/joined-1'));
        await new AuditLog().write(trx, entryFor(practice.practiceId, requestId, '/joined-2'));
        const { rows } = await sql<{ n: number }>`
          SELECT count(*)::int AS n FROM audit_events WHERE request_id = 'req_pipelined'`.execute(trx);
        // A row held for the COMMIT: the COMMIT's write.
        await new AuditLog().write(trx, entryFor(practice.practiceId, requestId, '/last'));
        return { first: first.rows[0]!, seen, counted: rows[0]!.n };
      }),
    );
    assert.deepEqual(
      { ...result.first, port: undefined },
      { port: undefined, practice: practice.practiceId, role: 'practice_billing_app', probe: 'probe' },
      'the first statement ran after the frame it was written with',
    );
    assert.deepEqual(result.seen, ['/pipelined'], 'the read behind the held row saw it');
    assert.equal(result.counted, 3, 'the read behind two held rows saw both');
    if (backend === 'postgres') {
      assert.equal(
        writesFrom(result.first.port),
        4,
        'four writes: three statements with what was deferred, and the COMMIT',
      );
    }
    const stored = await inPractice(svc.db, practice.practiceId, (trx) => routesOf(trx, requestId));
    assert.deepEqual(stored.sort(), ['/joined-1', '/joined-2', '/last', '/pipelined']);
    // pg emits its warning on the next tick.
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(queuedWarnings, [], 'pg warned of no query queued behind another, in this file');
  });

  test('a frame that tries a lock answers whether it holds it, asked before the first statement or after', async () => {
    const practice = await svc.newPractice();
    const lockName = `frame-lock-alone-${practice.practiceId}`;
    const before = await inPracticeHolding(svc.db, practice.practiceId, lockName, (_trx, holdsLock) =>
      holdsLock(),
    );
    const after = await inPracticeHolding(svc.db, practice.practiceId, lockName, async (trx, holdsLock) => {
      await sql`SELECT ${1}::int AS one`.execute(trx);
      return holdsLock();
    });
    assert.deepEqual({ before, after }, { before: true, after: true });
  });

  test('a frame that tries a lock goes out with the first statement; whether the lock is held is answered after it', {
    skip:
      backend === 'pglite' ? 'PGlite has one connection: a second transaction waits for the first' : false,
  }, async () => {
    const practice = await svc.newPractice();
    const lockName = `frame-lock-${practice.practiceId}`;
    const { result, writesFrom } = await countingWrites(() =>
      inPracticeHolding(svc.db, practice.practiceId, lockName, async (trx, holdsLock) => {
        const { rows } = await sql<{ port: number; practice: string }>`
          SELECT inet_client_port() AS port, current_setting('app.practice_id') AS practice, ${1}::int AS one`.execute(
          trx,
        );
        const held = await holdsLock();
        // Another transaction, on another connection, tries the same lock meanwhile: it cannot have it,
        // whether it asks before its first statement (the frame then goes out on its own) or after.
        const [before, after] = await Promise.all([
          inPracticeHolding(svc.db, practice.practiceId, lockName, (_other, otherHolds) => otherHolds()),
          inPracticeHolding(svc.db, practice.practiceId, lockName, async (other, otherHolds) => {
            await sql`SELECT ${2}::int AS two`.execute(other);
            return otherHolds();
          }),
        ]);
        return { ...rows[0]!, held, before, after };
      }),
    );
    assert.equal(result.practice, practice.practiceId);
    assert.deepEqual(
      { held: result.held, before: result.before, after: result.after },
      {
        held: true,
        before: false,
        after: false,
      },
    );
    if (backend === 'postgres') {
      assert.equal(
        writesFrom(result.port),
        2,
        'BEGIN, the frame and the first statement in one write; the COMMIT',
      );
    }
    const again = await inPracticeHolding(svc.db, practice.practiceId, lockName, (_trx, holdsLock) =>
      holdsLock(),
    );
    assert.equal(again, true, 'released with the transaction that held it');
  });

  test('a transaction begun to stamp has its stamp from the frame: its id taken before the first statement, and stamping sends nothing', {
    skip:
      backend === 'pglite'
        ? 'PGlite stamps with a statement of its own: one transaction runs at a time'
        : false,
  }, async () => {
    const practice = await svc.newPractice();
    const heldId = (trx: Trx) =>
      sql<{ held: string | null; clock: Date; port: number }>`
        SELECT pg_current_xact_id_if_assigned()::text AS held, clock_timestamp() AS clock,
               inet_client_port() AS port, ${1}::int AS one`.execute(trx);
    const { result, writesFrom } = await countingWrites(() =>
      inPractice(
        svc.db,
        practice.practiceId,
        async (trx) => {
          const { rows } = await heldId(trx);
          const at = await stampChange(trx);
          return { ...rows[0]!, at, again: await stampChange(trx) };
        },
        { stamps: true },
      ),
    );
    assert.notEqual(result.held, null, 'the frame took the transaction id before the first statement ran');
    assert.ok(
      result.at.getTime() <= new Date(result.clock).getTime(),
      'the stamp was read before that statement',
    );
    assert.equal(result.again, result.at, 'one stamp a transaction');
    assert.equal(
      writesFrom(result.port),
      2,
      'BEGIN, the frame and the first statement in one write; the COMMIT',
    );

    // Asked before any statement, the frame goes out on its own and its answer is the stamp.
    const first = await inPractice(
      svc.db,
      practice.practiceId,
      async (trx) => {
        const at = await stampChange(trx);
        return { at, held: (await heldId(trx)).rows[0]!.held };
      },
      { stamps: true },
    );
    assert.ok(!Number.isNaN(first.at.getTime()));
    assert.notEqual(first.held, null);
    const unstamped = await inPractice(
      svc.db,
      practice.practiceId,
      async (trx) => (await heldId(trx)).rows[0]!,
    );
    assert.equal(unstamped.held, null, 'a transaction not begun to stamp takes no id in its frame');
  });

  test('when the deferred frame fails, the statement written behind it fails with its error, and the connection serves the next transaction', async () => {
    // A practice id PostgreSQL refuses as a setting's value cannot be made; a role that does not exist
    // can: the frame's SET LOCAL ROLE fails, and the parameterised read written with it is refused.
    let reached = false;
    await assert.rejects(
      svc.db.kysely.transaction().execute(async (trx) => {
        await trx.executeQuery(
          withQueryOptions(sql.raw('SET LOCAL ROLE no_such_role_for_this_test').compile(trx), {
            deferred: true,
          }),
        );
        await sql`SELECT ${1}::int AS one`.execute(trx);
        reached = true;
      }),
      /role "no_such_role_for_this_test" does not exist/,
    );
    assert.equal(reached, false);
    await assertNextTransactionServed((await svc.newPractice()).practiceId);
  });
  /** A read that records itself: a found row's audit row, and the row written when none is found. */
  const readRecord = (practiceId: string, requestId: string) => {
    const found = {
      ...entryFor(practiceId, requestId, '/recorded/:id'),
      resourceType: 'probe',
      resourceId: 'asked',
    };
    return {
      found,
      none: { ...found, status: 404, outcome: 'refused', reason: 'not_found' },
      patientColumn: 'patient',
    };
  };
  const auditRowOf = async (practiceId: string, requestId: string) =>
    inPractice(svc.db, practiceId, async (trx) => {
      const { rows } = await sql<{
        status: number;
        outcome: string;
        reason: string | null;
        resource_id: string;
        patient_id: string | null;
      }>`
        SELECT status, outcome, reason, resource_id, patient_id FROM audit_events WHERE request_id = ${requestId}`.execute(
        trx,
      );
      return rows;
    });

  test('a read that records itself writes the row of what it found: the one row, or none found', async () => {
    const practice = await svc.newPractice();
    const audit = new AuditLog();
    const probe = (hit: boolean) =>
      sql<{ id: string; patient: string }>`
        SELECT id, patient FROM (VALUES (${'prb_1'}::text, ${'pat_1'}::text)) AS v (id, patient) WHERE ${hit}::boolean`;
    const rows = await inPractice(svc.db, practice.practiceId, (trx) =>
      audit.recordRead(trx, probe(true).compile(trx), readRecord(practice.practiceId, 'req_read_hit')),
    );
    assert.deepEqual(rows, [{ id: 'prb_1', patient: 'pat_1' }]);
    assert.deepEqual(await auditRowOf(practice.practiceId, 'req_read_hit'), [
      { status: 200, outcome: 'succeeded', reason: null, resource_id: 'prb_1', patient_id: 'pat_1' },
    ]);
    const none = await inPractice(svc.db, practice.practiceId, (trx) =>
      audit.recordRead(trx, probe(false).compile(trx), readRecord(practice.practiceId, 'req_read_none')),
    );
    assert.deepEqual(none, []);
    assert.deepEqual(await auditRowOf(practice.practiceId, 'req_read_none'), [
      { status: 404, outcome: 'refused', reason: 'not_found', resource_id: 'asked', patient_id: null },
    ]);
  });

  test('a read that fails keeps no row of it, and the connection serves the next transaction', async () => {
    const practice = await svc.newPractice();
    await assert.rejects(
      inPractice(svc.db, practice.practiceId, (trx) =>
        new AuditLog().recordRead(
          trx,
          sql<{ id: string }>`SELECT (1 / ${0}::int)::text AS id, NULL::text AS patient`.compile(trx),
          readRecord(practice.practiceId, 'req_read_fails'),
        ),
      ),
      (error: Error) =>
        error instanceof AuditUnavailableError && /division by zero/.test(String(error.cause)),
    );
    assert.deepEqual(await auditRowOf(practice.practiceId, 'req_read_fails'), []);
    await assertNextTransactionServed(practice.practiceId);
  });

  test('a read that records itself leaves with its frame and COMMIT in one write, and ends its transaction', async () => {
    const practice = await svc.newPractice();
    const audit = new AuditLog();
    const { result, writesFrom } = await countingWrites(() =>
      inPractice(svc.db, practice.practiceId, async (trx) => {
        const [row] = await audit.recordRead(
          trx,
          sql<{ id: string; patient: string; port: number }>`
            SELECT ${'prb_2'}::text AS id, NULL::text AS patient, inet_client_port() AS port`.compile(trx),
          readRecord(practice.practiceId, 'req_read_one_write'),
        );
        return row!;
      }),
    );
    if (backend === 'postgres') {
      assert.equal(
        writesFrom(result.port),
        1,
        'BEGIN, the frame, the read with its row and the COMMIT: one write',
      );
    }
    assert.equal((await auditRowOf(practice.practiceId, 'req_read_one_write')).length, 1, 'committed');

    let followed = false;
    await assert.rejects(
      inPractice(svc.db, practice.practiceId, async (trx) => {
        await audit.recordRead(
          trx,
          sql<{ id: string }>`SELECT ${'prb_3'}::text AS id, NULL::text AS patient`.compile(trx),
          readRecord(practice.practiceId, 'req_read_then_more'),
        );
        await sql`SELECT ${1}::int AS one`.execute(trx);
        followed = true;
      }),
      /committed with its last statement/,
    );
    assert.equal(followed, false, 'no statement runs after the read that ended the transaction');
    assert.equal(
      (await auditRowOf(practice.practiceId, 'req_read_then_more')).length,
      1,
      'the read had committed',
    );
    await assertNextTransactionServed(practice.practiceId);
  });
});

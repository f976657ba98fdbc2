// The session's way of sending statements (deferred writes with their parameters, pipelined in front
// of the next statement or the COMMIT; a read that commits) against plain execution, one statement at
// a time with nothing deferred, on both databases: random transactions of deferred, answered, failing
// and committing statements must answer the same rows, fail with the same error, and leave the same
// table behind. The values include negative numbers behind a minus sign, quotes and backslashes: the
// shapes that once turned a held write's literal text into a different statement.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { PGlite } from '@electric-sql/pglite';
import fc from 'fast-check';
import { type CompiledQuery, sql } from 'kysely';
import pg from 'pg';
import { type Database, openPostgres } from '../src/platform/db/database.ts';
import { withQueryOptions } from '../src/platform/db/query-options.ts';
import { writeUnanswered } from '../src/platform/db/unanswered-writes.ts';
import { describeEachBackend, startService, type TestService } from './harness.ts';

type Op =
  | { kind: 'insert'; deferred: boolean; k: number; v: number; s: string }
  | { kind: 'add'; deferred: boolean; k: number; delta: number }
  | { kind: 'fail'; deferred: boolean }
  | { kind: 'read' };

type End = 'commit' | 'rollback' | 'read-commits';

interface Work {
  ops: Op[];
  end: End;
}

/** What a transaction showed: the rows of its reads, and how it ended (committed, or an error's code). */
interface Seen {
  reads: unknown[][];
  ended: string;
}

const TEXTS = fc.constantFrom("it's", '\\', "E'\\n'", '-- x', '$1', 'Zoë', '');
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant('insert' as const),
    deferred: fc.boolean(),
    k: fc.integer({ min: 0, max: 5 }),
    v: fc.integer({ min: -1000, max: 1000 }),
    s: TEXTS,
  }),
  fc.record({
    kind: fc.constant('add' as const),
    deferred: fc.boolean(),
    k: fc.integer({ min: 0, max: 5 }),
    delta: fc.integer({ min: -50, max: 50 }),
  }),
  fc.record({ kind: fc.constant('fail' as const), deferred: fc.boolean() }),
  fc.constant({ kind: 'read' as const }),
);
const work: fc.Arbitrary<Work> = fc.record({
  ops: fc.array(op, { maxLength: 8 }),
  end: fc.constantFrom<End>('commit', 'commit', 'rollback', 'read-commits'),
});

/** The statements, as SQL with parameters, each one of `table`. */
function statementOf(table: string, o: Op) {
  const t = sql.table(table);
  switch (o.kind) {
    case 'insert':
      return sql`INSERT INTO ${t} (k, v, s) VALUES (${o.k}, ${o.v}, ${o.s})`;
    case 'add':
      // A minus sign right before the value: as a literal, a negative one made a comment (n--5).
      return sql`UPDATE ${t} SET v = v-${-o.delta} WHERE k = ${o.k}`;
    case 'fail':
      return sql`INSERT INTO ${t} (k, v, s) VALUES (${100}, 1 / ${0}::int, ${'x'})`;
    case 'read':
      return sql`SELECT k, v, s FROM ${t} ORDER BY k`;
  }
}

class Rollback extends Error {}

function endOf(error: unknown): string {
  if (error instanceof Rollback) return 'rolled back';
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : String(error);
}

/** Runs the work through the service's session: deferred statements deferred, the read that commits. */
async function throughSession(db: Database, table: string, w: Work): Promise<Seen> {
  const reads: unknown[][] = [];
  try {
    await db.kysely.transaction().execute(async (trx) => {
      for (const o of w.ops) {
        const statement = statementOf(table, o);
        if (o.kind === 'read') reads.push((await statement.execute(trx)).rows);
        else if (o.deferred) await writeUnanswered(trx, statement);
        else await statement.execute(trx);
      }
      if (w.end === 'rollback') throw new Rollback();
      if (w.end === 'read-commits') {
        const read = statementOf(table, { kind: 'read' }).compile(trx) as CompiledQuery<unknown>;
        reads.push((await trx.executeQuery(withQueryOptions(read, { commits: true }))).rows);
      }
    });
    return { reads, ended: 'committed' };
  } catch (error) {
    return { reads, ended: endOf(error) };
  }
}

type Query = (text: string, values: readonly unknown[]) => Promise<{ rows: unknown[] }>;

/** Runs fn in a plain transaction of the reference connection: committed when it returns, else rolled back. */
type PlainTransaction = (fn: (query: Query) => Promise<void>) => Promise<void>;

/**
 * Runs the work plainly: one statement at a time, each answered before the next, and a plain COMMIT.
 * Only where an error is reported follows deferral's rule.
 */
async function plainly(
  transaction: PlainTransaction,
  w: Work,
  compile: (o: Op) => CompiledQuery,
): Promise<Seen> {
  const reads: unknown[][] = [];
  try {
    await transaction(async (query) => {
      const ops: Op[] = w.end === 'read-commits' ? [...w.ops, { kind: 'read' }] : w.ops;
      // A deferred write's error is the next statement's (or the COMMIT's); a rollback drops it.
      let pending: unknown;
      for (const o of ops) {
        const deferred = o.kind !== 'read' && o.deferred;
        if (pending !== undefined && deferred) continue;
        if (pending !== undefined) throw pending;
        const { sql: text, parameters } = compile(o);
        try {
          const { rows } = await query(text, parameters);
          if (o.kind === 'read') reads.push(rows);
        } catch (error) {
          if (!deferred) throw error;
          pending = error;
        }
      }
      if (w.end === 'rollback') throw new Rollback();
      if (pending !== undefined) throw pending;
    });
  } catch (error) {
    return { reads, ended: endOf(error) };
  }
  return { reads, ended: 'committed' };
}

describeEachBackend('database session: deferred statements against plain execution', (backend) => {
  let svc: TestService;
  let session: Database;
  let transaction: PlainTransaction;
  let closePlain: () => Promise<void>;
  before(async () => {
    svc = await startService(backend);
    if (backend === 'postgres') {
      // Statements prepared by name, as the service runs them, on two connections.
      session = openPostgres({
        url: svc.databaseUrl!,
        poolSize: 2,
        statementTimeoutMs: 15_000,
        preparedStatements: true,
      });
      const client = new pg.Client({ connectionString: svc.databaseUrl! });
      await client.connect();
      const query: Query = (text, values) => client.query(text, values as unknown[]);
      transaction = async (fn) => {
        await query('BEGIN', []);
        try {
          await fn(query);
        } catch (error) {
          await query('ROLLBACK', []);
          throw error;
        }
        await query('COMMIT', []);
      };
      closePlain = () => client.end();
    } else {
      session = svc.db;
      // The embedded database's one session, in its own exclusive transactions (never a bare
      // statement, which could land inside another caller's transaction).
      const pglite = (svc.db as Database & { pglite: PGlite }).pglite;
      transaction = (fn) =>
        pglite.transaction((tx) => fn((text, values) => tx.query(text, values as unknown[])));
      closePlain = async () => {};
    }
  });
  after(async () => {
    await closePlain();
    if (session !== svc.db) await session.close();
    await svc.close();
  });

  /** One statement in a plain transaction of its own, answering its rows. */
  const plain = async (text: string) => {
    let rows: unknown[] = [];
    await transaction(async (query) => {
      rows = (await query(text, [])).rows;
    });
    return rows;
  };

  test('random transactions answer the same rows, fail alike and leave the same table', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(work, { minLength: 1, maxLength: 6 }), async (works) => {
        run += 1;
        const mine = `probe_session_${run}`;
        const theirs = `probe_plain_${run}`;
        for (const table of [mine, theirs]) {
          await plain(`CREATE TABLE ${table} (k int PRIMARY KEY, v int NOT NULL, s text NOT NULL)`);
        }
        try {
          for (const w of works) {
            const seen = await throughSession(session, mine, w);
            const expected = await plainly(transaction, w, (o) =>
              statementOf(theirs, o).compile(session.kysely),
            );
            assert.deepEqual(seen, expected, JSON.stringify(w));
            assert.deepEqual(
              await plain(`SELECT k, v, s FROM ${mine} ORDER BY k`),
              await plain(`SELECT k, v, s FROM ${theirs} ORDER BY k`),
              'the same rows kept',
            );
          }
        } finally {
          for (const table of [mine, theirs]) await plain(`DROP TABLE ${table}`);
        }
      }),
      { numRuns: 60 },
    );
  });
});

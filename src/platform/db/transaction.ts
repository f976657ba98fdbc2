// Owns the only way to run SQL for the service: a transaction that first switches to a service role
// and, for tenant work, sets the practice. Both settings are transaction-local, so a pooled
// connection never carries one request's practice into another's.
import { sql, type Transaction } from 'kysely';
import pg from 'pg';
import { APP_ROLE, OPERATOR_ROLE } from '../../../migrations/security.ts';
import type { Database } from './database.ts';
import type { Tables } from './tables.ts';

export type Trx = Transaction<Tables>;

/** Runs fn as the app role, seeing only the rows of practiceId. */
export function inPractice<T>(db: Database, practiceId: string, fn: (trx: Trx) => Promise<T>): Promise<T> {
  return inTransaction(db, { role: APP_ROLE, practiceId }, fn);
}

/** Runs fn as the operator role, across practices: admin API, key look-up, background workers. */
export function asOperator<T>(db: Database, fn: (trx: Trx) => Promise<T>): Promise<T> {
  return inTransaction(db, { role: OPERATOR_ROLE }, fn);
}

interface Context {
  role: string;
  practiceId?: string;
}

function inTransaction<T>(db: Database, context: Context, fn: (trx: Trx) => Promise<T>): Promise<T> {
  if (db.kind === 'postgres') return inPostgresTransaction(db, context, fn);
  // The embedded database has one connection: Kysely's transaction is what keeps requests apart on it.
  return db.kysely.transaction().execute(async (trx) => {
    await sql`SELECT set_config('role', ${context.role}, true), set_config('app.practice_id', ${context.practiceId ?? ''}, true)`.execute(
      trx,
    );
    return fn(trx);
  });
}

/**
 * On PostgreSQL the transaction is opened and its role and practice set in one round trip: BEGIN and
 * the settings go as one simple-protocol message (so the values are written as escaped literals, not
 * parameters). That is one round trip fewer for every request and job than BEGIN followed by a
 * parameterised SELECT.
 */
async function inPostgresTransaction<T>(
  db: Database,
  context: Context,
  fn: (trx: Trx) => Promise<T>,
): Promise<T> {
  const open = sql.raw(
    `BEGIN; SELECT set_config('role', ${pg.escapeLiteral(context.role)}, true), set_config('app.practice_id', ${pg.escapeLiteral(context.practiceId ?? '')}, true)`,
  );
  return db.kysely.connection().execute(async (connection) => {
    // A connection bound to one transaction for fn's whole run: the same queries Kysely's own
    // transaction would send, with BEGIN folded into the first.
    const trx = connection as unknown as Trx;
    await open.execute(connection);
    let result: T;
    try {
      result = await fn(trx);
    } catch (error) {
      await sql
        .raw('ROLLBACK')
        .execute(connection)
        .catch(() => {});
      throw error;
    }
    const committed = await sql.raw<{ command: string }>('COMMIT').execute(connection);
    // COMMIT of a transaction that an error already aborted answers ROLLBACK instead of failing.
    if (committed.rows[0]?.command === 'ROLLBACK')
      throw new Error('the transaction was rolled back at commit');
    return result;
  });
}

/** Runs fn inside a savepoint; if it throws, the savepoint's work is undone and the error rethrown. */
export async function withSavepoint<T>(trx: Trx, fn: () => Promise<T>): Promise<T> {
  await sql`SAVEPOINT request_work`.execute(trx);
  try {
    const result = await fn();
    await sql`RELEASE SAVEPOINT request_work`.execute(trx);
    return result;
  } catch (error) {
    await sql`ROLLBACK TO SAVEPOINT request_work`.execute(trx);
    throw error;
  }
}

const UNIQUE_VIOLATION = '23505';

export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as { code?: string; constraint?: string };
  return e.code === UNIQUE_VIOLATION && (constraint === undefined || e.constraint === constraint);
}

/** Errors that mean the database is away or restarting, not that the request was wrong. */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as { code?: string; message?: string };
  const code = e.code ?? '';
  return (
    code.startsWith('08') ||
    code === '57P01' ||
    code === '57P02' ||
    code === '57P03' ||
    code === '57014' ||
    code === 'ECONNREFUSED' ||
    code === 'ECONNRESET' ||
    code === 'ETIMEDOUT' ||
    code === 'EPIPE' ||
    // pg's own client-side limits: no connection within the pool's connect timeout, or no answer within
    // query_timeout (the server unreachable or stalled, so its statement_timeout cannot fire).
    /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Query read timeout/i.test(
      e.message ?? '',
    )
  );
}

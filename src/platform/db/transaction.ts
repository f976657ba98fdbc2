// Owns the only way to run SQL for the service: a transaction that first switches to a service role
// and, for tenant work, sets the practice. Both settings are transaction-local, so a pooled
// connection never carries one request's practice into another's. The frame is deferred
// (src/platform/db/query-options.ts), so that it goes out with BEGIN in the same write as the work's
// first statement; a frame that tries a lock, or takes the change stamp for a transaction that will
// stamp its changes, is answered there too (HoldsLock, TransactionPlans.stamps). SET LOCAL takes no
// parameters: its values are the only literals the service writes, and only values the service made
// (a role name, a practice id, a lock number), each checked against its pattern first (frameLiteral).
// On PostgreSQL the practice is set with SET LOCAL, not set_config: a distributed PostgreSQL (Citus,
// with citus.propagate_set_commands = 'local') carries a SET LOCAL to the nodes that hold the rows, and
// a set_config call to none (docs/scale-out.md).
import { createHash } from 'node:crypto';
import { type QueryResult, type RawBuilder, sql, type Transaction } from 'kysely';
import { APP_ROLE, OPERATOR_ROLE } from '../../../migrations/security.ts';
import { stampSql, stampTakenByFrame } from './change-stamp.ts';
import type { Database } from './database.ts';
import { deferredRows, withQueryOptions } from './query-options.ts';
import type { Tables } from './tables.ts';

export type Trx = Transaction<Tables>;

const afterCommitHooks = new WeakMap<Trx, Set<(db: Database) => void>>();

/** The transactions running on a distributed database (Database.distributed). */
const onDistributed = new WeakSet<Trx>();

/** Whether the transaction runs on a distributed database (Citus). */
export function runsDistributed(trx: Trx): boolean {
  return onDistributed.has(trx);
}

/** Sends the transaction's deferred statements now, and waits for their answers. */
export async function sendDeferredNow(trx: Trx): Promise<void> {
  await trx.executeQuery(withQueryOptions(sql.raw('').compile(trx), { sendsDeferred: true }));
}

/**
 * Runs hook once the transaction has committed (never if it rolls back), for signals that must not
 * go out before the change they announce is visible. A hook added twice runs once.
 */
export function afterCommit(trx: Trx, hook: (db: Database) => void): void {
  let hooks = afterCommitHooks.get(trx);
  if (!hooks) {
    hooks = new Set();
    afterCommitHooks.set(trx, hooks);
  }
  hooks.add(hook);
}

/** The shapes of the values a frame writes as literals: role names, and ids the service made. */
const FRAME_LITERALS = { role: /^[a-z_][a-z0-9_]{0,62}$/, practiceId: /^[0-9A-Za-z_]{1,100}$/ };

/** A frame's value as an SQL literal, refused unless it has its pattern (no quote, no backslash). */
function frameLiteral(kind: keyof typeof FRAME_LITERALS, value: string): string {
  if (!FRAME_LITERALS[kind].test(value))
    throw new Error(`not a ${kind} the service made: refused in a frame`);
  return kind === 'role' ? value : `'${value}'`;
}

/** What the frame sets: the role, the practice for tenant work, and an advisory lock to try. */
interface Frame extends TransactionPlans {
  role: string;
  practiceId?: string;
  lockName?: string;
}

/** How the transaction's statements are planned. */
export interface TransactionPlans {
  /**
   * Each prepared statement is planned once, for any values (plan_cache_mode force_generic_plan),
   * instead of again at each run. For transactions whose statements plan slowly and whose plans do not
   * depend on the values (look-ups by key, the job take): PostgreSQL otherwise keeps planning a
   * statement whose generic plan it estimates dearer, a millisecond and more each time.
   */
  genericPlans?: boolean;
  /**
   * The transaction will stamp the rows it changes (src/platform/db/change-feed.ts, stampChange). On
   * PostgreSQL its frame takes the transaction's id and then reads the clock, and that answer, which
   * arrives with the work's first statement, is the stamp: no statement of its own asks for it.
   */
  stamps?: boolean;
}

const lockTry = (lockName: string) =>
  `pg_try_advisory_xact_lock(${advisoryLockKey(lockName)}::bigint) AS locked`;

/**
 * The frame's SQL. PostgreSQL: SET LOCAL statements (and the lock's try), as one text without
 * parameters, answered by its last statement. PGlite (one process, never distributed): the same
 * transaction-local settings made by set_config, with parameters, in one SELECT.
 */
function frameSql(db: Database, frame: Frame): RawBuilder<FrameAnswer> {
  // Checked on both databases alike, though PGlite's frame takes parameters.
  const role = frameLiteral('role', frame.role);
  const practice = frame.practiceId === undefined ? undefined : frameLiteral('practiceId', frame.practiceId);
  if (db.kind === 'postgres') {
    const asked = frame.lockName === undefined ? [] : [lockTry(frame.lockName)];
    return sql.raw<FrameAnswer>(
      [
        `SET LOCAL ROLE ${role}`,
        ...(practice === undefined ? [] : [`SET LOCAL app.practice_id = ${practice}`]),
        // Not on Citus: it plans a statement whose tenant filters are parameters for one node only
        // once it has their values, and refuses a generic plan of one with several such filters.
        ...(frame.genericPlans && !db.distributed ? ['SET LOCAL plan_cache_mode = force_generic_plan'] : []),
        ...(frame.stamps ? [stampSql(asked)] : asked.length > 0 ? [`SELECT ${asked.join(', ')}`] : []),
      ].join(';\n'),
    );
  }
  const settings = [
    sql`set_config('role', ${frame.role}, true)`,
    ...(frame.practiceId === undefined
      ? []
      : [sql`set_config('app.practice_id', ${frame.practiceId}, true)`]),
    ...(frame.genericPlans ? [sql`set_config('plan_cache_mode', 'force_generic_plan', true)`] : []),
    ...(frame.lockName === undefined ? [] : [sql.raw(lockTry(frame.lockName))]),
  ];
  return sql<FrameAnswer>`SELECT ${sql.join(settings)}`;
}

/**
 * Whether the transaction holds the lock its frame tried. On PostgreSQL the frame, held, goes out with
 * the work's first statement, so its answer has arrived once that statement's has; asked before any,
 * the frame is sent on its own.
 */
export type HoldsLock = () => Promise<boolean>;

/** The answer of a transaction that tried no lock. */
export const holdsNoLock: HoldsLock = () => Promise.resolve(true);

/** What a frame answers on PostgreSQL: whether it took its lock, and the transaction's stamp. */
interface FrameAnswer {
  locked?: boolean;
  at?: Date;
}

/**
 * Defers the frame, to go out with the work's first statement, and answers how to have its answer:
 * once that statement's answer has come, at once; asked before any statement, the frame is sent on
 * its own.
 */
async function deferredFrame(
  trx: Trx,
  setting: RawBuilder<FrameAnswer>,
): Promise<() => Promise<FrameAnswer>> {
  const frame = withQueryOptions(setting.compile(trx), { deferred: true });
  await trx.executeQuery(frame);
  const rows = deferredRows(frame);
  let settled = false;
  rows.then(
    () => {
      settled = true;
    },
    () => {
      settled = true;
    },
  );
  return async () => {
    if (!settled) await sendDeferredNow(trx);
    return (await rows)[0] ?? {};
  };
}

async function inTransaction<T>(
  db: Database,
  frame: Frame,
  fn: (trx: Trx, holdsLock: HoldsLock) => Promise<T>,
): Promise<T> {
  let used: Trx | undefined;
  const result = await db.kysely.transaction().execute(async (trx) => {
    used = trx;
    if (db.distributed) onDistributed.add(trx);
    const answer = await deferredFrame(trx, frameSql(db, frame));
    // Only PostgreSQL's frame takes the stamp (frameSql).
    if (frame.stamps === true && db.kind === 'postgres') {
      stampTakenByFrame(trx, async () => new Date((await answer()).at!));
    }
    if (frame.lockName === undefined) return fn(trx, holdsNoLock);
    return fn(trx, async () => (await answer()).locked !== false);
  });
  const hooks = used && afterCommitHooks.get(used);
  if (hooks) {
    for (const hook of hooks) {
      try {
        hook(db);
      } catch {
        // a signal that could not be sent is made up for by the worker's polling
      }
    }
  }
  return result;
}

/** Runs fn as the app role, seeing only the rows of practiceId. */
export function inPractice<T>(
  db: Database,
  practiceId: string,
  fn: (trx: Trx) => Promise<T>,
  plans: TransactionPlans = {},
): Promise<T> {
  return inTransaction(db, { role: APP_ROLE, practiceId, ...plans }, fn);
}

/** A 64-bit advisory lock key for a name: the first 8 bytes of its SHA-256, as a signed integer. */
export function advisoryLockKey(name: string): string {
  return createHash('sha256').update(name).digest().readBigInt64BE(0).toString();
}

/**
 * Like inPractice, and in the same first statement tries to take a transaction-scoped advisory lock on
 * lockName (a 64-bit hash of it; released at commit or rollback, or when the connection dies). fn
 * asks whether it holds the lock (holdsLock): then no other transaction, in any process, holds that
 * name. Asked after fn's first statement, the answer costs no round trip of its own.
 */
export function inPracticeHolding<T>(
  db: Database,
  practiceId: string,
  lockName: string,
  fn: (trx: Trx, holdsLock: HoldsLock) => Promise<T>,
  plans: TransactionPlans = {},
): Promise<T> {
  return inTransaction(db, { role: APP_ROLE, practiceId, lockName, ...plans }, fn);
}

/** Runs fn as the operator role, across practices: admin API, key look-up, background workers. */
export function asOperator<T>(
  db: Database,
  fn: (trx: Trx) => Promise<T>,
  plans: TransactionPlans = {},
): Promise<T> {
  return inTransaction(db, { role: OPERATOR_ROLE, ...plans }, fn);
}

/**
 * One statement calling an operator-owned SECURITY DEFINER function (the key look-up, the job
 * backlog), which runs as its owner: on PostgreSQL sent on its own, outside any transaction; on the
 * embedded database, whose one connection a bare statement would share with an open transaction, in an
 * operator transaction of its own.
 */
export function callOperatorFunction<R>(db: Database, query: RawBuilder<R>): Promise<QueryResult<R>> {
  return db.kind === 'postgres' ? query.execute(db.kysely) : asOperator(db, (trx) => query.execute(trx));
}

/** Like asOperator, holding lockName as inPracticeHolding does. */
export function asOperatorHolding<T>(
  db: Database,
  lockName: string,
  fn: (trx: Trx, holdsLock: HoldsLock) => Promise<T>,
): Promise<T> {
  return inTransaction(db, { role: OPERATOR_ROLE, lockName }, fn);
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

/**
 * An insert that does nothing on a conflict (ON CONFLICT DO NOTHING) and the refusal that names the row
 * in its way: `insert` answers the new row, or nothing on a conflict; `refuse` throws the refusal
 * naming the row in the way, and returns if it finds none. A concurrent request can delete that row,
 * or change it out of the way, between the two statements; the insert is then tried again.
 */
export async function insertUnlessTaken<T>(
  insert: () => Promise<T | undefined>,
  refuse: () => Promise<void>,
): Promise<T> {
  for (;;) {
    const row = await insert();
    if (row !== undefined) return row;
    await refuse();
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

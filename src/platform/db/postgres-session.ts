// Owns how statements travel on a PostgreSQL connection: Kysely's driver for a pg pool, whose
// connection (a PostgresSession, one per pooled client) decides for each statement how it is sent,
// from its options (src/platform/db/query-options.ts) and the transaction it is in.
//
// The one place where the ways of sending meet, in the order a statement meets them:
//  1. BEGIN is held, and goes out in front of whatever the transaction sends first (so the frame of
//     src/platform/db/transaction.ts, literals only, travels with it); a transaction that ends before
//     its first statement sends nothing at all.
//  2. A statement `withCommit` is held, answered at once with no rows, and goes out in front of the
//     next one: with the COMMIT, or before any other statement (a ROLLBACK drops it). Held text goes
//     out in one simple-protocol message, joined with the statement behind it when that one has no
//     parameters (a message of several statements takes none), else answered before it is sent; if a
//     held statement fails, the statement behind it fails with that error, unsent.
//  3. Any other statement is sent as it is: under a prepared name when the database prepares
//     statements and the statement is `prepared` (by default when it has parameters), else unnamed.
//  4. The COMMIT's answer is checked: PostgreSQL answers COMMIT of a failed transaction with
//     ROLLBACK and no error, which is made an error. A connection whose ROLLBACK fails (stalled, or
//     broken) may still be inside the transaction: it is closed rather than pooled.
// pg is asked for a query only when the connection runs none: queueing one behind a running query is
// deprecated in pg 8 and removed in pg 9.
import { createHash } from 'node:crypto';
import {
  type CompiledQuery,
  type DatabaseConnection,
  type Driver,
  PostgresDialect,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import type pg from 'pg';
import { queryOptionsOf } from './query-options.ts';
import { countRoundTrip, countTransaction } from './statement-counts.ts';

/** A COMMIT that PostgreSQL answered with ROLLBACK: the transaction had failed, nothing was kept. */
export class TransactionRolledBackError extends Error {
  constructor() {
    super('COMMIT was answered with ROLLBACK: the transaction had failed and nothing of it was kept');
  }
}

/** Distinct statements named per connection; the rest run unnamed. */
const MAX_NAMED_STATEMENTS = 500;
const MAX_NAMED_STATEMENT_LENGTH = 8000;

type PgResult = pg.QueryResult<Record<string, unknown>>;

/** BEGIN, COMMIT and ROLLBACK: counted as transactions and round trips, not as statements. */
function isTransactionControl(text: string): boolean {
  return text === 'BEGIN' || text === 'COMMIT' || text === 'ROLLBACK' || text.startsWith('start transaction');
}

/** pg answers a message of several statements with one result each: the last is the message's. */
function lastOf(answer: PgResult | PgResult[]): PgResult {
  return Array.isArray(answer) ? answer[answer.length - 1]! : answer;
}

function toQueryResult<R>(result: PgResult): QueryResult<R> {
  const { command, rowCount, rows } = result;
  const changes = command === 'INSERT' || command === 'UPDATE' || command === 'DELETE' || command === 'MERGE';
  return {
    ...(changes ? { numAffectedRows: BigInt(rowCount ?? 0) } : {}),
    rows: (rows ?? []) as R[],
  };
}

/** One pooled pg client and the state of the transaction it runs. */
export class PostgresSession implements DatabaseConnection {
  readonly #client: pg.PoolClient;
  readonly #prepares: boolean;
  readonly #names = new Map<string, string>();
  #inTransaction = false;
  #beginHeld = false;
  #held: string[] = [];
  #discarded = false;

  constructor(client: pg.PoolClient, prepares: boolean) {
    this.#client = client;
    this.#prepares = prepares;
  }

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    if (this.#discarded) throw new Error('the connection was closed after its ROLLBACK failed');
    const options = queryOptionsOf(compiled);
    const parameterless = compiled.parameters.length === 0;
    const withCommit = options.withCommit === true;
    if (this.#inTransaction && withCommit && parameterless) {
      this.#held.push(compiled.sql);
      return { rows: [] };
    }
    const ahead = this.#takeAhead();
    if (ahead.length > 0 && parameterless) {
      return toQueryResult(lastOf(await this.#sendText([...ahead, compiled.sql])));
    }
    if (ahead.length > 0) await this.#sendText(ahead);
    return toQueryResult(await this.#send(compiled.sql, compiled.parameters, options.prepared));
  }

  streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming queries is not supported');
  }

  /** Starts a transaction: BEGIN is held until its first statement (header, step 1). */
  async begin(settings: TransactionSettings): Promise<void> {
    this.#inTransaction = true;
    if (!settings.isolationLevel && !settings.accessMode) {
      this.#beginHeld = true;
      return;
    }
    const mode = [
      settings.isolationLevel ? `isolation level ${settings.isolationLevel}` : '',
      settings.accessMode ?? '',
    ];
    await this.#sendText([`start transaction ${mode.join(' ').trim()}`]);
  }

  /** Sends what is held with the COMMIT, in one message; a COMMIT answered ROLLBACK is an error. */
  async commit(): Promise<void> {
    const ahead = this.#takeAhead();
    this.#inTransaction = false;
    if (ahead.length === 1 && ahead[0] === 'BEGIN') return;
    const result = lastOf(await this.#sendText([...ahead, 'COMMIT']));
    if (result.command === 'ROLLBACK') throw new TransactionRolledBackError();
  }

  /** Drops what is held; sends ROLLBACK unless nothing was sent. A failed ROLLBACK closes the connection. */
  async rollback(): Promise<void> {
    const beganOnServer = !this.#beginHeld;
    this.#beginHeld = false;
    this.#held = [];
    this.#inTransaction = false;
    if (!beganOnServer) return;
    try {
      await this.#sendText(['ROLLBACK']);
    } catch (error) {
      this.#discarded = true;
      this.#client.end().catch(() => {});
      throw error;
    }
  }

  release(): void {
    this.#beginHeld = false;
    this.#held = [];
    this.#inTransaction = false;
    this.#client.release(this.#discarded);
  }

  /** The held BEGIN and statements, in order, to go out in front of the next statement. */
  #takeAhead(): string[] {
    const ahead = [...(this.#beginHeld ? ['BEGIN'] : []), ...this.#held];
    this.#beginHeld = false;
    this.#held = [];
    return ahead;
  }

  /** Statements without parameters, in one simple-protocol message; a transaction begins with the first. */
  #sendText(statements: string[]): Promise<PgResult | PgResult[]> {
    countRoundTrip(statements.filter((text) => !isTransactionControl(text)).length);
    if (statements[0] === 'BEGIN' || statements[0]!.startsWith('start transaction')) countTransaction();
    return this.#client.query(statements.join(';\n')) as unknown as Promise<PgResult | PgResult[]>;
  }

  #send(text: string, values: readonly unknown[], prepared: boolean | undefined): Promise<PgResult> {
    countRoundTrip(1);
    // Never named when the database prepares nothing (a pooler in transaction mode would lose them).
    const name = this.#prepares && (prepared ?? values.length > 0) ? this.#nameOf(text) : undefined;
    if (name === undefined) return this.#client.query(text, values as unknown[]);
    return this.#client.query({ name, text, values: values as unknown[] });
  }

  /** The prepared name of a text: a hash of it, computed once; none past the connection's limits. */
  #nameOf(text: string): string | undefined {
    if (text.length > MAX_NAMED_STATEMENT_LENGTH) return undefined;
    let name = this.#names.get(text);
    if (name === undefined) {
      if (this.#names.size >= MAX_NAMED_STATEMENTS) return undefined;
      name = `pb_${createHash('sha1').update(text).digest('base64url').slice(0, 22)}`;
      this.#names.set(text, name);
    }
    return name;
  }
}

function sessionOf(connection: DatabaseConnection): PostgresSession {
  return connection as PostgresSession;
}

/** Kysely's driver over a pg pool, each pooled client a PostgresSession. */
class PostgresSessionDriver implements Driver {
  readonly #pool: pg.Pool;
  readonly #prepares: boolean;
  readonly #sessions = new WeakMap<pg.PoolClient, PostgresSession>();

  constructor(pool: pg.Pool, prepares: boolean) {
    this.#pool = pool;
    this.#prepares = prepares;
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    const client = await this.#pool.connect();
    let session = this.#sessions.get(client);
    if (!session) {
      session = new PostgresSession(client, this.#prepares);
      this.#sessions.set(client, session);
    }
    return session;
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    return sessionOf(connection).begin(settings);
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return sessionOf(connection).commit();
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return sessionOf(connection).rollback();
  }

  async releaseConnection(connection: DatabaseConnection): Promise<void> {
    sessionOf(connection).release();
  }

  async destroy(): Promise<void> {
    await this.#pool.end();
  }
}

/** Kysely's PostgreSQL dialect, its statements sent by PostgresSession. */
export class PostgresSessionDialect extends PostgresDialect {
  readonly #pool: pg.Pool;
  readonly #prepares: boolean;

  constructor(pool: pg.Pool, options: { preparedStatements: boolean }) {
    super({ pool });
    this.#pool = pool;
    this.#prepares = options.preparedStatements;
  }

  override createDriver(): Driver {
    return new PostgresSessionDriver(this.#pool, this.#prepares);
  }
}

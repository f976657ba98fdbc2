// Owns how statements travel on a PostgreSQL connection: Kysely's driver for a pg pool, whose
// connection (a PostgresSession, one per pooled client) sends each statement as its options say
// (src/platform/db/query-options.ts). Every statement is one pg query with its values as parameters
// (a text without values, such as the transaction's frame, goes as it is); what goes out together is
// pipelined: asked of pg in one turn with the socket corked, so it leaves in one write, and answered in
// order (pg's pipeline mode, src/platform/db/database.ts).
//  1. BEGIN is kept until the transaction's first statement and goes out in front of it; a transaction
//     that ends before its first statement sends nothing at all.
//  2. A `deferred` statement is kept, answered at once with no rows, and goes out in front of the next
//     statement, or with the COMMIT; a ROLLBACK drops it. If it fails, the transaction is aborted, so
//     the statement behind it fails too, and throws the deferred statement's error.
//  3. A statement is sent under a prepared name when the database prepares statements and the
//     statement is `prepared` (by default when it has parameters), else unnamed.
//  4. A statement that `commits` (a transaction's last) goes out with the COMMIT behind it, in the same
//     write; the transaction has then ended on the server, so its own commit or rollback sends nothing,
//     and a statement after it is refused.
//  5. The COMMIT's answer is checked: PostgreSQL answers COMMIT of a failed transaction with
//     ROLLBACK and no error, which is made an error. A connection whose ROLLBACK fails (stalled, or
//     broken), or whose COMMIT sent behind a statement went unanswered, may still be inside the
//     transaction: it is closed rather than pooled.
// The embedded database's session (src/platform/db/pglite-session.ts) does the same in process.
import { createHash } from 'node:crypto';
import type { Writable } from 'node:stream';
import {
  type CompiledQuery,
  type DatabaseConnection,
  type Driver,
  PostgresDialect,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import type pg from 'pg';
import { dropDeferred, queryOptionsOf, settleDeferred } from './query-options.ts';
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

/** One statement to send: a compiled query, or BEGIN / COMMIT / ROLLBACK. */
type Outgoing = CompiledQuery | string;

const NO_VALUES: readonly unknown[] = [];

/** One pooled pg client and the state of the transaction it runs. */
export class PostgresSession implements DatabaseConnection {
  readonly #client: pg.PoolClient;
  readonly #prepares: boolean;
  readonly #names = new Map<string, string>();
  #inTransaction = false;
  #beginHeld = false;
  #deferred: CompiledQuery[] = [];
  /** The transaction ended on the server with its last statement (step 4); Kysely's end of it is to come. */
  #endedWithStatement = false;
  #discarded = false;
  /** A prepared statement's plan went stale (a schema change): closed on release. */
  #stalePlans = false;

  constructor(client: pg.PoolClient, prepares: boolean) {
    this.#client = client;
    this.#prepares = prepares;
  }

  /**
   * Runs one statement. A connection whose prepared statement's plan a schema change made stale
   * ("cached plan must not change result type": a migration changed a table's columns under it) is
   * closed when released, not pooled: its statements are prepared again on a new connection, instead
   * of failing the same way on every use.
   */
  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    try {
      return await this.#execute<R>(compiled);
    } catch (error) {
      if (isStalePlan(error)) this.#stalePlans = true;
      throw error;
    }
  }

  async #execute<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    if (this.#discarded) {
      throw new Error('the connection was closed: its ROLLBACK failed, or its COMMIT went unanswered');
    }
    if (this.#endedWithStatement) {
      throw new Error('the transaction committed with its last statement: no statement may follow it');
    }
    const options = queryOptionsOf(compiled);
    if (this.#inTransaction && options.deferred === true) {
      this.#deferred.push(compiled);
      return { rows: [] };
    }
    if (options.sendsDeferred === true) {
      if (this.#deferred.length > 0) await this.#send([]);
      return { rows: [] };
    }
    if (options.commits === true && this.#inTransaction) return this.#sendCommitting(compiled);
    const [result] = await this.#send([compiled]);
    return toQueryResult(result!);
  }

  /**
   * The transaction's last statement with its COMMIT behind it (header, step 4). Whatever the answer,
   * the transaction is over on the server once the COMMIT is answered; a connection whose COMMIT went
   * unanswered is closed, as one whose ROLLBACK failed.
   */
  async #sendCommitting<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    this.#inTransaction = false;
    this.#endedWithStatement = true;
    let answered = false;
    try {
      const [result, commit] = await this.#send([compiled, 'COMMIT'], () => {
        answered = true;
      });
      if (commit!.command === 'ROLLBACK') throw new TransactionRolledBackError();
      return toQueryResult(result!);
    } finally {
      if (!answered) this.#discard();
    }
  }

  streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('streaming queries is not supported');
  }

  /** Starts a transaction: BEGIN is kept until its first statement (header, step 1). */
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
    await this.#send([`start transaction ${mode.join(' ').trim()}`]);
  }

  /** Sends what is deferred with the COMMIT, in one round trip; a COMMIT answered ROLLBACK is an error. */
  async commit(): Promise<void> {
    if (this.#endedWithStatement) {
      this.#endedWithStatement = false;
      return;
    }
    this.#inTransaction = false;
    if (this.#beginHeld && this.#deferred.length === 0) {
      this.#beginHeld = false;
      return;
    }
    const [commit] = await this.#send(['COMMIT']);
    if (commit!.command === 'ROLLBACK') throw new TransactionRolledBackError();
  }

  /** Drops what is deferred; sends ROLLBACK unless nothing was sent. A failed ROLLBACK closes the connection. */
  async rollback(): Promise<void> {
    if (this.#endedWithStatement) {
      this.#endedWithStatement = false;
      return;
    }
    const beganOnServer = !this.#beginHeld;
    this.#reset();
    if (!beganOnServer) return;
    try {
      await this.#send(['ROLLBACK']);
    } catch (error) {
      this.#discard();
      throw error;
    }
  }

  release(): void {
    this.#reset();
    this.#endedWithStatement = false;
    this.#client.release(this.#discarded || this.#stalePlans);
  }

  #reset(): void {
    dropDeferred(this.#deferred);
    this.#deferred = [];
    this.#beginHeld = false;
    this.#inTransaction = false;
  }

  /** Closes a connection that may still be inside a transaction, rather than pool it. */
  #discard(): void {
    if (this.#discarded) return;
    this.#discarded = true;
    this.#client.end().catch(() => {});
  }

  /**
   * Sends the kept BEGIN, the deferred statements and then `statements`, in one write (header), and
   * answers the results of `statements`. Each deferred statement is handed its own answer. The first
   * failure, in order, is thrown: a statement behind a failed one fails because the transaction is
   * aborted. `lastAnswered` is called once the last statement has been answered (ROLLBACK, for a COMMIT
   * of a failed transaction, is an answer; a broken connection is none).
   */
  async #send(statements: Outgoing[], lastAnswered?: () => void): Promise<PgResult[]> {
    const ahead: Outgoing[] = this.#beginHeld ? ['BEGIN', ...this.#deferred] : this.#deferred;
    const deferred = this.#deferred;
    this.#beginHeld = false;
    this.#deferred = [];
    const all = [...ahead, ...statements];
    countRoundTrip(all.filter((statement) => typeof statement !== 'string').length);
    if (typeof all[0] === 'string' && /^(BEGIN|start transaction)/.test(all[0])) countTransaction();
    const socket = (this.#client as unknown as { connection: { stream: Writable } }).connection.stream;
    const answers: Promise<PgResult>[] = [];
    socket.cork();
    try {
      for (const statement of all) answers.push(this.#query(statement));
    } finally {
      socket.uncork();
    }
    if (lastAnswered) answers[answers.length - 1]!.then(lastAnswered, () => {});
    const settled = await Promise.allSettled(answers);
    const offset = ahead.length - deferred.length;
    deferred.forEach((query, i) => {
      const answer = settled[offset + i]!;
      settleDeferred(
        query,
        answer.status === 'fulfilled' ? { rows: answer.value.rows ?? [] } : { error: answer.reason },
      );
    });
    const failed = settled.find((answer) => answer.status === 'rejected');
    if (failed) throw failed.reason;
    return settled.slice(ahead.length).map((answer) => (answer as PromiseFulfilledResult<PgResult>).value);
  }

  /** One statement: text alone (simple protocol, several statements allowed), or with its parameters. */
  async #query(statement: Outgoing): Promise<PgResult> {
    if (typeof statement === 'string') return this.#client.query(statement);
    const { sql: text, parameters } = statement;
    if (parameters.length === 0 && queryOptionsOf(statement).prepared !== true) {
      return lastOf(await (this.#client.query(text) as unknown as Promise<PgResult | PgResult[]>));
    }
    // Never named when the database prepares nothing (a pooler in transaction mode would lose them).
    const name =
      this.#prepares && (queryOptionsOf(statement).prepared ?? true) ? this.#nameOf(text) : undefined;
    const values = (parameters as unknown[]) ?? NO_VALUES;
    if (name === undefined) return this.#client.query(text, values);
    return this.#client.query({ name, text, values });
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

/** PostgreSQL's refusal of a prepared statement whose result columns a schema change altered. */
function isStalePlan(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  return (
    e?.code === '0A000' &&
    typeof e.message === 'string' &&
    e.message.includes('cached plan must not change result type')
  );
}

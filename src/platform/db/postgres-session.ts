// Owns how statements travel on a PostgreSQL connection: Kysely's driver for a pg pool, whose
// connection (a PostgresSession, one per pooled client) decides for each statement how it is sent,
// from its options (src/platform/db/query-options.ts) and the transaction it is in.
//
// The one place where the ways of sending meet, in the order a statement meets them:
//  1. BEGIN is held, and goes out in front of whatever the transaction sends first; a transaction that
//     ends before its first statement sends nothing at all.
//  2. A statement `held` (a transaction's frame, a last write) is held, answered at once with no rows,
//     and goes out in front of the next one: with the COMMIT, or before any other statement (a
//     ROLLBACK drops it). Held text is one simple-protocol message, cut after any held statement whose
//     answer is wanted (its `answer` sink is handed its message's last result). When the statement
//     behind it has no parameters it joins the last message; when it has, they are pipelined: written
//     to the socket together (pg's pipeline mode, the socket corked around them), answered in order.
//     Either way they cost one round trip. If held text fails, the transaction is aborted, so the
//     statement behind it fails too, and with the held text's error.
//  3. Any other statement is sent as it is: under a prepared name when the database prepares
//     statements and the statement is `prepared` (by default when it has parameters), else unnamed.
//  4. A statement that `commits` (a transaction's last) goes out as in step 2 or 3 with the COMMIT
//     behind it, in the same write; the transaction has then ended on the server, so its own commit
//     or rollback sends nothing, and a statement after it is refused.
//  5. The COMMIT's answer is checked: PostgreSQL answers COMMIT of a failed transaction with
//     ROLLBACK and no error, which is made an error. A connection whose ROLLBACK fails (stalled, or
//     broken), or whose COMMIT sent behind a statement went unanswered, may still be inside the
//     transaction: it is closed rather than pooled.
// The pool's clients run in pg's pipeline mode (src/platform/db/database.ts), the supported way to
// ask a client for a query before the one ahead is answered; the session does so only in steps 2 and 4.
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
import { type AnswerSink, queryOptionsOf } from './query-options.ts';
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

/** A statement held to go out in front of the next (header, step 2), and who waits for its answer. */
interface HeldStatement {
  text: string;
  answer?: AnswerSink | undefined;
}

/** A statement to send behind what is held. */
interface Behind {
  text: string;
  values: readonly unknown[];
  prepared?: boolean | undefined;
}

/** One pooled pg client and the state of the transaction it runs. */
export class PostgresSession implements DatabaseConnection {
  readonly #client: pg.PoolClient;
  readonly #prepares: boolean;
  readonly #names = new Map<string, string>();
  #inTransaction = false;
  #beginHeld = false;
  #held: HeldStatement[] = [];
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
    const parameterless = compiled.parameters.length === 0;
    if (this.#inTransaction && options.held === true && parameterless) {
      this.#held.push({ text: compiled.sql, answer: options.answer });
      return { rows: [] };
    }
    const ahead = this.#takeAhead();
    if (options.sendsHeld === true) {
      if (ahead.length > 0) await this.#pipeline(ahead, undefined);
      return { rows: [] };
    }
    const behind = { text: compiled.sql, values: compiled.parameters, prepared: options.prepared };
    if (options.commits === true && this.#inTransaction) return this.#sendCommitting(ahead, behind);
    if (ahead.length > 0) return toQueryResult((await this.#pipeline(ahead, behind))!);
    return toQueryResult(await this.#send(behind));
  }

  /**
   * The transaction's last statement with its COMMIT behind it (header, step 4). Whatever the answer,
   * the transaction is over on the server once the COMMIT is answered; a connection whose COMMIT went
   * unanswered is closed, as one whose ROLLBACK failed.
   */
  async #sendCommitting<R>(ahead: HeldStatement[], behind: Behind): Promise<QueryResult<R>> {
    this.#inTransaction = false;
    this.#endedWithStatement = true;
    let commandOfCommit: string | undefined;
    try {
      const result = await this.#pipeline(ahead, behind, (commit) => {
        commandOfCommit = commit.command;
      });
      if (commandOfCommit === 'ROLLBACK') throw new TransactionRolledBackError();
      return toQueryResult(result!);
    } finally {
      if (commandOfCommit === undefined) this.#discard();
    }
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

  /** Sends what is held with the COMMIT, in one round trip; a COMMIT answered ROLLBACK is an error. */
  async commit(): Promise<void> {
    if (this.#endedWithStatement) {
      this.#endedWithStatement = false;
      return;
    }
    const ahead = this.#takeAhead();
    this.#inTransaction = false;
    if (ahead.length === 1 && ahead[0]!.text === 'BEGIN') return;
    const result = await this.#pipeline(ahead, { text: 'COMMIT', values: [] });
    if (result!.command === 'ROLLBACK') throw new TransactionRolledBackError();
  }

  /** Drops what is held; sends ROLLBACK unless nothing was sent. A failed ROLLBACK closes the connection. */
  async rollback(): Promise<void> {
    if (this.#endedWithStatement) {
      this.#endedWithStatement = false;
      return;
    }
    const beganOnServer = !this.#beginHeld;
    const dropped = this.#held;
    this.#beginHeld = false;
    this.#held = [];
    this.#inTransaction = false;
    for (const { answer } of dropped)
      answer?.failed(new Error('the transaction ended before the statement was sent'));
    if (!beganOnServer) return;
    try {
      await this.#sendText(['ROLLBACK']);
    } catch (error) {
      this.#discard();
      throw error;
    }
  }

  release(): void {
    this.#beginHeld = false;
    this.#held = [];
    this.#inTransaction = false;
    this.#endedWithStatement = false;
    this.#client.release(this.#discarded || this.#stalePlans);
  }

  /** Closes a connection that may still be inside a transaction, rather than pool it. */
  #discard(): void {
    if (this.#discarded) return;
    this.#discarded = true;
    this.#client.end().catch(() => {});
  }

  /** The held BEGIN and statements, in order, to go out in front of the next statement. */
  #takeAhead(): HeldStatement[] {
    const ahead = this.#beginHeld ? [{ text: 'BEGIN' }, ...this.#held] : this.#held;
    this.#beginHeld = false;
    this.#held = [];
    return ahead;
  }

  /** Statements without parameters, in one simple-protocol message; a transaction begins with the first. */
  #sendText(statements: string[]): Promise<PgResult | PgResult[]> {
    this.#countRoundTrip(statements, 0);
    return this.#queryText(statements);
  }

  #send(statement: Behind): Promise<PgResult> {
    countRoundTrip(1);
    return this.#queryStatement(statement);
  }

  /**
   * Held statements and the statement behind them (if any) in one round trip (header, step 2): held
   * text in simple-protocol messages, each ending with a statement whose answer is waited for (whose
   * answer is then that message's last), the statement behind joined to the last message when it has
   * no parameters, else sent after it as a prepared statement. All are asked of pg in one turn with
   * the socket corked, so they leave in one write, and are answered in order. The first error, in
   * order, is the one thrown: a statement behind a failed one fails because the transaction is
   * aborted. Answers the statement behind's result. With `commitAnswer`, a COMMIT goes last, in the
   * same write, and its answer is handed there when it arrives.
   */
  async #pipeline(
    ahead: HeldStatement[],
    behind: Behind | undefined,
    commitAnswer?: (answer: PgResult) => void,
  ): Promise<PgResult | undefined> {
    const messages: { texts: string[]; answer?: AnswerSink | undefined }[] = [];
    let texts: string[] = [];
    for (const held of ahead) {
      texts.push(held.text);
      if (held.answer) {
        messages.push({ texts, answer: held.answer });
        texts = [];
      }
    }
    const behindJoins = behind !== undefined && behind.values.length === 0;
    if (behindJoins) texts.push(behind.text);
    if (texts.length > 0) messages.push({ texts });
    const extended = behind !== undefined && !behindJoins ? behind : undefined;

    this.#countRoundTrip(
      ahead.map((held) => held.text),
      behind !== undefined && !isTransactionControl(behind.text) ? 1 : 0,
    );
    const socket = (this.#client as unknown as { connection: { stream: Writable } }).connection.stream;
    const answers: Promise<PgResult | PgResult[]>[] = [];
    socket.cork();
    let commit: Promise<PgResult | PgResult[]> | undefined;
    try {
      for (const message of messages) answers.push(this.#queryText(message.texts));
      if (extended) answers.push(this.#queryStatement(extended));
      if (commitAnswer) commit = this.#queryText(['COMMIT']);
    } finally {
      socket.uncork();
    }
    const settled = await Promise.allSettled(commit ? [...answers, commit] : answers);
    if (commit) {
      const committed = settled.pop()!;
      if (committed.status === 'fulfilled') commitAnswer!(lastOf(committed.value));
      else settled.push(committed);
    }
    messages.forEach((message, i) => {
      const answered = settled[i]!;
      if (answered.status === 'fulfilled') message.answer?.answered(lastOf(answered.value).rows ?? []);
      else message.answer?.failed(answered.reason);
    });
    const failed = settled.find((answered) => answered.status === 'rejected');
    if (failed) throw failed.reason;
    if (behind === undefined) return undefined;
    const last = settled[settled.length - 1] as PromiseFulfilledResult<PgResult | PgResult[]>;
    return lastOf(last.value);
  }

  /** One round trip carrying these texts (BEGIN, COMMIT and ROLLBACK are not counted as statements) and `more`. */
  #countRoundTrip(statements: string[], more: number): void {
    countRoundTrip(statements.filter((text) => !isTransactionControl(text)).length + more);
    const first = statements[0];
    if (first === 'BEGIN' || first?.startsWith('start transaction')) countTransaction();
  }

  #queryText(statements: string[]): Promise<PgResult | PgResult[]> {
    return this.#client.query(statements.join(';\n')) as unknown as Promise<PgResult | PgResult[]>;
  }

  #queryStatement({ text, values, prepared }: Behind): Promise<PgResult> {
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

/** PostgreSQL's refusal of a prepared statement whose result columns a schema change altered. */
function isStalePlan(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  return (
    e?.code === '0A000' &&
    typeof e.message === 'string' &&
    e.message.includes('cached plan must not change result type')
  );
}

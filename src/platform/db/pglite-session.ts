// Owns how statements travel on the embedded database (PGlite): Kysely's PGlite driver, with the
// statement options (src/platform/db/query-options.ts) honoured as PostgreSQL's session honours them
// (src/platform/db/postgres-session.ts), so that the work sees the same thing on both:
//  1. A `deferred` statement is kept, answered at once with no rows, and run in front of the
//     transaction's next statement or its COMMIT, with its parameters. If it fails, the statement
//     behind it is not run and throws its error, as PostgreSQL's aborted transaction would refuse it.
//     A ROLLBACK drops what is deferred.
//  2. A statement that `commits` is followed at once by the COMMIT; a statement after it is refused.
//  3. A COMMIT of a transaction that failed inside is an error (TransactionRolledBackError).
// Each call into PGlite with what goes out together is counted as one round trip
// (src/platform/db/statement-counts.ts), the statements in it as PostgreSQL's session counts them.
// Each statement PGlite runs, deferred ones when they run, is a client span while tracing is on
// (traceStatement, src/platform/observability/spans.ts): the embedded database has no client library
// for OpenTelemetry to instrument.
import type { CompiledQuery, DatabaseConnection, Driver, QueryResult, TransactionSettings } from 'kysely';
import { PGliteDialect } from 'kysely';
import { traceStatement } from '../observability/spans.ts';
import { TransactionRolledBackError } from './postgres-session.ts';
import { dropDeferred, queryOptionsOf, settleDeferred } from './query-options.ts';
import { countRoundTrip, countTransaction } from './statement-counts.ts';

type Run = (compiled: CompiledQuery) => Promise<QueryResult<unknown>>;

const ENDED = 'the transaction committed with its last statement: no statement may follow it';

/** The PGlite connection's state: what is deferred, and whether the transaction has ended already. */
class PgliteSession {
  readonly connection: DatabaseConnection;
  readonly #run: Run;
  inTransaction = false;
  beganInTransaction = false;
  endedWithStatement = false;
  deferred: CompiledQuery[] = [];

  constructor(connection: DatabaseConnection) {
    this.connection = connection;
    const run = connection.executeQuery.bind(connection) as Run;
    this.#run = (query) => traceStatement(query.sql, () => run(query));
  }

  /** What is deferred, in order, then `behind` (if any); the first failure is thrown, the rest not run. */
  async send(behind: CompiledQuery | undefined): Promise<QueryResult<unknown> | undefined> {
    const ahead = this.deferred;
    this.deferred = [];
    countRoundTrip(ahead.length + (behind ? 1 : 0));
    if (!this.beganInTransaction && this.inTransaction) {
      this.beganInTransaction = true;
      countTransaction();
    }
    for (const [i, query] of ahead.entries()) {
      try {
        settleDeferred(query, { rows: (await this.#run(query)).rows });
      } catch (error) {
        for (const dropped of ahead.slice(i + 1)) settleDeferred(dropped, { error });
        settleDeferred(query, { error });
        throw error;
      }
    }
    return behind ? this.#run(behind) : undefined;
  }

  drop(): void {
    dropDeferred(this.deferred);
    this.deferred = [];
  }
}

class PgliteSessionDriver implements Driver {
  readonly #driver: Driver;
  readonly #sessions = new WeakMap<DatabaseConnection, PgliteSession>();

  constructor(driver: Driver) {
    this.#driver = driver;
  }

  init(): Promise<void> {
    return this.#driver.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await this.#driver.acquireConnection();
    if (!this.#sessions.has(connection)) {
      const session = new PgliteSession(connection);
      this.#sessions.set(connection, session);
      connection.executeQuery = <R>(compiled: CompiledQuery) =>
        this.#execute(session, compiled) as Promise<QueryResult<R>>;
    }
    return connection;
  }

  async #execute(session: PgliteSession, compiled: CompiledQuery): Promise<QueryResult<unknown>> {
    if (session.endedWithStatement) throw new Error(ENDED);
    const options = queryOptionsOf(compiled);
    if (session.inTransaction && options.deferred === true) {
      session.deferred.push(compiled);
      return { rows: [] };
    }
    if (options.sendsDeferred === true) {
      if (session.deferred.length > 0) await session.send(undefined);
      return { rows: [] };
    }
    if (options.commits !== true || !session.inTransaction) return (await session.send(compiled))!;
    // The COMMIT goes with the statement (one round trip, as on PostgreSQL), or a ROLLBACK when it fails.
    session.endedWithStatement = true;
    try {
      const result = (await session.send(compiled))!;
      await this.#driver.commitTransaction(session.connection);
      return result;
    } catch (error) {
      await this.#driver.rollbackTransaction(session.connection).catch(() => {});
      throw error;
    } finally {
      session.inTransaction = false;
    }
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const session = this.#sessions.get(connection)!;
    session.inTransaction = true;
    session.beganInTransaction = false;
    await this.#driver.beginTransaction(connection, settings);
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    const session = this.#sessions.get(connection)!;
    if (session.endedWithStatement) {
      session.endedWithStatement = false;
      return;
    }
    // The deferred statements go with the COMMIT; a transaction that sent nothing sends no COMMIT.
    if (session.deferred.length > 0) await session.send(undefined);
    else if (session.beganInTransaction) countRoundTrip(0);
    session.inTransaction = false;
    try {
      await this.#driver.commitTransaction(connection);
    } catch (error) {
      // A transaction whose statement failed is rolled back, and said so as PostgreSQL's session says it.
      if (error instanceof Error && error.name === 'AbortedTransactionError')
        throw new TransactionRolledBackError();
      throw error;
    }
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    const session = this.#sessions.get(connection)!;
    session.drop();
    session.inTransaction = false;
    if (session.endedWithStatement) {
      session.endedWithStatement = false;
      return;
    }
    if (session.beganInTransaction) countRoundTrip(0);
    await this.#driver.rollbackTransaction(connection);
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.#driver.releaseConnection(connection);
  }

  destroy(): Promise<void> {
    return this.#driver.destroy();
  }
}

/** Kysely's PGlite dialect, its statements sent as PgliteSession says. */
export class PgliteSessionDialect extends PGliteDialect {
  override createDriver(): Driver {
    return new PgliteSessionDriver(super.createDriver());
  }
}

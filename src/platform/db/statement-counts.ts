// Owns this process's count of what it sends to the database: statements (a message of several
// statements counts each; BEGIN, COMMIT and ROLLBACK are not statements here, they count as
// transactions and round trips), round trips (a message sent and its answer
// awaited; in the embedded database, a call into it) and transactions (counted when their BEGIN
// reaches the database: a transaction that ends before its first statement sends nothing and is not
// counted). The drivers count as they send (src/platform/db/postgres-session.ts for PostgreSQL,
// pgliteCounted for the embedded database); src/service-metrics.ts reports them. Always on: an
// integer add per send. The embedded database's driver also hands a statement's answer sink its rows
// (src/platform/db/query-options.ts), as PostgreSQL's session does for a held statement.
import type { CompiledQuery, DatabaseConnection, Driver, QueryResult, TransactionSettings } from 'kysely';
import { PGliteDialect } from 'kysely';
import { traceStatement } from '../observability/spans.ts';
import { queryOptionsOf } from './query-options.ts';

export interface StatementCounts {
  statements: number;
  roundTrips: number;
  transactions: number;
}

const counts: StatementCounts = { statements: 0, roundTrips: 0, transactions: 0 };

/** One round trip that carried `statements` statements. */
export function countRoundTrip(statements: number): void {
  counts.statements += statements;
  counts.roundTrips += 1;
}

/** A transaction whose BEGIN goes out now. */
export function countTransaction(): void {
  counts.transactions += 1;
}

/** The counts since the process started. */
export function statementCounts(): StatementCounts {
  return { ...counts };
}

/** Counts what Kysely's PGlite driver runs: each statement, BEGIN, COMMIT and ROLLBACK is one call. */
class CountingPgliteDriver implements Driver {
  readonly #driver: Driver;
  readonly #counted = new WeakSet<DatabaseConnection>();

  constructor(driver: Driver) {
    this.#driver = driver;
  }

  init(): Promise<void> {
    return this.#driver.init();
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const connection = await this.#driver.acquireConnection();
    if (!this.#counted.has(connection)) {
      const executeQuery = connection.executeQuery.bind(connection);
      connection.executeQuery = <R>(compiled: CompiledQuery) =>
        traceStatement(compiled.sql, () => this.#execute<R>(executeQuery, compiled));
      this.#counted.add(connection);
    }
    return connection;
  }

  async #execute<R>(
    executeQuery: <T>(compiled: CompiledQuery) => Promise<QueryResult<T>>,
    compiled: CompiledQuery,
  ): Promise<QueryResult<R>> {
    countRoundTrip(1);
    const sink = queryOptionsOf(compiled).answer;
    if (!sink) return executeQuery<R>(compiled);
    try {
      const result = await executeQuery<R>(compiled);
      sink.answered(result.rows as unknown[]);
      return result;
    } catch (error) {
      sink.failed(error);
      throw error;
    }
  }

  beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    countTransaction();
    countRoundTrip(0);
    return this.#driver.beginTransaction(connection, settings);
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    countRoundTrip(0);
    return this.#driver.commitTransaction(connection);
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    countRoundTrip(0);
    return this.#driver.rollbackTransaction(connection);
  }

  releaseConnection(connection: DatabaseConnection): Promise<void> {
    return this.#driver.releaseConnection(connection);
  }

  destroy(): Promise<void> {
    return this.#driver.destroy();
  }
}

/** Kysely's PGlite dialect, its statements counted. */
export class CountedPgliteDialect extends PGliteDialect {
  override createDriver(): Driver {
    return new CountingPgliteDriver(super.createDriver());
  }
}

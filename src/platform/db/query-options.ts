// Owns the options a statement can carry to the database layer besides its text and values, the way
// graphile-worker gives each query its `name`: whether it is sent as a prepared statement, whether it is
// deferred to go out in front of its transaction's next statement or COMMIT, and whether the COMMIT goes
// behind it. Both databases' sessions read them (src/platform/db/postgres-session.ts,
// src/platform/db/pglite-session.ts) and treat them alike, so that a statement's error surfaces at the
// same point of the work on both.
import type { CompiledQuery } from 'kysely';

export interface QueryOptions {
  /**
   * Sent as a named prepared statement, named by a hash of its text: each connection parses and plans
   * it once, then only binds and executes it. Unset: prepared when it has parameters. Never prepared
   * when prepared statements are off for the database (a pooler in transaction mode cannot keep
   * them); a connection names at most a few hundred texts, and the rest run unnamed.
   */
  prepared?: boolean;
  /**
   * Deferred: answered at once with no rows, and sent with its parameters in front of the
   * transaction's next statement (usually its COMMIT), in the same write. If it fails, that next
   * statement throws its error and the transaction is aborted. Its own rows, for the few who want
   * them, are had with deferredRows once that statement has been answered. Outside a transaction a
   * statement is never deferred.
   */
  deferred?: boolean;
  /** Sends what is deferred now, on its own, and nothing else (for an answer wanted before any statement). */
  sendsDeferred?: boolean;
  /**
   * The transaction's last statement: its COMMIT goes out behind it, in the same write, and the
   * transaction ends with them (committed, or rolled back when the statement failed). No statement
   * may follow it in the transaction; the transaction's own commit then sends nothing. For a read
   * that writes its request's audit row itself (AuditLog.recordRead).
   */
  commits?: boolean;
}

interface Carried {
  options: QueryOptions;
  rows?: PromiseWithResolvers<unknown[]>;
}

const carried = new WeakMap<CompiledQuery, Carried>();

/**
 * The compiled query carrying `options` (a copy: the original keeps none), to run with
 * `trx.executeQuery(...)`; for example `withQueryOptions(query.compile(), { prepared: false })` for a
 * text that is never repeated.
 */
export function withQueryOptions<R>(query: CompiledQuery<R>, options: QueryOptions): CompiledQuery<R> {
  const carrier: CompiledQuery<R> = { ...query };
  carried.set(carrier, { options });
  return carrier;
}

/** The options a compiled query carries; none for an ordinary one. */
export function queryOptionsOf(query: CompiledQuery): QueryOptions {
  return carried.get(query)?.options ?? {};
}

function rowsOf(query: CompiledQuery): PromiseWithResolvers<unknown[]> {
  const entry = carried.get(query) ?? { options: {} };
  if (!entry.rows) {
    entry.rows = Promise.withResolvers<unknown[]>();
    // Thrown only to whoever asks for the rows: the statement it went out with reports it first.
    entry.rows.promise.catch(() => {});
    carried.set(query, entry);
  }
  return entry.rows;
}

/** The rows of a deferred statement (a query run with `deferred`), once it has been sent and answered. */
export function deferredRows<R>(query: CompiledQuery<R>): Promise<R[]> {
  return rowsOf(query).promise as Promise<R[]>;
}

/** For the sessions: a deferred statement was answered with `rows`, or failed (or was never sent). */
export function settleDeferred(
  query: CompiledQuery,
  outcome: { rows: unknown[] } | { error: unknown },
): void {
  const rows = rowsOf(query);
  if ('rows' in outcome) rows.resolve(outcome.rows);
  else rows.reject(outcome.error);
}

/**
 * For the sessions: deferred statements a transaction ended without sending fail. The error is made
 * only when there are some: it captures a stack, and most transactions end with none left.
 */
export function dropDeferred(queries: readonly CompiledQuery[]): void {
  if (queries.length === 0) return;
  const error = new Error('the transaction ended before the statement was sent');
  for (const query of queries) settleDeferred(query, { error });
}

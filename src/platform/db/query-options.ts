// Owns the options a statement can carry to the database layer besides its text and values, the way
// graphile-worker gives each query its `name`: whether it is sent as a prepared statement, and
// whether it is held and sent in front of its transaction's next statement or COMMIT. PostgreSQL reads
// them (src/platform/db/postgres-session.ts); PGlite, in process, has no round trip to save and runs
// every statement as it comes, handing an answer sink its rows at once
// (src/platform/db/statement-counts.ts).
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
   * Held, answered at once with no rows, and sent in front of the transaction's next statement, in the
   * same write: usually its COMMIT. For a statement whose answer nobody reads: a transaction's frame
   * (src/platform/db/transaction.ts), a last write (src/platform/db/unanswered-writes.ts). Only a
   * statement with no parameters can be (held text goes out in a simple-protocol message, which takes
   * none).
   */
  held?: boolean;
  /**
   * For a held statement whose answer is wanted (a frame that tries a lock, an invoice's number given
   * with the COMMIT): handed its rows when they arrive with the statement it went out with, or the
   * error that ended it (or the transaction's end before it was sent). Held text ends its message
   * here, so its answer is that message's last.
   */
  answer?: AnswerSink;
  /** Sends what is held now, on its own, and nothing else (for an answer wanted before any statement). */
  sendsHeld?: boolean;
  /**
   * The transaction's last statement: its COMMIT goes out behind it, in the same write, and the
   * transaction ends with them (committed, or rolled back when the statement failed). No statement
   * may follow it in the transaction; the transaction's own commit then sends nothing. For a read
   * that writes its request's audit row itself (AuditLog.recordRead).
   */
  commits?: boolean;
}

/** Who waits for a held statement's answer. */
export interface AnswerSink {
  answered(rows: unknown[]): void;
  failed(error: unknown): void;
}

/**
 * A sink for a held statement's answer, and the answer as a promise (its failure handled here, so it
 * is thrown only to whoever awaits it: the statement it went out with reports it first). `arrived`
 * holds the rows once they have come; `settled` says whether the rows or the failure has.
 */
export function awaitedAnswer(): {
  sink: AnswerSink;
  rows: Promise<unknown[]>;
  arrived: () => unknown[] | undefined;
  settled: () => boolean;
} {
  let arrived: unknown[] | undefined;
  let settled = false;
  let sink: AnswerSink | undefined;
  const rows = new Promise<unknown[]>((resolve, reject) => {
    sink = {
      answered: (answered) => {
        arrived = answered;
        settled = true;
        resolve(answered);
      },
      failed: (error) => {
        settled = true;
        reject(error);
      },
    };
  });
  rows.catch(() => {});
  return { sink: sink!, rows, arrived: () => arrived, settled: () => settled };
}

const optionsOfQuery = new WeakMap<CompiledQuery, QueryOptions>();

/**
 * The compiled query carrying `options` (a copy: the original keeps none), to run with
 * `trx.executeQuery(...)`; for example `withQueryOptions(query.compile(), { prepared: false })` for a
 * text that is never repeated.
 */
export function withQueryOptions(query: CompiledQuery, options: QueryOptions): CompiledQuery {
  const carrier: CompiledQuery = { ...query };
  optionsOfQuery.set(carrier, options);
  return carrier;
}

/** The options a compiled query carries; none for an ordinary one. */
export function queryOptionsOf(query: CompiledQuery): QueryOptions {
  return optionsOfQuery.get(query) ?? {};
}

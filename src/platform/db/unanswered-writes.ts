// Owns writes whose answer nobody reads: a request's audit row and stored answer, a job's end, a
// queued job, a webhook attempt, a notification, a claim's items. Domain code says only that a
// statement is such a write (writeUnanswered); it is deferred with its parameters (query-options.ts,
// `deferred`) and goes out in front of the transaction's next statement, in the same write: usually its
// COMMIT, so it costs no round trip of its own. If it fails, the statement it went with throws its
// error (a COMMIT so fails, and nothing of the transaction is kept), on both databases alike. A write
// whose failure the work means to catch and handle is not such a write: its error would surface at
// the next statement instead. A write whose answer is wanted only after that next statement (the
// number an invoice is given with the COMMIT) travels the same way (writeAnsweredLater).
import {
  type CompiledQuery,
  createQueryId,
  type OperationNodeSource,
  PostgresQueryCompiler,
  type RootOperationNode,
} from 'kysely';
import { deferredRows, withQueryOptions } from './query-options.ts';
import type { Trx } from './transaction.ts';

/** Text PostgreSQL refuses (it keeps no NUL): such a write is sent at once, so its refusal reaches its writer. */
function refusedAsText(value: unknown): boolean {
  return typeof value === 'string' && value.includes('\0');
}

/**
 * Defers `query` and answers how its rows will come; a write with text the database refuses
 * (refusedAsText) is sent at once instead, and refused there.
 */
async function defer<R>(trx: Trx, query: OperationNodeSource): Promise<{ rows: Promise<R[]> }> {
  const compiled = new PostgresQueryCompiler().compileQuery(
    query.toOperationNode() as RootOperationNode,
    createQueryId(),
  ) as CompiledQuery<R>;
  if (compiled.parameters.some(refusedAsText))
    return { rows: Promise.resolve((await trx.executeQuery(compiled)).rows) };
  const deferred = withQueryOptions(compiled, { deferred: true });
  await trx.executeQuery(deferred);
  return { rows: deferredRows(deferred) };
}

/** Runs `query` as a write whose answer nobody reads: deferred to go with the next statement or COMMIT. */
export async function writeUnanswered(trx: Trx, query: OperationNodeSource): Promise<void> {
  await defer(trx, query);
}

/**
 * Runs `query` as writeUnanswered does, for a write whose answer is wanted only once the transaction's
 * next statement (or its COMMIT) has been answered: it answers how to have the write's rows then, and
 * the rows when they have arrived already.
 */
export async function writeAnsweredLater<R>(
  trx: Trx,
  query: OperationNodeSource,
): Promise<{ rows: () => Promise<R[]>; known: () => R[] | undefined }> {
  const { rows } = await defer<R>(trx, query);
  let known: R[] | undefined;
  rows.then(
    (arrived) => {
      known = arrived;
    },
    () => {},
  );
  return { rows: () => rows, known: () => known };
}

// Owns writes whose answer nobody reads: a request's audit row and stored answer, a job's end, a
// webhook attempt, a notification, a claim's items. Domain code says only that a statement is such a
// write (writeUnanswered); how it travels is decided here and in the database layer. On PostgreSQL
// such a statement is held back and sent in front of the transaction's next statement, in the same
// write (src/platform/db/postgres-session.ts): usually its COMMIT, else whatever the work sends next,
// so it costs no round trip of its own; it goes as a prepared statement with its values as
// parameters, parsed and planned once per connection. If it fails, the statement it went with fails
// with its error (a COMMIT so fails, and nothing of the transaction is kept). A write whose failure
// the work means to catch and handle is not such a write: its error would surface at the next
// statement instead.
import {
  createQueryId,
  type OperationNodeSource,
  PostgresQueryCompiler,
  type RootOperationNode,
} from 'kysely';
import { withQueryOptions } from './query-options.ts';
import type { Trx } from './transaction.ts';

/** A value PostgreSQL refuses as text (it keeps no NUL): its write is sent at once, and refused there. */
function refusedAsText(value: unknown): boolean {
  return typeof value === 'string' && value.includes('\0');
}

/**
 * Runs `query` as a write whose answer nobody reads: it is sent with the transaction's next statement
 * or its COMMIT. A write with a value PostgreSQL would refuse (text with a NUL) is sent on its own, as
 * any other statement, so that its refusal reaches the code that wrote it.
 */
export async function writeUnanswered(trx: Trx, query: OperationNodeSource): Promise<void> {
  const compiled = new PostgresQueryCompiler().compileQuery(
    query.toOperationNode() as RootOperationNode,
    createQueryId(),
  );
  if (compiled.parameters.some(refusedAsText)) {
    await trx.executeQuery(compiled);
    return;
  }
  await trx.executeQuery(withQueryOptions(compiled, { held: true }));
}

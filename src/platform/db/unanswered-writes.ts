// Owns writes whose answer nobody reads: a request's audit row and stored answer, a job's end, a
// queued job, a webhook attempt, a notification, a claim's items. Domain code says only that a
// statement is such a write (writeUnanswered); how it travels is decided here and in the database
// layer. On PostgreSQL such a statement is held back and sent in front of the transaction's next
// statement, in the same write (src/platform/db/postgres-session.ts): usually its COMMIT, else
// whatever the work sends next, so it costs no round trip of its own. If it fails, the statement it
// went with fails with its error (a COMMIT so fails, and nothing of the transaction is kept). Held
// text goes out in a simple-protocol message, which takes no parameters, so its values are written
// here as literals (src/platform/db/sql-literal.ts). A write whose failure the work means to catch
// and handle is not such a write: its error would surface at the next statement instead. A write
// whose answer is wanted only after that next statement (the number an invoice is given with the
// COMMIT) travels the same way, its answer handed over when it arrives (writeAnsweredLater).
import {
  createQueryId,
  type OperationNodeSource,
  PostgresQueryCompiler,
  type RootOperationNode,
} from 'kysely';
import { type AnswerSink, awaitedAnswer, withQueryOptions } from './query-options.ts';
import { textLiteral } from './sql-literal.ts';
import type { Trx } from './transaction.ts';

type LiteralValue = string | number | boolean | Date | null;

function canBeLiteral(value: unknown): value is LiteralValue {
  if (value === null || typeof value === 'boolean') return true;
  // PostgreSQL keeps no NUL in text, and a NUL would cut the text short.
  if (typeof value === 'string') return !value.includes('\0');
  if (typeof value === 'number') return Number.isFinite(value);
  if (value instanceof Date) return !Number.isNaN(value.getTime());
  return false;
}

/** The SQL literal of a value that can be one. */
function literalText(value: LiteralValue): string {
  if (value === null) return 'NULL';
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
  if (typeof value === 'number') return String(value);
  return textLiteral(value instanceof Date ? value.toISOString() : value);
}

/** Compiles values as literals where they can be; any other stays a parameter. */
class LiteralCompiler extends PostgresQueryCompiler {
  protected override appendValue(value: unknown): void {
    if (canBeLiteral(value)) this.append(literalText(value));
    else super.appendValue(value);
  }
}

/**
 * Holds `query`, its values as literals, to go out with the transaction's next statement or its
 * COMMIT, its rows handed to `answer` when given; undefined then. When a value cannot be a literal
 * (text with a NUL) it is sent on its own, with parameters, as any other statement (and refused
 * there), and its rows are answered.
 */
async function hold<R>(trx: Trx, query: OperationNodeSource, answer?: AnswerSink): Promise<R[] | undefined> {
  const node = query.toOperationNode() as RootOperationNode;
  const compiled = new LiteralCompiler().compileQuery(node, createQueryId());
  if (compiled.parameters.length > 0) {
    return (await trx.executeQuery<R>(new PostgresQueryCompiler().compileQuery(node, createQueryId()))).rows;
  }
  await trx.executeQuery(withQueryOptions(compiled, { held: true, answer }));
  return undefined;
}

/** Runs `query` as a write whose answer nobody reads (hold). */
export async function writeUnanswered(trx: Trx, query: OperationNodeSource): Promise<void> {
  await hold(trx, query);
}

/**
 * Runs `query` as writeUnanswered does, for a write whose answer is wanted only once the transaction's
 * next statement (or its COMMIT) has been answered: it answers how to have the write's rows then. On
 * the embedded database, which runs each statement as it comes, they are had at once.
 */
export async function writeAnsweredLater<R>(
  trx: Trx,
  query: OperationNodeSource,
): Promise<{ rows: () => Promise<R[]>; known: () => R[] | undefined }> {
  const answer = awaitedAnswer();
  const sent = await hold<R>(trx, query, answer.sink);
  if (sent) return { rows: () => Promise.resolve(sent), known: () => sent };
  return { rows: () => answer.rows as Promise<R[]>, known: () => answer.arrived() as R[] | undefined };
}
